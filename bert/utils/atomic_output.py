"""Outputs written atomically, on a local disk or a URL: checks before a long run,
temporary names, renames.

Every output file or directory of ours is written under a temporary name
beside it (`.NAME.tmp-XXXXXXXX`) and renamed into place when complete (`atomic_path`,
`atomic_open`), so a killed or failed run never leaves output that looks finished;
`remove_stale_temporaries` removes what a run killed with SIGKILL left behind.

An object store has no rename: a folder moved there appears object by object
(file_io.move_folder, its defining files last). While it moves, a marker beside it
(`.NAME.moving`) names the run and the command; a run killed meanwhile leaves it, and
the rerun of the same command recognises the half-moved folder as its own and replaces
it (`left_half_moved`, `clear_half_moved`), never a folder without that marker.
"""

import contextlib
import errno
import json
import os
import re
import socket
import time

from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors


@contextlib.contextmanager
def _naming(where):
  """A filesystem's refusal on a URL, as one line that names the flag: `{where}: why`."""
  try:
    yield
  except file_io.UrlError as exc:
    raise errors.UserError(f"{where}: {exc.reason}") from None


def _probe_write(directory):
  """Writes and removes an empty object in the URL `directory`: a read-only or missing
  bucket fails here, before the work, not when the output is written."""
  probe = paths.temporary_sibling(paths.join(directory, "bert-write-probe"))
  with file_io.url_errors(probe):  # an object store refuses the write when it is closed
    file_io.write_bytes(probe, b"")
  file_io.remove(probe)


def _folders_up_to_the_root(path):
  """`path` and each folder above it, below the bucket (gs://b/a/b: gs://b/a/b, gs://b/a)."""
  head, rest = paths.split_scheme(paths.normpath(path))
  parts = rest.split("/")
  return [head + "/".join(parts[:n]) for n in range(len(parts), 1, -1)]


def check_output_url(path, flag_name, is_file=False, probe=True):
  """The one check of an output URL, before any work: on gs:// the bucket's name is valid
  and the bucket exists; no file (an object) stands where a folder of the output goes;
  the folder can be written (an empty object written and removed there; probe=False
  leaves that to the caller). A local path is checked where it is created
  (ensure_output_dir, prepare_output_file, atomic_path).
  Each failure is one line naming the flag: `--{flag_name}={path}: why`."""
  if not path or not paths.is_url(path):
    return
  where = f"--{flag_name}={path}"
  with _naming(where):
    file_io.check_bucket(path)
    folder = paths.dirname(paths.abspath(path)) if is_file else path
    for parent in _folders_up_to_the_root(folder):
      if file_io.isfile(parent):
        if parent == paths.normpath(path):
          raise errors.UserError(f"{where}: exists and is not a directory")
        raise errors.UserError(f"{where}: {parent} is a file, not a directory")
    if is_file and file_io.isdir(path):
      raise errors.UserError(f"{where}: is a directory, expected a file")
    if probe and paths.scheme(path) != "ram":  # ram://, one process's memory: no refusal
      _probe_write(folder)


def check_output_path(path, flag_name, is_file=False):
  """The one check of an output path before any work, local or URL (check_output_url),
  creating nothing: no folder where the file goes nor file where a folder goes, and the
  nearest folder that exists can be written (a missing one is created where the output
  is written: ensure_output_dir, prepare_output_file). One line naming the flag."""
  if not path:
    return
  if paths.is_url(path):
    check_output_url(path, flag_name, is_file=is_file)
    return
  where = f"--{flag_name}={path}"
  path = os.path.abspath(path)
  if is_file and os.path.isdir(path):
    raise errors.UserError(f"{where}: is a directory, expected a file")
  if not is_file and os.path.exists(path) and not os.path.isdir(path):
    raise errors.UserError(f"{where}: exists and is not a directory")
  parent = os.path.dirname(path) if is_file else path
  while not os.path.exists(parent):
    parent = os.path.dirname(parent)
  if not os.path.isdir(parent):
    raise errors.UserError(f"{where}: {parent} is a file, not a directory")
  if not file_io.writable_dir(parent):
    raise errors.UserError(f"{where}: directory {parent} is not writable")


def ensure_output_dir(path, flag_name="output_dir"):
  """Creates the directory if needed and checks that it can be written to."""
  if not path:
    raise errors.UserError(f"--{flag_name} is required")
  where = f"--{flag_name}={path}"
  if paths.is_url(path):
    check_output_url(path, flag_name, probe=False)
    with _naming(where):
      file_io.makedirs(path)
    # The probe after the folder exists: a probe in a folder not made yet is the only
    # object under its prefix, and while it is written and removed, another worker
    # creating the same folder sees a folder appear and vanish (TensorFlow's makedirs
    # then calls it "not a directory").
    if paths.scheme(path) != "ram":
      with _naming(where):
        _probe_write(path)
    return path
  if file_io.exists(path) and not file_io.isdir(path):
    raise errors.UserError(f"{where}: exists and is not a directory")
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as exc:
    raise errors.UserError(f"{where}: cannot create it ({exc.strerror})") from None
  if not file_io.writable_dir(path):
    raise errors.UserError(f"{where}: not writable (check its permissions)")
  return path


