"""BERT fine-tuning runner for sentence (pair) classification: GLUE, XNLI, your own TSV/CSV.

The original's command line works unchanged, e.g. (README):

  python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
    --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
    --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
    --output_dir=/tmp/mrpc_output/

Tasks: cola, sst2 (sst-2), mrpc, stsb (sts-b, regression), qqp, mnli, qnli, rte, wnli,
xnli (--xnli_language), and tsv/csv for users' files (--text_a_column, --label_column, ...).

Outputs in --output_dir: checkpoints (ckpt-N, resumable), eval_results.txt (`key = value`:
the task's GLUE metrics as eval_*, eval_loss, global_step, loss), test_results.tsv (class
probabilities per test row, as the original) and the GLUE submission file (CoLA.tsv, ...).
--export_dir writes a SavedModel with a token-id and a raw-text serving signature.
"""

import os
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np

import flags_common
import script_utils

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=128)
flags_common.define_run_flags(train_batch_size=32, eval_batch_size=8, predict_batch_size=8)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_finetuning_flags(
    data_dir_help="The input data dir. Should contain the .tsv files (or other data files) "
    "for the task.", train_limit=False, eval_limit=False)
flags.DEFINE_string("task_name", None,
                    "The name of the task to train: cola, sst2, mrpc, stsb, qqp, mnli, qnli, "
                    "rte, wnli, xnli, or tsv/csv for your own files.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language to train and evaluate on.")
flags.DEFINE_bool(
    "fixed_padding", False,
    "Pad every batch to max_seq_length (static shapes, for TPUs). Default: pad each batch "
    "only to its longest row, rounded up to a multiple of 8.")
flags.DEFINE_string(
    "export_dir", None,
    "Write a SavedModel here after training/eval: signatures 'serving_default' (token ids) "
    "and 'serve_text' (raw text; load with `import tensorflow_text`).")
# The generic tsv/csv task (users' own data): <data_dir>/{train,dev,test}.{tsv,csv}.
flags.DEFINE_string("text_a_column", "0",
                    "tsv/csv task: column of the first text (0-based number, or a header name).")
flags.DEFINE_string("text_b_column", None,
                    "tsv/csv task: column of the second text, for sentence-pair tasks.")
flags.DEFINE_string("label_column", "1", "tsv/csv task: column of the label.")
flags.DEFINE_string("test_text_a_column", None,
                    "tsv/csv task: text_a column in test.* (default: --text_a_column).")
flags.DEFINE_string("test_text_b_column", None,
                    "tsv/csv task: text_b column in test.* (default: --text_b_column).")
flags.DEFINE_list("label_list", None,
                  "tsv/csv task: the labels, comma-separated, in label-id order (default: "
                  "the sorted distinct labels of train.*, else dev.*).")
flags.DEFINE_bool("has_header", False, "tsv/csv task: the files start with a header line.")
flags.DEFINE_string("delimiter", None,
                    "tsv/csv task: field delimiter (default: tab for tsv, comma for csv).")
flags.DEFINE_bool("regression", False,
                  "tsv/csv task: the label is a number; one output trained with mean "
                  "squared error, evaluated with Pearson/Spearman.")

flags.mark_flag_as_required("task_name")

# Predictions log their progress about this often (batches).
_PREDICT_LOG_EVERY = 100


def _processor():
  import classifier_data  # pylint: disable=g-import-not-at-top
  options = {}
  if FLAGS.task_name.lower() in classifier_data.GENERIC_TASKS:
    options = dict(text_a_column=FLAGS.text_a_column, text_b_column=FLAGS.text_b_column,
                   label_column=FLAGS.label_column,
                   test_text_a_column=FLAGS.test_text_a_column,
                   test_text_b_column=FLAGS.test_text_b_column,
                   labels=FLAGS.label_list, has_header=FLAGS.has_header,
                   is_regression=FLAGS.regression, delimiter=FLAGS.delimiter)
  processor = classifier_data.get_processor(FLAGS.task_name, FLAGS.xnli_language, **options)
  if hasattr(processor, "set_data_dir"):
    processor.set_data_dir(FLAGS.data_dir)
  return processor


