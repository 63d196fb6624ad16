"""TensorFlow Lite (LiteRT) models of an export's token-id SavedModel, checked before they land.

Level 2 (bert/export). Imports tokenization (core) and the utils; never reads absl FLAGS.

Every export that writes a token-id SavedModel (run_classifier.py, run_multilabel.py,
run_squad.py; export_encoder.py's encoder) also writes, by default, the same model for
the LiteRT runtime (`ai-edge-litert`, TensorFlow Lite without TensorFlow), beside ids/:

  export_version 0    export_dir/litert/     model_float32.tflite  float32 weights
  export_version N    export_dir/litert/N/   model_int8.tflite     dynamic-range int8
                                             model.json            what a predictor needs
                                             vocab.txt             the export's vocabulary

Both models are converted from the ids SavedModel with TensorFlow Lite's built-in ops
only (no TF Select ops, so the plain runtime runs them). int8 is dynamic-range
quantization (`converter.optimizations = [tf.lite.Optimize.DEFAULT]`, no representative
data): the fully-connected layers' weights (37 of the MiniLM's 38) and the word-embedding
table are stored in int8, and those layers run in int8 with activations quantized per
call; the attention's batch matmuls, softmax, LayerNorm and GELU stay float32.

Each model is checked after conversion, before anything is renamed into place: the
LiteRT interpreter and the SavedModel run the same CHECK_ROWS rows of token ids (random
ids of the vocabulary, padded rows of several lengths in one batch, and one row alone,
unpadded) and every float output must agree within

  float32   max |difference|   <= FLOAT32_TOLERANCE * scale   (rounding)
  int8      mean |difference|  <= INT8_TOLERANCE * scale      (quantization)
  where scale = max(1, max |SavedModel output|)

(for probabilities, which are at most 1: an absolute difference); for float32 the
largest difference, for int8 the mean difference over the check's values (random ids
are harder on int8 than text: on a MiniLM fine-tuned on MRPC, int8 moved the check
rows' probabilities by up to 0.145 and by 0.038 on average over five seeds of rows, and
the 408 dev rows' by up to 0.069; a quantization gone wrong moves them by far more).
Integer outputs
(label_id, predictions) must be equal in float32; in int8 they follow the quantized
probabilities and are not compared. A model outside its tolerance, or a conversion that
fails, stops the export with one line naming the model (errors.UserError): the
export is written under temporary names, so nothing of it lands (serving.py).

model.json (`METADATA_FILE`) says what the model is, so that a predictor refuses a model
of another task instead of writing plausible numbers for the wrong labels:
  format, format_version            "bert-litert", 2 (1: before the fields marked *)
  task, head, labels, threshold     the run's head_info (finetune.Task.head_info); an
                                    encoder has head "encoder"
  task_name, num_texts, ltr         how the run read its text
  max_seq_length, do_lower_case,    how to tokenize (tokenization.FullTokenizer with
  normalize, vocab_file, vocab_size the vocabulary beside it)
  vocab_sha256 *, special_ids *     the vocabulary's digest (SHA-256 of vocab.txt's bytes)
                                    and the ids of its special tokens ([PAD], [UNK],
                                    [CLS], [SEP], [MASK], those it has)
  max_position_embeddings *,        the encoder's position and segment tables' rows
  type_vocab_size *
  inputs, outputs                   the signature's tensor names
  output_shapes *                   each output's shape after the batch ([] for a
                                    score, [labels] for probabilities; None: any length)
  models                            per precision: file, bytes, the check's largest
                                    and mean difference per output and its tolerance
  converted_with, checked_with      the converter's and the runtime's versions

Why the tolerance is relative above 1: a regression score (STS-B, 0 to 5), SQuAD's
logits and an encoder's hidden states are not bounded by 1, and int8's error grows with
the values it quantizes.
"""

import dataclasses
import hashlib
import json
import os
import warnings
from typing import Sequence

import numpy as np

from bert import tokenization
from bert.utils import file_io
from bert.utils import errors

