"""Training on gs:// through kills and a cut network, against the local GCS emulator.

Slow (three training runs): `make test-slow`. The same mechanisms are covered in the
default suite in process (tests/training/test_checkpoints.py: a kill at each point of a
save, storage failures as one line) and in `make test`'s gs:// stage
(tests/commands/test_gcs_faults.py).

One run_pretraining.py, three times on one --output_dir in a bucket:
  1. killed (SIGKILL) between its first checkpoint's .index and the `checkpoint` file
     (tests/support/kill_at_state_file.py);
  2. rerun: it resumes from that checkpoint (not from step 0); the proxy in front of the
     bucket is stopped mid-run: one line, exit status 2, naming the flag (or the input
     it was reading), the step and the checkpoint the rerun resumes from;
  3. the proxy started again, rerun: it resumes from there and finishes.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from tiny import tiny_config_dict
from test_url_paths import CORPUS, WORDS

pytestmark = [pytest.mark.gcs, pytest.mark.slow]
LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING: All log messages)")


def _inputs(gcs, bucket, tmp_path):
  vocab, config, corpus = (str(tmp_path / n) for n in ("vocab.txt", "config.json", "c.txt"))
  for path, text in ((vocab, "\n".join(WORDS) + "\n"), (corpus, CORPUS),
                     (config, json.dumps(tiny_config_dict(len(WORDS), num_hidden_layers=2)))):
    with open(path, "w", encoding="utf-8") as handle:
      handle.write(text)
  records = str(tmp_path / "pt.tfrecord")
  gcs.run([sys.executable, os.path.join(ROOT, "create_pretraining_data.py"),
           f"--input_file={corpus}", f"--output_file={records}", f"--vocab_file={vocab}",
           "--max_seq_length=24", "--max_predictions_per_seq=4", "--dupe_factor=2",
           "--random_seed=7", "--num_workers=0"], timeout=300, cwd=ROOT)
  with open(records, "rb") as handle:
    gcs.put_object(f"{bucket}/data/pt.tfrecord", handle.read())
  return config


def _last_line(stderr):
  lines = [l for l in stderr.splitlines() if l.strip() and not LOG_LINE.match(l)]
  return lines[-1] if lines else ""


def test_a_kill_at_the_first_state_file_and_a_cut_network_lose_nothing(gcs, gcs_bucket,
                                                                        tmp_path):
  config = _inputs(gcs, gcs_bucket, tmp_path)
  out, data = f"{gcs_bucket}/pt", f"{gcs_bucket}/data/pt.tfrecord"
  argv = [os.path.join(ROOT, "run_pretraining.py"), f"--input_file={data}",
          f"--bert_config_file={config}", f"--output_dir={out}", "--do_train",
          "--max_seq_length=24", "--max_predictions_per_seq=4", "--train_batch_size=4",
          "--num_train_steps=80", "--num_warmup_steps=1", "--steps_per_loop=1",
          "--save_checkpoints_steps=4", "--learning_rate=1e-3", "--seed=4"]
  env = {"TF_CPP_MIN_LOG_LEVEL": "3"}
  killed = gcs.run([sys.executable, os.path.join(ROOT, "tests", "support",
                                                 "kill_at_state_file.py"), *argv],
                   check=False, timeout=400, cwd=ROOT, env=env)
  assert killed.returncode == -9, killed.stderr[-3000:]
  names = [n[len("pt/"):] for n in gcs.list_objects(out)]
  assert "ckpt-4.index" in names and "checkpoint" not in names, names

  # The rerun resumes from ckpt-4; the network is cut once ckpt-8 is there.
  log = open(tmp_path / "rerun.log", "w+", encoding="utf-8")  # noqa: SIM115
  rerun = subprocess.Popen([sys.executable, *argv], env={**os.environ, **gcs.env(), **env},
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
  try:
    deadline = time.time() + 300
    while "pt/ckpt-8.index" not in gcs.list_objects(out):
      assert rerun.poll() is None and time.time() < deadline, rerun.returncode
      time.sleep(0.2)
    gcs.stop_proxy()
    assert rerun.wait(timeout=300) == 2
  finally:
    if rerun.poll() is None:
      rerun.kill()
  log.seek(0)
  said = log.read()
  assert "Traceback" not in said, said[-3000:]
  assert (f"--output_dir={out}: '{out}/checkpoint' is missing; resuming from ckpt-4, the "
          "newest whole checkpoint there") in said
  assert f"Resumed from {out}/ckpt-4 at step 4" in said
  line = _last_line(said)
  cut = re.fullmatch(
      rf"run_pretraining\.py: error: (--output_dir={re.escape(out)}|{re.escape(data)}): the "
      r"storage stopped answering at step (\d+) while (writing .+|reading it) \(.+\); rerun "
      r"the same command once it answers again: it resumes from ckpt-(\d+)", line)
  assert cut, line
  named = int(cut.group(4))
  assert named >= 8 and int(cut.group(2)) >= named

  # The network back: the same command resumes from there and finishes.
  gcs.start_proxy()
  done = gcs.run([sys.executable, *argv], timeout=600, cwd=ROOT, env=env)
  resumed = re.search(rf"Resumed from {re.escape(out)}/ckpt-(\d+) at step \d+", done.stderr)
  assert resumed and int(resumed.group(1)) >= named, done.stderr[-3000:]
  names = [n[len("pt/"):] for n in gcs.list_objects(out)]
  assert "ckpt-80.index" in names and "pretrained/bert_model.ckpt.index" in names, names
  left = [n for n in names if re.search(r"(^|/)(\.[^/]*(tmp-|saving-|\.lock|\.moving)|"
                                        r"checkpoint\.tmp|ckpt-\d+_temp)", n)]
  assert not left, left
