"""Pretrains BERT: masked LM + next sentence prediction, on any tf.distribute strategy.

The original's command line works unchanged (same flags and defaults):

  python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \\
    --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \\
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \\
    --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

Outputs in --output_dir: TF2 checkpoints `ckpt-<step>` (a rerun resumes from the newest),
TensorBoard logs in train/, eval_results.txt (masked_lm_accuracy, masked_lm_loss,
next_sentence_accuracy, next_sentence_loss, global_step, loss) and, after training, the
model in Google's TF1 layout in pretrained/ (bert_model.ckpt.* + bert_config.json), which
every other script accepts as --init_checkpoint / --bert_config_file.

Losses, as the original: masked LM = sum(w * nll) / (sum(w) + 1e-5) over the masked
positions (w = masked_lm_weights; the sum runs over the global batch here, over a TPU
core's batch in the original); next sentence = mean cross-entropy; total = their sum.
Ablations (paper, Table 5): --no_nsp drops the next-sentence loss; --ltr trains a
left-to-right model (causal attention mask) to predict the next token at every position,
without NSP, on the same TFRecords (the masked tokens are put back first).
"""

import os

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

import checkpoints
import flags_common
import input_pipeline
import modeling
import optimization
import script_utils
import training

flags_common.define_model_flags(max_seq_length=128, require_vocab=False)
flags_common.define_run_flags(train_batch_size=32, eval_batch_size=8, learning_rate=5e-5,
                              do_predict=False)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags.DEFINE_string(
    "input_file", None,
    "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string(
    "eval_input_file", None,
    "Files for --do_eval (glob or comma separated); default: --input_file, as the original.")
flags.DEFINE_integer(
    "max_predictions_per_seq", 20,
    "Maximum number of masked LM predictions per sequence. Must match data generation.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("no_nsp", False,
                  "Ablation: train the masked LM only, without next sentence prediction.")
flags.DEFINE_bool("ltr", False,
                  "Ablation: left-to-right LM (causal mask, next-token prediction, no NSP).")

FLAGS = flags.FLAGS

# The original adds this to the masked-LM weight sum so an all-padding batch divides by >0.
MLM_DENOMINATOR_EPSILON = 1e-5


def pretraining_loss_fn(use_next_sentence=True):
  """The original's losses as a training.loss_fn.

  features: masked_lm_ids int32 [B, P], masked_lm_weights float32 [B, P],
  next_sentence_labels int32 [B, 1]. outputs: masked_lm_logits float32 [B, P, vocab],
  next_sentence_logits float32 [B, 2]. Returns per-example losses [B] whose batch mean is
  masked_lm_loss + next_sentence_loss, and the eval metrics as (numerator, denominator).
  """

  def loss_fn(features, outputs):
    logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
    label_ids = tf.cast(features["masked_lm_ids"], tf.int32)
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label_ids, logits=logits)
    # Normalised by the weight sum of the whole (global) batch, so that the loss does not
    # depend on how the batch is split over replicas.
    batch = tf.cast(tf.shape(label_ids)[0], tf.float32)
    global_batch = training.cross_replica_sum(batch)
    denominator = training.cross_replica_sum(tf.reduce_sum(weights)) + MLM_DENOMINATOR_EPSILON
    per_example = tf.reduce_sum(weights * nll, axis=1) * global_batch / denominator
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    correct = tf.cast(tf.equal(predictions, label_ids), tf.float32)
    metrics = {
        "masked_lm_accuracy": (tf.reduce_sum(weights * correct), tf.reduce_sum(weights)),
        "masked_lm_loss": (tf.reduce_sum(weights * nll), tf.reduce_sum(weights)),
    }
    if use_next_sentence:
      ns_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
      ns_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
      ns_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ns_labels,
                                                              logits=ns_logits)
      per_example += ns_nll
      ns_correct = tf.cast(
          tf.equal(tf.argmax(ns_logits, -1, output_type=tf.int32), ns_labels), tf.float32)
      metrics["next_sentence_accuracy"] = (tf.reduce_sum(ns_correct), batch)
      metrics["next_sentence_loss"] = (tf.reduce_sum(ns_nll), batch)
    return per_example, metrics

  return loss_fn


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


def _dataset_fn(files, batch_size, is_training, ltr):
  def dataset_fn(context):
    dataset = input_pipeline.pretraining_dataset(
        files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
        context.get_per_replica_batch_size(batch_size), is_training, context,
        seed=FLAGS.seed)
    return dataset.map(to_next_token_features) if ltr else dataset
  return dataset_fn


def _check_flags(config):
  if not FLAGS.do_train and not FLAGS.do_eval:
    raise script_utils.UserError("At least one of --do_train or --do_eval must be True")
  checkpoints.check_max_seq_length(FLAGS.max_seq_length, config)
  for name in ("train_batch_size", "eval_batch_size", "max_predictions_per_seq",
               "num_train_steps", "max_eval_steps", "gradient_accumulation_steps"):
    if getattr(FLAGS, name) < 1:
      raise script_utils.UserError(f"--{name}={getattr(FLAGS, name)} must be at least 1")
  if FLAGS.num_warmup_steps < 0:
    raise script_utils.UserError(f"--num_warmup_steps={FLAGS.num_warmup_steps} must be >= 0")
  if FLAGS.max_predictions_per_seq > FLAGS.max_seq_length:
    raise script_utils.UserError(
        f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq} exceeds "
        f"--max_seq_length={FLAGS.max_seq_length}")


