"""The BERT model: config, Keras 3 encoder, task heads, and Google's variable names.

Ground floor: imports nothing of ours. Faithful to google-research/bert's modeling.py:

  * "gelu" is the tanh approximation the original computes; the exact erf form is
    available as "gelu_exact" (Hugging Face's "gelu"), never silently substituted;
  * LayerNorm epsilon 1e-12, post-LN residual blocks;
  * separate dropout rates on hidden states and on attention probabilities;
  * padding positions get -10000 added to the attention scores before the softmax;
  * every weight starts from a truncated normal with stddev `initializer_range` (0.02).

Weights are laid out exactly as in Google's TF1 checkpoints (query/key/value kernels
[H, H], dense kernels [in, out], head weights [num_outputs, H]), so a checkpoint loads by
name with no reshaping; `google_variable_map(model)` gives that name for every weight.

Each build_*_model function is followed by its task's loss (pretraining_loss,
classifier_loss, squad_loss, token_classification_loss, multiple_choice_loss, and
multi_label_loss on the classifier's head): each takes (features, outputs) and returns
(per_example_loss float32 [B], metrics {name: (numerator, denominator)} float32 scalars
summed over the batch), computed in float32.

Mixed precision goes through Keras dtype policies: set the global policy (for example
"mixed_bfloat16") before building a model. The matmuls then run in bfloat16/float16,
while the embedding sums, every LayerNorm (input and output), the residual stream between
layers, the attention softmax and the losses stay float32, and every head returns float32
logits (tests/test_precision.py checks the traced graph).
"""

import copy
import json
import math

import keras
from keras import ops
import tensorflow as tf

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
        raise file_io.InputError(f"{source}: {key} must be a positive integer, got {value!r}")

    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size"):
      positive_int(key)
    if self.hidden_size % self.num_attention_heads:
      raise file_io.InputError(
          f"{source}: hidden_size ({self.hidden_size}) is not a multiple of "
          f"num_attention_heads ({self.num_attention_heads})")
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, key)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise file_io.InputError(f"{source}: {key} must be in [0, 1), got {value!r}")
    value = self.initializer_range
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
      raise file_io.InputError(f"{source}: initializer_range must be positive, got {value!r}")
    if self.hidden_act not in ACTIVATIONS:
      raise file_io.InputError(f"{source}: hidden_act {self.hidden_act!r} is not one of "
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
      raise file_io.InputError(
          f"{source}: expected a JSON object, got {type(json_object).__name__}")
    unknown = sorted(set(json_object) - set(_CONFIG_KEYS))
    if unknown:
      raise file_io.InputError(f"{source}: unknown key(s) {', '.join(unknown)}; "
                               f"a bert_config.json holds only {', '.join(_CONFIG_KEYS)}")
    missing = [key for key in REQUIRED_CONFIG_KEYS if key not in json_object]
    if missing:
      raise file_io.InputError(f"{source}: missing required key(s) {', '.join(missing)}; "
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
      with open(json_file, "r", encoding="utf-8") as reader:
        text = reader.read()
    except UnicodeDecodeError:
      raise file_io.InputError(file_io.not_utf8_message(json_file)) from None
    except IsADirectoryError:
      raise file_io.InputError(
          f"{json_file}: is a directory, expected bert_config.json") from None
    try:
      data = json.loads(file_io.without_byte_order_mark(text))
    except json.JSONDecodeError as exc:
      raise file_io.InputError(f"{json_file}: invalid JSON at line {exc.lineno} column "
                               f"{exc.colno}: {exc.msg}") from None
    return cls.from_dict(data, source=str(json_file))

  def to_dict(self):
    return {key: copy.deepcopy(getattr(self, key)) for key in _CONFIG_KEYS}

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, json_file):
    with open(json_file, "w", encoding="utf-8") as writer:
      writer.write(self.to_json_string())

  def __eq__(self, other):
    return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

  def __repr__(self):
    return f"BertConfig({self.to_dict()})"


# --------------------------------------------------------------------------- math


def gelu(x):
  """The original's "gelu": the tanh approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))."""
  cdf = 0.5 * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * ops.power(x, 3))))
  return x * cdf


def gelu_exact(x):
  """The exact GELU x·Φ(x) with erf (Hugging Face's "gelu")."""
  return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


