"""The shared training loop: one step, a short loop, the loop's state, progress.

Every task trains through `train` (the driver, finetune.run, calls it); none writes its
own loop. Keras 3's `model.fit` breaks under MultiWorkerMirroredStrategy
(keras-team/keras#20585), so this is a plain loop around `strategy.run` and
`tf.nn.compute_average_loss`, which works with every strategy. The loop's own variables
(global step, float16 loss scale, dropout RNG states) are `LoopState`'s, here beside the
loop; checkpoints.RunCheckpoint saves and restores them.

What a task supplies:
  * `dataset_fn(input_context, per_replica_batch_size) -> tf.data.Dataset` of dicts,
    drop_remainder=True and repeated (the loop pulls exactly num_train_steps *
    gradient_accumulation_steps batches). Shard by `input_context.input_pipeline_id`
    when there are several input pipelines (hosts). The dict holds the model's inputs
    (by name) and anything else the loss needs.
  * `loss_fn(features, outputs) -> (per_example_loss, metrics)`: `per_example_loss`
    float32 [B]; the loop minimises sum(per_example_loss) / global_batch_size
    (tf.nn.compute_average_loss), the mean on one device. `metrics` maps a name to a pair
    (numerator, denominator) of float32 scalars SUMMED over the batch; the loop sums both
    over replicas, steps and batches and reports numerator / denominator. A loss
    normalised over the whole batch (BERT's masked LM) uses a cross-replica sum for its
    normaliser, so the result does not depend on the number of replicas.

What the loop does (original behaviour unless noted):
  * one optimizer step (`make_train_step`) = `gradient_accumulation_steps` micro-batches
    whose gradients are averaged (new); the gradients are summed across replicas, then
    clipped to global norm `clip_norm` (1.0, as the original), then applied.
  * `steps_per_loop` steps run inside one tf.function call (`make_train_loop`, the
    original's iterations_per_loop); calls end early at log, checkpoint and final steps.
  * optional XLA (`jit_compile=True`) of the per-step computation.
  * float16: dynamic loss scaling (start 2**15, halve on overflow and skip the step,
    double after 2000 good steps). bfloat16 needs none.
  * checkpoints every `save_checkpoints_steps` through the RunCheckpoint (checkpoints.py
    owns the layout); resuming restores weights, optimizer slots, step and dropout RNG
    states, and the input position by skipping the batches already consumed (exact when
    the dataset order is deterministic: seeded shuffles, deterministic interleave).
  * SIGTERM (preemption notice): finish the running loop call, save, exit with status 143.
  * a non-finite loss stops the run with one line naming the step; the last good
    checkpoint is kept.
  * progress every `log_every_steps` (`TrainLogger`: step, loss, lr, examples/s, ETA
    measured after the first, tracing call) and TensorBoard scalars in output_dir/train.
  * multi-worker: every worker runs the same loop; only the chief writes to output_dir.
"""

import contextlib
import dataclasses
import math
import re
import signal
import time

from absl import logging
import tensorflow as tf

from bert import optimization
from bert.utils import paths
from bert.utils import progress
from bert.utils import errors

PREEMPTED_EXIT_CODE = 128 + signal.SIGTERM


# --------------------------------------------------------------------------- helpers


def model_inputs(model, features):
  names = [t.name for t in model.inputs]
  missing = [n for n in names if n not in features]
  if missing:
    raise ValueError(f"the dataset lacks the model inputs {missing}; it has "
                     f"{sorted(features)}")
  return {n: features[n] for n in names}


def loss_metric_names(model, loss_fn, element_spec):
  """The loss_fn's metric names, found by tracing it once (nothing is executed)."""

  def probe():
    features = tf.nest.map_structure(
        # 2, not 1, for unknown sizes: a length-1 sequence makes Keras warn on stderr
        # about a softmax over an axis of size 1 in every run.
        lambda s: tf.zeros([d if d is not None else 2 for d in s.shape], s.dtype),
        element_spec)
    return loss_fn(features, model(model_inputs(model, features), training=False))[1]

  return sorted(tf.function(probe).get_concrete_function().structured_outputs)


def float_metrics(metrics, names):
  return {k: (tf.cast(metrics[k][0], tf.float32), tf.cast(metrics[k][1], tf.float32))
          for k in names}


