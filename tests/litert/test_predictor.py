"""predict_litert.py, the LiteRT predictor without TensorFlow, on the LiteRT models of
tiny models' exports.

The runs (tests/support/litert_exports.py: MRPC's by default, `litert_mrpc_run`; every
task's with the slow tests, `litert_runs`) export random-weight models whose outputs
differ from row to row. The tests hold the predictor's output to --do_predict's (float32
to 1e-5, int8 within litert_convert.INT8_TOLERANCE), TensorFlow absent from its process,
the serving install running it, and its one-line refusals. What the converter writes is
tests/formats/test_litert_convert.py's.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
import litert_data
from litert_exports import ENV, TASKS
import serving_install
from bert.formats import litert_metadata

LOGS = ("I", "W", "E")  # absl's log line prefixes (I1127 ...)

# The predictor's flags for each task's files (the column flags as at training).
PREDICT_FLAGS = {"mrpc": ["--task_name=mrpc"],
                 "regression": ["--task_name=csv", "--has_header", "--text_a_column=s1",
                                "--text_b_column=s2", "--label_column=score"],
                 "multilabel": ["--task_name=multilabel"]}


# The tests that use every task's run (`litert_runs`: three models trained and exported,
# minutes) run with make test-slow; by default MRPC's run answers the predictor's own
# tests, and tests/commands/test_url_paths.py, tests/project/test_package.py and
# tests/reliability/test_litert_folders_and_flag_pairs.py run the rest of the LiteRT path.
_EVERY_TASK = pytest.mark.slow


def _predict(model, data_dir, output_dir, *flags, expect=0, python=sys.executable):
  proc = subprocess.run([python, os.path.join(ROOT, "predict_litert.py"),
                         f"--model={model}", f"--data_dir={data_dir}",
                         f"--output_dir={output_dir}", *flags],
                        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300)
  assert proc.returncode == expect, proc.stderr[-3000:]
  return proc


def _numbers(path):
  """The numbers of a results file (a multi-label file: without its header and labels)."""
  with open(path, encoding="utf-8") as handle:
    lines = [line.rstrip("\n").split("\t") for line in handle]
  if lines[0][0] == "labels":
    return np.array([[float(v) for v in row[1:]] for row in lines[1:]])
  return np.array([[float(v) for v in row] for row in lines])


@pytest.mark.parametrize("precision", litert_metadata.PRECISIONS)
@pytest.mark.parametrize("task", ["mrpc", pytest.param("multilabel", marks=_EVERY_TASK),
                                  pytest.param("regression", marks=_EVERY_TASK)])
def test_predictor_writes_what_do_predict_writes(request, tmp_path, task, precision):
  pytest.importorskip("ai_edge_litert")
  data_dir, out, folder = request.getfixturevalue("litert_mrpc_run" if task == "mrpc" else "litert_runs")[task]
  predicted = tmp_path / "predicted"
  proc = _predict(folder / f"model_{precision}.tflite", data_dir, predicted,
                  *PREDICT_FLAGS[task], "--num_threads=1", "--predict_batch_size=4")
  assert "Traceback" not in proc.stderr
  assert sorted(os.listdir(predicted)) == sorted(TASKS[task]["results"])
  expected, got = _numbers(out / "test_results.tsv"), _numbers(predicted / "test_results.tsv")
  assert got.shape == expected.shape and len(got) >= 10
  assert np.ptp(expected, axis=0).max() > 0.1  # outputs that differ from row to row
  difference = np.abs(got - expected)
  if precision == "float32":
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
  else:
    from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top  (TensorFlow)
    scale = max(1.0, float(np.abs(expected).max()))
    assert difference.mean() <= litert_convert.INT8_TOLERANCE * scale, difference.mean()
  if task == "mrpc":  # the GLUE submission file: the same labels, in the same layout
    submitted = (predicted / "MRPC.tsv").read_text().splitlines()
    reference = (out / "MRPC.tsv").read_text().splitlines()
    assert submitted[0] == "index\tprediction" and len(submitted) == len(reference)
    margin = np.abs(expected[:, 0] - expected[:, 1])
    for row, (mine, theirs) in enumerate(zip(submitted[1:], reference[1:])):
      if precision == "float32" or margin[row] > 2 * difference[row].max():
        assert mine == theirs, row
  if task == "multilabel":  # the header and each line's labels, at the threshold
    lines = (predicted / "test_results.tsv").read_text().splitlines()
    assert lines[0] == "\t".join(["labels"] + litert_data.ML_LABELS)
    assert [l.split("\t")[0] for l in lines[1:]] == [
        ",".join(n for n, p in zip(litert_data.ML_LABELS, row) if p >= 0.5) for row in got]
    if precision == "float32":  # (the probabilities are written to 6 decimals)
      reference = (out / "test_results.tsv").read_text().splitlines()
      assert [l.split("\t")[0] for l in lines] == [l.split("\t")[0] for l in reference]


def test_no_tensorflow_in_the_predictors_process(litert_mrpc_run, tmp_path):
  """The whole command, run as `python predict_litert.py` runs it, then sys.modules."""
  pytest.importorskip("ai_edge_litert")
  data_dir, _, folder = litert_mrpc_run["mrpc"]
  argv = ["predict_litert.py", f"--model={folder / 'model_int8.tflite'}",
          f"--data_dir={data_dir}", f"--output_dir={tmp_path / 'p'}", "--task_name=mrpc"]
  code = (
      "import json, runpy, sys\n"
      f"sys.argv = {argv!r}\n"
      "try:\n"
      f"  runpy.run_path({os.path.join(ROOT, 'predict_litert.py')!r}, run_name='__main__')\n"
      "except SystemExit as exit:\n"
      "  assert not exit.code, exit.code\n"
      "heavy = sorted(m for m in sys.modules if m.split('.')[0] in\n"
      "               ('tensorflow', 'tensorflow_text', 'keras', 'tf_keras', 'jax', 'torch'))\n"
      "print(json.dumps(heavy))\n")
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=ENV, cwd=ROOT, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
  assert (tmp_path / "p" / "test_results.tsv").exists()


@pytest.fixture(scope="module")
def serving_python(tmp_path_factory):
  """The python of the serving install (`pip install bert-tensorflow2`: no TensorFlow) of a
  wheel of this tree, in a new environment (tests/support/serving_install.py)."""
  work = tmp_path_factory.mktemp("serving")
  python, _ = serving_install.make_serving_env(work, serving_install.build_wheel(work))
  return python


@_EVERY_TASK
def test_the_serving_install_runs_the_predictor(litert_runs, serving_python, tmp_path):
  """bert-predict-litert of the serving install, outside the clone, writes the files
  the clone's predict_litert.py writes, byte for byte."""
  pytest.importorskip("ai_edge_litert")
  data_dir, _, folder = litert_runs["mrpc"]
  model = folder / "model_int8.tflite"
  outside = tmp_path / "elsewhere"
  outside.mkdir()
  command = os.path.join(os.path.dirname(serving_python), "bert-predict-litert")
  proc = subprocess.run([command, f"--model={model}", f"--data_dir={data_dir}",
                         f"--output_dir={tmp_path / 'serving'}", "--task_name=mrpc"],
                        capture_output=True, text=True, cwd=outside, timeout=300,
                        env=dict(ENV, PYTHONPATH=""))
  assert proc.returncode == 0, proc.stderr[-3000:]
  _predict(model, data_dir, tmp_path / "clone", "--task_name=mrpc")
  for name in TASKS["mrpc"]["results"]:
    assert (tmp_path / "serving" / name).read_bytes() == (tmp_path / "clone" / name).read_bytes()


