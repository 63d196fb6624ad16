"""The shared training loop: tf.distribute strategies, a custom loop, checkpoints and resume.

Middle floor (imports optimization and script_utils). Every run_* script trains through
`run_training`; none writes its own loop. Keras 3's `model.fit` breaks under
MultiWorkerMirroredStrategy (keras-team/keras#20585), so this is a plain loop around
`strategy.run` and `tf.nn.compute_average_loss`, which works with every strategy.

How a script uses it::

    strategy = training.create_strategy(FLAGS.distribution_strategy, ...)
    training.setup_precision(FLAGS.dtype)            # before building the model
    training.setup_determinism(FLAGS.seed, FLAGS.deterministic)
    with strategy.scope():
      model, encoder = modeling.build_classifier_model(config, num_labels)
      optimizer = optimization.create_optimizer(lr, num_steps, warmup)
    checkpoints.load_checkpoint(encoder, FLAGS.init_checkpoint)   # optional
    result = training.run_training(
        strategy=strategy, model=model, encoder=encoder, optimizer=optimizer,
        loss_fn=loss_fn, dataset_fn=train_dataset_fn, global_batch_size=32,
        num_train_steps=num_steps, output_dir=FLAGS.output_dir, ...)
    metrics = training.evaluate(strategy, model, loss_fn, eval_dataset_fn, 8)
    for batch in training.predict(model, predict_dataset): ...

What a task supplies:
  * `dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset` of dicts
    batched to `input_context.get_per_replica_batch_size(global_batch_size)`
    (drop_remainder=True for training, and repeated: the loop pulls exactly
    num_train_steps * gradient_accumulation_steps batches). Shard by
    `input_context.input_pipeline_id` when there are several input pipelines (hosts).
    The dict holds the model's inputs (by name) and anything else the loss needs.
  * `loss_fn(features, outputs) -> (per_example_loss, metrics)`: `features` is the batch
    dict, `outputs` the model's output dict. `per_example_loss` float32 [B]; the loop
    minimises sum(per_example_loss) / global_batch_size (tf.nn.compute_average_loss),
    which equals the mean on one device. `metrics` maps a name to a pair
    (numerator, denominator) of float32 scalars SUMMED over this batch; the loop sums both
    over replicas, steps and batches and reports numerator / denominator. When a loss is
    normalised over the whole batch (BERT's masked-LM loss divides by the sum of the label
    weights), use `cross_replica_sum` so the normaliser is the global one and the result
    does not depend on the number of replicas.

What the loop does (original behaviour unless noted):
  * one optimizer step = `gradient_accumulation_steps` micro-batches whose gradients are
    averaged (new); the gradients are summed across replicas, then clipped to global norm
    `clip_norm` (1.0, as the original), then applied. The step counter is the global step.
  * `steps_per_loop` steps run inside one tf.function call (the original's
    iterations_per_loop); calls end early at log, checkpoint and final steps.
  * optional XLA (`jit_compile=True`) of the per-step computation.
  * float16: dynamic loss scaling (start 2**15, halve on overflow and skip the step,
    double after 2000 good steps). bfloat16 needs none.
  * checkpoints every `save_checkpoints_steps` into output_dir through
    tf.train.CheckpointManager (newest `keep_checkpoint_max` kept), holding
    `tf.train.Checkpoint(step=<int64 variable>, model=model, encoder=encoder,
    optimizer=optimizer)`; checkpoints.py restores `encoder=` from them for
    --init_checkpoint. A rerun with the same output_dir resumes from the newest one:
    weights, optimizer slots, step, dropout RNG states (`rng_states=`); the input position is restored by
    skipping the batches already consumed (tf.data cannot checkpoint distributed
    iterators), which is exact when the dataset order is deterministic (seeded shuffles,
    deterministic interleave).
  * SIGTERM (preemption notice): finish the running loop call, save, exit with status 143.
  * progress every `log_every_steps` through absl logging (step, loss, lr, examples/s,
    ETA) and TensorBoard scalars in output_dir/train (loss, metrics, learning_rate,
    examples_per_second, global_norm).
  * multi-worker: every worker runs the same loop; only the chief writes to output_dir
    (the others write their share of each checkpoint to a temporary folder and delete it).
"""

