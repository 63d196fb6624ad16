"""SQuAD v1.1 / v2.0 question answering as a finetune.Task (the original run_squad.py's flow).

It joins squad_data, squad_features, squad_decoding, squad_metrics and the span head for
the driver. The original has no --do_eval: --do_predict both predicts and, when the
predict file has answers, scores (`SquadTask.evaluate`)."""

import random
import time

from absl import logging
import tensorflow as tf

from bert.formats import serving
from bert import fast_tokenization
from bert import heads
from bert.squad import squad_data
from bert.squad import squad_decoding
from bert.squad import squad_features
from bert.squad import squad_metrics
from bert.squad import squad_options
from bert import tokenization
from bert.training import evaluation
from bert.training import finetune
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks


# Declared in squad_options (no TensorFlow there: run_squad makes its flags from it).
SquadOptions = squad_options.SquadOptions


def article_slice(spec, flag):
  """"START:END" (either part may be empty) -> slice; None or "" -> every article."""
  if not spec:
    return slice(None)
  try:
    parts = [int(p) if p.strip() else None for p in spec.split(":")]
    if len(parts) != 2:
      raise ValueError
  except ValueError:
    raise errors.UserError(
        f"--{flag}={spec}: expected START:END article indices, e.g. 0:40") from None
  return slice(*parts)


def _check_settings(options, settings, predicting):
  """The original's flag checks, before anything is read or built."""
  if not options.do_train and not predicting and not options.export_dir:
    raise errors.UserError("At least one of `do_train` or `do_predict` must be True.")
  if options.do_train and not settings.train_file:
    raise errors.UserError(
        "If `do_train` is True, then `train_file` must be specified.")
  if predicting and not settings.predict_file:
    raise errors.UserError(
        "If `do_predict` is True, then `predict_file` must be specified.")
  if options.max_seq_length <= settings.max_query_length + 3:
    raise errors.UserError(
        f"The max_seq_length ({options.max_seq_length}) must be greater than "
        f"max_query_length ({settings.max_query_length}) + 3")
  for name in ("doc_stride", "n_best_size", "max_answer_length"):
    if getattr(settings, name) < 1:
      raise errors.UserError(f"--{name}={getattr(settings, name)}: must be at least 1")
  article_slice(settings.train_articles, "train_articles")
  article_slice(settings.predict_articles, "predict_articles")


