"""TensorFlow Lite (LiteRT) models converted from an export's token-id SavedModel, and
checked against it before they land; litert_metadata.py names the folder and describes
the model.json written beside them.

Built-in ops only (no TF Select ops, so the plain runtime runs them); int8 is
dynamic-range quantization. Each converted model and the SavedModel run the same
CHECK_ROWS rows and must agree within TOLERANCES; a model outside them, or a conversion
that fails, stops the export in one line, and nothing of it lands (serving.py).
docs/serving.md says what int8 quantizes and the differences measured."""

import hashlib
import importlib.metadata
import json
import warnings

import numpy as np
import tensorflow as tf

from bert import tokenization
from bert.formats import litert_metadata
from bert.utils import file_io
from bert.utils import errors
from bert.utils import runtime_log

# Each model is checked on every float output against the SavedModel's:
#   float32   max |difference|   <= FLOAT32_TOLERANCE * scale   (rounding)
#   int8      mean |difference|  <= INT8_TOLERANCE * scale      (quantization)
#   where scale = max(1, max |SavedModel output|)
# Relative above 1, because a regression score, SQuAD's logits and an encoder's hidden
# states are not bounded by 1, and int8's error grows with the values it quantizes.
# Integer outputs (label_id, predictions) must be equal in float32; in int8 they follow
# the quantized probabilities and are not compared.
FLOAT32_TOLERANCE = 1e-5
INT8_TOLERANCE = 0.1
TOLERANCES = {"float32": FLOAT32_TOLERANCE, "int8": INT8_TOLERANCE}
# Which statistic of |LiteRT - SavedModel| each precision's tolerance bounds.
STATISTICS = {"float32": "max", "int8": "mean"}
CHECK_ROWS = 8
CHECK_SEQ_LENGTH = 48  # the check's longest row (or max_seq_length when shorter)

# The token-id inputs by role, under this project's names and TF Hub's (the encoder).
_ROLES = {"input_ids": "ids", "input_mask": "mask", "segment_ids": "segments",
          "input_word_ids": "ids", "input_type_ids": "segments"}


def convert(saved_model_dir, precision):
  """The .tflite flatbuffer (bytes) of the SavedModel's serving_default signature, built-in
  ops only; int8: dynamic-range quantization."""
  converter = tf.lite.TFLiteConverter.from_saved_model(
      saved_model_dir, signature_keys=[litert_metadata.SIGNATURE])
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if precision == "int8":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  elif precision != "float32":
    raise ValueError(f"precision {precision!r}: one of {litert_metadata.PRECISIONS}")
  with runtime_log.stderr_to_file():  # its diagnostics, written holding Python's lock
    return converter.convert()


def interpreter(model_content=None, model_path=None, num_threads=1):
  """(LiteRT interpreter, runtime name): ai-edge-litert's when installed (the runtime a
  predictor uses), else the one TensorFlow ships (tf.lite.Interpreter, the same kernels)."""
  try:
    # Imported here: the runtime is optional where TensorFlow is (its own interpreter
    # stands in for it).
    import ai_edge_litert.interpreter  # pylint: disable=g-import-not-at-top
    runtime = f"ai-edge-litert {importlib.metadata.version('ai-edge-litert')}"
    make = ai_edge_litert.interpreter.Interpreter
  except ImportError:
    runtime = f"tf.lite.Interpreter (tensorflow {tf.__version__})"
    make = tf.lite.Interpreter
  with warnings.catch_warnings():
    # tf.lite.Interpreter warns that it is deprecated in favour of ai-edge-litert.
    warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated.*")
    return make(model_content=model_content, model_path=model_path,
                num_threads=num_threads), runtime


