"""The whole pipeline on gs://, through TensorFlow's own GCS client, against local disk.

A local GCS emulator stands in for the bucket (tests/support/gcs_emulator: `make test` builds its
side environment and the `gcs` fixture starts it; without it these tests skip, saying
why). Every path of every step is on the bucket, nothing is shared but the bucket:
create_pretraining_data -> run_pretraining on two multi_worker_mirrored workers, one
killed with kill -9 and both rerun -> run_classifier from the bucket's `pretrained/`,
exporting to the bucket -> extract_features; the files equal the same pipeline's on local
disk. Then the bad buckets: one line each, exit status 2, nothing left behind.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT
from tiny import tiny_config_dict
from url_run_inputs import CORPUS, MRPC_HEADER, MRPC_ROWS, WORDS

pytestmark = [pytest.mark.gcs, pytest.mark.gcs_pipeline]


def _command(script, *args):
  return [sys.executable, os.path.join(ROOT, script), *args]


def _inputs(directory):
  """{relative name: bytes} of the pipeline's inputs."""
  files = {
      "model/vocab.txt": ("\n".join(WORDS) + "\n").encode(),
      "model/bert_config.json": json.dumps(tiny_config_dict(len(WORDS), num_hidden_layers=2)).encode(),
      "corpus.txt": CORPUS.encode(),
      "mrpc/train.tsv": (MRPC_HEADER + "\n".join(MRPC_ROWS * 2) + "\n").encode(),
      "mrpc/dev.tsv": (MRPC_HEADER + "\n".join(MRPC_ROWS) + "\n").encode(),
      "mrpc/test.tsv": ("Index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                        "0\t1\t2\tthe cat sat .\tthe dog ran .\n").encode(),
      "sentences.txt": b"the cat sat on the mat . ||| the dog ran\nshe said no\n"}
  for name, data in files.items():
    path = os.path.join(directory, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
      handle.write(data)
  return files


def _ports():
  ports = []
  for _ in range(2):
    with socket.socket() as s:
      s.bind(("localhost", 0))
      ports.append(s.getsockname()[1])
  return ports


def _pretraining_workers(gcs, inputs, out, logs):
  """Two multi_worker_mirrored workers of run_pretraining.py on this host."""
  cluster = {"worker": [f"localhost:{p}" for p in _ports()]}
  argv = _command("run_pretraining.py", f"--input_file={out}/../data/*.tfrecord",
                  f"--bert_config_file={inputs}/model/bert_config.json",
                  f"--output_dir={out}", "--do_train", "--do_eval", "--max_seq_length=24",
                  "--max_predictions_per_seq=4", "--train_batch_size=4",
                  "--eval_batch_size=4", "--max_eval_steps=2", "--num_train_steps=60",
                  "--num_warmup_steps=1", "--steps_per_loop=1",
                  "--save_checkpoints_steps=4", "--learning_rate=1e-3", "--seed=4",
                  "--distribution_strategy=multi_worker_mirrored")
  argv = [a.replace(f"{out}/../data", out.rsplit("/", 1)[0] + "/data") for a in argv]
  processes = []
  for index in range(2):
    log = open(os.path.join(logs, f"worker-{len(os.listdir(logs))}.log"), "w+",  # noqa: SIM115
               encoding="utf-8")
    env = {**os.environ, **gcs.env(), "TF_CPP_MIN_LOG_LEVEL": "3",
           "TF_CONFIG": json.dumps({"cluster": cluster,
                                    "task": {"type": "worker", "index": index}})}
    # The worker itself, not a wrapper: kill() must reach the run (SIGKILL).
    processes.append((subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log,
                                       cwd=ROOT), log))
  return processes


def _read_log(log):
  log.seek(0)
  return log.read()


def _finish(processes):
  try:
    for process, log in processes:
      assert process.wait(timeout=420) == 0, _read_log(log)[-3000:]
  finally:
    _stop(processes)


def _stop(processes):
  for process, _ in processes:
    if process.poll() is None:
      process.kill()
      process.wait()


def _pipeline(gcs, inputs, root, logs, kill_a_worker):
  """Every step with its inputs under `inputs` and its outputs under `root`."""
  def run(script, *args):
    gcs.run(_command(script, *args), timeout=400, cwd=ROOT,
            env={"TF_CPP_MIN_LOG_LEVEL": "3"})
  run("create_pretraining_data.py", f"--input_file={inputs}/corpus.txt",
      f"--output_file={root}/data/pt.tfrecord", f"--vocab_file={inputs}/model/vocab.txt",
      "--max_seq_length=24", "--max_predictions_per_seq=4", "--dupe_factor=2",
      "--random_seed=7")
  out = f"{root}/pt"
  workers = _pretraining_workers(gcs, inputs, out, logs)
  if kill_a_worker:
    chief, lost = workers
    try:
      deadline = time.time() + 300
      while not any(n.endswith(".index") and "/ckpt-" in "/" + n
                    for n in gcs.list_objects(out)):
        assert chief[0].poll() is None and time.time() < deadline, _read_log(chief[1])[-3000:]
        time.sleep(0.5)
      lost[0].kill()  # SIGKILL
      lost[0].wait(timeout=60)
      assert chief[0].wait(timeout=180) == 2, _read_log(chief[1])[-3000:]
    finally:
      _stop(workers)
    last = [l for l in _read_log(chief[1]).splitlines() if l.strip()][-1]
    assert re.fullmatch(r"run_pretraining\.py: error: the multi-worker run lost worker 1 "
                        r"\(localhost:\d+\) after step \d+(?: \([^)]*\))?; rerun every "
                        r"worker with the same command: they resume from ckpt-\d+ in "
                        + re.escape(out), last), last
    workers = _pretraining_workers(gcs, inputs, out, logs)
  _finish(workers)
  run("run_classifier.py", "--task_name=MRPC", f"--data_dir={inputs}/mrpc",
      f"--vocab_file={inputs}/model/vocab.txt",
      f"--bert_config_file={out}/pretrained/bert_config.json",
      f"--init_checkpoint={out}/pretrained/bert_model.ckpt", f"--output_dir={root}/cls",
      f"--export_dir={root}/export", "--litert=float32", "--do_train", "--do_eval",
      "--do_predict", "--max_seq_length=16", "--train_batch_size=4",
      "--num_train_epochs=1", "--seed=3")
  run("extract_features.py", f"--input_file={inputs}/sentences.txt",
      f"--output_file={root}/features.jsonl", f"--vocab_file={inputs}/model/vocab.txt",
      f"--bert_config_file={out}/pretrained/bert_config.json",
      f"--init_checkpoint={out}/pretrained", "--layers=-1,-2", "--max_seq_length=16",
      "--batch_size=2")


def _key_values(data):
  return {k: float(v) for k, v in (line.split(" = ") for line in data.decode().splitlines())}


def test_the_pipeline_on_a_bucket_equals_local_disk(gcs, gcs_bucket, tmp_path):
  local_inputs = str(tmp_path / "in")
  files = _inputs(local_inputs)
  for name, data in files.items():
    gcs.put_object(f"{gcs_bucket}/in/{name}", data)
  logs = str(tmp_path / "logs")
  os.makedirs(logs)
  local_root = str(tmp_path / "local")
  os.makedirs(local_root)
  _pipeline(gcs, local_inputs, local_root, logs, kill_a_worker=False)
  _pipeline(gcs, f"{gcs_bucket}/in", f"{gcs_bucket}/run", logs, kill_a_worker=True)

  def local(name):
    with open(os.path.join(local_root, name), "rb") as handle:
      return handle.read()

  def bucket(name):
    data = gcs.get_object(f"{gcs_bucket}/run/{name}")
    assert data is not None, f"{gcs_bucket}/run/{name} is missing"
    return data

  # Deterministic outputs: byte for byte.
  for name in ("data/pt.tfrecord", "pt/pretrained/bert_config.json", "export/litert/vocab.txt"):
    assert bucket(name) == local(name), name
  # Resumed after kill -9 against uninterrupted: the same numbers to 1e-6.
  for name in ("pt/eval_results.txt", "cls/eval_results.txt"):
    got, want = _key_values(bucket(name)), _key_values(local(name))
    assert got.keys() == want.keys(), name
    for key in want:
      assert got[key] == pytest.approx(want[key], rel=1e-6, abs=1e-6), (name, key)
  got = [json.loads(l) for l in bucket("features.jsonl").splitlines()]
  want = [json.loads(l) for l in local("features.jsonl").splitlines()]
  assert [[t["token"] for t in g["features"]] for g in got] == [
      [t["token"] for t in w["features"]] for w in want]
  np.testing.assert_allclose(
      [v for g in got for t in g["features"] for layer in t["layers"] for v in layer["values"]],
      [v for w in want for t in w["features"] for layer in t["layers"] for v in layer["values"]],
      atol=1e-5)
  objects = gcs.list_objects(f"{gcs_bucket}/run")
  names = [o[len("run/"):] for o in objects]
  for wanted in ("pt/pretrained/bert_model.ckpt.index", "export/saved_model.pb",
                 "export/ids/saved_model.pb", "export/litert/model_float32.tflite",
                 "cls/test_results.tsv"):
    assert wanted in names, (wanted, names)
  assert any(n.startswith("pt/train/events.out.tfevents") for n in names), names
  # Nothing half-written, no lock, and the non-chief's scratch copy gone.
  left = [n for n in names if re.search(r"(^|/)\.[^/]*(tmp-|saving-|\.lock|lock$)", n)
          or ".worker-" in n]
  assert not left, left


def _one_line(result):
  lines = [l for l in result.stderr.splitlines() if l.strip()
           and not re.match(r"^([IWEF]\d{4} |WARNING: All log messages)", l)]
  assert result.returncode == 2, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  return lines[-1]


def test_bad_buckets_are_one_line_and_leave_nothing(gcs, gcs_bucket, tmp_path):
  vocab = str(tmp_path / "vocab.txt")
  corpus = str(tmp_path / "corpus.txt")
  with open(vocab, "w", encoding="utf-8") as handle:
    handle.write("\n".join(WORDS) + "\n")
  with open(corpus, "w", encoding="utf-8") as handle:
    handle.write(CORPUS)
  readonly = gcs.new_bucket("ro", readonly=True)
  gcs.put_object(f"{gcs_bucket}/afile", b"a user's object\n")
  cases = {
      "gs://no-such-bucket-here/x/pt.tfrecord": "the bucket gs://no-such-bucket-here does not exist",
      f"{readonly}/x/pt.tfrecord": "permission denied",
      f"{gcs_bucket}/afile/pt.tfrecord": f"{gcs_bucket}/afile is a file, not a directory",
  }
  for output, expected in cases.items():
    result = gcs.run(_command("create_pretraining_data.py", f"--input_file={corpus}",
                              f"--output_file={output}", f"--vocab_file={vocab}",
                              "--max_seq_length=24", "--dupe_factor=1"),
                     check=False, timeout=120, cwd=ROOT, env={"TF_CPP_MIN_LOG_LEVEL": "3"})
    line = _one_line(result)
    assert expected in line and output in line, line
  assert gcs.list_objects(readonly) == []
  assert gcs.list_objects(gcs_bucket) == ["afile"]
  assert gcs.get_object(f"{gcs_bucket}/afile") == b"a user's object\n"
