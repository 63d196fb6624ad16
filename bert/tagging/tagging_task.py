"""Tagging one column of a CoNLL file, word by word, as a finetune.Task.

Plain tags (part of speech) are labels as written, scored by accuracy per word; IOB
chunk tags are learned as IOB2, written back in the file's scheme and scored by
conlleval's span F1. run_tagger.py runs it on any column; NerTask (tagging_ner_task.py)
is its subclass for entities. docs/tagging.md lists the outputs."""

from absl import logging
import numpy as np

from bert import heads
from bert import input_pipeline
from bert import metrics
from bert.tagging import tagging_conlleval
from bert.tagging import tagging_data
from bert.tagging import tagging_options
from bert import tokenization
from bert.training import evaluation
from bert.training import finetune
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks

# Default file names in data_dir, tried in order (ours, then CoNLL-2003's own names).
DEFAULT_FILES = {"train": ("train.txt", "eng.train"),
                 "dev": ("valid.txt", "dev.txt", "eng.testa"),
                 "test": ("test.txt", "eng.testb")}

_TOKEN_KEYS = ("input_ids", "input_mask", "segment_ids", "label_ids")

AUTO = tagging_options.AUTO
# Declared in tagging_options (no TensorFlow there: the commands make their flags from it).
TaggingOptions = tagging_options.TaggingOptions


def make_dataset(arrays, batch_size, training_data, seed=0, input_context=None,
                 multiple=None, sort_by_length=False):
  """Batches of token arrays: input_ids, input_mask, segment_ids, label_ids int32 [B, S]
  (S the batch's longest window rounded up to `multiple`: by default
  input_pipeline.TRAINING_LENGTH_MULTIPLE for
  training, 1 otherwise), feature_index int32 [B].

  training_data: sharded by input pipeline, shuffled (seeded), repeated, full batches;
  else one pass in feature order, or with sort_by_length in order of window length
  (stable), so that short windows share batches; feature_index puts results back.
  """
  if multiple is None:
    multiple = input_pipeline.TRAINING_LENGTH_MULTIPLE if training_data else 1
  if sort_by_length and not training_data:
    order = np.argsort(arrays["input_mask"].sum(axis=1), kind="stable")
    arrays = {k: v[order] for k, v in arrays.items()}
  return input_pipeline.array_dataset(arrays, batch_size, training_data, _TOKEN_KEYS,
                                      multiple, seed, input_context)


class Split:
  """A CoNLL file read for one split: examples, windows (features), model arrays."""

  def __init__(self, name, path, examples, features, scheme):
    self.name, self.path, self.examples, self.features = name, path, examples, features
    self.scheme = scheme  # IOB tags: the file's scheme; plain tags: None
    self.arrays = tagging_data.features_to_arrays(features)
    self.labelled = all(e.labels is not None for e in examples)
    self.cache = None  # NER's feature mode: the TFRecord of its frozen activations


