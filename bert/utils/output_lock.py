"""One run per output: an exclusive lock on an output directory or file for a run's life.

A second run given the same output is refused in one line naming the
holder's pid and command line (read from /proc when the lock file is empty).
On a local disk the lock is the kernel's (`flock`); on a URL (an object store, which
has no lock) it is an object naming its holder and kept fresh by a heartbeat
(`ObjectLock`).
"""

import contextlib
import errno
import fcntl
import json
import os
import re
import socket
import threading
import time
import uuid

from absl import logging

from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors

LOCK_FILE = ".bert-run.lock"


def _shown(command):
  return command[:300] + ("..." if len(command) > 300 else "")


class OutputLock:
  """An exclusive lock on an output (a directory, or one output file) for a run's life.

  fcntl.flock on a lock file: the kernel drops it when the process ends however it ends,
  so a kill -9 never leaves a lock that blocks the rerun. The file records the holder's
  pid and command line, for the one-line refusal of a second run. Taking the lock also
  removes the temporaries a killed earlier run left there
  (`atomic_output.remove_stale_temporaries`).
  """

  def __init__(self, path, flag_name="output_dir", is_file=False, suffix="", clean=True,
               wait=False, lock_name=None, subfolders=()):
    self.path, self.flag_name, self.is_file, self.clean = path, flag_name, is_file, clean
    # Folders of the output that its runs write into (a run folder's best/): their
    # temporaries are cleared with the output's own.
    self.subfolders = tuple(subfolders)
    self.wait = wait  # wait for the holder to finish instead of refusing
    if is_file:
      directory, name = paths.split(paths.abspath(path))
      self.lock_path = paths.join(directory, f".{name}.lock")
      self.directory, self.name = directory, name
    else:
      self.lock_path = paths.join(path, lock_name or LOCK_FILE + suffix)
      self.directory, self.name = path, None
    self.fd = None

  def _where(self):
    return f"--{self.flag_name}={self.path}" if self.flag_name else self.path

  def _refusal(self, pid, command, host=""):
    on = f" on {host}" if host else ""
    return errors.UserError(
        f"{self._where()} is in use by another run (pid {pid}{on}"
        + (f": {_shown(command)}" if command else "")
        + "); wait for it to finish or stop it, or use another "
        + ("output file" if self.is_file else "directory"))

  def _clean(self):
    if not self.clean:
      return
    removed = atomic_output.remove_stale_temporaries(self.directory, self.name)
    for folder in self.subfolders:
      removed += [paths.join(folder, name) for name in atomic_output.remove_stale_temporaries(
          paths.join(self.directory, folder))]
    if removed:
      logging.info("Removed %d temporary file(s) an interrupted earlier run left in %s: %s",
                   len(removed), self.directory, ", ".join(removed[:5]))

  def acquire(self):
    while True:
      try:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
      except OSError as exc:
        where = f"--{self.flag_name}={self.path}" if self.flag_name else self.path
        if os.path.isdir(self.lock_path) or exc.errno == errno.EISDIR:
          # The output is fine; its lock file is not a file (no run of ours makes it so).
          raise errors.UserError(
              f"{where}: its run lock {self.lock_path} is a directory, not a lock file; "
              "remove that directory (no run needs it) and rerun") from None
        raise errors.UserError(
            f"{where}: cannot write in {self.directory} ({exc.strerror}); create it, check "
            "its permissions or choose another output path") from None
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        holder = os.read(fd, 4096).decode("utf-8", "replace").split("\n", 1)
        pid = holder[0].strip() or "?"
        command = (holder[1].strip() if len(holder) > 1 else "") or atomic_output.command_line(pid)
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
          raise self._refusal(pid, command)
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
    # A lock file that is still there names a run that ended without releasing it (a
    # kill -9): the kernel dropped its lock, and this run takes it over.
    with contextlib.suppress(OSError):
      left = os.pread(fd, 4096, 0).decode("utf-8", "replace").split("\n", 1)
      if left[0].strip() and left[0].strip() != str(os.getpid()):
        logging.warning("Took over the run lock %s of %s from pid %s, which is gone%s",
                        self.lock_path, self._where(), left[0].strip(),
                        f" ({_shown(left[1].strip())})" if len(left) > 1 and left[1].strip()
                        else "")
    # Who holds it, for a second run's message (on a full disk it stays empty: the
    # refusal then reads the command line from /proc; the writers name the full disk).
    with contextlib.suppress(OSError):
      os.ftruncate(fd, 0)
      os.write(fd, f"{os.getpid()}\n{atomic_output.command_line()}\n".encode("utf-8"))
    self.fd = fd
    self._clean()
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


