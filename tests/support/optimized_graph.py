"""The CPU graph TensorFlow runs for a tf.function, after grappler's rewrites and oneDNN's
op rewriting: op type, fused ops, dtype and name of every node.

Run as a script (the oneDNN setting is read once, when TensorFlow starts, so each setting
needs a process of its own), `python tests/support/optimized_graph.py` prints, as one JSON
object, the nodes of one tiny encoder layer's call for each variant in VARIANTS and of a
whole tiny encoder for each of ENCODER_VARIANTS (`every_variant()`: the same, read in a
process whose TensorFlow started with the setting wanted).
"""
import json
import os
import sys


# name -> (Keras dtype policy, hidden_act, training)
VARIANTS = {
    "float32": ("float32", "gelu", False),
    "float32 gelu_exact": ("float32", "gelu_exact", False),
    "bfloat16": ("mixed_bfloat16", "gelu", False),
    "float32 training": ("float32", "gelu", True),
}


def optimized_nodes(function, *args):
  """[(op, fused_ops, dtype, name)] of every node TensorFlow ran for function(*args)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
  context.context().enable_run_metadata()
  try:
    # What was collected before (eager ops of the calls that built the layer) is dropped.
    context.context().export_run_metadata()
    function(*args)
    metadata = context.context().export_run_metadata()
  finally:
    context.context().disable_run_metadata()
  nodes = []
  for graph in metadata.function_graphs:
    for partition in graph.partition_graphs:
      for node in partition.node:
        fused = ([op.decode() for op in node.attr["fused_ops"].list.s]
                 if "fused_ops" in node.attr else [])
        dtype = (tf.dtypes.as_dtype(node.attr["T"].type).name
                 if "T" in node.attr and node.attr["T"].type else "")
        nodes.append((node.op, fused, dtype, node.name))
  return nodes


def layer_nodes(policy, hidden_act, training):
  """The nodes of one TransformerLayer's call (tiny config; backward too when training)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  import tiny  # pylint: disable=g-import-not-at-top
  layer = modeling.TransformerLayer(tiny.tiny_config(50, hidden_act=hidden_act), dtype=policy)
  hidden = tf.random.normal([2, 7, 32])
  bias = modeling.attention_mask_bias(tf.constant([[1] * 7, [1] * 5 + [0] * 2]))
  layer(hidden, bias)

  # Batch and sequence unknown, as in prediction (each batch padded to its longest row):
  # with static shapes constant folding would leave other ops than a real run's.
  @tf.function(input_signature=[tf.TensorSpec([None, None, 32], tf.float32),
                                tf.TensorSpec([None, 1, None, None], tf.float32)])
  def call(hidden, bias):
    if not training:
      return layer(hidden, bias)
    # The backward graph to read, not a training step: no optimizer, no update.
    loss = tf.reduce_sum(tf.cast(layer(hidden, bias, training=True), tf.float32))
    return tf.gradients(loss, layer.trainable_variables)

  return optimized_nodes(call, hidden, bias)


ENCODER_LAYERS = 3
# name -> Keras dtype policy
ENCODER_VARIANTS = {"encoder float32": "float32", "encoder bfloat16": "mixed_bfloat16"}


def encoder_nodes(policy):
  """The nodes of a whole tiny encoder's forward pass (three layers sharing one attention
  bias), batch and sequence unknown, as prediction traces it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  import tiny  # pylint: disable=g-import-not-at-top
  encoder = modeling.BertModel(tiny.tiny_config(50, num_hidden_layers=ENCODER_LAYERS),
                               dtype=policy)
  ids = tf.constant([[5, 6, 7, 8], [9, 10, 0, 0]])
  mask = tf.constant([[1, 1, 1, 1], [1, 1, 0, 0]])
  encoder({"input_ids": ids, "input_mask": mask, "segment_ids": tf.zeros_like(ids)})
  spec = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[spec, spec])
  def call(ids, mask):
    return encoder({"input_ids": ids, "input_mask": mask, "segment_ids": tf.zeros_like(ids)},
                   training=False)["sequence_output"]

  return optimized_nodes(call, ids, mask)


def every_variant():
  """{variant: its nodes} of every variant of VARIANTS and ENCODER_VARIANTS, as JSON
  holds them (what the script prints)."""
  return json.loads(json.dumps(
      {**{name: layer_nodes(*variant) for name, variant in VARIANTS.items()},
       **{name: encoder_nodes(policy) for name, policy in ENCODER_VARIANTS.items()}}))


if __name__ == "__main__":
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__)))))
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  print(json.dumps(every_variant()))
