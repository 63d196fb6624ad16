"""bert/utils/file_io.py on URLs (ram:// through bert/utils/ram_filesystem.py), the atomic
writers and the run lock on an object store.

In process, on TensorFlow's ram:// (the same tf.io.gfile calls as gs://); the real GCS
client: tests/utils/test_gcs_client.py and tests/commands/test_gcs_pipeline.py.
"""
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
import uuid

import pytest

from bert.formats import serving
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


def test_object_lock_of_a_dead_run_is_taken_over(caplog):
  """A run killed with kill -9 leaves its lock object: on the same host, a dead pid is
  taken over at once; elsewhere, a heartbeat older than STALE_S. Each takeover is one
  line in the log naming the old holder."""
  caplog.set_level(logging.INFO)
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
  said = [r.getMessage() for r in caplog.records if "Took over" in r.getMessage()]
  assert said[0] == (f"Took over the run lock {lock_file} of --output_dir={out} from pid "
                     f"{dead} on {socket.gethostname()} (x): its pid is dead on this host")
  assert re.fullmatch(rf"Took over the run lock {re.escape(lock_file)} of --output_dir="
                      rf"{re.escape(out)} from pid 1 on elsewhere \(x\): its last heartbeat "
                      r"is \d+ s old", said[1]), said[1]
  assert len(said) == 2
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


# --------------------------------------------------------------------------- output checks


def test_an_output_url_is_checked_once_before_any_work():
  root = _ram("chk")
  file_io.write_bytes(paths.join(root, "afile"), b"a user's file")
  with pytest.raises(errors.UserError) as refused:
    atomic_output.check_output_url(paths.join(root, "afile", "out"), "output_dir")
  assert str(refused.value) == (f"--output_dir={root}/afile/out: {root}/afile is a file, "
                                "not a directory")
  with pytest.raises(errors.UserError) as refused:
    atomic_output.check_output_url(paths.join(root, "afile", "x", "f.jsonl"), "output_file",
                                   is_file=True)
  assert str(refused.value) == (f"--output_file={root}/afile/x/f.jsonl: {root}/afile is a "
                                "file, not a directory")
  file_io.makedirs(paths.join(root, "folder"))
  with pytest.raises(errors.UserError) as refused:
    atomic_output.check_output_url(paths.join(root, "folder"), "output_file", is_file=True)
  assert str(refused.value) == f"--output_file={root}/folder: is a directory, expected a file"
  # A bucket name GCS refuses is said before any request (no emulator is needed here).
  with pytest.raises(errors.UserError) as refused:
    atomic_output.check_output_url("gs://Upper/exp", "export_dir")
  assert str(refused.value) == ("--export_dir=gs://Upper/exp: gs://Upper is not a valid "
                                "bucket name (bucket names have no capital letters); check "
                                "the name")
  atomic_output.check_output_url(paths.join(root, "new", "out"), "output_dir")
  assert file_io.walk_files(root) == ["afile"]  # the check writes nothing


def test_a_folder_moves_with_its_defining_files_last_at_every_level():
  names = ["saved_model.pb", "fingerprint.pb", "variables/variables.index",
           "variables/variables.data-00000-of-00001", "ids/saved_model.pb",
           "ids/fingerprint.pb", "ids/variables/variables.index",
           "ids/variables/variables.data-00000-of-00001", "assets/vocab.txt",
           "litert/model.json", "litert/model_float32.tflite", "checkpoint",
           "ckpt-2.index", "ckpt-2.data-00000-of-00001"]
  assert sorted(names, key=file_io.move_order) == [
      "ckpt-2.data-00000-of-00001", "assets/vocab.txt",
      "ids/variables/variables.data-00000-of-00001", "ids/variables/variables.index",
      "ids/fingerprint.pb", "ids/saved_model.pb", "litert/model_float32.tflite",
      "litert/model.json", "variables/variables.data-00000-of-00001",
      "variables/variables.index", "ckpt-2.index", "fingerprint.pb", "checkpoint",
      "saved_model.pb"]
  src, dst = _ram("src"), _ram("dst")
  for name in names:
    file_io.write_bytes(paths.join(src, name), name.encode())
  file_io.replace(src, dst)
  assert file_io.walk_files(dst) == sorted(names) and not file_io.exists(src)
  assert file_io.read_bytes(paths.join(dst, "ids/saved_model.pb")) == b"ids/saved_model.pb"


EXPORT = {"saved_model.pb": b"pb", "variables/variables.index": b"index",
          "variables/variables.data-00000-of-00001": b"data", "ids/saved_model.pb": b"ids-pb",
          "ids/variables/variables.index": b"ids-index",
          "ids/variables/variables.data-00000-of-00001": b"ids-data",
          "litert/model_float32.tflite": b"tflite", "litert/model.json": b"{}"}


def _defining_files_come_last(found):
  """No folder of the export shows a defining file before all the rest of it."""
  for folder in ("", "variables/", "ids/", "ids/variables/", "litert/"):
    defining = [n for n in EXPORT if n.startswith(folder) and file_io.move_order(n) == max(
        file_io.move_order(m) for m in EXPORT if m.startswith(folder))]
    if set(defining) & set(found):
      assert {n for n in EXPORT if n.startswith(folder)} <= set(found), (folder, found)


