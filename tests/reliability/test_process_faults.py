"""Faults of a running process rather than of its inputs, in true processes: a second run
in one output_dir and kill -9 (the run lock), exports killed with SIGKILL and two
exports of one version at once (the export lock), full disks at the writers, a
diverging run, and a lost or absent worker of a multi-worker run. Each ends in one
line naming the file or flag, exit status 2, and nothing half-written that looks
complete; a rerun of the same command resumes or cleans up.
"""
import json
import os
import re
import subprocess
import sys

import pytest

import catalogue
from catalogue import classifier_args, mrpc_folder
from conftest import ROOT


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
  return catalogue.Workspace(tmp_path_factory.mktemp("process-faults"))


PT_CONFIG = {"vocab_size": 40, "hidden_size": 32, "num_hidden_layers": 3,
             "num_attention_heads": 4, "intermediate_size": 37, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
             "max_position_embeddings": 16, "type_vocab_size": 2, "initializer_range": 0.02}


def _pt_inputs(directory):
  """A tiny pretraining config and 16 records of length 8 in `directory`."""
  from bert import input_pipeline  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
  config = os.path.join(directory, "bert_config.json")
  records = os.path.join(directory, "data.tfrecord")
  if not os.path.exists(records):
    with open(config, "w", encoding="utf-8") as handle:
      json.dump(PT_CONFIG, handle)

    def record(i):
      ids = [2] + [5 + (i * 7 + j * 3) % 35 for j in range(6)] + [3]
      return {"input_ids": ids, "input_mask": [1] * 8, "segment_ids": [0] * 8,
              "masked_lm_positions": [1, 2, 3], "masked_lm_ids": ids[1:4],
              "masked_lm_weights": [1.0, 1.0, 1.0], "next_sentence_labels": [i % 2]}

    input_pipeline.write_examples(records, (record(i) for i in range(16)))
  return config, records


def _pt_command(directory, out, *extra):
  config, records = _pt_inputs(directory)
  return [sys.executable, os.path.join(ROOT, "run_pretraining.py"), f"--input_file={records}",
          f"--bert_config_file={config}", f"--output_dir={out}", "--do_train",
          "--max_seq_length=8", "--max_predictions_per_seq=3", "--train_batch_size=4",
          "--num_warmup_steps=1", "--steps_per_loop=1", *extra]


ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _last_line(proc_stderr):
  return [l for l in proc_stderr.strip().splitlines() if l.strip()][-1]


