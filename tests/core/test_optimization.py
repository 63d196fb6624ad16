"""optimization.py against hand-computed values and a NumPy reference of the original."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from bert import optimization
from lr_schedules import one_cycle_reference


def test_schedule_matches_the_original_formula():
  # init 1e-4, 100 steps, 10 warmup: warmup is init*step/10; afterwards the polynomial
  # decay measured from step 0 (init * (1 - step/100)), clamped to 0 after the end.
  schedule = optimization.WarmupPolynomialDecay(1e-4, 100, 10)
  expected = {0: 0.0, 1: 1e-5, 5: 5e-5, 9: 9e-5, 10: 9e-5, 11: 8.9e-5, 50: 5e-5,
              99: 1e-6, 100: 0.0, 150: 0.0}
  for step, value in expected.items():
    assert float(schedule(step)) == pytest.approx(value, rel=1e-5, abs=1e-12), step
  no_warmup = optimization.WarmupPolynomialDecay(2e-5, 4, 0)
  assert [float(no_warmup(s)) for s in range(5)] == pytest.approx(
      [2e-5, 1.5e-5, 1e-5, 0.5e-5, 0.0], abs=1e-12)


def _toy_variables():
  """Real Keras layers, named like the encoder's, so the exclusion rule sees real paths."""
  inputs = keras.Input((3,))
  hidden = keras.layers.Dense(4, name="dense")(inputs)
  out = keras.layers.LayerNormalization(name="attention_LayerNorm")(hidden)
  model = keras.Model(inputs, out)
  rng = np.random.default_rng(0)
  for v in model.trainable_variables:
    v.assign(rng.normal(size=v.shape).astype("float32"))
  return model.trainable_variables


def _numpy_adamw(params, grads_per_step, lrs, decay_mask, wd=0.01, b1=0.9, b2=0.999,
                 eps=1e-6):
  params = [p.astype(np.float64) for p in params]
  m = [np.zeros_like(p) for p in params]
  v = [np.zeros_like(p) for p in params]
  for grads, lr in zip(grads_per_step, lrs):
    for i, g in enumerate(grads):
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      update = m[i] / (np.sqrt(v[i]) + eps)
      if decay_mask[i]:
        update = update + wd * params[i]
      params[i] = params[i] - lr * update
  return params


def _numpy_lamb(params, grads_per_step, lrs, decay_mask, wd=0.01, b1=0.9, b2=0.999,
                eps=1e-6):
  params = [p.astype(np.float64) for p in params]
  m = [np.zeros_like(p) for p in params]
  v = [np.zeros_like(p) for p in params]
  for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
    for i, g in enumerate(grads):
      m[i] = b1 * m[i] + (1 - b1) * g
      v[i] = b2 * v[i] + (1 - b2) * g * g
      update = (m[i] / (1 - b1**t)) / (np.sqrt(v[i] / (1 - b2**t)) + eps)
      ratio = 1.0
      if decay_mask[i]:
        update = update + wd * params[i]
        w, u = np.linalg.norm(params[i]), np.linalg.norm(update)
        ratio = w / u if w > 0 and u > 0 else 1.0
      params[i] = params[i] - ratio * lr * update
  return params


@pytest.mark.parametrize("kind,reference", [("adamw", _numpy_adamw), ("lamb", _numpy_lamb)])
def test_optimizer_steps_match_numpy(kind, reference):
  variables = _toy_variables()
  names = [v.path for v in variables]
  assert names == ["dense/kernel", "dense/bias", "attention_LayerNorm/gamma",
                   "attention_LayerNorm/beta"]
  start = [v.numpy() for v in variables]
  optimizer = optimization.create_optimizer(1e-2, num_train_steps=10, num_warmup_steps=2,
                                            optimizer_type=kind)
  decay_mask = [optimizer.do_use_weight_decay(v) for v in variables]
  # Only the dense kernel is decayed: bias and LayerNorm are excluded as in the original.
  assert decay_mask == [True, False, False, False]
  rng = np.random.default_rng(1)
  steps = [[rng.normal(size=v.shape).astype("float32") for v in variables] for _ in range(5)]
  lrs = [0.0, 5e-3, 8e-3, 7e-3, 6e-3]  # the schedule at steps 0..4
  for grads in steps:
    optimizer.apply_gradients(zip([tf.constant(g) for g in grads], variables))
  assert int(optimizer.iterations) == 5
  expected = reference(start, steps, lrs, decay_mask)
  for v, e in zip(variables, expected):
    np.testing.assert_allclose(v.numpy(), e, rtol=2e-5, atol=2e-6)
  # A real move, not a no-op: the first step has lr 0, the others do not.
  assert not np.allclose(variables[0].numpy(), start[0], atol=1e-4)


