"""Shared test fixtures: the repo root on sys.path, the shared real data, quiet TensorFlow."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

import pytest  # noqa: E402

SHARED_DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
MINILM_DIR = os.path.join(SHARED_DATA, "models", "uncased_L-6_H-384_A-12")
UNCASED_VOCAB = os.path.join(SHARED_DATA, "vocab", "uncased_vocab.txt")
CASED_VOCAB = os.path.join(SHARED_DATA, "vocab", "cased_vocab.txt")


def shared_path(*parts):
  """Path under ../shared/data; skips the test when the shared data is not there."""
  path = os.path.join(SHARED_DATA, *parts)
  if not os.path.exists(path):
    pytest.skip(f"shared data not available: {path}")
  return path


@pytest.fixture
def repo_root():
  return ROOT


def import_script(name):
  """Imports a top-level script for its functions, in a test process shared with others.

  Several scripts define flags of the same name (input_file, vocab_file, ...), as the
  original's scripts did; absl refuses a second definition. Only one script's flags can
  be live at a time, so the flags of scripts imported earlier are forgotten first. Tests
  call a script's functions this way, never its FLAGS-reading main() (that runs in a
  subprocess, through the real command line).
  """
  import importlib  # pylint: disable=g-import-not-at-top
  from absl import flags  # pylint: disable=g-import-not-at-top
  import flags_common  # pylint: disable=g-import-not-at-top
  if name in sys.modules:
    return sys.modules[name]
  for flag_name in list(flags.FLAGS):
    module = flags.FLAGS.find_module_defining_flag(flag_name) or ""
    if not module.startswith("absl"):
      delattr(flags.FLAGS, flag_name)
  flags_common._DEFINED.clear()  # pylint: disable=protected-access
  return importlib.import_module(name)
