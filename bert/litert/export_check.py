"""An export's LiteRT folder checked whole before a row is read: model.json, vocab.txt and
the .tflite's own signature against each other, without TensorFlow.

A file edited or swapped since the export (another vocabulary, another task's .tflite, a
max_seq_length past the model's positions) would give plausible wrong answers or a
traceback from the runtime; here it is one line naming the file and the fix. Folders of
format_version 1 are checked as far as their fields allow."""

import hashlib

import numpy as np

from bert import tokenization
from bert.formats import litert_metadata
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import paths

UserError = errors.UserError

REQUIRED = ("head", "max_seq_length", "do_lower_case", "vocab_file", "vocab_size", "inputs",
            "outputs")
# Recorded from format_version 2 on.
REQUIRED_V2 = ("vocab_sha256", "special_ids", "max_position_embeddings", "type_vocab_size",
               "output_shapes")
# The tokens the predictor puts into every row (the tokenizer's [UNK], pack_tokens' [CLS]
# and [SEP]).
EMITTED = (tokenization.UNK_TOKEN, tokenization.CLS_TOKEN, tokenization.SEP_TOKEN)
# The output each head's predictions are read from, and its shape after the batch.
HEAD_OUTPUTS = {"classifier": "probabilities", "multi_label": "probabilities",
                "regression": "score"}
REEXPORT = "re-export the model (run_classifier.py/run_multilabel.py --export_dir)"


def check_metadata(metadata, metadata_file):
  """Every field the predictor reads is there and of its kind; max_seq_length fits the
  model's positions."""
  required = REQUIRED + (REQUIRED_V2 if metadata.get("format_version", 1) >= 2 else ())
  for key in required:
    if key not in metadata:
      raise UserError(f"{metadata_file}: has no {key!r}; {REEXPORT}")
  length = metadata["max_seq_length"]
  if isinstance(length, bool) or not isinstance(length, int) or length < 3:
    raise UserError(f"{metadata_file}: max_seq_length {length!r} is not a whole number "
                    f">= 3; {REEXPORT}")
  positions = metadata.get("max_position_embeddings")
  if positions is not None and length > positions:
    raise UserError(f"{metadata_file}: max_seq_length {length} is more than the model's "
                    f"max_position_embeddings {positions}; put back the export's own "
                    f"model.json (max_seq_length as at training), or {REEXPORT}")
  if not isinstance(metadata["do_lower_case"], bool):
    raise UserError(f"{metadata_file}: do_lower_case {metadata['do_lower_case']!r} is not "
                    f"true or false; {REEXPORT}")
  segments = metadata.get("type_vocab_size")
  if segments is not None and segments < (metadata.get("num_texts") or 1):
    raise UserError(f"{metadata_file}: type_vocab_size {segments} cannot embed the "
                    f"{metadata['num_texts']} texts per example it says (num_texts); "
                    f"{REEXPORT}")
  output = HEAD_OUTPUTS.get(metadata["head"])
  if output and output not in metadata["outputs"]:
    raise UserError(f"{metadata_file}: a {metadata['head']} model's predictions are its "
                    f"{output}, but its outputs are {', '.join(metadata['outputs'])}; "
                    f"{REEXPORT}")
  if metadata["head"] in ("classifier", "multi_label"):
    labels = metadata.get("labels")
    if not isinstance(labels, list) or not labels:
      raise UserError(f"{metadata_file}: a {metadata['head']} model without its labels; "
                      f"{REEXPORT}")
    recorded = (metadata.get("output_shapes") or {}).get("probabilities")
    if recorded is not None and list(recorded) != [len(labels)]:
      raise UserError(f"{metadata_file}: output_shapes says probabilities {list(recorded)}"
                      f" per row, for {len(labels)} labels; {REEXPORT}")