def check_rows(input_names, vocab_size, seq_length, num_segments=2, seed=0):
  """Two feeds {input name: int32 array} for the check: CHECK_ROWS rows padded from
  lengths spread between 3 and seq_length (the first unpadded), and that first row alone.
  Ids are random ids of the vocabulary; a pair's second half has segment 1."""
  rng = np.random.default_rng(seed)
  seq_length = int(max(3, min(seq_length, CHECK_SEQ_LENGTH)))
  lengths = np.linspace(seq_length, 3, CHECK_ROWS).round().astype(int)
  ids = rng.integers(0, vocab_size, (CHECK_ROWS, seq_length)).astype(np.int32)
  mask = (np.arange(seq_length)[None, :] < lengths[:, None]).astype(np.int32)
  segments = np.zeros_like(ids)
  if num_segments > 1:
    segments = ((np.arange(seq_length)[None, :] >= (lengths // 2)[:, None]) & (mask > 0))
    segments = segments.astype(np.int32)
  by_role = {"ids": ids * mask, "mask": mask, "segments": segments}
  batch = {name: by_role[_ROLES[name]] for name in input_names}
  single = {name: value[:1] for name, value in batch.items()}
  return [batch, single]


def differences(reference, lite, precision):
  """{output: (max |difference|, mean |difference|, allowed)} of one feed's float
  outputs (allowed bounds STATISTICS[precision]); raises ValueError (the reason) when an
  output is missing, has another shape, or an integer output differs in float32."""
  if set(reference) != set(lite):
    raise ValueError(f"outputs {sorted(lite)}, the SavedModel's are {sorted(reference)}")
  result = {}
  for name, expected in reference.items():
    expected, got = np.asarray(expected), np.asarray(lite[name])
    if expected.shape != got.shape:
      raise ValueError(f"output {name} has shape {got.shape}, the SavedModel's "
                       f"{expected.shape}")
    if not np.issubdtype(expected.dtype, np.floating):
      if precision == "float32" and not np.array_equal(expected, got):
        raise ValueError(f"output {name} differs from the SavedModel's on "
                         f"{int(np.sum(expected != got))} of {expected.size} values")
      continue
    if not np.all(np.isfinite(got)):
      raise ValueError(f"output {name} is not finite")
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    diff = np.abs(expected.astype(np.float64) - got) if expected.size else np.zeros(1)
    result[name] = (float(diff.max()), float(diff.mean()), TOLERANCES[precision] * scale)
  return result


def _saved_model_outputs(signature, feed):
  outputs = signature(**{name: tf.constant(value) for name, value in feed.items()})
  return {name: value.numpy() for name, value in outputs.items()}


def check(signature, flatbuffer, precision, feeds, where):
  """Runs every feed through the SavedModel's signature and the LiteRT model; returns
  ({output: (max, mean |difference|)} over all feeds, tolerance, runtime name); a
  statistic beyond its tolerance is a UserError naming `where` (the model's final path)."""
  model, runtime = interpreter(model_content=flatbuffer)
  runner = model.get_signature_runner(litert_metadata.SIGNATURE)
  statistic = STATISTICS[precision]
  worst = {}
  for feed in feeds:
    try:
      found = differences(_saved_model_outputs(signature, feed), runner(**feed), precision)
    except ValueError as exc:
      raise errors.UserError(
          f"{where}: the converted {precision} model does not answer as the SavedModel "
          f"does ({exc}); nothing was exported; pass --litert=none to export the "
          "SavedModels alone") from None
    for name, (largest, mean, allowed) in found.items():
      diff = largest if statistic == "max" else mean
      if not diff <= allowed:
        raise errors.UserError(
            f"{where}: the converted {precision} model's {name} differs from the "
            f"SavedModel's by {diff:.3g} ({statistic} over the check rows; allowed "
            f"{allowed:.3g}); nothing was exported; pass --litert="
            + ("float32" if precision == "int8" else "none")
            + " to export without it")
      before = worst.get(name, (0.0, 0.0))
      worst[name] = (max(before[0], largest), max(before[1], mean))
  return worst, TOLERANCES[precision], runtime


def write(saved_model_dir, out_dir, spec, final_dir=None, log=None):
  """Writes spec's models, model.json and vocab.txt into out_dir (created; normally a
  temporary folder of the export that is renamed into place when the export is whole),
  converting and checking each model against the SavedModel at saved_model_dir.
  final_dir: the path users will see (named in errors). Returns model.json's dict."""
  final_dir = final_dir or out_dir
  log = log or (lambda *args: None)
  file_io.makedirs(out_dir)
  loaded = tf.saved_model.load(saved_model_dir)
  signature = loaded.signatures[litert_metadata.SIGNATURE]
  input_names = sorted(signature.structured_input_signature[1])
  unknown = [name for name in input_names if name not in _ROLES]
  if unknown:
    raise ValueError(f"{saved_model_dir}: inputs {unknown} are not token-id inputs")
  vocab = tokenization.load_vocab(spec.vocab_file)
  vocab_size = len(vocab)
  seq_length = int(spec.metadata.get("max_seq_length") or CHECK_SEQ_LENGTH)
  feeds = check_rows(input_names, vocab_size, seq_length, spec.num_segments)
  models, runtime = {}, None
  for precision in spec.precisions:
    where = f"{final_dir.rstrip('/')}/{litert_metadata.MODEL_FILES[precision]}"
    log("Converting %s to LiteRT (%s)", saved_model_dir, precision)
    try:
      flatbuffer = convert(saved_model_dir, precision)
    except Exception as exc:  # the converter's errors are many kinds, all of one meaning
      first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
      raise errors.UserError(
          f"{where}: the SavedModel does not convert to LiteRT with built-in ops "
          f"({type(exc).__name__}: {first}); nothing was exported; pass --litert=none to "
          "export the SavedModels alone") from None
    worst, tolerance, runtime = check(signature, flatbuffer, precision, feeds, where)
    file_io.write_bytes(f"{out_dir}/{litert_metadata.MODEL_FILES[precision]}", flatbuffer)
    models[precision] = {
        "file": litert_metadata.MODEL_FILES[precision], "bytes": len(flatbuffer),
        "check_max_abs_diff": {k: float(f"{v[0]:.3g}") for k, v in sorted(worst.items())},
        "check_mean_abs_diff": {k: float(f"{v[1]:.3g}") for k, v in sorted(worst.items())},
        "check_tolerance": {"statistic": STATISTICS[precision], "relative": tolerance}}
    log("LiteRT %s: %d bytes; its difference from the SavedModel on the check rows: %s",
        precision, len(flatbuffer), ", ".join(
            f"{k} max {v[0]:.2g} mean {v[1]:.2g}" for k, v in sorted(worst.items())))
  # The vocabulary's bytes, not a copy of the file: a read-only original would make a
  # read-only copy.
  vocab_bytes = file_io.read_bytes(spec.vocab_file)
  file_io.write_bytes(f"{out_dir}/{litert_metadata.VOCAB_FILE}", vocab_bytes)
  metadata = {"format": litert_metadata.FORMAT,
              "format_version": litert_metadata.FORMAT_VERSION, **spec.metadata,
              **litert_metadata.encoder_sizes(loaded, spec.metadata),
              "vocab_file": litert_metadata.VOCAB_FILE, "vocab_size": vocab_size,
              "vocab_sha256": hashlib.sha256(vocab_bytes).hexdigest(),
              "special_ids": {t: vocab[t] for t in litert_metadata.SPECIAL_TOKENS
                              if t in vocab},
              "inputs": input_names,
              "outputs": sorted(signature.structured_outputs),
              "output_shapes": {name: [None if d is None else int(d)
                                       for d in spec_.shape[1:]]
                                for name, spec_ in signature.structured_outputs.items()},
              "models": models,
              "converted_with": f"tensorflow {tf.__version__}",
              "checked_with": runtime}
  file_io.write_bytes(f"{out_dir}/{litert_metadata.METADATA_FILE}",
                      (json.dumps(metadata, indent=1, sort_keys=True) + "\n").encode("utf-8"))
  return metadata


