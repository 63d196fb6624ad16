"""What the encoder's layers (bert/modeling.py) are made of: the activations, the
initializer, LayerNorm and dropout, the dense layers' 2-D matmuls in the op pattern
TensorFlow fuses on a CPU, the attention biases, and the checks of the encoder's inputs.

bert.modeling re-exports every name here.
"""

import keras
from keras import ops
import tensorflow as tf

from bert.utils import errors

# --------------------------------------------------------------------------- math


def gelu(x):
  """The original's "gelu": the tanh approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).

  Computed by `tf.nn.gelu(approximate=True)`, the same formula, whose op pattern
  TensorFlow's remapper fuses into the matmul before it (a hand-written copy is not
  recognised)."""
  return tf.nn.gelu(x, approximate=True)


def gelu_exact(x):
  """The exact GELU x·Φ(x) with erf (Hugging Face's "gelu"), by `tf.nn.gelu`."""
  return tf.nn.gelu(x, approximate=False)


def get_activation(name):
  """Maps a hidden_act string to a function; ValueError for unknown names."""
  table = {"gelu": gelu, "gelu_exact": gelu_exact, "relu": tf.nn.relu, "tanh": tf.tanh,
           "linear": None}
  if name not in table:
    raise errors.UserError(f"unsupported activation {name!r}; use one of {', '.join(table)}")
  return table[name]


def initializer(config):
  return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


class LayerNorm(keras.layers.LayerNormalization):
  """keras.layers.LayerNormalization over the last axis, with the original's two-pass
  statistics (tf.contrib's layer_norm: each row's mean, then the mean of its squared
  deviations from it), applied to the centred rows:
  (x - mean) * (gamma / sqrt(variance + epsilon)) + beta.

  The same ops on every device, so a graph traced on a CPU runs as it is on a GPU or a
  TPU. At least as precise as Keras' own call, which computes x * inv - mean * inv and
  loses more to rounding when a row's mean is far from zero
  (tests/core/test_layer_norm_precision.py measures both against float64). A one-op
  form through TensorFlow's fused batch norm was faster on a CPU but less precise, and
  it put a CPU's pattern into every export (docs/cpu.md)."""

  def call(self, inputs):
    if (self.axis not in ([-1], [len(inputs.shape) - 1]) or self.rms_scaling
        or not (self.center and self.scale)):
      return super().call(inputs)
    inputs = tf.convert_to_tensor(inputs)
    centred = inputs - tf.reduce_mean(inputs, axis=-1, keepdims=True)
    variance = tf.reduce_mean(tf.square(centred), axis=-1, keepdims=True)
    scale = tf.math.rsqrt(variance + tf.constant(self.epsilon, inputs.dtype)) * self.gamma
    return centred * scale + self.beta


def layer_norm(name):
  # float32 whatever the global policy: LayerNorm statistics in bfloat16/float16 lose
  # too much precision for the 1e-12 epsilon to mean anything.
  return LayerNorm(epsilon=1e-12, name=name, dtype="float32")


def dense_2d(dense, x, activation=None):
  """`dense` (a built keras Dense) applied to a 2-D x [rows, width] as MatMul, BiasAdd
  and the activation: the op pattern TensorFlow's remapper fuses into one matmul
  (oneDNN: with the GELU too). Keras' own call adds the bias with AddV2, which keeps the
  activation out of the fusion. Call it inside a layer's call(), where the kernel reads
  in the layer's compute dtype."""
  y = tf.nn.bias_add(tf.matmul(x, dense.kernel), dense.bias)
  return y if activation is None else activation(y)


class Dropout(keras.layers.Dropout):
  """keras.layers.Dropout with its random numbers always drawn in float32.

  In float32 this is Keras's dropout, the same masks bit for bit. Under a bfloat16
  policy the masks are float32's too (the same seed keeps the same units), and cheaper:
  TensorFlow draws bfloat16 uniforms more slowly than float32 ones."""

  def call(self, inputs, training=False):
    if not training or self.rate == 0:
      return inputs
    noise = keras.random.uniform(ops.shape(inputs), dtype="float32",
                                 seed=self.seed_generator)
    kept = inputs * tf.constant(1.0 / (1.0 - self.rate), inputs.dtype)
    return tf.where(noise >= self.rate, kept, tf.zeros([], inputs.dtype))


def dense_variables(prefix, dense):
  return {f"{prefix}/kernel": dense.kernel, f"{prefix}/bias": dense.bias}


