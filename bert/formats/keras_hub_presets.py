"""keras-hub presets: a fine-tuned classifier that
`keras_hub.models.BertTextClassifier.from_preset(export_dir)` loads with its head.

`export(export_dir, source)` is export_encoder.py --format=keras_hub's writer (a row of
writers.py). keras-hub is optional, and not among the project's requirements: only this
format imports it, when it writes.
"""

import json
import os
import tempfile

from absl import logging

from bert import modeling
from bert import tokenization
from bert.formats import hugging_face
from bert.utils import errors
from bert.utils import file_io
from bert.utils import output_lock

# The heads keras_hub.models.BertTextClassifier holds: Dense(num_classes) on the pooled
# output, logits out (softmax for a classifier, one sigmoid per label for multi_label,
# the score itself for a regression).
KERAS_HUB_HEADS = ("classifier", "multi_label", "regression")
KERAS_HUB_PIN = "keras-hub==0.32.0"  # the version checked with keras 3.15.1, TF 2.21


def import_keras_hub():
  """The keras_hub module, or a one-line error saying how to install it."""
  # Imported here, not at the top: keras-hub is optional, needed by --format=keras_hub
  # alone, and it is not among the project's requirements.
  try:
    import keras_hub  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise errors.UserError(
        f"--format=keras_hub needs the keras-hub package, which this project does not "
        f"install: pip install {KERAS_HUB_PIN}") from None
  return keras_hub


def export(export_dir, source, overwrite=False, log=None):
  """export_encoder.py --format=keras_hub: a fine-tuned classifier (source: a
  writers.Source) as a keras-hub preset; returns the labels written.

  The preset is keras-hub's own (written by `BertTextClassifier.save_to_preset`):
  config.json and model.weights.h5 (the BertBackbone), task.json and task.weights.h5
  (the head, num_classes from the checkpoint's head), preprocessor.json and
  tokenizer.json with assets/tokenizer/vocabulary.txt (packing to source.seq_length),
  and metadata.json, to which the labels are added: keras-hub's text classifiers have no
  place for label names. The encoder and pooler go through keras-hub's own Hugging Face
  converter (our Hugging Face export in a temporary directory), the head is copied in;
  the tokenizer lower-cases and strips accents as do_lower_case says.
  """
  log = log or logging.info
  keras_hub = import_keras_hub()
  if source.config.hidden_act != "gelu":
    raise errors.UserError(
        f"hidden_act={source.config.hidden_act!r}: keras-hub's BertBackbone computes the "
        "original's tanh-approximated \"gelu\" only; export --format=tfhub or huggingface")
  loaded = source.load_model()
  _check_head(loaded, source.init_checkpoint)
  variables = modeling.google_variable_map(loaded.model)
  names, _ = hugging_face.exportable_names(
      [n for n in loaded.weight_names if n in variables], loaded.head_info)
  tensors = {name: variables[name].numpy() for name in names}
  log("The checkpoint holds %s", loaded.description)
  classifier = _classifier(keras_hub, tensors, source, loaded.head_info)
  head = loaded.head_info["head"]
  labels = loaded.head_info.get("labels") if head != "regression" else None
  with output_lock.writing_export(export_dir, overwrite=overwrite) as tmp:
    _save_preset(classifier, {"finetuning_task": loaded.head_info.get("task"),
                              "head": head, "labels": labels}, tmp)
  log("Wrote a keras-hub BertTextClassifier preset (%d classes, sequence_length %d)",
      classifier.num_classes, source.seq_length)
  return labels


def _check_head(loaded, init_checkpoint):
  """Refuses a checkpoint whose head keras-hub's BertTextClassifier cannot hold."""
  head = (loaded.head_info or {}).get("head")
  if head not in KERAS_HUB_HEADS:
    holds = loaded.description if loaded.head_info else "no fine-tuned head"
    raise errors.UserError(
        f"--init_checkpoint={init_checkpoint}: --format=keras_hub writes a fine-tuned "
        f"classifier (keras_hub.models.BertTextClassifier), and this checkpoint holds "
        f"{holds}; export --format=huggingface instead (keras_hub.models.BertBackbone"
        ".from_preset loads that directory as an encoder)")
  if loaded.head_info.get("ltr"):
    raise errors.UserError(
        "cannot export a left-to-right (--ltr) model to keras-hub: its attention is "
        "causal, and keras-hub's BertBackbone attends in both directions")


def _classifier(keras_hub, tensors, source, head_info):
  """keras-hub's BertTextClassifier holding the checkpoint's weights (`tensors`, by
  Google's names) and a preprocessor that tokenizes as the original."""
  config = source.config
  kernel, bias = tensors["output_weights"], tensors["output_bias"]  # [classes, H], [classes]
  with tempfile.TemporaryDirectory() as scratch:  # a local scratch, not a user's path
    converted = os.path.join(scratch, "huggingface")
    hugging_face.write_hugging_face(converted, tensors, config, source.vocab_file,
                                    source.do_lower_case, head_info=head_info)
    backbone = keras_hub.models.BertBackbone.from_preset(
        converted, num_segments=config.type_vocab_size, dropout=config.hidden_dropout_prob)
  # Built here, not from the converted directory: keras-hub's Hugging Face converter sets
  # lowercase only, and its tokenizer then keeps accents ("café" -> [UNK]), where the
  # original strips them whenever it lower-cases.
  # The tokens as every reader of ours reads them (a byte-order mark dropped).
  tokenizer = keras_hub.models.BertTokenizer(
      vocabulary=list(tokenization.load_vocab(source.vocab_file)),
      lowercase=source.do_lower_case, strip_accents=source.do_lower_case)
  preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
      tokenizer, sequence_length=source.seq_length)
  classifier = keras_hub.models.BertTextClassifier(
      backbone, num_classes=int(bias.shape[0]), preprocessor=preprocessor)
  classifier.output_dense.kernel.assign(kernel.T)
  classifier.output_dense.bias.assign(bias)
  return classifier


def _save_preset(classifier, fields, tmp):
  """The classifier's preset at `tmp` (the export's temporary), with `fields` (the task,
  head and labels) added to its metadata.json."""
  # keras-hub writes local folders: the preset is made in a local scratch folder, then
  # copied to the export's temporary (a URL's too).
  with tempfile.TemporaryDirectory() as scratch:
    preset = os.path.join(scratch, "preset")
    classifier.save_to_preset(preset)
    metadata_file = os.path.join(preset, "metadata.json")
    with open(metadata_file, encoding="utf-8") as handle:
      metadata = json.load(handle)
    metadata.update(fields)
    with open(metadata_file, "w", encoding="utf-8") as handle:
      json.dump(metadata, handle, indent=4, ensure_ascii=False)
      handle.write("\n")
    file_io.copy_tree(preset, tmp)
