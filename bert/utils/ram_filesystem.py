"""tf.io.gfile for ram://, TensorFlow's in-memory filesystem, with its quirks mended.

ram:// answers by name prefix where a filesystem answers by name: beside
`bert_model.ckpt.index` it says `bert_model.ckpt` exists and is a folder; beside
`eval_results.txt` it leaves the folder `eval` out of its parent's list and lists
`_results.txt` in `eval`. It writes over a file's start without truncating it, and its
rmtree of a folder that only its files made removes them, then says the folder is not
found. Its glob is right (it matches names whole, one level at a time), so the answers
here are read from it. file_io asks this adaptor for every ram:// path, and tf.io.gfile
itself for the others; what is not mended here is tf.io.gfile's own.
"""

import glob as _glob

from bert.utils import paths


class RamFilesystem:
  """The tf.io.gfile calls file_io makes, right on ram://; the others are gfile's own."""

  def __init__(self):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._gfile = tf.io.gfile
    self._not_found = tf.errors.NotFoundError

  def __getattr__(self, name):
    return getattr(self._gfile, name)

  def exists(self, path):
    # A folder that only holds files (no marker of its own) shows in its files.
    escaped = _glob.escape(path.rstrip("/"))
    return bool(self._gfile.glob(escaped) or self._gfile.glob(escaped + "/*"))

  def isdir(self, path):
    return self.exists(path) and self._gfile.isdir(path)

  def listdir(self, path):
    # The names are the first parts of each level's glob matches.
    base = path.rstrip("/")
    names = set()
    pattern = base
    for _ in range(64):
      pattern += "/*"
      matches = self._gfile.glob(pattern)
      if not matches:
        break
      names.update(m[len(base) + 1:].split("/", 1)[0] for m in matches)
    return sorted(names)

  def GFile(self, path, mode="r"):  # pylint: disable=invalid-name
    if "w" in mode and self._gfile.exists(path):
      self._gfile.remove(path)  # else a shorter rewrite keeps the longer one's tail
    return self._gfile.GFile(path, mode)

  def rmtree(self, path):
    try:
      self._gfile.rmtree(path)
    except self._not_found:
      if self.exists(path):  # what matters is that nothing is left
        raise


_ADAPTOR = []


def filesystem():
  """The one RamFilesystem of this process (TensorFlow is imported on first use)."""
  if not _ADAPTOR:
    _ADAPTOR.append(RamFilesystem())
  return _ADAPTOR[0]


def is_ram(path):
  return paths.scheme(path) == "ram"
