"""Remote paths, file reading and the input-error class; imports nothing of ours.

Imports nothing of ours, so every module (tokenization and modeling included) may import
it. It holds what many modules would otherwise each write again:

  * `InputError`: a bad file, config or value given by the user. Ground modules, which
    cannot import script_utils, raise it; `script_utils.UserError` is its subclass, and
    `script_utils.report_user_errors` prints either as one line (exit status 2). Any
    other exception is a bug in our code and keeps its traceback.
  * `is_remote(path)`: gs://, s3://, hdfs://... paths (tf.io.gfile reads them).
  * `read_bytes`, `open_binary`, `open_text`, `exists`, `isdir`, `glob`: local files
    through the standard library, remote ones through tf.io.gfile.
  * `not_utf8_message`: the one line for a file that is not valid UTF-8.
  * `without_byte_order_mark`, `decode_text`: the one way every reader of a text file
    drops the UTF-8 byte-order mark that Windows editors put at the start of a file.

TensorFlow is imported only when a remote path is used (`gfile()`): the pure-Python
tokenizer and the scripts' flag checks must not pay seconds for it.
"""

import glob as _glob
import io
import os


class InputError(ValueError):
  """Bad input from the user (a file, config or value): shown as one line, exit status 2.

  A ValueError, so that code and tests that expect one keep working; but only this
  class (and its subclass script_utils.UserError), never a bare ValueError, is reported
  without a traceback.
  """


def is_remote(path):
  """True for a path on a remote file system (gs://bucket/..., s3://..., hdfs://...)."""
  return "://" in str(path)


def gfile():
  """tf.io.gfile, imported on first use.

  The one import inside a function of this module, on purpose: this module is imported
  by the TensorFlow-free tokenizer and by every script before its flags are checked, and
  only a remote path needs TensorFlow.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def exists(path):
  return gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path):
  return gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def glob(pattern):
  """Sorted paths matching `pattern` (remote patterns through tf.io.gfile)."""
  if is_remote(pattern):
    return sorted(gfile().glob(pattern))
  return sorted(_glob.glob(pattern))


def open_binary(path, mode="rb"):
  """open(path, mode) for a local path, tf.io.gfile.GFile for a remote one."""
  if is_remote(path):
    return gfile().GFile(path, mode)
  return open(path, mode)  # pylint: disable=unspecified-encoding


def read_bytes(path, label="", missing_hint="", expected="a file"):
  """The whole file as bytes; a missing file or a directory is an InputError naming it.

  The messages: `{label}{path}: no such file{missing_hint}` and `{label}{path}: is a
  directory, expected {expected}` (for example label "vocab file ", missing_hint
  "; check --data_dir").
  """
  if not exists(path):
    raise InputError(f"{label}{path}: no such file{missing_hint}")
  if isdir(path):
    raise InputError(f"{label}{path}: is a directory, expected {expected}")
  with open_binary(path) as handle:
    return handle.read()


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


BYTE_ORDER_MARK = "\ufeff"


def without_byte_order_mark(text):
  """`text` (a file's whole text or its first line) without a leading byte-order mark.

  Notepad and other Windows editors save UTF-8 with U+FEFF first. Kept, it would be
  part of the first word, field, header name or JSON key (a CoNLL reader would take
  "\ufeff-DOCSTART-" for a word); every reader of ours drops it through this function,
  and only at the start of a file (anywhere else it is text).
  """
  return text[1:] if text.startswith(BYTE_ORDER_MARK) else text


def decode_text(data):
  """A whole file's bytes as text: UTF-8, a leading byte-order mark dropped.

  Raises UnicodeDecodeError (the caller names the file: not_utf8_message)."""
  return without_byte_order_mark(data.decode("utf-8"))


class _TextLines:
  """A text file's lines (iterable, a context manager) with the byte-order mark dropped
  from the first one."""

  def __init__(self, handle):
    self._handle = handle
    self._first = True

  def __iter__(self):
    return self

  def __next__(self):
    line = next(self._handle)
    if self._first:
      self._first = False
      line = without_byte_order_mark(line)
    return line

  def close(self):
    self._handle.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc_info):
    self.close()


def open_text(path):
  """The lines of a UTF-8 text file, local or remote, without a leading byte-order mark
  (universal newlines off, as csv wants); decoding errors are raised as they are met."""
  if is_remote(path):
    return _TextLines(io.StringIO(read_bytes(path).decode("utf-8"), newline=""))
  return _TextLines(open(path, encoding="utf-8", newline=""))


def local_size(path):
  """Size in bytes of a local file; 0 for a remote one (progress shares only)."""
  return 0 if is_remote(path) else os.path.getsize(path)
