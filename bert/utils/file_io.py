"""Every file a command or the library reads or writes: a local path or a URL, one way.

A user's path is either a local path (relative, `~`, symbolic links, as always) or a URL
of any filesystem TensorFlow knows: `gs://bucket/...` (built into TensorFlow), `ram://`
(TensorFlow's in-memory one), and `s3://`, `hdfs://` where a plugin registers them. The
functions here take both and do the same thing with each: local paths go through the
standard library, URLs through `tf.io.gfile` (ram:// through ram_filesystem, which mends
its quirks). Names are paths.py's (no I/O). No other module calls `open`, `os.path` or
`glob` on a user's path: they call these.

It also holds the UTF-8 helpers every text reader shares. TensorFlow is imported only
when a URL is used: the pure-Python tokenizer and the commands' flag checks must not pay
seconds for it. The TensorFlow-free LiteRT predictor reads local paths only
(bert/litert/export_check.refuse_urls).
"""

import builtins
import glob as _glob
import io
import os
import posixpath
import re

from bert.utils import errors
from bert.utils import paths
from bert.utils import ram_filesystem


class UrlError(errors.UserError):
  """A filesystem refused an operation on a URL: `{path}: {reason}`, one line."""

  def __init__(self, path, reason):
    super().__init__(f"{path}: {reason}")
    self.path, self.reason = path, reason


def realpath(path):
  """Symbolic links resolved on a local path; a URL as it is (object stores have none)."""
  return paths.normpath(path) if paths.is_url(path) else os.path.realpath(os.path.expanduser(path))


# --------------------------------------------------------------------------- TensorFlow's filesystems


def gfile():
  """tf.io.gfile, imported on first use (only a URL needs TensorFlow)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def _tf_errors():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.errors


def url_error(path, exc):
  """Why an operation on the URL `path` failed, in words, from TensorFlow's exception."""
  errors = _tf_errors()
  text = " ".join(str(getattr(exc, "message", "") or exc).split())
  if isinstance(exc, errors.UnimplementedError) and "scheme" in text:
    return (f"no filesystem knows the scheme '{paths.scheme(path)}://' (TensorFlow has gs:// "
            "and ram:// built in; s3:// and hdfs:// need a plugin such as tensorflow-io "
            "imported first)")
  if isinstance(exc, errors.PermissionDeniedError):
    return f"permission denied ({text[:200]}); check the bucket's permissions"
  if isinstance(exc, errors.NotFoundError):
    return f"not found ({text[:200]}); check that the bucket exists"
  return text[:240]


class _UrlErrors:
  """A context manager turning TensorFlow's filesystem errors on `path` into UrlError."""

  def __init__(self, path):
    self.path = path

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc, tb):
    if exc is None or not paths.is_url(self.path):
      return False
    errors = _tf_errors()
    if isinstance(exc, (errors.UnimplementedError, errors.PermissionDeniedError,
                        errors.NotFoundError, errors.FailedPreconditionError,
                        errors.InvalidArgumentError, errors.AbortedError,
                        errors.UnavailableError, errors.DeadlineExceededError)):
      raise UrlError(self.path, url_error(self.path, exc)) from None
    return False


def url_errors(path):
  """`with url_errors(path): ...`: a filesystem error on a URL is one line naming it."""
  return _UrlErrors(path)


# --------------------------------------------------------------------------- questions


def _filesystem(path):
  """tf.io.gfile for the URL `path`; for ram:// the adaptor that mends its quirks."""
  return ram_filesystem.filesystem() if paths.scheme(path) == "ram" else gfile()


def _ask(question, path):
  """The answer of the filesystem of `path` to `question` ("exists", "isdir"): gfile's
  (or ram://'s adaptor) for a URL, os.path's for a local path."""
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      return getattr(_filesystem(path), question)(path)
  return getattr(os.path, question)(path)


def exists(path):
  return _ask("exists", path)


def isdir(path):
  return _ask("isdir", path)


def isfile(path):
  path = str(path)
  if paths.is_url(path):
    # One question, not exists() then isdir(): on an object store a folder is the objects
    # under its prefix, which another process may add or remove between two questions
    # (another worker's write probe), and the folder seen by the first and gone by the
    # second is no file. stat() answers a file only for an object of exactly this name.
    with url_errors(path):
      try:
        return not _filesystem(path).stat(path).is_directory
      except _tf_errors().NotFoundError:
        return False
  return os.path.isfile(path)


def islink(path):
  """A local symbolic link (URLs have none)."""
  return not paths.is_url(path) and os.path.islink(path)


def getsize(path):
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      return _filesystem(path).stat(path).length
  return os.path.getsize(path)


def mtime_ns(path):
  """The file's modification time in nanoseconds (0 where a filesystem keeps none)."""
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      return _filesystem(path).stat(path).mtime_nsec
  return os.stat(path).st_mtime_ns


def readable(path):
  """False for a local file the user may not read; a URL is checked when it is read."""
  return paths.is_url(path) or os.access(path, os.R_OK)


def writable_dir(path):
  """False for a local folder the user may not write in; a URL is checked by writing."""
  return paths.is_url(path) or os.access(path, os.W_OK | os.X_OK)


