"""Every served form of a tiny classifier and encoder fed inputs whose shapes disagree,
run as a script in a fresh process (TF_ENABLE_ONEDNN_OPTS is read once, when TensorFlow
starts): `python served_shapes.py WORKDIR` prints one JSON object {case: outcome}, where
an outcome is "answered" (no error: a silent answer) or the error's first line that
says what failed. tests/formats/test_served_shapes.py reads it with oneDNN on and off.

The forms are written once (`export(workdir)`: the exports hold no op the CPU or its
oneDNN setting chose, tests/formats/test_portable_exports.py) and fed in each setting:
`python served_shapes.py WORKDIR --wait` starts TensorFlow at once, then waits for
WORKDIR/EXPORTED (written by `export` in another process) and feeds what is there."""
import json
import os
import sys

import numpy as np

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat"]

# (case, input_mask shape, segment_ids shape) beside input_ids of [2, 16].
MISMATCHES = [("mask 8 wide", (2, 8), (2, 16)), ("mask 32 wide", (2, 32), (2, 16)),
              ("mask of batch 1", (1, 16), (2, 16)), ("segments 8 wide", (2, 16), (2, 8))]


def _feed(mask_shape, segment_shape, names=("input_ids", "input_mask", "segment_ids")):
  ids = np.full((2, 16), 5, np.int32)
  ids[:, 0] = 2
  return {names[0]: ids, names[1]: np.ones(mask_shape, np.int32),
          names[2]: np.zeros(segment_shape, np.int32)}


def _outcome(call):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    call()
  except (tf.errors.InvalidArgumentError, ValueError, RuntimeError) as exc:
    text = getattr(exc, "message", None) or str(exc)
    lines = [line for line in text.splitlines()
             if "assertion failed" in line or "failed to prepare" in line
             or "must have the same" in line]
    return (lines or text.splitlines() or [type(exc).__name__])[0].strip()
  return "answered"


EXPORTED = "EXPORTED"  # the last file export() writes


def _config():
  import tiny  # pylint: disable=g-import-not-at-top
  # One layer: the shape checks stand before the layers, and exporting and converting
  # (most of the time here) grows with them.
  return tiny.tiny_config(len(VOCAB), num_hidden_layers=1)


def export(workdir):
  """Writes every served form under workdir (and the classifier's weights, for the
  in-process forms), WORKDIR/EXPORTED last."""
  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  from bert.formats import tfhub_modules  # pylint: disable=g-import-not-at-top

  vocab = os.path.join(workdir, "vocab.txt")
  with open(vocab, "w", encoding="utf-8") as handle:
    handle.write("\n".join(VOCAB) + "\n")
  config = _config()
  model, _ = heads.build_classifier_model(config, 2)
  tokenizer = fast_tokenization.FastTokenizer(vocab, True)
  paths = serving.export_classifier(
      os.path.join(workdir, "export"), model, ["0", "1"], tokenizer=tokenizer,
      max_seq_length=16, cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, num_texts=2)
  model.save_weights(os.path.join(workdir, "classifier.weights.h5"))
  encoder = modeling.BertModel(config)  # the whole encoder (the classifier's pools only)
  hub_root, hub_signatures = tfhub_modules.build_encoder_module(encoder)
  tfhub_modules.save_module(hub_root, os.path.join(workdir, "hub_encoder"), hub_signatures)
  with open(os.path.join(workdir, "model_float32.tflite"), "wb") as handle:
    handle.write(litert_convert.convert(paths["ids"], "float32"))
  with open(os.path.join(workdir, "paths.json"), "w", encoding="utf-8") as handle:
    json.dump(paths, handle)
  with open(os.path.join(workdir, EXPORTED), "w", encoding="utf-8") as handle:
    handle.write("done\n")


def outcomes(workdir, exported=True):
  """{case: outcome} of the forms under workdir, fed in this process (export() them first
  unless `exported`)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  from bert.formats import tfhub_modules  # pylint: disable=g-import-not-at-top

  if not exported:
    export(workdir)
  vocab = os.path.join(workdir, "vocab.txt")
  with open(os.path.join(workdir, "paths.json"), encoding="utf-8") as handle:
    paths = json.load(handle)
  model, _ = heads.build_classifier_model(_config(), 2)
  model.load_weights(os.path.join(workdir, "classifier.weights.h5"))
  ids_model = tf.saved_model.load(paths["ids"]).signatures["serving_default"]
  text_model = tf.saved_model.load(paths["text"]).signatures["serve_text"]
  hub = tf.saved_model.load(os.path.join(workdir, "hub_encoder")).signatures[
      "serving_default"]
  specs = {name: tf.TensorSpec([None, None], tf.int32) for name in serving.TOKEN_ID_NAMES}
  traced = tf.function(lambda inputs: model(inputs, training=False)["logits"])
  traced = traced.get_concrete_function(specs)
  with open(os.path.join(workdir, "model_float32.tflite"), "rb") as handle:
    interpreter, _ = litert_convert.interpreter(model_content=handle.read())
  litert = interpreter.get_signature_runner("serving_default")
  preprocessor, _ = tfhub_modules.build_preprocessor_module(vocab, True, seq_length=16)

  results = {}
  for case, mask, segments in MISMATCHES:
    feed = _feed(mask, segments)
    tensors = {name: tf.constant(value) for name, value in feed.items()}
    results[f"ids SavedModel, {case}"] = _outcome(lambda: ids_model(**tensors))
    results[f"in-process traced, {case}"] = _outcome(lambda: traced(tensors))
    results[f"in-process eager, {case}"] = _outcome(lambda: model(feed, training=False))
    hub_feed = {name: tf.constant(value) for name, value in _feed(
        mask, segments, tfhub_modules.ENCODER_INPUT_NAMES).items()}
    results[f"TF-Hub encoder, {case}"] = _outcome(lambda: hub(**hub_feed))
    results[f"LiteRT, {case}"] = _outcome(lambda: litert(**feed))
  pair = (tf.constant(["the cat", "sat on"]), tf.constant(["the mat"]))
  results["text SavedModel, pair of batches 2 and 1"] = _outcome(
      lambda: text_model(text_a=pair[0], text_b=pair[1]))
  results["TF-Hub preprocessor, pair of batches 2 and 1"] = _outcome(
      lambda: preprocessor.bert_pack_inputs(
          [preprocessor.tokenize(pair[0]), preprocessor.tokenize(pair[1])]))
  # The right shapes still answer, every form.
  good = _feed((2, 16), (2, 16))
  good_tensors = {name: tf.constant(value) for name, value in good.items()}
  answers = {
      "ids": ids_model(**good_tensors)["probabilities"].numpy(),
      "traced": tf.nn.softmax(traced(good_tensors)).numpy(),
      "litert": litert(**good)["probabilities"],
  }
  results["good inputs"] = {
      name: bool(np.allclose(value, answers["ids"], atol=1e-5))
      for name, value in answers.items()}
  return results


if __name__ == "__main__":
  if sys.argv[2:] == ["--wait"]:  # another process writes the forms
    import time  # pylint: disable=g-import-not-at-top
    import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    from bert import heads  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    deadline = time.time() + 600
    while not os.path.exists(os.path.join(sys.argv[1], EXPORTED)):
      if time.time() > deadline:
        raise SystemExit(f"no {EXPORTED} in {sys.argv[1]} after 600 s")
      time.sleep(0.05)
    print("RESULTS " + json.dumps(outcomes(sys.argv[1])))
  else:
    print("RESULTS " + json.dumps(outcomes(sys.argv[1], exported=False)))