def get_activation(name):
  """Maps a hidden_act string to a function; ValueError for unknown names."""
  table = {"gelu": gelu, "gelu_exact": gelu_exact, "relu": ops.relu, "tanh": ops.tanh,
           "linear": None}
  if name not in table:
    raise file_io.InputError(f"unsupported activation {name!r}; use one of {', '.join(table)}")
  return table[name]


def _initializer(config):
  return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def _layer_norm(name):
  # float32 whatever the global policy: LayerNorm statistics in bfloat16/float16 lose
  # too much precision for the 1e-12 epsilon to mean anything.
  return keras.layers.LayerNormalization(epsilon=1e-12, name=name, dtype="float32")


def _dense_vars(prefix, dense):
  return {f"{prefix}/kernel": dense.kernel, f"{prefix}/bias": dense.bias}


def _norm_vars(prefix, norm):
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
  return (1.0 - mask) * -10000.0


# --------------------------------------------------------------------------- loss helpers

# Added once to the global sum of the masked-LM label weights (the original's 1e-5).
MLM_DENOMINATOR_EPSILON = 1e-5


def cross_replica_sum(value):
  """Sums `value` over the replicas when called inside `strategy.run` with more than one
  replica in sync; otherwise returns it unchanged."""
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return value
  return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def _correct(logits, labels):
  """float32 [...]: 1 where argmax(logits) equals the label; logits [..., K], labels [...]."""
  return tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)


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
    self.layer_norm = _layer_norm("LayerNorm")
    # float32 like the LayerNorm before it: the embedding output starts the float32
    # residual stream that every TransformerLayer adds to (its output is float32 too).
    self.dropout = keras.layers.Dropout(config.hidden_dropout_prob, dtype="float32")

  def build(self, input_shape=None):
    c = self.config
    init = _initializer(c)
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

  def call(self, input_ids, segment_ids, training=None):
    """input_ids, segment_ids: int32 [batch, seq] -> float32 [batch, seq, hidden]."""
    seq_length = ops.shape(input_ids)[1]
    words = ops.take(self.word_embeddings, input_ids, axis=0)
    types = ops.take(self.token_type_embeddings, segment_ids, axis=0)
    positions = ops.slice(self.position_embeddings, (0, 0),
                          (seq_length, self.config.hidden_size))
    output = self.layer_norm(words + types + positions[None])
    return self.dropout(output, training=training)

  def google_variables(self, prefix="bert/embeddings"):
    variables = {f"{prefix}/word_embeddings": self.word_embeddings,
                 f"{prefix}/token_type_embeddings": self.token_type_embeddings,
                 f"{prefix}/position_embeddings": self.position_embeddings}
    variables.update(_norm_vars(f"{prefix}/LayerNorm", self.layer_norm))
    return variables


