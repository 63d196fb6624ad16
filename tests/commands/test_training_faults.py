"""Faults a training run meets, and runs cut short.

* A full disk while saving, a loss that turns NaN, a checkpoint cut short by an
  interrupted copy, and flag values that would train a plausible wrong model end in one
  line, not a traceback (run_pretraining.py and the options every trainer reads).
* kill -9 at random moments (and one SIGTERM, the preemption notice) of a tiny
  run_classifier.py run, each time rerunning the same command: the final step, weights,
  optimizer slots and dropout RNG state equal those of an uninterrupted run; the same
  command twice gives byte-identical eval_results.txt (CPU op determinism);
* kill -9 while --eval_every_steps keeps the best checkpoint on dev, twice, then the same
  command: the best step, its value and its weights are the unbroken run's.

run_pretraining's own kill test is tests/commands/test_run_pretraining.py;
create_pretraining_data's worker/run determinism is tests/pretraining/test_pretraining_generator.py.
"""
import contextlib
import errno
import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert.formats import checkpoint_files

from bert import input_pipeline
from bert import modeling
from bert import optimization
from bert.training import checkpoints
from bert.training import run_options
from bert.utils import errors
from catalogue import MRPC_HEADER, TINY_CONFIG
from conftest import ROOT, shared_path
import tiny

# --------------------------------------------------------------------------- one line, not a traceback

CONFIG = tiny.tiny_config_dict(40, num_hidden_layers=1, hidden_dropout_prob=0.0,
                               attention_probs_dropout_prob=0.0,
                               max_position_embeddings=16)


def _records(path, n=16, seq=8):
  rng = np.random.default_rng(0)

  def record(i):
    ids = [2] + [int(x) for x in rng.integers(5, 40, seq - 2)] + [3]
    return {"input_ids": ids, "input_mask": [1] * seq, "segment_ids": [0] * seq,
            "masked_lm_positions": [1, 2, 3], "masked_lm_ids": ids[1:4],
            "masked_lm_weights": [1.0, 1.0, 1.0], "next_sentence_labels": [i % 2]}

  input_pipeline.write_examples(str(path), (record(i) for i in range(n)))


def _pretrain(tmp_path, out, *extra):
  (tmp_path / "bert_config.json").write_text(json.dumps(CONFIG))
  if not (tmp_path / "data.tfrecord").exists():
    _records(tmp_path / "data.tfrecord")
  return subprocess.run(
      [sys.executable, os.path.join(ROOT, "run_pretraining.py"),
       f"--input_file={tmp_path / 'data.tfrecord'}",
       f"--bert_config_file={tmp_path / 'bert_config.json'}", f"--output_dir={out}",
       "--do_train", "--max_seq_length=8", "--max_predictions_per_seq=3",
       "--train_batch_size=4", "--num_warmup_steps=1", "--steps_per_loop=1", *extra],
      capture_output=True, text=True, timeout=600, cwd=ROOT,
      env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def test_a_nan_loss_names_the_step_and_keeps_the_last_good_checkpoint(tmp_path):
  out = tmp_path / "out"
  # Clipping keeps each update at lr * 1.0 in norm: a rate of 1e30 overflows at once.
  result = _pretrain(tmp_path, out, "--num_train_steps=6", "--save_checkpoints_steps=1",
                     "--log_every_steps=1", "--learning_rate=1e30")
  assert result.returncode == 2, result.stderr[-2000:]
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith("run_pretraining.py: error: the training loss is nan at step ")
  step = int(last.split(" at step ")[1].split(":")[0])
  assert f"the last good checkpoint ckpt-{step - 1} is kept in {out}" in last
  assert "lower --learning_rate" in last and "Traceback" not in result.stderr
  saved = sorted(f for f in os.listdir(out) if f.endswith(".index"))
  assert f"ckpt-{step}.index" not in saved and not (out / "pretrained").exists()
  # The kept checkpoint holds finite weights: a rerun can resume from it.
  reader = tf.train.load_checkpoint(str(out / f"ckpt-{step - 1}"))
  dtypes = reader.get_variable_to_dtype_map()
  weights = [reader.get_tensor(n) for n, d in dtypes.items() if d.is_floating]
  assert len(weights) > 40 and all(np.isfinite(w).all() for w in weights)


@contextlib.contextmanager
def _small_filesystem(path, size):
  """A tmpfs of `size` mounted at path (needs root and a kernel that allows it)."""
  os.makedirs(path)
  mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                            str(path)], capture_output=True).returncode == 0
  try:
    yield mounted
  finally:
    if mounted:
      subprocess.run(["umount", str(path)], check=False)


