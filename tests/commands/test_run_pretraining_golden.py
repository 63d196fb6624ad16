"""run_pretraining.py's loss at every step equals the stored losses of the encoder as the
original computes it.

tests/support/golden/pretraining/losses.json holds the loss of each of 20 steps of a tiny
run (dropout on, per-batch losses logged every step) made through this command line by
the encoder whose numerics were checked against the original release's to 3e-7 per step:
the layout before every dense layer ran on 2-D matrices with tf.nn.gelu. The same command
today must give the same losses: a change of graph (fusion, layout) may move a loss only
by float rounding.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
import tiny

GOLDEN = os.path.join(ROOT, "tests", "support", "golden", "pretraining", "losses.json")
STEPS = 20


def write_records(path, count=32, seq=16, predictions=4, vocab=128, seed=0):
  """`count` pretraining records of random tokens, a few masked, as TFRecords at `path`."""
  from bert import input_pipeline  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)

  def record(_):
    length = int(rng.integers(seq // 2, seq + 1))
    ids = [101] + rng.integers(5, vocab, length - 2).tolist() + [102]
    positions = sorted(rng.choice(np.arange(1, length - 1), predictions - 1,
                                  replace=False).tolist())
    return {"input_ids": ids + [0] * (seq - length), "input_mask": [1] * length + [0] * (seq - length),
            "segment_ids": [0] * (length // 2) + [1] * (length - length // 2) + [0] * (seq - length),
            "masked_lm_positions": positions + [0],
            "masked_lm_ids": [ids[p] for p in positions] + [0],
            "masked_lm_weights": [1.0] * (predictions - 1) + [0.0],
            "next_sentence_labels": [int(rng.integers(0, 2))]}

  input_pipeline.write_examples(path, (record(i) for i in range(count)))
  return path


def command(tmp_path, root=ROOT):
  """The command line: run_pretraining.py of `root` on the tiny records and config."""
  data = write_records(str(tmp_path / "data.tfrecord"))
  config = tiny.write_tiny_config(tmp_path / "bert_config.json", 128,
                                  max_position_embeddings=16)
  return [sys.executable, os.path.join(root, "run_pretraining.py"), f"--input_file={data}",
          f"--bert_config_file={config}", f"--output_dir={tmp_path / 'out'}", "--do_train",
          "--max_seq_length=16", "--max_predictions_per_seq=4", "--train_batch_size=8",
          f"--num_train_steps={STEPS}", "--num_warmup_steps=4", "--learning_rate=1e-3",
          "--save_checkpoints_steps=1000", "--steps_per_loop=1", "--log_every_steps=1",
          "--dtype=float32", "--noenable_xla"]


def logged_losses(output_dir):
  """The loss TensorBoard holds for each step of output_dir/train, in step order."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  losses = {}
  train = os.path.join(output_dir, "train")
  for name in sorted(os.listdir(train)):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(train, name)):
      for value in event.summary.value:
        if value.tag == "loss":
          losses[event.step] = (float(tf.make_ndarray(value.tensor)) if value.tensor.dtype
                                else value.simple_value)
  return [losses[step] for step in sorted(losses)]


def run(tmp_path, root=ROOT, environ=None):
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **(environ or {})}
  result = subprocess.run(command(tmp_path, root), env=env, capture_output=True, text=True,
                          timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  return logged_losses(str(tmp_path / "out"))


# oneDNN's kernels and the default ones sum in other orders: both must give the losses.
# The default suite runs oneDNN on; off is with the slow tests (make test-slow).
@pytest.mark.parametrize("onednn", ["1", pytest.param("0", marks=pytest.mark.slow)])
def test_every_steps_loss_equals_the_golden_losses(tmp_path, onednn):
  with open(GOLDEN, encoding="utf-8") as handle:
    golden = json.load(handle)["losses"]
  losses = run(tmp_path, environ={"TF_ENABLE_ONEDNN_OPTS": onednn})
  assert len(losses) == STEPS
  # float32 rounding of a different order of the same sums, through 20 Adam updates.
  np.testing.assert_allclose(losses, golden, rtol=2e-6, atol=0)
