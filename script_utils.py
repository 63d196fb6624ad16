"""What every command-line script shares: user-facing errors, atomic outputs, input checks.

Middle floor: imported by the scripts, never reads absl FLAGS itself. A script's `main()`
passes the flag values it read (for example `verbose`) to these helpers.

The contract with users (DEVELOPERS.md, "Errors a user can act on"):
  * a bad file, flag or config fails fast with ONE line on stderr that names the file
    (and line or record) and what to do, and a non-zero exit status;
  * no Python traceback unless `--verbose`; but only bad input is reported that way: a
    bug in our code (any other exception) keeps its traceback (report_user_errors);
  * nothing half-written is left behind: outputs are written under a temporary name in
    the same directory and renamed into place when complete.
"""

import contextlib
import errno
import fcntl
import glob as _glob
import json
import os
import re
import shutil
import struct
import sys
import traceback
import uuid

from absl import flags as absl_flags
from absl import logging

import file_io

# Exit status for errors the user can fix (bad flag, file or config). 1 is left to
# Python for unexpected crashes, so scripts and tests can tell the two apart.
USER_ERROR_EXIT_CODE = 2


class UserError(file_io.InputError):
  """An error caused by the user's input; its message is shown as one line, without traceback.

  A file_io.InputError (the ground floor's class for bad input, which modeling and
  tokenization raise), so one `except` and one isinstance test cover both.
  """


def _one_line(message):
  return " ".join(str(message).split())


# Exceptions that mean "your input is wrong" rather than "our code is wrong". They are
# reported in one line; --verbose shows the traceback for bug reports. Anything else (a
# bare ValueError, a TypeError, a Keras shape error) is a bug and keeps its traceback.
def _user_facing_exceptions():
  types = [file_io.InputError, OSError, UnicodeError, json.JSONDecodeError,
           absl_flags.Error]
  # Only when TensorFlow is already loaded: a TF error cannot have happened otherwise,
  # and importing it here would make every early one-line error cost seconds.
  tf = sys.modules.get("tensorflow")
  if tf is not None and hasattr(tf, "errors"):
    types += [tf.errors.NotFoundError, tf.errors.DataLossError,
              tf.errors.PermissionDeniedError, tf.errors.ResourceExhaustedError]
  return tuple(types)


# Of those, the ones that may also come from a bug in our code (raised by a library, not
# by a check of ours, with nothing in the message that points at the input): their one
# line says how to see the traceback.
def _may_hide_a_bug(exc):
  if isinstance(exc, (file_io.InputError, absl_flags.Error)):
    return False
  if isinstance(exc, OSError):
    return not getattr(exc, "filename", None)
  return type(exc).__name__ not in ("DataLossError", "ResourceExhaustedError")


_NO_SPACE = "No space left on device"


def is_disk_full(exc):
  """True for a write that failed because the disk is full, whoever raised it: an OSError
  with errno ENOSPC (or EDQUOT/EFBIG: a quota or file-size limit), a TensorFlow error (ResourceExhaustedError and others) or a
  safetensors SafetensorError whose message says so."""
  if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
    return True
  text = str(exc)
  return _NO_SPACE in text or "os error 28" in text or "Disk quota exceeded" in text


def disk_full_message(path=None):
  """The one line for a full disk, naming the file when it is known."""
  what = f"could not write {path}" if path else "could not write the output"
  return f"{what}: the disk is full ({_NO_SPACE})"


def _disk_full_path(exc):
  for name in ("filename", "path"):
    value = getattr(exc, name, None)
    if value:
      return value
  match = re.search(r"(?:file|path)[ :]+'?([^\s',;]*/[^\s',;]*)", str(exc))
  return match.group(1) if match else None


# TensorFlow's runtime errors wrap the useful sentence in graph-execution noise.
_TF_NOISE = (re.compile(r"Graph execution error:\s*"),
             re.compile(r"Detected at node \S+ defined at \(most recent call last\):.*?"
                        r"(<stack traces unavailable>|$)\s*", re.S),
             re.compile(r"\[\[[^\]]*\]\]\s*"),
             re.compile(r"\[Op:[^\]]*\]\s*"))


def _clean_tf_message(message):
  for pattern in _TF_NOISE:
    message = pattern.sub("", message)
  return _one_line(message)