@pytest.mark.slow  # 30 s on 2 cores: three runs; the lock itself is tested fast below
def test_a_second_run_in_one_output_dir_is_refused_and_kill_9_leaves_no_stale_lock(tmp_path):
  """Two runs at once in one output_dir would both save ckpt-N there."""
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"
  first = subprocess.Popen(_pt_command(tmp_path, out, "--num_train_steps=1000000",
                                       "--save_checkpoints_steps=5", "--learning_rate=1e-4"),
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT)
  try:
    deadline = time.time() + 120
    while not (out / "ckpt-5.index").exists():  # the first run holds the lock and trains
      assert first.poll() is None and time.time() < deadline, first.stderr.read()[-2000:]
      time.sleep(0.2)
    # A stale temporary, as a run killed while writing leaves it.
    (out / ".eval_results.txt.tmp-0123abcd").write_text("half", encoding="utf-8")
    second = subprocess.run(_pt_command(tmp_path, out, "--num_train_steps=3"), env=ENV,
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert second.returncode == 2, second.stderr[-2000:]
    assert "Traceback" not in second.stderr
    assert _last_line(second.stderr).startswith(
        f"run_pretraining.py: error: --output_dir={out} is in use by another run (pid "
        f"{first.pid}: {sys.executable} {os.path.join(ROOT, 'run_pretraining.py')} "
        "--input_file="), second.stderr[-2000:]
    assert (out / ".eval_results.txt.tmp-0123abcd").exists()  # the holder's, untouched
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
  finally:
    if first.poll() is None:
      first.kill()
      first.wait()
  steps = sorted(int(n[5:-6]) for n in os.listdir(out) if n.endswith(".index"))
  assert steps and steps[-1] >= 5
  # The kernel dropped the dead run's lock: the rerun takes it, resumes, and removes what
  # the killed run left half-written.
  rerun = subprocess.run(_pt_command(tmp_path, out, f"--num_train_steps={steps[-1] + 1}",
                                     "--learning_rate=1e-4"),
                         env=ENV, capture_output=True, text=True, cwd=ROOT, timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-2000:]
  assert f"Resumed from {out / f'ckpt-{steps[-1]}'}" in rerun.stderr
  left = os.listdir(out)
  assert ".eval_results.txt.tmp-0123abcd" not in left and ".bert-run.lock" not in left
  assert [n for n in left if "_temp" in n or ".tmp-" in n] == []
  assert f"ckpt-{steps[-1] + 1}.index" in left


def _hashes(folder):
  """{relative path: sha256} of every file under `folder` (its exported versions)."""
  import hashlib  # pylint: disable=g-import-not-at-top
  found = {}
  for parent, _, names in os.walk(folder):
    for name in names:
      path = os.path.join(parent, name)
      with open(path, "rb") as handle:
        found[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
  return found


def _temporaries(folder):
  """Every temporary or lock file of ours under `folder` and beside it."""
  parent = os.path.dirname(os.path.abspath(folder))
  name = os.path.basename(os.path.abspath(folder))
  left = [n for n in os.listdir(parent) if n.startswith(f".{name}.")]
  for directory, dirs, files in os.walk(folder):
    left += [os.path.relpath(os.path.join(directory, n), folder) for n in dirs + files
             if re.fullmatch(r"\..+\.tmp-[0-9a-f]{8}|\..*lock", n)]
  return sorted(left)


def _kill_mid_export(command, temporaries, timeout=300):
  """Starts `command` and SIGKILLs it as soon as `temporaries()` lists a temporary that
  holds a file (the export is being written); returns what it had left."""
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  with open(os.devnull, "wb") as devnull:
    process = subprocess.Popen(command, env=ENV, stdout=devnull, stderr=devnull, cwd=ROOT)
  try:
    deadline = time.time() + timeout
    while True:
      left = temporaries()
      if left:
        process.send_signal(signal.SIGKILL)
        break
      assert process.poll() is None, "the run ended before its export was written"
      assert time.time() < deadline
      time.sleep(0.005)
    process.wait(timeout=60)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()
  assert process.returncode == -signal.SIGKILL
  return left


@pytest.mark.slow  # about 80 s on 2 cores: four run_classifier runs, two killed mid-export
def test_an_export_killed_with_sigkill_leaves_nothing_after_the_same_command(ws, tmp_path):
  """kill -9 during an export, then the same command: the rerun ended whole, but the
  half-written version (exp/ids/.1.tmp-*, 8 MB here, hundreds of MB for BERT-Base) or
  unversioned export (.exp.tmp-* beside it) stayed for ever. Now the rerun removes them,
  and every version that was there before is byte for byte what it was."""
  data = mrpc_folder(ws, "kill9-data", train="good")
  export = tmp_path / "exp"
  for kind in ("ids", "text"):  # versions already served, as written by earlier runs
    ws.write(str(export / kind / "1" / "saved_model.pb"), f"{kind} 1\n")
    ws.write(str(export / kind / "1" / "variables" / "variables.index"), f"{kind} index\n")
  before = _hashes(export)

  def versioned_temporaries():
    return [n for kind in ("ids", "text") if (export / kind).is_dir()
            for n in os.listdir(export / kind) if n.startswith(".2.tmp-")
            and any(files for _, _, files in os.walk(export / kind / n))]

  command = [sys.executable, os.path.join(ROOT, "run_classifier.py"),
             *classifier_args(ws, data, str(tmp_path / "out"), "--do_train",
                          f"--export_dir={export}", "--export_version=2")]
  assert _kill_mid_export(command, versioned_temporaries)
  assert _temporaries(export)  # what the killed run left: the bug's starting point
  rerun = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert _temporaries(export) == []
  after = _hashes(export)
  assert {p: h for p, h in after.items() if p.split(os.sep)[1] == "1"} == before
  assert sorted(os.listdir(export / "ids")) == sorted(os.listdir(export / "text")) == ["1", "2"]
  assert (export / "ids" / "2" / "saved_model.pb").is_file()
  # Without --export_version: the temporary is export_dir's sibling.
  plain = tmp_path / "plain"

  def plain_temporaries():
    return [n for n in os.listdir(tmp_path) if n.startswith(".plain.tmp-")
            and any(files for _, _, files in os.walk(tmp_path / n))]

  command = [sys.executable, os.path.join(ROOT, "run_classifier.py"),
             *classifier_args(ws, data, str(tmp_path / "out-plain"), "--do_train",
                          f"--export_dir={plain}")]
  assert _kill_mid_export(command, plain_temporaries)
  rerun = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert _temporaries(plain) == []
  assert (plain / "saved_model.pb").is_file() and (plain / "ids" / "saved_model.pb").is_file()


# A whole training run and an export (25 s): make test-slow. By default the run lock is
# tested in tests/utils/test_file_io.py and versions side by side in tests/formats/test_serving.py;
# waiting for another run's export lock is tested here only.
@pytest.mark.slow
def test_a_run_whose_version_another_run_just_wrote_says_so_and_names_its_flag(ws, tmp_path):
  """Two exports of one version at once: the one that came second used to say
  ".../exp/text/1: exists; remove it or pass --overwrite", a flag run_classifier does not
  have, and not that another run had just written that version. Here the other run is
  this test: it holds the export's lock (as a run writing there does), the run waits for
  it, the test writes version 1 and lets go."""
  import time  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  data = mrpc_folder(ws, "race-data", train="good")
  export, out = tmp_path / "exp", tmp_path / "out"
  log = tmp_path / "stderr.txt"
  with output_lock.lock_export(str(export), 1):
    with open(log, "w", encoding="utf-8") as stderr:
      run = subprocess.Popen(
          [sys.executable, os.path.join(ROOT, "run_classifier.py"),
           *classifier_args(ws, data, str(out), "--do_train", f"--export_dir={export}",
                        "--export_version=1")],
          env=ENV, stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
    try:
      deadline = time.time() + 300
      while "Waiting for pid" not in log.read_text(encoding="utf-8"):
        assert run.poll() is None, log.read_text(encoding="utf-8")[-3000:]
        assert time.time() < deadline
        time.sleep(0.1)
      for kind in ("ids", "text"):  # the other run's version 1, whole
        ws.write(str(export / kind / "1" / "saved_model.pb"), f"the other run's {kind}\n")
    except BaseException:
      run.kill()
      raise
  assert run.wait(timeout=120) == 2
  stderr = log.read_text(encoding="utf-8")
  assert "Traceback" not in stderr
  assert _last_line(stderr) == (
      f"run_classifier.py: error: --export_version=1: another run has just written "
      f"{export}/ids/1 (it was not there when this run started); this run's export is not "
      "written: choose a new version number, or pass --overwrite_export to replace that "
      "version")
  assert _temporaries(export) == []
  for kind in ("ids", "text"):
    assert os.listdir(export / kind) == ["1"]
    assert (export / kind / "1" / "saved_model.pb").read_text(encoding="utf-8") == (
        f"the other run's {kind}\n")


def test_an_export_lock_waits_for_the_writer_and_cleans_only_killed_exports(tmp_path):
  """What a killed export leaves (`.N.tmp-<8 hex>` in ids/, text/ and litert/, `.NAME.tmp-<8 hex>`
  beside an unversioned one) goes when the next export takes the lock; a user's file
  whose name only looks like one stays, and so does a version folder."""
  import threading  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
  assert litert_metadata.FOLDER in output_lock.VERSIONED_KINDS
  export = tmp_path / "exp"
  for path in ("ids/1/saved_model.pb", "ids/.1.tmp-0123abcd/saved_model.pb",
               "text/.7.tmp-89abcdef/variables/variables.index", "ids/.1.tmp-notes",
               "ids/1.tmp-0123abcd", "litert/.1.tmp-4567cdef/model_int8.tflite"):
    os.makedirs(os.path.dirname(export / path), exist_ok=True)
    (export / path).write_text("x", encoding="utf-8")
  with output_lock.lock_export(str(export), 2):
    assert sorted(os.listdir(export)) == [".export.lock", "ids", "litert", "text"]
    assert sorted(os.listdir(export / "ids")) == [".1.tmp-notes", "1", "1.tmp-0123abcd"]
    assert os.listdir(export / "text") == os.listdir(export / "litert") == []
    # A second export of the folder waits for this one instead of refusing.
    order = []

    def second():
      with output_lock.lock_export(str(export), 3):
        order.append("second")

    waiter = threading.Thread(target=second)
    waiter.start()
    waiter.join(timeout=1)
    assert waiter.is_alive() and order == []
    order.append("first done")
  waiter.join(timeout=30)
  assert order == ["first done", "second"]
  (tmp_path / ".plain.tmp-0123abcd").mkdir()
  (tmp_path / ".plain.tmp-notes").write_text("mine", encoding="utf-8")
  with output_lock.lock_export(str(tmp_path / "plain")):
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".plain")) == [
        ".plain.lock", ".plain.tmp-notes"]
  assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".plain")) == [
      ".plain.tmp-notes"]