def check_vocabulary(vocab_file, metadata, metadata_file):
  """vocab.txt is the vocabulary the model was exported with: its special tokens at
  their ids, its size and (format 2) its digest. Returns the vocabulary."""
  input_checks.check_input_file(vocab_file, "model (its vocab.txt)")
  vocab = tokenization.load_vocab(vocab_file)
  fix = (f"put back the export's own vocab.txt (model.json {metadata_file} names "
         f"{metadata['vocab_file']!r}), or {REEXPORT}")
  missing = [t for t in EMITTED if t not in vocab]
  if missing:
    raise UserError(f"{vocab_file}: has no {', '.join(missing)}, which the predictor puts "
                    f"into every row; not the vocabulary the model was exported with: {fix}")
  recorded = metadata.get("special_ids") or {}
  moved = [f"{t} is {vocab.get(t)}, model.json says {i}" for t, i in sorted(recorded.items())
           if vocab.get(t) != i]
  if moved:
    raise UserError(f"{vocab_file}: its special tokens' ids differ from the model's "
                    f"({'; '.join(moved)}): {fix}")
  if len(vocab) != metadata["vocab_size"]:
    raise UserError(f"{vocab_file}: {len(vocab)} tokens, the model was exported with "
                    f"{metadata['vocab_size']} (model.json's vocab_size): {fix}")
  if metadata.get("vocab_sha256"):
    with open(vocab_file, "rb") as handle:
      digest = hashlib.sha256(handle.read()).hexdigest()
    if digest != metadata["vocab_sha256"]:
      raise UserError(f"{vocab_file}: not the vocabulary the model was exported with (its "
                      f"SHA-256 is {digest[:12]}..., model.json's vocab_sha256 "
                      f"{metadata['vocab_sha256'][:12]}...): {fix}")
  return vocab


def check_signature(named, signature, metadata, metadata_file):
  """The .tflite's serving signature {"inputs": [...], "outputs": [...]} is the one
  model.json describes (another task's model, an encoder put in its place: refused)."""
  if signature is None:
    raise UserError(f"{named}: has no {litert_metadata.SIGNATURE} signature; not a model "
                    f"of an export: {REEXPORT}")
  inputs, outputs = sorted(signature["inputs"]), sorted(signature["outputs"])
  if inputs != sorted(metadata["inputs"]) or outputs != sorted(metadata["outputs"]):
    raise UserError(
        f"{named}: takes {', '.join(inputs)} and gives {', '.join(outputs)}, but "
        f"{metadata_file} describes a model that takes {', '.join(sorted(metadata['inputs']))}"
        f" and gives {', '.join(sorted(metadata['outputs']))}: the .tflite is not the model "
        f"model.json describes; put the export's own files back together, or {REEXPORT}")


def expected_shapes(metadata):
  """{output: its shape after the batch} that the head and labels imply (and model.json's
  output_shapes records)."""
  shapes = {name: list(shape) for name, shape in (metadata.get("output_shapes") or {}).items()}
  output = HEAD_OUTPUTS.get(metadata["head"])
  if output == "probabilities":
    shapes[output] = [len(metadata["labels"])]
  elif output == "score":
    shapes[output] = []
  return shapes


def probe_row(vocab, length):
  """One row of `length` tokens: [CLS], [UNK]s, [SEP] (ids, segment ids)."""
  ids = [vocab[tokenization.CLS_TOKEN]] + [vocab[tokenization.UNK_TOKEN]] * (length - 2)
  return ids + [vocab[tokenization.SEP_TOKEN]], [0] * length


def check_outputs(named, outputs, metadata, metadata_file):
  """The probe row's outputs have the shapes model.json implies."""
  for name, shape in expected_shapes(metadata).items():
    if name not in outputs:
      continue
    got = list(np.shape(outputs[name])[1:])
    if len(got) != len(shape) or any(s is not None and s != g for s, g in zip(shape, got)):
      raise UserError(
          f"{named}: its {name} has shape {got} per row, {metadata_file} says {shape}"
          + (f" ({len(metadata['labels'])} labels)" if name == "probabilities" else "")
          + f": the .tflite is not the model model.json describes; {REEXPORT}")


def first_line(exc, limit=200):
  """The first line of an exception's message (the runtime's are many lines)."""
  return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


def refuse_urls(flag_values, program, instead):
  """One line for the first URL among {flag: value}: `program` reads and writes local
  paths only (the LiteRT runtime and the pure-Python reader open local files)."""
  for flag, value in flag_values.items():
    if value and paths.is_url(value):
      raise UserError(
          f"--{flag}={value}: {program} reads and writes local paths only; copy the export "
          "and data here first (gsutil cp -r or gcloud storage cp -r), or use "
          f"{instead}, which takes URLs")


def vocab_path(model_file, metadata):
  """The vocabulary model.json names, beside the model."""
  return paths.join(paths.dirname(paths.abspath(model_file)), metadata["vocab_file"])
