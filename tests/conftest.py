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


# -- command lines in warm processes (tests/support/cli_harness.py) ----------------------------

import cli_harness  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _warm_commands_of_one_file():
  """The warm processes that answered this file's command lines (cli_harness.run) end
  with the file."""
  yield
  cli_harness.close_all()


# -- a local Google Cloud Storage for gs:// paths (tests/support/gcs_emulator) -----------------

from gcs_emulator import GcsEmulator, GcsEmulatorError  # noqa: E402
import suites_list  # noqa: E402


SUITES_LIST = pytest.StashKey[str]()
SUITE_BY_TEST = pytest.StashKey[dict]()


@pytest.hookimpl(tryfirst=True)  # before -m, -k and --deselect leave any test out
def pytest_collection_modifyitems(config, items):
  """A test that uses the emulator carries the `gcs` mark (`-m "not gcs"` leaves them out).
  A run that collected every test file keeps docs/TESTS.md's text of what it collected
  (suites_list.render) and each test's suite, for tests/project/test_docs.py to compare
  without collecting again."""
  for item in items:
    if "gcs" in getattr(item, "fixturenames", ()):
      item.add_marker(pytest.mark.gcs)
  if suites_list.collected_whole_tree(items, ROOT):
    config.stash[SUITES_LIST] = suites_list.render(items, ROOT)
    config.stash[SUITE_BY_TEST] = suites_list.suite_by_test(items)


@pytest.fixture(scope="session")
def gcs():
  """The GCS emulator of this test process (each xdist worker starts its own), started at
  first use and stopped at the end of the session. Skips the test when the side environment
  .venv-gcs is missing (`make gcs-emulator` builds it); fails, with the servers' log, when
  the environment is there but the servers do not start."""
  emulator = GcsEmulator()
  if not emulator.available():
    pytest.skip(emulator.why_unavailable)
  try:
    emulator.start()
  except GcsEmulatorError as err:
    pytest.fail(str(err), pytrace=False)
  yield emulator
  emulator.stop()


@pytest.fixture
def gcs_bucket(gcs, request):
  """"gs://<name>" of a new, empty, writable bucket for this test."""
  return gcs.new_bucket(request.node.name)


# -- tiny models' runs with their LiteRT exports (tests/support/litert_exports.py) -----------
# Session-wide: the converter's tests and the predictor's read the same runs.


@pytest.fixture(scope="session")
def litert_mrpc_run(tmp_path_factory):
  """MRPC's run alone: what the default tests use."""
  import litert_exports  # pylint: disable=g-import-not-at-top
  root = litert_exports.task_folders(tmp_path_factory.mktemp("litert"))
  return litert_exports.predict_and_export(root, ["mrpc"])


@pytest.fixture(scope="session")
def litert_runs(litert_mrpc_run):
  """Every task's run (the slow tests): MRPC's, and the other two at once."""
  import litert_exports  # pylint: disable=g-import-not-at-top
  root = litert_mrpc_run["mrpc"][0].parent
  return {**litert_mrpc_run, **litert_exports.predict_and_export(
      root, [t for t in litert_exports.TASKS if t != "mrpc"])}
