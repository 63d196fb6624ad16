"""What an export's LiteRT folder holds and what its model.json says, read without
TensorFlow: the converter (litert_convert.py) writes these files, the serving install's
predictor (bert/litert) reads them.

model.json says what the model is (its head and labels, how to tokenize, the
vocabulary's digest, the encoder's positions), so that a predictor refuses a model of
another task, or an edited folder, instead of writing plausible numbers for the wrong
labels. docs/serving.md lists the folder's files and model.json's fields."""

import dataclasses
import json
import os
from typing import Sequence

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
SIGNATURE = "serving_default"


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


# --------------------------------------------------------------------------- model.json


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
  is missing or not ours. Needs no TensorFlow, and so reads a local path only (the
  TensorFlow-free predictor's rule: its callers refuse a URL first, in one line)."""
  directory = os.path.dirname(os.path.abspath(model_file))
  path = os.path.join(directory, METADATA_FILE)
  if not os.path.isfile(path):
    raise errors.UserError(
        f"{model_file}: no {METADATA_FILE} beside it; a LiteRT model of an export (the "
        "litert/ folder of run_classifier.py/run_multilabel.py --export_dir) has one, saying "
        "its task, labels and tokenizer")
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