def _disk_full_through_injection(tmp_path):
  """Where no tmpfs can be mounted: the save itself raises ENOSPC, as a full disk does."""
  model = modeling.BertModel(modeling.BertConfig.from_dict(CONFIG))
  optimizer = optimization.create_optimizer(1e-3, 10, 1)
  state = checkpoints.RunCheckpoint(str(tmp_path / "out"), model, optimizer)
  os.makedirs(tmp_path / "out")
  original = tf.train.CheckpointManager.save

  def full(self, checkpoint_number=None, **kwargs):
    del kwargs
    os.makedirs(os.path.join(self.directory, f"ckpt-{checkpoint_number}_temp"))
    raise OSError(errno.ENOSPC, "No space left on device")

  tf.train.CheckpointManager.save = full
  try:
    with pytest.raises(errors.UserError) as error:
      state.save()
  finally:
    tf.train.CheckpointManager.save = original
  return str(error.value), tmp_path / "out"


@pytest.mark.slow  # a full disk in the default suite: tests/reliability/test_process_faults.py
def test_a_full_disk_while_saving_is_one_line_and_leaves_no_temp_files(tmp_path):
  small = tmp_path / "small"
  with _small_filesystem(small, "200k") as mounted:
    if mounted:
      out = small / "out"
      # The tiny model's checkpoint with its Adam slots is ~150 KB and its TensorBoard
      # files a few KB: the second checkpoint cannot fit beside the first.
      result = _pretrain(tmp_path, out, "--num_train_steps=4", "--save_checkpoints_steps=2",
                         "--log_every_steps=2", "--learning_rate=1e-3",
                         "--keep_checkpoint_max=5")
      assert result.returncode == 2, result.stderr[-2000:]
      last = result.stderr.strip().splitlines()[-1]
      assert "Traceback" not in result.stderr
      assert last.startswith(f"run_pretraining.py: error: --output_dir={out}: could not save "
                             "ckpt-"), last
      left = os.listdir(out)
    else:
      last, out = _disk_full_through_injection(tmp_path)
      assert last.startswith(f"--output_dir={out}: could not save ckpt-0"), last
      left = os.listdir(out)
  assert "(the disk is full: No space left on device)" in last
  assert [n for n in left if "_temp" in n or ".tempstate" in n] == []


