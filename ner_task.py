"""CoNLL-2003 named-entity recognition (paper Table 7) as a finetune.Task.

Middle floor. Reading, windows, decoding and conlleval scoring are in ner_data.py, the
feature-based machinery (layer combinations, activation cache, BiLSTM) in
ner_features.py, the token head and its loss in modeling.py; this module joins them for
the driver (finetune.run).

mode "finetune" (Table 7, top): the whole encoder is trained with one output layer on
top of every token; a word's label and prediction sit on its first WordPiece.
mode "feature" (Table 7, bottom): the encoder is frozen. Its activations are computed
once per split in `read_data` (from --init_checkpoint, which this task loads itself:
loads_init_checkpoint is False) and cached as TFRecords; only a randomly initialised
two-layer BiLSTM and an output layer are trained, on the cached activations.

Outputs in output_dir: eval_results.txt (eval_f1, eval_precision, eval_recall,
eval_accuracy, eval_loss, eval_sentences, eval_f1_<TYPE> and the driver's global_step),
dev_predictions.txt / test_predictions.txt in conlleval's input format (word, the file's
other columns, gold tag, predicted tag, in the file's tag scheme), dev_conlleval.txt /
test_conlleval.txt (conlleval's report) and, for a labelled test file, test_results.txt
(test_f1, ..., global_step).
"""

import dataclasses
import os
from typing import Optional, Sequence

from absl import logging
import keras
import numpy as np

import atomic_output
import checkpoints
import finetune
import input_pipeline
import modeling
import ner_data
import ner_features
import script_utils
import tokenization
import training

# Default file names in data_dir, tried in order (ours, then CoNLL's own names).
DEFAULT_FILES = {"train": ("train.txt", "eng.train"),
                 "dev": ("valid.txt", "dev.txt", "eng.testa"),
                 "test": ("test.txt", "eng.testb")}

_TOKEN_KEYS = ("input_ids", "input_mask", "segment_ids", "label_ids")


@dataclasses.dataclass(frozen=True)
class NerSettings:
  """run_ner's task flags (see their help there)."""
  data_dir: str
  train_file: Optional[str] = None
  dev_file: Optional[str] = None
  test_file: Optional[str] = None
  label_scheme: str = "auto"            # auto, iob1 or iob2
  entity_types: Sequence[str] = ner_data.CONLL2003_ENTITY_TYPES
  doc_stride: int = 64
  mode: str = "finetune"                # finetune or feature
  feature_layers: str = "concat_last_four"
  lstm_units: int = 768
  feature_cache_dir: Optional[str] = None
  feature_batch_size: int = 32
  dropout_rate: float = 0.1

  def __post_init__(self):
    if not 0.0 <= self.dropout_rate < 1.0:  # NaN fails too: every comparison is false
      raise script_utils.UserError(
          f"--dropout_rate={self.dropout_rate}: must be in [0, 1)")


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
    self.scheme = scheme
    self.arrays = ner_data.features_to_arrays(features)
    self.arrays["feature_index"] = np.arange(len(features), dtype=np.int32)
    self.labelled = all(e.labels is not None for e in examples)
    self.cache = None  # feature mode: the TFRecord of its frozen activations


def collect_predictions(model, dataset, num_features, max_seq_length, what="predict"):
  """Runs the model; returns (predicted ids int32 [N, max_seq_length], the negative
  log-probability of the gold labels summed, the number of labelled positions).

  dataset: batches with feature_index [B] and label_ids [B, S] (-1: no label); rows of
  the result are in feature order.
  """
  predicted = np.zeros((num_features, max_seq_length), np.int32)
  nll_sum, count = 0.0, 0
  for batch in training.predict(model, dataset, total=num_features, what=what):
    logits = batch["logits"].astype(np.float64)
    index = batch["feature_index"]
    width = min(logits.shape[1], max_seq_length)  # cached batches may be padded wider
    predicted[index, :width] = np.argmax(logits[:, :width], axis=-1)
    labels = batch["label_ids"]
    mask = labels >= 0
    if mask.any():
      shifted = logits - logits.max(-1, keepdims=True)
      log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
      gold = np.take_along_axis(log_probs, np.maximum(labels, 0)[..., None], -1)[..., 0]
      nll_sum += float(-(gold * mask).sum())
      count += int(mask.sum())
  return predicted, nll_sum, count


