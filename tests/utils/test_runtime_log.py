"""runtime_log: TensorFlow's C++ runtime talk is filtered out of every script's stderr;
real errors, our own log lines and --runtime_log's full log get through. Every way to
start a command sets its process up (quiet log, glibc's freed memory) as bert.cli lists."""
import os
import subprocess
import sys

import pytest

from bert import cli
from bert.utils import runtime_log
from conftest import ROOT


def test_is_noise_drops_runtime_lines_and_keeps_everything_else():
  dropped = [
      # TensorFlow 2.20's layout of the same line (the floor, requirements-floor.txt).
      b"2026-11-29 05:06:02.738303: E external/local_xla/xla/stream_executor/cuda/"
      b"cuda_platform.cc:51] failed call to cuInit: INTERNAL: CUDA error: Failed call to "
      b"cuInit: UNKNOWN ERROR (303)",
      b"WARNING: All log messages before absl::InitializeLog() is called are written to "
      b"STDERR",
      b"I0000 00:00:1795382927.808695    5192 cudart_stub.cc:31] Could not find cuda "
      b"drivers on your machine, GPU will not be used.",
      b"W0000 00:00:1795383917.375666   17627 dataset.cc:997] Input of GeneratorDatasetOp",
      b"E0000 00:00:1795382930.458092    5192 cuda_platform.cc:52] failed call to cuInit: "
      b"INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
      b"E0000 00:00:1764043712.120943   21040 util.cc:131] oneDNN supports DT_INT64 only "
      b"on platforms with AVX-512. Falling back to the default Eigen-based implementation "
      b"if present.",
      b"To enable the following instructions: AVX2 FMA, in other operations, rebuild "
      b"TensorFlow with the appropriate compiler flags.",
      b"I1122 21:45:58.767910 140133446048640 functional_saver.py:440] Sharding callback "
      b"duration: 135 microseconds",
      b"I1122 23:23:46.866415 140042834611072 signature_serialization.py:156] Function "
      b"`serve_pair` contains input name(s) 16382, 16384 with unsupported characters "
      b"which will be renamed to unknown, unknown_0 in the SavedModel.",
      b"I1122 23:23:55.399454 140042834611072 fingerprinting_utils.py:49] Writing "
      b"fingerprint to /tmp/pt/.hub.tmp-640ba920/preprocessor/fingerprint.pb",
  ]
  kept = [
      # Our own absl log lines have the same layout, with a .py file.
      b"I1122 21:46:46.405576 140479087569792 finetune.py:160] ***** Running training",
      b"W1122 21:46:46.399942 140479087569792 checkpoints.py:601] No --init_checkpoint",
      # A C++ error that is not known to be harmless, and every fatal line.
      b"E0000 00:00:1795382930.458092    5192 bfc_allocator.cc:1] Allocator ran out of "
      b"memory",
      b"F0000 00:00:1795382930.458092    5192 check.cc:1] Check failed: x",
      b"run_classifier.py: error: --data_dir=/nope: no such directory",
      b"Traceback (most recent call last):",
      b"2026-11-29 05:06:02.738303: E external/local_xla/xla/service/x.cc:1] Out of memory",
  ]
  assert [line for line in dropped if not runtime_log.is_noise(line)] == []
  assert [line for line in kept if runtime_log.is_noise(line)] == []


_PROGRAM = ("from bert.utils import runtime_log; runtime_log.quiet(); import sys; import tensorflow as tf; "
            "tf.constant(1) + 1; sys.stderr.write('ours\\n'); raise SystemExit(2)")


def _stderr(env_extra):
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  result = subprocess.run([sys.executable, "-c", _PROGRAM], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**env, **env_extra})
  assert result.returncode == 2
  return result.stderr.splitlines()


