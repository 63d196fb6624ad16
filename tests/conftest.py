"""Shared test fixtures: the repo root on sys.path, the shared real data, quiet TensorFlow."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Scripts run by tests take the original's XLA off / float32 on every CPU, not
# cpu_choice's table (docs/cpu.md): the same numbers and run time on any CI machine.
os.environ.setdefault("BERT_CPU_TABLE", "0")
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
