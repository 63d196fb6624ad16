"""The BERT model: its config, the Keras 3 encoder, and Google's variable names.

Faithful to google-research/bert's modeling.py:

  * "gelu" is the tanh approximation the original computes; the exact erf form is
    available as "gelu_exact" (Hugging Face's "gelu"), never silently substituted;
  * LayerNorm epsilon 1e-12, post-LN residual blocks;
  * separate dropout rates on hidden states and on attention probabilities;
  * padding positions get -10000 added to the attention scores before the softmax;
  * every weight starts from a truncated normal with stddev `initializer_range` (0.02).

Weights are laid out exactly as in Google's TF1 checkpoints (query/key/value kernels
[H, H], dense kernels [in, out], head weights [num_outputs, H]), so a checkpoint loads by
name with no reshaping; `google_variable_map(model)` gives that name for every weight.
The task heads, each model's build_* function and its loss are in heads.py.

Like the original, the encoder layers run every dense layer on [batch·seq, width]
matrices: on that layout TensorFlow fuses each matmul with its bias (and, with oneDNN,
with the GELU) into one CPU op, in float32 and in bfloat16; each LayerNorm is one fused
batch norm, which oneDNN turns into its one-op layer norm when predicting
(tests/core/test_modeling_cpu_graph.py reads the optimized graph).

Mixed precision goes through Keras dtype policies, given to the model as keras-hub's
BertBackbone takes them: `BertModel(config, dtype="mixed_bfloat16")` (and each heads.build_*)
passes the policy to every layer it creates; dtype=None takes Keras' global policy as
every Keras layer does. The matmuls then run in bfloat16/float16,
while the embedding sums, every LayerNorm (input and output), the residual stream between
layers, the attention softmax and the losses stay float32, and every head returns float32
logits (tests/training/test_precision.py checks the traced graph).
"""

import copy
import functools
import json
import math

import keras
from keras import ops
import tensorflow as tf

from bert.utils import errors
from bert.utils import file_io

# --------------------------------------------------------------------------- config

_CONFIG_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "initializer_range")

# The keys that fix a weight's shape: a bert_config.json without one of them is refused.
REQUIRED_CONFIG_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size")

ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")


class BertConfig:
  """Configuration of a BertModel; reads and writes Google's bert_config.json unchanged."""

  def __init__(self,
               vocab_size,
               hidden_size=768,
               num_hidden_layers=12,
               num_attention_heads=12,
               intermediate_size=3072,
               hidden_act="gelu",
               hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1,
               max_position_embeddings=512,
               type_vocab_size=16,
               initializer_range=0.02):
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.num_hidden_layers = num_hidden_layers
    self.num_attention_heads = num_attention_heads
    self.hidden_act = hidden_act
    self.intermediate_size = intermediate_size
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range
    self.validate()

  def validate(self, source="bert config"):
    """Raises ValueError naming the key when a value cannot describe a real model."""
    def positive_int(key):
      value = getattr(self, key)
      if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise errors.UserError(f"{source}: {key} must be a positive integer, got {value!r}")

    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size"):
      positive_int(key)
    if self.hidden_size % self.num_attention_heads:
      raise errors.UserError(
          f"{source}: hidden_size ({self.hidden_size}) is not a multiple of "
          f"num_attention_heads ({self.num_attention_heads})")
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, key)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise errors.UserError(f"{source}: {key} must be in [0, 1), got {value!r}")
    value = self.initializer_range
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
      raise errors.UserError(f"{source}: initializer_range must be positive, got {value!r}")
    if self.hidden_act not in ACTIVATIONS:
      raise errors.UserError(f"{source}: hidden_act {self.hidden_act!r} is not one of "
                             f"{', '.join(ACTIVATIONS)}")

  @classmethod
  def from_dict(cls, json_object, source="bert config"):
    """Builds a config from a dict with Google's keys.

    Unknown keys fail, and so does a missing REQUIRED_CONFIG_KEYS key (the original
    silently defaulted them, for example num_attention_heads to 12: a config that
    describes another model than the checkpoint). Only the keys that fix no weight shape
    (hidden_act, the dropout rates, initializer_range) take the original's defaults.
    """
    if not isinstance(json_object, dict):
      raise errors.UserError(
          f"{source}: expected a JSON object, got {type(json_object).__name__}")
    unknown = sorted(set(json_object) - set(_CONFIG_KEYS))
    if unknown:
      raise errors.UserError(f"{source}: unknown key(s) {', '.join(unknown)}; "
                             f"a bert_config.json holds only {', '.join(_CONFIG_KEYS)}")
    missing = [key for key in REQUIRED_CONFIG_KEYS if key not in json_object]
    if missing:
      raise errors.UserError(f"{source}: missing required key(s) {', '.join(missing)}; "
                             "every weight shape depends on them, so none has a default")
    config = cls.__new__(cls)
    defaults = cls(vocab_size=1).to_dict()
    defaults.update(json_object)
    for key, value in defaults.items():
      setattr(config, key, value)
    config.validate(source)
    return config

  @classmethod
  def from_json_file(cls, json_file):
    """Reads a bert_config.json; ValueError/OSError messages name the file."""
    try:
      with file_io.open_text(json_file, newline=None) as reader:
        text = reader.read()
    except UnicodeDecodeError:
      raise errors.UserError(errors.not_utf8_message(json_file)) from None
    except IsADirectoryError:
      raise errors.UserError(
          f"{json_file}: is a directory, expected bert_config.json") from None
    try:
      data = json.loads(text)
    except json.JSONDecodeError as exc:
      raise errors.UserError(f"{json_file}: invalid JSON at line {exc.lineno} column "
                             f"{exc.colno}: {exc.msg}") from None
    return cls.from_dict(data, source=str(json_file))

  def to_dict(self):
    return {key: copy.deepcopy(getattr(self, key)) for key in _CONFIG_KEYS}

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, json_file):
    with file_io.open(json_file, "w", encoding="utf-8") as writer:
      writer.write(self.to_json_string())

  def __eq__(self, other):
    return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

  def __repr__(self):
    return f"BertConfig({self.to_dict()})"


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