def norm_variables(prefix, norm):
  return {f"{prefix}/gamma": norm.gamma, f"{prefix}/beta": norm.beta}


def attention_mask_bias(input_mask, causal=False, dtype="float32"):
  """Additive attention bias from a padding mask.

  Args:
    input_mask: int32 [batch, seq], 1 for real tokens, 0 for padding.
    causal: also hide every position after the query (left-to-right model).
  Returns:
    float [batch, 1, seq or 1, seq]: 0 where attention is allowed, -10000 elsewhere
    (the original's constant; it is added to the scores before the softmax).
  """
  # expand_dims, not [:, None, None, :]: TensorFlow Lite's built-in ops have no strided
  # slice that adds axes to a tensor of two unknown dimensions, so the indexing form
  # would keep the token-id SavedModel from converting without TF Select ops.
  mask = ops.expand_dims(ops.expand_dims(ops.cast(input_mask, dtype), 1), 1)
  if causal:
    seq_length = ops.shape(input_mask)[1]
    positions = ops.arange(seq_length)
    lower = ops.cast(positions[:, None] >= positions[None, :], dtype)
    mask = mask * ops.expand_dims(ops.expand_dims(lower, 0), 0)
  # The original's (1 - mask) * -10000, the same 0 and -10000 exactly, written to end in
  # a subtraction: each layer adds it to its scaled scores, and TensorFlow's remapper
  # leaves that scale and add out of the batch matmul when the added tensor is a Mul.
  return mask * 10000.0 - 10000.0


def packed_attention_bias(sequence_ids, dtype="float32"):
  """Additive attention bias for packed rows: each token attends only to its own sequence.

  Args:
    sequence_ids: int32 [batch, seq], the sequence each token belongs to within its row
      (1, 2, ...), 0 on padding.
  Returns:
    float [batch, 1, seq, seq]: 0 where query and key are of the same sequence, -10000
    elsewhere and on padding keys, so a sequence's outputs are those it has alone.
  """
  query = ops.expand_dims(sequence_ids, 2)                    # [B, S, 1]
  key = ops.expand_dims(sequence_ids, 1)                      # [B, 1, S]
  same = ops.logical_and(ops.equal(query, key), key > 0)      # [B, S, S]
  mask = ops.expand_dims(ops.cast(same, dtype), 1)            # [B, 1, S, S]
  return mask * 10000.0 - 10000.0


# --------------------------------------------------------------------------- input checks