def split_results(key, metrics, nll_sum, count, num_sentences):
  """The `key`_* values (key "eval" or "test") of conlleval metrics and the loss."""
  results = {f"{key}_f1": metrics["f1"], f"{key}_precision": metrics["precision"],
             f"{key}_recall": metrics["recall"], f"{key}_accuracy": metrics["accuracy"],
             f"{key}_loss": nll_sum / max(count, 1), f"{key}_sentences": num_sentences}
  for entity_type, values in metrics["per_type"].items():
    results[f"{key}_f1_{entity_type}"] = values["f1"]
  return results


class NerTask(finetune.Task):
  """Token tagging of CoNLL files, fine-tuned or feature-based (NerSettings.mode)."""

  name = "NER"

  def __init__(self, options, settings):
    super().__init__(options)
    self.settings = settings
    self.feature_mode = settings.mode == "feature"
    self.loads_init_checkpoint = not self.feature_mode
    self.label_list = ner_data.make_label_list(
        [t.strip() for t in settings.entity_types if t.strip()])
    self.splits = {}
    self.feature_dim = None  # feature mode: width of the cached activations

  # ------------------------------------------------------------------ data

  def read_data(self, config):
    settings = self.settings
    if not os.path.isdir(settings.data_dir):
      raise script_utils.UserError(f"--data_dir={settings.data_dir}: no such folder")
    if settings.doc_stride < 1:
      raise script_utils.UserError(f"--doc_stride={settings.doc_stride}: must be at least 1")
    if settings.mode not in ("finetune", "feature"):
      raise script_utils.UserError(f"--mode={settings.mode}: use finetune or feature")
    if self.feature_mode:
      for flag in ("lstm_units", "feature_batch_size"):
        if getattr(settings, flag) < 1:
          raise script_utils.UserError(f"--{flag}={getattr(settings, flag)}: must be at "
                                       "least 1")
      ner_features.check_layer_choice(settings.feature_layers, config.num_hidden_layers)
      self.feature_dim = ner_features.feature_dim(settings.feature_layers,
                                                  config.hidden_size)
    tokenizer = tokenization.FullTokenizer(self.options.vocab_file,
                                           do_lower_case=self.options.do_lower_case)
    # Every input is read and checked before any model is built: bad data fails in seconds.
    wanted = [("train", self.options.do_train), ("dev", self.options.do_eval),
              ("test", self.options.do_predict)]
    for name, needed in wanted:
      if needed:
        self.splits[name] = self._read_split(name, tokenizer)
    if self.feature_mode:
      self._cache_activations(config)

  def _split_path(self, split):
    settings = self.settings
    given = {"train": settings.train_file, "dev": settings.dev_file,
             "test": settings.test_file}[split]
    if given:
      path = given if os.path.exists(given) else os.path.join(settings.data_dir, given)
      return script_utils.check_input_file(path, f"{split}_file")
    for name in DEFAULT_FILES[split]:
      path = os.path.join(settings.data_dir, name)
      if os.path.isfile(path):
        return script_utils.check_input_file(path, "data_dir")
    raise script_utils.UserError(
        f"--data_dir={settings.data_dir}: no {split} file "
        f"({' or '.join(DEFAULT_FILES[split])}); name it with --{split}_file")

  def _read_split(self, name, tokenizer):
    path = self._split_path(name)
    examples = ner_data.read_conll(path)
    limit = (self.options.max_train_examples if name == "train"
             else self.options.max_eval_examples)
    if limit and limit > 0:
      examples = examples[:limit]
    if name != "test" and any(e.labels is None for e in examples):
      raise script_utils.UserError(f"{path}: {name} data needs a tag column")
    ner_data.check_labels(examples, self.label_list, path)
    scheme = (ner_data.detect_scheme(examples) if self.settings.label_scheme == "auto"
              else self.settings.label_scheme)
    features = ner_data.convert_examples_to_features(
        examples, self.label_list, self.options.max_seq_length, tokenizer,
        doc_stride=self.settings.doc_stride)
    logging.info("%s: %d sentences, %d windows (%d extra for long sentences), scheme %s",
                 path, len(examples), len(features), len(features) - len(examples),
                 scheme.upper())
    return Split(name, path, examples, features, scheme)

  def _cache_activations(self, config):
    """Feature mode: every split's frozen activations, written once to the cache."""
    settings, options = self.settings, self.options
    cache_dir = settings.feature_cache_dir or os.path.join(options.output_dir,
                                                           "feature_cache")
    atomic_output.ensure_output_dir(cache_dir, "feature_cache_dir")
    # Seeded as the driver seeds the trained model: a random encoder (no checkpoint)
    # gives the same activations on every run.
    keras.utils.set_random_seed(int(options.seed))
    encoder = modeling.BertModel(config, causal=options.ltr)
    if options.init_checkpoint:
      checkpoints.load_checkpoint(encoder, options.init_checkpoint)
    else:
      logging.warning("No --init_checkpoint: features come from a random encoder")
    for split in self.splits.values():
      split.cache = ner_features.cache_path(cache_dir, split.name, settings.feature_layers,
                                            self._fingerprint(split, config))
      if os.path.exists(split.cache):
        logging.info("Using cached %s features: %s", split.name, split.cache)
        continue
      dataset = make_dataset(split.arrays, settings.feature_batch_size, False,
                             multiple=input_pipeline.TRAINING_LENGTH_MULTIPLE)
      ner_features.write_feature_cache(split.cache, encoder, dataset,
                                       settings.feature_layers, len(split.features),
                                       label=f"{split.name} features")
      logging.info("Cached %s features in %s", split.name, split.cache)

  def _fingerprint(self, split, config):
    """Hash of everything that determines a split's cached activations."""
    settings, options = self.settings, self.options
    return ner_data.settings_fingerprint(
        data=ner_features.file_identity(split.path),
        checkpoint=ner_features.checkpoint_identity(options.init_checkpoint),
        config=config.to_dict(), vocab=os.path.abspath(options.vocab_file),
        lower=options.do_lower_case, max_seq_length=options.max_seq_length,
        doc_stride=settings.doc_stride,
        limit=(options.max_train_examples, options.max_eval_examples),
        layers=settings.feature_layers, ltr=options.ltr, types=tuple(self.label_list))

  def num_train_examples(self):
    return len(self.splits["train"].features)

  def num_segments(self):
    return 1  # one sentence (window) a row: segment id 0 only

  def _dataset(self, split, batch_size, training_data, input_context=None):
    if self.feature_mode:
      return ner_features.feature_dataset(split.cache, self.feature_dim, batch_size,
                                          training_data, seed=self.options.seed,
                                          input_context=input_context)
    # Eval/predict in order of length: collect_predictions places rows by feature_index.
    return make_dataset(split.arrays, batch_size, training_data, seed=self.options.seed,
                        input_context=input_context, sort_by_length=not training_data)

  def train_dataset(self, input_context, batch_size):
    return self._dataset(self.splits["train"], batch_size, True, input_context)

  # ------------------------------------------------------------------ model

  def head_info(self):
    return {"task": self.name,
            "head": "feature_ner" if self.feature_mode else "token_classification",
            "labels": list(self.label_list)}

  def build_model(self, config):
    settings = self.settings
    if self.feature_mode:
      return ner_features.build_bilstm_tagger(self.feature_dim, len(self.label_list),
                                              settings.lstm_units)
    model, _ = modeling.build_token_classifier_model(
        config, len(self.label_list), causal=self.options.ltr,
        dropout_rate=settings.dropout_rate)
    return model

  def loss(self, features, outputs):
    return modeling.token_classification_loss(features, outputs)

  # ------------------------------------------------------------------ outputs

  def evaluate(self, model, strategy):
    del strategy
    return self._score(model, "dev", self.options.eval_batch_size)

  def predict(self, model, global_step):
    results = self._score(model, "test", self.options.predict_batch_size)
    if results is not None:
      results["global_step"] = global_step
      atomic_output.write_key_values(
          os.path.join(self.options.output_dir, "test_results.txt"), results,
          log=logging.info)

  def _score(self, model, name, batch_size):
    """Predicts split `name`; writes <name>_predictions.txt and, when the file has gold
    tags, <name>_conlleval.txt. Returns the eval_*/test_* values, or None (no tags)."""
    split = self.splits[name]
    predicted, nll_sum, count = collect_predictions(
        model, self._dataset(split, batch_size, False), len(split.features),
        self.options.max_seq_length, what=name)
    tags = ner_data.decode_predictions(split.examples, split.features, predicted,
                                       self.label_list)
    out = self.options.output_dir
    ner_data.write_conll_predictions(os.path.join(out, f"{name}_predictions.txt"),
                                     split.examples, tags, split.scheme)
    if not split.labelled:
      logging.info("%s has no gold tags: wrote predictions only", split.path)
      return None
    metrics = ner_data.evaluate_examples(split.examples, tags, split.scheme)
    report = ner_data.conlleval_report(metrics)
    report_file = os.path.join(out, f"{name}_conlleval.txt")
    with script_utils.disk_full_names(report_file), atomic_output.atomic_open(
        report_file) as handle:
      handle.write(report)
    for line in report.splitlines():
      logging.info("%s conlleval: %s", name, line)
    return split_results("eval" if name == "dev" else "test", metrics, nll_sum, count,
                         len(split.examples))
