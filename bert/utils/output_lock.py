"""One run per output: an exclusive lock on an output directory or file for a run's life.

A second run given the same output is refused in one line naming the
holder's pid and command line (read from /proc when the lock file is empty).
"""

import contextlib
import errno
import fcntl
import os
import re

from absl import logging

from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import script_utils

LOCK_FILE = ".bert-run.lock"


def _process_command(pid):
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
      return " ".join(p.decode("utf-8", "replace") for p in handle.read().split(b"\0") if p)
  except OSError:
    return ""


class OutputLock:
  """An exclusive lock on an output (a directory, or one output file) for a run's life.

  fcntl.flock on a lock file: the kernel drops it when the process ends however it ends,
  so a kill -9 never leaves a lock that blocks the rerun. The file records the holder's
  pid and command line, for the one-line refusal of a second run. Taking the lock also
  removes the temporaries a killed earlier run left there
  (`atomic_output.remove_stale_temporaries`).
  """

  def __init__(self, path, flag_name="output_dir", is_file=False, suffix="", clean=True,
               wait=False, lock_name=None):
    self.path, self.flag_name, self.is_file, self.clean = path, flag_name, is_file, clean
    self.wait = wait  # wait for the holder to finish instead of refusing
    if is_file:
      directory, name = os.path.split(os.path.abspath(path))
      self.lock_path = os.path.join(directory, f".{name}.lock")
      self.directory, self.name = directory, name
    else:
      self.lock_path = os.path.join(path, lock_name or LOCK_FILE + suffix)
      self.directory, self.name = path, None
    self.fd = None

  def acquire(self):
    if file_io.is_remote(self.path):
      return self
    while True:
      try:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
      except OSError as exc:
        where = f"--{self.flag_name}={self.path}" if self.flag_name else self.path
        if os.path.isdir(self.lock_path) or exc.errno == errno.EISDIR:
          # The output is fine; its lock file is not a file (no run of ours makes it so).
          raise script_utils.UserError(
              f"{where}: its run lock {self.lock_path} is a directory, not a lock file; "
              "remove that directory (no run needs it) and rerun") from None
        raise script_utils.UserError(
            f"{where}: cannot write in {self.directory} ({exc.strerror}); create it, check "
            "its permissions or choose another output path") from None
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        holder = os.read(fd, 4096).decode("utf-8", "replace").split("\n", 1)
        pid = holder[0].strip() or "?"
        command = (holder[1].strip() if len(holder) > 1 else "") or _process_command(pid)
        where = (f"--{self.flag_name}={self.path}" if self.flag_name else self.path)
        if self.wait:
          logging.info("Waiting for pid %s to finish writing %s", pid, where)
          try:
            fcntl.flock(fd, fcntl.LOCK_EX)
          except OSError:
            os.close(fd)
            raise
        else:
          os.close(fd)
          raise script_utils.UserError(
              f"{where} is in use by another run (pid {pid}"
              + (f": {command[:300]}" + ("..." if len(command) > 300 else "") if command else "") + "); wait for it to finish or "
              f"stop it, or use another {'output file' if self.is_file else 'directory'}")
      except OSError:
        os.close(fd)
        raise
      # The holder before us may have removed the file between our open and our lock:
      # the lock counts only on the file that is still at lock_path.
      try:
        same = os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino
      except FileNotFoundError:
        same = False
      if same:
        break
      os.close(fd)
    # Who holds it, for a second run's message (on a full disk it stays empty: the
    # refusal then reads the command line from /proc; the writers name the full disk).
    with contextlib.suppress(OSError):
      os.ftruncate(fd, 0)
      os.write(fd, f"{os.getpid()}\n{_process_command(os.getpid())}\n".encode("utf-8"))
    self.fd = fd
    removed = (atomic_output.remove_stale_temporaries(self.directory, self.name)
               if self.clean else [])
    if removed:
      logging.info("Removed %d temporary file(s) an interrupted earlier run left in %s: %s",
                   len(removed), self.directory, ", ".join(removed[:5]))
    return self

  def release(self):
    if self.fd is None:
      return
    with contextlib.suppress(OSError):
      os.remove(self.lock_path)  # still holding the lock: see acquire
    os.close(self.fd)  # closing drops the flock
    self.fd = None

  def __enter__(self):
    return self.acquire()

  def __exit__(self, *exc):
    self.release()


def lock_output(path, flag_name="output_dir", is_file=False, suffix="", clean=True):
  """`with lock_output(options.output_dir): ...` (see OutputLock)."""
  return OutputLock(path, flag_name, is_file, suffix, clean)


# What an export of TF Serving's layout writes in export_dir/ids and export_dir/text
# before renaming: `.N.tmp-<8 hex>` (atomic_output's temporary of version N).
_VERSION_TEMPORARY = re.compile(r"\.[0-9]+\.tmp-[0-9a-f]{8}")
EXPORT_LOCK = ".export.lock"  # in export_dir: the lock of a versioned export
# The folders of a versioned export that hold version folders: the ids and text SavedModels
# and the LiteRT models (bert/export/serving.py writes these, and only these).
VERSIONED_KINDS = ("ids", "text", "litert")


@contextlib.contextmanager
def lock_export(export_dir, version=0, flag_name="export_dir"):
  """Holds an export's lock while it is written, and removes what killed exports left.

  Every writer of an export (TF Serving's versions, the unversioned export, the TF Hub,
  Hugging Face and keras-hub formats) writes under this lock, waiting for another
  export of the same folder to finish first (an export takes seconds), so whatever
  temporary of ours the holder finds there was left by a run killed while exporting:
    version N >= 1: the lock is export_dir/.export.lock; the `.M.tmp-XXXXXXXX` folders
      (any version M) in export_dir/ids, text and litert are removed;
    version 0 (the folder written whole): the lock is `.NAME.lock` beside export_dir;
      `.NAME.tmp-XXXXXXXX` there is removed.
  Only names of that exact form are removed, never a user's file.
  """
  if version:
    if not file_io.is_remote(export_dir):
      try:
        os.makedirs(export_dir, exist_ok=True)
      except OSError as exc:
        raise script_utils.UserError(
            f"--{flag_name}={export_dir}: cannot create it ({exc.strerror})") from None
    lock = OutputLock(export_dir, flag_name, clean=False, wait=True, lock_name=EXPORT_LOCK)
  else:
    lock = OutputLock(export_dir, flag_name, is_file=True, wait=True)
  with lock:
    if version and not file_io.is_remote(export_dir):
      removed = []
      for kind in VERSIONED_KINDS:
        base = os.path.join(export_dir, kind)
        if os.path.isdir(base):
          removed += [os.path.join(kind, n) for n in atomic_output.remove_stale_temporaries(
              base, pattern=_VERSION_TEMPORARY)]
      if removed:
        logging.info("Removed %d temporary folder(s) an interrupted earlier export left in "
                     "%s: %s", len(removed), export_dir, ", ".join(removed[:5]))
    yield