class TransformerLayer(ConfigLayer):
  """One post-LN encoder block: self-attention, add & norm, feed-forward, add & norm."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    h, init = config.hidden_size, _initializer(config)
    self.num_heads = config.num_attention_heads
    self.head_size = h // config.num_attention_heads
    self.query = keras.layers.Dense(h, kernel_initializer=init, name="query")
    self.key = keras.layers.Dense(h, kernel_initializer=init, name="key")
    self.value = keras.layers.Dense(h, kernel_initializer=init, name="value")
    self.attention_dropout = keras.layers.Dropout(config.attention_probs_dropout_prob)
    self.attention_output = keras.layers.Dense(h, kernel_initializer=init, name="dense")
    self.attention_output_dropout = keras.layers.Dropout(config.hidden_dropout_prob)
    self.attention_layer_norm = _layer_norm("attention_LayerNorm")
    self.intermediate = keras.layers.Dense(
        config.intermediate_size, activation=get_activation(config.hidden_act),
        kernel_initializer=init, name="intermediate")
    self.output_dense = keras.layers.Dense(h, kernel_initializer=init, name="output")
    self.output_dropout = keras.layers.Dropout(config.hidden_dropout_prob)
    self.output_layer_norm = _layer_norm("output_LayerNorm")

  def build(self, input_shape):
    h = self.config.hidden_size
    for dense in (self.query, self.key, self.value, self.attention_output):
      dense.build((None, None, h))
    self.intermediate.build((None, None, h))
    self.output_dense.build((None, None, self.config.intermediate_size))
    self.attention_layer_norm.build((None, None, h))
    self.output_layer_norm.build((None, None, h))
    self.built = True

  def _split_heads(self, x):
    # [batch, seq, hidden] -> [batch, heads, seq, head_size]
    batch, seq = ops.shape(x)[0], ops.shape(x)[1]
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
    queries = hidden_states
    if first_token_only:  # [CLS]'s query row, and its row of a causal mask
      queries, attention_bias = hidden_states[:, :1, :], attention_bias[:, :, :1, :]
    q = self._split_heads(self.query(queries))
    k = self._split_heads(self.key(hidden_states))
    v = self._split_heads(self.value(hidden_states))
    scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
    scores = scores * (1.0 / math.sqrt(float(self.head_size)))
    # Softmax in float32: -10000 and large scores overflow or lose the mask in float16.
    scores = ops.cast(scores, "float32") + ops.cast(attention_bias, "float32")
    probs = ops.softmax(scores, axis=-1)
    probs = self.attention_dropout(ops.cast(probs, self.compute_dtype), training=training)
    context = ops.matmul(probs, v)
    batch, seq = ops.shape(queries)[0], ops.shape(queries)[1]
    context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)),
                          (batch, seq, self.config.hidden_size))
    attention = self.attention_output_dropout(self.attention_output(context),
                                              training=training)
    attention = self.attention_layer_norm(ops.cast(attention, "float32")
                                          + ops.cast(queries, "float32"))
    layer_output = self.output_dense(self.intermediate(attention))
    layer_output = self.output_dropout(layer_output, training=training)
    # The residual sum in float32 (the LayerNorm's dtype): under a mixed policy the
    # feed-forward output is bfloat16/float16 while `attention` left a float32 LayerNorm.
    return self.output_layer_norm(ops.cast(layer_output, "float32")
                                  + ops.cast(attention, "float32"))

  def google_variables(self, prefix):
    variables = {}
    variables.update(_dense_vars(f"{prefix}/attention/self/query", self.query))
    variables.update(_dense_vars(f"{prefix}/attention/self/key", self.key))
    variables.update(_dense_vars(f"{prefix}/attention/self/value", self.value))
    variables.update(_dense_vars(f"{prefix}/attention/output/dense", self.attention_output))
    variables.update(_norm_vars(f"{prefix}/attention/output/LayerNorm",
                                self.attention_layer_norm))
    variables.update(_dense_vars(f"{prefix}/intermediate/dense", self.intermediate))
    variables.update(_dense_vars(f"{prefix}/output/dense", self.output_dense))
    variables.update(_norm_vars(f"{prefix}/output/LayerNorm", self.output_layer_norm))
    return variables


class BertPooler(ConfigLayer):
  """dense + tanh on the first ([CLS]) token of the last layer."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    self.dense = keras.layers.Dense(config.hidden_size, activation="tanh",
                                    kernel_initializer=_initializer(config), name="dense")

  def build(self, input_shape):
    self.dense.build((None, self.config.hidden_size))
    self.built = True

  def call(self, sequence_output):
    """sequence_output: float [batch, seq, hidden] -> float [batch, hidden]."""
    return self.dense(sequence_output[:, 0, :])

  def google_variables(self, prefix="bert/pooler"):
    return _dense_vars(f"{prefix}/dense", self.dense)


class AttentionBias(keras.layers.Layer):
  """input_mask int32 [batch, seq] -> additive float32 bias [batch, 1, seq|1, seq]."""

  def __init__(self, causal=False, **kwargs):
    super().__init__(**kwargs)
    self.causal = causal

  def call(self, input_mask):
    return attention_mask_bias(input_mask, causal=self.causal)

  def get_config(self):
    return {**super().get_config(), "causal": self.causal}