class ObjectLock(OutputLock):
  """The same lock on a URL: an object store has no flock, so the lock is an object.

  The object (JSON: a token of this run, its pid, host and command line, and the time of
  its last heartbeat) is taken by check-then-verify: read it; if another live run holds
  it, refuse (or wait); else write ours, wait `SETTLE_S`, and read it back; it is ours
  if our token is still there (of two runs starting together, the later write wins and
  the earlier run sees that). A thread rewrites it every `HEARTBEAT_S`. A holder is gone
  when its heartbeat is older than `STALE_S`, or at once when it ran on this host and
  its pid is dead (a kill -9 then blocks nothing). This is weaker than flock: two runs
  whose writes take longer than SETTLE_S apart can both believe they hold it, and a run
  stalled for STALE_S loses it. docs/cloud.md says so.
  """

  SETTLE_S = 1.0
  HEARTBEAT_S = 10.0
  STALE_S = 60.0

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.token = uuid.uuid4().hex
    self._stop = threading.Event()
    self._thread = None
    self._held = False

  def _record(self):
    return json.dumps({"token": self.token, "pid": os.getpid(), "host": socket.gethostname(),
                       "command": atomic_output.command_line(), "time": time.time()})

  def _holder(self):
    try:
      with file_io.open(self.lock_path) as handle:
        return json.loads(handle.read())
    except (OSError, ValueError, errors.UserError):
      return None
    except Exception as exc:  # pylint: disable=broad-except
      if type(exc).__module__.startswith("tensorflow"):  # not found meanwhile
        return None
      raise

  def _why_gone(self, holder):
    """Why the run that wrote `holder` no longer holds the lock, in words; None while it
    may still be running."""
    try:
      age = time.time() - float(holder.get("time", 0))
    except (TypeError, ValueError):
      age = float("inf")
    if age > self.STALE_S:
      return (f"its last heartbeat is {age:.0f} s old" if age != float("inf")
              else "its record holds no heartbeat")
    if holder.get("host") == socket.gethostname() and holder.get("pid") != os.getpid():
      try:
        os.kill(int(holder["pid"]), 0)
      except ProcessLookupError:
        return "its pid is dead on this host"
      except (OSError, ValueError, TypeError):
        pass
    return None

  def _log_takeover(self, holder, why):
    command = str(holder.get("command", "") or "")
    logging.warning("Took over the run lock %s of %s from pid %s on %s%s: %s",
                    self.lock_path, self._where(), holder.get("pid", "?"),
                    holder.get("host", "?"), f" ({_shown(command)})" if command else "",
                    why)

  def _write(self):
    file_io.write_bytes(self.lock_path, self._record().encode("utf-8"))

  def acquire(self):
    settle = 0.0 if paths.scheme(self.lock_path) == "ram" else self.SETTLE_S
    if file_io.isdir(self.lock_path):
      raise errors.UserError(
          f"{self._where()}: its run lock {self.lock_path} is a directory, not a lock file; "
          "remove that directory (no run needs it) and rerun")
    waited = False
    while True:
      holder = self._holder()
      gone = None
      if holder and holder.get("token") != self.token:
        gone = self._why_gone(holder)
      if holder and holder.get("token") != self.token and gone is None:
        if not self.wait:
          raise self._refusal(holder.get("pid", "?"), holder.get("command", ""),
                              holder.get("host", ""))
        if not waited:
          logging.info("Waiting for pid %s on %s to finish writing %s", holder.get("pid"),
                       holder.get("host"), self._where())
          waited = True
        time.sleep(1.0)
        continue
      try:
        self._write()
      except errors.UserError as exc:
        raise errors.UserError(f"{self._where()}: cannot write its run lock: {exc}") from None
      time.sleep(settle)
      taken_from, holder = holder, self._holder()
      if holder and holder.get("token") == self.token:
        if gone is not None:
          self._log_takeover(taken_from, gone)
        break
    self._held = True
    self._stop.clear()
    self._thread = threading.Thread(target=self._heartbeat, daemon=True,
                                    name="bert-object-lock")
    self._thread.start()
    self._clean()
    return self

  def _heartbeat(self):
    while not self._stop.wait(self.HEARTBEAT_S):
      holder = self._holder()
      if holder is None or holder.get("token") != self.token:
        logging.warning("The run lock %s was taken by another run", self.lock_path)
        return
      with contextlib.suppress(Exception):
        self._write()

  def release(self):
    if not self._held:
      return
    self._stop.set()
    if self._thread is not None:
      self._thread.join()
    holder = self._holder()
    if holder and holder.get("token") == self.token:
      with contextlib.suppress(Exception):
        file_io.remove(self.lock_path)
    self._held = False


