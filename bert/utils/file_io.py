"""Every file a command or the library reads or writes: a local path or a URL, one way.

A user's path is either a local path (relative, `~`, symbolic links, as always) or a URL
of any filesystem TensorFlow knows: `gs://bucket/...` (built into TensorFlow), `ram://`
(TensorFlow's in-memory one), and `s3://`, `hdfs://` where a plugin registers them. The
functions here take both and do the same thing with each: local paths go through the
standard library, URLs through `tf.io.gfile`. A URL is never normalized as a local path
(`os.path.normpath("gs://b/x")` is `gs:/b/x`, which no filesystem knows), and no other
module calls `open`, `os.path` or `glob` on a user's path: they call these.

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
import uuid

from bert.utils import errors

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


class UrlError(errors.UserError):
  """A filesystem refused an operation on a URL: `{path}: {reason}`, one line."""

  def __init__(self, path, reason):
    super().__init__(f"{path}: {reason}")
    self.path, self.reason = path, reason


# --------------------------------------------------------------------------- names


def is_url(path):
  """True for a URL (`gs://bucket/x`, `ram://x`, `s3://...`): read through tf.io.gfile."""
  return bool(_URL.match(str(path)))


is_remote = is_url  # the older name, kept for callers outside this package


def scheme(path):
  """'gs' for gs://bucket/x; '' for a local path."""
  match = _URL.match(str(path))
  return match.group(1).lower() if match else ""


def _parts(url):
  """('gs://', 'bucket/a/b') for gs://bucket/a/b."""
  match = _URL.match(url)
  return url[:match.end()], url[match.end():]


def expand(path):
  """A user's path as given, with `~` expanded on local paths (a URL is left alone)."""
  path = str(path)
  return path if is_url(path) else os.path.expanduser(path)


def join(path, *parts):
  """os.path.join, for a URL too (`/` separated, its `//` kept)."""
  path = str(path)
  if is_url(path):
    return posixpath.join(path, *parts)
  return os.path.join(path, *parts)


def split(path):
  """(dirname, basename); for gs://b/x/y that is (gs://b/x, y), never a collapsed `gs:/`."""
  path = str(path)
  if not is_url(path):
    return os.path.split(path)
  head, rest = _parts(path)
  rest = rest.rstrip("/")
  directory, name = posixpath.split(rest)
  return head + directory, name


def dirname(path):
  return split(path)[0]


def basename(path):
  return split(path)[1]


def normpath(path):
  """os.path.normpath; on a URL only the part after `scheme://` is normalized."""
  path = str(path)
  if not is_url(path):
    return os.path.normpath(path)
  head, rest = _parts(path)
  return head + (posixpath.normpath(rest) if rest else "")


def abspath(path):
  """An absolute local path (`~` expanded); a URL is absolute already (trailing `/` off)."""
  path = str(path)
  if is_url(path):
    return normpath(path)
  return os.path.abspath(os.path.expanduser(path))


def realpath(path):
  """Symbolic links resolved on a local path; a URL as it is (object stores have none)."""
  return normpath(path) if is_url(path) else os.path.realpath(os.path.expanduser(path))


def has_magic(pattern):
  return _glob.has_magic(str(pattern))