def _encoder_inputs(prefix_shape=(None,)):
  return {name: keras.Input(shape=prefix_shape, dtype="int32", name=name)
          for name in ("input_ids", "input_mask", "segment_ids")}


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
  `pooled_only=True` (the classifier and multiple-choice models): the only output is
  `pooled_output`, and the last layer computes the [CLS] position alone
  (TransformerLayer's first_token_only), the one row the pooler reads. Same weights,
  same checkpoint layout and the same pooled_output up to float rounding, for less work
  (the last layer's other rows are skipped; docs/benchmarks.md counts the FLOPs saved).
  """

  def __init__(self, config, causal=False, pooled_only=False, name="bert", **kwargs):
    if isinstance(config, dict):
      config = BertConfig.from_dict(config)
    inputs = _encoder_inputs()
    embeddings = BertEmbeddings(config, name="embeddings")
    embedding_output = embeddings(inputs["input_ids"], inputs["segment_ids"])
    attention_bias = AttentionBias(causal=causal, name="attention_bias")(inputs["input_mask"])
    hidden = embedding_output
    encoder_outputs = []
    for index in range(config.num_hidden_layers):
      layer = TransformerLayer(config, name=f"layer_{index}")
      if pooled_only and index == config.num_hidden_layers - 1:
        hidden = layer(hidden, attention_bias, first_token_only=True)
      else:
        hidden = layer(hidden, attention_bias)
      encoder_outputs.append(hidden)
    pooled = BertPooler(config, name="pooler")(hidden)
    if pooled_only:
      outputs = {"pooled_output": pooled}
    else:
      outputs = {"sequence_output": hidden, "pooled_output": pooled,
                 "encoder_outputs": encoder_outputs, "embedding_output": embedding_output}
    super().__init__(inputs=inputs, outputs=outputs, name=name, **kwargs)
    self.config = config
    self.causal = causal
    self.pooled_only = pooled_only

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
    return {"config": self.config.to_dict(), "causal": self.causal,
            "pooled_only": self.pooled_only, "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)


# --------------------------------------------------------------------------- heads


class MaskedLMHead(ConfigLayer):
  """transform (dense + activation + LayerNorm), then logits against the tied embeddings."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    self.dense = keras.layers.Dense(
        config.hidden_size, activation=get_activation(config.hidden_act),
        kernel_initializer=_initializer(config), name="dense")
    self.layer_norm = _layer_norm("LayerNorm")

  def build(self, input_shape):
    self.dense.build((None, None, self.config.hidden_size))
    self.layer_norm.build((None, None, self.config.hidden_size))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.config.vocab_size,),
                                       initializer="zeros", autocast=False)
    self.built = True

  def call(self, sequence_output, positions, embedding_table):
    """sequence_output: float [batch, seq, hidden]; positions: int32 [batch, P];
    embedding_table: float [vocab, hidden] -> float32 logits [batch, P, vocab]."""
    gathered = ops.take_along_axis(
        sequence_output, ops.expand_dims(ops.cast(positions, "int32"), -1), axis=1)
    # The LayerNorm gets float32 so that its output stays float32 (Keras casts a
    # LayerNorm's output back to its input's dtype).
    transformed = self.layer_norm(ops.cast(self.dense(gathered), "float32"))
    table = ops.cast(embedding_table, transformed.dtype)
    # One 2-D matmul against the table with transpose_b: the same products as
    # transformed @ table^T, but neither the forward nor the table's gradient
    # ([vocab, hidden], straight from grad^T @ transformed) materialises a transpose of
    # the vocab x hidden table, which cost about as much as the matmul itself on CPU.
    batch, predictions = ops.shape(transformed)[0], ops.shape(transformed)[1]
    flat = tf.reshape(transformed, (-1, self.config.hidden_size))
    logits = tf.reshape(tf.linalg.matmul(flat, table, transpose_b=True),
                        (batch, predictions, self.config.vocab_size)) + self.output_bias
    return ops.cast(logits, "float32")

  def google_variables(self, prefix="cls/predictions"):
    variables = _dense_vars(f"{prefix}/transform/dense", self.dense)
    variables.update(_norm_vars(f"{prefix}/transform/LayerNorm", self.layer_norm))
    variables[f"{prefix}/output_bias"] = self.output_bias
    return variables


class EmbeddingTable(keras.layers.Layer):
  """Exposes an embedding layer's word table as a functional-graph tensor.

  Lets the masked-LM head use the tied embeddings without owning (and so without
  duplicating) the variable.
  """

  def __init__(self, embeddings_layer, **kwargs):
    super().__init__(**kwargs)
    self._table_owner = [embeddings_layer]  # a list: not tracked as a sub-layer

  def call(self, anchor):
    del anchor  # Only ties this layer into the functional graph.
    return self._table_owner[0].word_embeddings


