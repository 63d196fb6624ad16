"""Conversion to LiteRT (TensorFlow Lite): the token-id SavedModel converts with built-in
ops only, and the interpreter gives the Keras model's probabilities, batched and one row
at a time; (slow) every export's LiteRT folder (bert/formats/litert_convert.py): both
models with built-in ops only and model.json, and the check every export runs before a
converted model lands.

The model is exported the way run_classifier.py exports it (serving.export_classifier;
without a tokenizer only the token-id model is written, at export_dir itself). The
exports of the slow tests are tiny models' runs (tests/support/litert_exports.py, the
`litert_runs` fixture), which the predictor's tests read too.
"""
import json
import os
import warnings

import numpy as np
import pytest
import tensorflow as tf

from bert.formats import litert_metadata
from bert.formats import serving
from bert import heads
import litert_data
from tiny import tiny_config

VOCAB = 97
LABELS = ["a", "b", "c"]


def _rows(batch=4, seq=13, seed=0):
  """Token ids, each row padded from its own length (one row unpadded), pairs' segments."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, VOCAB, (batch, seq)).astype("int32")
  mask = np.ones((batch, seq), "int32")
  segments = np.zeros((batch, seq), "int32")
  for row, length in enumerate([seq, 9, 4, 11][:batch]):
    mask[row, length:] = 0
    ids[row, length:] = 0
    segments[row, length // 2:length] = 1
  return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def _randomize(model, seed=1):
  # Weights far from the initializer's 0.02, so that the probabilities are far apart
  # and a wrong mask, position or segment shows.
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    variable.assign(rng.normal(0, 0.5, variable.shape).astype("float32"))


def _interpreter(flatbuffer):
  # tf.lite.Interpreter warns that LiteRT (the ai_edge_litert package) replaces it; it is
  # the interpreter TensorFlow 2.21 ships, and the same runtime.
  with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated.*")
    return tf.lite.Interpreter(model_content=flatbuffer)


@pytest.mark.parametrize("causal", [False, True])
def test_ids_saved_model_converts_with_builtin_ops_and_gives_our_numbers(tmp_path, causal):
  # One layer: each kind of op the converter meets is in one layer as in three, and
  # exporting and converting grow with the layers.
  model, _ = heads.build_classifier_model(tiny_config(VOCAB, num_hidden_layers=1),
                                          len(LABELS), causal=causal)
  _randomize(model)
  paths = serving.export_classifier(str(tmp_path / "export"), model, LABELS)
  assert paths["text"] is None

  converter = tf.lite.TFLiteConverter.from_saved_model(paths["ids"])
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  flatbuffer = converter.convert()  # raises ConverterError on any op outside the built-ins

  interpreter = _interpreter(flatbuffer)
  assert interpreter.get_signature_list() == {"serving_default": {
      "inputs": ["input_ids", "input_mask", "segment_ids"],
      "outputs": ["label_id", "probabilities"]}}
  runner = interpreter.get_signature_runner("serving_default")

  rows = _rows()
  expected = tf.nn.softmax(model(rows, training=False)["logits"], axis=-1).numpy()
  assert expected.shape == (4, 3) and expected.max() > 0.6

  batched = runner(**rows)
  np.testing.assert_allclose(batched["probabilities"], expected, rtol=0, atol=1e-6)
  np.testing.assert_array_equal(batched["label_id"], expected.argmax(-1))
  for row in range(len(expected)):  # one row at a time, cut to its own length
    length = int(rows["input_mask"][row].sum())
    single = runner(**{name: value[row:row + 1, :length] for name, value in rows.items()})
    np.testing.assert_allclose(single["probabilities"][0], expected[row], rtol=0, atol=1e-6)


@pytest.mark.slow  # every task's run: three models trained and exported
def test_every_export_writes_both_litert_models_with_builtin_ops_only(litert_runs):
  interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
  for task, (_, out, folder) in litert_runs.items():
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
              for task, (_, _, folder) in litert_runs.items()}
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


@pytest.mark.slow  # every task's run: three models trained and exported
def test_the_export_check_refuses_a_model_that_answers_otherwise(litert_runs):
  """The check every export runs before a LiteRT model lands, against a stand-in for the
  SavedModel's signature: the model's own answers pass; the same answers moved past the
  tolerance, a missing output or an integer output changed in float32 are refused."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  _, _, folder = litert_runs["mrpc"]
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