def _describe(exc):
  # Our own errors already say what went wrong (a full disk included, with the path).
  if is_disk_full(exc) and not isinstance(exc, file_io.InputError):
    return disk_full_message(_disk_full_path(exc))
  if isinstance(exc, UnicodeDecodeError):
    return (f"input is not valid UTF-8 ({exc}); convert the file to UTF-8 (--verbose shows "
            "the traceback)")
  if isinstance(exc, OSError) and getattr(exc, "filename", None):
    return f"{exc.filename}: {exc.strerror or exc}"
  message = getattr(exc, "message", None) or str(exc)
  if hasattr(exc, "error_code"):  # a tf.errors.OpError
    message = _clean_tf_message(message)
    if type(exc).__name__ == "DataLossError":
      message += ("; an input TFRecord file is truncated or corrupt (an interrupted copy?): "
                  "recreate it")
    if type(exc).__name__ == "ResourceExhaustedError":
      message = (f"out of memory ({message}); lower --train_batch_size, --eval_batch_size "
                 "or --max_seq_length")
  message = _one_line(message)
  if not message:  # never a bare class name: say what kind of failure it is
    message = f"{type(exc).__name__} without a message"
  if _may_hide_a_bug(exc):
    message += " (--verbose shows the traceback)"
  return message


def _report_and_exit(program, exc, verbose):
  if verbose:
    traceback.print_exc()
  sys.stderr.write(f"{program}: error: {_describe(exc)}\n")
  sys.stderr.flush()
  # os._exit would skip cleanup; SystemExit lets `finally` blocks remove temp files.
  raise SystemExit(USER_ERROR_EXIT_CODE) from None


@contextlib.contextmanager
def report_user_errors(verbose=False, program=None):
  """Turns bad-input exceptions into one stderr line and exit status 2.

  Usage, in a script's main():  `with report_user_errors(FLAGS.verbose): ...`.
  Caught: UserError and the ground floor's file_io.InputError (modeling and tokenization
  raise it for bad files and configs), absl flag errors, OS and decoding errors, and
  TensorFlow's not-found, data-loss, permission and resource errors. A full disk, whoever
  raises it (an OSError ENOSPC, TensorFlow, safetensors), is one line naming the file.
  Every other exception is a bug in our code and propagates with its traceback.
  """
  program = program or os.path.basename(sys.argv[0] or "bert")
  try:
    yield
  except _user_facing_exceptions() as exc:  # noqa: B030
    _report_and_exit(program, exc, verbose)
  except Exception as exc:  # pylint: disable=broad-except
    if not is_disk_full(exc):  # e.g. safetensors' SafetensorError: no class to name
      raise
    _report_and_exit(program, exc, verbose)


# --------------------------------------------------------------------------- inputs


def check_input_file(path, flag_name, allow_empty=False):
  """Fails with a one-line UserError unless `path` is a readable, non-empty file."""
  if not path:
    raise UserError(f"--{flag_name} is required")
  if file_io.is_remote(path):
    gfile = file_io.gfile()
    if not gfile.exists(path):
      raise UserError(f"--{flag_name}={path}: no such file")
    if gfile.isdir(path):
      raise UserError(f"--{flag_name}={path}: is a directory, expected a file")
    return path
  if not os.path.exists(path):
    raise UserError(f"--{flag_name}={path}: no such file")
  if os.path.isdir(path):
    raise UserError(f"--{flag_name}={path}: is a directory, expected a file")
  if not os.access(path, os.R_OK):
    raise UserError(f"--{flag_name}={path}: not readable (check its permissions)")
  if not allow_empty and os.path.getsize(path) == 0:
    raise UserError(f"--{flag_name}={path}: the file is empty")
  return path


def expand_file_patterns(patterns, flag_name):
  """Comma-separated files and globs -> sorted unique list; fails if nothing matches."""
  files = []
  for pattern in [p.strip() for p in str(patterns or "").split(",") if p.strip()]:
    if file_io.is_remote(pattern):
      matched = file_io.gfile().glob(pattern)
    else:
      matched = sorted(_glob.glob(pattern)) if _glob.has_magic(pattern) else (
          [pattern] if os.path.exists(pattern) else [])
    if not matched:
      raise UserError(f"--{flag_name}: no file matches {pattern!r}")
    for path in matched:
      if not file_io.is_remote(path) and os.path.isdir(path):
        raise UserError(f"--{flag_name}: {path} is a directory, expected files")
      if path not in files:
        files.append(path)
  if not files:
    raise UserError(f"--{flag_name} is required (comma-separated files or globs)")
  return files