class OutputProjection(ConfigLayer):
  """logits = x · Wᵀ + b with W [num_outputs, hidden], the original's root-scope layout.

  Used by the next-sentence (W [2, H]), classifier (W [num_labels, H]), token-tagging
  and multiple-choice heads; `dropout_rate` is applied to x first (0.1 for fine-tuning,
  none for next-sentence), as in the original.
  """

  def __init__(self, config, num_outputs, dropout_rate=0.0, scope="", **kwargs):
    super().__init__(config, **kwargs)
    self.num_outputs = num_outputs
    self.dropout_rate = dropout_rate
    self.scope = scope
    self.dropout = keras.layers.Dropout(dropout_rate) if dropout_rate else None

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        name="output_weights", shape=(self.num_outputs, self.config.hidden_size),
        initializer=_initializer(self.config))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.num_outputs,),
                                       initializer="zeros")
    self.built = True

  def call(self, x, training=None):
    """x: float [..., hidden] -> float32 [..., num_outputs]."""
    if self.dropout is not None:
      x = self.dropout(x, training=training)
    logits = ops.matmul(x, ops.transpose(ops.cast(self.output_weights, x.dtype)))
    return ops.cast(logits + ops.cast(self.output_bias, x.dtype), "float32")

  def google_variables(self, prefix=None):
    prefix = self.scope if prefix is None else prefix
    join = (lambda name: f"{prefix}/{name}") if prefix else (lambda name: name)
    return {join("output_weights"): self.output_weights,
            join("output_bias"): self.output_bias}

  def get_config(self):
    return {**super().get_config(), "num_outputs": self.num_outputs,
            "dropout_rate": self.dropout_rate, "scope": self.scope}


class SquadHead(ConfigLayer):
  """The SQuAD span head exactly as the original: matmul with output_weights [2, H],
  bias, reshape [batch, seq, 2], transpose [2, batch, seq], unstack into start/end."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        name="output_weights", shape=(2, self.config.hidden_size),
        initializer=_initializer(self.config))
    self.output_bias = self.add_weight(name="output_bias", shape=(2,), initializer="zeros")
    self.built = True

  def call(self, sequence_output):
    """sequence_output: float [batch, seq, hidden] -> (start, end) float32 [batch, seq]."""
    batch, seq = ops.shape(sequence_output)[0], ops.shape(sequence_output)[1]
    hidden = self.config.hidden_size
    flat = ops.reshape(sequence_output, (batch * seq, hidden))
    logits = ops.matmul(flat, ops.transpose(ops.cast(self.output_weights, flat.dtype)))
    logits = logits + ops.cast(self.output_bias, flat.dtype)
    logits = ops.transpose(ops.reshape(logits, (batch, seq, 2)), (2, 0, 1))
    start_logits, end_logits = logits[0], logits[1]
    return ops.cast(start_logits, "float32"), ops.cast(end_logits, "float32")

  def google_variables(self, prefix="cls/squad"):
    return {f"{prefix}/output_weights": self.output_weights,
            f"{prefix}/output_bias": self.output_bias}


# --------------------------------------------------------------------------- models and losses


def _as_config(config):
  return BertConfig.from_dict(config) if isinstance(config, dict) else config


def build_pretraining_model(config, use_next_sentence=True, causal=False):
  """Encoder + masked-LM head (+ next-sentence head).

  Inputs: input_ids, input_mask, segment_ids int32 [batch, seq];
          masked_lm_positions int32 [batch, max_predictions_per_seq].
  Outputs: masked_lm_logits float32 [batch, P, vocab];
           next_sentence_logits float32 [batch, 2] (label 0 = actual next, 1 = random),
           absent when use_next_sentence=False.
  Returns (model, encoder).
  """
  config = _as_config(config)
  encoder = BertModel(config, causal=causal)
  inputs = _encoder_inputs()
  inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32",
                                              name="masked_lm_positions")
  encoded = encoder({k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")})
  table = EmbeddingTable(encoder.embeddings_layer, name="tied_embeddings")(
      inputs["input_ids"])
  outputs = {"masked_lm_logits": MaskedLMHead(config, name="cls_predictions")(
      encoded["sequence_output"], inputs["masked_lm_positions"], table)}
  if use_next_sentence:
    outputs["next_sentence_logits"] = OutputProjection(
        config, 2, scope="cls/seq_relationship", name="cls_seq_relationship")(
            encoded["pooled_output"])
  model = keras.Model(inputs=inputs, outputs=outputs, name="bert_pretraining")
  return model, encoder


def _sparse_cross_entropy(labels, logits):
  """-log softmax(logits)[label], float32 [...]: the original's masked-LM loss as the
  original writes it, -sum(one_hot(label) * log_softmax(logits)). Equal to
  tf.nn.sparse_softmax_cross_entropy_with_logits up to rounding; over a large vocabulary
  on CPU that fused kernel (loss and gradient together) ran slower than log_softmax and
  its gradient, and a gather's gradient (an UnsortedSegmentSum over [batch, P, vocab])
  slower still (docs/benchmarks.md, the small pretraining step's profile)."""
  log_probs = tf.nn.log_softmax(logits, axis=-1)
  one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=log_probs.dtype)
  return -tf.reduce_sum(log_probs * one_hot, axis=-1)


