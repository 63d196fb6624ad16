"""Errors a user can act on: the UserError class, reporting it in one line, input checks.

Imported by the commands and the library; never reads absl FLAGS itself. A script's `main()`
passes the flag values it read (for example `verbose`) to these helpers.

The contract with users (docs/reliability.md says it in full, with the tests that hold
the scripts to it):
  * a bad file, flag or config fails fast with ONE line on stderr that names the file
    (and line or record) and what to do, and a non-zero exit status;
  * no Python traceback unless `--verbose`; but only bad input is reported that way: a
    bug in our code (any other exception) keeps its traceback (report_user_errors);
  * nothing half-written is left behind: outputs are written under a temporary name in
    the same directory and renamed into place when complete (atomic_output.py).

Beside it: atomic_output.py (writing outputs), output_lock.py (one run per output),
tfrecord_framing.py (checking a TFRecord file's framing up front).
"""

import contextlib
import errno
import json
import os
import re
import sys
import traceback

from absl import flags as absl_flags

from bert.utils import file_io

# Exit status for errors the user can fix (bad flag, file or config). 1 is left to
# Python for unexpected crashes, so scripts and tests can tell the two apart.
USER_ERROR_EXIT_CODE = 2


class UserError(file_io.InputError):
  """An error caused by the user's input; its message is shown as one line, without traceback.

  A file_io.InputError (the class for bad input of the modules that import only file_io:
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
    return f"{file_io.not_utf8_message('input', exc)} (--verbose shows the traceback)"
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
  Caught: UserError and file_io.InputError (modeling and tokenization
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
  try:
    if not file_io.exists(path):
      raise UserError(f"--{flag_name}={path}: no such file")
    if file_io.isdir(path):
      raise UserError(f"--{flag_name}={path}: is a directory, expected a file")
    if not file_io.readable(path):
      raise UserError(f"--{flag_name}={path}: not readable (check its permissions)")
    if not allow_empty and file_io.getsize(path) == 0:
      raise UserError(f"--{flag_name}={path}: the file is empty")
  except file_io.UrlError as exc:
    raise UserError(f"--{flag_name}={path}: {exc.reason}") from None
  return path


def expand_file_patterns(patterns, flag_name):
  """Comma-separated files and globs -> sorted unique list; fails if nothing matches."""
  files = []
  for pattern in [p.strip() for p in str(patterns or "").split(",") if p.strip()]:
    try:
      if file_io.has_magic(pattern):
        matched = file_io.glob(pattern)
      else:
        matched = [pattern] if file_io.exists(pattern) else []
      if not matched:
        raise UserError(f"--{flag_name}: no file matches {pattern!r}")
      for path in matched:
        if file_io.isdir(path):
          raise UserError(f"--{flag_name}: {path} is a directory, expected files")
        if path not in files:
          files.append(path)
    except file_io.UrlError as exc:
      raise UserError(f"--{flag_name}={pattern}: {exc.reason}") from None
  if not files:
    raise UserError(f"--{flag_name} is required (comma-separated files or globs)")
  return files


def read_text_lines(path, encoding_errors="strict"):
  """Yields (line_number, line) of a UTF-8 text file; line numbers start at 1.

  A non-UTF-8 line raises UserError naming the file and line, unless
  `encoding_errors="skip"`, where the line is skipped (and counted by the caller
  through the `skipped` attribute of the returned generator's owner, if any).
  """
  with file_io.open_binary(path) as handle:
    for number, raw in enumerate(handle, start=1):
      try:
        line = raw.decode("utf-8")
        yield number, file_io.without_byte_order_mark(line) if number == 1 else line
      except UnicodeDecodeError as exc:
        if encoding_errors == "skip":
          continue
        raise UserError(file_io.not_utf8_message(path, exc, line=number)) from None


# --------------------------------------------------------------------------- label lists


def first_repeat(labels):
  """(first, again): the two positions of the first label that `labels` lists twice, or
  None when each label is there once.

  A label list orders a model's outputs: a label listed twice gets two output rows that
  compete for the same examples (one of them is never the answer), and a reader of the
  run (the Hugging Face export, keras-hub, a serving client) cannot tell which id means
  it. So every place that takes a label list refuses a repeat, through this function.
  """
  seen = {}
  for index, label in enumerate(labels):
    if label in seen:
      return seen[label], index
    seen[label] = index
  return None


def check_label_list(labels, where, hint="each label once, in label-id order"):
  """`labels` as a tuple of strings; a label listed twice, or an empty one, is a UserError
  `{where}: ...; {hint}` (where: the flag and its value, or the file)."""
  labels = tuple(str(label) for label in labels)
  for label in labels:
    if not label.strip():
      raise UserError(f"{where}: holds an empty label")
  repeat = first_repeat(labels)
  if repeat:
    label = labels[repeat[0]]
    raise UserError(f"{where}: {label!r} is given {labels.count(label)} times; {hint}")
  return labels


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