def listdir(path):
  """The names in a folder (no trailing `/` on a URL's subfolders), unsorted."""
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      return [name.rstrip("/") for name in _filesystem(path).listdir(path)]
  return os.listdir(path)


def glob(pattern):
  """Sorted paths matching `pattern`."""
  pattern = str(pattern)
  if paths.is_url(pattern):
    with url_errors(pattern):
      return sorted(_filesystem(pattern).glob(pattern))
  return sorted(_glob.glob(pattern))


def walk_files(path):
  """Every file under the folder `path`, as paths relative to it, sorted."""
  path = str(path)
  found = []
  if paths.is_url(path):
    for name in listdir(path):
      if isdir(paths.join(path, name)):
        found += [posixpath.join(name, n) for n in walk_files(paths.join(path, name))]
      else:
        found.append(name)
  else:
    for directory, _, names in os.walk(path):
      relative = os.path.relpath(directory, path)
      found += [n if relative == os.curdir else os.path.join(relative, n) for n in names]
  return sorted(found)


# --------------------------------------------------------------------------- changes


def check_bucket(path):
  """For a gs:// path: a bucket name GCS refuses, or a bucket that does not exist, is one
  line (UrlError). Asked before the first write: TensorFlow's makedirs in a missing
  bucket asks for it forever, and its writes fail only when the file is closed."""
  if paths.scheme(path) != "gs":
    return
  bucket = paths.bucket(path)
  problem = paths.bucket_name_problem(path)
  if problem:
    raise UrlError(path, f"{bucket} is not a valid bucket name ({problem}); check the name")
  with url_errors(path):
    if not gfile().isdir(bucket):
      raise UrlError(path, f"the bucket {bucket} does not exist (or these credentials "
                     "cannot see it); create it, or check the name")


def makedirs(path):
  """Creates the folder and its parents (fine if it is there)."""
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      check_bucket(path)
      _filesystem(path).makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def remove(path):
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      _filesystem(path).remove(path)
  else:
    os.remove(path)


def rmtree(path):
  """Removes a folder and everything under it (quietly if it is not there)."""
  path = str(path)
  if paths.is_url(path):
    with url_errors(path):
      if exists(path):
        _filesystem(path).rmtree(path)
  else:
    import shutil  # pylint: disable=g-import-not-at-top
    shutil.rmtree(path, ignore_errors=True)


def remove_any(path):
  """Removes a file or a folder, whichever `path` is (quietly if it is not there)."""
  if islink(path) or (exists(path) and not isdir(path)):
    remove(path)
  elif exists(path):
    rmtree(path)


def rmdir_if_empty(path):
  """Removes the folder `path` if it holds nothing (quietly otherwise)."""
  try:
    if paths.is_url(path):
      if isdir(path) and not listdir(path):
        _filesystem(path).rmtree(path)
    else:
      os.rmdir(path)
  except (OSError, errors.UserError):
    pass
  except Exception as exc:  # pylint: disable=broad-except
    if not isinstance(exc, _tf_errors().OpError):
      raise


def replace(src, dst):
  """Moves the file or folder `src` to `dst`, replacing a file there (os.replace).

  On a local disk and on ram:// this is a rename: `dst` appears whole at once. GCS has
  no rename: TensorFlow copies each object, then deletes it, so a folder appears object
  by object there; `move_folder` orders the objects so that at every level a folder's
  defining files come after everything else in it.
  """
  src, dst = str(src), str(dst)
  if not paths.is_url(dst):
    os.replace(src, dst)
    return
  with url_errors(dst):
    if _filesystem(src).isdir(src):
      move_folder(src, dst)
    else:
      _filesystem(dst).rename(src, dst, overwrite=True)


# The files that make a folder what it is (a SavedModel, a checkpoint, an export), by
# the order they are moved in at their level: a reader that finds one finds everything
# else of its folder already in place. A checkpoint's .index names its data shards; the
# `checkpoint` state file and saved_model.pb name the rest of their folder.
_DEFINING = {"fingerprint.pb": 3, "model.json": 3, "config.json": 3, "metadata.json": 3,
             "saved_model.pb": 4, "checkpoint": 4}


def move_order(name):
  """The sort key of a file (a `/`-separated path inside a folder) in move_folder: at
  every level, the folder's other files first, then each subfolder whole (its own
  defining files last in it), then the folder's defining files."""
  *folders, base = name.split("/")
  rank = _DEFINING.get(base, 2 if base.endswith(".index") else 0)
  return tuple((1, folder) for folder in folders) + ((rank, base),)


def move_folder(src, dst):
  """Moves folder `src` (a URL) to `dst` file by file in move_order (see replace)."""
  g = _filesystem(dst)
  g.makedirs(dst)
  for name in sorted(walk_files(src), key=move_order):
    target = posixpath.join(dst, name)
    g.makedirs(posixpath.dirname(target))
    g.rename(posixpath.join(src, name), target, overwrite=True)
  if g.exists(src):
    g.rmtree(src)