def pretraining_loss(features, outputs, use_next_sentence=True):
  """The original's masked-LM (+ next-sentence) loss, as a training loss_fn.

  Args:
    features: masked_lm_ids int32 [B, P], masked_lm_weights float32 [B, P] (0 on padded
      predictions), next_sentence_labels int32 [B, 1] (0 = actual next, 1 = random).
    outputs: build_pretraining_model's masked_lm_logits float32 [B, P, vocab] and
      next_sentence_logits float32 [B, 2].
    use_next_sentence: add the next-sentence loss (False for --no_nsp / --ltr).
  Returns:
    per_example_loss float32 [B] whose global-batch mean is masked_lm_loss (+
    next_sentence_loss). The masked-LM part is normalised by the label-weight sum of the
    GLOBAL batch (cross_replica_sum; + MLM_DENOMINATOR_EPSILON once), so it does not
    depend on the number of replicas. metrics {name: (numerator, denominator)} float32
    scalars summed over this batch: masked_lm_accuracy, masked_lm_loss (over the label
    weights), next_sentence_accuracy, next_sentence_loss (over the examples).
  """
  logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
  label_ids = tf.cast(features["masked_lm_ids"], tf.int32)
  weights = tf.cast(features["masked_lm_weights"], tf.float32)
  nll = _sparse_cross_entropy(label_ids, logits)
  batch = tf.cast(tf.shape(label_ids)[0], tf.float32)
  global_batch = cross_replica_sum(batch)
  denominator = cross_replica_sum(tf.reduce_sum(weights)) + MLM_DENOMINATOR_EPSILON
  per_example = tf.reduce_sum(weights * nll, axis=1) * global_batch / denominator
  metrics = {
      "masked_lm_accuracy": (tf.reduce_sum(weights * _correct(logits, label_ids)),
                             tf.reduce_sum(weights)),
      "masked_lm_loss": (tf.reduce_sum(weights * nll), tf.reduce_sum(weights)),
  }
  if use_next_sentence:
    ns_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
    ns_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    ns_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ns_labels,
                                                            logits=ns_logits)
    per_example += ns_nll
    metrics["next_sentence_accuracy"] = (
        tf.reduce_sum(_correct(ns_logits, ns_labels)), batch)
    metrics["next_sentence_loss"] = (tf.reduce_sum(ns_nll), batch)
  return per_example, metrics


def build_classifier_model(config, num_labels, causal=False, dropout_rate=0.1):
  """Encoder + dropout + output_weights [num_labels, H] on the pooled output.

  Outputs: logits float32 [batch, num_labels] (num_labels=1 for regression). The same
  model serves softmax classification (classifier_loss) and multi-label classification
  (multi_label_loss: one sigmoid per label). The encoder is pooled_only: its last layer
  computes [CLS] alone. Returns (model, encoder).
  """
  config = _as_config(config)
  encoder = BertModel(config, causal=causal, pooled_only=True)
  inputs = _encoder_inputs()
  pooled = encoder(inputs)["pooled_output"]
  logits = OutputProjection(config, num_labels, dropout_rate=dropout_rate,
                            name="classifier")(pooled)
  return keras.Model(inputs=inputs, outputs={"logits": logits},
                     name="bert_classifier"), encoder