def read_text_lines(path, encoding_errors="strict"):
  """Yields (line_number, line) of a UTF-8 text file; line numbers start at 1.

  A non-UTF-8 line raises UserError naming the file and line, unless
  `encoding_errors="skip"`, where the line is skipped (and counted by the caller
  through the `skipped` attribute of the returned generator's owner, if any).
  """
  opener = file_io.gfile().GFile if file_io.is_remote(path) else open
  with opener(path, "rb") as handle:
    for number, raw in enumerate(handle, start=1):
      try:
        yield number, raw.decode("utf-8")
      except UnicodeDecodeError as exc:
        if encoding_errors == "skip":
          continue
        raise UserError(f"{path}:{number}: not valid UTF-8 (byte {exc.start}); "
                        "convert the file to UTF-8") from None


_CRC32C_TABLE = []


def _crc32c(data):
  """CRC-32C (Castagnoli), the checksum of TFRecord framing; pure Python, for headers."""
  if not _CRC32C_TABLE:
    for n in range(256):
      c = n
      for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
      _CRC32C_TABLE.append(c)
  crc = 0xFFFFFFFF
  for byte in data:
    crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
  return crc ^ 0xFFFFFFFF


def _masked_crc32c(data):
  crc = _crc32c(data)
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def check_tfrecord_framing(path, flag_name="input_file"):
  """Walks the record headers of a local TFRecord file; returns its number of records.

  TFRecord framing is [length uint64][masked crc32c of length][data][masked crc32c of
  data]. Only the 12-byte headers are read (a seek over each record's data): about 9 us
  a record measured on a busy 2-core machine (150 MB of 1.5 kB records in 0.9 s); a file
  cut short (an interrupted copy or write) or one
  that is not a TFRecord file fails now, with a UserError naming the file and record,
  instead of hours later deep inside a training step. Data checksums are not verified
  here (TensorFlow does it while reading). Remote paths are not walked (returns None).
  """
  if file_io.is_remote(path):
    return None
  size = os.path.getsize(path)
  offset = index = 0
  good_headers = set()  # records of one file mostly share a few lengths: check each once
  with open(path, "rb") as handle:
    while offset < size:
      header = handle.read(12)
      if len(header) < 12:
        raise UserError(
            f"--{flag_name}: {path} record {index} at byte {offset} is cut short (the file "
            f"ends inside its header): the file is truncated; recreate it")
      length, length_crc = struct.unpack("<QI", header)
      if header not in good_headers:
        if _masked_crc32c(header[:8]) != length_crc:
          raise UserError(
              f"--{flag_name}: {path} is not a TFRecord file (bad record header {index} at "
              f"byte {offset}); pass TFRecords written by this project's scripts")
        good_headers.add(header)
      end = offset + 12 + length + 4
      if end > size:
        raise UserError(
            f"--{flag_name}: {path} record {index} at byte {offset} needs {end - offset} "
            f"bytes but the file ends after {size - offset}: the file is truncated (an "
            "interrupted copy or write?); recreate it")
      offset = end
      index += 1
      handle.seek(offset)
  return index


# --------------------------------------------------------------------------- outputs