class SquadTask(finetune.Task):
  """Fine-tunes a span head on SQuAD and/or predicts (and scores) answers.

  As the original, --do_predict predicts the predict file, writes the prediction files
  and, when the file has answers, returns their official scores, which the driver writes
  to eval_results.txt with the global step. --do_eval does the same (the original has no
  --do_eval; the file is predicted once either way).
  """

  name = "SQuAD"

  exports = True
  # What the official scripts report on a file with answers: v1.1's, v2.0's.
  _V1_METRICS = ("exact_match", "f1")
  _V2_METRICS = ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1",
                 "best_exact", "best_f1")

  def __init__(self, options, settings):
    """options: a RunOptions (training/run_options.py); settings: SquadOptions. Checks the flags."""
    super().__init__(options)
    self.predicting = options.do_eval or options.do_predict
    _check_settings(options, settings, self.predicting)
    self.settings = settings
    self.tokenizer = self.fast_tokenizer = None
    self.train_examples = self.predict_examples = self.predict_data = None
    self.train_record = paths.join(options.output_dir, "train.tf_record")
    self.predicted = False  # predict once, though evaluate and predict both ask
    self.scores = None
    self.predict_features = None

  # ------------------------------------------------------------------ data

  def read_data(self, config):
    """Reads both files (a bad one fails before any model is built); train.tf_record
    is written once the checks of the data have passed (prepare_data)."""
    del config
    options, settings = self.options, self.settings
    if options.do_train:
      _, self.train_examples = self._read(settings.train_file, "train_file", True,
                                          settings.train_articles,
                                          options.max_train_examples)
    if self.predicting:
      self.predict_data, self.predict_examples = self._read(
          settings.predict_file, "predict_file", False, settings.predict_articles,
          settings.max_predict_examples)
    self.tokenizer = tokenization.FullTokenizer(options.vocab_file, options.do_lower_case)
    if settings.fast_tokenization:
      self.fast_tokenizer = fast_tokenization.FastTokenizer(
          options.vocab_file, do_lower_case=options.do_lower_case)

  def prepare_data(self):
    if self.options.do_train:
      self._write_train_record()

  def _read(self, path, flag, is_training, articles, limit):
    """(the file's articles, their SquadExamples, at most `limit` of them)."""
    input_checks.check_input_file(path, flag)
    articles_flag = flag.replace("_file", "_articles")
    data = squad_data.load_squad_json(path)["data"][article_slice(articles, articles_flag)]
    stats = squad_data.ReadStats()
    examples = squad_data.parse_squad_examples(
        data, is_training, self.settings.version_2_with_negative, path=path, stats=stats)
    squad_data.log_read_stats(path, stats, is_training)
    if limit and limit > 0:
      examples = examples[:limit]
    if not examples:
      raise errors.UserError(f"--{flag}={path}: no usable question (check "
                                   f"--{articles_flag})")
    return data, examples

  def _convert(self, examples, is_training):
    return squad_features.convert_examples_to_features(
        examples, self.tokenizer, self.options.max_seq_length, self.settings.doc_stride,
        self.settings.max_query_length, is_training=is_training,
        fast_tokenizer=self.fast_tokenizer)

  def _write_train_record(self):
    # The original shuffles the examples once, before conversion, with a fixed seed.
    random.Random(self.options.seed).shuffle(self.train_examples)
    started = time.time()
    features = self._convert(self.train_examples, is_training=True)
    squad_features.write_tf_record(self.train_record, features, is_training=True)
    logging.info("  Num orig examples = %d", len(self.train_examples))
    logging.info("  Num split examples = %d (converted in %.1fs)", len(features),
                 time.time() - started)

  def num_train_examples(self):
    # The original counts questions, not windows, when it turns epochs into steps.
    return len(self.train_examples)

  def train_dataset(self, input_context, batch_size):
    dataset = squad_features.record_dataset(
        self.train_record, self.options.max_seq_length, is_training=True,
        batch_size=batch_size, drop_remainder=True, seed=self.options.seed)
    if input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    return dataset

  # ------------------------------------------------------------------ model

  def build_model(self, config):
    model, _ = heads.build_squad_model(config, causal=self.options.ltr,
                                       dtype=self.options.precision.policy)
    return model

  def loss(self, features, outputs):
    return heads.squad_loss(features, outputs)

  # ------------------------------------------------------------------ outputs

  def evaluate(self, model, strategy):
    """SQuAD's --do_predict: predicts the predict file, writes the prediction files and
    returns the official scores of the predicted questions ({} for a file without
    answers), which the driver writes to eval_results.txt with the global step."""
    del strategy
    self.predicted = False  # each evaluation (--eval_every_steps) predicts afresh
    return self.predict(model, None) or {}

  def eval_metric_names(self):
    if not any(qa.get("answers") for article in self.predict_data or []
               for paragraph in article["paragraphs"] for qa in paragraph["qas"]):
      return []  # a test file: nothing to score
    return list(self.eval_metric_names_before_data())

  def default_best_metric(self):
    return "f1"

  def eval_metric_names_before_data(self):
    # A predict file without answers reports none (eval_metric_names); these or none.
    return (self._V2_METRICS if self.settings.version_2_with_negative
            else self._V1_METRICS)

  def head_info(self):
    return {"task": self.name, "head": "squad"}

  def predict(self, model, global_step=None):
    del global_step
    """Writes predictions.json, nbest_predictions.json, null_odds.json (v2.0) and
    eval.tf_record; returns the official scores, or None when no question has answers."""
    if self.predicted:
      return self.scores
    started = time.time()
    eval_record = paths.join(self.options.output_dir, "eval.tf_record")
    if self.predict_features is None:  # converted once, however often it is evaluated
      self.predict_features = self._convert(self.predict_examples, is_training=False)
      squad_features.write_tf_record(eval_record, self.predict_features, is_training=False)
      logging.info("  Num orig examples = %d", len(self.predict_examples))
      logging.info("  Num split examples = %d (converted in %.1fs)",
                   len(self.predict_features), time.time() - started)
    features = self.predict_features
    results = self._raw_results(model, eval_record, len(features))
    settings = self.settings
    predictions, nbest, null_odds = squad_decoding.compute_predictions(
        self.predict_examples, features, results, settings.n_best_size,
        settings.max_answer_length, self.options.do_lower_case,
        settings.version_2_with_negative, settings.null_score_diff_threshold,
        settings.verbose_logging)
    out = self.options.output_dir
    squad_decoding.write_prediction_files(
        predictions, nbest, null_odds, paths.join(out, "predictions.json"),
        paths.join(out, "nbest_predictions.json"),
        paths.join(out, "null_odds.json") if settings.version_2_with_negative else None)
    self.scores = squad_metrics.score_predicted(
        self.predict_data, predictions, null_odds, settings.version_2_with_negative,
        path=settings.predict_file)
    self.predicted = True
    return self.scores

  def _raw_results(self, model, record_file, num_features):
    """A RawResult (start/end logits float32 [max_seq_length]) per feature, in order."""
    dataset = squad_features.record_dataset(
        record_file, self.options.max_seq_length, is_training=False,
        batch_size=self.options.predict_batch_size, drop_remainder=False)
    outputs = evaluation.predict_in_order(
        model, dataset, num_features, keys=("unique_ids", "start_logits", "end_logits"))
    return [squad_decoding.RawResult(int(unique_id), start_logits, end_logits)
            for unique_id, start_logits, end_logits in zip(
                outputs["unique_ids"], outputs["start_logits"], outputs["end_logits"])]

  def export(self, model, export_dir):
    """serving_default: input_ids, input_mask, segment_ids int32 [batch, seq] ->
    start_logits, end_logits float32 [batch, seq]; stock ops only: export_dir/ itself,
    or export_dir/ids/N/ with --export_version=N (finetune.Task.write_export)."""

    def serve(input_ids, input_mask, segment_ids):
      outputs = model({"input_ids": input_ids, "input_mask": input_mask,
                       "segment_ids": segment_ids}, training=False)
      return {"start_logits": tf.cast(outputs["start_logits"], tf.float32),
              "end_logits": tf.cast(outputs["end_logits"], tf.float32)}

    self.write_export(export_dir, [serving.Endpoint(
        "serving_default", serve, serving.token_id_specs())], [model], num_texts=2)
