"""Helper process for tests/commands/test_run_pretraining.py's distribution tests (not a test itself).

usage: python tests/support/dist_pretraining_helper.py MODE OUT.npz [NUM_LOGICAL_CPUS]
MODE: one_device | mirrored | multi_worker_mirrored (reads TF_CONFIG).
Trains a tiny pretraining model (no dropout) for 4 steps on a fixed, unshuffled stream of
synthetic records, global batch 8, and saves the final weights (chief only).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import tensorflow as tf  # noqa: E402

if len(sys.argv) > 3:  # must happen before any op touches the CPU
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * int(sys.argv[3]))

import numpy as np  # noqa: E402

from bert import heads  # noqa: E402
from bert import optimization  # noqa: E402
from bert.training import checkpoints  # noqa: E402
import tiny  # noqa: E402
from bert.training import loop  # noqa: E402
from bert.training import strategies  # noqa: E402

GLOBAL_BATCH, SEQ, PRED, VOCAB = 8, 12, 3, 29


def records(n=64):
  rng = np.random.default_rng(7)
  ids = rng.integers(5, VOCAB, size=(n, SEQ)).astype("int32")
  mask = np.ones_like(ids)
  mask[::2, -4:] = 0
  positions = np.stack([rng.choice(np.arange(1, SEQ - 4), PRED, replace=False)
                        for _ in range(n)]).astype("int32")
  weights = np.ones((n, PRED), "float32")
  weights[::3, -1] = 0.0  # uneven weight sums per replica: tests the global normaliser
  return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": np.zeros_like(ids),
          "masked_lm_positions": positions,
          "masked_lm_ids": np.take_along_axis(ids, positions, 1),
          "masked_lm_weights": weights,
          "next_sentence_labels": rng.integers(0, 2, size=(n, 1)).astype("int32")}


def dataset_fn(context, per_replica):
  ds = tf.data.Dataset.from_tensor_slices(records()).repeat()
  # In order, record-sharded over input pipelines (hosts): every step's global batch is
  # the same 8 records whatever the number of replicas and workers.
  if context.num_input_pipelines > 1:
    ds = ds.batch(GLOBAL_BATCH // context.num_input_pipelines, drop_remainder=True)
    ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id).unbatch()
  return ds.batch(per_replica, drop_remainder=True)


def main(mode, out):
  strategy = strategies.create_strategy(mode)  # first: before any TensorFlow op runs
  strategies.setup_determinism(3, True)
  config = tiny.tiny_config(VOCAB, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0, max_position_embeddings=SEQ)
  with strategy.scope():
    model, encoder = heads.build_pretraining_model(config)
    optimizer = optimization.create_optimizer(1e-3, 10, 1)
  # Same initial weights everywhere, whatever the strategy did to the RNG.
  rng = np.random.default_rng(0)
  for v in model.trainable_variables:
    v.assign(rng.normal(scale=0.05, size=v.shape).astype("float32"))
  workdir = os.path.dirname(out)
  del encoder
  state = checkpoints.RunCheckpoint(os.path.join(workdir, f"ckpt-{mode}"), model, optimizer,
                                    strategy)
  result = loop.train(
      strategy, model, optimizer, heads.pretraining_loss, dataset_fn, state,
      loop.TrainConfig(global_batch_size=GLOBAL_BATCH, num_train_steps=4,
                       steps_per_loop=2, save_checkpoints_steps=4, log_every_steps=2))
  if checkpoints.is_chief(strategy):
    np.savez(out, loss=result["loss"], **{v.path: v.numpy() for v in model.trainable_variables})


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2])