def _graph_op_types(function, *args):
  graph = function.get_concrete_function(*args).graph
  kinds = {op.type for op in graph.get_operations()}
  for f in graph._functions.values():  # pylint: disable=protected-access
    kinds |= {n.op for n in f.definition.node_def}
  return kinds


@pytest.mark.parametrize("in_graph", [False, True])
def test_adamw_fused_update_equals_numpy_and_the_plain_ops(in_graph):
  # From fuse_from_num_weights weights on, AdamWeightDecay runs all variables'
  # updates in one XLA-compiled call. The toy model is small, so the threshold is lowered
  # to make it fuse; 0 / None run both paths over the same 5 steps with decay.
  rng = np.random.default_rng(1)
  steps = [[rng.normal(size=v.shape).astype("float32") for v in _toy_variables()]
           for _ in range(5)]
  runs = []
  for threshold in (0, None):
    variables = _toy_variables()
    start = [v.numpy() for v in variables]
    optimizer = optimization.create_optimizer(1e-2, num_train_steps=10, num_warmup_steps=2)
    optimizer.fuse_from_num_weights = threshold
    apply = _applier(optimizer, variables)
    if in_graph:
      apply = tf.function(apply)
      kinds = _graph_op_types(apply, [tf.constant(g) for g in steps[0]])
      # The compiled call is a function call in the graph; the op-by-op path has none.
      assert ("StatefulPartitionedCall" in kinds or "XlaLaunch" in kinds) == (threshold == 0)
    for grads in steps:
      apply([tf.constant(g) for g in grads])
    assert (len(optimizer.__dict__.get("_fused_updates", {})) == 1) == (threshold == 0)
    decay_mask = [optimizer.do_use_weight_decay(v) for v in variables]
    expected = _numpy_adamw(start, steps, [0.0, 5e-3, 8e-3, 7e-3, 6e-3], decay_mask)
    for v, e in zip(variables, expected):
      np.testing.assert_allclose(v.numpy(), e, rtol=2e-5, atol=2e-6)
    runs.append([v.numpy() for v in variables] + [m.numpy() for m in optimizer._m]
                + [v.numpy() for v in optimizer._v])
  for fused, plain in zip(*runs):
    np.testing.assert_allclose(fused, plain, rtol=1e-6, atol=1e-7)
  # A real move, not a no-op.
  assert not np.allclose(runs[0][0], _toy_variables()[0].numpy(), atol=1e-4)


def _applier(optimizer, variables):
  # A closure (not default arguments): tf.function would take those as its inputs.
  return lambda grads: optimizer.apply_gradients(zip(grads, variables))


def test_adamw_fuses_only_from_its_threshold():
  variables = _toy_variables()  # 4 x 3 + 4 + 4 + 4 = 24 weights
  grads = [tf.ones(v.shape) for v in variables]
  optimizer = optimization.create_optimizer(1e-2, num_train_steps=10, num_warmup_steps=0)
  assert optimizer.fuse_from_num_weights == 10_000_000
  optimizer.apply_gradients(zip(grads, variables))
  assert not optimizer.__dict__.get("_fused_updates")
  optimizer.fuse_from_num_weights = 24
  optimizer.apply_gradients(zip(grads, variables))
  assert len(optimizer.__dict__["_fused_updates"]) == 1


