"""Training steps under a tf.distribute strategy, through the commands' own loop, and the
small shape and pretraining batch they train on (tests/training/test_precision.py, in-process and in the
fresh interpreter its two-replica test starts)."""
import numpy as np
import tensorflow as tf

from bert.training import checkpoints
from bert.training import loop
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
  """`steps` optimizer steps of the step every command trains with (loop.make_train_step:
  forward, loss_fn, the loss averaged over the GLOBAL batch, gradients summed over the
  replicas, clipped to global norm 1.0, applied), one step a loop.make_train_loop call.
  dataset_fn(context) batches to the per-replica size. Returns the per-step losses
  (floats); the model's weights are updated."""
  state = checkpoints.RunCheckpoint(None, model, optimizer, strategy)  # slots, loop state
  config = loop.TrainConfig(global_batch_size=global_batch, num_train_steps=steps)
  names = loop.loss_metric_names(model, loss_fn,
                                 dataset_fn(tf.distribute.InputContext()).element_spec)
  train_loop = loop.make_train_loop(
      strategy, loop.make_train_step(model, optimizer, loss_fn, names, config, state.loop),
      names)
  iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
  return [float(train_loop(iterator, tf.constant(1))[0]) for _ in range(steps)]
