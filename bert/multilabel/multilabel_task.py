"""Multi-label classification (one sigmoid per label) as a finetune.Task: run_multilabel.py's
work.

The model is the classifier's with a sigmoid, not a softmax, over its outputs: each
label is a yes or no of its own, and an example may have any number of them, none
included. docs/multilabel.md lists the outputs and the export's signatures."""


from absl import logging
import numpy as np
import tensorflow as tf

from bert.formats import serving
from bert import fast_tokenization
from bert import heads
from bert import input_pipeline
from bert import metrics
from bert.multilabel import multilabel_data
from bert import tokenization
from bert.training import evaluation
from bert.training import finetune
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks

_SEQUENCE_KEYS = ("input_ids", "input_mask", "segment_ids")


def _eval_dataset(arrays, batch_size):
  """One pass over `arrays` in file order, each batch trimmed to its longest row."""
  return input_pipeline.array_dataset(arrays, batch_size, False, _SEQUENCE_KEYS)


class MultiLabelTask(finetune.Task):
  """train.tsv / dev.tsv / test.tsv in data_dir, labels from labels_file."""

  name = "multi-label"
  exports = True

  def __init__(self, options, data_dir, labels_file=None,
               threshold=multilabel_data.THRESHOLD):
    super().__init__(options)
    multilabel_data.check_threshold(threshold)
    self.data_dir, self.threshold = data_dir, threshold
    self.labels_file = labels_file or paths.join(data_dir, multilabel_data.LABELS_FILE)
    self.labels, self.splits = None, {}

  def head_info(self):
    return {"task": "multi_label", "head": "multi_label", "labels": self.labels,
            "threshold": self.threshold}

  def read_data(self, config):
    del config
    if not file_io.isdir(self.data_dir):
      raise errors.UserError(f"--data_dir={self.data_dir}: no such folder")
    self.labels = multilabel_data.read_label_list(self.labels_file)
    tokenizer = tokenization.FullTokenizer(self.options.vocab_file,
                                           do_lower_case=self.options.do_lower_case)
    for split, needed in [("train", self.options.do_train), ("dev", self.options.do_eval),
                          ("test", self.options.do_predict)]:
      if needed:
        path = multilabel_data.data_file(self.data_dir, split)
        input_checks.check_input_file(path, "data_dir")
        examples = multilabel_data.read_examples(path, self.labels, split != "test")
        limit = (self.options.max_train_examples if split == "train"
                 else self.options.max_eval_examples)
        examples = examples[:limit] if limit else examples
        if split == "train" and not any(e.labels for e in examples):
          # Every target 0: the model learns to predict no label for any text.
          raise errors.UserError(
              f"{path}: no line of the training data has a label"
              + (f" (in the first {limit}, --max_train_examples)" if limit else "")
              + "; a model trained on it predicts no label for any text: label the "
              "data, or check that the labels are in the second tab-separated column")
        logging.info("%s %s: %d examples from %s", self.name, split, len(examples), path)
        self.splits[split] = multilabel_data.convert_examples_to_features(
            examples, self.labels, self.options.max_seq_length, tokenizer)

  def num_train_examples(self):
    return len(self.splits["train"]["input_ids"])

  def train_dataset(self, input_context, batch_size):
    return input_pipeline.array_dataset(self.splits["train"], batch_size, True,
                                        _SEQUENCE_KEYS,
                                        input_pipeline.TRAINING_LENGTH_MULTIPLE,
                                        self.options.seed, input_context)

  def build_model(self, config):
    model, _ = heads.build_classifier_model(config, len(self.labels),
                                            causal=self.options.ltr,
                                            dtype=self.options.precision.policy)
    return model

  def loss(self, features, outputs):
    return heads.multi_label_loss(features, outputs, self.threshold)

  def evaluate(self, model, strategy):
    del strategy
    arrays = self.splits["dev"]
    logits = evaluation.predict_in_order(
        model, _eval_dataset(arrays, self.options.eval_batch_size), len(arrays["input_ids"]),
        what="dev")["logits"]
    values = multilabel_data.eval_values(logits, arrays["label_ids"], self.labels,
                                         self.threshold)
    values["num_examples"] = len(logits)
    return values

  def eval_metric_names(self):
    return (["micro_precision", "micro_recall", "micro_f1", "macro_f1"]
            + [f"f1_{name}" for name in self.labels] + ["eval_accuracy", "eval_loss"])

  def default_best_metric(self):
    return "micro_f1"

  def predict(self, model, global_step):
    del global_step
    arrays = self.splits["test"]
    logits = evaluation.predict_in_order(
        model, _eval_dataset(arrays, self.options.predict_batch_size),
        len(arrays["input_ids"]), what="test")["logits"]
    path = paths.join(self.options.output_dir, "test_results.tsv")
    multilabel_data.write_results(path, self.labels,
                                  metrics.sigmoid(logits.astype(np.float64)), self.threshold)
    logging.info("Wrote %d test predictions to %s", len(logits), path)

  def export(self, model, export_dir):
    tokenizer = fast_tokenization.FastTokenizer(self.options.vocab_file,
                                                self.options.do_lower_case)
    packer = serving.TextPacker(tokenizer, self.options.max_seq_length, tokenizer.cls_id,
                                tokenizer.sep_id)
    names = tf.constant(self.labels)

    def head(inputs):
      logits = model({k: inputs[k] for k in _SEQUENCE_KEYS}, training=False)["logits"]
      probabilities = tf.sigmoid(tf.cast(logits, tf.float32))
      return {"probabilities": probabilities,
              "predictions": tf.cast(probabilities >= self.threshold, tf.int32)}

    def serve_text(text_a):
      outputs = head(packer(text_a))
      chosen = tf.ragged.boolean_mask(
          tf.broadcast_to(names, tf.shape(outputs["predictions"])),
          outputs["predictions"] > 0)
      outputs["labels"] = tf.strings.reduce_join(chosen, axis=-1, separator=",")
      return outputs

    def serve_ids(input_ids, input_mask, segment_ids):
      return head({"input_ids": input_ids, "input_mask": input_mask,
                   "segment_ids": segment_ids})

    self.write_export(export_dir, [
        serving.Endpoint("serving_default", serve_ids, serving.token_id_specs()),
        serving.Endpoint("serve_text", serve_text, serving.text_specs(1), custom_ops=True)],
        [model, tokenizer], num_texts=1)