def test_a_script_prints_only_its_own_lines_unless_asked():
  # Quiet: the last line written before exit still arrives (the filter drains at exit).
  assert _stderr({}) == ["ours"]
  full = _stderr({"BERT_RUNTIME_LOG": "1"})
  assert full[-1] == "ours"
  # The runtime's own lines come through: TensorFlow 2.21 prints "WARNING: All log
  # messages before absl::InitializeLog() ..." before any setting can reach it, GPU or not;
  # TensorFlow 2.20 (the floor) its cuInit error on a machine without a GPU.
  assert any(runtime_log.is_noise(line.encode()) for line in full), full
  assert runtime_log.requested(["x.py", "--runtime_log"])
  assert not runtime_log.requested(["x.py", "--noruntime_log"])


# A command started in one of its ways, with absl's app.run and glibc's setting stood in
# for: what its process was set up with when main() would have started.
_SETUP_PROGRAM = r"""
import os, runpy, sys
from absl import app
from bert.utils import cpu_memory
kept = []
cpu_memory.keep_freed_memory = lambda: kept.append(True)
def report(main, **kwargs):  # kwargs: flags_parser, the command's own parse
  print(os.environ.get("TF_CPP_MIN_LOG_LEVEL"), bool(kept), "tensorflow" in sys.modules)
app.run = report
way, command = sys.argv[1:3]
if way == "root script":
  sys.argv = [command + ".py"]
  runpy.run_path(command + ".py", run_name="__main__")
elif way == "module":
  sys.argv = ["-m"]
  runpy.run_module("bert.cli." + command, run_name="__main__", alter_sys=True)
elif way == "python -m bert":
  sys.argv = ["bert", command]
  runpy.run_module("bert", run_name="__main__", alter_sys=True)
else:  # the console script: pyproject.toml's bert.cli.<command>:run
  sys.argv = ["bert-" + command.replace("_", "-")]
  __import__("bert.cli." + command, fromlist=["run"]).run()
"""


@pytest.mark.parametrize("way", ["root script", "module", "python -m bert", "console"])
@pytest.mark.parametrize("command, quiet, keeps_memory", [
    ("run_swag", True, True), ("create_pretraining_data", True, False),
    ("predict_litert", False, False)])
def test_every_way_to_start_a_command_sets_its_process_up_before_tensorflow(
    way, command, quiet, keeps_memory):
  assert (command in cli.QUIET_RUNTIME_LOG, command in cli.KEEP_FREED_MEMORY) == (
      quiet, keeps_memory)
  env = {k: v for k, v in os.environ.items()
         if k not in ("TF_CPP_MIN_LOG_LEVEL", "BERT_RUNTIME_LOG")}
  result = subprocess.run([sys.executable, "-c", _SETUP_PROGRAM, way, command], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.split() == [("2" if quiet else "None"), str(keeps_memory), "False"]


# 256 KB written to stderr by C code that holds Python's lock (ctypes.PyDLL keeps it, as the
# LiteRT converter's pybind11 call does): four times what a pipe holds.
_HELD_LOCK_WRITE = r'''
import ctypes, sys
from bert.utils import runtime_log
runtime_log.quiet()
libc = ctypes.PyDLL(None)
line = b"x" * 1023 + b"\n"
data = line * 256 + b"I0000 00:00:1.0    1 foo.cc:1] runtime noise\n" + b"last\n"
def write():
  done = 0
  while done < len(data):
    done += libc.write(2, data[done:], len(data) - done)
with runtime_log.stderr_to_file():
  write()
sys.stderr.write("ours\n")
'''


def test_a_call_holding_the_lock_that_fills_stderr_does_not_hang():
  """The filter empties its pipe in a Python thread; a C++ call that holds Python's lock
  and writes more than the pipe holds (the LiteRT converter on a bfloat16 model) blocked
  for ever. Inside stderr_to_file it spills to a file: every line arrives, in order, and
  the runtime noise among them is still filtered."""
  result = subprocess.run([sys.executable, "-c", _HELD_LOCK_WRITE], cwd=ROOT,
                          capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": ROOT, "BERT_RUNTIME_LOG": "0"})
  assert result.returncode == 0, result.stderr[-2000:]
  lines = result.stderr.split(b"\n")
  assert lines[:256] == [b"x" * 1023] * 256
  assert lines[256:] == [b"last", b"ours", b""]
