"""Evaluation and prediction: metrics over a whole set (any strategy), and every task's
outputs back in input order (one device), each with progress (examples/s, ETA).
"""

import time

from absl import logging
import numpy as np
import tensorflow as tf

from bert.training import loop
from bert.utils import progress
from bert.utils import errors


# Evaluation keys drawn on the card of their training twin.
_EVAL_TAGS = {"eval_loss": "loss", "eval_accuracy": "accuracy"}


def eval_tags(metrics):
  """{tag: value} for TensorBoard from Task.evaluate's {key: value} (numbers only):
  eval_loss -> loss, eval_accuracy -> accuracy, other keys unchanged; a `loss` key of
  the task's own is dropped when eval_loss is there (one loss per step)."""
  tags = {}
  for key, value in metrics.items():
    if not isinstance(value, (int, float)) or isinstance(value, bool):
      continue
    if key == "loss" and "eval_loss" in metrics:
      continue
    tags[_EVAL_TAGS.get(key, key)] = float(value)
  return tags


# Evaluation and prediction log their progress about this often (seconds).
PROGRESS_EVERY_SECONDS = 10.0


class _ProgressLog:
  """Logs `what: done/total examples, examples/s, ETA` every PROGRESS_EVERY_SECONDS."""

  def __init__(self, what, total=None):
    self.what, self.total = what, total
    self.progress = progress.Progress(total or 0)
    self.last = time.time()

  def update(self, done):
    self.progress.update(done)
    if time.time() - self.last >= PROGRESS_EVERY_SECONDS:
      self.last = time.time()
      rate = self.progress.rate()
      if self.total:
        logging.info("%s: %d/%d examples  %.1f examples/s  ETA %s", self.what, done,
                     self.total, rate, self.progress.eta())
      else:
        logging.info("%s: %d examples  %.1f examples/s", self.what, done, rate)

  def finish(self):
    seconds = time.time() - self.progress.started
    logging.info("%s: %d examples in %.1fs (%.1f examples/s)", self.what,
                 self.progress.done, seconds, self.progress.done / max(seconds, 1e-9))


def _numpy(value):
  return value.numpy() if hasattr(value, "numpy") else value  # already NumPy


def _batch_size(features):
  return int(tf.shape(tf.nest.flatten(features)[0])[0])


def evaluate(strategy, model, loss_fn, dataset_fn, steps=None, what="eval"):
  """Runs `model` over a dataset and aggregates loss_fn's metrics.

  dataset_fn(input_context) -> finite, unshuffled tf.data.Dataset (drop_remainder=False
  is fine: a partial last batch counts with its true size). steps: at most this many
  batches. Returns dict name -> float: every metric (numerator sum / denominator sum over
  the whole set) plus "loss" = mean per-example loss and "num_examples".
  """
  metric_names = loop.loss_metric_names(model, loss_fn,
                                        dataset_fn(tf.distribute.InputContext()).element_spec)
  dist_dataset = loop.per_replica_input(strategy, dataset_fn)

  def replica_eval(features):
    outputs = model(loop.model_inputs(model, features), training=False)
    per_example_loss, metrics = loss_fn(features, outputs)
    per_example_loss = tf.cast(per_example_loss, tf.float32)
    result = loop.float_metrics(metrics, metric_names)
    result["loss"] = (tf.reduce_sum(per_example_loss),
                      tf.cast(tf.shape(per_example_loss)[0], tf.float32))
    return result

  # reduce_retracing: per-batch padding gives many sequence lengths; after the second
  # one, a single length-generic graph serves them all instead of a trace per length.
  @tf.function(reduce_retracing=True)
  def eval_step(features):
    out = strategy.run(replica_eval, args=(features,))
    return tf.nest.map_structure(
        lambda x: strategy.reduce(tf.distribute.ReduceOp.SUM, x, axis=None), out)

  totals, log = None, _ProgressLog(what)
  logging.info("%s: tracing the model, then %s batches", what, steps or "all")
  for index, features in enumerate(dist_dataset):
    if steps is not None and index >= steps:
      break
    sums = tf.nest.map_structure(float, eval_step(features))
    totals = sums if totals is None else {
        k: (totals[k][0] + sums[k][0], totals[k][1] + sums[k][1]) for k in sums}
    log.update(int(totals["loss"][1]))
  if totals is None:
    raise errors.UserError("the evaluation set is empty")
  log.finish()
  result = {k: num / den if den else 0.0 for k, (num, den) in totals.items()}
  result["num_examples"] = int(totals["loss"][1])
  return result