@functools.lru_cache(maxsize=None)
def accelerator_visible():
  """Whether TensorFlow sees a GPU or a TPU (fixed once it has started)."""
  return bool(tf.config.list_physical_devices("GPU")
              or tf.config.list_physical_devices("TPU"))


class LayerNorm(keras.layers.LayerNormalization):
  """keras.layers.LayerNormalization over the last axis, computed through TensorFlow's
  fused batch norm: the rows as the channels of a [1, rows, width, 1] NCHW image, each
  normalised over its width (unit scale, zero offset), then gamma and beta.

  The same function as Keras' call, in the op pattern TensorFlow's remapper replaces
  with oneDNN's one-op layer norm (_MklLayerNorm) when nothing differentiates it; a
  training step runs the fused batch norm and its fused gradient. The epsilon goes to
  the op as it is: tf.nn.fused_batch_norm would raise 1e-12 to cuDNN's 1.001e-5.

  Where TensorFlow sees a GPU or a TPU, Keras' own call: the pattern is there for the
  CPU's kernels, and a batch norm over one channel per token has never run on either."""

  def call(self, inputs):
    if (self.axis not in ([-1], [len(inputs.shape) - 1]) or self.rms_scaling
        or accelerator_visible()):
      return super().call(inputs)
    shape = tf.shape(inputs)
    rows = tf.reduce_prod(shape[:-1], keepdims=True)
    image = tf.reshape(inputs, tf.concat([[1], rows, shape[-1:], [1]], 0))
    empty = tf.constant([], inputs.dtype)
    normalized = tf.raw_ops.FusedBatchNormV3(
        x=image, scale=tf.fill(rows, tf.constant(1.0, inputs.dtype)),
        offset=tf.fill(rows, tf.constant(0.0, inputs.dtype)), mean=empty, variance=empty,
        epsilon=self.epsilon, data_format="NCHW", is_training=True)[0]
    return tf.reshape(normalized, shape) * self.gamma + self.beta


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


# --------------------------------------------------------------------------- layers


class ConfigLayer(keras.layers.Layer):
  """Base of the layers built from a BertConfig: holds it as `self.config` and stores it
  in the Keras config as Google's dict, so `get_config`/`from_config` (and .keras files)
  round-trip. Subclasses with more constructor arguments add them to `get_config`."""

  def __init__(self, config, **kwargs):
    super().__init__(**kwargs)
    self.config = config

  def get_config(self):
    return {**super().get_config(), "config": self.config.to_dict()}

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    return cls(BertConfig.from_dict(config.pop("config")), **config)