def _check_flags():
  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or FLAGS.export_dir):
    raise script_utils.UserError(
        "At least one of --do_train, --do_eval, --do_predict (or --export_dir) must be True.")
  if not os.path.isdir(FLAGS.data_dir):
    raise script_utils.UserError(f"--data_dir={FLAGS.data_dir}: no such directory")
  for name in ("train_batch_size", "eval_batch_size", "predict_batch_size"):
    if getattr(FLAGS, name) <= 0:
      raise script_utils.UserError(f"--{name}={getattr(FLAGS, name)}: must be positive")
  if FLAGS.do_train and FLAGS.num_train_epochs <= 0:
    raise script_utils.UserError(
        f"--num_train_epochs={FLAGS.num_train_epochs}: must be positive")


def _loss_fn(regression):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def loss_fn(features, outputs):
    logits = tf.cast(outputs["logits"], tf.float32)
    count = tf.cast(tf.shape(logits)[0], tf.float32)
    if regression:
      # STS-B: one output, mean squared error against the 0-5 score.
      per_example = tf.square(logits[:, 0] - tf.cast(features["label_ids"], tf.float32))
      return per_example, {"mse": (tf.reduce_sum(per_example), count)}
    labels = tf.cast(features["label_ids"], tf.int32)
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits)
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
                      tf.float32)
    return per_example, {"accuracy": (tf.reduce_sum(correct), count)}

  return loss_fn


def _predict_logits(model, dataset, num_examples, what):
  """Logits float32 [num_examples, outputs] in example order, with progress logs.

  The dataset is sorted by length within windows (per-batch padding), so each batch
  carries `example_index` to put its rows back in file order.
  """
  import training  # pylint: disable=g-import-not-at-top
  logits = None
  done, start = 0, time.time()
  for index, batch in enumerate(training.predict(model, dataset), start=1):
    values = batch["logits"].astype(np.float32)
    if logits is None:
      logits = np.zeros((num_examples, values.shape[-1]), np.float32)
    positions = batch["example_index"]
    logits[positions] = values
    done += len(positions)
    if index % _PREDICT_LOG_EVERY == 0:
      rate = done / max(time.time() - start, 1e-9)
      logging.info("%s: %d/%d examples  %.1f examples/s  ETA %.0fs", what, done,
                   num_examples, rate, (num_examples - done) / max(rate, 1e-9))
  elapsed = time.time() - start
  logging.info("%s: %d examples in %.1fs (%.1f examples/s)", what, done, elapsed,
               done / max(elapsed, 1e-9))
  return logits


def _eval_values(classifier_data, processor, logits, examples, label_list):
  """The GLUE metrics and the mean loss of one eval set, from its logits."""
  if processor.is_regression:
    scores = logits[:, 0].astype(np.float64)
    labels = np.array([float(e.label) for e in examples], np.float64)
    values = classifier_data.compute_metrics(processor.metric, scores, labels)
    values["loss"] = float(np.mean((scores - labels) ** 2))
    return values
  labels = np.array([label_list.index(e.label) for e in examples])
  shifted = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  values = classifier_data.compute_metrics(processor.metric, logits.argmax(axis=1), labels)
  values["loss"] = float(-np.mean(log_probs[np.arange(len(labels)), labels]))
  return values