def classifier_loss(features, outputs, regression=False):
  """The classifier's loss: softmax cross-entropy, or squared error for regression.

  Args:
    features: label_ids [B], int32 class ids (float32 scores when regression).
    outputs: build_classifier_model's logits float32 [B, num_labels] (num_labels 1 for
      regression).
  Returns:
    per_example_loss float32 [B]; metrics {"accuracy": (correct, B)}, or for regression
    {"mse": (sum of squared errors, B)}, float32 scalars summed over the batch.
  """
  logits = tf.cast(outputs["logits"], tf.float32)
  count = tf.cast(tf.shape(logits)[0], tf.float32)
  if regression:
    # STS-B: one output, squared error against the 0-5 score.
    per_example = tf.square(logits[:, 0] - tf.cast(features["label_ids"], tf.float32))
    return per_example, {"mse": (tf.reduce_sum(per_example), count)}
  labels = tf.cast(features["label_ids"], tf.int32)
  per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  return per_example, {"accuracy": (tf.reduce_sum(_correct(logits, labels)), count)}


def multi_label_loss(features, outputs, threshold=0.5):
  """The multi-label classifier's loss: one sigmoid per label, on build_classifier_model
  (the same head and weights, output_weights [num_labels, H]; only the loss differs).

  Args:
    features: label_ids float32 [B, num_labels], 1 where the example has the label.
    outputs: build_classifier_model's logits float32 [B, num_labels].
    threshold: a label is predicted where its probability is >= threshold.
  Returns:
    per_example_loss float32 [B]: the mean over labels of the sigmoid cross-entropy
    (Hugging Face's BCEWithLogitsLoss per example); metrics {"accuracy": (examples whose
    predicted label set is exactly right, B)} float32 scalars summed over the batch.
  """
  logits = tf.cast(outputs["logits"], tf.float32)
  labels = tf.cast(features["label_ids"], tf.float32)
  per_example = tf.reduce_mean(
      tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits), axis=-1)
  predicted = tf.cast(tf.sigmoid(logits) >= threshold, tf.float32)
  exact = tf.cast(tf.reduce_all(tf.equal(predicted, labels), axis=-1), tf.float32)
  return per_example, {"accuracy": (tf.reduce_sum(exact),
                                    tf.cast(tf.shape(logits)[0], tf.float32))}


def build_squad_model(config, causal=False):
  """Encoder + SQuAD span head. Outputs: start_logits, end_logits float32 [batch, seq]."""
  config = _as_config(config)
  encoder = BertModel(config, causal=causal)
  inputs = _encoder_inputs()
  start_logits, end_logits = SquadHead(config, name="cls_squad")(
      encoder(inputs)["sequence_output"])
  return keras.Model(inputs=inputs,
                     outputs={"start_logits": start_logits, "end_logits": end_logits},
                     name="bert_squad"), encoder


def squad_loss(features, outputs):
  """The original's SQuAD loss: the mean of the start and end cross-entropies.

  Args:
    features: start_positions, end_positions int32 [B] (token indices; 0 = [CLS], the
      no-answer position of SQuAD 2.0).
    outputs: build_squad_model's start_logits, end_logits float32 [B, S].
  Returns:
    per_example_loss float32 [B]; metrics start_accuracy, end_accuracy as
    (correct, B) float32 scalars summed over the batch.
  """
  losses, metrics = [], {}
  for name in ("start", "end"):
    logits = tf.cast(outputs[f"{name}_logits"], tf.float32)
    positions = tf.cast(features[f"{name}_positions"], tf.int32)
    losses.append(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=positions,
                                                                 logits=logits))
    metrics[f"{name}_accuracy"] = (tf.reduce_sum(_correct(logits, positions)),
                                   tf.cast(tf.size(positions), tf.float32))
  return (losses[0] + losses[1]) / 2.0, metrics


def build_token_classifier_model(config, num_labels, causal=False, dropout_rate=0.1):
  """Encoder + per-token output layer. Outputs: logits float32 [batch, seq, num_labels]."""
  config = _as_config(config)
  encoder = BertModel(config, causal=causal)
  inputs = _encoder_inputs()
  logits = OutputProjection(config, num_labels, dropout_rate=dropout_rate,
                            name="token_classifier")(encoder(inputs)["sequence_output"])
  return keras.Model(inputs=inputs, outputs={"logits": logits},
                     name="bert_token_classifier"), encoder


