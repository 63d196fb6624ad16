"""Fault tolerance and determinism of fine-tuning, on run_classifier.py.

* kill -9 at random moments (and one SIGTERM, the preemption notice) of a tiny run, each
  time rerunning the same command: the final step, weights, optimizer slots and dropout
  RNG state equal those of an uninterrupted run;
* the same command twice gives byte-identical eval_results.txt (CPU op determinism).

run_pretraining's own kill test is tests/commands/test_run_pretraining.py; create_pretraining_data's
worker/run determinism is tests/pretraining/test_pretraining_generator.py.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from catalogue import MRPC_HEADER, TINY_CONFIG
from conftest import ROOT, shared_path

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
TRAIN_ROWS, BATCH = 40, 2
NUM_STEPS = TRAIN_ROWS // BATCH     # one epoch
SAVE_EVERY = 2


def _words(rng, vocab, n):
  return " ".join(rng.choice(vocab) for _ in range(n))


@pytest.fixture(scope="module")
def task(tmp_path_factory):
  """A tiny BERT (hidden 32, 3 layers) and MRPC-layout rows drawn from its vocabulary."""
  root = tmp_path_factory.mktemp("fault")
  with open(shared_path("vocab", "uncased_vocab.txt"), encoding="utf-8") as handle:
    lines = [next(handle) for _ in range(TINY_CONFIG["vocab_size"])]
  (root / "vocab.txt").write_text("".join(lines), encoding="utf-8")
  (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
  words = [l.strip() for l in lines[1000:2000] if l.strip().isalpha()]
  rng = random.Random(7)
  data = root / "mrpc"
  data.mkdir()
  for split, count in (("train", TRAIN_ROWS), ("dev", 12)):
    rows = [f"{rng.randint(0, 1)}\t{i}\t{i + 1}\t{_words(rng, words, rng.randint(3, 9))}\t"
            f"{_words(rng, words, rng.randint(3, 9))}\n" for i in range(count)]
    (data / f"{split}.tsv").write_text(MRPC_HEADER + "".join(rows), encoding="utf-8")
  return root


def _args(task, out, *extra):
  return [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=MRPC",
          f"--data_dir={task / 'mrpc'}", f"--vocab_file={task / 'vocab.txt'}",
          f"--bert_config_file={task / 'bert_config.json'}", f"--output_dir={out}",
          "--max_seq_length=24", f"--train_batch_size={BATCH}", "--eval_batch_size=5",
          "--num_train_epochs=1", "--learning_rate=1e-3", "--warmup_proportion=0.2",
          f"--save_checkpoints_steps={SAVE_EVERY}", "--steps_per_loop=1",
          "--log_every_steps=1", "--seed=3", *extra]


def _run(task, out, *extra):
  proc = subprocess.run(_args(task, out, *extra), capture_output=True, text=True, env=ENV,
                        cwd=ROOT, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc


def _checkpoint_values(out):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  prefix = tf.train.latest_checkpoint(str(out))
  reader = tf.train.load_checkpoint(prefix)
  # save_counter counts saves, which differ between a killed and an unbroken run.
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
          if name != "_CHECKPOINTABLE_OBJECT_GRAPH" and not name.startswith("save_counter")}


def _wait_for(path, process, deadline):
  while not os.path.exists(path):
    assert process.poll() is None, f"the run ended before {path} appeared"
    assert time.time() < deadline, f"no {path} in time"
    time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_and_sigterm_at_random_moments_then_resume_equals_unbroken_run(task):
  full = task / "full"
  _run(task, full, "--do_train")
  reference = _checkpoint_values(full)
  assert int(reference["step/.ATTRIBUTES/VARIABLE_VALUE"]) == NUM_STEPS

  out = task / "broken"
  rng = random.Random(20261122)
  # Kill points: wait for checkpoint k, then a random delay (the kill may land inside a
  # training step or a save). The second interruption is SIGTERM: save, exit 143.
  # At least 8 steps stay after each point, so the signal lands before the run ends.
  points = sorted(rng.sample(range(SAVE_EVERY, NUM_STEPS - 8 + 1, SAVE_EVERY), 3))
  signals = [signal.SIGKILL, signal.SIGTERM, signal.SIGKILL]
  survived = 0
  for point, sig in zip(points, signals):
    process = subprocess.Popen(_args(task, out, "--do_train"), env=ENV, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
      _wait_for(out / f"ckpt-{point}.index", process, time.time() + 600)
      time.sleep(rng.uniform(0.0, 0.1))
      process.send_signal(sig)
      _, stderr = process.communicate(timeout=300)
    finally:
      if process.poll() is None:
        process.kill()
    if sig == signal.SIGTERM:
      # A preempted run saves where it stopped and says how to resume.
      assert process.returncode == 143, stderr[-3000:]
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      latest = tf.train.latest_checkpoint(str(out))
      step = int(tf.train.load_checkpoint(latest).get_tensor(
          "step/.ATTRIBUTES/VARIABLE_VALUE"))
      assert latest.endswith(f"ckpt-{step}") and step >= point
      assert "SIGTERM" in stderr
    else:
      assert process.returncode == -signal.SIGKILL
    survived += 1
  resumed = _run(task, out, "--do_train")
  assert "Resumed from" in resumed.stderr
  values = _checkpoint_values(out)
  assert sorted(values) == sorted(reference)
  assert int(values["step/.ATTRIBUTES/VARIABLE_VALUE"]) == NUM_STEPS
  for name, value in reference.items():
    if np.asarray(value).dtype.kind == "f":
      np.testing.assert_allclose(values[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    else:
      np.testing.assert_array_equal(values[name], value, err_msg=name)
  assert survived == len(points)


@pytest.mark.slow
def test_same_command_twice_gives_identical_eval_results(task):
  outputs = []
  for name in ("first", "second"):
    out = task / f"det-{name}"
    _run(task, out, "--do_train", "--do_eval")
    outputs.append((out / "eval_results.txt").read_bytes())
  assert outputs[0] == outputs[1]
  keys = [line.split(b" = ")[0] for line in outputs[0].splitlines()]
  assert keys == [b"eval_acc_and_f1", b"eval_accuracy", b"eval_f1", b"eval_loss",
                  b"global_step", b"loss"]
  assert b"global_step = %d" % NUM_STEPS in outputs[0]