def _lock(path, *args, **kwargs):
  cls = ObjectLock if paths.is_url(path) else OutputLock
  return cls(path, *args, **kwargs)


def lock_output(path, flag_name="output_dir", is_file=False, suffix="", clean=True,
                subfolders=()):
  """`with lock_output(options.output_dir): ...` (see OutputLock). subfolders: folders
  of the output (names) whose temporaries are cleared with its own."""
  return _lock(path, flag_name, is_file, suffix, clean, subfolders=subfolders)


# What an export of TF Serving's layout writes in export_dir/ids and export_dir/text
# before renaming: `.N.tmp-<8 hex>` (atomic_output's temporary of version N).
_VERSION_TEMPORARY = re.compile(r"\.[0-9]+\.tmp-[0-9a-f]{8}")
EXPORT_LOCK = ".export.lock"  # in export_dir: the lock of a versioned export
# The folders of a versioned export that hold version folders: the ids and text SavedModels
# and the LiteRT models (bert/formats/serving.py writes these, and only these).
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
  Only names of that exact form are removed, never a user's file; and the folder a run
  of this same command was moving into place on an object store when it was killed
  (export_dir, or ids/N, text/N and litert/N), which its marker names
  (atomic_output.clear_half_moved).
  """
  if version:
    try:
      file_io.makedirs(export_dir)
    except OSError as exc:
      raise errors.UserError(
          f"--{flag_name}={export_dir}: cannot create it ({exc.strerror})") from None
    except errors.UserError as exc:
      raise errors.UserError(f"--{flag_name}={export_dir}: cannot create it: {exc}") from None
    lock = _lock(export_dir, flag_name, clean=False, wait=True, lock_name=EXPORT_LOCK)
  else:
    lock = _lock(export_dir, flag_name, is_file=True, wait=True)
  with lock:
    if version:
      removed = []
      for kind in VERSIONED_KINDS:
        base = paths.join(export_dir, kind)
        if file_io.isdir(base):
          removed += [paths.join(kind, n) for n in atomic_output.remove_stale_temporaries(
              base, pattern=_VERSION_TEMPORARY)]
      if removed:
        logging.info("Removed %d temporary folder(s) an interrupted earlier export left in "
                     "%s: %s", len(removed), export_dir, ", ".join(removed[:5]))
    targets = ([paths.join(export_dir, kind, str(version)) for kind in VERSIONED_KINDS]
               if version else [export_dir])
    killed = [record for record in map(atomic_output.clear_half_moved, targets) if record]
    if killed:
      for target in targets:  # the parts of the version that were moved whole before
        file_io.rmtree(target)
      logging.warning("Removed %s: a run of this same command (pid %s on %s) was killed "
                      "while moving it into place; this run writes it again",
                      " and ".join(targets) if version else export_dir,
                      killed[0].get("pid", "?"), killed[0].get("host", "?"))
    yield


@contextlib.contextmanager
def locked_export(export_dir, check=None, again=None, version=0, name_full_disk=True):
  """Holds an export's lock (lock_export) with its target checked on both sides of it.

  `check()` runs before the lock, so that a refused export creates nothing (not even the
  lock); `again()` (by default `check`) runs holding it, for what another export of the
  same folder wrote while this one waited. With name_full_disk, a full disk while the
  block writes is one line naming --export_dir (errors.disk_full_names).
  """
  again = again or check
  if check is not None:
    check()
  with contextlib.ExitStack() as stack:
    if name_full_disk:
      stack.enter_context(errors.disk_full_names(export_dir, "export_dir"))
    stack.enter_context(lock_export(export_dir, version))
    if again is not None:
      again()
    yield


@contextlib.contextmanager
def writing_export(export_dir, check=None, overwrite=True, name_full_disk=True):
  """locked_export of a folder written whole: yields a temporary path beside export_dir,
  renamed into place when the block succeeds (atomic_output.atomic_path; `overwrite`:
  whether a folder another run put at export_dir meanwhile is replaced)."""
  with locked_export(export_dir, check, name_full_disk=name_full_disk), \
      atomic_output.atomic_path(export_dir, overwrite=overwrite) as tmp:
    yield tmp