PRECISIONS = ("float32", "int8")
CHOICES = ("both", "float32", "int8", "none")  # --litert
MODEL_FILES = {"float32": "model_float32.tflite", "int8": "model_int8.tflite"}
METADATA_FILE = "model.json"
VOCAB_FILE = "vocab.txt"
FOLDER = "litert"
FORMAT = "bert-litert"
FORMAT_VERSION = 2
# model.json versions this project reads: 1 lacks the fields that let a predictor check
# the vocabulary's digest and the model's positions (predictor.py checks what it can).
READABLE_VERSIONS = (1, 2)
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
FLOAT32_TOLERANCE = 1e-5
INT8_TOLERANCE = 0.1
TOLERANCES = {"float32": FLOAT32_TOLERANCE, "int8": INT8_TOLERANCE}
# Which statistic of |LiteRT - SavedModel| each precision's tolerance bounds.
STATISTICS = {"float32": "max", "int8": "mean"}
CHECK_ROWS = 8
CHECK_SEQ_LENGTH = 48  # the check's longest row (or max_seq_length when shorter)
SIGNATURE = "serving_default"

# The token-id inputs by role, under this project's names and TF Hub's (the encoder).
_ROLES = {"input_ids": "ids", "input_mask": "mask", "segment_ids": "segments",
          "input_word_ids": "ids", "input_type_ids": "segments"}


def precisions_of(choice):
  """--litert's value -> the precisions to write: both -> (float32, int8), none -> ()."""
  if choice not in CHOICES:
    raise errors.UserError(f"--litert={choice}: choose one of {', '.join(CHOICES)}")
  if choice == "both":
    return PRECISIONS
  return () if choice == "none" else (choice,)


@dataclasses.dataclass(frozen=True)
class Request:
  """What an export writes into its litert/ folder.

  precisions: a subset of PRECISIONS. metadata: model.json's task fields (module
  docstring; the writer adds the format, the vocabulary, the models and the versions).
  vocab_file: the vocabulary the model was trained with (copied as vocab.txt).
  num_segments: 2 when the inputs may hold a second segment (pairs), else 1.
  """
  precisions: Sequence[str]
  metadata: dict
  vocab_file: str
  num_segments: int = 2


def request(choice, metadata, vocab_file, num_segments=2):
  """A Request for --litert=choice, or None when it writes nothing (none)."""
  precisions = precisions_of(choice)
  if not precisions:
    return None
  return Request(tuple(precisions), dict(metadata), vocab_file, int(num_segments))


def folder(export_dir, version=0):
  """export_dir/litert (version 0) or export_dir/litert/N: the models' folder."""
  base = f"{export_dir.rstrip('/')}/{FOLDER}"
  return f"{base}/{version}" if version else base


# --------------------------------------------------------------------------- conversion