@pytest.mark.slow  # a NaN loss in the default suite: tests/commands/test_training_faults.py
def test_a_diverging_pretraining_run_writes_no_weights_and_no_results(tmp_path):
  """run_pretraining --learning_rate=1e6 --num_train_steps=4 --do_eval used to export NaN
  weights to pretrained/bert_model.ckpt and `loss = nan` to eval_results.txt, exit 0."""
  out = tmp_path / "out"
  proc = subprocess.run(_pt_command(tmp_path, out, "--learning_rate=1e6", "--num_train_steps=4",
                                    "--do_eval", "--save_checkpoints_steps=1",
                                    "--log_every_steps=1"),
                        env=ENV, capture_output=True, text=True, cwd=ROOT, timeout=300)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  last = _last_line(proc.stderr)
  assert re.fullmatch(
      r"run_pretraining\.py: error: the (weights are not finite at step (\d) \(\d+ variable"
      r"\(s\), \S+ first\): the training diverged|training loss is nan at step (\d)); "
      r"the last good checkpoint ckpt-(\d) is kept in " + re.escape(str(out))
      + r"; lower --learning_rate or check the data", last), last
  step = int(re.search(r"at step (\d)", last).group(1))
  kept = int(re.search(r"ckpt-(\d)", last).group(1))
  assert kept == step - 1
  assert not (out / "pretrained").exists() and not (out / "eval_results.txt").exists()
  assert f"ckpt-{step}.index" not in os.listdir(out)
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(str(out / f"ckpt-{kept}"))
  floats = [n for n, d in reader.get_variable_to_dtype_map().items() if d.is_floating]
  assert len(floats) > 40 and all(np.isfinite(reader.get_tensor(n)).all() for n in floats)