def _killed_while_moving(export_dir, moved, command):
  """What a run killed with kill -9 after `moved` files of its export leaves on an object
  store: the export half-moved, the rest in its temporary, the marker, and its lock."""
  tmp = paths.temporary_sibling(export_dir)
  for name, data in EXPORT.items():
    file_io.write_bytes(paths.join(tmp, name), data)
  atomic_output.mark_moving(tmp, export_dir)
  marker = paths.join(paths.dirname(export_dir), f".{paths.basename(export_dir)}.moving")
  record = json.loads(file_io.read_bytes(marker))
  file_io.write_bytes(marker, json.dumps(dict(record, command=command)).encode())
  for name in sorted(EXPORT, key=file_io.move_order)[:moved]:
    file_io.replace(paths.join(tmp, name), paths.join(export_dir, name))
  dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                        capture_output=True, text=True, check=True).stdout.strip()
  file_io.write_bytes(
      paths.join(paths.dirname(export_dir), f".{paths.basename(export_dir)}.lock"),
      json.dumps({"token": "old", "pid": int(dead), "host": socket.gethostname(),
                  "command": command, "time": time.time()}).encode())
  return dead


def _export_again(export_dir, overwrite=False):
  check = lambda: serving.check_export_target(export_dir, 0, overwrite)  # noqa: E731
  with output_lock.writing_export(export_dir, check, overwrite=overwrite) as tmp:
    file_io.write_bytes(paths.join(tmp, "saved_model.pb"), b"new")


@pytest.mark.parametrize("moved", range(len(EXPORT) + 1))
def test_the_rerun_replaces_an_export_a_kill_left_half_moved(moved, caplog):
  """kill -9 after each file of the move (0: before the first): a reader never finds a
  folder's defining file without the rest, and the rerun of the same command replaces
  the export without --overwrite_export, leaving no temporary, marker nor lock."""
  root = _ram("kill")
  export_dir = paths.join(root, "exp")
  dead = _killed_while_moving(export_dir, moved, atomic_output.command_line())
  found = file_io.walk_files(export_dir) if file_io.exists(export_dir) else []
  assert found == sorted(sorted(EXPORT, key=file_io.move_order)[:moved])
  _defining_files_come_last(found)
  caplog.set_level(logging.INFO)
  _export_again(export_dir)
  assert file_io.walk_files(root) == ["exp/saved_model.pb"]
  assert file_io.read_bytes(paths.join(export_dir, "saved_model.pb")) == b"new"
  said = [r.getMessage() for r in caplog.records]
  assert any(m.startswith(f"Took over the run lock {root}/.exp.lock of --export_dir="
                          f"{export_dir} from pid {dead} on {socket.gethostname()} (")
             and m.endswith("): its pid is dead on this host") for m in said), said
  assert (f"Removed {export_dir}: a run of this same command (pid {os.getpid()} on "
          f"{socket.gethostname()}) was killed while moving it into place; this run writes "
          "it again") in said


def test_a_half_moved_export_of_another_command_is_refused_and_a_users_folder_kept():
  root = _ram("other")
  export_dir = paths.join(root, "exp")
  _killed_while_moving(export_dir, 3, "python export_encoder.py --export_dir=elsewhere")
  with pytest.raises(errors.UserError) as refused:
    _export_again(export_dir)
  assert str(refused.value).startswith(
      f"--export_dir={export_dir}: holds an output that a run killed while moving it there "
      f"left half-moved (pid {os.getpid()} on {socket.gethostname()}: python "
      "export_encoder.py --export_dir=elsewhere); rerun that command to replace it, or "
      "pass --overwrite_export")
  assert len(file_io.walk_files(export_dir)) == 3
  _export_again(export_dir, overwrite=True)
  assert file_io.walk_files(root) == ["exp/saved_model.pb"]
  # A user's folder (no marker of a move of ours) is never taken for one.
  mine = paths.join(root, "mine")
  file_io.write_bytes(paths.join(mine, "notes.txt"), b"mine")
  with pytest.raises(errors.UserError, match=r"exists and is not empty"):
    _export_again(mine)
  assert file_io.read_bytes(paths.join(mine, "notes.txt")) == b"mine"


def test_temporaries_of_a_killed_run_are_cleared_and_only_those():
  out = _ram("tmps")
  state_tmp = "checkpoint.tmp" + uuid.uuid4().hex
  kept = ["checkpoint", "checkpoint.tmp", "checkpoint.tmp" + "0" * 31, "ckpt-2.index"]
  for name in [state_tmp, "ckpt-4_temp/part"] + kept:
    file_io.write_bytes(paths.join(out, name), b"x")
  with output_lock.lock_output(out):
    pass
  assert sorted(file_io.listdir(out)) == sorted(kept)


def test_a_local_lock_left_by_a_killed_run_is_taken_over_and_said(tmp_path, caplog):
  caplog.set_level(logging.INFO)
  (tmp_path / ".bert-run.lock").write_text("4242\npython run_classifier.py --x\n")
  with output_lock.lock_output(str(tmp_path)):
    pass
  assert [r.getMessage() for r in caplog.records if "Took over" in r.getMessage()] == [
      f"Took over the run lock {tmp_path}/.bert-run.lock of --output_dir={tmp_path} from "
      "pid 4242, which is gone (python run_classifier.py --x)"]
