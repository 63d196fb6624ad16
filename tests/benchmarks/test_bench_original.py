"""The benchmarks' side of the original release: the checks its figures rest on.

The original (`bert-tensorflow` 1.0.4) runs in a venv of its own (`make
bench-original-setup`); its import name `bert` is also ours, so the benchmarks refuse a
run in which it imported our modules, and refuse an instance count that is not ours within
2%. Where the venv is missing, the rows say so. Nothing here times anything.
"""
# pylint: disable=protected-access
import os
import sys

import pytest

from conftest import ROOT

from benchmarks import bench_pretraining_data
from benchmarks import bench_tokenization
from benchmarks.parts import original_launcher
from benchmarks.parts import original_worker


def test_instance_counts_within_two_percent_give_the_relative_difference():
  check = bench_pretraining_data.check_instance_counts
  assert check(160_343, 160_343) == 0.0
  assert check(10_000, 10_200) == pytest.approx(0.02)
  assert check(10_000, 9_800) == pytest.approx(-0.02)
  assert check(3_313, 3_340) == pytest.approx(27 / 3_313)


@pytest.mark.parametrize("ours,original,words", [
    (10_000, 10_201, "ours 10,000, the original 10,201 (+2.01%), beyond 2%"),
    (10_000, 9_799, "ours 10,000, the original 9,799 (-2.01%), beyond 2%"),
    (10_000, 0, "a side wrote nothing"),
    (0, 0, "a side wrote nothing"),
])
def test_instance_counts_beyond_two_percent_or_empty_fail_naming_both(ours, original, words):
  with pytest.raises(AssertionError) as raised:
    bench_pretraining_data.check_instance_counts(ours, original)
  assert words in str(raised.value)


def test_a_round_whose_counts_differ_fails_the_comparison():
  # Ours wrote 1,000 in 1 s of work and 2 s whole; the original 1,010 then 1,015 in the
  # same times: ratios 1000/1010 and 1000/1015, median 0.9876.
  run = lambda n: {"instances": n, "work_s": 1.0, "wall_s": 2.0}  # noqa: E731
  rows = bench_pretraining_data._ratio_rows("1.0 MB", [run(1000), run(1000)],
                                            [run(1010), run(1015)])
  assert [(r["name"], r["value"]) for r in rows] == [
      ("1.0 MB: ours / the original, work alone", 0.99),
      ("1.0 MB: ours / the original, whole process", 0.99),
      ("1.0 MB: the original's instances against ours", 1.5)]
  with pytest.raises(AssertionError, match="ours 1,000, the original 1,030"):
    bench_pretraining_data._ratio_rows("1.0 MB", [run(1000), run(1000)],
                                       [run(1010), run(1030)])


def test_the_side_refuses_our_bert_modules():
  # Started from this project, `from bert import tokenization` finds ours: the original's
  # side must stop rather than time our tokenizer as the original's.
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  with pytest.raises(SystemExit, match="not the original release's code"):
    original_worker._own_modules(tokenization)


def test_the_bridge_accepts_only_files_of_the_sides_site_packages(tmp_path):
  purelib = tmp_path / "venv" / "lib" / "site-packages"
  own = str(purelib / "bert" / "tokenization.py")
  result = {"purelib": str(purelib), "module_files": {"bert.tokenization": own}}
  assert original_launcher.check_own_modules(result) is result
  for path in (os.path.join(ROOT, "bert", "tokenization.py"),
               str(tmp_path / "elsewhere" / "bert" / "tokenization.py")):
    result["module_files"]["bert.tokenization"] = path
    with pytest.raises(AssertionError, match="not from its own site-packages"):
      original_launcher.check_own_modules(result)
  # A site-packages inside this project is refused where the module is our bert/.
  result = {"purelib": ROOT, "module_files": {"bert.tokenization": os.path.join(
      ROOT, "bert", "tokenization.py")}}
  with pytest.raises(AssertionError):
    original_launcher.check_own_modules(result)


def test_the_side_starts_isolated_without_pythonpath(monkeypatch):
  monkeypatch.setenv("PYTHONPATH", ROOT)
  monkeypatch.setenv("BERT_ORIGINAL_PYTHON", sys.executable)
  assert "PYTHONPATH" not in original_launcher.environment()
  assert original_launcher.command("generate", "r.json") == [
      sys.executable, "-E", "-s", original_launcher.ORIGINAL_SIDE, "generate", "r.json"]


def test_missing_interpreter_gives_rows_that_say_so(monkeypatch):
  monkeypatch.setenv("BERT_ORIGINAL_PYTHON", os.path.join(ROOT, "no-such-python"))
  assert original_launcher.original_python() is None
  assert bench_pretraining_data._original("c.txt", "o.tfrecord") == \
      original_launcher.ORIGINAL_HINT
  assert bench_tokenization._original_timer("vocab.txt") is None
  rows = bench_tokenization._original_rows(10, [], [], None, 0, original_launcher.ORIGINAL_HINT,
                                           [], [])
  assert [(r["value"], r["note"]) for r in rows] == [("skipped", original_launcher.ORIGINAL_HINT)]
  assert "make bench-original-setup" in original_launcher.ORIGINAL_HINT