# The traced forward pass of the model that predict() last ran, kept for its next call:
# scripts predict several sets with one model (run_classifier: dev, then test) and a
# tf.function made anew per call traced the model again each time, about a second per
# batch shape it generalises over, longer than the whole pass on a small set. One entry,
# so a model that is no longer used is not kept alive by more than this.
_PREDICT_FORWARD = {}


def _predict_forward(model):
  if _PREDICT_FORWARD.get("model") is not model:
    @tf.function(reduce_retracing=True)  # many batch lengths: see evaluate()
    def forward(inputs):
      return model(inputs, training=False)

    _PREDICT_FORWARD.clear()
    _PREDICT_FORWARD.update(model=model, forward=forward)
  return _PREDICT_FORWARD["forward"]


def predict(model, dataset, total=None, what="predict"):
  """Yields one dict of NumPy arrays per batch: the model outputs + the other features.

  Runs on the current device, batch by batch in order (no strategy: predictions must come
  back in input order). `dataset`: any iterable of dicts of tensors or NumPy arrays.
  Features that are not model inputs (unique ids, example indices) are passed through
  unchanged, so outputs can be matched to examples. Only the model
  inputs enter the traced function, so datasets that differ in the other features (eval
  and test sets) share its traces. Logs progress (examples/s, ETA against `total`).
  """
  names = [t.name for t in model.inputs]
  forward = _predict_forward(model)
  log, done = _ProgressLog(what, total), 0
  for index, features in enumerate(dataset):
    inputs = {k: tf.convert_to_tensor(v) for k, v in loop.model_inputs(model, features).items()}
    if index == 0:
      logging.info("%s: tracing the model", what)
      # One trace serves every batch: traced for unknown dimensions before the first call
      # (else the first batches' shapes are traced, then generalised: three traces).
      forward.get_concrete_function({
          k: tf.TensorSpec([None] * len(v.shape), tf.as_dtype(v.dtype))
          for k, v in inputs.items()})
    outputs = forward(inputs)
    batch = {k: _numpy(v) for k, v in features.items() if k not in names}
    batch.update({k: v.numpy() for k, v in outputs.items()} if isinstance(outputs, dict)
                 else {"outputs": outputs.numpy()})
    done += _batch_size(features)
    log.update(done)
    yield batch
  log.finish()


def predict_in_order(model, dataset, total, keys=("logits",), index_key=None,
                     width=None, sequence_keys=(), what="predict"):
  """The values `keys` of every example of `dataset`, {name: np.ndarray [total, ...]},
  in input order whatever the order and widths of the batches: every task's predictions
  go through here.

  keys: model outputs or passed-through features (see `predict`). index_key: a feature
  every batch carries, int [B], the input row of each of its examples (batches sorted by
  length put rows back with it); None: batches come in input order. sequence_keys: the
  keys with a sequence axis (axis 1) as wide as their batch (token logits of batches
  trimmed to their longest row); they are cut or zero-padded to `width` so that every
  batch fits one array. Raises ValueError when the batches do not hold each of the
  `total` rows exactly once (a bug in the dataset, not in the user's data).
  """
  results, filled = {}, 0
  seen = np.zeros(total, bool) if index_key else None
  for batch in predict(model, dataset, total=total, what=what):
    size = len(batch[keys[0]])
    rows = (np.asarray(batch[index_key], np.int64) if index_key
            else np.arange(filled, filled + size))
    for key in keys:
      values = np.asarray(batch[key])
      if key in sequence_keys:
        values = values[:, :width]
        if values.shape[1] < width:
          pad = [(0, 0)] * values.ndim
          pad[1] = (0, width - values.shape[1])
          values = np.pad(values, pad)
      if key not in results:
        results[key] = np.zeros((total,) + values.shape[1:], values.dtype)
      results[key][rows] = values
    if seen is not None:
      if seen[rows].any():
        raise ValueError(f"{what}: row(s) {sorted(rows[seen[rows]].tolist())[:5]} "
                         "predicted twice")
      seen[rows] = True
    filled += size
  if filled != total:
    raise ValueError(f"{what}: {filled} rows predicted, {total} expected")
  return {key: results.get(key, np.zeros((0,), np.float32)) for key in keys}