def _one_line_error(proc):
  lines = [l for l in proc.stderr.splitlines() if l.strip()]
  error_lines = [l for l in lines if l.startswith("predict_litert.py: error: ")]
  assert len(error_lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
  assert all(l in error_lines or l[:1] in LOGS for l in lines), lines
  return error_lines[0][len("predict_litert.py: error: "):]


@_EVERY_TASK
def test_bad_inputs_are_one_line_and_exit_2(litert_runs, tmp_path):
  mrpc_data, _, mrpc = litert_runs["mrpc"]
  ml_data, _, ml = litert_runs["multilabel"]
  out = tmp_path / "out"
  missing = tmp_path / "nowhere" / "model_int8.tflite"
  assert _one_line_error(_predict(missing, mrpc_data, out, expect=2)) == (
      f"--model={missing}: no such file")
  # A model of another task: refused before any file is read.
  error = _one_line_error(_predict(mrpc / "model_int8.tflite", mrpc_data, out,
                                   "--task_name=sst2", expect=2))
  assert error == (f"--model={mrpc / 'model_int8.tflite'} is Mrpc's classifier (labels 0, "
                   "1), not --task_name=sst2's Sst2 (labels 0, 1); use that task's model")
  error = _one_line_error(_predict(ml / "model_float32.tflite", ml_data, out,
                                   "--task_name=mrpc", expect=2))
  assert error.startswith(f"--model={ml / 'model_float32.tflite'} is multi_label's "
                          "multi-label classifier (labels POS, NEG, MUSIC), not a model of "
                          "--task_name=mrpc")
  error = _one_line_error(_predict(mrpc / "model_int8.tflite", mrpc_data, out,
                                   "--task_name=multilabel", expect=2))
  assert error.startswith(f"--model={mrpc / 'model_int8.tflite'} is Mrpc's classifier")
  # A file in the wrong format: the multi-label folder's test.tsv read as MRPC's.
  error = _one_line_error(_predict(mrpc / "model_int8.tflite", ml_data, out,
                                   "--task_name=mrpc", expect=2))
  assert error.startswith(f"{ml_data / 'test.tsv'}:2: too few columns"), error
  # MRPC lines read as multi-label lines: five tab-separated fields.
  error = _one_line_error(_predict(ml / "model_int8.tflite", mrpc_data, out, expect=2))
  assert error.startswith(f"{mrpc_data / 'test.tsv'}:1: 5 tab-separated fields"), error
  # A .tflite that is not one, beside a good model.json.
  broken = tmp_path / "broken"
  shutil.copytree(mrpc, broken)
  (broken / "model_int8.tflite").write_bytes(b"not a flatbuffer" * 8)
  error = _one_line_error(_predict(broken / "model_int8.tflite", mrpc_data, out, expect=2))
  assert error.startswith(f"--model={broken / 'model_int8.tflite'}: not a LiteRT model "
                          "this runtime loads ("), error
  # A .tflite without its model.json.
  (broken / "model.json").unlink()
  error = _one_line_error(_predict(broken / "model_float32.tflite", mrpc_data, out,
                                   expect=2))
  assert error.startswith(f"{broken / 'model_float32.tflite'}: no model.json beside it")
  assert not out.exists()  # every refusal came before anything was written
