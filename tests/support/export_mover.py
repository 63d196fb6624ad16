"""Writes small exports onto a URL through the library's export writer, and can kill itself
with SIGKILL in the middle of a folder's move: what a kill -9 there leaves, exactly.

  python tests/support/export_mover.py ROOT_URL
  env EXPORT_MOVER_DIRS=k1/exp,k2/exp   the exports under ROOT_URL, written in turn
      EXPORT_MOVER_KILL_AT=N            SIGKILL before the Nth file of the move (0: none)

Every run has the same command line whatever it is told by its environment, so a run
that writes again what a killed one left is "the same command" to the library
(atomic_output.clear_half_moved). Each export is EXPORT, written as the formats write
theirs (output_lock.writing_export: the lock, a temporary beside it, the move), with the
refusal of an occupied folder the export writers make.
"""
import os
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

# A SavedModel with its variables, the token-id SavedModel in ids/, the LiteRT folder.
EXPORT = {"saved_model.pb": b"pb", "variables/variables.index": b"index",
          "variables/variables.data-00000-of-00001": b"data", "ids/saved_model.pb": b"ids-pb",
          "ids/variables/variables.index": b"ids-index",
          "ids/variables/variables.data-00000-of-00001": b"ids-data",
          "litert/model_float32.tflite": b"tflite", "litert/model.json": b"{}"}
# Each folder of EXPORT and the file that makes it what it is.
DEFINING = {"": "saved_model.pb", "variables/": "variables/variables.index",
            "ids/": "ids/saved_model.pb", "ids/variables/": "ids/variables/variables.index",
            "litert/": "litert/model.json"}


def move_order(name):
  from bert.utils import file_io  # pylint: disable=g-import-not-at-top
  return file_io.move_order(name)


def _kill_before(count):
  """Makes tf.io.gfile.rename (what a folder's move calls for each file) SIGKILL this
  process at its `count`-th call."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rename, calls = tf.io.gfile.rename, [0]

  def renaming(src, dst, overwrite=False):
    calls[0] += 1
    if calls[0] == count:
      os.kill(os.getpid(), signal.SIGKILL)
    return rename(src, dst, overwrite)

  tf.io.gfile.rename = renaming


def write(export_dir):
  from bert.utils import atomic_output  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  from bert.utils import file_io  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.utils import paths  # pylint: disable=g-import-not-at-top

  def check():
    where = f"--export_dir={export_dir}"
    if (file_io.isdir(export_dir) and file_io.listdir(export_dir) and
        not atomic_output.left_half_moved(export_dir, where)):
      raise errors.UserError(f"{where}: exists and is not empty")

  with output_lock.writing_export(export_dir, check) as tmp:
    for name, data in EXPORT.items():
      file_io.write_bytes(paths.join(tmp, name), data)


def main():
  root = sys.argv[1].rstrip("/")
  kill_at = int(os.environ.get("EXPORT_MOVER_KILL_AT") or 0)
  if kill_at:
    _kill_before(kill_at)
  for name in os.environ["EXPORT_MOVER_DIRS"].split(","):
    write(f"{root}/{name}")


if __name__ == "__main__":
  main()