# --------------------------------------------------------------------------- full disks at the writers


@pytest.fixture
def full_disk(tmp_path):
  """A directory on a full file system: a 96 KB tmpfs, filled (needs root: mount); None
  where no tmpfs can be mounted."""
  path = tmp_path / "full"
  os.makedirs(path)
  if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(path)],
                    capture_output=True).returncode != 0:
    yield None
    return
  try:
    fd = os.open(path / "filler", os.O_WRONLY | os.O_CREAT)
    try:
      while os.write(fd, b"\0" * 1024):
        pass
    except OSError:
      pass
    finally:
      os.close(fd)
    yield path
  finally:
    subprocess.run(["umount", str(path)], check=False)


def _full(path):
  return (f"could not write {path}: the disk is full (No space left on device); nothing "
          "was written under that name; free space and rerun")


def _injected_full_disk(monkeypatch):
  """Where no tmpfs can be mounted: every file atomic_output opens for writing is full."""
  import errno  # pylint: disable=g-import-not-at-top
  from bert.utils import atomic_output  # pylint: disable=g-import-not-at-top

  class Full:
    def __init__(self, path):
      self.path = path
      open(path, "w").close()  # noqa: SIM115  the temporary exists, as on a real disk

    def write(self, data):
      raise OSError(errno.ENOSPC, "No space left on device")

    def __enter__(self):
      return self

    def __exit__(self, *exc):
      return False

  monkeypatch.setattr(atomic_output, "open", lambda path, *a, **k: Full(path), raising=False)


