"""Sentence (pair) classification and regression as a finetune.Task: GLUE, XNLI, TSV/CSV.

It joins the readers (classifier_data.py), the in-graph features (classifier_features.py),
the metrics and the head for the driver (finetune.run); docs/classifier.md lists its
outputs."""

from absl import logging
import numpy as np

from bert.classifier import classifier_examples
from bert.classifier import classifier_features
from bert.classifier import classifier_data
from bert.formats import serving
from bert import fast_tokenization
from bert import heads
from bert import metrics
from bert.training import evaluation
from bert.training import finetune
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors


def make_processor(task_name, data_dir, xnli_language=classifier_data.XNLI_LANGUAGE,
                   columns=None):
  """The DataProcessor of --task_name (a GLUE name, xnli, or tsv/csv with `columns`, a
  classifier_examples.DelimitedFileOptions)."""
  processor = classifier_data.get_processor(task_name, xnli_language, columns)
  if hasattr(processor, "set_data_dir"):
    processor.set_data_dir(data_dir)
  return processor


def predict_logits(model, examples, labels, tokenizer, max_seq_length, batch_size,
                   fixed_padding=classifier_examples.FIXED_PADDING, what="predict"):
  """Logits float32 [len(examples), outputs] in example order, with progress logs.

  Batches are sorted by length within windows (per-batch padding); each carries
  `example_index` to put its rows back in file order. They are make_dataset's eval
  batches, built eagerly (classifier_features.predict_batches: nothing to trace).
  """
  dataset = classifier_features.predict_batches(
      examples, labels, tokenizer, max_seq_length, batch_size, fixed_padding=fixed_padding)
  return evaluation.predict_in_order(model, dataset, len(examples), index_key="example_index",
                                     what=what)["logits"].astype(np.float32)


