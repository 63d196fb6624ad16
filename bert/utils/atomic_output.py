"""Outputs written atomically, on a local disk or a URL: checks before a long run,
temporary names, renames.

Every output file or directory of ours is written under a temporary name
beside it (`.NAME.tmp-XXXXXXXX`) and renamed into place when complete (`atomic_path`,
`atomic_open`), so a killed or failed run never leaves output that looks finished;
`remove_stale_temporaries` removes what a run killed with SIGKILL left behind.
"""

import contextlib
import errno
import os
import re

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
  file_io.write_bytes(probe, b"")
  file_io.remove(probe)


def ensure_output_dir(path, flag_name="output_dir"):
  """Creates the directory if needed and checks that it can be written to."""
  if not path:
    raise errors.UserError(f"--{flag_name} is required")
  where = f"--{flag_name}={path}"
  with _naming(where):
    if file_io.exists(path) and not file_io.isdir(path):
      raise errors.UserError(f"{where}: exists and is not a directory")
    if paths.is_url(path):
      file_io.makedirs(path)
      _probe_write(path)
      return path
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as exc:
    raise errors.UserError(f"{where}: cannot create it ({exc.strerror})") from None
  if not file_io.writable_dir(path):
    raise errors.UserError(f"{where}: not writable (check its permissions)")
  return path


def prepare_output_file(path, flag_name="output_file"):
  """Checks before the long run that a file can be written at `path`; creates its folder.

  Fails before the work, not after it. Also removes the temporaries that an earlier run
  of the same output left when it was killed (remove_stale_temporaries).
  """
  where = f"--{flag_name}={path}"
  with _naming(where):
    _prepare_output_file(path, where)


def _prepare_output_file(path, where):
  if file_io.isdir(path):
    raise errors.UserError(f"{where}: is a directory, expected a file")
  directory = paths.dirname(paths.abspath(path))
  if paths.is_url(path):
    if file_io.exists(directory) and not file_io.isdir(directory):
      raise errors.UserError(f"{where}: {directory} is a file, not a directory")
    file_io.makedirs(directory)
    _probe_write(directory)
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
  object, its defining file last (file_io.replace). On failure the temporary is
  removed, so a killed or failed run never leaves output that looks finished.
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
  finally:
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
  if file_io.exists(path):
    if not overwrite:
      raise taken
    old = paths.temporary_sibling(path)
    file_io.replace(path, old)
    file_io.replace(tmp, path)
    file_io.rmtree(old)
    return
  if paths.is_url(path):
    file_io.replace(tmp, path)
    return
  try:
    os.replace(tmp, path)
  except OSError as exc:  # a folder that appeared since the check above
    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
      raise
    raise taken from None


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
  # `*.tempstate*`.
  return bool(re.fullmatch(r"\..+\.tmp-[0-9a-f]{8}", name) or
              re.fullmatch(r"\..+\.saving-.+", name) or
              re.fullmatch(r"ckpt-\d+_temp", name) or ".tempstate" in name)


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
