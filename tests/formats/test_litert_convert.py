"""The token-id SavedModel converts to TensorFlow Lite with built-in ops only, and the
TFLite interpreter gives the Keras model's probabilities, batched and one row at a time.

The model is exported the way run_classifier.py exports it (serving.export_classifier;
without a tokenizer only the token-id model is written, at export_dir itself).
"""
import warnings

import numpy as np
import pytest
import tensorflow as tf

from bert.formats import serving
from bert import heads
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
  model, _ = heads.build_classifier_model(tiny_config(VOCAB), len(LABELS), causal=causal)
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