def copy_tree(src, dst):
  """Copies every file under folder `src` into folder `dst` (either may be a URL)."""
  for name in walk_files(src):
    target = paths.join(dst, name)
    makedirs(paths.dirname(target))
    copy(paths.join(src, name), target)


def copy(src, dst, overwrite=True):
  src, dst = str(src), str(dst)
  if not paths.is_url(src) and not paths.is_url(dst):
    import shutil  # pylint: disable=g-import-not-at-top
    if not overwrite and os.path.exists(dst):
      raise FileExistsError(dst)
    shutil.copyfile(src, dst)
    return
  with url_errors(dst):
    _filesystem(dst).copy(src, dst, overwrite=overwrite)


# --------------------------------------------------------------------------- reading and writing


class _GFileRaw(io.RawIOBase):
  """A tf.io.gfile.GFile as a raw binary stream, so that io's buffering and text layers
  give a URL exactly the semantics that `open` gives a local file."""

  def __init__(self, path, mode):
    super().__init__()
    self._mode = mode
    self._handle = _filesystem(path).GFile(path, mode.replace("b", "") + "b")

  def readable(self):
    return "r" in self._mode

  def writable(self):
    return "w" in self._mode or "a" in self._mode

  def seekable(self):
    return "r" in self._mode

  def seek(self, offset, whence=io.SEEK_SET):
    self._handle.seek(offset, whence)
    return self._handle.tell()

  def tell(self):
    return self._handle.tell()

  def readinto(self, buffer):
    data = self._handle.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)

  def write(self, data):
    self._handle.write(bytes(data))
    return len(data)

  def close(self):
    if not self.closed:
      self._handle.close()
    super().close()


def open(path, mode="r", encoding="utf-8", errors=None, newline=None):  # pylint: disable=redefined-builtin
  """builtins.open for a local path or a URL, with the same modes and text semantics.

  Text mode defaults to UTF-8 (the original's files are UTF-8 everywhere).
  """
  path = str(path)
  if not paths.is_url(path):
    if "b" in mode:
      return builtins.open(path, mode)
    return builtins.open(path, mode, encoding=encoding, errors=errors, newline=newline)
  with url_errors(path):
    raw = _GFileRaw(path, mode)
  buffered = (io.BufferedReader(raw, 1 << 20) if "r" in mode
              else io.BufferedWriter(raw, 1 << 20))
  if "b" in mode:
    return buffered
  return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline=newline)


def open_binary(path, mode="rb"):
  """open(path, mode) in binary, for a local path or a URL."""
  return open(path, mode if "b" in mode else mode + "b")


def read_bytes(path, label="", missing_hint="", expected="a file"):
  """The whole file as bytes; a missing file or a directory is a UserError naming it.

  The messages: `{label}{path}: no such file{missing_hint}` and `{label}{path}: is a
  directory, expected {expected}` (for example label "vocab file ", missing_hint
  "; check --data_dir").
  """
  if not exists(path):
    try:
      check_bucket(path)  # a missing bucket is said as such
    except UrlError as exc:
      raise errors.UserError(f"{label}{path}: {exc.reason}") from None
    raise errors.UserError(f"{label}{path}: no such file{missing_hint}")
  if isdir(path):
    raise errors.UserError(f"{label}{path}: is a directory, expected {expected}")
  with open_binary(path) as handle:
    return handle.read()


def write_bytes(path, data):
  """Writes `data` to `path` (not atomically: see atomic_output for outputs)."""
  with open_binary(path, "wb") as handle:
    handle.write(data)


# UTF-8 that drops a byte-order mark at the start of a file, and only there (anywhere else
# it is text). Notepad and other Windows editors save UTF-8 with U+FEFF first; kept, it
# would be part of the first word, field, header name or JSON key (a CoNLL reader would
# take "\ufeff-DOCSTART-" for a word). Every reader of ours decodes a file's start with it.
_TEXT_ENCODING = "utf-8-sig"
# The mark's bytes, for a writer that must keep a file's first line as it was.
BYTE_ORDER_MARK = "\ufeff".encode("utf-8")
def decode_text(data):
  """A whole file's bytes (or its first line's) as text: UTF-8, a leading byte-order mark
  dropped.

  Raises UnicodeDecodeError (the caller names the file: errors.not_utf8_message), whose
  offsets count the file's bytes, the mark's included.
  """
  try:
    return data.decode(_TEXT_ENCODING)
  except UnicodeDecodeError as exc:
    # The codec counts from after the mark it dropped: the offsets a user reads are the
    # file's own.
    skipped = len(data) - len(exc.object)
    raise UnicodeDecodeError(exc.encoding, data, exc.start + skipped, exc.end + skipped,
                             exc.reason) from None


def open_text(path, newline=""):
  """A UTF-8 text file, local or a URL, read without its leading byte-order mark;
  decoding errors are raised as they are met. Universal newlines are off unless `newline`
  is None (csv wants them off)."""
  return open(path, encoding=_TEXT_ENCODING, newline=newline)


def local_size(path):
  """Size in bytes of a file (progress shares only); 0 where it cannot be known."""
  try:
    return getsize(path)
  except (OSError, errors.UserError):
    return 0