class _SigtermFlag:
  """Remembers a SIGTERM so the loop can save before exiting (main thread only)."""

  def __init__(self):
    self.received = False
    self._previous = None

  def __enter__(self):
    try:
      self._previous = signal.signal(signal.SIGTERM, self._handle)
    except ValueError:  # not the main thread: leave signals alone
      self._previous = None
    return self

  def _handle(self, signum, frame):
    del signum, frame
    logging.warning("SIGTERM received: saving a checkpoint after the current loop call")
    self.received = True

  def __exit__(self, *exc):
    if self._previous is not None:
      signal.signal(signal.SIGTERM, self._previous)
    return False


# --------------------------------------------------------------------------- training


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """How the loop trains. global_batch_size: examples per micro-batch over all replicas
  (train_batch_size); num_train_steps: the final global step (optimizer updates)."""
  global_batch_size: int
  num_train_steps: int
  steps_per_loop: int = 1000
  gradient_accumulation_steps: int = 1
  clip_norm: float = optimization.DEFAULT_CLIP_NORM
  save_checkpoints_steps: int = 1000
  log_every_steps: int = 10
  jit_compile: bool = False
  loss_scaling: bool = False       # float16: dynamic loss scaling
  resume_data_position: bool = True
  eval_every_steps: int = 0        # loop calls also end at multiples of it (0: no eval)


class LoopState:
  """The loop's own variables, beside the loop that uses them. checkpoints.RunCheckpoint
  saves and restores them (`trackables`) with the model and the optimizer.

    step        int64, the global step (optimizer updates); each train step adds 1
    loss_scale  float32, float16's dynamic loss scale (2**15 at the start)
    good_steps  int64, finite steps since the scale last grew (2000 double it)
    rng_states  the model's dropout seed-generator states (Keras 3 does not track them),
                so that a resumed run draws the same dropout masks

  Build it under the strategy's scope. A new loop variable goes here and into
  `trackables`; the checkpoint module needs no change.
  """

  def __init__(self, model, loss_scaling=False):
    self.loss_scaling = loss_scaling
    self.step = _replica_variable(0, tf.int64, "global_step")
    self.loss_scale = _replica_variable(2.0 ** 15, tf.float32, "loss_scale")
    self.good_steps = _replica_variable(0, tf.int64, "good_steps")
    self.rng_states = [v.value for v in model.non_trainable_variables
                       if "seed_generator" in getattr(v, "path", v.name)]

  def trackables(self, with_optimizer):
    """{checkpoint key: trackable}: what a checkpoint holds of the loop. The RNG states
    are saved by training runs (with an optimizer) only."""
    tracked = {"step": self.step}
    if self.rng_states and with_optimizer:
      tracked["rng_states"] = self.rng_states
    if self.loss_scaling:
      tracked.update(loss_scale=self.loss_scale, good_steps=self.good_steps)
    return tracked


def _replica_variable(value, dtype, name):
  return tf.Variable(value, dtype=dtype, trainable=False, name=name,
                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def make_train_step(model, optimizer, loss_fn, metric_names, config, loop):
  """The per-replica step: accumulate -> reduce over replicas -> clip -> apply.

  Returns step(features) -> (mean loss, global gradient norm, metric sums); with
  gradient accumulation `features` holds [accumulation, batch, ...] micro-batches.
  loop: the LoopState. float16: the loss is scaled by loop.loss_scale; an overflowing
  step is skipped and the scale halved; 2000 good steps double it. Adds 1 to loop.step.
  """
  variables = model.trainable_variables
  accumulation = config.gradient_accumulation_steps
  # Our optimizers let the loop do the cross-replica sum (so that clipping sees the
  # global gradient); others get the mean, which their own all-reduce turns into the sum.
  reduces_itself = hasattr(optimizer, "gradients_are_reduced")
  if reduces_itself:
    optimizer.gradients_are_reduced = True

  def micro_step(features):
    with tf.GradientTape() as tape:
      outputs = model(model_inputs(model, features), training=True)
      per_example_loss, metrics = loss_fn(features, outputs)
      loss = tf.nn.compute_average_loss(tf.cast(per_example_loss, tf.float32),
                                        global_batch_size=config.global_batch_size)
      scaled = loss * loop.loss_scale if config.loss_scaling else loss
    grads = tape.gradient(scaled, variables)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
             for g, v in zip(grads, variables)]
    return loss, grads, float_metrics(metrics, metric_names)

  def accumulate(features):
    loss, grads, metrics = micro_step(tf.nest.map_structure(lambda x: x[0], features))
    for k in range(1, accumulation):
      l_k, g_k, m_k = micro_step(tf.nest.map_structure(lambda x, k=k: x[k], features))
      loss += l_k
      grads = [a + b for a, b in zip(grads, g_k)]
      metrics = {n: (metrics[n][0] + m_k[n][0], metrics[n][1] + m_k[n][1])
                 for n in metric_names}
    return loss / accumulation, [g / accumulation for g in grads], metrics

  def step(features):
    loss, grads, metrics = (micro_step(features) if accumulation == 1
                            else accumulate(features))
    context = tf.distribute.get_replica_context()
    replicas = context.num_replicas_in_sync
    if replicas > 1:
      grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    if config.loss_scaling:
      grads = [g / loop.loss_scale for g in grads]
    grads, norm = optimization.clip_by_global_norm(grads, config.clip_norm)
    if not reduces_itself and replicas > 1:
      grads = [g / replicas for g in grads]
    if config.loss_scaling:
      _apply_with_loss_scale(optimizer, grads, variables, norm, loop)
    else:
      optimizer.apply_gradients(zip(grads, variables))
    loop.step.assign_add(1)
    return loss, norm, metrics

  return tf.function(step, jit_compile=True) if config.jit_compile else step


