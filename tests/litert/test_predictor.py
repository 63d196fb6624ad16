"""LiteRT models of every export and predict_litert.py, the predictor without TensorFlow.

Tiny models' checkpoints (random weights, so that their outputs differ from row to row)
run each one's --do_predict and --export_dir (LiteRT models on by default) on synthetic
task folders (tests/support/litert_data.py): MRPC pairs (classification, GLUE submission file;
the `mrpc_run` fixture, by default), a csv regression task read through the column flags
(exported as version 3) and multi-label lines (`runs`, every task, with the slow tests).
The tests read those: the exported files, the predictor's output against --do_predict's
(float32 to 1e-5, int8 within litert_convert.INT8_TOLERANCE), TensorFlow absent from the
predictor's process, and the predictor's one-line refusals.
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
import serving_install
import tiny
from bert.formats import litert_metadata

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
LOGS = ("I", "W", "E")  # absl's log line prefixes (I1127 ...)

TASKS = {
    "mrpc": dict(script="run_classifier.py", folder="mrpc", export="litert",
                 flags=["--task_name=mrpc"], results=["test_results.tsv", "MRPC.tsv"]),
    "regression": dict(script="run_classifier.py", folder="reg", export="litert/3",
                       flags=["--task_name=csv", "--regression", "--has_header",
                              "--text_a_column=s1", "--text_b_column=s2",
                              "--label_column=score", "--export_version=3"],
                       results=["test_results.tsv"]),
    "multilabel": dict(script="run_multilabel.py", folder="ml", export="litert",
                       flags=[], results=["test_results.tsv"]),
}
# The predictor's flags for each task's files (the column flags as at training).
PREDICT_FLAGS = {"mrpc": ["--task_name=mrpc"],
                 "regression": ["--task_name=csv", "--has_header", "--text_a_column=s1",
                                "--text_b_column=s2", "--label_column=score"],
                 "multilabel": ["--task_name=multilabel"]}


# What each task's checkpoint records (finetune.Task.head_info), and its outputs.
HEADS = {"mrpc": ({"task": "Mrpc", "head": "classifier", "labels": ["0", "1"]}, 2),
         "regression": ({"task": "DelimitedFile", "head": "regression"}, 1),
         "multilabel": ({"task": "multi_label", "head": "multi_label",
                         "labels": litert_data.ML_LABELS, "threshold": 0.5}, 3)}


def _checkpoint(output_dir, task, seed):
  """output_dir holding a classifier checkpoint as a training run leaves it, with weights
  drawn from N(0, 0.25): a tiny model trained from scratch for seconds predicts the same
  probabilities for every row, these differ from row to row (and by class)."""
  from bert import heads  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  head_info, outputs = HEADS[task]
  model, _ = heads.build_classifier_model(tiny.tiny_config(len(litert_data.VOCAB)),
                                             outputs)
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    if len(variable.shape) >= 2:
      variable.assign(rng.normal(0, 0.25, variable.shape).astype("float32"))
  checkpoints.RunCheckpoint(str(output_dir), model, head_info=head_info).save()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  """The tasks' folders, vocabulary and tiny config."""
  root = tmp_path_factory.mktemp("litert")
  litert_data.write_vocab(root / "vocab.txt")
  tiny.write_tiny_config(root / "bert_config.json", len(litert_data.VOCAB))
  litert_data.mrpc_folder(root / "mrpc")
  litert_data.regression_folder(root / "reg")
  litert_data.multilabel_folder(root / "ml")
  return root


