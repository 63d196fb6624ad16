"""Checks of a user's input files and values, made before a run spends time on them.

Each failure is one errors.UserError naming the flag (or the file and line) and what to
do: a missing, empty or unreadable file, a pattern that matches nothing, a line that is
not UTF-8, a label list that repeats a label.
"""

from bert.utils import errors
from bert.utils import file_io
from bert.utils import paths


def _missing_bucket(path):
  """Why the bucket of a gs:// path cannot be read (it does not exist, or GCS refuses
  its name), or None."""
  try:
    file_io.check_bucket(path)
  except file_io.UrlError as exc:
    return exc.reason
  return None


def check_input_file(path, flag_name, allow_empty=False):
  """Fails with a one-line UserError unless `path` is a readable, non-empty file."""
  if not path:
    raise errors.UserError(f"--{flag_name} is required")
  try:
    if not file_io.exists(path):
      file_io.check_bucket(path)  # a missing bucket is said as such
      raise errors.UserError(f"--{flag_name}={path}: no such file")
    if file_io.isdir(path):
      raise errors.UserError(f"--{flag_name}={path}: is a directory, expected a file")
    if not file_io.readable(path):
      raise errors.UserError(f"--{flag_name}={path}: not readable (check its permissions)")
    if not allow_empty and file_io.getsize(path) == 0:
      raise errors.UserError(f"--{flag_name}={path}: the file is empty")
  except file_io.UrlError as exc:
    raise errors.UserError(f"--{flag_name}={path}: {exc.reason}") from None
  return path


def expand_file_patterns(patterns, flag_name):
  """Comma-separated files and globs -> sorted unique list; fails if nothing matches."""
  files = []
  for pattern in [p.strip() for p in str(patterns or "").split(",") if p.strip()]:
    try:
      if paths.has_magic(pattern):
        matched = file_io.glob(pattern)
      else:
        matched = [pattern] if file_io.exists(pattern) else []
      if not matched:
        file_io.check_bucket(pattern)  # a missing bucket is said as such
        raise errors.UserError(f"--{flag_name}: no file matches {pattern!r}")
      for path in matched:
        if file_io.isdir(path):
          raise errors.UserError(f"--{flag_name}: {path} is a directory, expected files")
        if path not in files:
          files.append(path)
    except file_io.UrlError as exc:
      # A glob that a missing bucket fails: the bucket is named, not the glob.
      reason = _missing_bucket(pattern) or exc.reason
      raise errors.UserError(f"--{flag_name}={pattern}: {reason}") from None
  if not files:
    raise errors.UserError(f"--{flag_name} is required (comma-separated files or globs)")
  return files


def read_text_lines(path, encoding_errors="strict"):
  """Yields (line_number, line) of a UTF-8 text file; line numbers start at 1.

  A non-UTF-8 line raises UserError naming the file and line, unless
  `encoding_errors="skip"`: then the line is left out (its number is not yielded).
  """
  with file_io.open_binary(path) as handle:
    for number, raw in enumerate(handle, start=1):
      try:
        # Only the file's start may hold a byte-order mark; anywhere else it is text.
        yield number, file_io.decode_text(raw) if number == 1 else raw.decode("utf-8")
      except UnicodeDecodeError as exc:
        if encoding_errors == "skip":
          continue
        raise errors.UserError(errors.not_utf8_message(path, exc, line=number)) from None


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
      raise errors.UserError(f"{where}: holds an empty label")
  repeat = first_repeat(labels)
  if repeat:
    label = labels[repeat[0]]
    raise errors.UserError(f"{where}: {label!r} is given {labels.count(label)} times; {hint}")
  return labels
