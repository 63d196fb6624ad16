"""Pretraining (masked LM + next sentence) as a finetune.Task, for run_pretraining.py.

It joins input_pipeline.pretraining_dataset and heads.build_pretraining_model for the
driver, with the paper's ablations (no_nsp, ltr) and no_dropout (the config written
beside the pretrained model keeps its own rates, which fine-tuning then uses). Records
of every create_pretraining_data.py layout are read without a flag: packed rows train a
model that attends within each sequence (heads.build_pretraining_model(packed=True)),
and records without masks are masked as they are read (masking_graph.mask_batch). After
training the chief also writes the model in Google's TF1 layout to
output_dir/pretrained/, which every other script accepts."""

import copy
import functools

from absl import logging
import tensorflow as tf

from bert import heads
from bert import input_pipeline
from bert import masking
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


def as_packed_features(features):
  """One-sequence rows in the packed model's form: positions 0..S-1, the padding mask as
  sequence ids, and one next-sentence slot at position 0 (so a packed model evaluates
  records of either layout)."""
  ids = features["input_ids"]
  batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
  out = dict(features)
  out["position_ids"] = tf.broadcast_to(tf.range(seq)[None, :], [batch, seq])
  out["sequence_ids"] = tf.cast(features["input_mask"] > 0, tf.int32)
  out["next_sentence_positions"] = tf.zeros([batch, 1], tf.int32)
  out["next_sentence_labels"] = tf.reshape(features["next_sentence_labels"], [batch, 1])
  out["next_sentence_weights"] = tf.ones([batch, 1], tf.float32)
  return out