def _apply_with_loss_scale(optimizer, grads, variables, norm, loop):
  """Applies finite gradients; adjusts the dynamic loss scale (float16)."""

  def apply():
    optimizer.apply_gradients(zip(grads, variables))
    return tf.constant(True)

  finite = tf.math.is_finite(norm)
  tf.cond(finite, apply, lambda: tf.constant(False))
  good = tf.where(finite, loop.good_steps + 1, 0)
  new_scale = tf.where(finite, tf.where(good >= 2000, loop.loss_scale * 2.0,
                                        loop.loss_scale),
                       tf.maximum(loop.loss_scale / 2.0, 1.0))
  loop.good_steps.assign(tf.where(good >= 2000, tf.zeros_like(good), good))
  loop.loss_scale.assign(new_scale)


def make_train_loop(strategy, step_fn, metric_names):
  """A tf.function running `num_steps` steps; returns (mean loss, last norm, metric sums)."""

  def reduce_sum(value):
    return strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)

  @tf.function
  def train_loop(iterator, num_steps):
    loss_sum = tf.constant(0.0)
    norm = tf.constant(0.0)
    sums = {n: (tf.constant(0.0), tf.constant(0.0)) for n in metric_names}
    for _ in tf.range(num_steps):
      loss, norm_r, metrics = strategy.run(step_fn, args=(next(iterator),))
      loss_sum += reduce_sum(loss)
      norm = strategy.reduce(tf.distribute.ReduceOp.MEAN, norm_r, axis=None)
      sums = {n: (sums[n][0] + reduce_sum(metrics[n][0]),
                  sums[n][1] + reduce_sum(metrics[n][1])) for n in metric_names}
    return loss_sum / tf.cast(num_steps, tf.float32), norm, sums

  return train_loop


class TrainLogger:
  """Progress lines (step, loss, metrics, lr, examples/s, ETA) and TensorBoard scalars in
  output_dir/train, every log_every_steps."""

  def __init__(self, output_dir, config, first_step, write):
    self.config = config
    self.examples_per_step = config.global_batch_size * config.gradient_accumulation_steps
    self.progress = progress.Progress(config.num_train_steps, first_step)
    self.logdir = paths.join(output_dir, "train")
    with errors.disk_full_names(self.logdir, atomic=False):
      self.writer = tf.summary.create_file_writer(self.logdir) if write else None

  def log(self, step, steps_run, seconds, loss, norm, metrics, optimizer, state):
    self.progress.update(step)
    if step % self.config.log_every_steps and step != self.config.num_train_steps:
      return
    lr = float(optimizer.learning_rate)
    rate = steps_run * self.examples_per_step / max(seconds, 1e-9)
    logging.info("step %d/%d  loss %.4f  %s  lr %.3g  %.1f examples/s  ETA %s",
                 step, self.config.num_train_steps, loss,
                 "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()), lr, rate,
                 self.progress.eta())
    if self.writer is not None:
      scalars = {"loss": loss, "learning_rate": lr, "examples_per_second": rate,
                 "global_norm": norm, **metrics}
      if self.config.loss_scaling:
        scalars["loss_scale"] = float(state.loop.loss_scale.numpy())
      with errors.disk_full_names(self.logdir, atomic=False):  # a full disk: one line
        write_scalars(self.writer, scalars, step)

  def close(self):
    if self.writer is not None:
      self.writer.close()


def _next_call_length(current, config, first_call=False):
  """Steps in the next loop call: it ends at log, checkpoint and final steps. The first
  call makes one step, so that its tracing time stays out of every rate and ETA."""
  if first_call:
    return 1
  every = config.eval_every_steps or config.num_train_steps
  return min(config.steps_per_loop, config.num_train_steps - current,
             config.log_every_steps - current % config.log_every_steps,
             config.save_checkpoints_steps - current % config.save_checkpoints_steps,
             every - current % every)


