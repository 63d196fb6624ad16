"""Benchmarks and the docs' generators under the commands' rules: a side that cannot run
is a "skipped" row with the command that sets it up, a missing ../shared is a row that
says so, a bad value or a misspelt flag is one line (listing the valid values), exit
status 2, and nothing printed as if measured."""
import os
import subprocess
import sys

import pytest

from benchmarks import bench_predict
from benchmarks import run_all
from benchmarks.parts import hugging_face_launcher
from benchmarks.parts import sst2
from conftest import ROOT


def test_only_hf_sides_without_their_venv_is_a_skipped_row(monkeypatch, tmp_path):
  monkeypatch.setattr(sst2, "SST2", str(tmp_path))  # present, whatever ../shared holds
  monkeypatch.setattr(sst2, "MODEL_DIR", str(tmp_path))
  monkeypatch.setattr(hugging_face_launcher, "hf_python", lambda: None)
  rows = bench_predict.run(quick=True, sides=["hf"], floor=False)
  assert rows == [{"name": "predict_whole_process_hf_ort", "value": "skipped", "unit": "",
                   "note": hugging_face_launcher.HF_HINT}]
  assert "make bench-hf-setup" in hugging_face_launcher.HF_HINT


def test_without_shared_data_predict_is_a_row_that_says_so(monkeypatch, tmp_path):
  missing = str(tmp_path / "shared" / "data" / "glue" / "SST-2")
  monkeypatch.setattr(sst2, "SST2", missing)
  assert bench_predict.run(quick=True, floor=False) == [
      {"name": "predict_whole_process", "value": "skipped", "unit": "",
       "note": f"{missing} not found (needs ../shared/data)"}]
  with pytest.raises(ValueError, match="rounds=0, sentences=1000: each at least 1"):
    bench_predict.run(quick=True, rounds=0)


def _refused(argv):
  """(exit status, the lines on stderr that are ours: TensorFlow's start-up lines left out)."""
  result = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  ours = [line for line in result.stderr.splitlines()
          if line and not line.startswith(("WARNING: All log messages", "I0000", "W0000"))]
  assert result.stdout == ""  # no page, no table printed as if measured
  return result.returncode, ours


@pytest.mark.parametrize("argv,line", [
    (["-m", "benchmarks.bench_predict", "--rounds=0"],
     "bench_predict.py: error: argument --rounds: '0': a whole number of at least 1"),
    (["-m", "benchmarks.bench_predict", "--sentences=-5"],
     "bench_predict.py: error: argument --sentences: '-5': a whole number of at least 1"),
    (["-m", "benchmarks.bench_predict", "--sides=ours,nosuch"],
     "bench_predict.py: error: --sides: unknown nosuch; choose from ours, ort, hf, "
     "ours_bf16, hf_bf16, ort_int8, litert_f32, litert_int8"),
    (["-m", "benchmarks.bench_predict", "--round=2"],
     "bench_predict.py: error: unrecognized arguments: --round=2"),
    (["-m", "benchmarks.run_all", "--only", "nosuch"],
     "run_all.py: error: argument --only: unknown nosuch; choose from "
     + ", ".join(run_all.BENCHMARKS)),
    (["tools/maintainers/gen_test_suites.py", "--by-test"],
     "gen_test_suites.py: error: unknown argument(s) --by-test; the one flag is --by_test"),
    (["tools/maintainers/gen_flag_docs.py", "--path-flags"],
     "gen_flag_docs.py: error: unknown argument(s) --path-flags; the one flag is "
     "--path_flags"),
])
def test_a_bad_value_or_a_misspelt_flag_is_one_line_and_exit_2(argv, line):
  assert _refused(argv) == (2, [line])
