"""The BERT model: the Keras 3 encoder's layers, the model, and Google's variable names.

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
The task heads, each model's build_* function and its loss are in heads.py; the config
(bert_config.json) is in modeling_config.py and the ops the layers are made of in
modeling_ops.py, whose names this module gives too.

Like the original, the encoder layers run every dense layer on [batch·seq, width]
matrices: on that layout TensorFlow fuses each matmul with its bias (and, with oneDNN,
with the GELU) into one CPU op, in float32 and in bfloat16
(tests/core/test_modeling_cpu_graph.py reads the optimized graph). Every op is one any
device runs: a graph traced on a CPU (an export) runs as it is on a GPU or a TPU.

Mixed precision goes through Keras dtype policies, given to the model as keras-hub's
BertBackbone takes them: `BertModel(config, dtype="mixed_bfloat16")` (and each heads.build_*)
passes the policy to every layer it creates; dtype=None takes Keras' global policy as
every Keras layer does. The matmuls then run in bfloat16/float16,
while the embedding sums, every LayerNorm (input and output), the residual sums, the
attention softmax and the losses stay float32, and every head returns float32 logits
(tests/training/test_precision.py checks the traced graph). One rounding remains: Keras
casts a mixed layer's float inputs to its compute dtype before its call, so the hidden
states each TransformerLayer adds back to its attention output arrive rounded to
bfloat16/float16, although the sum itself is float32.
"""

import math

import keras
from keras import ops
import tensorflow as tf

# The config and the ops the layers are made of live in their own modules; their names
# are re-exported here, so `from bert import modeling` (and the original's
# `import modeling`) gives them as before.
from bert.modeling_config import ACTIVATIONS  # noqa: F401
from bert.modeling_config import REQUIRED_CONFIG_KEYS  # noqa: F401
from bert.modeling_config import BertConfig
from bert.modeling_ops import ENCODER_INPUT_NAMES  # noqa: F401
from bert.modeling_ops import PACKED_INPUTS  # noqa: F401
from bert.modeling_ops import Dropout
from bert.modeling_ops import LayerNorm
from bert.modeling_ops import attention_mask_bias
from bert.modeling_ops import check_encoder_inputs
from bert.modeling_ops import check_input_shapes_in_graph
from bert.modeling_ops import concrete_value  # noqa: F401
from bert.modeling_ops import dense_2d
from bert.modeling_ops import dense_variables
from bert.modeling_ops import encoder_inputs
from bert.modeling_ops import gelu  # noqa: F401
from bert.modeling_ops import gelu_exact  # noqa: F401
from bert.modeling_ops import get_activation
from bert.modeling_ops import initializer
from bert.modeling_ops import layer_norm
from bert.modeling_ops import norm_variables
from bert.modeling_ops import packed_attention_bias
from bert.modeling_ops import static_shape  # noqa: F401

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
    # would be frozen into a constant and missing from the checkpoint.
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
    # The original's shape names: B batch, F from_seq (the queries' positions: seq, or 1
    # with first_token_only), T to_seq (the keys': seq), N heads, H head size.
    h, dtype = self.config.hidden_size, self.compute_dtype
    batch, seq = ops.shape(hidden_states)[0], ops.shape(hidden_states)[1]
    rows = ops.reshape(hidden_states, (-1, h))  # [batch·seq, hidden]
    inputs = ops.cast(rows, dtype)  # one cast for the three projections
    query_rows, query_inputs, query_seq = rows, inputs, seq
    if first_token_only:  # [CLS]'s query row, and its row of a causal mask
      query_rows = hidden_states[:, 0, :]
      query_inputs, query_seq = ops.cast(query_rows, dtype), 1
      attention_bias = attention_bias[:, :, :1, :]
    # `query_rows` = [B*F, N*H]
    # `q` = [B*F, N*H] -> [B, N, F, H]
    q = self._split_heads(dense_2d(self.query, query_inputs), batch, query_seq)
    # `k` = [B*T, N*H] -> [B, N, T, H]
    k = self._split_heads(dense_2d(self.key, inputs), batch, seq)
    # `v` = [B*T, N*H] -> [B, N, T, H]
    v = self._split_heads(dense_2d(self.value, inputs), batch, seq)
    # Scale and mask in the matmul's dtype, so that oneDNN fuses both into the batch
    # matmul. The mask loses nothing there: allowed positions add exactly 0, and a
    # masked score near -10000 is exp() = 0 in any float type.
    # `scores` = [B, N, F, T]
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(float(self.head_size)))
    # `attention_bias` = [B, 1, F, T] (or [B, 1, 1, T]: one row for every query)
    scores = scores + ops.cast(attention_bias, dtype)
    # The softmax in float32: its sum over a row in bfloat16/float16 would lose precision.
    # `probs` = [B, N, F, T]
    probs = ops.softmax(ops.cast(scores, "float32"), axis=-1)
    probs = self.attention_dropout(ops.cast(probs, dtype), training=training)
    # `context` = [B, N, F, H] -> [B, F, N, H] -> [B*F, N*H]
    context = ops.reshape(ops.transpose(tf.matmul(probs, v), (0, 2, 1, 3)), (-1, h))
    # `attention` = [B*F, N*H]
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
  (the last layer's other rows are skipped; docs/benchmarks_history.md counts the FLOPs saved).
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