def test_a_full_disk_at_the_file_writers_is_one_line_naming_the_file(full_disk, tmp_path,
                                                                     monkeypatch):
  from bert.classifier import classifier_examples  # pylint: disable=g-import-not-at-top
  from bert.squad import squad_decoding  # pylint: disable=g-import-not-at-top
  from bert.swag import swag_data  # pylint: disable=g-import-not-at-top
  from bert.tagging import tagging_data  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  directory = full_disk
  if directory is None:
    directory = tmp_path / "injected"
    os.makedirs(directory)
    _injected_full_disk(monkeypatch)
  big = {f"q{i}": "an answer of some length " * 20 for i in range(400)}  # ~200 KB
  examples = [swag_data.SwagExample(str(i), "a man sits .", "he", ["a", "b", "c", "d"], 0)
              for i in range(2000)]
  sentences = [tagging_data.TaggedSentence(str(i), ["EU", "rejects"] * 200, ["B-ORG", "O"] * 200,
                                   [[] for _ in range(400)]) for i in range(100)]
  writers = {
      "predictions.json": lambda p: squad_decoding.write_prediction_files(
          big, big, {}, p, str(directory / "nbest.json")),
      "test_results.tsv": lambda p: classifier_examples.write_probabilities(
          p, [[0.25, 0.75]] * 20000),
      "test_predictions.csv": lambda p: swag_data.write_predictions(
          p, examples, [[1.0, 2.0, 3.0, 4.0]] * 2000),
      "test_predictions.txt": lambda p: tagging_data.write_conll_predictions(
          p, sentences, [["B-ORG", "O"] * 200] * 100, "iob2"),
  }
  for name, write in writers.items():
    path = str(directory / name)
    with pytest.raises(errors.UserError) as error:
      write(path)
    assert str(error.value) == _full(path), name
  assert sorted(os.listdir(directory)) == ([] if full_disk is None else ["filler"])


def test_a_full_disk_at_the_tensorflow_writers_is_one_line_naming_the_path(full_disk):
  """A SavedModel export and TensorBoard events (their own file systems calls: no
  injection stands in for them, so this needs the tmpfs)."""
  if full_disk is None:
    pytest.skip("needs root to mount a tmpfs")
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  from bert import heads
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  model, _ = heads.build_classifier_model(modeling.BertConfig.from_dict(PT_CONFIG), 2)
  export_dir = str(full_disk / "export")
  with pytest.raises(errors.UserError) as error:
    serving.export_classifier(export_dir, model, ["0", "1"])
  assert str(error.value) == _full(f"--export_dir={export_dir}")
  logdir = str(full_disk / "eval")
  with pytest.raises(errors.UserError) as error:
    loop.write_scalars(logdir, {f"metric_{i}_" + "x" * 500: 1.0 for i in range(400)}, 1)
  assert str(error.value) == (f"could not write {logdir}: the disk is full (No space left on "
                              "device); free space and rerun")
  # An event file is appended to (TensorBoard reads what is complete); no SavedModel, nor
  # a temporary of one, is left.
  assert sorted(n for n in os.listdir(full_disk) if n != "eval") == ["filler"]