def _train_iterator(strategy, dataset_fn, config, resumed_at):
  """Distributed iterator over (accumulated) batches, positioned after resumed_at steps."""

  def accumulated(context):
    dataset = dataset_fn(context, context.get_per_replica_batch_size(
        config.global_batch_size))
    if config.gradient_accumulation_steps > 1:
      dataset = dataset.batch(config.gradient_accumulation_steps, drop_remainder=True)
    # tf.data's distributed iterators cannot be checkpointed; with a deterministic input
    # order (seeded shuffles) skipping the consumed batches restores the data position.
    if config.resume_data_position and resumed_at:
      dataset = dataset.skip(resumed_at)
    return dataset

  return iter(per_replica_input(strategy, accumulated))


def per_replica_input(strategy, dataset_fn):
  """What the loop iterates: dataset_fn(input_context)'s batches, one per replica.

  One replica on this host's CPU reads the dataset itself: tf.distribute's input (a
  MultiDeviceIterator even for one device, prefetching to the device it is already on)
  made a MiniLM fine-tuning step slower on CPU (docs/benchmarks_history.md). The same
  batches either way.
  """
  devices = strategy.extended.worker_devices
  if (isinstance(strategy, tf.distribute.OneDeviceStrategy) and len(devices) == 1
      and tf.DeviceSpec.from_string(devices[0]).device_type == "CPU"):
    return dataset_fn(tf.distribute.InputContext())
  return strategy.distribute_datasets_from_function(dataset_fn)


def train(strategy, model, optimizer, loss_fn, dataset_fn, state, config, after_loop=None):
  """Trains until state.loop.step reaches config.num_train_steps; returns the last figures.

  dataset_fn(input_context, per_replica_batch_size) -> repeated tf.data.Dataset of dicts
  (see the module docstring); loss_fn(features, outputs) -> (per_example_loss, metrics);
  state: a checkpoints.RunCheckpoint, already restored when resuming. Returns a dict:
  global_step, loss (mean of the last loop call), the metrics, examples_per_second.
  after_loop(step, previous_step): called after each loop call (and its checkpoint), e.g.
  the driver's periodic evaluation (best_checkpoint.PeriodicEval, --eval_every_steps); a true
  answer stops the training there (early stopping), with a checkpoint of that step, and
  the result says `stopped_early`.
  """
  resumed_at = int(state.loop.step.numpy())
  element_spec = dataset_fn(tf.distribute.InputContext(), 1).element_spec
  metric_names = loss_metric_names(model, loss_fn, element_spec)
  train_loop = make_train_loop(
      strategy, make_train_step(model, optimizer, loss_fn, metric_names, config, state.loop),
      metric_names)
  iterator = _train_iterator(strategy, dataset_fn, config, resumed_at)
  logger = TrainLogger(state.output_dir, config, resumed_at, state.chief)
  current, result = resumed_at, {"global_step": resumed_at}
  if current >= config.num_train_steps:
    logging.info("Step %d already reaches num_train_steps=%d: nothing to train",
                 current, config.num_train_steps)
  with _SigtermFlag() as sigterm:
    while current < config.num_train_steps:
      steps = _next_call_length(current, config, first_call=current == resumed_at)
      started = time.time()
      try:
        loss, norm, sums = train_loop(iterator, tf.constant(steps, tf.int32))
      except (tf.errors.UnavailableError, tf.errors.AbortedError,
              tf.errors.DeadlineExceededError, tf.errors.CancelledError,
              tf.errors.InternalError) as exc:
        _stop_on_lost_worker(exc, strategy, state, current)
        raise
      loss, seconds, current = float(loss), time.time() - started, int(state.loop.step.numpy())
      if not math.isfinite(loss) and not config.loss_scaling:
        _stop_on_bad_loss(loss, current, state)
      metrics = {k: float(num) / max(float(den), 1e-12) for k, (num, den) in sums.items()}
      result = {"global_step": current, "loss": loss, **metrics, "examples_per_second":
                steps * logger.examples_per_step / max(seconds, 1e-9)}
      logger.log(current, steps, seconds, loss, float(norm), metrics, optimizer, state)
      if (current % config.save_checkpoints_steps == 0 or sigterm.received
          or current == config.num_train_steps):
        _save(state)
      if sigterm.received:
        logging.warning("Stopped by SIGTERM at step %d; rerun the same command to resume",
                        current)
        state.cleanup()
        raise SystemExit(PREEMPTED_EXIT_CODE)
      if after_loop is not None and after_loop(current, current - steps):
        # Early stopping: the run ends here, its newest checkpoint at this step, so that
        # the same command run again resumes here and trains no further.
        if state.last_saved is None or _number(state.last_saved) != current:
          _save(state)
        result["stopped_early"] = True
        break
  state.cleanup()
  logger.close()
  return result


