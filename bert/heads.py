"""The task heads on the BERT encoder, each model's build_* function and its loss.

Each head keeps its weights in the layout of Google's TF1 checkpoints and names them
(`google_variables()`), so `modeling.google_variable_map` finds every weight of a model.
Each loss takes (features, outputs) and returns (per_example_loss [B], {metric:
(numerator, denominator)}), in float32 whatever the model's precision policy.

Each build_* takes `dtype`, the Keras dtype policy (or its name: "float32",
"mixed_bfloat16", "mixed_float16") of every layer it creates, the encoder's included (as
modeling.BertModel takes it); None: Keras' global policy. The logits are float32 under
every policy."""

import keras
from keras import ops
import tensorflow as tf

from bert import modeling
from bert import modeling_config


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


# --------------------------------------------------------------------------- heads


class MaskedLMHead(modeling.ConfigLayer):
  """transform (dense + activation + LayerNorm), then logits against the tied embeddings."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)
    self.dense = keras.layers.Dense(
        config.hidden_size, activation=modeling.get_activation(config.hidden_act),
        kernel_initializer=modeling.initializer(config), name="dense",
        dtype=self.dtype_policy)
    self.layer_norm = modeling.layer_norm("LayerNorm")

  def build(self, input_shape):
    self.dense.build((None, None, self.config.hidden_size))
    self.layer_norm.build((None, None, self.config.hidden_size))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.config.vocab_size,),
                                       initializer="zeros", autocast=False)
    self.built = True

  def call(self, sequence_output, positions, embedding_table):
    """sequence_output: float [batch, seq, hidden]; positions: int32 [batch, P];
    embedding_table: float [vocab, hidden] -> float32 logits [batch, P, vocab]."""
    _check_positions(positions, sequence_output)
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
    variables = modeling.dense_variables(f"{prefix}/transform/dense", self.dense)
    variables.update(modeling.norm_variables(f"{prefix}/transform/LayerNorm", self.layer_norm))
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


class OutputProjection(modeling.ConfigLayer):
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
    self.dropout = (modeling.Dropout(dropout_rate, dtype=self.dtype_policy) if dropout_rate
                    else None)

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        name="output_weights", shape=(self.num_outputs, self.config.hidden_size),
        initializer=modeling.initializer(self.config))
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


class SquadHead(modeling.ConfigLayer):
  """The SQuAD span head exactly as the original: matmul with output_weights [2, H],
  bias, reshape [batch, seq, 2], transpose [2, batch, seq], unstack into start/end."""

  def __init__(self, config, **kwargs):
    super().__init__(config, **kwargs)

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        name="output_weights", shape=(2, self.config.hidden_size),
        initializer=modeling.initializer(self.config))
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


# --------------------------------------------------------------------------- models, losses


def _check_positions(positions, sequence_output):
  """masked_lm_positions index the rows of the sequence: a ValueError naming the value
  and the length when one does not (eagerly only: a traced graph gains no op)."""
  value = modeling.concrete_value(positions)
  seq = (modeling.static_shape(sequence_output) or (None, None))[1]
  if value is None or value.size == 0 or seq is None:
    return
  low, high = int(value.min()), int(value.max())
  if low < 0 or high >= seq:
    raise ValueError(f"masked_lm_positions holds {low if low < 0 else high}; the inputs "
                     f"have {seq} positions per row, so each must be in [0, {seq - 1}]")


def _check_count(name, value):
  """num_labels, num_choices: a whole number >= 1."""
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ValueError(f"{name}={value!r}: must be a whole number >= 1")


def _as_config(config):
  return modeling.BertConfig.from_dict(config) if isinstance(config, dict) else config


def _model(inputs, outputs, name, dtype):
  """The functional model of a build_*; given a dtype, it reports that policy as the
  encoder does (a functional model ignores a dtype argument)."""
  model = keras.Model(inputs=inputs, outputs=outputs, name=name)
  if dtype is not None:
    model.dtype_policy = dtype
  return model


def build_pretraining_model(config, use_next_sentence=True, causal=False, packed=False,
                            dtype=None):
  """Encoder + masked-LM head (+ next-sentence head).

  Inputs: input_ids, input_mask, segment_ids int32 [batch, seq];
          masked_lm_positions int32 [batch, max_predictions_per_seq].
  Outputs: masked_lm_logits float32 [batch, P, vocab];
           next_sentence_logits float32 [batch, 2] (label 0 = actual next, 1 = random),
           absent when use_next_sentence=False.
  packed=True (rows of several sequences, create_pretraining_data.py --pack_sequences):
  the inputs add position_ids and sequence_ids (modeling.PACKED_INPUTS) and
  next_sentence_positions int32 [batch, K], the [CLS] position of each sequence; the
  pooler and the next-sentence head read each of them: next_sentence_logits float32
  [batch, K, 2]. The weights and their names are the same.
  Returns (model, encoder).
  """
  config = _as_config(config)
  encoder = modeling.BertModel(config, causal=causal, packed=packed, dtype=dtype)
  inputs = modeling.encoder_inputs(packed=packed)
  inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32",
                                              name="masked_lm_positions")
  if packed and use_next_sentence:
    inputs["next_sentence_positions"] = keras.Input(shape=(None,), dtype="int32",
                                                    name="next_sentence_positions")
  encoded = encoder({t.name: inputs[t.name] for t in encoder.inputs})
  table = EmbeddingTable(encoder.embeddings_layer, name="tied_embeddings", dtype=dtype)(
      inputs["input_ids"])
  outputs = {"masked_lm_logits": MaskedLMHead(config, name="cls_predictions", dtype=dtype)(
      encoded["sequence_output"], inputs["masked_lm_positions"], table)}
  if use_next_sentence:
    pooled = encoded["pooled_output"]
    if packed:  # the pooler again (its own weights) on each sequence's [CLS]
      pooled = encoder.get_layer("pooler")(encoded["sequence_output"],
                                           inputs["next_sentence_positions"])
    outputs["next_sentence_logits"] = OutputProjection(
        config, 2, scope="cls/seq_relationship", name="cls_seq_relationship",
        dtype=dtype)(pooled)
  model = _model(inputs, outputs, "bert_pretraining", dtype)
  return model, encoder


def is_packed(model):
  """True for a model built for packed rows (its encoder's position_ids/sequence_ids)."""
  return modeling.find_encoder(model).packed


def rebuild_for_rows(model, packed):
  """`model` built again, in float32, for packed rows or for one sequence a row.

  The two forms hold the same weights under the same Google names, but their Keras object
  graphs differ (the packed encoder has two more inputs), so an object checkpoint of one
  restores only into a model of the same form. Takes an encoder (modeling.BertModel) or a
  build_pretraining_model model; returns None for any other model (a fine-tuning head's,
  which has no packed form).
  """
  encoder = modeling.find_encoder(model)
  if packed and encoder.causal:  # a left-to-right model has no packed form
    return None
  if model is encoder:
    return modeling.BertModel(encoder.config, causal=encoder.causal,
                              pooled_only=encoder.pooled_only, packed=packed,
                              name=encoder.name, dtype="float32")
  names = {layer.name for layer in model.layers
           if not isinstance(layer, keras.layers.InputLayer)}
  if "cls_predictions" not in names or not names <= {
      encoder.name, "pooler", "tied_embeddings", "cls_predictions", "cls_seq_relationship"}:
    return None
  return build_pretraining_model(
      encoder.config, use_next_sentence="cls_seq_relationship" in names,
      causal=encoder.causal, packed=packed, dtype="float32")[0]


def _sparse_cross_entropy(labels, logits):
  """-log softmax(logits)[label], float32 [...]: the original's masked-LM loss as the
  original writes it, -sum(one_hot(label) * log_softmax(logits)). Equal to
  tf.nn.sparse_softmax_cross_entropy_with_logits up to rounding; over a large vocabulary
  on CPU that fused kernel (loss and gradient together) ran slower than log_softmax and
  its gradient, and a gather's gradient (an UnsortedSegmentSum over [batch, P, vocab])
  slower still (docs/benchmarks_history.md, the small pretraining step's profile)."""
  log_probs = tf.nn.log_softmax(logits, axis=-1)
  one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=log_probs.dtype)
  return -tf.reduce_sum(log_probs * one_hot, axis=-1)


