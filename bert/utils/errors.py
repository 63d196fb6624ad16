"""Errors a user can act on: the one UserError class, and reporting it in one line.

The contract (docs/reliability.md says it in full, with its tests): a bad file, flag or
config fails fast with ONE line naming it and what to do, no traceback unless
--verbose, and nothing half-written left behind; a bug in our code keeps its
traceback. Never reads absl FLAGS: main() passes the flag values it read."""

import contextlib
import errno
import json
import os
import re
import sys
import traceback

from absl import flags as absl_flags

# Exit status for errors the user can fix (bad flag, file or config). 1 is left to
# Python for unexpected crashes, so scripts and tests can tell the two apart.
USER_ERROR_EXIT_CODE = 2
# A user error is one line without its traceback unless asked (--verbose's default).
VERBOSE = False


class UserError(ValueError):
  """Bad input from the user (a file, config, flag or value): shown as one line, without
  traceback, exit status 2.

  A ValueError, so that code and tests that expect one keep working; but only this class
  (and its subclasses, file_io.UrlError), never a bare ValueError, is reported without a
  traceback: a bare one is a bug in our code.
  """


def not_utf8_message(path, exc=None, data=None, line=None):
  """The one line for a file that is not valid UTF-8, for every reader of ours.

  Names the file, the line (given, or counted in `data`, the file's bytes, up to the bad
  byte) and the bad byte's offset when the UnicodeDecodeError `exc` is known:
  `{path}:{line}: not valid UTF-8 (byte {n}); convert the file to UTF-8`.
  """
  if line is None and data is not None and exc is not None:
    line = data[:exc.start].count(b"\n") + 1
  where = f"{path}:{line}" if line is not None else str(path)
  byte = f" (byte {exc.start})" if exc is not None else ""
  return f"{where}: not valid UTF-8{byte}; convert the file to UTF-8"


def _one_line(message):
  return " ".join(str(message).split())


# Exceptions that mean "your input is wrong" rather than "our code is wrong". They are
# reported in one line; --verbose shows the traceback for bug reports. Anything else (a
# bare ValueError, a TypeError, a Keras shape error) is a bug and keeps its traceback.
def _user_facing_exceptions():
  types = [UserError, OSError, UnicodeError, json.JSONDecodeError,
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
  if isinstance(exc, (UserError, absl_flags.Error)):
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
  if is_disk_full(exc) and not isinstance(exc, UserError):
    return disk_full_message(_disk_full_path(exc))
  if isinstance(exc, UnicodeDecodeError):
    return f"{not_utf8_message('input', exc)} (--verbose shows the traceback)"
  if isinstance(exc, OSError) and getattr(exc, "filename", None):
    return f"{exc.filename}: {exc.strerror or exc}"
  if not isinstance(exc, UserError) and storage_failure_url(exc) is not None:
    return (f"the storage stopped answering ({storage_failure_detail(exc)}); rerun the same "
            "command once it answers again (a training run resumes from its newest whole "
            "checkpoint) (--verbose shows the traceback)")
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
def report_user_errors(verbose=VERBOSE, program=None):
  """Turns bad-input exceptions into one stderr line and exit status 2.

  Usage, in a script's main():  `with report_user_errors(FLAGS.verbose): ...`.
  Caught: UserError (the library raises it for bad files, configs and values), absl
  flag errors, OS and decoding errors, and
  TensorFlow's not-found, data-loss, permission and resource errors. A full disk, whoever
  raises it (an OSError ENOSPC, TensorFlow, safetensors), is one line naming the file; so
  is storage that stopped answering (storage_failure_url), with how to resume.
  Every other exception is a bug in our code and propagates with its traceback.
  """
  program = program or os.path.basename(sys.argv[0] or "bert")
  try:
    yield
  except _user_facing_exceptions() as exc:  # noqa: B030
    _report_and_exit(program, exc, verbose)
  except Exception as exc:  # pylint: disable=broad-except
    # A full disk (e.g. safetensors' SafetensorError: no class to name), or storage that
    # stopped answering where no writer of ours named the flag.
    if not is_disk_full(exc) and storage_failure_url(exc) is None:
      raise
    _report_and_exit(program, exc, verbose)


# --------------------------------------------------------------------------- storage that stops answering

# TensorFlow's errors when a filesystem behind a URL stops answering mid-run (a cut
# network, a bucket's server gone): its retries ran out, or a request timed out.
_STORAGE_ERRORS = ("AbortedError", "UnavailableError", "DeadlineExceededError")
# The summary writer names no file when its flush fails.
_FLUSH_FAILED = "Could not flush events file"
# A filesystem's URL in TensorFlow's message (not a server address: gRPC, HTTP).
_STORAGE_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*)://[^\s'\",;()\[\]]+")
_NOT_STORAGE = ("grpc", "http", "https", "ipv4", "ipv6", "unix", "dns")


def storage_failure_url(exc):
  """For a TensorFlow error raised because the storage behind a URL stopped answering,
  the URL it names ("" for the summary writer's flush, which names none); else None."""
  text = str(getattr(exc, "message", None) or exc)
  if type(exc).__name__ not in _STORAGE_ERRORS and not (
      hasattr(exc, "error_code") and _FLUSH_FAILED in text):
    return None
  for match in _STORAGE_URL.finditer(text):
    if match.group(1).lower() not in _NOT_STORAGE:
      return match.group(0).rstrip(".")
  return "" if _FLUSH_FAILED in text else None


def storage_failure_detail(exc):
  """TensorFlow's message of a storage failure, in one short line."""
  return _clean_tf_message(str(getattr(exc, "message", None) or exc))[:200]


# --------------------------------------------------------------------------- full disks at the writer


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