def test_a_truncated_checkpoint_is_named_before_anything_runs(tmp_path):
  encoder = modeling.BertModel(modeling.BertConfig.from_dict(CONFIG))
  prefix = str(tmp_path / "model" / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(encoder, prefix)
  data = prefix + ".data-00000-of-00001"
  size = os.path.getsize(data)
  with open(data, "r+b") as handle:
    handle.truncate(size // 2)
  with pytest.raises(errors.UserError) as error:
    checkpoint_files.resolve_checkpoint(prefix)
  assert str(error.value) == (f"{prefix}: the checkpoint is truncated ({size // 2} bytes of "
                              f"data, its index needs at least {size}); copy or download "
                              "it again")
  # The .index (or .data) file given for the prefix is understood, with a note.
  os.remove(data)
  checkpoint_files.save_google_checkpoint(encoder, prefix)
  assert checkpoint_files.resolve_checkpoint(prefix + ".index") == (checkpoint_files.GOOGLE, prefix)
  assert checkpoint_files.resolve_checkpoint(data) == (checkpoint_files.GOOGLE, prefix)


@pytest.mark.parametrize("flag,value,message", [
    ("learning_rate", -2e-5, "--learning_rate=-2e-05: must be a positive finite number"),
    ("learning_rate", float("nan"), "--learning_rate=nan: must be a positive finite"),
    ("learning_rate", float("inf"), "--learning_rate=inf: must be a positive finite"),
    ("learning_rate", 0.0, "--learning_rate=0.0: must be a positive finite"),
    ("num_train_epochs", float("nan"), "--num_train_epochs=nan: must be a positive"),
    ("num_train_epochs", 0.0, "--num_train_epochs=0.0: must be a positive"),
    ("max_seq_length", 2, "--max_seq_length=2: must be between 3 and 8192"),
    ("max_seq_length", 10**9, "--max_seq_length=1000000000: must be between 3 and 8192"),
    ("train_batch_size", 0, "--train_batch_size=0: must be at least 1"),
    ("num_train_steps", 0, "--num_train_steps=0: must be at least 1"),
    ("warmup_proportion", 1.5, "--warmup_proportion=1.5: must be in [0, 1]"),
    ("num_warmup_steps", -1, "--num_warmup_steps=-1: must be >= 0"),
    ("save_checkpoints_steps", 0, "--save_checkpoints_steps=0: must be at least 1"),
])
def test_flags_that_cannot_work_are_refused_by_name(flag, value, message):
  with pytest.raises(errors.UserError) as error:
    run_options.RunOptions(output_dir="out", do_train=True, **{flag: value})
  assert str(error.value).startswith(message)


# --------------------------------------------------------------------------- runs cut short, and run twice

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


def _best_record(out):
  path = out / "best" / "best.json"
  try:
    return json.loads(path.read_text(encoding="utf-8"))
  except (OSError, ValueError):
    return None


@pytest.mark.slow
def test_kill_9_during_evaluations_keeps_the_best_an_unbroken_run_keeps(task):
  """kill -9 as the first best checkpoint lands, then again after a few evaluations; the
  same command once more: output_dir/best holds the step, value and weights of an
  unbroken run's best, and eval_results.txt is that step's evaluation."""
  flags = ("--do_train", "--do_eval", "--eval_every_steps=2", "--best_metric=eval_loss",
           "--use_best_checkpoint")
  full = task / "best-full"
  _run(task, full, *flags)
  reference = _best_record(full)
  assert [s for s, _ in reference["evaluations"]] == list(range(2, NUM_STEPS + 1, 2))

  out = task / "best-broken"
  waits = [lambda: any(n.endswith(".index") for n in os.listdir(out / "best"))
           if (out / "best").is_dir() else False,
           lambda: len((_best_record(out) or {}).get("evaluations", [])) >= 4]
  for ready in waits:
    process = subprocess.Popen(_args(task, out, *flags), env=ENV, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
      deadline = time.time() + 600
      while not ready():
        assert process.poll() is None, "the run ended before the kill point"
        assert time.time() < deadline
        time.sleep(0.02)
      process.send_signal(signal.SIGKILL)
      process.wait(timeout=60)
    finally:
      if process.poll() is None:
        process.kill()
    assert process.returncode == -signal.SIGKILL
  _run(task, out, *flags)
  record = _best_record(out)
  assert record["best_step"] == reference["best_step"]
  assert record["best_value"] == pytest.approx(reference["best_value"], rel=1e-5)
  assert [s for s, _ in record["evaluations"]] == [s for s, _ in reference["evaluations"]]
  np.testing.assert_allclose([v for _, v in record["evaluations"]],
                             [v for _, v in reference["evaluations"]], rtol=1e-5)
  best = f"ckpt-{reference['best_step']}"
  assert sorted(n for n in os.listdir(out / "best") if n.endswith(".index")) == [
      best + ".index"]
  ours = tf.train.load_checkpoint(str(out / "best" / best))
  theirs = tf.train.load_checkpoint(str(full / "best" / best))
  names = [n for n in theirs.get_variable_to_shape_map()
           if n != "_CHECKPOINTABLE_OBJECT_GRAPH" and not n.startswith("save_counter")]
  assert sorted(names) == sorted(n for n in ours.get_variable_to_shape_map()
                                 if n != "_CHECKPOINTABLE_OBJECT_GRAPH"
                                 and not n.startswith("save_counter"))
  for name in names:
    value = theirs.get_tensor(name)
    if np.asarray(value).dtype.kind == "f":
      np.testing.assert_allclose(ours.get_tensor(name), value, rtol=1e-5, atol=1e-6,
                                 err_msg=name)
  said = dict(line.split(" = ") for line in
              (out / "eval_results.txt").read_text().splitlines())
  assert int(said["global_step"]) == reference["best_step"]
  assert float(said["eval_loss"]) == pytest.approx(reference["best_value"], rel=1e-5)
