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


# --------------------------------------------------------------------------- gs:// names

# Google Cloud Storage's bucket naming rules (cloud.google.com/storage/docs/buckets#naming):
# lowercase letters, digits, `-`, `_` and `.`, starting and ending with a letter or a
# digit; 3 to 63 characters, or up to 222 with dots, each dot-separated part 63 at most;
# not an IP address; not starting with "goog" nor holding "google".
_BUCKET_CHARACTERS = re.compile(r"[a-z0-9]([a-z0-9._-]*[a-z0-9])?")
_IP_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}")


def bucket(url):
  """'gs://name' of gs://name/a/b (the bucket of any URL's first part)."""
  head, rest = split_scheme(str(url))
  return head + rest.split("/", 1)[0]


def bucket_name_problem(url):
  """Why the bucket of the gs:// URL `url` cannot exist on GCS, in words, or None."""
  name = bucket(url)[len("gs://"):]
  if not name:
    return "a gs:// URL names its bucket first: gs://BUCKET/..."
  if name != name.lower():
    return "bucket names have no capital letters"
  if not _BUCKET_CHARACTERS.fullmatch(name):
    return ("bucket names hold only lowercase letters, digits, '-', '_' and '.', and start "
            "and end with a letter or a digit")
  if len(name) < 3 or len(name) > (222 if "." in name else 63):
    return "bucket names are 3 to 63 characters long (222 with dots)"
  if any(len(part) > 63 for part in name.split(".")) or ".." in name:
    return "each dot-separated part of a bucket name is 1 to 63 characters long"
  if _IP_ADDRESS.fullmatch(name):
    return "a bucket name is not an IP address"
  if name.startswith("goog") or "google" in name:
    return "bucket names do not start with 'goog' nor hold 'google'"
  return None


def gsutil_form(path):
  """`gs://b//x/` as gsutil reads it, `gs://b/x/`: repeated slashes in the object part
  collapsed. GCS would take `gs://b//x` for the object prefix `/x/` (a folder with an
  empty name, which the console shows and few tools reach); gsutil and gcloud storage
  collapse it, so that `$BUCKET/x` works when BUCKET ends with a slash. Other paths are
  left as they are."""
  path = str(path)
  if scheme(path) != "gs":
    return path
  head, rest = split_scheme(path)
  name, slash, objects = rest.partition("/")
  return head + name + slash + re.sub(r"/{2,}", "/", objects).lstrip("/") if slash else path