def pretraining_loss(features, outputs, use_next_sentence=True):
  """The original's masked-LM (+ next-sentence) loss, as a training loss_fn.

  Args:
    features: masked_lm_ids int32 [B, P], masked_lm_weights float32 [B, P] (0 on padded
      predictions), next_sentence_labels int32 [B, 1] (0 = actual next, 1 = random);
      packed rows: next_sentence_labels and next_sentence_weights [B, K], one slot per
      sequence, and the next-sentence part is a mean over the sequences.
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
  if use_next_sentence and "next_sentence_weights" in features:
    # Packed rows: one label per sequence, [B, K], weight 0 on the empty slots. The loss
    # is a mean over the sequences of the global batch, as over the rows unpacked.
    ns_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)     # [B, K, 2]
    ns_labels = tf.cast(features["next_sentence_labels"], tf.int32)      # [B, K]
    ns_weights = tf.cast(features["next_sentence_weights"], tf.float32)  # [B, K]
    ns_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ns_labels,
                                                            logits=ns_logits)
    sequences = cross_replica_sum(tf.reduce_sum(ns_weights))
    per_example += tf.reduce_sum(ns_weights * ns_nll, axis=1) * global_batch / tf.maximum(
        sequences, 1.0)
    metrics["next_sentence_accuracy"] = (
        tf.reduce_sum(ns_weights * _correct(ns_logits, ns_labels)), tf.reduce_sum(ns_weights))
    metrics["next_sentence_loss"] = (tf.reduce_sum(ns_weights * ns_nll),
                                     tf.reduce_sum(ns_weights))
  elif use_next_sentence:
    ns_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
    ns_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    ns_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ns_labels,
                                                            logits=ns_logits)
    per_example += ns_nll
    metrics["next_sentence_accuracy"] = (
        tf.reduce_sum(_correct(ns_logits, ns_labels)), batch)
    metrics["next_sentence_loss"] = (tf.reduce_sum(ns_nll), batch)
  return per_example, metrics


def build_classifier_model(config, num_labels, causal=False,
                           dropout_rate=modeling_config.HEAD_DROPOUT_RATE, dtype=None):
  """Encoder + dropout + output_weights [num_labels, H] on the pooled output.

  Outputs: logits float32 [batch, num_labels] (num_labels=1 for regression). The same
  model serves softmax classification (classifier_loss) and multi-label classification
  (multi_label_loss: one sigmoid per label). The encoder is pooled_only: its last layer
  computes [CLS] alone. Returns (model, encoder).
  """
  config = _as_config(config)
  _check_count("num_labels", num_labels)
  encoder = modeling.BertModel(config, causal=causal, pooled_only=True, dtype=dtype)
  inputs = modeling.encoder_inputs()
  pooled = encoder(inputs)["pooled_output"]
  logits = OutputProjection(config, num_labels, dropout_rate=dropout_rate,
                            name="classifier", dtype=dtype)(pooled)
  return _model(inputs, {"logits": logits}, "bert_classifier", dtype), encoder


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


def multi_label_loss(features, outputs, threshold):
  """The multi-label classifier's loss: one sigmoid per label, on build_classifier_model
  (the same head and weights, output_weights [num_labels, H]; only the loss differs).

  Args:
    features: label_ids float32 [B, num_labels], 1 where the example has the label.
    outputs: build_classifier_model's logits float32 [B, num_labels].
    threshold: a label is predicted where its probability is >= threshold (the task's:
      multilabel_data.THRESHOLD unless --threshold says otherwise).
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