# --------------------------------------------------------------------------- locks and stale temporaries


def test_an_output_lock_refuses_a_second_holder_and_cleans_stale_temporaries(tmp_path):
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"
  os.makedirs(out / "train")
  stale = [".eval_results.txt.tmp-0123abcd", ".bert_model.ckpt.saving-x1y2", "ckpt-7_temp",
           "checkpoint.tempstate123"]
  keep = [".eval_results.txt.tmp-notours", "eval_results.txt", "ckpt-6.index", "train"]
  for name in stale + keep[:-1]:
    if name.endswith("_temp") or ".saving-" in name:
      os.makedirs(out / name)
    else:
      (out / name).write_text("x", encoding="utf-8")
  with output_lock.lock_output(str(out)):
    assert sorted(os.listdir(out)) == sorted(keep + [".bert-run.lock"])
    with open(out / ".bert-run.lock", encoding="utf-8") as handle:
      assert handle.readline() == f"{os.getpid()}\n"
    # flock locks belong to an open file: a second lock, even from this process, is refused.
    with pytest.raises(errors.UserError) as error:
      output_lock.lock_output(str(out)).acquire()
    assert str(error.value).startswith(f"--output_dir={out} is in use by another run (pid "
                                       f"{os.getpid()}: ")
    assert str(error.value).endswith("); wait for it to finish or stop it, or use another "
                                     "directory")
  assert sorted(os.listdir(out)) == sorted(keep)  # the lock file goes with the lock
  # One output file: its own lock beside it, and only its own temporaries are removed.
  (tmp_path / ".features.jsonl.tmp-89abcdef").write_text("half", encoding="utf-8")
  (tmp_path / ".other.jsonl.tmp-89abcdef").write_text("half", encoding="utf-8")
  target = str(tmp_path / "features.jsonl")
  with output_lock.lock_output(target, "output_file", is_file=True):
    with pytest.raises(errors.UserError, match=r"--output_file=.*features\.jsonl is "
                       r"in use by another run .*or use another output file$"):
      output_lock.lock_output(target, "output_file", is_file=True).acquire()
  assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".")) == [
      ".other.jsonl.tmp-89abcdef"]


