"""Outputs written atomically: checks before a long run, temporary names, renames.

Every output file or directory of ours is written under a temporary name
beside it (`.NAME.tmp-XXXXXXXX`) and renamed into place when complete (`atomic_path`,
`atomic_open`), so a killed or failed run never leaves output that looks finished;
`remove_stale_temporaries` removes what a run killed with SIGKILL left behind.
"""

import contextlib
import errno
import os
import re
import shutil
import uuid

from bert.utils import file_io
from bert.utils import script_utils


def ensure_output_dir(path, flag_name="output_dir"):
  """Creates the directory if needed and checks that it can be written to."""
  if not path:
    raise script_utils.UserError(f"--{flag_name} is required")
  if file_io.is_remote(path):
    file_io.gfile().makedirs(path)
    return path
  if os.path.exists(path) and not os.path.isdir(path):
    raise script_utils.UserError(f"--{flag_name}={path}: exists and is not a directory")
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as exc:
    raise script_utils.UserError(
        f"--{flag_name}={path}: cannot create it ({exc.strerror})") from None
  if not os.access(path, os.W_OK | os.X_OK):
    raise script_utils.UserError(f"--{flag_name}={path}: not writable (check its permissions)")
  return path


def prepare_output_file(path, flag_name="output_file"):
  """Checks before the long run that a file can be written at `path`; creates its folder.

  Fails before the work, not after it. Also removes the temporaries that an earlier run
  of the same output left when it was killed (remove_stale_temporaries).
  """
  if file_io.is_remote(path):
    return
  if os.path.isdir(path):
    raise script_utils.UserError(f"--{flag_name}={path}: is a directory, expected a file")
  directory = os.path.dirname(os.path.abspath(path))
  parent = directory
  while not os.path.exists(parent):
    parent = os.path.dirname(parent)
  if not os.path.isdir(parent):
    raise script_utils.UserError(f"--{flag_name}={path}: {parent} is a file, not a directory")
  try:
    os.makedirs(directory, exist_ok=True)
  except OSError as exc:
    raise script_utils.UserError(
        f"--{flag_name}={path}: cannot create directory {directory} ({exc.strerror})"
    ) from None
  if not os.access(directory, os.W_OK | os.X_OK):
    raise script_utils.UserError(f"--{flag_name}={path}: directory {directory} is not writable")
  remove_stale_temporaries(directory, os.path.basename(path))


def remove_if_empty(path):
  """Removes the local directory `path` if it holds nothing (quietly otherwise)."""
  try:
    os.rmdir(path)
  except OSError:
    pass


def _temporary_sibling(path):
  directory, name = os.path.split(os.path.normpath(path))
  return os.path.join(directory, f".{name}.tmp-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def atomic_path(path, overwrite=True, overwrite_flag="--overwrite"):
  """Yields a temporary path beside `path`; renames it to `path` when the block succeeds.

  Works for files and for directories (a SavedModel): whatever the block writes at the
  temporary path appears at `path` all at once, or not at all. On failure the temporary
  is removed, so a killed or failed run never leaves output that looks finished.
  A folder written over something at `path` that is not a folder (a user's file) is
  refused, whatever `overwrite` says: that file is never moved nor removed. A folder
  that another writer put at `path` meanwhile is replaced only with `overwrite`, else
  refused in one line naming `overwrite_flag`.
  """
  if file_io.is_remote(path):
    gfile = file_io.gfile()
    tmp = _temporary_sibling(path)
    try:
      yield tmp
      if gfile.isdir(tmp):
        if gfile.exists(path):
          gfile.rmtree(path)
        gfile.rename(tmp, path)
      else:
        gfile.rename(tmp, path, overwrite=overwrite)
    finally:
      if gfile.exists(tmp):
        if gfile.isdir(tmp):
          gfile.rmtree(tmp)
        else:
          gfile.remove(tmp)
    return
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise script_utils.UserError(
        f"{path}: its directory {directory} does not exist; create it first or choose "
        "another output path")
  if not os.access(directory, os.W_OK | os.X_OK):
    raise script_utils.UserError(
        f"{path}: directory {directory} is not writable; check its permissions or choose "
        "another output path")
  tmp = _temporary_sibling(path)
  try:
    yield tmp
    if os.path.isdir(tmp):
      if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
        raise script_utils.UserError(
            f"{path}: is not a folder this run writes (a file or a symbolic link); it is "
            f"left as it is (even with {overwrite_flag}): move it away, or choose another "
            "output path")
      taken = script_utils.UserError(
          f"{path}: another run has just written it (it was not there when this run "
          f"started); this run's output is not written there: remove it, or pass "
          f"{overwrite_flag} to replace it")
      if os.path.exists(path):
        if not overwrite:
          raise taken
        old = _temporary_sibling(path)
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
      else:
        try:
          os.replace(tmp, path)
        except OSError as exc:  # a folder that appeared since the check above
          if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
          raise taken from None
    elif os.path.exists(tmp):
      os.replace(tmp, path)
  finally:
    if os.path.isdir(tmp):
      shutil.rmtree(tmp, ignore_errors=True)
    elif os.path.exists(tmp):
      os.remove(tmp)


@contextlib.contextmanager
def atomic_open(path, mode="w", encoding="utf-8"):
  """open() that writes to a temporary name and renames into place on success."""
  with atomic_path(path) as tmp:
    if file_io.is_remote(path):
      with file_io.gfile().GFile(tmp, mode) as handle:
        yield handle
    else:
      kwargs = {} if "b" in mode else {"encoding": encoding, "newline": "\n"}
      with open(tmp, mode, **kwargs) as handle:
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
  if file_io.is_remote(directory) or not os.path.isdir(directory):
    return []
  removed = []
  for entry in sorted(os.listdir(directory)):
    if pattern is not None:
      if not pattern.fullmatch(entry):
        continue
    elif name is not None:
      if not re.fullmatch(r"\." + re.escape(name) + r"\.(tmp-[0-9a-f]{8}|saving-.+)", entry):
        continue
    elif not _is_stale_temporary(entry):
      continue
    path = os.path.join(directory, entry)
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    else:
      with contextlib.suppress(OSError):
        os.remove(path)
    removed.append(entry)
  return removed