def build_squad_model(config, causal=False, dtype=None):
  """Encoder + SQuAD span head. Outputs: start_logits, end_logits float32 [batch, seq]."""
  config = _as_config(config)
  encoder = modeling.BertModel(config, causal=causal, dtype=dtype)
  inputs = modeling.encoder_inputs()
  start_logits, end_logits = SquadHead(config, name="cls_squad", dtype=dtype)(
      encoder(inputs)["sequence_output"])
  return _model(inputs, {"start_logits": start_logits, "end_logits": end_logits},
                "bert_squad", dtype), encoder


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


def build_token_classifier_model(config, num_labels, causal=False,
                                 dropout_rate=modeling_config.HEAD_DROPOUT_RATE,
                                 dtype=None):
  """Encoder + per-token output layer. Outputs: logits float32 [batch, seq, num_labels]."""
  config = _as_config(config)
  _check_count("num_labels", num_labels)
  encoder = modeling.BertModel(config, causal=causal, dtype=dtype)
  inputs = modeling.encoder_inputs()
  logits = OutputProjection(config, num_labels, dropout_rate=dropout_rate,
                            name="token_classifier", dtype=dtype)(
                                encoder(inputs)["sequence_output"])
  return _model(inputs, {"logits": logits}, "bert_token_classifier", dtype), encoder


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


def build_multiple_choice_model(config, num_choices, causal=False,
                                dropout_rate=modeling_config.HEAD_DROPOUT_RATE,
                                dtype=None):
  """SWAG-style multiple choice: one score per (context, ending) pair from [CLS].

  Inputs: input_ids, input_mask, segment_ids int32 [batch, num_choices, seq].
  Outputs: logits float32 [batch, num_choices] (softmax over choices in the loss).
  """
  config = _as_config(config)
  _check_count("num_choices", num_choices)
  encoder = modeling.BertModel(config, causal=causal, pooled_only=True, dtype=dtype)
  inputs = modeling.encoder_inputs(prefix_shape=(num_choices, None))
  fold = _FoldChoices(name="fold_choices", dtype=dtype)
  pooled = encoder({k: fold(v) for k, v in inputs.items()})["pooled_output"]
  scores = OutputProjection(config, 1, dropout_rate=dropout_rate,
                            name="choice_classifier", dtype=dtype)(pooled)
  logits = _UnfoldChoices(num_choices, name="unfold_choices", dtype=dtype)(scores)
  return _model(inputs, {"logits": logits}, "bert_multiple_choice", dtype), encoder


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


# Every layer of this module and of the encoder by class name, for keras.saving.
CUSTOM_OBJECTS = {**modeling.CUSTOM_OBJECTS, **{cls.__name__: cls for cls in (
    MaskedLMHead, EmbeddingTable, OutputProjection, SquadHead, _FoldChoices, _UnfoldChoices)}}