def concrete_value(value):
  """`value` as a NumPy array when it holds numbers now (a NumPy array, a list, an eager
  tensor), else None (a symbolic tensor: a Keras input, a tensor being traced inside a
  tf.function). Checks on values run only then, so a traced graph gains no op."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  if isinstance(value, (np.ndarray, list, tuple, int)):
    return np.asarray(value)
  if isinstance(value, keras.KerasTensor):
    return None
  numpy = getattr(value, "numpy", None)
  if numpy is None:
    return None
  try:
    return np.asarray(numpy())  # an eager tensor; a graph tensor raises
  except (AttributeError, NotImplementedError, RuntimeError, TypeError, ValueError):
    return None


def static_shape(value):
  """The shape known now (None for an unknown dimension), or None without one."""
  shape = getattr(value, "shape", None)
  if shape is None:
    return None
  try:
    return tuple(None if d is None else int(d) for d in shape)
  except TypeError:  # an unknown rank
    return None


def check_encoder_inputs(inputs, config, where="BertModel"):
  """A ValueError naming the argument, its shape or value and the limit, for inputs the
  encoder would otherwise fail on deep inside TensorFlow (or, for out-of-range ids on an
  accelerator, silently embed as zeros): the three inputs' shapes against each other,
  the sequence length against max_position_embeddings, segment ids against
  type_vocab_size, ids against vocab_size. Shapes known at trace time are checked in a
  graph too; values only when they are concrete (eagerly)."""
  if not isinstance(inputs, dict):
    return  # Keras calls with a list in input order at times; its own checks apply
  names = ("input_ids", "input_mask", "segment_ids") + tuple(
      name for name in PACKED_INPUTS if name in inputs)
  missing = [name for name in names if name not in inputs]
  if missing:
    raise ValueError(f"{where}: inputs lack {', '.join(missing)} (a dict of input_ids, "
                     "input_mask and segment_ids, each int [batch, seq])")
  shapes = {name: static_shape(inputs[name]) for name in names}
  ids_shape = shapes["input_ids"]
  for name in names:
    shape = shapes[name]
    if shape is None or ids_shape is None:
      continue
    if len(shape) != 2:
      raise ValueError(f"{where}: {name} has shape {list(shape)}; each input is "
                       "[batch, seq]")
    if any(a is not None and b is not None and a != b for a, b in zip(shape, ids_shape)):
      raise ValueError(f"{where}: {name} has shape {list(shape)}, input_ids "
                       f"{list(ids_shape)}; the three inputs must have the same shape")
  seq = ids_shape[-1] if ids_shape else None
  if seq is not None and seq > config.max_position_embeddings:
    raise ValueError(f"{where}: input_ids has {seq} positions per row (shape "
                     f"{list(ids_shape)}), more than the config's max_position_embeddings "
                     f"{config.max_position_embeddings}")
  for name, limit, key in (("segment_ids", config.type_vocab_size, "type_vocab_size"),
                           ("input_ids", config.vocab_size, "vocab_size"),
                           ("position_ids", config.max_position_embeddings,
                            "max_position_embeddings")):
    if name not in inputs:
      continue
    value = concrete_value(inputs[name])
    if value is None or value.size == 0:
      continue
    low, high = int(value.min()), int(value.max())
    if low < 0 or high >= limit:
      bad = low if low < 0 else high
      raise ValueError(f"{where}: {name} holds {bad}; the config's {key} is {limit}, so "
                       f"each must be in [0, {limit - 1}]")


ENCODER_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def check_input_shapes_in_graph(inputs, where="BertModel", names=ENCODER_INPUT_NAMES):
  """`inputs` with a run-time check of the three inputs' shapes added to the graph, for
  shapes not known when tracing (a serving signature's are [None, None]): input_ids,
  input_mask and segment_ids must be of one batch and one length, else the call fails
  with an InvalidArgumentError naming the three and their shapes. names: the three keys
  of `inputs` in that order (a TF-Hub encoder's input_word_ids, input_mask,
  input_type_ids), which the message uses. Without it a mask of another length is no
  error on every path: oneDNN's fused attention (the bias added inside the batch matmul)
  skips the broadcast check that a separate add makes, and answers from a mask that does
  not fit; a mask of batch 1 broadcasts over every row on any path. Eager calls and
  shapes known when tracing are checked by check_encoder_inputs instead, and add no op."""
  if not isinstance(inputs, dict) or tf.executing_eagerly():
    return inputs
  if any(name not in inputs for name in names):
    return inputs
  known = [static_shape(inputs[name]) for name in names]
  if all(shape is not None and len(shape) == 2 and None not in shape for shape in known):
    return inputs  # check_encoder_inputs compared them already
  if any(shape is None or len(shape) != 2 for shape in known):
    return inputs  # an unknown rank: TensorFlow's own checks apply
  shapes = [tf.shape(inputs[name], out_type=tf.int32) for name in names]
  agree = tf.reduce_all(tf.logical_and(tf.equal(shapes[0], shapes[1]),
                                       tf.equal(shapes[0], shapes[2])))
  check = tf.debugging.Assert(agree, [
      f"{where}: {names[0]}, {names[1]} and {names[2]} must have the same shape [batch, "
      f"seq]; {names[0]} has shape", shapes[0], names[1], shapes[1], names[2], shapes[2]],
      name="input_shapes_agree")
  with tf.control_dependencies([check]):
    # Stacked and unstacked, too: a stack needs its parts of one shape exactly, and it
    # is a built-in op of LiteRT, whose converter drops the Assert above; a LiteRT model
    # then fails on a mismatch rather than broadcast a mask of batch 1 over every row.
    # int32 as the encoder's inputs are (Keras casts them so after this anyway).
    checked = tf.unstack(tf.stack([tf.cast(inputs[name], tf.int32) for name in names]),
                         num=3)
  return {**inputs, **dict(zip(names, checked))}


# The inputs a packed model takes beside the three of the original: each token's position
# within its sequence and the sequence it belongs to within its row (1, 2, ...; 0: padding).
PACKED_INPUTS = ("position_ids", "sequence_ids")


def encoder_inputs(prefix_shape=(None,), packed=False):
  names = ("input_ids", "input_mask", "segment_ids") + (PACKED_INPUTS if packed else ())
  return {name: keras.Input(shape=prefix_shape, dtype="int32", name=name)
          for name in names}