def prepare_output_file(path, flag_name="output_file", clean=True):
  """Checks before the long run that a file can be written at `path`; creates its folder.

  Fails before the work, not after it. With `clean`, also removes the temporaries that
  an earlier run of the same output left when it was killed (remove_stale_temporaries);
  a caller that takes the output's lock next leaves that to the lock (clean=False).
  """
  where = f"--{flag_name}={path}"
  check_output_url(path, flag_name, is_file=True)
  with _naming(where):
    _prepare_output_file(path, where, clean)


def _prepare_output_file(path, where, clean=True):
  if file_io.isdir(path):
    raise errors.UserError(f"{where}: is a directory, expected a file")
  directory = paths.dirname(paths.abspath(path))
  if paths.is_url(path):
    file_io.makedirs(directory)
  else:
    parent = directory
    while not os.path.exists(parent):
      parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
      raise errors.UserError(f"{where}: {parent} is a file, not a directory")
    try:
      os.makedirs(directory, exist_ok=True)
    except OSError as exc:
      raise errors.UserError(
          f"{where}: cannot create directory {directory} ({exc.strerror})") from None
    if not file_io.writable_dir(directory):
      raise errors.UserError(f"{where}: directory {directory} is not writable")
  if clean:
    remove_stale_temporaries(directory, paths.basename(path))


def remove_if_empty(path):
  """Removes the directory `path` if it holds nothing (quietly otherwise)."""
  file_io.rmdir_if_empty(path)


@contextlib.contextmanager
def atomic_path(path, overwrite=True, overwrite_flag="--overwrite"):
  """Yields a temporary path beside `path`; moves it to `path` when the block succeeds.

  Works for files and for directories (a SavedModel), on a local disk or a URL:
  whatever the block writes at the temporary path appears at `path` all at once (a
  rename), or not at all. On GCS, which has no rename, a folder appears object by
  object, its defining files last (file_io.replace), with a marker beside it that
  names this run until it is whole (a rerun of the same command replaces what a kill
  left: clear_half_moved). On failure the temporary is removed, so a killed or failed
  run never leaves output that looks finished.
  A folder written over something at `path` that is not a folder (a user's file) is
  refused, whatever `overwrite` says: that file is never moved nor removed. A folder
  that another writer put at `path` meanwhile is replaced only with `overwrite`, else
  refused in one line naming `overwrite_flag`.
  """
  directory = paths.dirname(paths.abspath(path))
  if paths.is_url(path):
    file_io.makedirs(directory)
  else:
    if not os.path.isdir(directory):
      raise errors.UserError(
          f"{path}: its directory {directory} does not exist; create it first or choose "
          "another output path")
    if not file_io.writable_dir(directory):
      raise errors.UserError(
          f"{path}: directory {directory} is not writable; check its permissions or "
          "choose another output path")
  tmp = paths.temporary_sibling(path)
  try:
    yield tmp
    if file_io.isdir(tmp):
      _move_folder_into_place(tmp, path, overwrite, overwrite_flag)
    elif file_io.exists(tmp):
      file_io.replace(tmp, path)
  except BaseException:
    # What the block or the move failed on comes first: a filesystem that stopped
    # answering fails this cleanup too (a rerun removes the temporary).
    with contextlib.suppress(Exception):
      file_io.remove_any(tmp)
    raise
  file_io.remove_any(tmp)


def _move_folder_into_place(tmp, path, overwrite, overwrite_flag):
  if file_io.islink(path) or (file_io.exists(path) and not file_io.isdir(path)):
    raise errors.UserError(
        f"{path}: is not a folder this run writes (a file or a symbolic link); it is "
        f"left as it is (even with {overwrite_flag}): move it away, or choose another "
        "output path")
  taken = errors.UserError(
      f"{path}: another run has just written it (it was not there when this run "
      f"started); this run's output is not written there: remove it, or pass "
      f"{overwrite_flag} to replace it")
  there = file_io.exists(path)
  if there and not overwrite:
    raise taken
  if paths.is_url(path):
    # Object by object: the marker names this run until the folder is whole.
    marker = mark_moving(tmp, path)
    if there:
      old = paths.temporary_sibling(path)
      file_io.replace(path, old)
      file_io.replace(tmp, path)
      file_io.rmtree(old)
    else:
      file_io.replace(tmp, path)
    file_io.remove(marker)
    return
  if there:
    old = paths.temporary_sibling(path)
    os.replace(path, old)
    os.replace(tmp, path)
    file_io.rmtree(old)
    return
  try:
    os.replace(tmp, path)
  except OSError as exc:  # a folder that appeared since the check above
    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
      raise
    raise taken from None


# --------------------------------------------------------------------------- half-moved folders


def command_line(pid=None):
  """The command line of process `pid` (this one by default), as the system shows it;
  "" where it cannot be read."""
  try:
    with open(f"/proc/{pid or os.getpid()}/cmdline", "rb") as handle:
      return " ".join(p.decode("utf-8", "replace") for p in handle.read().split(b"\0") if p)
  except OSError:
    return ""