import json
import os
import shutil
import signal
import time

from absl import logging
import keras
import tensorflow as tf

import optimization
import script_utils

PREEMPTED_EXIT_CODE = 128 + signal.SIGTERM


# --------------------------------------------------------------------------- setup


def create_strategy(name="one_device", tpu_name=None, tpu_zone=None, gcp_project=None,
                    num_gpus=None):
  """A tf.distribute strategy by the name of --distribution_strategy.

  one_device: the first GPU, else the CPU. mirrored: all (or num_gpus) local GPUs; on a
  machine without GPUs, every logical CPU device (what the tests use). multi_worker_mirrored:
  the hosts listed in the TF_CONFIG environment variable. tpu: --tpu_name.
  Call it first: MultiWorkerMirroredStrategy fails once any TensorFlow op has run.
  """
  # MultiWorkerMirrored must configure collective ops before the TF context starts, so
  # nothing here may run an op (or list logical devices) before its branch.
  if name == "one_device":
    gpus = tf.config.list_physical_devices("GPU")
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    gpus = tf.config.list_logical_devices("GPU")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    if num_gpus:
      if gpus and num_gpus > len(gpus):
        raise script_utils.UserError(
            f"--num_gpus={num_gpus}: only {len(gpus)} GPU(s) visible")
      devices = devices[:num_gpus]
    return tf.distribute.MirroredStrategy(devices=devices)
  if name == "multi_worker_mirrored":
    raw = os.environ.get("TF_CONFIG")
    if raw:
      try:
        config = json.loads(raw)
        config["cluster"], config["task"]["type"], config["task"]["index"]  # noqa: B018
      except (ValueError, KeyError, TypeError) as exc:
        raise script_utils.UserError(
            f"TF_CONFIG is not valid ({exc}); expected JSON like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}}') from None
    else:
      logging.warning("multi_worker_mirrored without TF_CONFIG: running as a single worker")
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu_name, zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise script_utils.UserError(
      f"--distribution_strategy={name}: use one_device, mirrored, multi_worker_mirrored or tpu")


_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def setup_precision(dtype="float32"):
  """Sets the Keras global dtype policy; call before building the model.

  Variables stay float32; bfloat16/float16 compute in that type ("mixed" policies). The
  model's logits are float32 either way (modeling.py).
  """
  if dtype not in _POLICIES:
    raise script_utils.UserError(f"--dtype={dtype}: use float32, bfloat16 or float16")
  keras.mixed_precision.set_global_policy(_POLICIES[dtype])


def setup_determinism(seed, deterministic=None):
  """Seeds Python, NumPy, TF and Keras; switches on op determinism if asked.

  deterministic=None means: on when no GPU/TPU is visible (CPU runs are cheap to make
  reproducible; on accelerators deterministic kernels can be much slower). Returns the
  effective setting.
  """
  if deterministic is None:
    deterministic = not (tf.config.list_physical_devices("GPU")
                         or tf.config.list_physical_devices("TPU"))
  keras.utils.set_random_seed(int(seed))
  if deterministic:
    tf.config.experimental.enable_op_determinism()
  return bool(deterministic)


def cross_replica_sum(value):
  """Sums a tensor over the replicas when called inside `strategy.run`; else returns it."""
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return value
  return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def is_chief(strategy):
  """True on the worker that writes outputs (every single-host strategy is chief)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not getattr(resolver, "task_type", None):
    return True
  if resolver.task_type == "chief":
    return True
  has_chief = "chief" in resolver.cluster_spec().as_dict()
  return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


# --------------------------------------------------------------------------- helpers


def _model_inputs(model, features):
  names = [t.name for t in model.inputs]
  missing = [n for n in names if n not in features]
  if missing:
    raise ValueError(f"the dataset lacks the model inputs {missing}; it has "
                     f"{sorted(features)}")
  return {n: features[n] for n in names}


def _metric_names(model, loss_fn, dataset_fn, global_batch_size, accumulation):
  """The loss_fn's metric names, found by tracing it once (nothing is executed)."""
  dataset = dataset_fn(tf.distribute.InputContext())
  spec = dataset.element_spec

  def probe():
    features = tf.nest.map_structure(
        # 2, not 1, for unknown sizes: a length-1 sequence makes Keras warn on stderr
        # about a softmax over an axis of size 1 in every run.
        lambda s: tf.zeros([d if d is not None else 2 for d in s.shape], s.dtype), spec)
    return loss_fn(features, model(_model_inputs(model, features), training=False))[1]

  del global_batch_size, accumulation
  return sorted(tf.function(probe).get_concrete_function().structured_outputs)


def _format_eta(seconds):
  seconds = int(max(seconds, 0))
  return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


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


def run_training(*, strategy, model, encoder, optimizer, loss_fn, dataset_fn,
                 global_batch_size, num_train_steps, output_dir, steps_per_loop=1000,
                 gradient_accumulation_steps=1, clip_norm=optimization.DEFAULT_CLIP_NORM,
                 save_checkpoints_steps=1000, keep_checkpoint_max=3, log_every_steps=10,
                 jit_compile=False, dtype="float32", resume_data_position=True,
                 handle_sigterm=True):
  """Trains until the global step reaches num_train_steps (resuming from output_dir).

  Args:
    strategy: the tf.distribute strategy whose scope built model and optimizer.
    model: the keras.Model being trained; its inputs are taken from the batch by name.
    encoder: the BertModel inside `model` (saved as `encoder=` in the checkpoints).
    optimizer: a Keras optimizer (optimization.create_optimizer).
    loss_fn, dataset_fn: see the module docstring.
    global_batch_size: examples per micro-batch over all replicas (train_batch_size).
    num_train_steps: final global step (optimizer updates).
    output_dir: checkpoints and TensorBoard logs.
  Returns:
    dict with "global_step", "loss" (mean of the last loop call), the loss_fn metrics
    and "examples_per_second" of the last loop call.
  """
  accumulation = max(int(gradient_accumulation_steps), 1)
  steps_per_loop = max(int(steps_per_loop), 1)
  log_every_steps = max(int(log_every_steps or steps_per_loop), 1)
  save_checkpoints_steps = max(int(save_checkpoints_steps or num_train_steps), 1)
  use_loss_scale = dtype == "float16"
  chief = is_chief(strategy)
  metric_names = _metric_names(model, loss_fn, dataset_fn, global_batch_size, accumulation)

  variables = model.trainable_variables
  with strategy.scope():
    optimizer.build(variables)  # slots exist now, so a restore fills them at once
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step",
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    loss_scale = tf.Variable(2.0 ** 15 if use_loss_scale else 1.0, trainable=False,
                             name="loss_scale",
                             aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    good_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="good_steps",
                             aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
  tracked = dict(step=step, model=model, encoder=encoder, optimizer=optimizer)
  # Keras 3 seed generators (dropout) are not trackable objects, so their states are not
  # in the model's checkpoint: save them explicitly to resume with the same dropout masks.
  rng_states = [v.value for v in model.non_trainable_variables
                if "seed_generator" in getattr(v, "path", v.name)]
  if rng_states:
    tracked["rng_states"] = rng_states
  if use_loss_scale:
    tracked.update(loss_scale=loss_scale, good_steps=good_steps)
  checkpoint = tf.train.Checkpoint(**tracked)

  write_dir = output_dir if chief else os.path.join(
      output_dir, f".worker-{strategy.cluster_resolver.task_id}-tmp")
  manager = tf.train.CheckpointManager(checkpoint, write_dir, max_to_keep=keep_checkpoint_max,
                                       checkpoint_name="ckpt")
  latest = tf.train.latest_checkpoint(output_dir)
  if latest:
    _restore(checkpoint, latest, output_dir)
    logging.info("Resumed from %s at step %d", latest, int(step.numpy()))
  resumed_at = int(step.numpy())

  def accumulated_dataset_fn(context):
    dataset = dataset_fn(context)
    if accumulation > 1:
      dataset = dataset.batch(accumulation, drop_remainder=True)
    # tf.data's distributed iterators cannot be checkpointed; with a deterministic input
    # order (seeded shuffles) skipping the consumed batches restores the data position.
    if resume_data_position and resumed_at:
      dataset = dataset.skip(resumed_at)
    return dataset

  iterator = iter(strategy.distribute_datasets_from_function(accumulated_dataset_fn))

  # Our optimizers let the loop do the cross-replica sum (so that clipping sees the
  # global gradient); others get the mean, which their own all-reduce turns into the sum.
  reduces_itself = hasattr(optimizer, "gradients_are_reduced")
  if reduces_itself:
    optimizer.gradients_are_reduced = True

  def micro_step(features):
    with tf.GradientTape() as tape:
      outputs = model(_model_inputs(model, features), training=True)
      per_example_loss, metrics = loss_fn(features, outputs)
      per_example_loss = tf.cast(per_example_loss, tf.float32)
      loss = tf.nn.compute_average_loss(per_example_loss,
                                        global_batch_size=global_batch_size)
      scaled = loss * loss_scale if use_loss_scale else loss
    grads = tape.gradient(scaled, variables)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
             for g, v in zip(grads, variables)]
    metrics = {k: (tf.cast(metrics[k][0], tf.float32), tf.cast(metrics[k][1], tf.float32))
               for k in metric_names}
    return loss, grads, metrics

  def replica_step(features):
    if accumulation == 1:
      loss, grads, metrics = micro_step(features)
    else:
      loss, grads, metrics = micro_step(tf.nest.map_structure(lambda x: x[0], features))
      for k in range(1, accumulation):
        l_k, g_k, m_k = micro_step(tf.nest.map_structure(lambda x, k=k: x[k], features))
        loss += l_k
        grads = [a + b for a, b in zip(grads, g_k)]
        metrics = {n: (metrics[n][0] + m_k[n][0], metrics[n][1] + m_k[n][1])
                   for n in metric_names}
      loss = loss / accumulation
      grads = [g / accumulation for g in grads]
    replicas = tf.distribute.get_replica_context().num_replicas_in_sync
    if replicas > 1:
      grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM,
                                                             grads)
    if use_loss_scale:
      grads = [g / loss_scale for g in grads]
    grads, norm = optimization.clip_by_global_norm(grads, clip_norm)
    if not reduces_itself and replicas > 1:
      grads = [g / replicas for g in grads]

    def apply():
      optimizer.apply_gradients(zip(grads, variables))
      return tf.constant(True)

    if use_loss_scale:
      finite = tf.math.is_finite(norm)
      tf.cond(finite, apply, lambda: tf.constant(False))
      good = tf.where(finite, good_steps + 1, 0)
      new_scale = tf.where(finite, tf.where(good >= 2000, loss_scale * 2.0, loss_scale),
                           tf.maximum(loss_scale / 2.0, 1.0))
      good_steps.assign(tf.where(good >= 2000, tf.zeros_like(good), good))
      loss_scale.assign(new_scale)
    else:
      apply()
    step.assign_add(1)
    return loss, norm, metrics

  step_fn = tf.function(replica_step, jit_compile=True) if jit_compile else replica_step

  @tf.function
  def train_loop(iterator, num_steps):
    loss_sum = tf.constant(0.0)
    norm = tf.constant(0.0)
    sums = {n: (tf.constant(0.0), tf.constant(0.0)) for n in metric_names}
    for _ in tf.range(num_steps):
      loss, norm_r, metrics = strategy.run(step_fn, args=(next(iterator),))
      loss_sum += strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
      norm = strategy.reduce(tf.distribute.ReduceOp.MEAN, norm_r, axis=None)
      sums = {n: (sums[n][0] + strategy.reduce(tf.distribute.ReduceOp.SUM,
                                               metrics[n][0], axis=None),
                  sums[n][1] + strategy.reduce(tf.distribute.ReduceOp.SUM,
                                               metrics[n][1], axis=None))
              for n in metric_names}
    return loss_sum / tf.cast(num_steps, tf.float32), norm, sums

  writer = tf.summary.create_file_writer(os.path.join(output_dir, "train")) if chief else None
  current = int(step.numpy())
  result = {"global_step": current}
  if current >= num_train_steps:
    logging.info("Step %d already reaches num_train_steps=%d: nothing to train",
                 current, num_train_steps)
  examples_per_step = global_batch_size * accumulation
  start_step, start_time = current, time.time()
  with _SigtermFlag() as sigterm:
    while current < num_train_steps:
      n = min(steps_per_loop, num_train_steps - current,
              log_every_steps - current % log_every_steps,
              save_checkpoints_steps - current % save_checkpoints_steps)
      t0 = time.time()
      loss, norm, sums = train_loop(iterator, tf.constant(n, tf.int32))
      loss = float(loss)
      elapsed = time.time() - t0
      current = int(step.numpy())
      if not tf.math.is_finite(loss) and not use_loss_scale:
        raise FloatingPointError(f"loss is {loss} at step {current}; lower the learning "
                                 "rate or check the data")
      metrics = {k: float(num) / max(float(den), 1e-12) for k, (num, den) in sums.items()}
      result = {"global_step": current, "loss": loss, **metrics,
                "examples_per_second": n * examples_per_step / max(elapsed, 1e-9)}
      if current % log_every_steps == 0 or current == num_train_steps:
        lr = float(optimizer.learning_rate)
        rate = n * examples_per_step / max(elapsed, 1e-9)
        overall = (current - start_step) / max(time.time() - start_time, 1e-9)
        eta = (num_train_steps - current) / max(overall, 1e-9)
        logging.info("step %d/%d  loss %.4f  %s  lr %.3g  %.1f examples/s  ETA %s",
                     current, num_train_steps, loss,
                     "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()), lr, rate,
                     _format_eta(eta))
        if writer is not None:
          scalars = {"loss": loss, "learning_rate": lr, "examples_per_second": rate,
                     "global_norm": float(norm), **metrics}
          if use_loss_scale:
            scalars["loss_scale"] = float(loss_scale.numpy())
          write_scalars(writer, scalars, current)
      if (current % save_checkpoints_steps == 0 or current == num_train_steps
          or sigterm.received):
        path = manager.save(checkpoint_number=current)
        if chief:
          logging.info("Saved checkpoint %s", path)
      if sigterm.received:
        logging.warning("Stopped by SIGTERM at step %d; rerun the same command to resume",
                        current)
        _cleanup_worker_dir(chief, write_dir)
        raise SystemExit(PREEMPTED_EXIT_CODE)
  _cleanup_worker_dir(chief, write_dir)
  if writer is not None:
    writer.close()
  return result