class BertEmbeddings(ConfigLayer):
  """word + token-type + learned absolute position embeddings, LayerNorm, dropout."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    self.layer_norm = layer_norm("LayerNorm")
    # float32 like the LayerNorm before it: the embedding output starts the float32
    # residual stream that every TransformerLayer adds to (its output is float32 too).
    self.dropout = Dropout(config.hidden_dropout_prob, dtype="float32")

  def build(self, input_shape=None):
    c = self.config
    init = initializer(c)
    # autocast=False: under a mixed policy the rows are summed and normalised in
    # float32, not rounded to bfloat16/float16 first.
    self.word_embeddings = self.add_weight(
        name="word_embeddings", shape=(c.vocab_size, c.hidden_size), initializer=init,
        autocast=False)
    self.token_type_embeddings = self.add_weight(
        name="token_type_embeddings", shape=(c.type_vocab_size, c.hidden_size),
        initializer=init, autocast=False)
    # A weight, sliced in call(): a table built from ops.arange in a functional graph
    # would be frozen into a constant and missing from the checkpoint (PITFALLS.md).
    self.position_embeddings = self.add_weight(
        name="position_embeddings", shape=(c.max_position_embeddings, c.hidden_size),
        initializer=init, autocast=False)
    self.layer_norm.build((None, None, c.hidden_size))
    self.built = True

  def call(self, input_ids, segment_ids, position_ids=None, training=None):
    """input_ids, segment_ids: int32 [batch, seq] -> float32 [batch, seq, hidden].

    position_ids: int32 [batch, seq], each token's position (packed rows restart it at
    each sequence); None: 0, 1, ..., seq - 1 in every row, as the original."""
    seq_length = ops.shape(input_ids)[1]
    words = ops.take(self.word_embeddings, input_ids, axis=0)
    types = ops.take(self.token_type_embeddings, segment_ids, axis=0)
    if position_ids is None:
      positions = ops.slice(self.position_embeddings, (0, 0),
                            (seq_length, self.config.hidden_size))[None]
    else:
      positions = ops.take(self.position_embeddings, position_ids, axis=0)
    output = self.layer_norm(words + types + positions)
    return self.dropout(output, training=training)

  def google_variables(self, prefix="bert/embeddings"):
    variables = {f"{prefix}/word_embeddings": self.word_embeddings,
                 f"{prefix}/token_type_embeddings": self.token_type_embeddings,
                 f"{prefix}/position_embeddings": self.position_embeddings}
    variables.update(norm_variables(f"{prefix}/LayerNorm", self.layer_norm))
    return variables


class TransformerLayer(ConfigLayer):
  """One post-LN encoder block: self-attention, add & norm, feed-forward, add & norm.

  Like the original (its `reshape_to_matrix`), every dense layer runs on a
  [batch·seq, width] matrix; only attention's scores need the heads apart. On that
  layout the bias and the activation fuse into each matmul on CPU."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    h, init = config.hidden_size, initializer(config)
    self.num_heads = config.num_attention_heads
    self.head_size = h // config.num_attention_heads
    self.activation = get_activation(config.hidden_act)
    # Every sublayer in this layer's policy (its `dtype`), but the float32 LayerNorms.
    dtype = self.dtype_policy
    self.query = keras.layers.Dense(h, kernel_initializer=init, name="query", dtype=dtype)
    self.key = keras.layers.Dense(h, kernel_initializer=init, name="key", dtype=dtype)
    self.value = keras.layers.Dense(h, kernel_initializer=init, name="value", dtype=dtype)
    self.attention_dropout = Dropout(config.attention_probs_dropout_prob, dtype=dtype)
    self.attention_output = keras.layers.Dense(h, kernel_initializer=init, name="dense",
                                               dtype=dtype)
    self.attention_output_dropout = Dropout(config.hidden_dropout_prob, dtype=dtype)
    self.attention_layer_norm = layer_norm("attention_LayerNorm")
    # The activation is applied by call() (dense_2d), so that it fuses into the matmul.
    self.intermediate = keras.layers.Dense(
        config.intermediate_size, kernel_initializer=init, name="intermediate", dtype=dtype)
    self.output_dense = keras.layers.Dense(h, kernel_initializer=init, name="output",
                                           dtype=dtype)
    self.output_dropout = Dropout(config.hidden_dropout_prob, dtype=dtype)
    self.output_layer_norm = layer_norm("output_LayerNorm")

  def build(self, input_shape):
    h = self.config.hidden_size
    for dense in (self.query, self.key, self.value, self.attention_output):
      dense.build((None, h))
    self.intermediate.build((None, h))
    self.output_dense.build((None, self.config.intermediate_size))
    self.attention_layer_norm.build((None, h))
    self.output_layer_norm.build((None, h))
    self.built = True

  def _split_heads(self, x, batch, seq):
    # [batch·seq, hidden] -> [batch, heads, seq, head_size]
    x = ops.reshape(x, (batch, seq, self.num_heads, self.head_size))
    return ops.transpose(x, (0, 2, 1, 3))

  def call(self, hidden_states, attention_bias, training=None, first_token_only=False):
    """hidden_states: float [batch, seq, hidden]; attention_bias: float32
    [batch, 1, seq or 1, seq] from attention_mask_bias() -> float [batch, seq, hidden].

    first_token_only=True: only position 0 ([CLS]) queries (keys and values still come
    from every position) and goes on through the output and feed-forward layers. Returns
    the first row of the full call, [batch, 1, hidden], for about 1/seq of the work of
    the query, output and feed-forward matmuls: all a last layer needs when only the
    pooled output is read.
    """
    h, dtype = self.config.hidden_size, self.compute_dtype
    batch, seq = ops.shape(hidden_states)[0], ops.shape(hidden_states)[1]
    rows = ops.reshape(hidden_states, (-1, h))  # [batch·seq, hidden]
    inputs = ops.cast(rows, dtype)  # one cast for the three projections
    query_rows, query_inputs, query_seq = rows, inputs, seq
    if first_token_only:  # [CLS]'s query row, and its row of a causal mask
      query_rows = hidden_states[:, 0, :]
      query_inputs, query_seq = ops.cast(query_rows, dtype), 1
      attention_bias = attention_bias[:, :, :1, :]
    q = self._split_heads(dense_2d(self.query, query_inputs), batch, query_seq)
    k = self._split_heads(dense_2d(self.key, inputs), batch, seq)
    v = self._split_heads(dense_2d(self.value, inputs), batch, seq)
    # Scale and mask in the matmul's dtype, so that oneDNN fuses both into the batch
    # matmul. The mask loses nothing there: allowed positions add exactly 0, and a
    # masked score near -10000 is exp() = 0 in any float type.
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(float(self.head_size)))
    scores = scores + ops.cast(attention_bias, dtype)
    # The softmax in float32: its sum over a row in bfloat16/float16 would lose precision.
    probs = ops.softmax(ops.cast(scores, "float32"), axis=-1)
    probs = self.attention_dropout(ops.cast(probs, dtype), training=training)
    context = ops.reshape(ops.transpose(tf.matmul(probs, v), (0, 2, 1, 3)), (-1, h))
    attention = self.attention_output_dropout(dense_2d(self.attention_output, context),
                                              training=training)
    attention = self.attention_layer_norm(ops.cast(attention, "float32")
                                          + ops.cast(query_rows, "float32"))
    intermediate = dense_2d(self.intermediate, ops.cast(attention, dtype), self.activation)
    layer_output = self.output_dropout(dense_2d(self.output_dense, intermediate),
                                       training=training)
    # The residual sum in float32 (the LayerNorm's dtype): under a mixed policy the
    # feed-forward output is bfloat16/float16 while `attention` left a float32 LayerNorm.
    output = self.output_layer_norm(ops.cast(layer_output, "float32") + attention)
    return ops.reshape(output, (batch, query_seq, h))

  def google_variables(self, prefix):
    variables = {}
    variables.update(dense_variables(f"{prefix}/attention/self/query", self.query))
    variables.update(dense_variables(f"{prefix}/attention/self/key", self.key))
    variables.update(dense_variables(f"{prefix}/attention/self/value", self.value))
    variables.update(dense_variables(f"{prefix}/attention/output/dense", self.attention_output))
    variables.update(norm_variables(f"{prefix}/attention/output/LayerNorm",
                                    self.attention_layer_norm))
    variables.update(dense_variables(f"{prefix}/intermediate/dense", self.intermediate))
    variables.update(dense_variables(f"{prefix}/output/dense", self.output_dense))
    variables.update(norm_variables(f"{prefix}/output/LayerNorm", self.output_layer_norm))
    return variables