def token_classification_loss(features, outputs):
  """Each window's mean cross-entropy over its labelled positions (first WordPieces).

  Args:
    features: label_ids int32 [B, S], -1 where a position carries no label.
    outputs: build_token_classifier_model's logits float32 [B, S, num_labels].
  Returns:
    per_example_loss float32 [B] (0 for a window without labels); metrics
    {"accuracy": (correct labelled positions, labelled positions)} float32 scalars
    summed over the batch.
  """
  logits = tf.cast(outputs["logits"], tf.float32)
  labels = tf.cast(features["label_ids"], tf.int32)
  weights = tf.cast(labels >= 0, tf.float32)
  safe_labels = tf.maximum(labels, 0)
  token_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=safe_labels,
                                                              logits=logits)
  count = tf.reduce_sum(weights, axis=-1)
  per_example = tf.reduce_sum(token_loss * weights, axis=-1) / tf.maximum(count, 1.0)
  correct = _correct(logits, safe_labels) * weights
  return per_example, {"accuracy": (tf.reduce_sum(correct), tf.reduce_sum(weights))}


class _FoldChoices(keras.layers.Layer):
  """[batch, choices, seq] -> [batch * choices, seq] so the encoder sees plain pairs."""

  def call(self, x):
    return ops.reshape(x, (-1, ops.shape(x)[-1]))


class _UnfoldChoices(keras.layers.Layer):
  """[batch * choices, 1] -> [batch, choices]."""

  def __init__(self, num_choices, **kwargs):
    super().__init__(**kwargs)
    self.num_choices = num_choices

  def call(self, x):
    return ops.reshape(x, (-1, self.num_choices))

  def get_config(self):
    return {**super().get_config(), "num_choices": self.num_choices}


def build_multiple_choice_model(config, num_choices, causal=False, dropout_rate=0.1):
  """SWAG-style multiple choice: one score per (context, ending) pair from [CLS].

  Inputs: input_ids, input_mask, segment_ids int32 [batch, num_choices, seq].
  Outputs: logits float32 [batch, num_choices] (softmax over choices in the loss).
  """
  config = _as_config(config)
  encoder = BertModel(config, causal=causal, pooled_only=True)
  inputs = _encoder_inputs(prefix_shape=(num_choices, None))
  fold = _FoldChoices(name="fold_choices")
  pooled = encoder({k: fold(v) for k, v in inputs.items()})["pooled_output"]
  scores = OutputProjection(config, 1, dropout_rate=dropout_rate,
                            name="choice_classifier")(pooled)
  logits = _UnfoldChoices(num_choices, name="unfold_choices")(scores)
  return keras.Model(inputs=inputs, outputs={"logits": logits},
                     name="bert_multiple_choice"), encoder


def multiple_choice_loss(features, outputs):
  """Softmax cross-entropy over the choices (SWAG).

  Args:
    features: label_ids int32 [B], the index of the right choice.
    outputs: build_multiple_choice_model's logits float32 [B, num_choices].
  Returns:
    per_example_loss float32 [B]; metrics {"accuracy": (correct, B)} float32 scalars
    summed over the batch.
  """
  logits = tf.cast(outputs["logits"], tf.float32)
  labels = tf.cast(features["label_ids"], tf.int32)
  loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  return loss, {"accuracy": (tf.reduce_sum(_correct(logits, labels)),
                             tf.cast(tf.size(labels), tf.float32))}


def find_encoder(model):
  """The BertModel inside `model` (or `model` itself)."""
  if isinstance(model, BertModel):
    return model
  for layer in model.layers:
    if isinstance(layer, BertModel):
      return layer
  raise ValueError(f"model {model.name!r} holds no BertModel")


def google_variable_map(model):
  """{Google TF1 checkpoint name: variable} for the encoder and every head in `model`."""
  encoder = find_encoder(model)
  variables = encoder.google_variables()
  if model is encoder:
    return variables
  for layer in model.layers:
    if isinstance(layer, (MaskedLMHead, SquadHead, OutputProjection)):
      for name, variable in layer.google_variables().items():
        if name in variables:
          raise ValueError(f"two weights of {model.name!r} map to checkpoint name {name}")
        variables[name] = variable
  return variables


CUSTOM_OBJECTS = {cls.__name__: cls for cls in (
    BertModel, BertEmbeddings, TransformerLayer, BertPooler, AttentionBias, MaskedLMHead,
    EmbeddingTable, OutputProjection, SquadHead, _FoldChoices, _UnfoldChoices)}
