"""Pretraining (masked LM + next sentence) as a finetune.Task, for run_pretraining.py.

It joins input_pipeline.pretraining_dataset and heads.build_pretraining_model for the
driver, with the paper's ablations (no_nsp, ltr) and no_dropout (the config written
beside the pretrained model keeps its own rates, which fine-tuning then uses). After
training the chief also writes the model in Google's TF1 layout to
output_dir/pretrained/, which every other script accepts."""

import copy
import functools

from absl import logging
import tensorflow as tf

from bert import heads
from bert import input_pipeline
from bert.formats import checkpoint_files
from bert.training import evaluation
from bert.training import finetune
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks


def to_next_token_features(features):
  """--ltr: the masked-LM batch -> next-token prediction at every real position.

  The [MASK]/random replacements are undone (masked_lm_ids holds the original tokens),
  then position t predicts token t+1: masked_lm_positions = 0..S-2, masked_lm_ids =
  input_ids[:, 1:], masked_lm_weights = input_mask[:, 1:]. All int32/float32 [B, S-1].
  """
  ids = features["input_ids"]
  seq = tf.shape(ids)[1]
  real = tf.cast(features["masked_lm_weights"] > 0, tf.int32)[..., None]   # [B, P, 1]
  one_hot = tf.one_hot(features["masked_lm_positions"], seq, dtype=tf.int32) * real
  replaced = tf.reduce_max(one_hot, axis=1)                                # [B, S]
  originals = tf.reduce_sum(one_hot * features["masked_lm_ids"][..., None], axis=1)
  clean = ids * (1 - replaced) + originals
  batch = tf.shape(ids)[0]
  out = dict(features)
  out["input_ids"] = clean
  out["masked_lm_positions"] = tf.tile(tf.range(seq - 1)[None], [batch, 1])
  out["masked_lm_ids"] = clean[:, 1:]
  out["masked_lm_weights"] = tf.cast(features["input_mask"][:, 1:], tf.float32)
  return out


class PretrainingTask(finetune.Task):
  """Masked LM (+ next sentence) on create_pretraining_data.py's TFRecords."""

  name = "pretraining"
  needs_vocab = False  # reads token ids, not text

  def __init__(self, options, input_file, eval_input_file=None,
               max_predictions_per_seq=20, max_eval_steps=100, no_nsp=False,
               no_dropout=False):
    super().__init__(options)
    self.input_file, self.eval_input_file = input_file, eval_input_file
    self.max_predictions_per_seq = max_predictions_per_seq
    self.max_eval_steps = max_eval_steps
    self.use_next_sentence = not (no_nsp or options.ltr)
    self.no_dropout = no_dropout
    self.config = None
    self.files = self.eval_files = None

  def head_info(self):
    return {"task": self.name, "head": "pretraining",
            "next_sentence": self.use_next_sentence}

  def read_data(self, config):
    options = self.options
    if self.max_predictions_per_seq < 1 or self.max_eval_steps < 1:
      raise errors.UserError(
          "--max_predictions_per_seq and --max_eval_steps must be at least 1")
    if self.max_predictions_per_seq > options.max_seq_length:
      raise errors.UserError(
          f"--max_predictions_per_seq={self.max_predictions_per_seq} exceeds "
          f"--max_seq_length={options.max_seq_length}")
    self.config = config
    self.files = input_checks.expand_file_patterns(self.input_file, "input_file")
    self.eval_files = self.files
    if self.eval_input_file:
      self.eval_files = input_checks.expand_file_patterns(self.eval_input_file,
                                                          "eval_input_file")
    checks = [(self.files, "input_file")]
    if self.eval_input_file:
      checks.append((self.eval_files, "eval_input_file"))
    for files, flag in checks:
      input_pipeline.check_pretraining_files(files, options.max_seq_length,
                                             self.max_predictions_per_seq, flag,
                                             vocab_size=config.vocab_size)
    logging.info("Pretraining %s: NSP %s, LTR %s, dropout %s",
                 input_pipeline.file_label(self.files), self.use_next_sentence, options.ltr,
                 "off" if self.no_dropout else "on")

  def num_train_examples(self):
    raise errors.UserError("run_pretraining.py needs --num_train_steps")

  def _dataset(self, files, input_context, batch_size, is_training):
    dataset = input_pipeline.pretraining_dataset(
        files, self.options.max_seq_length, self.max_predictions_per_seq, batch_size,
        is_training, input_context, seed=self.options.seed)
    return dataset.map(to_next_token_features) if self.options.ltr else dataset

  def train_dataset(self, input_context, batch_size):
    return self._dataset(self.files, input_context, batch_size, True)

  def build_model(self, config):
    if self.no_dropout:
      config = copy.copy(config)
      config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    model, _ = heads.build_pretraining_model(
        config, use_next_sentence=self.use_next_sentence, causal=self.options.ltr)
    return model

  def loss(self, features, outputs):
    return heads.pretraining_loss(features, outputs,
                                  use_next_sentence=self.use_next_sentence)

  def evaluate(self, model, strategy):
    batch_size = self.options.eval_batch_size
    logging.info("Evaluating %d steps of batch %d", self.max_eval_steps, batch_size)
    dataset_fn = functools.partial(self._eval_dataset, batch_size=batch_size)
    values = evaluation.evaluate(strategy, model, self.loss, dataset_fn,
                                 steps=self.max_eval_steps)
    values.pop("num_examples")
    return values

  def _eval_dataset(self, input_context, batch_size):
    return self._dataset(self.eval_files, input_context,
                         input_context.get_per_replica_batch_size(batch_size), False)

  def after_training(self, model, global_step):
    """output_dir/pretrained/: bert_model.ckpt.* (Google's names) and bert_config.json."""
    directory = paths.join(self.options.output_dir, "pretrained")
    file_io.makedirs(directory)
    prefix = paths.join(directory, "bert_model.ckpt")
    with errors.disk_full_names(prefix):  # a full disk: one line naming it
      checkpoint_files.save_google_checkpoint(model, prefix, global_step=global_step)
      with atomic_output.atomic_open(paths.join(directory, "bert_config.json")) as handle:
        handle.write(self.config.to_json_string() + "\n")
    logging.info("Wrote %s/bert_model.ckpt and bert_config.json (step %d)", directory,
                 global_step)