def _restore_model(tf, checkpoints, training, model, output_dir, init_checkpoint):
  """Weights for eval/predict without training: output_dir's newest checkpoint (as the
  original's Estimator did), else --init_checkpoint. Returns the global step."""
  latest = tf.train.latest_checkpoint(output_dir)
  path = latest
  if path is None and init_checkpoint:
    kind, resolved = checkpoints.resolve_checkpoint(init_checkpoint)
    names = dict(tf.train.list_variables(resolved)) if kind == checkpoints.OURS else {}
    if any(n.startswith("model/") for n in names):
      path = resolved  # a fine-tuned classifier of ours: restore the head too
    else:
      checkpoints.load_checkpoint(model, init_checkpoint)
      return 0
  if path is None:
    logging.warning("No checkpoint in --output_dir and no --init_checkpoint: evaluating "
                    "a randomly initialised model")
    return 0
  try:
    # A checkpoint of another model size fails inside restore() itself (ValueError on
    # the first shape), not at the assertion.
    status = tf.train.Checkpoint(model=model).restore(path)
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as exc:
    raise script_utils.UserError(
        f"{path}: this checkpoint does not fit the classifier built from "
        f"--bert_config_file and --task_name ({' '.join(str(exc).split())[:200]})") from None
  status.expect_partial()
  logging.info("Restored the classifier from %s", path)
  names = dict(tf.train.list_variables(path))
  key = "step/.ATTRIBUTES/VARIABLE_VALUE"
  return int(tf.train.load_checkpoint(path).get_tensor(key)) if key in names else 0


