"""Runs a command's root script with its command line, and kills the process (SIGKILL)
when TensorFlow first writes a `checkpoint` state file: between that checkpoint's .index
and the state file, the window a kill -9 of the first save once threw a run away in.

  python tests/support/kill_at_state_file.py run_pretraining.py --output_dir=... ...
"""
import os
import runpy
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tensorflow.python.lib.io import file_io as tf_file_io  # noqa: E402  pylint: disable=g-direct-tensorflow-import

_write = tf_file_io.atomic_write_string_to_file


def _killed_at_the_state_file(filename, contents, overwrite=True):
  if os.path.basename(str(filename)) == "checkpoint":
    os.kill(os.getpid(), signal.SIGKILL)
  return _write(filename, contents, overwrite)


tf_file_io.atomic_write_string_to_file = _killed_at_the_state_file
sys.argv = sys.argv[1:]
sys.path.insert(0, ROOT)
runpy.run_path(os.path.join(ROOT, sys.argv[0]), run_name="__main__")
