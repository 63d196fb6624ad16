"""The formats a checkpoint is exported to (export_encoder.py --format), one row each, and
what every format's writer is handed.

A writer gets a `Source` (the checkpoint's config and path, its tokenization, and
loaders of its weights) so that it refuses what it cannot write before any weight is
read. docs/adding_a_format.md says what a row holds and every other place a new format
touches. A fine-tuning run's --export_dir is not a row: it writes its serving signatures
with serving.write_serving_models."""

import dataclasses
import importlib
from typing import Any, Callable, Optional, Sequence

from bert.utils import paths


@dataclasses.dataclass(frozen=True)
class Loaded:
  """The model a checkpoint holds, with what it records about its head.

  model: the keras model (encoder and head) holding the checkpoint's weights.
  head_info: what the head means (finetune.Task.head_info()), None when not recorded.
  weight_names: every weight the checkpoint holds, by Google's names.
  description: one phrase for head_info ("Mrpc's classifier (labels 0, 1)"), or None.
  """
  model: Any
  head_info: Optional[dict]
  weight_names: Sequence[str]
  description: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Source:
  """What a writer exports: a checkpoint, its tokenization and the options it reads.

  config: the modeling.BertConfig. init_checkpoint: the checkpoint's path (named in
  refusals). load_model() -> Loaded: the whole model the checkpoint holds, with its head;
  load_encoder() -> modeling.BertModel: its encoder alone. seq_length: the
  preprocessor's sequence length (None for a format without one); normalize: None or
  "nfc"; litert: --litert's choice (litert_metadata.CHOICES).
  """
  config: Any
  init_checkpoint: str
  vocab_file: str
  do_lower_case: bool
  load_model: Callable[[], Loaded]
  load_encoder: Callable[[], Any]
  seq_length: Optional[int] = None
  normalize: Optional[str] = None
  litert: str = "none"


@dataclasses.dataclass(frozen=True)
class Writer:
  """One format: the module that writes it, --format's words for it, the options it
  reads (of OPTIONS) and the folders its export's last line names."""
  module: str
  help: str
  options: Sequence[str] = ()
  parts: Sequence[str] = ()

  def __call__(self, export_dir, source, **kwargs):
    # Imported when it writes, not with this table: the formats' modules load TensorFlow,
    # and the table is read where none is loaded (a command's flags, the docs' tests).
    module = importlib.import_module(f"bert.formats.{self.module}")
    return module.export(export_dir, source, **kwargs)

  def paths(self, export_dir):
    """The paths the export's last line names: its parts, or export_dir itself."""
    return [paths.join(export_dir, part) for part in self.parts] or [export_dir]


# The options a format may read beyond the model and its vocabulary (Source's fields).
OPTIONS = ("seq_length", "normalize", "litert")

WRITERS = {
    "tfhub": Writer(
        "tfhub_modules",
        "the encoder and preprocessor SavedModels (TF Hub's BERT API).",
        options=("seq_length", "normalize", "litert"), parts=("encoder", "preprocessor")),
    "huggingface": Writer(
        "hugging_face",
        "model.safetensors, config.json, vocab.txt and tokenizer_config.json that "
        "transformers' AutoModel* / pipeline() and BertTokenizer load, with the head the "
        "checkpoint holds (a fine-tuned run's head under its task's class and labels)."),
    "keras_hub": Writer(
        "keras_hub_presets",
        "a fine-tuned classifier as a keras-hub preset that "
        "keras_hub.models.BertTextClassifier.from_preset loads with its head; labels in "
        "metadata.json (needs the keras-hub package).",
        options=("seq_length",)),
}


def format_help():
  """--format's help: each format's words, in the table's order."""
  return " ".join(f"{name}: {writer.help}" for name, writer in WRITERS.items())


def reads(export_format, option):
  """Whether the format reads `option` (one of OPTIONS)."""
  if option not in OPTIONS:
    raise ValueError(f"{option!r}: not one of {OPTIONS}")
  return option in WRITERS[export_format].options
