"""SWAG multiple choice (paper Section 4.4, Table 4) as a finetune.Task.

It joins swag_data's reading and features, heads.build_multiple_choice_model and the
metrics for the driver (finetune.run); docs/ner_swag.md lists the outputs."""


from absl import logging
import numpy as np

from bert import heads
from bert import input_pipeline
from bert import metrics
from bert.swag import swag_data
from bert import tokenization
from bert.training import evaluation
from bert.training import finetune
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks

_SEQUENCE_KEYS = ("input_ids", "input_mask", "segment_ids")


def make_dataset(arrays, batch_size, training_data, seed=0, input_context=None):
  """Batches of swag_data.convert_examples_to_features arrays.

  Elements: input_ids, input_mask, segment_ids int32 [B, NUM_CHOICES, S] with S the
  batch's longest pair (rounded up to input_pipeline.TRAINING_LENGTH_MULTIPLE for
  training); label_ids int32 [B].
  training_data: sharded by input pipeline, shuffled (seeded), repeated, full batches.
  """
  return input_pipeline.array_dataset(arrays, batch_size, training_data, _SEQUENCE_KEYS,
                                      input_pipeline.TRAINING_LENGTH_MULTIPLE
                                      if training_data else 1, seed,
                                      input_context)


class SwagSplit:
  """One SWAG file: its examples and their feature arrays."""

  def __init__(self, examples, arrays):
    self.examples, self.arrays = examples, arrays


class SwagTask(finetune.Task):
  """SWAG's train.csv / val.csv / test.csv in data_dir, four endings per example."""

  name = "SWAG"

  def __init__(self, options, data_dir):
    super().__init__(options)
    self.data_dir = data_dir
    self.splits = {}

  def read_data(self, config):
    del config
    if not file_io.isdir(self.data_dir):
      raise errors.UserError(f"--data_dir={self.data_dir}: no such folder")
    options = self.options
    tokenizer = tokenization.FullTokenizer(options.vocab_file,
                                           do_lower_case=options.do_lower_case)
    wanted = [("train", options.do_train), ("dev", options.do_eval),
              ("test", options.do_predict)]
    for split, needed in wanted:
      if needed:
        self.splits[split] = self._read_split(split, tokenizer)

  def _read_split(self, split, tokenizer):
    path = swag_data.swag_file(self.data_dir, split)
    input_checks.check_input_file(path, "data_dir")
    examples = swag_data.read_swag_examples(path, require_label=split != "test")
    limit = (self.options.max_train_examples if split == "train"
             else self.options.max_eval_examples)
    if limit and limit > 0:
      examples = examples[:limit]
    logging.info("SWAG %s: %d examples from %s", split, len(examples), path)
    return SwagSplit(examples, swag_data.convert_examples_to_features(
        examples, self.options.max_seq_length, tokenizer))

  def num_train_examples(self):
    return len(self.splits["train"].examples)

  def train_dataset(self, input_context, batch_size):
    return make_dataset(self.splits["train"].arrays, batch_size, True,
                        seed=self.options.seed, input_context=input_context)

  def head_info(self):
    return {"task": self.name, "head": "multiple_choice",
            "num_choices": swag_data.NUM_CHOICES}

  def build_model(self, config):
    model, _ = heads.build_multiple_choice_model(config, swag_data.NUM_CHOICES,
                                                 causal=self.options.ltr,
                                                 dtype=self.options.precision.policy)
    return model

  def loss(self, features, outputs):
    return heads.multiple_choice_loss(features, outputs)

  def evaluate(self, model, strategy):
    del strategy
    split, logits = self._predict_split(model, "dev", self.options.eval_batch_size)
    labels = split.arrays["label_ids"]
    return {"eval_accuracy": metrics.accuracy(np.argmax(logits, -1), labels),
            "eval_loss": metrics.cross_entropy(logits, labels),
            "num_examples": len(split.examples)}

  def eval_metric_names(self):
    return ["eval_accuracy", "eval_loss"]

  def eval_metric_names_before_data(self):
    return self.eval_metric_names()

  def predict(self, model, global_step):
    del global_step
    split, _ = self._predict_split(model, "test", self.options.predict_batch_size)
    logging.info("Wrote %d test predictions to %s", len(split.examples),
                 paths.join(self.options.output_dir, "test_predictions.csv"))

  def _predict_split(self, model, name, batch_size):
    """(split, logits [examples, NUM_CHOICES] in file order) of split `name`, whose
    predictions are written to <name>_predictions.csv."""
    split = self.splits[name]
    logits = evaluation.predict_in_order(
        model, make_dataset(split.arrays, batch_size, False), len(split.examples),
        what=name)["logits"]
    swag_data.write_predictions(
        paths.join(self.options.output_dir, f"{name}_predictions.csv"), split.examples,
        logits)
    return split, logits
