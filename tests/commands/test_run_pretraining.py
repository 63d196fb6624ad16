"""run_pretraining.py and input_pipeline.py: losses, LTR features, records, errors, runs."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import input_pipeline
from bert import modeling
from bert.pretraining import pretraining_options
from bert.pretraining import pretraining_task
from bert.utils import errors
import cli_harness
import tiny

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELPER = os.path.join(ROOT, "tests", "support", "dist_pretraining_helper.py")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_losses_and_metrics_match_hand_computation():
  rng = np.random.default_rng(0)
  mlm_logits = rng.normal(size=(2, 3, 5)).astype("float32")
  ids = np.array([[1, 4, 0], [2, 2, 3]], "int32")
  weights = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], "float32")
  ns_logits = np.array([[2.0, -1.0], [0.5, 0.7]], "float32")
  ns_labels = np.array([[0], [0]], "int32")
  per_example, metrics = heads.pretraining_loss(
      {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": ns_labels},
      {"masked_lm_logits": mlm_logits, "next_sentence_logits": ns_logits},
      use_next_sentence=True)
  nll = -np.take_along_axis(_log_softmax(mlm_logits), ids[..., None], -1)[..., 0]
  mlm_loss = (weights * nll).sum() / (weights.sum() + 1e-5)
  ns_nll = -_log_softmax(ns_logits)[[0, 1], [0, 0]]
  # The mean of the per-example losses is the original's total_loss.
  assert float(tf.reduce_mean(per_example)) == pytest.approx(mlm_loss + ns_nll.mean(),
                                                             rel=1e-5)
  got = {k: float(n) / float(d) for k, (n, d) in metrics.items()}
  correct = (mlm_logits.argmax(-1) == ids)
  assert got["masked_lm_accuracy"] == pytest.approx((weights * correct).sum() / 5)
  assert got["masked_lm_loss"] == pytest.approx((weights * nll).sum() / 5, rel=1e-5)
  assert got["next_sentence_accuracy"] == 0.5  # row 0 right (2 > -1), row 1 wrong
  assert got["next_sentence_loss"] == pytest.approx(ns_nll.mean(), rel=1e-5)
  no_nsp, metrics = heads.pretraining_loss(
      {"masked_lm_ids": ids, "masked_lm_weights": weights},
      {"masked_lm_logits": mlm_logits}, use_next_sentence=False)
  assert float(tf.reduce_mean(no_nsp)) == pytest.approx(mlm_loss, rel=1e-5)
  assert sorted(metrics) == ["masked_lm_accuracy", "masked_lm_loss"]


def test_ltr_features_put_the_masked_tokens_back_and_shift():
  features = {
      "input_ids": tf.constant([[101, 103, 7, 103, 102, 0]]),
      "input_mask": tf.constant([[1, 1, 1, 1, 1, 0]]),
      "segment_ids": tf.constant([[0, 0, 0, 0, 0, 0]]),
      "masked_lm_positions": tf.constant([[1, 3, 0]]),
      "masked_lm_ids": tf.constant([[5, 9, 0]]),
      "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0]]),
  }
  out = pretraining_task.to_next_token_features(features)
  assert out["input_ids"].numpy().tolist() == [[101, 5, 7, 9, 102, 0]]
  assert out["masked_lm_positions"].numpy().tolist() == [[0, 1, 2, 3, 4]]
  assert out["masked_lm_ids"].numpy().tolist() == [[5, 7, 9, 102, 0]]
  assert out["masked_lm_weights"].numpy().tolist() == [[1, 1, 1, 1, 0]]


def _record(i, seq=8, pred=3):
  return {"input_ids": [101] + [10 + i] * (seq - 2) + [102],
          "input_mask": [1] * seq, "segment_ids": [0] * seq,
          "masked_lm_positions": [1, 2, 0][:pred] + [0] * (pred - 3),
          "masked_lm_ids": [10 + i, 10 + i, 0][:pred] + [0] * (pred - 3),
          "masked_lm_weights": [1.0, 1.0, 0.0][:pred] + [0.0] * (pred - 3),
          "next_sentence_labels": [i % 2]}


def test_pretraining_records_round_trip_and_bad_files_are_named(tmp_path):
  path = str(tmp_path / "data.tfrecord")
  assert input_pipeline.write_examples(path, (_record(i) for i in range(5))) == 5
  assert input_pipeline.check_pretraining_files([path], 8, 3) == input_pipeline.RecordLayout(
      packed=False, masked=True, max_sequences_per_row=1)
  batches = list(input_pipeline.pretraining_dataset([path], 8, 3, 4, is_training=False))
  batch = batches[0]
  assert batch["input_ids"].dtype == tf.int32 and batch["input_ids"].shape == (4, 8)
  assert batch["input_ids"][:, 1].numpy().tolist() == [10, 11, 12, 13]  # eval: in order
  assert batch["masked_lm_weights"].numpy().tolist()[0] == [1.0, 1.0, 0.0]
  assert batch["next_sentence_labels"].numpy().tolist() == [[0], [1], [0], [1]]
  # Evaluation reads each record once: the fifth comes alone, and nothing repeats.
  assert [b["input_ids"][:, 1].numpy().tolist() for b in batches[1:]] == [[14]]
  train = input_pipeline.pretraining_dataset([path], 8, 3, 5, is_training=True, seed=1)
  first = next(iter(train))["input_ids"][:, 1].numpy()
  # Files repeat before the 100-record shuffle (as in the original), so epochs mix.
  assert set(first.tolist()) <= {10, 11, 12, 13, 14} and first.tolist() != [10, 11, 12, 13, 14]
  again = next(iter(input_pipeline.pretraining_dataset([path], 8, 3, 5, True, seed=1)))
  assert again["input_ids"][:, 1].numpy().tolist() == first.tolist()  # seeded

  with pytest.raises(errors.UserError) as error:
    input_pipeline.check_pretraining_files([path], 128, 3)
  assert str(error.value) == (
      f"--input_file: {path} record 0 has input_ids of length 8, but --max_seq_length is "
      "128; rerun with --max_seq_length=8 or recreate the data with --max_seq_length=128")
  with pytest.raises(errors.UserError, match="masked_lm_positions of length 3, but "
                     "--max_predictions_per_seq is 20"):
    input_pipeline.check_pretraining_files([path], 8, 20)
  text = tmp_path / "notes.txt"
  text.write_text("this is not a tfrecord file at all\n" * 3)
  with pytest.raises(errors.UserError, match="notes.txt is not a TFRecord file"):
    input_pipeline.check_pretraining_files([str(text)], 8, 3)


def _packed_record(i, seq=8, pred=3, rows=2):
  """A packed row (create_pretraining_data.py --pack_sequences): two sequences."""
  return dict(_record(i, seq, pred), position_ids=list(range(seq)),
              sequence_ids=[1] * (seq // 2) + [2] * (seq - seq // 2),
              next_sentence_positions=[0, seq // 2][:rows],
              next_sentence_labels=[0, 1][:rows], next_sentence_weights=[1.0, 1.0][:rows])


def test_every_files_first_record_is_checked_beyond_the_first_fifty(tmp_path):
  """A glob of 70 files: the framing walk stops at the first 50, but every file's first
  record is read (in parallel), so a bad file anywhere is named before any step."""
  files = []
  for i in range(70):
    files.append(str(tmp_path / f"part-{i:05d}"))
    input_pipeline.write_examples(files[-1], (_record(i + k) for k in range(3)))
  assert input_pipeline.check_pretraining_files(files, 8, 3) == input_pipeline.RecordLayout()

  def refusal(index, write):
    spoiled = list(files)
    spoiled[index] = str(tmp_path / f"spoiled-{index}")
    write(spoiled[index])
    with pytest.raises(errors.UserError) as error:
      input_pipeline.check_pretraining_files(spoiled, 8, 3)
    return str(error.value)

  packed = str(tmp_path / "spoiled-69")
  assert refusal(69, lambda p: input_pipeline.write_examples(p, [_packed_record(1)])) == (
      f"--input_file: {packed} holds packed rows (up to 2 sequences a row), masked, but "
      f"{files[0]} holds one sequence a row, masked; pass files of one "
      "create_pretraining_data.py layout")
  empty = str(tmp_path / "spoiled-55")
  assert refusal(55, lambda p: open(p, "wb").close()) == (
      f"--input_file: {empty} holds no records; recreate it with create_pretraining_data.py "
      "or leave it out")
  text = str(tmp_path / "spoiled-60")
  said = refusal(60, lambda p: open(p, "w").write("not a tfrecord file at all\n" * 3))
  assert said.startswith(f"--input_file: {text} is not a TFRecord file ("), said
  long = str(tmp_path / "spoiled-51")
  assert refusal(51, lambda p: input_pipeline.write_examples(p, [_record(1, seq=16)])) == (
      f"--input_file: {long} record 0 has input_ids of length 16, but --max_seq_length is "
      "8; rerun with --max_seq_length=16 or recreate the data with --max_seq_length=8")


def _run(args, **kwargs):
  # The command line's real path in a warm process (no TensorFlow start-up per run).
  return cli_harness.run("run_pretraining.py", args, timeout=600, **kwargs)


def _tiny_config(path, vocab=128, dropout=0.1):
  return tiny.write_tiny_config(path, vocab, hidden_dropout_prob=dropout,
                                attention_probs_dropout_prob=dropout,
                                max_position_embeddings=16)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
  data = str(tmp_path / "data.tfrecord")
  input_pipeline.write_examples(data, (_record(i) for i in range(4)))
  config = _tiny_config(tmp_path / "bert_config.json")
  common = [f"--bert_config_file={config}", f"--output_dir={tmp_path / 'out'}",
            "--do_train", "--max_predictions_per_seq=3"]
  # Records of length 8, flags saying 16: the file and the fix are named, no traceback.
  small_vocab = _tiny_config(tmp_path / "small_config.json", vocab=40)
  result = _run([f"--input_file={data}", "--max_seq_length=8", *common,
                 f"--bert_config_file={small_vocab}"])
  assert result.returncode == 2, result.stderr
  assert (f"--input_file: {data} record 0 has token id 102, but vocab_size is 40 in "
          "--bert_config_file") in result.stderr
  result = _run([f"--input_file={data}", "--max_seq_length=16", *common])
  assert result.returncode == 2, result.stderr
  lines = [l for l in result.stderr.splitlines() if "run_pretraining.py: error" in l]
  assert lines == [f"run_pretraining.py: error: --input_file: {data} record 0 has input_ids "
                   "of length 8, but --max_seq_length is 16; rerun with --max_seq_length=8 "
                   "or recreate the data with --max_seq_length=16"]
  assert "Traceback" not in result.stderr


# 17 s (make test-slow); run_pretraining's one-line refusals by default:
# tests/reliability/test_each_command.py
@pytest.mark.slow
def test_no_match_and_checkpoint_mismatch_are_one_line_errors(tmp_path):
  data = str(tmp_path / "data.tfrecord")
  input_pipeline.write_examples(data, (_record(i) for i in range(4)))
  config = _tiny_config(tmp_path / "bert_config.json")
  common = [f"--bert_config_file={config}", f"--output_dir={tmp_path / 'out'}",
            "--do_train", "--max_predictions_per_seq=3", "--max_seq_length=8"]
  result = _run([f"--input_file={tmp_path}/nothing-*.tfrecord", *common])
  assert result.returncode == 2
  assert f"no file matches '{tmp_path}/nothing-*.tfrecord'" in result.stderr
  assert "Traceback" not in result.stderr
  minilm = os.path.join(ROOT, "..", "shared", "data", "models", "uncased_L-6_H-384_A-12")
  if not os.path.isdir(minilm):
    pytest.skip("shared MiniLM checkpoint not available")
  result = _run([f"--input_file={data}", *common,
                 f"--init_checkpoint={minilm}/bert_model.ckpt"])
  assert result.returncode == 2
  assert "shape mismatch" in result.stderr and "Traceback" not in result.stderr


def _pretrain_args(tmp_path, data, config, out, steps, extra=()):
  return [f"--input_file={data}", f"--bert_config_file={config}", f"--output_dir={out}",
          "--do_train", "--max_seq_length=8", "--max_predictions_per_seq=3",
          "--train_batch_size=4", f"--num_train_steps={steps}", "--num_warmup_steps=2",
          "--learning_rate=2e-3", "--save_checkpoints_steps=5", "--steps_per_loop=1",
          "--log_every_steps=5", *extra]


@pytest.mark.slow  # 65 s; test_loop covers resume in-process (make test-slow)
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
  data = str(tmp_path / "data.tfrecord")
  input_pipeline.write_examples(data, (_record(i) for i in range(24)))
  config = _tiny_config(tmp_path / "bert_config.json")
  full = _run(_pretrain_args(tmp_path, data, config, tmp_path / "full", 40))
  assert full.returncode == 0, full.stderr[-2000:]
  args = _pretrain_args(tmp_path, data, config, tmp_path / "killed", 40)
  process = subprocess.Popen([sys.executable, os.path.join(ROOT, "run_pretraining.py"),
                              *args], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
  deadline = time.time() + 300
  while not os.path.exists(tmp_path / "killed" / "ckpt-15.index"):
    assert time.time() < deadline and process.poll() is None
    time.sleep(0.02)
  process.send_signal(signal.SIGKILL)
  process.wait()
  # The killed run may have saved a checkpoint or two more before the signal landed.
  newest = max(int(f[5:-6]) for f in os.listdir(tmp_path / "killed")
               if f.startswith("ckpt-") and f.endswith(".index"))
  assert newest < 35
  # Resume, then a preemption notice (SIGTERM) past the next checkpoint: the run saves
  # where it stands (not at a multiple of 5) and exits with 143.
  log = open(tmp_path / "resumed.log", "w")  # noqa: SIM115
  process = subprocess.Popen([sys.executable, os.path.join(ROOT, "run_pretraining.py"),
                              *args], env=ENV, stdout=subprocess.DEVNULL, stderr=log)
  while not os.path.exists(tmp_path / "killed" / f"ckpt-{newest + 5}.index"):
    assert time.time() < deadline and process.poll() is None
    time.sleep(0.02)
  process.send_signal(signal.SIGTERM)
  assert process.wait(timeout=300) == 143
  log.close()
  text = (tmp_path / "resumed.log").read_text()
  assert "Resumed from" in text and "Stopped by SIGTERM" in text
  stopped = int(text.split("Stopped by SIGTERM at step ")[1].split(";")[0])
  assert newest + 5 <= stopped < 40
  assert os.path.exists(tmp_path / "killed" / f"ckpt-{stopped}.index")
  resumed = _run(args)
  assert resumed.returncode == 0, resumed.stderr[-2000:]
  assert f"at step {stopped}" in resumed.stderr
  a = tf.train.load_checkpoint(str(tmp_path / "full" / "pretrained" / "bert_model.ckpt"))
  b = tf.train.load_checkpoint(str(tmp_path / "killed" / "pretrained" / "bert_model.ckpt"))
  assert int(b.get_tensor("global_step")) == 40
  names = [n for n, _ in tf.train.list_variables(str(tmp_path / "full" / "pretrained" /
                                                     "bert_model.ckpt"))]
  assert "cls/predictions/output_bias" in names and "bert/encoder/layer_2/output/dense/kernel" in names
  for name in names:
    np.testing.assert_allclose(a.get_tensor(name), b.get_tensor(name), rtol=1e-5, atol=1e-6,
                               err_msg=name)


def test_overfit_and_eval_results(tmp_path):
  # The original README's sanity check, on a handful of tiny documents: the masked LM
  # memorises them and eval_results.txt reports it.
  data = str(tmp_path / "data.tfrecord")
  input_pipeline.write_examples(data, (_record(i) for i in range(8)))
  config = _tiny_config(tmp_path / "bert_config.json", dropout=0.0)
  out = tmp_path / "out"
  result = _run(_pretrain_args(tmp_path, data, config, out, 150,
                               ["--do_eval", "--max_eval_steps=2", "--eval_batch_size=4",
                                "--save_checkpoints_steps=150", "--steps_per_loop=50"]))
  assert result.returncode == 0, result.stderr[-2000:]
  values = dict(line.split(" = ") for line in
                (out / "eval_results.txt").read_text().splitlines())
  assert sorted(values) == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
                            "next_sentence_accuracy", "next_sentence_loss"]
  assert values["global_step"] == "150"
  assert float(values["masked_lm_accuracy"]) > 0.9
  assert float(values["loss"]) == pytest.approx(
      float(values["masked_lm_loss"]) + float(values["next_sentence_loss"]), rel=1e-3)
  assert sorted(os.listdir(out / "pretrained")) == [
      "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
      "bert_model.ckpt.meta", "checkpoint"]


def _distributed(tmp_path, mode, *extra, env=None):
  out = str(tmp_path / f"{mode}.npz")
  return subprocess.Popen([sys.executable, HELPER, mode, out, *extra], env=env or ENV,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), out


@pytest.mark.slow  # 47 s: three strategies as subprocesses (make test-slow)
def test_mirrored_and_multi_worker_reach_the_single_device_weights(tmp_path):
  single, single_out = _distributed(tmp_path, "one_device")
  assert single.wait(timeout=600) == 0, single.stderr.read()[-2000:]
  mirrored, mirrored_out = _distributed(tmp_path, "mirrored", "2")
  assert mirrored.wait(timeout=600) == 0, mirrored.stderr.read()[-2000:]
  import socket  # pylint: disable=g-import-not-at-top
  ports = []
  for _ in range(2):
    with socket.socket() as s:
      s.bind(("localhost", 0))
      ports.append(s.getsockname()[1])
  cluster = {"worker": [f"localhost:{p}" for p in ports]}
  workers = []
  for index in range(2):
    env = {**ENV, "TF_CONFIG": json.dumps({"cluster": cluster,
                                           "task": {"type": "worker", "index": index}})}
    out = str(tmp_path / f"mwm{index}.npz")
    workers.append((subprocess.Popen(
        ["timeout", "-k", "5", "500", sys.executable, HELPER, "multi_worker_mirrored", out],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), out))
  for process, _ in workers:
    assert process.wait(timeout=560) == 0, process.stderr.read()[-2000:]
  reference = np.load(single_out)
  for path in (mirrored_out, workers[0][1]):
    got = np.load(path)
    assert float(got["loss"]) == pytest.approx(float(reference["loss"]), rel=1e-5)
    for key in reference.files:
      np.testing.assert_allclose(got[key], reference[key], rtol=1e-5, atol=1e-6,
                                 err_msg=f"{path}: {key}")
  assert not os.path.exists(workers[1][1])  # only the chief writes


# 18 s (make test-slow). By default the one-cycle schedule is checked against its NumPy
# reference in tests/core/test_optimization.py, and run_pretraining.py runs in tests/commands/test_checkpoint_flows.py.
@pytest.mark.slow
def test_short_budget_recipe_flags_in_process(tmp_path):
  """The short-budget recipe (docs/new_language.md) through the driver on the tiny model:
  dropout off while pretraining, NSP off, two accumulated micro-batches per update and the
  one-cycle schedule, whose logged rates must be the NumPy reference's."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  from bert.training import run_options  # pylint: disable=g-import-not-at-top
  from lr_schedules import one_cycle_reference  # pylint: disable=g-import-not-at-top
  data = str(tmp_path / "data.tfrecord")
  input_pipeline.write_examples(data, (_record(i) for i in range(16)))
  config = _tiny_config(tmp_path / "bert_config.json", dropout=0.1)
  out = tmp_path / "out"
  total, warmup, peak = 6, 3, 2e-3
  options = run_options.RunOptions(
      output_dir=str(out), bert_config_file=str(config), do_train=True, do_eval=True,
      max_seq_length=8, train_batch_size=2, gradient_accumulation_steps=2,
      num_train_steps=total, num_warmup_steps=warmup, learning_rate=peak,
      lr_schedule="one_cycle", steps_per_loop=1, log_every_steps=1,
      save_checkpoints_steps=100, eval_batch_size=4)
  task = pretraining_task.PretrainingTask(options, pretraining_options.PretrainingOptions(
      data, max_predictions_per_seq=3, max_eval_steps=1, no_nsp=True, no_dropout=True))
  task.run()
  # Dropout off in the model that trained; the written config keeps the rates for
  # fine-tuning.
  model = task.build_model(modeling.BertConfig.from_json_file(str(config)))
  rates = [layer.rate for layer in model._flatten_layers() if hasattr(layer, "rate")]  # pylint: disable=protected-access
  assert rates and set(rates) == {0.0}
  written = json.loads((out / "pretrained" / "bert_config.json").read_text())
  assert written["hidden_dropout_prob"] == written["attention_probs_dropout_prob"] == 0.1
  values = dict(line.split(" = ") for line in
                (out / "eval_results.txt").read_text().splitlines())
  assert values["global_step"] == str(total)  # updates, not micro-batches
  assert not any(key.startswith("next_sentence") for key in values)  # NSP off
  events = event_accumulator.EventAccumulator(str(out / "train"))
  events.Reload()
  logged = {e.step: e.value for e in events.Scalars("learning_rate")}
  assert sorted(logged) == list(range(1, total + 1))
  steps = np.array(sorted(logged))
  np.testing.assert_allclose([logged[s] for s in steps],
                             one_cycle_reference(steps, peak, total, warmup), rtol=1e-5)