class BertPooler(ConfigLayer):
  """dense + tanh on the first ([CLS]) token of the last layer."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    self.dense = keras.layers.Dense(config.hidden_size, activation="tanh",
                                    kernel_initializer=initializer(config), name="dense",
                                    dtype=self.dtype_policy)

  def build(self, input_shape):
    self.dense.build((None, self.config.hidden_size))
    self.built = True

  def call(self, sequence_output, positions=None):
    """sequence_output: float [batch, seq, hidden] -> float [batch, hidden].

    positions: int32 [batch, K], the [CLS] position of each sequence of a packed row ->
    float [batch, K, hidden]; None: the first token of each row, as the original."""
    if positions is None:
      return self.dense(sequence_output[:, 0, :])
    cls_rows = ops.take_along_axis(
        sequence_output, ops.expand_dims(ops.cast(positions, "int32"), -1), axis=1)
    return self.dense(cls_rows)

  def google_variables(self, prefix="bert/pooler"):
    return dense_variables(f"{prefix}/dense", self.dense)


class AttentionBias(keras.layers.Layer):
  """input_mask int32 [batch, seq] -> additive float32 bias [batch, 1, seq|1, seq].

  packed=True: takes sequence_ids int32 [batch, seq] instead (packed_attention_bias)."""

  def __init__(self, causal=False, packed=False, **kwargs):
    super().__init__(**kwargs)
    self.causal = causal
    self.packed = packed

  def call(self, input_mask):
    if self.packed:
      return packed_attention_bias(input_mask)
    return attention_mask_bias(input_mask, causal=self.causal)

  def get_config(self):
    return {**super().get_config(), "causal": self.causal, "packed": self.packed}


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


class BertModel(keras.Model):
  """The BERT encoder as a functional Keras model.

  Inputs (dict): `input_ids`, `input_mask`, `segment_ids`, each int32 [batch, seq]
  (seq may vary between calls, up to max_position_embeddings).
  Outputs (dict):
    `sequence_output`  float32 [batch, seq, hidden]: the last layer;
    `pooled_output`    float [batch, hidden]: dense+tanh of the last layer's [CLS];
    `encoder_outputs`  list of num_hidden_layers float [batch, seq, hidden];
    `embedding_output` float32 [batch, seq, hidden]: after embedding LayerNorm/dropout.
  Under a mixed policy, sequence_output, encoder_outputs and embedding_output stay
  float32 (the residual stream); pooled_output is in the compute dtype.
  `causal=True` restricts attention to the left context (the paper's LTR ablation).
  `packed=True` (pretraining on packed rows): two more inputs, `position_ids` and
  `sequence_ids` (PACKED_INPUTS), each int32 [batch, seq]; positions come from
  position_ids and each token attends only to the tokens of its own sequence, so every
  sequence of a row gets the outputs it would get alone. pooled_output still reads each
  row's first token; the pretraining model pools each sequence's [CLS] itself.
  `pooled_only=True` (the classifier and multiple-choice models): the only output is
  `pooled_output`, and the last layer computes the [CLS] position alone
  (TransformerLayer's first_token_only), the one row the pooler reads. Same weights,
  same checkpoint layout and the same pooled_output up to float rounding, for less work
  (the last layer's other rows are skipped; docs/benchmarks.md counts the FLOPs saved).
  `dtype`: the Keras dtype policy (or its name: "float32", "mixed_bfloat16",
  "mixed_float16") that every layer of the encoder computes in, its LayerNorms excepted
  (float32 always); None: Keras' global policy, as any Keras layer.
  """

  def __init__(self, config, causal=False, pooled_only=False, packed=False, name="bert",
               dtype=None, **kwargs):
    if isinstance(config, dict):
      config = BertConfig.from_dict(config)
    if packed and causal:
      raise ValueError("packed=True with causal=True: a left-to-right model over packed "
                       "rows is not supported")
    inputs = encoder_inputs(packed=packed)
    embeddings = BertEmbeddings(config, name="embeddings", dtype=dtype)
    if packed:
      embedding_output = embeddings(inputs["input_ids"], inputs["segment_ids"],
                                    inputs["position_ids"])
      attention_bias = AttentionBias(packed=True, name="attention_bias", dtype=dtype)(
          inputs["sequence_ids"])
    else:
      embedding_output = embeddings(inputs["input_ids"], inputs["segment_ids"])
      attention_bias = AttentionBias(causal=causal, name="attention_bias", dtype=dtype)(
          inputs["input_mask"])
    hidden = embedding_output
    encoder_outputs = []
    for index in range(config.num_hidden_layers):
      layer = TransformerLayer(config, name=f"layer_{index}", dtype=dtype)
      if pooled_only and index == config.num_hidden_layers - 1:
        hidden = layer(hidden, attention_bias, first_token_only=True)
      else:
        hidden = layer(hidden, attention_bias)
      encoder_outputs.append(hidden)
    pooled = BertPooler(config, name="pooler", dtype=dtype)(hidden)
    if pooled_only:
      outputs = {"pooled_output": pooled}
    else:
      outputs = {"sequence_output": hidden, "pooled_output": pooled,
                 "encoder_outputs": encoder_outputs, "embedding_output": embedding_output}
    super().__init__(inputs=inputs, outputs=outputs, name=name, **kwargs)
    if dtype is not None:
      # A functional model ignores a dtype argument; set here, it reports the policy its
      # layers compute in (and enters the same autocast scope as under a global policy).
      self.dtype_policy = dtype
    self.config = config
    self.causal = causal
    self.pooled_only = pooled_only
    self.packed = packed
    self._dtype_given = dtype is not None

  def __call__(self, inputs, *args, **kwargs):
    # Before Keras's own __call__, so that the ValueError reaches the caller as raised.
    check_encoder_inputs(inputs, self.config, self.name)
    return super().__call__(inputs, *args, **kwargs)

  def call(self, inputs, training=None, mask=None, **kwargs):
    # Inside a traced graph (a serving signature, model.predict), where the shapes come
    # only at run time.
    inputs = check_input_shapes_in_graph(inputs, self.name)
    return super().call(inputs, training=training, mask=mask, **kwargs)

  @property
  def embeddings_layer(self):
    return self.get_layer("embeddings")

  @property
  def embedding_table(self):
    """The word-embedding variable, float32 [vocab_size, hidden_size]."""
    return self.embeddings_layer.word_embeddings

  def google_variables(self, prefix="bert"):
    variables = self.embeddings_layer.google_variables(f"{prefix}/embeddings")
    for index in range(self.config.num_hidden_layers):
      variables.update(self.get_layer(f"layer_{index}").google_variables(
          f"{prefix}/encoder/layer_{index}"))
    variables.update(self.get_layer("pooler").google_variables(f"{prefix}/pooler"))
    return variables

  def get_config(self):
    config = {"config": self.config.to_dict(), "causal": self.causal,
              "pooled_only": self.pooled_only, "name": self.name}
    if self.packed:  # absent otherwise: .keras files of the original model are unchanged
      config["packed"] = True
    if self._dtype_given:  # likewise: a model built under the global policy reloads so
      config["dtype"] = self.dtype_policy.name
    return config

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)


# --------------------------------------------------------------------------- Google's names


def find_encoder(model):
  """The BertModel inside `model` (or `model` itself)."""
  if isinstance(model, BertModel):
    return model
  for layer in model.layers:
    if isinstance(layer, BertModel):
      return layer
  raise ValueError(f"model {model.name!r} holds no BertModel")


def google_variable_map(model):
  """{Google TF1 checkpoint name: variable} for the encoder and every head in `model`
  (each head layer names its own weights: `google_variables()`, heads.py)."""
  encoder = find_encoder(model)
  variables = encoder.google_variables()
  if model is encoder:
    return variables
  for layer in model.layers:
    if layer is not encoder and hasattr(layer, "google_variables"):
      for name, variable in layer.google_variables().items():
        # A layer of the encoder called again by a head (the packed model's pooler)
        # names the same variables.
        if name in variables and variables[name] is not variable:
          raise ValueError(f"two weights of {model.name!r} map to checkpoint name {name}")
        variables[name] = variable
  return variables


# The encoder's layers by class name, for keras.saving (heads.CUSTOM_OBJECTS adds the heads').
CUSTOM_OBJECTS = {cls.__name__: cls for cls in (
    BertModel, BertEmbeddings, TransformerLayer, BertPooler, AttentionBias, LayerNorm)}