class ClassifierTask(finetune.Task):
  """One classification or regression task, read by a classifier_examples.DataProcessor."""

  exports = True

  def __init__(self, options, processor, data_dir,
               fixed_padding=classifier_examples.FIXED_PADDING):
    super().__init__(options)
    self.processor, self.data_dir = processor, data_dir
    self.name = type(processor).__name__.replace("Processor", "") or "classifier"
    # TPUs need static shapes: every batch padded to max_seq_length.
    self.fixed_padding = fixed_padding or options.distribution_strategy == "tpu"
    self.labels = self.tokenizer = None
    self.train_examples, self.eval_sets, self.predict_sets = None, [], []

  def read_data(self, config):
    del config
    if not file_io.isdir(self.data_dir):
      raise errors.UserError(f"--data_dir={self.data_dir}: no such directory")
    options = self.options
    self.labels = self.processor.get_labels()
    # Every split this run needs is read (and checked) before any training, so that a
    # missing test file or a bad row fails in seconds, not after hours.
    if options.do_train:
      self.train_examples = self.processor.get_train_examples(self.data_dir)
    if options.do_eval:
      self.eval_sets = self.processor.get_eval_sets(self.data_dir)
    if options.do_predict:
      self.predict_sets = self.processor.get_predict_sets(self.data_dir)
    self.tokenizer = fast_tokenization.FastTokenizer(
        options.vocab_file, options.do_lower_case, normalize=options.normalize)

  def num_train_examples(self):
    return len(self.train_examples)

  def num_segments(self):
    sets = [self.train_examples or []] + [s.examples for s in self.eval_sets + self.predict_sets]
    return 2 if any(e.text_b for examples in sets for e in examples) else 1

  def train_dataset(self, input_context, batch_size):
    return classifier_features.make_dataset(
        self.train_examples, self.labels, self.tokenizer, self.options.max_seq_length,
        batch_size, is_training=True, fixed_padding=self.fixed_padding,
        seed=self.options.seed, input_context=input_context,
        pad_to_multiple_of=8 if self.options.enable_xla else 1)

  def build_model(self, config):
    model, _ = heads.build_classifier_model(config, self.processor.num_outputs,
                                            causal=self.options.ltr,
                                            dtype=self.options.precision.policy)
    return model

  def loss(self, features, outputs):
    return heads.classifier_loss(features, outputs,
                                 regression=self.processor.is_regression)

  def evaluate(self, model, strategy):
    del strategy
    values = {}
    for eval_set in self.eval_sets:
      logits = self._logits(model, eval_set.examples, self.options.eval_batch_size,
                            eval_set.name)
      for key, value in self._eval_values(logits, eval_set.examples).items():
        values[eval_set.key_prefix + key] = value
    return values  # the driver adds the original's `loss` (= eval_loss)

  def eval_metric_names(self):
    if self.processor.is_regression:
      keys = ["pearson", "spearman", "corr"]
    else:
      keys = list(metrics.compute_metrics(self.processor.metric, [0], [0]))
    return [eval_set.key_prefix + key for eval_set in self.eval_sets
            for key in keys + ["loss"]]

  def default_best_metric(self):
    # What the paper reports for each GLUE task: F1 for MRPC and QQP, Spearman for STS-B,
    # Matthews correlation for CoLA, accuracy for the others (MNLI: the matched dev set).
    return {"accuracy_f1": "eval_f1", "matthews": "eval_matthews_corrcoef",
            "pearson_spearman": "eval_spearman"}.get(self.processor.metric, "eval_accuracy")

  def head_info(self):
    labels = self.labels if self.labels is not None else self.processor.get_labels()
    if self.processor.is_regression:
      return {"task": self.name, "head": "regression"}
    return {"task": self.name, "head": "classifier", "labels": [str(l) for l in labels]}

  def predict(self, model, global_step):
    del global_step
    for predict_set in self.predict_sets:
      logits = self._logits(model, predict_set.examples, self.options.predict_batch_size,
                            predict_set.name)
      if self.processor.is_regression:
        outputs = predictions = logits[:, 0]
      else:
        outputs = metrics.softmax(logits)
        predictions = outputs.argmax(axis=1)
      path = paths.join(self.options.output_dir, predict_set.results_file)
      classifier_examples.write_probabilities(path, outputs)
      logging.info("Wrote %s", path)
      if predict_set.submission_file:
        path = paths.join(self.options.output_dir, predict_set.submission_file)
        classifier_examples.write_submission(path, self.processor, predict_set.examples,
                                         predictions)
        logging.info("Wrote %s (GLUE submission format)", path)

  def export(self, model, export_dir):
    tokenizer = self.tokenizer or fast_tokenization.FastTokenizer(
        self.options.vocab_file, self.options.do_lower_case,
        normalize=self.options.normalize)
    packer = serving.TextPacker(tokenizer, self.options.max_seq_length, tokenizer.cls_id,
                                tokenizer.sep_id)
    num_texts = self.processor.num_texts
    self.write_export(export_dir, serving.classifier_endpoints(model, self.labels, packer,
                                                               num_texts),
                      [model, tokenizer], num_texts, **self._litert_fields())

  def _litert_fields(self):
    """model.json's task_name (the --task_name that reads this task's files: the first
    PROCESSORS key of the processor, tsv or csv for users' files) and XNLI's language."""
    processor = self.processor
    if isinstance(processor, classifier_data.DelimitedFileProcessor):
      return {"task_name": processor.test_file.rsplit(".", 1)[-1]}
    names = [k for k, v in classifier_data.PROCESSORS.items() if v is type(processor)]
    fields = {"task_name": names[0] if names else None}
    if isinstance(processor, classifier_data.XnliProcessor):
      fields["xnli_language"] = processor.language
    return fields

  def _logits(self, model, examples, batch_size, what):
    return predict_logits(model, examples, self.labels, self.tokenizer,
                          self.options.max_seq_length, batch_size, self.fixed_padding, what)

  def _eval_values(self, logits, examples):
    """The GLUE metrics and the mean loss of one eval set, from its logits."""
    if self.processor.is_regression:
      scores = logits[:, 0].astype(np.float64)
      labels = np.array([float(e.label) for e in examples], np.float64)
      values = metrics.compute_metrics(self.processor.metric, scores, labels)
      values["loss"] = float(np.mean((scores - labels) ** 2))
      return values
    labels = np.array([self.labels.index(e.label) for e in examples])
    values = metrics.compute_metrics(self.processor.metric, logits.argmax(axis=1), labels)
    values["loss"] = metrics.cross_entropy(logits, labels)
    return values