def _moving_marker(path):
  directory, name = paths.split(paths.normpath(path))
  return paths.join(directory, f".{name}.moving")


def mark_moving(tmp, path):
  """Writes the marker that names this run as moving the folder `tmp` to the URL `path`
  (atomic_path does, and removes it when the folder is whole; a writer of several folders
  marks them all before the first moves); returns its path."""
  marker = _moving_marker(path)
  file_io.write_bytes(marker, json.dumps({
      "from": paths.basename(tmp), "pid": os.getpid(), "host": socket.gethostname(),
      "command": command_line(), "time": time.time()}).encode("utf-8"))
  return marker


def interrupted_move(path):
  """The record of the run that was moving a folder to the URL `path` when it was killed
  ({"from", "pid", "host", "command", "time"}; {} when unreadable), or None."""
  if not paths.is_url(path):
    return None
  marker = _moving_marker(path)
  if not file_io.exists(marker):
    return None
  try:
    record = json.loads(file_io.read_bytes(marker).decode("utf-8"))
  except (ValueError, errors.UserError):
    return {}
  return record if isinstance(record, dict) else {}


def _same_command(record):
  command = record.get("command")
  return bool(command) and command == command_line()


def left_half_moved(path, where, overwrite=False, overwrite_flag="--overwrite_export"):
  """True when `path` holds a folder that a killed run of this same command left
  half-moved, or with `overwrite` any killed run's: the caller takes it for absent, and
  clear_half_moved (holding the output's lock) removes it before this run writes there.
  Another command's is refused in one line `{where}: ...` naming that run and the fixes."""
  record = interrupted_move(path)
  if record is None:
    return False
  if overwrite or _same_command(record):
    return True
  raise errors.UserError(
      f"{where}: holds an output that a run killed while moving it there left half-moved "
      f"(pid {record.get('pid', '?')} on {record.get('host', '?')}: "
      f"{str(record.get('command', '?'))[:300]}); rerun that command to replace it, or "
      f"pass {overwrite_flag}")


def clear_half_moved(path):
  """Holding the output's lock: removes the folder `path` that a killed run of this same
  command left half-moved, what remains of its temporary, and the marker; returns the
  record of that run, or None when there was none (nothing is touched then)."""
  record = interrupted_move(path)
  if record is None or not _same_command(record):
    return None
  file_io.rmtree(path)
  directory, name = paths.split(paths.normpath(path))
  source = str(record.get("from", ""))
  if re.fullmatch(r"\." + re.escape(name) + r"\.tmp-[0-9a-f]{8}", source):
    file_io.rmtree(paths.join(directory, source))
  file_io.remove(_moving_marker(path))
  return record


@contextlib.contextmanager
def atomic_open(path, mode="w", encoding="utf-8"):
  """open() that writes to a temporary name and moves it into place on success."""
  with atomic_path(path) as tmp:
    if "b" in mode:
      handle = file_io.open(tmp, mode)
    else:
      handle = file_io.open(tmp, mode, encoding=encoding, newline="\n")
    with handle:
      yield handle


def write_key_values(path, values, log=None):
  """Writes `key = value` lines sorted by key, the format of the original's eval_results.txt."""
  with atomic_open(path) as handle:
    for key in sorted(values):
      line = f"{key} = {values[key]}"
      handle.write(line + "\n")
      if log is not None:
        log(line)


def _is_stale_temporary(name):
  # What this project's writers leave when killed: atomic_path's `.<name>.tmp-<8 hex>`,
  # save_google_checkpoint's `.<name>.saving-*`, CheckpointManager's `ckpt-N_temp` and
  # `*.tempstate*`, and TensorFlow's temporary of the `checkpoint` state file
  # (`checkpoint.tmp<32 hex>`, left by a cut during its rename).
  return bool(re.fullmatch(r"\..+\.tmp-[0-9a-f]{8}", name) or
              re.fullmatch(r"\..+\.saving-.+", name) or
              re.fullmatch(r"ckpt-\d+_temp", name) or ".tempstate" in name or
              re.fullmatch(r"checkpoint\.tmp[0-9a-f]{32}", name))


def remove_stale_temporaries(directory, name=None, pattern=None):
  """Removes the temporaries a killed run of ours left in `directory` (only those of
  output `name` when given, or only the names `pattern`, a compiled regex, matches
  whole); returns the names removed. Call it holding the output's lock (`lock_output`,
  `lock_export`), so that no live run's temporary is taken."""
  if not file_io.isdir(directory):
    return []
  removed = []
  for entry in sorted(file_io.listdir(directory)):
    if pattern is not None:
      if not pattern.fullmatch(entry):
        continue
    elif name is not None:
      if not re.fullmatch(r"\." + re.escape(name) + r"\.(tmp-[0-9a-f]{8}|saving-.+)", entry):
        continue
    elif not _is_stale_temporary(entry):
      continue
    with contextlib.suppress(OSError, errors.UserError):
      file_io.remove_any(paths.join(directory, entry))
    removed.append(entry)
  return removed
