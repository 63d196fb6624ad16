"""Training steps of the tests' own under a tf.distribute strategy, and the small shape and
pretraining batch they train on (tests/training/test_precision.py, in-process and in the
fresh interpreter its two-replica test starts)."""
import numpy as np
import tensorflow as tf

from bert import optimization
import tiny

# Shape keys only: the two-replica test adds its own dropout values.
CONFIG = dict(tiny.TINY_SHAPE, vocab_size=53, max_position_embeddings=16, type_vocab_size=2)
BATCH, SEQ, PREDICTIONS = 4, 9, 3


def pretraining_batch(batch=BATCH, seed=0):
  """A random pretraining batch (inputs, labels) of the tiny shape, one row padded."""
  rng = np.random.default_rng(seed)
  mask = np.ones((batch, SEQ), "int32")
  mask[1, 5:] = 0
  return (
      {"input_ids": rng.integers(1, CONFIG["vocab_size"], (batch, SEQ)).astype("int32"),
       "input_mask": mask,
       "segment_ids": np.repeat([[0] * 5 + [1] * 4], batch, 0).astype("int32"),
       "masked_lm_positions": rng.integers(1, 5, (batch, PREDICTIONS)).astype("int32")},
      {"masked_lm_ids": rng.integers(1, CONFIG["vocab_size"],
                                     (batch, PREDICTIONS)).astype("int32"),
       "masked_lm_weights": np.array([[1, 1, 0]] * batch, "float32"),
       "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32")})


def train_steps(strategy, model, optimizer, loss_fn, dataset_fn, global_batch, steps):
  """`steps` optimizer steps with a strategy.run step of this test's own that mirrors
  bert/training/loop.py's: forward, loss_fn, the loss averaged over the GLOBAL batch
  (tf.nn.compute_average_loss), gradients summed over the replicas, clipped to global
  norm 1.0, applied. dataset_fn(context) batches to the per-replica size.
  Returns the per-step losses (floats); the model's weights are updated."""
  variables = model.trainable_variables
  names = [t.name for t in model.inputs]
  optimizer.gradients_are_reduced = True  # this step sums over replicas itself
  with strategy.scope():
    optimizer.build(variables)  # slots now, not inside the replicated tf.function

  def step(features):
    with tf.GradientTape() as tape:
      outputs = model({k: features[k] for k in names}, training=True)
      per_example, _ = loss_fn(features, outputs)
      loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)  # dense slices
             for g, v in zip(tape.gradient(loss, variables), variables)]
    context = tf.distribute.get_replica_context()
    if context.num_replicas_in_sync > 1:
      grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    grads, _ = optimization.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  @tf.function
  def run(iterator):
    return strategy.reduce(tf.distribute.ReduceOp.SUM,
                           strategy.run(step, args=(next(iterator),)), axis=None)

  iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
  return [float(run(iterator)) for _ in range(steps)]