def test_a_lock_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
  """The kernel drops a flock when its process dies: no stale lock after kill -9 (a
  process that imports only output_lock: no TensorFlow, a fraction of a second)."""
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"
  os.makedirs(out)
  holder = subprocess.Popen(
      [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
       "from bert.utils import output_lock; output_lock.lock_output(sys.argv[2]).acquire(); "
       "print('locked', flush=True); time.sleep(300)", ROOT, str(out)],
      stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline() == "locked\n"
    with pytest.raises(errors.UserError) as error:
      output_lock.lock_output(str(out)).acquire()
    assert str(error.value).startswith(
        f"--output_dir={out} is in use by another run (pid {holder.pid}: {sys.executable} -c "
        "import sys, time;")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
  finally:
    if holder.poll() is None:
      holder.kill()
      holder.wait()
  assert os.path.exists(out / ".bert-run.lock")  # the dead holder's file stays...
  started = time.time()
  lock = output_lock.lock_output(str(out)).acquire()  # ...and binds no one
  assert time.time() - started < 5
  lock.release()
  assert os.listdir(out) == []


def test_extract_features_cleans_a_killed_runs_temporary_and_names_a_full_disk(
    ws, full_disk, tmp_path):
  from bert.extraction import extraction_activations  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  prefix = str(tmp_path / "tiny" / "bert_model.ckpt")
  config = ws.write_config("ef27-config.json", num_hidden_layers=3)  # layers -1,-2,-3
  checkpoint_files.save_google_checkpoint(
      modeling.BertModel(model_config.load_bert_config(config)), prefix)
  text = ws.write("ef27.txt", "the cat sat on the mat .\nthe man went home .\n" * 20)

  def extract(output_file):
    return extraction_activations.extract_file(text, output_file, ws.vocab, True, config,
                                            prefix, "-1,-2,-3", 16, 8)

  # What a kill -9 while writing leaves: the next run of the same output removes it.
  out = tmp_path / "features.jsonl"
  (tmp_path / ".features.jsonl.tmp-0badf00d").write_text('{"linex_index": 0', "utf-8")
  assert extract(str(out)) == 40
  assert sorted(n for n in os.listdir(tmp_path) if "features" in n) == ["features.jsonl"]
  with open(out, encoding="utf-8") as handle:
    assert len(handle.readlines()) == 40
  if full_disk is None:
    return  # the writer's full-disk path is the file writers' test (injected)
  full = str(full_disk / "features.jsonl")
  with pytest.raises(errors.UserError) as error:
    extract(full)
  assert str(error.value) == _full(f"--output_file={full}")
  assert os.listdir(full_disk) == ["filler"]


@pytest.mark.slow  # about 60 s on 2 cores: two pairs of localhost workers
def test_a_lost_worker_is_one_line_and_rerunning_every_worker_resumes(tmp_path):
  """kill -9 of one of two multi_worker_mirrored workers: the chief used to end in a
  traceback ("The tasks have crashed ... CollectiveReduceV2"), exit 1."""
  import socket  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"

  logs = []

  def workers(steps):
    # stderr to files: a pipe nobody reads fills up with progress lines and blocks them.
    ports = []
    for _ in range(2):
      with socket.socket() as s:
        s.bind(("localhost", 0))
        ports.append(s.getsockname()[1])
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    return [subprocess.Popen(
        _pt_command(
            tmp_path, out, f"--num_train_steps={steps}", "--save_checkpoints_steps=5",
            "--learning_rate=1e-4", "--distribution_strategy=multi_worker_mirrored"),
        env=dict(ENV, TF_CONFIG=json.dumps({"cluster": cluster, "task": {
            "type": "worker", "index": i}})),
        stdout=subprocess.DEVNULL, stderr=log(f"{steps}-{i}"), cwd=ROOT)
        for i in range(2)]

  def log(name):
    logs.append(open(tmp_path / f"worker-{name}.log", "w+", encoding="utf-8"))  # noqa: SIM115
    return logs[-1]

  def read(index):
    logs[index].seek(0)
    return logs[index].read()

  def saved():
    return out.exists() and any(n.endswith(".index") for n in os.listdir(out))

  chief, lost = workers(100000)
  try:
    deadline = time.time() + 300
    while not saved():
      assert chief.poll() is None and time.time() < deadline, read(0)[-2000:]
      time.sleep(0.5)
    lost.kill()  # SIGKILL
    lost.wait(timeout=60)
    assert chief.wait(timeout=120) == 2, read(0)[-2000:]
    stderr = read(0)
  finally:
    for process in (chief, lost):
      if process.poll() is None:
        process.kill()
        process.wait()
  assert "Traceback" not in stderr, stderr[-3000:]
  last = _last_line(stderr)
  # The cause in parentheses is TensorFlow's own words and only there when its error names
  # one: which error reaches the chief depends on where its collective was when the peer
  # died (seen both ways on an otherwise busy 2-core machine).
  match = re.fullmatch(
      r"run_pretraining\.py: error: the multi-worker run lost worker 1 \(localhost:\d+\) "
      r"after step (\d+)(?: \(([^)]*)\))?; rerun every worker with the same command: they "
      r"resume from ckpt-(\d+) in " + re.escape(str(out)), last)
  assert match, last
  resumed_at = int(match.group(3))
  assert f"ckpt-{resumed_at}.index" in os.listdir(out)
  rerun = workers(resumed_at + 2)
  results = [(p.wait(timeout=400), read(2 + i)) for i, p in enumerate(rerun)]
  for code, err in results:
    assert code == 0, err[-2000:]
    assert f"Resumed from {out / f'ckpt-{resumed_at}'} at step {resumed_at}" in err
  assert f"ckpt-{resumed_at + 2}.index" in os.listdir(out)
  assert [n for n in os.listdir(out) if n.startswith(".")] == []
  for handle in logs:
    handle.close()


def test_non_finite_weights_are_never_exported_nor_evaluation_figures_written(tmp_path):
  """The two other places a diverged model could leave a result a user trusts."""
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  from bert.training import finetune  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  encoder = modeling.BertModel(modeling.BertConfig.from_dict(PT_CONFIG))
  weight = next(w for w in encoder.weights if len(w.shape) == 2 and w.shape[0] > 3)
  values = np.array(weight.numpy())
  values[3, 5] = np.nan
  weight.assign(values)
  prefix = str(tmp_path / "pretrained" / "bert_model.ckpt")
  with pytest.raises(errors.UserError) as error:
    checkpoint_files.save_google_checkpoint(encoder, prefix)
  assert str(error.value).startswith(f"{prefix}: not written: 1 weight(s) are not finite (")
  assert str(error.value).endswith("first), the training diverged; lower --learning_rate "
                                   "and train again from the last good checkpoint")
  assert not os.path.exists(tmp_path / "pretrained")  # checked before anything is created
  with pytest.raises(errors.UserError) as error:
    finetune.write_eval_results(str(tmp_path), {"loss": float("nan"), "accuracy": 0.5}, 4)
  assert str(error.value) == (
      f"evaluation at step 4 gives loss = nan: the model's outputs are not finite (the "
      f"weights diverged); {tmp_path}/eval_results.txt is not written; resume from an "
      "earlier checkpoint with a lower --learning_rate")
  assert os.listdir(tmp_path) == []


@pytest.mark.slow  # about 20 s on 2 busy cores: one TensorFlow process and a 3 s wait
def test_a_worker_whose_peer_never_starts_says_whom_it_waits_for_and_stops_at_the_bound(
    tmp_path):
  """A multi-worker run used to wait in silence for a peer that never comes (not even the
  strategy line): it says for whom it waits before it blocks, and --multi_worker_timeout
  ends the wait in one line naming them, exit 2, nothing written."""
  import socket  # pylint: disable=g-import-not-at-top
  ports = []
  for _ in range(2):
    with socket.socket() as s:
      s.bind(("localhost", 0))
      ports.append(s.getsockname()[1])
  me, peer = (f"localhost:{p}" for p in ports)
  out = tmp_path / "out"
  env = dict(ENV, TF_CONFIG=json.dumps({"cluster": {"worker": [me, peer]},
                                        "task": {"type": "worker", "index": 0}}))
  # timeout -k: a worker waiting for its peer catches SIGTERM (PITFALLS).
  proc = subprocess.run(
      ["timeout", "-k", "5", "120", *_pt_command(
          tmp_path, out, "--num_train_steps=2", "--multi_worker_timeout=3",
          "--distribution_strategy=multi_worker_mirrored")],
      env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
  assert proc.returncode == 2, proc.stderr[-3000:]
  lines = proc.stderr.strip().splitlines()
  waiting = [l for l in lines if "Waiting for the other tasks" in l]
  assert len(waiting) == 1 and waiting[0].endswith(
      f"Waiting for the other tasks of TF_CONFIG's cluster to connect: worker 1 at {peer} "
      f"(this is worker 0 at {me}); waiting at most 3 s (--multi_worker_timeout)"), lines
  assert re.fullmatch(
      r"run_pretraining\.py: error: TF_CONFIG: worker 0 waited \d+ s "
      r"\(--multi_worker_timeout=3\) for the other tasks to connect and some never did: "
      + re.escape(f"worker 1 at {peer}; start every task of the cluster (same TF_CONFIG "
                  "cluster, each its own task), check the addresses and that their ports "
                  "are reachable"), lines[-1]), lines[-1]
  assert "Traceback" not in proc.stderr
  assert not out.exists()
