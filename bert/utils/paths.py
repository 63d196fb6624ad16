"""A user's path named: a local path or a URL, taken apart and put together, without I/O.

A URL (`gs://bucket/x`, `ram://x`, `s3://...`) is never normalized as a local path:
`os.path.normpath("gs://b/x")` is `gs:/b/x`, which no filesystem knows. Nothing here
touches a filesystem or imports TensorFlow, so the TensorFlow-free LiteRT predictor and
the commands' flag checks use it as they are; reading and writing is file_io's.
"""

import glob as _glob
import os
import posixpath
import re
import uuid

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def is_url(path):
  """True for a URL (`gs://bucket/x`, `ram://x`, `s3://...`): read through tf.io.gfile."""
  return bool(_URL.match(str(path)))


def scheme(path):
  """'gs' for gs://bucket/x; '' for a local path."""
  match = _URL.match(str(path))
  return match.group(1).lower() if match else ""


def split_scheme(url):
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
  head, rest = split_scheme(path)
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
  head, rest = split_scheme(path)
  return head + (posixpath.normpath(rest) if rest else "")


def abspath(path):
  """An absolute local path (`~` expanded); a URL is absolute already (trailing `/` off)."""
  path = str(path)
  if is_url(path):
    return normpath(path)
  return os.path.abspath(os.path.expanduser(path))


def has_magic(pattern):
  return _glob.has_magic(str(pattern))


def glob_escape(path):
  """`path` with its glob characters quoted (a URL's too)."""
  return _glob.escape(str(path))


def temporary_sibling(path, kind="tmp"):
  """`.NAME.tmp-XXXXXXXX` beside `path`: where a writer puts an output before it is whole."""
  directory, name = split(normpath(path))
  return join(directory, f".{name}.{kind}-{uuid.uuid4().hex[:8]}")
