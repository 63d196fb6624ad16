"""tf.io.gfile for ram://, TensorFlow's in-memory filesystem, with its quirks mended.

ram:// answers by name prefix where a filesystem answers by name: beside
`bert_model.ckpt.index` it says `bert_model.ckpt` exists and is a folder; beside
`eval_results.txt` it leaves the folder `eval` out of its parent's list and lists
`_results.txt` in `eval`; a folder that only its files made (no makedirs) is in no list.
It writes over a file's start without truncating it. Its rmtree of such a folder removes
the files directly in it, leaves those of its subfolders, then says it is not found.
Its glob is right (it matches names whole, one level at a time), so the answers here are
read from it. file_io asks this adaptor for every ram:// path, and tf.io.gfile
itself for the others; what is not mended here is tf.io.gfile's own.
"""

import glob as _glob

from bert.utils import paths

# How deep below a folder ram:// is searched: deeper than any output of ours.
MAX_DEPTH = 16


class RamFilesystem:
  """The tf.io.gfile calls file_io makes, right on ram://; the others are gfile's own."""

  def __init__(self):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self._gfile = tf.io.gfile
    self._not_found = tf.errors.NotFoundError

  def __getattr__(self, name):
    return getattr(self._gfile, name)

  def _below(self, path):
    """Every name ram:// holds below the folder `path` (its glob, one level at a time: a
    folder that only its files made shows in none of them, so no level ends the walk)."""
    base = _glob.escape(path.rstrip("/"))
    found, pattern = [], base
    for _ in range(MAX_DEPTH):
      pattern += "/*"
      found += self._gfile.glob(pattern)
    return found

  def exists(self, path):
    return bool(self._gfile.glob(_glob.escape(path.rstrip("/"))) or self._below(path))

  def isdir(self, path):
    return self.exists(path) and self._gfile.isdir(path)

  def listdir(self, path):
    base = path.rstrip("/")
    return sorted({m[len(base) + 1:].split("/", 1)[0] for m in self._below(path)})

  def GFile(self, path, mode="r"):  # pylint: disable=invalid-name
    if "w" in mode and self._gfile.glob(_glob.escape(path)):  # that very file
      self._gfile.remove(path)  # else a shorter rewrite keeps the longer one's tail
    return self._gfile.GFile(path, mode)

  def rmtree(self, path):
    # Its own rmtree leaves the files of folders that only their files made.
    for name in sorted(self._below(path), key=lambda n: -n.count("/")):
      if not self._gfile.isdir(name):
        self._gfile.remove(name)
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
