"""The encoder's LayerNorm is as precise as keras.layers.LayerNormalization's own call
(the original's two-pass statistics), against a float64 NumPy LayerNorm: its output and
its gradient with respect to the input, for rows far from zero mean too (a residual
stream can drift), in eager calls and inside a traced tf.function (where TensorFlow's
remapper may replace the ops with a fused one when predicting).
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from bert import modeling

EPSILON = 1e-12
# Ours may be this much less precise than Keras' call before it counts as worse, or be
# within a few float32 roundings of the result's magnitude: either way no worse.
FACTOR = 1.05
FLOOR = 4 * np.finfo(np.float32).eps
WIDTHS = (128, 384, 768, 1024)
MEANS = (0.0, 10.0, 100.0, 1000.0)


def _reference(x, gamma, beta, upstream):
  """float64 LayerNorm of x over its last axis and d(sum(upstream * y))/dx."""
  mean = x.mean(-1, keepdims=True)
  centred = x - mean
  inv = 1.0 / np.sqrt((centred ** 2).mean(-1, keepdims=True) + EPSILON)
  normalized = centred * inv
  y = normalized * gamma + beta
  g = upstream * gamma
  dx = inv * (g - g.mean(-1, keepdims=True)
              - normalized * (g * normalized).mean(-1, keepdims=True))
  return y, dx


def _errors(layer, x, upstream, traced):
  def forward_backward(inputs, cotangent):
    with tf.GradientTape() as tape:
      tape.watch(inputs)
      y = layer(inputs)
    return y, tape.gradient(y, inputs, output_gradients=cotangent)

  def predict(inputs):
    return layer(inputs)

  if traced:
    forward_backward = tf.function(forward_backward)
    predict = tf.function(predict)
  y, dx = forward_backward(tf.constant(x, tf.float32), tf.constant(upstream, tf.float32))
  # Prediction alone: a graph that no gradient reads may be rewritten differently.
  y_predict = predict(tf.constant(x, tf.float32))
  return y.numpy().astype(np.float64), y_predict.numpy().astype(np.float64), \
      dx.numpy().astype(np.float64)


def _layers(width, seed):
  rng = np.random.default_rng(seed)
  gamma = 1.0 + 0.1 * rng.standard_normal(width)
  beta = 0.1 * rng.standard_normal(width)
  ours = modeling.layer_norm("ours")
  keras_call = keras.layers.LayerNormalization(epsilon=EPSILON, dtype="float32")
  for layer in (ours, keras_call):
    layer.build((None, None, width))
    layer.set_weights([gamma.astype(np.float32), beta.astype(np.float32)])
  # The reference starts from the float32 weights both layers hold.
  return ours, keras_call, gamma.astype(np.float32).astype(np.float64), \
      beta.astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("width", WIDTHS)
def test_layer_norm_no_less_precise_than_keras_call(width, traced):
  ours, keras_call, gamma, beta = _layers(width, seed=width)
  rng = np.random.default_rng(width + 1)
  worse = []
  for mean in MEANS:
    x = (rng.standard_normal((8, 128, width)) + mean).astype(np.float32)
    upstream = rng.standard_normal((8, 128, width)).astype(np.float32)
    y_ref, dx_ref = _reference(x.astype(np.float64), gamma, beta,
                               upstream.astype(np.float64))
    found = {}
    for name, layer in (("ours", ours), ("keras", keras_call)):
      y, y_predict, dx = _errors(layer, x, upstream, traced)
      found[name] = (np.abs(y - y_ref).max(), np.abs(y_predict - y_ref).max(),
                     np.abs(dx - dx_ref).max())
    for index, what in enumerate(("output", "prediction output", "input gradient")):
      error, keras_error = found["ours"][index], found["keras"][index]
      magnitude = np.abs(dx_ref if index == 2 else y_ref).max()
      if error > max(FACTOR * keras_error, FLOOR * magnitude):
        worse.append(f"mean {mean:g} {what}: {error:.3g} vs Keras' {keras_error:.3g}")
  assert worse == []


def test_reference_is_the_layer_norm_keras_computes():
  # The reference itself: Keras' call agrees with it to float32's precision at mean 0.
  _, keras_call, gamma, beta = _layers(64, seed=3)
  rng = np.random.default_rng(4)
  x = rng.standard_normal((2, 5, 64)).astype(np.float32)
  upstream = rng.standard_normal((2, 5, 64)).astype(np.float32)
  y_ref, dx_ref = _reference(x.astype(np.float64), gamma, beta, upstream.astype(np.float64))
  y, _, dx = _errors(keras_call, x, upstream, traced=False)
  np.testing.assert_allclose(y, y_ref, atol=2e-6)
  np.testing.assert_allclose(dx, dx_ref, atol=2e-6)
