"""BERT fine-tuning on SWAG (multiple choice), as in the paper's Section 4.4 / Table 4.

Each example is four (context, ending) pairs; the encoder reads every pair, one learned
vector scores each pair's [CLS] vector, and a softmax over the four scores is trained
with cross-entropy. Reads SWAG's own CSV files from --data_dir: train.csv, val.csv (dev),
test.csv (no labels).

  python run_swag.py --data_dir=$SWAG_DIR --vocab_file=$BERT_DIR/vocab.txt \
    --bert_config_file=$BERT_DIR/bert_config.json \
    --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval \
    --learning_rate=2e-5 --num_train_epochs=3 --train_batch_size=16 --output_dir=/tmp/swag

Outputs in --output_dir: checkpoints, eval_results.txt (eval_accuracy, eval_loss,
global_step), dev_predictions.csv and, with --do_predict, test_predictions.csv (id,
predicted ending, the four probabilities).
"""

import os

from absl import app
from absl import flags
from absl import logging
import numpy as np

import flags_common
import script_utils

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=128)
# The paper's SWAG setting: 3 epochs, learning rate 2e-5, batch size 16.
flags_common.define_run_flags(train_batch_size=16, learning_rate=2e-5, num_train_epochs=3.0)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_finetuning_flags(
    data_dir_help="Folder with SWAG's train.csv, val.csv and test.csv.")


def _trim_to_longest(features):
  """Cuts the padding that no pair of the batch uses: [B, C, S] -> [B, C, S_batch]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Rounded up to a multiple of 32 so that prediction's tf.function sees few shapes.
  length = tf.maximum(tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=-1)), 1)
  length = tf.minimum((length + 31) // 32 * 32, tf.shape(features["input_mask"])[-1])
  trimmed = dict(features)
  for key in ("input_ids", "input_mask", "segment_ids"):
    trimmed[key] = features[key][:, :, :length]
  return trimmed


def _dataset(arrays, batch_size, training, seed):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  dataset = tf.data.Dataset.from_tensor_slices(arrays)
  if training:
    dataset = dataset.shuffle(len(arrays["label_ids"]), seed=seed,
                              reshuffle_each_iteration=True).repeat()
  dataset = dataset.batch(batch_size, drop_remainder=training)
  return dataset.map(_trim_to_longest).prefetch(2)


def _loss_fn(features, outputs):
  """Softmax cross-entropy over the choices; logits float32 [B, 4], label_ids int32 [B]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  logits = tf.cast(outputs["logits"], tf.float32)
  labels = tf.cast(features["label_ids"], tf.int32)
  loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
  return loss, {"accuracy": (tf.reduce_sum(correct), tf.cast(tf.size(labels), tf.float32))}


def _limit(examples, limit):
  return examples[:limit] if limit and limit > 0 else examples


def _predict_logits(training, model, arrays, batch_size):
  batches = training.predict(model, _dataset(arrays, batch_size, False, 0))
  return np.concatenate([batch["logits"] for batch in batches], axis=0)


def main(_):
  with script_utils.report_user_errors(FLAGS.verbose):
    _run()