def ensure_output_dir(path, flag_name="output_dir"):
  """Creates the directory if needed and checks that it can be written to."""
  if not path:
    raise UserError(f"--{flag_name} is required")
  if file_io.is_remote(path):
    file_io.gfile().makedirs(path)
    return path
  if os.path.exists(path) and not os.path.isdir(path):
    raise UserError(f"--{flag_name}={path}: exists and is not a directory")
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as exc:
    raise UserError(f"--{flag_name}={path}: cannot create it ({exc.strerror})") from None
  if not os.access(path, os.W_OK | os.X_OK):
    raise UserError(f"--{flag_name}={path}: not writable (check its permissions)")
  return path


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
def atomic_path(path, overwrite=True):
  """Yields a temporary path beside `path`; renames it to `path` when the block succeeds.

  Works for files and for directories (a SavedModel): whatever the block writes at the
  temporary path appears at `path` all at once, or not at all. On failure the temporary
  is removed, so a killed or failed run never leaves output that looks finished.
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
    raise UserError(f"{path}: its directory {directory} does not exist; create it first or "
                    "choose another output path")
  if not os.access(directory, os.W_OK | os.X_OK):
    raise UserError(f"{path}: directory {directory} is not writable; check its permissions "
                    "or choose another output path")
  tmp = _temporary_sibling(path)
  try:
    yield tmp
    if os.path.isdir(tmp):
      if os.path.exists(path):
        if not overwrite:
          raise UserError(f"{path}: exists; remove it or pass --overwrite")
        old = _temporary_sibling(path)
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
      else:
        os.replace(tmp, path)
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


# --------------------------------------------------------------------------- one run per output (issue 27)

LOCK_FILE = ".bert-run.lock"


def _process_command(pid):
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
      return " ".join(p.decode("utf-8", "replace") for p in handle.read().split(b"\0") if p)
  except OSError:
    return ""


def _is_stale_temporary(name):
  # What this project's writers leave when killed: atomic_path's `.<name>.tmp-<8 hex>`,
  # save_google_checkpoint's `.<name>.saving-*`, CheckpointManager's `ckpt-N_temp` and
  # `*.tempstate*`.
  return bool(re.fullmatch(r"\..+\.tmp-[0-9a-f]{8}", name) or
              re.fullmatch(r"\..+\.saving-.+", name) or
              re.fullmatch(r"ckpt-\d+_temp", name) or ".tempstate" in name)


def remove_stale_temporaries(directory, name=None):
  """Removes the temporaries a killed run of ours left in `directory` (only those of
  output `name` when given); returns the names removed. Call it holding the output's lock
  (`lock_output`), so that no live run's temporary is taken."""
  if file_io.is_remote(directory) or not os.path.isdir(directory):
    return []
  removed = []
  for entry in sorted(os.listdir(directory)):
    if name is not None:
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


class OutputLock:
  """An exclusive lock on an output (a directory, or one output file) for a run's life.

  fcntl.flock on a lock file: the kernel drops it when the process ends however it ends,
  so a kill -9 never leaves a lock that blocks the rerun. The file records the holder's
  pid and command line, for the one-line refusal of a second run. Taking the lock also
  removes the temporaries a killed earlier run left there (`remove_stale_temporaries`).
  """

  def __init__(self, path, flag_name="output_dir", is_file=False, suffix="", clean=True):
    self.path, self.flag_name, self.is_file, self.clean = path, flag_name, is_file, clean
    if is_file:
      directory, name = os.path.split(os.path.abspath(path))
      self.lock_path = os.path.join(directory, f".{name}.lock")
      self.directory, self.name = directory, name
    else:
      self.lock_path = os.path.join(path, LOCK_FILE + suffix)
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
          raise UserError(f"{where}: its run lock {self.lock_path} is a directory, not a "
                          "lock file; remove that directory (no run needs it) and rerun"
                          ) from None
        raise UserError(f"{where}: cannot write in {self.directory} ({exc.strerror}); create "
                        "it, check its permissions or choose another output path") from None
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        holder = os.read(fd, 4096).decode("utf-8", "replace").split("\n", 1)
        os.close(fd)
        pid = holder[0].strip() or "?"
        command = (holder[1].strip() if len(holder) > 1 else "") or _process_command(pid)
        where = (f"--{self.flag_name}={self.path}" if self.flag_name else self.path)
        raise UserError(
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
    removed = remove_stale_temporaries(self.directory, self.name) if self.clean else []
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


# --------------------------------------------------------------------------- full disks at the writer (issue 27)


@contextlib.contextmanager
def disk_full_names(path, flag_name=None, atomic=True):
  """Turns a full disk while writing `path` into a UserError naming it.

  Use around an atomic write: `with disk_full_names(p): with atomic_open(p) as f: ...`;
  atomic_path has removed its temporary by the time the error reaches here, so nothing
  is left under the final name nor a temporary one.
  """
  try:
    yield
  except UserError:
    raise
  except Exception as exc:  # pylint: disable=broad-except
    if not is_disk_full(exc):
      raise
    where = f"--{flag_name}={path}" if flag_name else str(path)
    raise UserError(f"could not write {where}: the disk is full (No space left on device); "
                    + ("nothing was written under that name; " if atomic else "")
                    + "free space and rerun") from None
