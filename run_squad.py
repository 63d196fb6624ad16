r"""BERT fine-tuning and prediction on SQuAD v1.1 and v2.0 (the original's run_squad.py).

  python run_squad.py --vocab_file=$BERT_DIR/vocab.txt \
    --bert_config_file=$BERT_DIR/bert_config.json \
    --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --train_file=train-v1.1.json \
    --do_predict --predict_file=dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
    --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad

SQuAD 2.0: add --version_2_with_negative (and --null_score_diff_threshold, tuned on dev).

Outputs in --output_dir: train.tf_record and eval.tf_record (the features, as the
original), checkpoints, predictions.json, nbest_predictions.json, null_odds.json (v2.0)
and, when the predict file has answers, eval_results.txt with the official scores of the
predicted questions (squad_metrics, no download needed). --export_dir writes a
SavedModel whose serving signature maps input_ids/input_mask/segment_ids int32
[batch, seq] to start_logits/end_logits float32 [batch, seq].
"""

import json
import os
import random
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np

import flags_common
import script_utils

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=384)
flags_common.define_run_flags(train_batch_size=32, predict_batch_size=8, learning_rate=5e-5,
                              num_train_epochs=3.0)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags.DEFINE_string("train_file", None,
                    "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string(
    "predict_file", None,
    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_integer(
    "doc_stride", 128,
    "When splitting up a long document into chunks, how much stride to take between chunks.")
flags.DEFINE_integer(
    "max_query_length", 64,
    "The maximum number of tokens for the question. Questions longer than this will be "
    "truncated to this length.")
flags.DEFINE_integer(
    "n_best_size", 20,
    "The total number of n-best predictions to generate in the nbest_predictions.json "
    "output file.")
flags.DEFINE_integer(
    "max_answer_length", 30,
    "The maximum length of an answer that can be generated. This is needed because the "
    "start and end predictions are not conditioned on one another.")
flags.DEFINE_bool(
    "verbose_logging", False,
    "If true, all of the warnings related to data processing will be printed. A number of "
    "warnings are expected for a normal SQuAD evaluation.")
flags.DEFINE_bool(
    "version_2_with_negative", False,
    "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0,
    "If null_score - best_non_null is greater than the threshold predict null.")
flags.DEFINE_string(
    "export_dir", None,
    "Write a SavedModel here (token ids -> start_logits, end_logits) after training.")
flags.DEFINE_bool(
    "fast_tokenization", True,
    "Tokenize the SQuAD words and questions in batches with tokenization.FastTokenizer "
    "(tensorflow-text; the same tokens as the Python tokenizer, about 3x faster). "
    "--nofast_tokenization uses the original's pure-Python tokenizer only.")
flags_common.define_finetuning_flags(eval_limit=False)
flags.DEFINE_integer("max_predict_examples", 0,
                     "Predict only the first N questions of --predict_file (0: all).")
flags.DEFINE_string(
    "train_articles", None,
    "Python-style slice START:END of the articles of --train_file to use (e.g. 0:40), to "
    "split one file by article.")
flags.DEFINE_string(
    "predict_articles", None,
    "Slice START:END of the articles of --predict_file to use (e.g. 40:48).")


def _article_slice(spec, flag):
  if not spec:
    return slice(None)
  try:
    parts = [int(p) if p.strip() else None for p in spec.split(":")]
    if len(parts) != 2:
      raise ValueError
  except ValueError:
    raise script_utils.UserError(
        f"--{flag}={spec}: expected START:END article indices, e.g. 0:40") from None
  return slice(*parts)


def _read_examples(squad_data, path, flag, is_training, articles, limit):
  """Examples (and the JSON articles they came from) of a SQuAD file."""
  script_utils.check_input_file(path, flag)
  data = squad_data.load_squad_json(path)["data"]
  if not isinstance(data, list):
    raise script_utils.UserError(f"{path}: \"data\" must be a list of articles")
  data = data[_article_slice(articles, flag.replace("_file", "_articles"))]
  stats = squad_data.ReadStats()
  examples = squad_data.parse_squad_examples(
      data, is_training, FLAGS.version_2_with_negative, path=path, stats=stats)
  if stats.skipped_answers:
    logging.warning("%s: skipped %d of %d questions whose answer does not match the context "
                    "at its offset", path, stats.skipped_answers, stats.questions)
  if is_training and stats.multi_answer:
    logging.info("%s: %d questions list several answers; training uses the first", path,
                 stats.multi_answer)
  if limit and limit > 0:
    examples = examples[:limit]
  if not examples:
    raise script_utils.UserError(f"--{flag}={path}: no usable question (check "
                                 f"--{flag.replace('_file', '_articles')})")
  return data, examples


def _loss_fn(features, outputs):
  """Mean of the start and end cross-entropies (the original's loss).

  start_logits, end_logits float32 [B, S]; start_positions, end_positions int32 [B].
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  losses = []
  metrics = {}
  for name in ("start", "end"):
    logits = tf.cast(outputs[f"{name}_logits"], tf.float32)
    positions = tf.cast(features[f"{name}_positions"], tf.int32)
    losses.append(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=positions,
                                                                 logits=logits))
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), positions),
                      tf.float32)
    metrics[f"{name}_accuracy"] = (tf.reduce_sum(correct), tf.cast(tf.size(positions),
                                                                   tf.float32))
  return (losses[0] + losses[1]) / 2.0, metrics


def _predict(training, squad_data, model, record_file, num_features):
  """RawResults for every feature of record_file, batch by batch, with progress."""
  dataset = squad_data.record_dataset(record_file, FLAGS.max_seq_length, is_training=False,
                                      batch_size=FLAGS.predict_batch_size,
                                      drop_remainder=False)
  results = []
  start = time.time()
  last_log = start
  for batch in training.predict(model, dataset):
    for unique_id, start_logits, end_logits in zip(batch["unique_ids"],
                                                   batch["start_logits"],
                                                   batch["end_logits"]):
      results.append(squad_data.RawResult(int(unique_id), start_logits, end_logits))
    now = time.time()
    if now - last_log >= 10 or len(results) == num_features:
      rate = len(results) / max(now - start, 1e-9)
      eta = (num_features - len(results)) / max(rate, 1e-9)
      logging.info("predict: %d/%d features, %.1f features/s, ETA %.0fs", len(results),
                   num_features, rate, eta)
      last_log = now
  return results


def _score(squad_metrics, data, predictions, null_odds):
  """Official scores of the predicted questions (those of `data` with gold answers)."""
  qids = set(predictions)
  subset = []
  answered = 0
  for article in data:
    paragraphs = []
    for paragraph in article["paragraphs"]:
      qas = [qa for qa in paragraph["qas"] if qa["id"] in qids]
      answered += sum(1 for qa in qas if qa.get("answers"))
      if qas:
        paragraphs.append({"context": paragraph["context"], "qas": qas})
    if paragraphs:
      subset.append({"paragraphs": paragraphs})
  if not answered:
    return None  # a test file without answers: nothing to score
  if FLAGS.version_2_with_negative:
    return dict(squad_metrics.evaluate_v2(subset, predictions, na_probs=null_odds))
  return squad_metrics.evaluate_v1(subset, predictions)


def _export(export, model, path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def serve(input_ids, input_mask, segment_ids):
    outputs = model({"input_ids": input_ids, "input_mask": input_mask,
                     "segment_ids": segment_ids}, training=False)
    return {"start_logits": tf.cast(outputs["start_logits"], tf.float32),
            "end_logits": tf.cast(outputs["end_logits"], tf.float32)}

  export.write_saved_model(path, [export.Endpoint("serving_default", serve,
                                                  export.token_id_specs())], track=[model])
  logging.info("Exported SavedModel (token ids -> start_logits, end_logits) to %s", path)


def main(_):
  with script_utils.report_user_errors(FLAGS.verbose):
    _run()


def _run():
  # Imported here so that --help, flag errors and bad data files answer without
  # loading TensorFlow (squad_data and squad_metrics do not need it).
  import squad_data  # pylint: disable=g-import-not-at-top
  import squad_metrics  # pylint: disable=g-import-not-at-top

  if not FLAGS.do_train and not FLAGS.do_predict and not FLAGS.export_dir:
    raise script_utils.UserError("At least one of `do_train` or `do_predict` must be True.")
  if FLAGS.do_train and not FLAGS.train_file:
    raise script_utils.UserError(
        "If `do_train` is True, then `train_file` must be specified.")
  if FLAGS.do_predict and not FLAGS.predict_file:
    raise script_utils.UserError(
        "If `do_predict` is True, then `predict_file` must be specified.")
  if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
    raise script_utils.UserError(
        f"The max_seq_length ({FLAGS.max_seq_length}) must be greater than "
        f"max_query_length ({FLAGS.max_query_length}) + 3")
  for name in ("doc_stride", "n_best_size", "max_answer_length", "train_batch_size",
               "predict_batch_size"):
    if FLAGS[name].value < 1:
      raise script_utils.UserError(f"--{name}={FLAGS[name].value}: must be at least 1")
  script_utils.check_input_file(FLAGS.vocab_file, "vocab_file")
  # Data files are read before anything heavy, so a bad file fails in a second.
  train_examples = eval_data = eval_examples = None
  if FLAGS.do_train:
    _, train_examples = _read_examples(squad_data, FLAGS.train_file, "train_file", True,
                                       FLAGS.train_articles, FLAGS.max_train_examples)
  if FLAGS.do_predict:
    eval_data, eval_examples = _read_examples(
        squad_data, FLAGS.predict_file, "predict_file", False, FLAGS.predict_articles,
        FLAGS.max_predict_examples)

  import checkpoints  # pylint: disable=g-import-not-at-top
  import export  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import tokenization  # pylint: disable=g-import-not-at-top
  import training  # pylint: disable=g-import-not-at-top
  config = checkpoints.load_bert_config(FLAGS.bert_config_file)
  checkpoints.check_max_seq_length(FLAGS.max_seq_length, config)
  tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
  checkpoints.check_vocab_matches_config(len(tokenizer.vocab), config, FLAGS.vocab_file)
  fast_tokenizer = None
  if FLAGS.fast_tokenization:
    fast_tokenizer = tokenization.FastTokenizer(FLAGS.vocab_file,
                                                do_lower_case=FLAGS.do_lower_case)
  script_utils.ensure_output_dir(FLAGS.output_dir)

  strategy = training.create_strategy(FLAGS.distribution_strategy, FLAGS.tpu_name,
                                      FLAGS.tpu_zone, FLAGS.gcp_project, FLAGS.num_gpus)
  training.setup_precision(FLAGS.dtype)
  training.setup_determinism(FLAGS.seed, FLAGS.deterministic)

  num_train_steps = 1
  train_record = os.path.join(FLAGS.output_dir, "train.tf_record")
  if FLAGS.do_train:
    # The original shuffles the examples once, before conversion, with a fixed seed.
    random.Random(FLAGS.seed).shuffle(train_examples)
    num_train_steps = max(int(len(train_examples) / FLAGS.train_batch_size *
                              FLAGS.num_train_epochs), 1)
    started = time.time()
    train_features = squad_data.convert_examples_to_features(
        train_examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride,
        FLAGS.max_query_length, is_training=True, fast_tokenizer=fast_tokenizer)
    squad_data.write_tf_record(train_record, train_features, is_training=True)
    logging.info("***** Running training *****")
    logging.info("  Num orig examples = %d", len(train_examples))
    logging.info("  Num split examples = %d (converted in %.1fs)", len(train_features),
                 time.time() - started)
    logging.info("  Batch size = %d", FLAGS.train_batch_size)
    logging.info("  Num steps = %d", num_train_steps)
    del train_features

  with strategy.scope():
    model, encoder = modeling.build_squad_model(config, causal=FLAGS.ltr)
    optimizer = optimization.create_optimizer(
        FLAGS.learning_rate, num_train_steps, int(num_train_steps * FLAGS.warmup_proportion),
        optimizer_type=FLAGS.optimizer)

  if training.latest_step(FLAGS.output_dir):
    logging.info("output_dir holds a checkpoint: training resumes / prediction uses it")
    if not FLAGS.do_train:
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      latest = tf.train.latest_checkpoint(FLAGS.output_dir)
      tf.train.Checkpoint(model=model).restore(latest).expect_partial()
  elif FLAGS.init_checkpoint:
    checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
  else:
    logging.warning("No --init_checkpoint: the encoder starts from random weights")

  global_step = training.latest_step(FLAGS.output_dir)
  if FLAGS.do_train:
    seed = FLAGS.seed

    def dataset_fn(context):
      dataset = squad_data.record_dataset(
          train_record, FLAGS.max_seq_length, is_training=True,
          batch_size=context.get_per_replica_batch_size(FLAGS.train_batch_size),
          drop_remainder=True, seed=seed)
      if context.num_input_pipelines > 1:
        dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
      return dataset

    result = training.run_training(
        strategy=strategy, model=model, encoder=encoder, optimizer=optimizer,
        loss_fn=_loss_fn, dataset_fn=dataset_fn, global_batch_size=FLAGS.train_batch_size,
        num_train_steps=num_train_steps, output_dir=FLAGS.output_dir,
        steps_per_loop=flags_common.steps_per_loop(FLAGS),
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        log_every_steps=FLAGS.log_every_steps, jit_compile=FLAGS.enable_xla,
        dtype=FLAGS.dtype)
    global_step = result["global_step"]

  if FLAGS.do_predict:
    started = time.time()
    eval_features = squad_data.convert_examples_to_features(
        eval_examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride,
        FLAGS.max_query_length, is_training=False, fast_tokenizer=fast_tokenizer)
    eval_record = os.path.join(FLAGS.output_dir, "eval.tf_record")
    squad_data.write_tf_record(eval_record, eval_features, is_training=False)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(eval_examples))
    logging.info("  Num split examples = %d (converted in %.1fs)", len(eval_features),
                 time.time() - started)
    logging.info("  Batch size = %d", FLAGS.predict_batch_size)
    results = _predict(training, squad_data, model, eval_record, len(eval_features))
    out = FLAGS.output_dir
    predictions, nbest, null_odds = squad_data.compute_predictions(
        eval_examples, eval_features, results, FLAGS.n_best_size, FLAGS.max_answer_length,
        FLAGS.do_lower_case, FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold,
        FLAGS.verbose_logging)
    squad_data.write_prediction_files(
        predictions, nbest, null_odds, os.path.join(out, "predictions.json"),
        os.path.join(out, "nbest_predictions.json"),
        os.path.join(out, "null_odds.json") if FLAGS.version_2_with_negative else None)
    scores = _score(squad_metrics, eval_data, predictions, null_odds)
    if scores is not None:
      scores["global_step"] = global_step
      script_utils.write_key_values(os.path.join(out, "eval_results.txt"), scores,
                                    log=logging.info)

  if FLAGS.export_dir:
    _export(export, model, FLAGS.export_dir)


if __name__ == "__main__":
  app.run(main)