def temporary_sibling(path, kind="tmp"):
  """`.NAME.tmp-XXXXXXXX` beside `path`: where a writer puts an output before it is whole."""
  directory, name = split(normpath(path))
  return join(directory, f".{name}.{kind}-{uuid.uuid4().hex[:8]}")


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
    return (f"no filesystem knows the scheme '{scheme(path)}://' (TensorFlow has gs:// "
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
    if exc is None or not is_url(self.path):
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


def exists(path):
  path = str(path)
  if is_url(path):
    with url_errors(path):
      if scheme(path) == "ram":
        # ram:// answers by name prefix: with bert_model.ckpt.index there, it says
        # bert_model.ckpt exists (and is a folder). Its glob matches names whole.
        # A folder that only holds files (no marker of its own) shows in its files.
        escaped = _glob.escape(path.rstrip("/"))
        return bool(gfile().glob(escaped) or gfile().glob(escaped + "/*"))
      return gfile().exists(path)
  return os.path.exists(path)


def isdir(path):
  path = str(path)
  if is_url(path):
    with url_errors(path):
      if scheme(path) == "ram" and not exists(path):
        return False
      return gfile().isdir(path)
  return os.path.isdir(path)


def isfile(path):
  path = str(path)
  if is_url(path):
    return exists(path) and not isdir(path)
  return os.path.isfile(path)


def islink(path):
  """A local symbolic link (URLs have none)."""
  return not is_url(path) and os.path.islink(path)


def getsize(path):
  path = str(path)
  if is_url(path):
    with url_errors(path):
      return gfile().stat(path).length
  return os.path.getsize(path)


def mtime_ns(path):
  """The file's modification time in nanoseconds (0 where a filesystem keeps none)."""
  path = str(path)
  if is_url(path):
    with url_errors(path):
      return gfile().stat(path).mtime_nsec
  return os.stat(path).st_mtime_ns


def readable(path):
  """False for a local file the user may not read; a URL is checked when it is read."""
  return is_url(path) or os.access(path, os.R_OK)


def writable_dir(path):
  """False for a local folder the user may not write in; a URL is checked by writing."""
  return is_url(path) or os.access(path, os.W_OK | os.X_OK)


def listdir(path):
  """The names in a folder (no trailing `/` on a URL's subfolders), unsorted."""
  path = str(path)
  if is_url(path):
    with url_errors(path):
      if scheme(path) == "ram":
        return _ram_listdir(path)
      return [name.rstrip("/") for name in gfile().listdir(path)]
  return os.listdir(path)


def _ram_listdir(path):
  # TensorFlow's ram:// lists by name prefix, wrongly: beside eval_results.txt the
  # folder `eval` is left out of its parent's list, and `eval` lists `_results.txt`.
  # Its glob is right, one level at a time: the names are the first parts of each
  # level's matches.
  base = path.rstrip("/")
  names = set()
  pattern = base
  for _ in range(64):
    pattern += "/*"
    matches = gfile().glob(pattern)
    if not matches:
      break
    names.update(m[len(base) + 1:].split("/", 1)[0] for m in matches)
  return sorted(names)


def glob(pattern):
  """Sorted paths matching `pattern`."""
  pattern = str(pattern)
  if is_url(pattern):
    with url_errors(pattern):
      return sorted(gfile().glob(pattern))
  return sorted(_glob.glob(pattern))


def glob_escape(path):
  """`path` with its glob characters quoted (a URL's too)."""
  return _glob.escape(str(path))


def walk_files(path):
  """Every file under the folder `path`, as paths relative to it, sorted."""
  path = str(path)
  found = []
  if is_url(path):
    for name in listdir(path):
      if isdir(join(path, name)):
        found += [posixpath.join(name, n) for n in walk_files(join(path, name))]
      else:
        found.append(name)
  else:
    for directory, _, names in os.walk(path):
      relative = os.path.relpath(directory, path)
      found += [n if relative == os.curdir else os.path.join(relative, n) for n in names]
  return sorted(found)


# --------------------------------------------------------------------------- changes


def _check_bucket(path):
  """A gs:// bucket that does not exist is one line: TensorFlow's makedirs there asks
  for the bucket forever, and its writes fail only when the file is closed."""
  if scheme(path) != "gs":
    return
  _, rest = _parts(path)
  bucket = "gs://" + rest.split("/", 1)[0]
  if not gfile().isdir(bucket):
    raise UrlError(path, f"the bucket {bucket} does not exist (or these credentials "
                   "cannot see it); create it, or check the name")


def makedirs(path):
  """Creates the folder and its parents (fine if it is there)."""
  path = str(path)
  if is_url(path):
    with url_errors(path):
      _check_bucket(path)
      gfile().makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def remove(path):
  path = str(path)
  if is_url(path):
    with url_errors(path):
      gfile().remove(path)
  else:
    os.remove(path)


def rmtree(path):
  """Removes a folder and everything under it (quietly if it is not there)."""
  path = str(path)
  if is_url(path):
    with url_errors(path):
      if not exists(path):
        return
      try:
        gfile().rmtree(path)
      except _tf_errors().NotFoundError:
        # ram:// removes the files of a folder that only its files made, then says the
        # folder is not found: what matters is that nothing is left.
        if exists(path):
          raise
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
    if is_url(path):
      if isdir(path) and not listdir(path):
        gfile().rmtree(path)
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
  by object there; `move_folder` orders the objects so that a folder's defining file
  comes last.
  """
  src, dst = str(src), str(dst)
  if not is_url(dst):
    os.replace(src, dst)
    return
  with url_errors(dst):
    if gfile().isdir(src):
      move_folder(src, dst)
    else:
      gfile().rename(src, dst, overwrite=True)


# The files that make a folder what it is (a SavedModel, a checkpoint, an export): moved
# last, so that a reader that finds them finds everything else already in place.
_DEFINING = re.compile(r"(^|/)(saved_model\.pb|fingerprint\.pb|checkpoint|[^/]*\.index|"
                       r"model\.json|config\.json|metadata\.json)$")


def move_folder(src, dst):
  """Moves folder `src` (a URL) to `dst` file by file, defining files last (see replace)."""
  g = gfile()
  names = walk_files(src)
  names.sort(key=lambda n: (bool(_DEFINING.search(n)), n.endswith(".index"), n))
  g.makedirs(dst)
  for name in names:
    target = posixpath.join(dst, name)
    g.makedirs(posixpath.dirname(target))
    g.rename(posixpath.join(src, name), target, overwrite=True)
  if g.exists(src):
    g.rmtree(src)


def copy_tree(src, dst):
  """Copies every file under folder `src` into folder `dst` (either may be a URL)."""
  for name in walk_files(src):
    target = join(dst, name)
    makedirs(dirname(target))
    copy(join(src, name), target)


def copy(src, dst, overwrite=True):
  src, dst = str(src), str(dst)
  if not is_url(src) and not is_url(dst):
    import shutil  # pylint: disable=g-import-not-at-top
    if not overwrite and os.path.exists(dst):
      raise FileExistsError(dst)
    shutil.copyfile(src, dst)
    return
  with url_errors(dst):
    gfile().copy(src, dst, overwrite=overwrite)


# --------------------------------------------------------------------------- reading and writing


class _GFileRaw(io.RawIOBase):
  """A tf.io.gfile.GFile as a raw binary stream, so that io's buffering and text layers
  give a URL exactly the semantics that `open` gives a local file."""

  def __init__(self, path, mode):
    super().__init__()
    self._mode = mode
    self._handle = gfile().GFile(path, mode.replace("b", "") + "b")

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
  if not is_url(path):
    if "b" in mode:
      return builtins.open(path, mode)
    return builtins.open(path, mode, encoding=encoding, errors=errors, newline=newline)
  with url_errors(path):
    if "w" in mode and scheme(path) == "ram" and gfile().exists(path):
      gfile().remove(path)  # ram:// writes over a file's start without truncating it
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