def test_the_start_up_line_says_what_the_update_does():
  """compiled_update (finetune's start-up line) answers as the update itself does."""
  variables = _toy_variables()  # 24 weights
  grads = [tf.ones(v.shape) for v in variables]
  optimizer = optimization.create_optimizer(1e-2, num_train_steps=10, num_warmup_steps=0)
  for threshold, fuses in ((25, False), (24, True)):
    optimizer.fuse_from_num_weights = threshold
    said = optimization.compiled_update(optimizer, variables)
    assert said == (fuses, f"AdamWeightDecay compiles it for models of {threshold:,} "
                           "weights and more; this one has 24")
    optimizer.apply_gradients(zip(grads, variables))
    assert bool(optimizer.__dict__.get("_fused_updates")) == fuses
  lamb = optimization.create_optimizer(1e-2, 10, 0, optimizer_type="lamb")
  assert optimization.compiled_update(lamb, variables) == (False, "Lamb updates op by op")
  with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
    mirrored = _toy_variables()
  assert optimization.compiled_update(optimizer, mirrored) == (
      False, "AdamWeightDecay updates op by op: weights on several devices or not float32")


def test_adamw_differs_from_keras_adamw_bias_correction():
  # One step of the original with lr 1e-3: update = m/(sqrt(v)+eps) with m = 0.1 g and
  # v = 0.001 g^2, so |step| = lr * 0.1|g| / (sqrt(0.001)|g| + 1e-6) ~ 3.162e-3, where
  # a bias-corrected Adam (Keras AdamW) would move by ~1e-3.
  var = keras.Variable(np.zeros((2,), "float32"), name="bias")
  optimizer = optimization.AdamWeightDecay(learning_rate=1e-3, weight_decay_rate=0.01)
  optimizer.apply_gradients([(tf.constant([2.0, -0.5]), var)])
  np.testing.assert_allclose(var.numpy(), [-1e-3 * 0.2 / (np.sqrt(1e-3) * 2 + 1e-6),
                                         1e-3 * 0.05 / (np.sqrt(1e-3) * 0.5 + 1e-6)],
                             rtol=1e-5)


def test_clip_by_global_norm():
  grads = [tf.constant([3.0, 0.0]), None, tf.constant([[4.0]])]
  clipped, norm = optimization.clip_by_global_norm(grads, 1.0)
  assert float(norm) == pytest.approx(5.0)
  assert clipped[1] is None
  np.testing.assert_allclose(clipped[0].numpy(), [0.6, 0.0], rtol=1e-6)
  np.testing.assert_allclose(clipped[2].numpy(), [[0.8]], rtol=1e-6)
  small, norm = optimization.clip_by_global_norm([tf.constant([0.3, 0.4])], 1.0)
  np.testing.assert_allclose(small[0].numpy(), [0.3, 0.4], rtol=1e-6)


def test_create_optimizer_rejects_bad_arguments():
  with pytest.raises(ValueError, match="num_train_steps"):
    optimization.create_optimizer(1e-4, 0, 0)
  with pytest.raises(ValueError, match="unknown optimizer"):
    optimization.create_optimizer(1e-4, 10, 1, optimizer_type="sgd")


@pytest.mark.parametrize("total,warmup", [(100, 50), (100, 10), (7, 3), (20, 0)])
def test_one_cycle_schedule_matches_numpy(total, warmup):
  optimizer = optimization.create_optimizer(1e-3, total, warmup, schedule="one_cycle")
  schedule = optimizer._learning_rate  # pylint: disable=protected-access
  steps = np.arange(total + 5)
  got = np.array([float(schedule(s)) for s in steps])
  np.testing.assert_allclose(got, one_cycle_reference(steps, 1e-3, total, warmup),
                             rtol=1e-5, atol=1e-12)
  if warmup:  # the peak itself is reached when warmup ends, unlike the original's
    assert float(schedule(warmup)) == pytest.approx(1e-3)
    original = optimization.WarmupPolynomialDecay(1e-3, total, warmup)
    assert float(original(warmup)) == pytest.approx(1e-3 * (1 - warmup / total))
  with pytest.raises(ValueError, match="unknown schedule"):
    optimization.create_optimizer(1e-3, total, warmup, schedule="cosine")