def _run():
  # Imported here so that --help and flag errors answer without loading TensorFlow.
  import checkpoints  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import swag_data  # pylint: disable=g-import-not-at-top
  import tokenization  # pylint: disable=g-import-not-at-top
  import training  # pylint: disable=g-import-not-at-top

  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
    raise script_utils.UserError(
        "At least one of --do_train, --do_eval or --do_predict must be set")
  if not os.path.isdir(FLAGS.data_dir):
    raise script_utils.UserError(f"--data_dir={FLAGS.data_dir}: no such folder")
  script_utils.check_input_file(FLAGS.vocab_file, "vocab_file")
  config = checkpoints.load_bert_config(FLAGS.bert_config_file)
  checkpoints.check_max_seq_length(FLAGS.max_seq_length, config)
  tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
  checkpoints.check_vocab_matches_config(len(tokenizer.vocab), config, FLAGS.vocab_file)
  script_utils.ensure_output_dir(FLAGS.output_dir)

  def load_split(split, require_label):
    path = swag_data.swag_file(FLAGS.data_dir, split)
    script_utils.check_input_file(path, "data_dir")
    examples = swag_data.read_swag_examples(path, require_label=require_label)
    limit = FLAGS.max_train_examples if split == "train" else FLAGS.max_eval_examples
    examples = _limit(examples, limit)
    return examples, swag_data.convert_examples_to_features(
        examples, FLAGS.max_seq_length, tokenizer)

  # Every input is read and checked before any model is built: bad data fails in seconds.
  train_arrays = None
  num_train_steps = 1
  if FLAGS.do_train:
    train_examples, train_arrays = load_split("train", True)
    num_train_steps = max(int(len(train_examples) / FLAGS.train_batch_size
                              * FLAGS.num_train_epochs), 1)
    logging.info("SWAG train: %d examples, batch %d, %d steps", len(train_examples),
                 FLAGS.train_batch_size, num_train_steps)
  if FLAGS.do_eval:
    dev_examples, dev_arrays = load_split("dev", True)
  if FLAGS.do_predict:
    test_examples, test_arrays = load_split("test", False)

  strategy = training.create_strategy(FLAGS.distribution_strategy, FLAGS.tpu_name,
                                      FLAGS.tpu_zone, FLAGS.gcp_project, FLAGS.num_gpus)
  training.setup_precision(FLAGS.dtype)
  training.setup_determinism(FLAGS.seed, FLAGS.deterministic)

  with strategy.scope():
    model, encoder = modeling.build_multiple_choice_model(
        config, swag_data.NUM_CHOICES, causal=FLAGS.ltr)
    optimizer = optimization.create_optimizer(
        FLAGS.learning_rate, num_train_steps, int(num_train_steps * FLAGS.warmup_proportion),
        optimizer_type=FLAGS.optimizer)

  if training.latest_step(FLAGS.output_dir):
    logging.info("output_dir holds a checkpoint: training resumes / eval uses it")
    if not FLAGS.do_train:
      training.restore_model(model, FLAGS.output_dir)
  elif FLAGS.init_checkpoint:
    checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
  else:
    logging.warning("No --init_checkpoint: the encoder starts from random weights")

  global_step = 0
  if FLAGS.do_train:
    result = training.run_training(
        strategy=strategy, model=model, encoder=encoder, optimizer=optimizer,
        loss_fn=_loss_fn,
        dataset_fn=lambda ctx: _dataset(train_arrays, ctx.get_per_replica_batch_size(
            FLAGS.train_batch_size), True, FLAGS.seed),
        global_batch_size=FLAGS.train_batch_size, num_train_steps=num_train_steps,
        output_dir=FLAGS.output_dir, steps_per_loop=flags_common.steps_per_loop(FLAGS),
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        log_every_steps=FLAGS.log_every_steps, jit_compile=FLAGS.enable_xla,
        dtype=FLAGS.dtype)
    global_step = result["global_step"]
  else:
    global_step = training.latest_step(FLAGS.output_dir)

  if FLAGS.do_eval:
    logits = _predict_logits(training, model, dev_arrays, FLAGS.eval_batch_size)
    labels = dev_arrays["label_ids"]
    log_probs = np.log(swag_data.softmax(logits))
    results = {
        "eval_accuracy": swag_data.accuracy(logits, labels),
        "eval_loss": float(-np.mean(log_probs[np.arange(len(labels)), labels])),
        "global_step": global_step,
        "num_examples": len(dev_examples),
    }
    script_utils.write_key_values(os.path.join(FLAGS.output_dir, "eval_results.txt"),
                                  results, log=logging.info)
    swag_data.write_predictions(os.path.join(FLAGS.output_dir, "dev_predictions.csv"),
                                dev_examples, logits)

  if FLAGS.do_predict:
    logits = _predict_logits(training, model, test_arrays, FLAGS.predict_batch_size)
    path = os.path.join(FLAGS.output_dir, "test_predictions.csv")
    swag_data.write_predictions(path, test_examples, logits)
    logging.info("Wrote %d test predictions to %s", len(test_examples), path)


if __name__ == "__main__":
  app.run(main)
