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


def open_text(path, encoding="utf-8-sig"):
  """A text reader (universal newlines off, as csv wants) for a local or remote file."""
  if is_remote(path):
    return io.StringIO(read_bytes(path).decode(encoding))
  return open(path, encoding=encoding, newline="")


def local_size(path):
  """Size in bytes of a local file; 0 for a remote one (progress shares only)."""
  return 0 if is_remote(path) else os.path.getsize(path)
