"""Prints docs/TESTS.md: which test files run in `make test` and which in `make test-slow`.

  python tools/maintainers/gen_test_suites.py > docs/TESTS.md
  python tools/maintainers/gen_test_suites.py --by_test   # JSON: {test node id: suite}

Collects every test (pytest --collect-only, nothing runs) and lists each file's test
cases by suite, from their pytest markers (tests/support/suites_list.py). `make docs`
runs it; tests/project/test_docs.py compares the file with what a run of the whole suite
collected.
"""

import contextlib
import io
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Render:
  """A pytest plugin that renders the collected items once collection ends."""

  text = by_test = None

  def pytest_collection_finish(self, session):
    # tests/support is on sys.path while pytest runs (pytest.ini's pythonpath).
    import suites_list  # pylint: disable=g-import-not-at-top
    self.text = suites_list.render(session.items, ROOT)
    self.by_test = suites_list.suite_by_test(session.items)


def main():
  if sys.argv[1:] not in ([], ["--by_test"]):
    # A misspelt flag must not print the page as if it had been understood.
    sys.stderr.write(f"gen_test_suites.py: error: unknown argument(s) "
                     f"{' '.join(sys.argv[1:])}; the one flag is --by_test\n")
    return 2
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  plugin = _Render()
  os.chdir(ROOT)
  listing = io.StringIO()  # pytest's list of test ids: not part of the page
  with contextlib.redirect_stdout(listing):
    status = pytest.main(["--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                          "tests"], plugins=[plugin])
  if status != 0 or plugin.text is None:
    sys.stderr.write(listing.getvalue()[-3000:]
                     + f"\ncollecting the tests failed (pytest exit {status})\n")
    return 1
  sys.stdout.write(json.dumps(plugin.by_test, indent=0, sort_keys=True) + "\n"
                   if sys.argv[1:] == ["--by_test"] else plugin.text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