def _predict_and_export(root, tasks):
  """{task: (data folder, output_dir, litert folder)}: each task's --do_predict and
  --export_dir (LiteRT models by default) in one process, the tasks at once."""
  processes = {}
  for task in tasks:
    spec, out = TASKS[task], root / f"out-{task}"
    _checkpoint(out, task, list(TASKS).index(task))
    command = [sys.executable, os.path.join(ROOT, spec["script"]), *spec["flags"],
               f"--data_dir={root / spec['folder']}", f"--vocab_file={root / 'vocab.txt'}",
               f"--bert_config_file={root / 'bert_config.json'}", "--do_predict",
               "--max_seq_length=32", "--predict_batch_size=5", f"--output_dir={out}",
               f"--export_dir={out}/export"]
    processes[task] = (subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, env=ENV,
                                        cwd=ROOT), out)
  found = {}
  for task, (process, out) in processes.items():
    _, stderr = process.communicate(timeout=900)
    assert process.returncode == 0, stderr[-3000:]
    found[task] = (root / TASKS[task]["folder"], out,
                   out / "export" / TASKS[task]["export"])
  return found


@pytest.fixture(scope="module")
def mrpc_run(root):
  """MRPC's run alone: what the default tests use."""
  return _predict_and_export(root, ["mrpc"])


@pytest.fixture(scope="module")
def runs(root, mrpc_run):
  """Every task's run (the slow tests): MRPC's, and the other two at once."""
  return {**mrpc_run, **_predict_and_export(root, [t for t in TASKS if t != "mrpc"])}


# The tests that use every task's run (`runs`: three models trained and exported, minutes)
# run with make test-slow; by default MRPC's run answers the predictor's own tests, and
# tests/commands/test_url_paths.py, tests/project/test_package.py and tests/reliability/test_catalogue_exports_and_tools.py run the rest of
# the LiteRT path.
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


@_EVERY_TASK
def test_every_export_writes_both_litert_models_with_builtin_ops_only(runs):
  interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
  for task, (_, out, folder) in runs.items():
    assert sorted(os.listdir(folder)) == ["model.json", "model_float32.tflite",
                                          "model_int8.tflite", "vocab.txt"], task
    assert [n for n in os.listdir(folder.parent) if n.startswith(".")] == []
    with open(folder / "model.json", encoding="utf-8") as handle:
      metadata = json.load(handle)
    assert metadata["format"] == "bert-litert" and metadata["max_seq_length"] == 32
    assert metadata["inputs"] == ["input_ids", "input_mask", "segment_ids"]
    assert (folder / "vocab.txt").read_text() == "".join(t + "\n" for t in litert_data.VOCAB)
    for precision in litert_metadata.PRECISIONS:
      entry = metadata["models"][precision]
      assert entry["file"] == f"model_{precision}.tflite"
      assert entry["bytes"] == os.path.getsize(folder / entry["file"])
      interpreter = interpreter_module.Interpreter(model_path=str(folder / entry["file"]))
      ops = {op["op_name"] for op in interpreter._get_ops_details()}  # pylint: disable=protected-access
      # Built-in ops only: no TF Select (Flex...) ops, no custom op.
      assert ops and not [op for op in ops if op.startswith("Flex") or op == "CUSTOM"], ops
      assert "FULLY_CONNECTED" in ops and "BATCH_MATMUL" in ops
      int8_tensors = [t for t in interpreter.get_tensor_details()
                      if t["dtype"] == np.int8]
      # Dynamic-range int8: the dense layers' weights are int8; float32 has none.
      assert bool(int8_tensors) == (precision == "int8"), (task, precision)
      assert interpreter.get_signature_list()["serving_default"]["inputs"] == [
          "input_ids", "input_mask", "segment_ids"]
  metadata = {task: json.loads((folder / "model.json").read_text())
              for task, (_, _, folder) in runs.items()}
  assert {k: metadata["mrpc"][k] for k in ("task", "task_name", "head", "labels",
                                           "num_texts")} == {
      "task": "Mrpc", "task_name": "mrpc", "head": "classifier", "labels": ["0", "1"],
      "num_texts": 2}
  assert metadata["mrpc"]["outputs"] == ["label_id", "probabilities"]
  assert {k: metadata["regression"][k] for k in ("task", "task_name", "head")} == {
      "task": "DelimitedFile", "task_name": "csv", "head": "regression"}
  assert metadata["regression"]["outputs"] == ["score"]
  assert {k: metadata["multilabel"][k] for k in ("task", "head", "labels", "threshold",
                                                 "num_texts")} == {
      "task": "multi_label", "head": "multi_label", "labels": litert_data.ML_LABELS,
      "threshold": 0.5, "num_texts": 1}