class TaggingTask(finetune.Task):
  """One tag per word of a CoNLL file's column, fine-tuned with a token classifier."""

  name = "tagger"

  def __init__(self, options, settings):
    super().__init__(options)
    self.settings = settings
    self.label_list = list(settings.labels) if settings.labels else None
    self.splits = {}

  # ------------------------------------------------------------------ data

  def read_data(self, config):
    del config
    settings = self.settings
    if not file_io.isdir(settings.data_dir):
      raise errors.UserError(f"--data_dir={settings.data_dir}: no such folder")
    if settings.doc_stride < 1:
      raise errors.UserError(f"--doc_stride={settings.doc_stride}: must be at least 1")
    tokenizer = tokenization.FullTokenizer(self.options.vocab_file,
                                           do_lower_case=self.options.do_lower_case)
    if self.label_list is None:
      self.label_list = self._labels_of_the_files()
    # Every input is read and checked before any model is built: bad data fails in seconds.
    wanted = [("train", self.options.do_train), ("dev", self.options.do_eval),
              ("test", self.options.do_predict)]
    for name, needed in wanted:
      if needed:
        self.splits[name] = self._read_split(name, tokenizer)

  def _labels_of_the_files(self):
    """The label set when none is given: every gold tag of the whole training file and
    of the dev and test files that are there, whichever splits this run reads, so that
    every run on the same files has the same outputs (a tag only dev has is a label the
    model never learns, and is scored as a miss, not refused)."""
    examples, split_files = [], []
    for split in ("train", "dev", "test"):
      try:
        path = self._split_path(split)
      except errors.UserError:
        if split == "train":
          raise
        continue
      examples += self.read_tags(path)
      split_files.append(path)
    labels = tagging_data.label_list_from(examples, self.settings.iob)
    if not labels:
      raise errors.UserError(f"{split_files[0]}: no tags (one column per line); the "
                                   "training file needs a tag column")
    logging.info("%d labels from %s", len(labels), ", ".join(split_files))
    return labels

  def _split_path(self, split):
    settings = self.settings
    given = {"train": settings.train_file, "dev": settings.dev_file,
             "test": settings.test_file}[split]
    if given:
      path = given if file_io.exists(given) else paths.join(settings.data_dir, given)
      return input_checks.check_input_file(path, f"{split}_file")
    for name in DEFAULT_FILES[split]:
      path = paths.join(settings.data_dir, name)
      if file_io.isfile(path):
        return input_checks.check_input_file(path, "data_dir")
    raise errors.UserError(
        f"--data_dir={settings.data_dir}: no {split} file "
        f"({' or '.join(DEFAULT_FILES[split])}); name it with --{split}_file")

  # What to do when --iob meets a column of other tags (NER says its own).
  not_chunk_tags_remedy = ("pick the chunk column with --tag_column (CoNLL-2003: 3 chunks, "
                           "4 entities), or drop --iob to learn the tags as written")

  def read_tags(self, path):
    """The sentences of a CoNLL file; with IOB tags, a column of other tags is refused."""
    examples = tagging_data.read_conll(path, self.settings.tag_column)
    if self.settings.iob:
      tagging_data.check_chunk_tags(examples, path, self.settings.tag_column,
                               self.not_chunk_tags_remedy)
    return examples

  def check_labels(self, examples, path):
    """Refuses a gold tag outside the label set, naming file:line (NER names its types)."""
    unknown = tagging_data.first_unknown_tag(examples, self.label_list, self.settings.iob)
    if unknown:
      example, offset = unknown
      raise errors.UserError(
          f"{path}:{example.line_number + offset}: tag {example.labels[offset]!r} is not "
          f"one of --labels ({', '.join(self.label_list)})")

  def _read_split(self, name, tokenizer):
    settings = self.settings
    path = self._split_path(name)
    examples = self.read_tags(path)
    limit = (self.options.max_train_examples if name == "train"
             else self.options.max_eval_examples)
    if limit and limit > 0:
      examples = examples[:limit]
    if name != "test" and any(e.labels is None for e in examples):
      raise errors.UserError(f"{path}: {name} data needs a tag column")
    self.check_labels(examples, path)
    scheme = None
    if settings.iob:
      scheme = (tagging_conlleval.detect_scheme(examples) if settings.label_scheme == AUTO
                else settings.label_scheme)
    features = tagging_data.convert_examples_to_features(
        examples, self.label_list, self.options.max_seq_length, tokenizer,
        doc_stride=settings.doc_stride, iob=settings.iob)
    logging.info("%s: %d sentences, %d windows (%d extra for long sentences)%s",
                 path, len(examples), len(features), len(features) - len(examples),
                 f", scheme {scheme.upper()}" if scheme else "")
    return Split(name, path, examples, features, scheme)

  def num_train_examples(self):
    return len(self.splits["train"].features)

  def num_segments(self):
    return 1  # one sentence (window) a row: segment id 0 only

  def dataset(self, split, batch_size, training_data, input_context=None):
    """The split's batches; eval and predict in order of length (rows put back by
    feature_index)."""
    return make_dataset(split.arrays, batch_size, training_data, seed=self.options.seed,
                        input_context=input_context, sort_by_length=not training_data)

  def train_dataset(self, input_context, batch_size):
    return self.dataset(self.splits["train"], batch_size, True, input_context)

  # ------------------------------------------------------------------ model

  def head_info(self):
    return {"task": self.name, "head": "token_classification",
            "labels": list(self.label_list)}

  def build_model(self, config):
    model, _ = heads.build_token_classifier_model(
        config, len(self.label_list), causal=self.options.ltr,
        dropout_rate=self.settings.dropout_rate, dtype=self.options.precision.policy)
    return model

  def loss(self, features, outputs):
    return heads.token_classification_loss(features, outputs)

  # ------------------------------------------------------------------ outputs

  def evaluate(self, model, strategy):
    del strategy
    return self.score(model, "dev", self.options.eval_batch_size)

  def eval_metric_names(self):
    if not self.settings.iob:
      return ["eval_loss", "eval_accuracy"]
    types = sorted({label.split("-", 1)[1] for label in self.label_list if "-" in label})
    return (["eval_loss", "eval_f1", "eval_precision", "eval_recall", "eval_accuracy"]
            + [f"eval_f1_{t}" for t in types])

  def default_best_metric(self):
    return "eval_f1" if self.settings.iob else "eval_accuracy"

  def predict(self, model, global_step):
    results = self.score(model, "test", self.options.predict_batch_size)
    if results is not None:
      results["global_step"] = global_step
      atomic_output.write_key_values(
          paths.join(self.options.output_dir, "test_results.txt"), results,
          log=logging.info)

  def word_logits(self, model, split, batch_size, what):
    """Logits float [total words, labels]: each word's, at its first WordPiece in the
    window that decodes it, word by word in input order."""
    outputs = evaluation.predict_in_order(
        model, self.dataset(split, batch_size, False), len(split.features),
        index_key="feature_index", width=self.options.max_seq_length,
        sequence_keys=("logits",), what=what)
    rows, positions = tagging_data.decode_positions(split.examples, split.features)
    return outputs["logits"][rows, positions]

  def score(self, model, name, batch_size):
    """Predicts split `name`; writes <name>_predictions.txt and, for IOB tags with gold,
    <name>_conlleval.txt. Returns the eval_*/test_* values, or None (no gold tags)."""
    split, settings = self.splits[name], self.settings
    logits = self.word_logits(model, split, batch_size, name)
    predicted = np.argmax(logits, axis=-1)
    tags = tagging_data.split_by_sentence(split.examples,
                                     [self.label_list[int(i)] for i in predicted])
    out = self.options.output_dir
    tagging_data.write_conll_predictions(paths.join(out, f"{name}_predictions.txt"),
                                    split.examples, tags, split.scheme)
    if not split.labelled:
      logging.info("%s has no gold tags: wrote predictions only", split.path)
      return None
    key = "eval" if name == "dev" else "test"
    gold = tagging_data.gold_label_ids(split.examples, self.label_list, settings.iob)
    results = {f"{key}_loss": metrics.cross_entropy(logits, gold),
               f"{key}_sentences": len(split.examples)}
    if not settings.iob:
      results[f"{key}_accuracy"] = metrics.accuracy(predicted, gold)
      logging.info("%s accuracy: %.4f over %d words", name, results[f"{key}_accuracy"],
                   len(gold))
      return results
    scores = tagging_conlleval.evaluate_examples(split.examples, tags, split.scheme)
    report = tagging_conlleval.conlleval_report(scores)
    report_file = paths.join(out, f"{name}_conlleval.txt")
    with errors.disk_full_names(report_file), atomic_output.atomic_open(
        report_file) as handle:
      handle.write(report)
    for line in report.splitlines():
      logging.info("%s conlleval: %s", name, line)
    results.update({f"{key}_f1": scores["f1"], f"{key}_precision": scores["precision"],
                    f"{key}_recall": scores["recall"], f"{key}_accuracy": scores["accuracy"]})
    for chunk_type, values in scores["per_type"].items():
      results[f"{key}_f1_{chunk_type}"] = values["f1"]
    return results