def convert(saved_model_dir, precision):
  """The .tflite flatbuffer (bytes) of the SavedModel's serving_default signature, built-in
  ops only; int8: dynamic-range quantization."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir,
                                                       signature_keys=[SIGNATURE])
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if precision == "int8":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  elif precision != "float32":
    raise ValueError(f"precision {precision!r}: one of {PRECISIONS}")
  return converter.convert()


def interpreter(model_content=None, model_path=None, num_threads=1):
  """(LiteRT interpreter, runtime name): ai-edge-litert's when installed (the runtime a
  predictor uses), else the one TensorFlow ships (tf.lite.Interpreter, the same kernels)."""
  try:
    from ai_edge_litert import interpreter as litert_interpreter  # pylint: disable=g-import-not-at-top
    from importlib import metadata  # pylint: disable=g-import-not-at-top
    runtime = f"ai-edge-litert {metadata.version('ai-edge-litert')}"
    make = litert_interpreter.Interpreter
  except ImportError:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  outputs = signature(**{name: tf.constant(value) for name, value in feed.items()})
  return {name: value.numpy() for name, value in outputs.items()}


def check(signature, flatbuffer, precision, feeds, where):
  """Runs every feed through the SavedModel's signature and the LiteRT model; returns
  ({output: (max, mean |difference|)} over all feeds, tolerance, runtime name); a
  statistic beyond its tolerance is a UserError naming `where` (the model's final path)."""
  model, runtime = interpreter(model_content=flatbuffer)
  runner = model.get_signature_runner(SIGNATURE)
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  final_dir = final_dir or out_dir
  log = log or (lambda *args: None)
  file_io.makedirs(out_dir)
  loaded = tf.saved_model.load(saved_model_dir)
  signature = loaded.signatures[SIGNATURE]
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
    where = f"{final_dir.rstrip('/')}/{MODEL_FILES[precision]}"
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
    file_io.write_bytes(f"{out_dir}/{MODEL_FILES[precision]}", flatbuffer)
    models[precision] = {
        "file": MODEL_FILES[precision], "bytes": len(flatbuffer),
        "check_max_abs_diff": {k: float(f"{v[0]:.3g}") for k, v in sorted(worst.items())},
        "check_mean_abs_diff": {k: float(f"{v[1]:.3g}") for k, v in sorted(worst.items())},
        "check_tolerance": {"statistic": STATISTICS[precision], "relative": tolerance}}
    log("LiteRT %s: %d bytes; its difference from the SavedModel on the check rows: %s",
        precision, len(flatbuffer), ", ".join(
            f"{k} max {v[0]:.2g} mean {v[1]:.2g}" for k, v in sorted(worst.items())))
  # The vocabulary's bytes, not a copy of the file: a read-only original would make a
  # read-only copy.
  vocab_bytes = file_io.read_bytes(spec.vocab_file)
  file_io.write_bytes(f"{out_dir}/{VOCAB_FILE}", vocab_bytes)
  metadata = {"format": FORMAT, "format_version": FORMAT_VERSION, **spec.metadata,
              **encoder_sizes(loaded, spec.metadata),
              "vocab_file": VOCAB_FILE, "vocab_size": vocab_size,
              "vocab_sha256": hashlib.sha256(vocab_bytes).hexdigest(),
              "special_ids": {t: vocab[t] for t in SPECIAL_TOKENS if t in vocab},
              "inputs": input_names,
              "outputs": sorted(signature.structured_outputs),
              "output_shapes": {name: [None if d is None else int(d)
                                       for d in spec_.shape[1:]]
                                for name, spec_ in signature.structured_outputs.items()},
              "models": models,
              "converted_with": f"tensorflow {tf.__version__}",
              "checked_with": runtime}
  file_io.write_bytes(f"{out_dir}/{METADATA_FILE}",
                      (json.dumps(metadata, indent=1, sort_keys=True) + "\n").encode("utf-8"))
  return metadata


def encoder_sizes(loaded, metadata):
  """{max_position_embeddings, type_vocab_size}: the request's (the run's BERT config),
  else the rows of the SavedModel's position and segment tables."""
  sizes = {key: int(metadata[key]) for key in ("max_position_embeddings", "type_vocab_size")
           if metadata.get(key)}
  tables = {"max_position_embeddings": "position_embeddings",
            "type_vocab_size": "token_type_embeddings"}
  for key, table in tables.items():
    if key not in sizes:
      found = [v.shape[0] for v in loaded.variables
               if v.name.split(":")[0].split("/")[-1] == table and len(v.shape) == 2]
      if len(found) != 1:
        raise ValueError(f"the SavedModel holds {len(found)} {table} tables; pass {key} "
                         "in the request's metadata")
      sizes[key] = int(found[0])
  return sizes


def read_metadata(model_file):
  """model.json beside a .tflite file -> its dict; one line naming what is wrong when it
  is missing or not ours. Needs no TensorFlow."""
  directory = os.path.dirname(os.path.abspath(model_file))
  path = os.path.join(directory, METADATA_FILE)
  if not os.path.isfile(path):
    raise errors.UserError(
        f"{model_file}: no {METADATA_FILE} beside it; a LiteRT model of an export "
        "(--export_dir's litert/ folder) has one, saying its task, labels and tokenizer")
  try:
    with open(path, encoding="utf-8") as handle:
      metadata = json.load(handle)
  except (OSError, ValueError) as exc:
    raise errors.UserError(f"{path}: not readable JSON ({exc})") from None
  if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
    raise errors.UserError(f"{path}: not a {FORMAT} description (no \"format\": "
                                 f"\"{FORMAT}\")")
  if metadata.get("format_version") not in READABLE_VERSIONS:
    raise errors.UserError(
        f"{path}: format_version {metadata.get('format_version')!r}; this version of the "
        f"project reads {' and '.join(map(str, READABLE_VERSIONS))}")
  return metadata


def precision_of_file(model_file, metadata):
  """The precision whose file `model_file` is, by model.json's list; None if not listed."""
  name = os.path.basename(model_file)
  for precision, entry in (metadata.get("models") or {}).items():
    if entry.get("file") == name:
      return precision
  return None
