"""bert/utils/file_io.py on URLs (ram:// through bert/utils/ram_filesystem.py), the atomic
writers and the run lock on an object store.

In process, on TensorFlow's ram:// (the same tf.io.gfile calls as gs://); the real GCS
client: tests/utils/test_gcs_client.py and tests/commands/test_gcs_pipeline.py.
"""
import os
import socket
import subprocess
import sys
import uuid

import pytest

from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import output_lock
from bert.utils import errors


def _ram(name):
  return f"ram://t-{uuid.uuid4().hex[:8]}/{name}"


def test_text_and_binary_files_round_trip_on_ram():
  path = _ram("a/b/text.txt")
  file_io.makedirs(paths.dirname(path))
  with file_io.open(path, "w", newline="\n") as handle:
    handle.write("\ufeffgrüße\r\nzwei\n")
  assert file_io.read_bytes(path) == "\ufeffgrüße\r\nzwei\n".encode("utf-8")
  with file_io.open(path) as handle:  # universal newlines, as open()
    assert handle.read() == "\ufeffgrüße\nzwei\n"
  with file_io.open_text(path) as lines:  # newline="", the byte-order mark dropped
    assert list(lines) == ["grüße\r\n", "zwei\n"]
  # A shorter rewrite leaves no tail of the longer one (ram:// does not truncate).
  file_io.write_bytes(path, b"x")
  assert file_io.read_bytes(path) == b"x"
  with file_io.open_binary(path) as handle:
    handle.seek(0)
    assert handle.read() == b"x"
  assert file_io.getsize(path) == 1


def test_ram_listing_existence_and_folders():
  root = _ram("out")
  file_io.write_bytes(paths.join(root, "eval_results.txt"), b"1")
  file_io.write_bytes(paths.join(root, "eval", "events"), b"2")
  file_io.write_bytes(paths.join(root, "ckpt.index"), b"3")
  assert sorted(file_io.listdir(root)) == ["ckpt.index", "eval", "eval_results.txt"]
  assert file_io.listdir(paths.join(root, "eval")) == ["events"]
  assert file_io.walk_files(root) == ["ckpt.index", "eval/events", "eval_results.txt"]
  assert not file_io.exists(paths.join(root, "ckpt"))  # a prefix of a name, not a file
  assert not file_io.isdir(paths.join(root, "ckpt"))
  assert file_io.isdir(paths.join(root, "eval")) and file_io.isfile(
      paths.join(root, "eval_results.txt"))
  assert file_io.glob(paths.join(root, "*.txt")) == [paths.join(root, "eval_results.txt")]
  file_io.rmtree(root)
  assert not file_io.exists(root)


def test_atomic_open_and_folders_on_ram_leave_no_temporary():
  root = _ram("o")
  file_io.makedirs(root)
  target = paths.join(root, "results.txt")
  with atomic_output.atomic_open(target) as handle:
    handle.write("a = 1\n")
    assert file_io.listdir(root) != ["results.txt"]  # not under its name yet
  assert file_io.listdir(root) == ["results.txt"]
  with pytest.raises(RuntimeError):
    with atomic_output.atomic_open(target) as handle:
      handle.write("half")
      raise RuntimeError("killed")
  assert file_io.read_bytes(target) == b"a = 1\n" and file_io.listdir(root) == ["results.txt"]
  folder = paths.join(root, "export")
  with atomic_output.atomic_path(folder) as tmp:
    file_io.write_bytes(paths.join(tmp, "variables", "v.index"), b"i")
    file_io.write_bytes(paths.join(tmp, "saved_model.pb"), b"pb")
  assert file_io.walk_files(folder) == ["saved_model.pb", "variables/v.index"]
  assert sorted(file_io.listdir(root)) == ["export", "results.txt"]
  # A killed run's temporaries are removed by the next run of the same output.
  stale = paths.temporary_sibling(target)
  file_io.write_bytes(stale, b"x")
  assert atomic_output.remove_stale_temporaries(root, "results.txt") == [
      paths.basename(stale)]


def test_object_lock_refuses_a_second_run_and_is_released():
  out = _ram("run")
  file_io.makedirs(out)
  with output_lock.lock_output(out):
    with pytest.raises(errors.UserError) as refused:
      output_lock.lock_output(out).acquire()
    message = str(refused.value)
    assert message.startswith(f"--output_dir={out} is in use by another run (pid {os.getpid()} "
                              f"on {socket.gethostname()}: ")
    assert message.endswith("); wait for it to finish or stop it, or use another directory")
    assert file_io.listdir(out) == [".bert-run.lock"]
  assert file_io.listdir(out) == []


def test_object_lock_of_a_dead_run_is_taken_over():
  """A run killed with kill -9 leaves its lock object: on the same host, a dead pid is
  taken over at once; elsewhere, a heartbeat older than STALE_S."""
  out = _ram("dead")
  file_io.makedirs(out)
  dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                        capture_output=True, text=True, check=True).stdout.strip()
  lock_file = paths.join(out, ".bert-run.lock")
  file_io.write_bytes(lock_file, ('{"token": "old", "pid": %s, "host": "%s", "command": "x", '
                                  '"time": 9e18}' % (dead, socket.gethostname())).encode())
  with output_lock.lock_output(out):
    pass
  file_io.write_bytes(lock_file, b'{"token": "old", "pid": 1, "host": "elsewhere", '
                      b'"command": "x", "time": 0}')  # its heartbeat stopped long ago
  with output_lock.lock_output(out):
    pass
  file_io.write_bytes(lock_file, b'{"token": "old", "pid": 1, "host": "elsewhere", '
                      b'"command": "x", "time": 9e18}')  # alive, on another host
  with pytest.raises(errors.UserError, match=r"pid 1 on elsewhere: x\)"):
    output_lock.lock_output(out).acquire()


def test_a_scheme_no_filesystem_knows_is_one_line_in_the_library():
  with pytest.raises(file_io.UrlError) as refused:
    file_io.exists("foo://bucket/x")
  assert refused.value.path == "foo://bucket/x"
  assert refused.value.reason.startswith("no filesystem knows the scheme 'foo://'")
  with pytest.raises(errors.UserError, match=r"^--output_dir=foo://b/o: no filesystem"):
    atomic_output.ensure_output_dir("foo://b/o")