@pytest.mark.parametrize("precision", litert_metadata.PRECISIONS)
@pytest.mark.parametrize("task", ["mrpc", pytest.param("multilabel", marks=_EVERY_TASK),
                                  pytest.param("regression", marks=_EVERY_TASK)])
def test_predictor_writes_what_do_predict_writes(request, tmp_path, task, precision):
  pytest.importorskip("ai_edge_litert")
  data_dir, out, folder = request.getfixturevalue("mrpc_run" if task == "mrpc" else "runs")[task]
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


def test_no_tensorflow_in_the_predictors_process(mrpc_run, tmp_path):
  """The whole command, run as `python predict_litert.py` runs it, then sys.modules."""
  pytest.importorskip("ai_edge_litert")
  data_dir, _, folder = mrpc_run["mrpc"]
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
def test_the_serving_install_runs_the_predictor(runs, serving_python, tmp_path):
  """bert-predict-litert of the serving install, outside the clone, writes the files
  the clone's predict_litert.py writes, byte for byte."""
  pytest.importorskip("ai_edge_litert")
  data_dir, _, folder = runs["mrpc"]
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
def test_bad_inputs_are_one_line_and_exit_2(runs, tmp_path):
  mrpc_data, _, mrpc = runs["mrpc"]
  ml_data, _, ml = runs["multilabel"]
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


@_EVERY_TASK
def test_the_export_check_refuses_a_model_that_answers_otherwise(runs):
  """The check every export runs before a LiteRT model lands, against a stand-in for the
  SavedModel's signature: the model's own answers pass; the same answers moved past the
  tolerance, a missing output or an integer output changed in float32 are refused."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  _, _, folder = runs["mrpc"]
  with open(folder / "model.json", encoding="utf-8") as handle:
    metadata = json.load(handle)
  flatbuffer = (folder / "model_float32.tflite").read_bytes()
  feeds = litert_convert.check_rows(metadata["inputs"], len(litert_data.VOCAB), 32)
  runner = litert_convert.interpreter(model_content=flatbuffer)[0].get_signature_runner(
      litert_metadata.SIGNATURE)

  def signature(shift=0.0, drop=None):
    def answer(**feed):
      outputs = runner(**{name: value.numpy() for name, value in feed.items()})
      return {name: tf.constant(value + (shift if value.dtype.kind == "f" else 0))
              for name, value in outputs.items() if name != drop}
    return answer

  worst, allowed, _ = litert_convert.check(signature(), flatbuffer, "float32", feeds, "here")
  assert allowed == litert_convert.TOLERANCES["float32"]
  assert worst == {"probabilities": (0.0, 0.0)}  # label_id: integers, equal or refused
  # Probabilities are at most 1: a shift of 2e-5 is past float32's 1e-5 on every value.
  with pytest.raises(errors.UserError, match=r"^here: the converted float32 model's "
                     r"\w+ differs from the SavedModel's by 2e-05 \(max"):
    litert_convert.check(signature(shift=-2e-5), flatbuffer, "float32", feeds, "here")
  with pytest.raises(errors.UserError, match="does not answer as the SavedModel does"):
    litert_convert.check(signature(drop=metadata["outputs"][0]), flatbuffer, "float32", feeds, "x")
  reference = {"label": np.array([1, 0]), "p": np.array([0.5, 0.25])}
  with pytest.raises(ValueError, match="output label differs .* on 1 of 2 values"):
    litert_convert.differences(reference, {"label": np.array([1, 1]), "p": reference["p"]}, "float32")
  assert litert_convert.differences(reference, {"label": np.array([1, 1]),
                                        "p": np.array([0.5, 0.5])}, "int8") == {
      "p": (0.25, 0.125, litert_convert.TOLERANCES["int8"])}