class PretrainingTask(finetune.Task):
  """Masked LM (+ next sentence) on create_pretraining_data.py's TFRecords."""

  name = "pretraining"
  needs_vocab = False  # reads token ids, not text
  # output_dir/pretrained holds the Google-layout twin (after_training).
  output_subfolders = finetune.Task.output_subfolders + ("pretrained",)

  def __init__(self, options, pretraining, masking_options=masking.MaskingOptions()):
    """options: the run's RunOptions; pretraining: the records and what is computed
    (pretraining_options.PretrainingOptions); masking_options: the rules that mask
    records made without masks (masking.MaskingOptions)."""
    super().__init__(options)
    self.input_file = pretraining.input_file
    self.eval_input_file = pretraining.eval_input_file
    self.max_predictions_per_seq = pretraining.max_predictions_per_seq
    self.max_eval_steps = pretraining.max_eval_steps
    self.use_next_sentence = not (pretraining.no_nsp or options.ltr)
    self.no_dropout = pretraining.no_dropout
    self.masking_options = masking_options
    self.config = None
    self.files = self.eval_files = None
    self.layouts = {}  # flag name -> input_pipeline.RecordLayout
    self.vocabulary = None
    self.packed = False

  def head_info(self):
    return {"task": self.name, "head": "pretraining",
            "next_sentence": self.use_next_sentence}

  def read_data(self, config):
    options = self.options
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
      self.layouts[flag] = input_pipeline.check_pretraining_files(
          files, options.max_seq_length, self.max_predictions_per_seq, flag,
          vocab_size=config.vocab_size)
    if "eval_input_file" not in self.layouts:
      self.layouts["eval_input_file"] = self.layouts["input_file"]
    self._check_layouts(config)
    logging.info("Pretraining %s (%s): NSP %s, LTR %s, dropout %s",
                 input_pipeline.file_label(self.files),
                 self.layouts["input_file"].describe(), self.use_next_sentence, options.ltr,
                 "off" if self.no_dropout else "on")

  def _read_layouts(self):
    """The layouts of the files this run reads (training, evaluation or both)."""
    read = []
    if self.options.do_train:
      read.append(("input_file", self.layouts["input_file"]))
    if self.options.do_eval:
      read.append(("eval_input_file" if self.eval_input_file else "input_file",
                   self.layouts["eval_input_file"]))
    return read

  def _check_layouts(self, config):
    """Packed or unmasked records: the options they need, each refusal in one line."""
    read = self._read_layouts()
    self.packed = any(layout.packed for _, layout in read)
    unmasked = [(flag, layout) for flag, layout in read if not layout.masked]
    if self.options.ltr and (self.packed or unmasked):
      flag = next(f for f, layout in read if layout.packed or not layout.masked)
      raise errors.UserError(
          f"--ltr: --{flag} holds {self.layouts[flag].describe()}; the left-to-right "
          "ablation reads the original's layout (recreate the data without "
          "--pack_sequences and --dynamic_masking)")
    if not unmasked:
      if self.masking_options.changed():
        raise errors.UserError(
            f"--masked_lm_prob, --do_whole_word_mask, --mask_token_prob and "
            f"--random_token_prob apply to records without masks; --{read[0][0] if read else 'input_file'} "
            "was masked by create_pretraining_data.py (pass those flags there, or make "
            "the data with --dynamic_masking)")
      return
    flag, layout = unmasked[0]
    if not self.options.vocab_file:
      raise errors.UserError(
          f"--{flag} holds records without masks (create_pretraining_data.py "
          "--dynamic_masking): run_pretraining.py masks them as it trains and needs "
          "--vocab_file, the vocabulary they were made with")
    for flag, layout in unmasked:
      prob = self.masking_options.masked_lm_prob
      if layout.packed and layout.masked_lm_prob is not None and abs(
          layout.masked_lm_prob - prob) > 1e-6:
        raise errors.UserError(
            f"--{flag} holds packed rows without masks made for --masked_lm_prob="
            f"{layout.masked_lm_prob:g} (each row has room for that many predictions), "
            f"but --masked_lm_prob is {prob:g}; rerun with --masked_lm_prob="
            f"{layout.masked_lm_prob:g} or recreate the data")
    self.vocabulary = masking.Vocabulary.from_file(self.options.vocab_file)
    if max(self.vocabulary.vocab_ids) >= config.vocab_size:
      raise errors.UserError(
          f"--vocab_file={self.options.vocab_file}: has ids up to "
          f"{max(self.vocabulary.vocab_ids)}, but vocab_size is {config.vocab_size} in "
          "--bert_config_file; pass the model's vocabulary")
    logging.info("Masks drawn as it trains: masked_lm_prob %g, whole words %s, "
                 "[MASK] %g, random %g", prob, self.masking_options.do_whole_word_mask,
                 self.masking_options.mask_token_prob,
                 self.masking_options.random_token_prob)

  def num_train_examples(self):
    raise errors.UserError("run_pretraining.py needs --num_train_steps")

  def _dataset(self, files, input_context, batch_size, is_training):
    layout = self.layouts["input_file" if is_training else "eval_input_file"]
    dataset = input_pipeline.pretraining_dataset(
        files, self.options.max_seq_length, self.max_predictions_per_seq, batch_size,
        is_training, input_context, seed=self.options.seed, layout=layout,
        masking=None if layout.masked else (self.vocabulary, self.masking_options))
    if self.options.ltr:
      return dataset.map(to_next_token_features)
    if self.packed and not layout.packed:
      return dataset.map(as_packed_features)
    return dataset

  def train_dataset(self, input_context, batch_size):
    return self._dataset(self.files, input_context, batch_size, True)

  def build_model(self, config):
    if self.no_dropout:
      config = copy.copy(config)
      config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    model, _ = heads.build_pretraining_model(
        config, use_next_sentence=self.use_next_sentence, causal=self.options.ltr,
        packed=self.packed, dtype=self.options.precision.policy)
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
    # The loss over the whole set, whatever the batches: the per-example losses are
    # normalised per batch, so their mean would depend on how the records fall into
    # batches (packed rows hold several sequences), and the metrics do not.
    values["loss"] = values["masked_lm_loss"] + values.get("next_sentence_loss", 0.0)
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