def run():
  config = checkpoints.load_bert_config(FLAGS.bert_config_file)
  _check_flags(config)
  files = script_utils.expand_file_patterns(FLAGS.input_file, "input_file")
  eval_files = files
  if FLAGS.eval_input_file:
    eval_files = script_utils.expand_file_patterns(FLAGS.eval_input_file, "eval_input_file")
  script_utils.ensure_output_dir(FLAGS.output_dir)

  # First TensorFlow work: multi-worker strategies must start before any op runs.
  strategy_name = "tpu" if FLAGS.use_tpu else FLAGS.distribution_strategy
  strategy = training.create_strategy(strategy_name, FLAGS.tpu_name, FLAGS.tpu_zone,
                                      FLAGS.gcp_project, FLAGS.num_gpus)
  input_pipeline.check_pretraining_files(files, FLAGS.max_seq_length,
                                         FLAGS.max_predictions_per_seq,
                                         vocab_size=config.vocab_size)
  if FLAGS.eval_input_file:
    input_pipeline.check_pretraining_files(eval_files, FLAGS.max_seq_length,
                                           FLAGS.max_predictions_per_seq, "eval_input_file",
                                           vocab_size=config.vocab_size)
  if FLAGS.init_checkpoint:
    checkpoints.resolve_checkpoint(FLAGS.init_checkpoint)  # fail before building anything
  training.setup_precision(FLAGS.dtype)
  deterministic = training.setup_determinism(FLAGS.seed, FLAGS.deterministic)
  use_nsp = not (FLAGS.no_nsp or FLAGS.ltr)
  logging.info("Pretraining %s: %d replica(s), dtype %s, deterministic %s, NSP %s, LTR %s",
               input_pipeline.file_label(files), strategy.num_replicas_in_sync, FLAGS.dtype,
               deterministic, use_nsp, FLAGS.ltr)
  with strategy.scope():
    model, encoder = modeling.build_pretraining_model(config, use_next_sentence=use_nsp,
                                                      causal=FLAGS.ltr)
    optimizer = optimization.create_optimizer(FLAGS.learning_rate, FLAGS.num_train_steps,
                                              FLAGS.num_warmup_steps, FLAGS.optimizer)
  loss_fn = pretraining_loss_fn(use_nsp)
  chief = training.is_chief(strategy)
  global_step = None

  if FLAGS.do_train:
    if FLAGS.init_checkpoint and not training.latest_step(FLAGS.output_dir):
      checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
    result = training.run_training(
        strategy=strategy, model=model, encoder=encoder, optimizer=optimizer,
        loss_fn=loss_fn,
        dataset_fn=_dataset_fn(files, FLAGS.train_batch_size, True, FLAGS.ltr),
        global_batch_size=FLAGS.train_batch_size, num_train_steps=FLAGS.num_train_steps,
        output_dir=FLAGS.output_dir, steps_per_loop=flags_common.steps_per_loop(FLAGS),
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        log_every_steps=FLAGS.log_every_steps, jit_compile=FLAGS.enable_xla,
        dtype=FLAGS.dtype)
    global_step = result["global_step"]
    if chief:
      _write_pretrained(model, config, global_step)
  elif FLAGS.do_eval:
    global_step = training.restore_model(model, FLAGS.output_dir)
    if global_step is None and FLAGS.init_checkpoint:
      checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
      global_step = 0
    if global_step is None:
      raise script_utils.UserError(
          f"--do_eval: no checkpoint in --output_dir={FLAGS.output_dir} and no "
          "--init_checkpoint; train first or pass --init_checkpoint")

  if FLAGS.do_eval:
    logging.info("***** Running evaluation: %d steps of batch %d *****",
                 FLAGS.max_eval_steps, FLAGS.eval_batch_size)
    metrics = training.evaluate(
        strategy, model, loss_fn,
        _dataset_fn(eval_files, FLAGS.eval_batch_size, False, FLAGS.ltr),
        steps=FLAGS.max_eval_steps)
    metrics.pop("num_examples")
    metrics["global_step"] = global_step
    if chief:
      logging.info("***** Eval results *****")
      script_utils.write_key_values(os.path.join(FLAGS.output_dir, "eval_results.txt"),
                                    metrics, log=logging.info)


def _write_pretrained(model, config, global_step):
  """output_dir/pretrained/: bert_model.ckpt.* (Google's names) and bert_config.json."""
  directory = os.path.join(FLAGS.output_dir, "pretrained")
  os.makedirs(directory, exist_ok=True)
  checkpoints.save_google_checkpoint(model, os.path.join(directory, "bert_model.ckpt"),
                                     global_step=global_step)
  with script_utils.atomic_open(os.path.join(directory, "bert_config.json")) as handle:
    handle.write(config.to_json_string() + "\n")
  logging.info("Wrote %s/bert_model.ckpt and bert_config.json (step %d)", directory,
               global_step)


def main(_):
  with script_utils.report_user_errors(FLAGS.verbose):
    run()


if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  app.run(main)