def run():
  _check_flags()
  # TensorFlow is imported after flag parsing so that --help stays fast.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  import checkpoints  # pylint: disable=g-import-not-at-top
  import classifier_data  # pylint: disable=g-import-not-at-top
  import export  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import tokenization  # pylint: disable=g-import-not-at-top
  import training  # pylint: disable=g-import-not-at-top

  tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
  config = checkpoints.load_bert_config(FLAGS.bert_config_file)
  checkpoints.check_max_seq_length(FLAGS.max_seq_length, config)
  script_utils.check_input_file(FLAGS.vocab_file, "vocab_file")
  tokenizer = tokenization.FastTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
  checkpoints.check_vocab_matches_config(tokenizer.vocab_size, config, FLAGS.vocab_file)
  script_utils.ensure_output_dir(FLAGS.output_dir)

  # Every split this run needs is read (and checked) before any training, so that a
  # missing test file or a bad row fails in seconds, not after hours.
  processor = _processor()
  label_list = processor.get_labels()
  train_examples = processor.get_train_examples(FLAGS.data_dir) if FLAGS.do_train else None
  eval_sets = processor.get_eval_sets(FLAGS.data_dir) if FLAGS.do_eval else []
  predict_sets = processor.get_predict_sets(FLAGS.data_dir) if FLAGS.do_predict else []
  strategy = training.create_strategy(
      "tpu" if FLAGS.use_tpu else FLAGS.distribution_strategy, tpu_name=FLAGS.tpu_name,
      tpu_zone=FLAGS.tpu_zone, gcp_project=FLAGS.gcp_project, num_gpus=FLAGS.num_gpus)
  training.setup_precision(FLAGS.dtype)
  training.setup_determinism(FLAGS.seed, FLAGS.deterministic)
  fixed_padding = FLAGS.fixed_padding or FLAGS.use_tpu

  num_train_steps = num_warmup_steps = 0
  if FLAGS.do_train:
    num_train_steps = int(len(train_examples) / FLAGS.train_batch_size *
                          FLAGS.num_train_epochs)
    if num_train_steps < 1:
      raise script_utils.UserError(
          f"{len(train_examples)} training examples at --train_batch_size="
          f"{FLAGS.train_batch_size} and --num_train_epochs={FLAGS.num_train_epochs} make "
          "no training step; lower the batch size or raise the epochs")
    num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)

  with strategy.scope():
    model, encoder = modeling.build_classifier_model(config, processor.num_outputs,
                                                     causal=FLAGS.ltr)
    optimizer = None
    if FLAGS.do_train:
      optimizer = optimization.create_optimizer(FLAGS.learning_rate, num_train_steps,
                                                num_warmup_steps, FLAGS.optimizer)

  global_step = 0
  if FLAGS.do_train:
    if FLAGS.init_checkpoint and not tf.train.latest_checkpoint(FLAGS.output_dir):
      checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
    logging.info("***** Running training *****")
    logging.info("  Num examples = %d", len(train_examples))
    logging.info("  Batch size = %d", FLAGS.train_batch_size)
    logging.info("  Num steps = %d (warmup %d)", num_train_steps, num_warmup_steps)

    def train_dataset_fn(input_context):
      return classifier_data.make_dataset(
          train_examples, label_list, tokenizer, FLAGS.max_seq_length,
          input_context.get_per_replica_batch_size(FLAGS.train_batch_size),
          is_training=True, fixed_padding=fixed_padding, seed=FLAGS.seed,
          input_context=input_context)

    result = training.run_training(
        strategy=strategy, model=model, encoder=encoder, optimizer=optimizer,
        loss_fn=_loss_fn(processor.is_regression), dataset_fn=train_dataset_fn,
        global_batch_size=FLAGS.train_batch_size, num_train_steps=num_train_steps,
        output_dir=FLAGS.output_dir, steps_per_loop=flags_common.steps_per_loop(FLAGS),
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        log_every_steps=FLAGS.log_every_steps, jit_compile=FLAGS.enable_xla,
        dtype=FLAGS.dtype)
    global_step = result["global_step"]
  else:
    global_step = _restore_model(tf, checkpoints, training, model, FLAGS.output_dir,
                                 FLAGS.init_checkpoint)

  if eval_sets:
    values = {}
    for eval_set in eval_sets:
      logging.info("***** Running evaluation: %s (%d examples, batch %d) *****",
                   eval_set.name, len(eval_set.examples), FLAGS.eval_batch_size)
      dataset = classifier_data.make_dataset(
          eval_set.examples, label_list, tokenizer, FLAGS.max_seq_length,
          FLAGS.eval_batch_size, is_training=False, fixed_padding=fixed_padding)
      logits = _predict_logits(model, dataset, len(eval_set.examples),
                               eval_set.name)
      for key, value in _eval_values(classifier_data, processor, logits,
                                     eval_set.examples, label_list).items():
        values[eval_set.key_prefix + key] = value
    values["global_step"] = global_step
    # The original's `loss` is the (main) evaluation loss.
    values["loss"] = values["eval_loss"]
    logging.info("***** Eval results *****")
    script_utils.write_key_values(os.path.join(FLAGS.output_dir, "eval_results.txt"),
                                  values, log=lambda line: logging.info("  %s", line))

  for predict_set in predict_sets:
    logging.info("***** Running prediction: %s (%d examples, batch %d) *****",
                 predict_set.name, len(predict_set.examples), FLAGS.predict_batch_size)
    dataset = classifier_data.make_dataset(
        predict_set.examples, label_list, tokenizer, FLAGS.max_seq_length,
        FLAGS.predict_batch_size, is_training=False, fixed_padding=fixed_padding)
    logits = _predict_logits(model, dataset, len(predict_set.examples),
                             predict_set.name)
    if processor.is_regression:
      outputs, predictions = logits[:, 0], logits[:, 0]
    else:
      shifted = logits - logits.max(axis=1, keepdims=True)
      outputs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
      predictions = outputs.argmax(axis=1)
    path = os.path.join(FLAGS.output_dir, predict_set.results_file)
    classifier_data.write_probabilities(path, outputs)
    logging.info("Wrote %s", path)
    if predict_set.submission_file:
      path = os.path.join(FLAGS.output_dir, predict_set.submission_file)
      classifier_data.write_submission(path, processor, predict_set.examples, predictions)
      logging.info("Wrote %s (GLUE submission format)", path)

  if FLAGS.export_dir:
    export.export_classifier(FLAGS.export_dir, model, label_list, tokenizer=tokenizer,
                             max_seq_length=FLAGS.max_seq_length, cls_id=tokenizer.cls_id,
                             sep_id=tokenizer.sep_id, num_texts=processor.num_texts)
    logging.info("Exported the SavedModel to %s (signatures serving_default, serve_text)",
                 FLAGS.export_dir)


def main(_):
  logging.set_verbosity(logging.INFO)
  with script_utils.report_user_errors(FLAGS.verbose):
    run()


if __name__ == "__main__":
  app.run(main)