def _number(prefix):
  match = re.search(r"ckpt-(\d+)$", prefix)
  return int(match.group(1)) if match else -1


def _save(state):
  _stop_on_non_finite_weights(state)
  path = state.save()
  if state.chief:
    logging.info("Saved checkpoint %s", path)


def _stop_on_bad_loss(loss, step, state):
  last = state.latest_saved()
  raise errors.UserError(
      f"the training loss is {loss} at step {step}: "
      + (f"the last good checkpoint {paths.basename(last)} is kept in "
         f"{state.output_dir}" if last else "no checkpoint was saved")
      + "; lower --learning_rate or check the data")


def _stop_on_lost_worker(exc, strategy, state, step):
  """A multi-worker run whose peer died (kill -9, a lost host): one line naming the
  worker and how to resume. Other strategies' errors keep their traceback."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return
  cluster = resolver.cluster_spec().as_dict()
  if sum(len(tasks) for tasks in cluster.values()) < 2:
    return
  text = str(exc)
  lost = "a worker"
  for job, task in re.findall(r"/job:(\w+)/replica:\d+/task:(\d+)", text):
    if (job, int(task)) != (resolver.task_type, resolver.task_id):
      tasks = cluster.get(job, [])
      address = tasks[int(task)] if int(task) < len(tasks) else "?"
      lost = f"{job} {task} ({address})"
      break
  cause = next((p.strip() for p in re.split(r"\n|; ", text)
                if "Connection" in p or "crashed" in p or "unavailable" in p.lower()), "")
  try:
    last = tf.train.latest_checkpoint(state.output_dir)
  except (OSError, tf.errors.OpError):
    last = None
  reason = f" ({cause.split('. ')[0].rstrip('.')[:120]})" if cause else ""
  raise errors.UserError(
      f"the multi-worker run lost {lost} after step {step}{reason}"
      "; rerun every worker with the same command"
      + (f": they resume from {paths.basename(last)} in {state.output_dir}" if last
         else ": no checkpoint was saved yet, they start again")) from None


def _stop_on_non_finite_weights(state):
  """A checkpoint of NaN/inf weights is never saved: the loss of the last
  step is computed before its update, so a step can diverge where the loss check cannot
  see it. The last good checkpoint stays the newest one."""
  bad = [getattr(v, "path", v.name) for v in state.model.weights
         if tf.as_dtype(v.dtype).is_floating
         and not bool(tf.reduce_all(tf.math.is_finite(v.value)))]
  if not bad:
    return
  last = state.latest_saved()
  raise errors.UserError(
      f"the weights are not finite at step {int(state.step.numpy())} ({len(bad)} "
      f"variable(s), {bad[0]} first): the training diverged; "
      + (f"the last good checkpoint {paths.basename(last)} is kept in "
         f"{state.output_dir}" if last else "no checkpoint was saved")
      + "; lower --learning_rate or check the data")


def write_scalars(writer_or_dir, scalars, step):
  """Writes {name: float} as TensorBoard scalars at `step`.

  As classic scalar summaries (simple_value), the kind TensorBoard, its
  EventAccumulator (Tags()["scalars"]), tensorboard-reducer and notebooks all read, as the
  original's Estimator wrote them. writer_or_dir: a summary writer, or a folder to open
  one in (output_dir/eval).
  """
  if isinstance(writer_or_dir, str):
    with errors.disk_full_names(writer_or_dir, atomic=False):  # a full disk: one line
      writer = tf.summary.create_file_writer(writer_or_dir)
      try:
        _write_scalars(writer, scalars, step)
      finally:
        with contextlib.suppress(tf.errors.OpError):
          writer.close()
    return
  _write_scalars(writer_or_dir, scalars, step)


def _write_scalars(writer, scalars, step):
  summary = tf.compat.v1.Summary(value=[
      tf.compat.v1.Summary.Value(tag=name, simple_value=float(value))
      for name, value in scalars.items()])
  with writer.as_default(step=int(step)):
    tf.summary.experimental.write_raw_pb(summary.SerializeToString(), step=int(step))
  writer.flush()