def _scalar_metadata():
  # What tensorboard's scalar summary writes; built by hand so that TensorBoard itself
  # (not a dependency of this project) is only needed to view the logs.
  from tensorflow.core.framework import summary_pb2  # pylint: disable=g-import-not-at-top
  metadata = summary_pb2.SummaryMetadata()
  metadata.plugin_data.plugin_name = "scalars"
  return metadata.SerializeToString()


def write_scalars(writer, scalars, step):
  """Writes {name: float} as TensorBoard scalars at `step` (int) and flushes."""
  metadata = _scalar_metadata()
  with writer.as_default(step=step):
    for name, value in scalars.items():
      tf.summary.write(name, tf.constant(float(value), tf.float32), metadata=metadata)
  writer.flush()


def _cleanup_worker_dir(chief, write_dir):
  if not chief:
    shutil.rmtree(write_dir, ignore_errors=True)


def _restore(checkpoint, path, output_dir):
  try:
    status = checkpoint.restore(path)
    status.assert_existing_objects_matched()
  except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as exc:
    raise script_utils.UserError(
        f"--output_dir={output_dir} holds a checkpoint ({os.path.basename(path)}) of a "
        f"different model or setup ({' '.join(str(exc).split())[:300]}); use a new "
        "--output_dir or delete the old checkpoints") from None


def restore_model(model, output_dir):
  """Restores the whole `model` (encoder and heads) from output_dir's newest checkpoint.

  For eval/predict-only runs of a trained output_dir. Returns the global step, or None
  when output_dir holds no checkpoint.
  """
  latest = tf.train.latest_checkpoint(output_dir) if output_dir else None
  if not latest:
    return None
  step = tf.Variable(0, dtype=tf.int64)
  try:
    status = tf.train.Checkpoint(step=step, model=model).restore(latest)
    status.assert_existing_objects_matched()
    status.expect_partial()
  except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as exc:
    raise script_utils.UserError(
        f"--output_dir={output_dir}: its checkpoint {os.path.basename(latest)} does not fit "
        f"this model ({' '.join(str(exc).split())[:300]})") from None
  logging.info("Restored %s (step %d)", latest, int(step.numpy()))
  return int(step.numpy())


def latest_step(output_dir):
  """The global step of the newest checkpoint in output_dir, or 0."""
  latest = tf.train.latest_checkpoint(output_dir) if output_dir else None
  if not latest:
    return 0
  return int(tf.train.load_checkpoint(latest).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))


# --------------------------------------------------------------------------- eval / predict


def evaluate(strategy, model, loss_fn, dataset_fn, global_batch_size=None, steps=None):
  """Runs `model` over a dataset and aggregates loss_fn's metrics.

  dataset_fn: as for training but finite and not shuffled (drop_remainder=False is fine:
  a partial last batch counts with its true size). steps: at most this many batches.
  Returns dict name -> float: every metric (numerator sum / denominator sum over the whole
  set) plus "loss" = mean per-example loss and "num_examples".
  """
  del global_batch_size  # the batch size comes from the dataset itself
  metric_names = _metric_names(model, loss_fn, dataset_fn, None, 1)
  dist_dataset = strategy.distribute_datasets_from_function(dataset_fn)

  def replica_eval(features):
    outputs = model(_model_inputs(model, features), training=False)
    per_example_loss, metrics = loss_fn(features, outputs)
    per_example_loss = tf.cast(per_example_loss, tf.float32)
    result = {k: (tf.cast(metrics[k][0], tf.float32), tf.cast(metrics[k][1], tf.float32))
              for k in metric_names}
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

  totals = None
  for index, features in enumerate(dist_dataset):
    if steps is not None and index >= steps:
      break
    sums = tf.nest.map_structure(float, eval_step(features))
    totals = sums if totals is None else {
        k: (totals[k][0] + sums[k][0], totals[k][1] + sums[k][1]) for k in sums}
  if totals is None:
    raise script_utils.UserError("the evaluation set is empty")
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


def predict(model, dataset):
  """Yields one dict of NumPy arrays per batch: the model outputs + the other features.

  Runs on the current device, batch by batch in order (no strategy: predictions must come
  back in input order). Features that are not model inputs (unique ids, example indices)
  are passed through unchanged, so outputs can be matched to examples. Only the model
  inputs enter the traced function, so datasets that differ in the other features (eval
  and test sets) share its traces.
  """
  names = [t.name for t in model.inputs]
  forward = _predict_forward(model)
  for index, features in enumerate(dataset):
    inputs = _model_inputs(model, features)
    if index == 0:
      # One trace serves every batch: traced for unknown dimensions before the first call
      # (else the first batches' shapes are traced, then generalised: three traces).
      forward.get_concrete_function({
          k: tf.TensorSpec([None] * len(v.shape), tf.as_dtype(v.dtype))
          for k, v in inputs.items()})
    outputs = forward(inputs)
    batch = {k: v.numpy() for k, v in features.items() if k not in names}
    batch.update({k: v.numpy() for k, v in outputs.items()} if isinstance(outputs, dict)
                 else {"outputs": outputs.numpy()})
    yield batch
