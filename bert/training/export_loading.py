"""What export_encoder.py does, as library functions taking plain arguments.

Imports the checkpoints of bert/training, the formats of bert/export, modeling and heads;
never reads absl FLAGS (export_encoder.py's main() reads them once and calls these).

  * `resolve_seq_length(...)`: --seq_length / --max_seq_length for each format;
  * `load_for_export(config, init_checkpoint)`: the model the checkpoint holds (encoder
    and head, built from what the run recorded about its head), the head's meaning, and
    the names of every checkpoint weight;
  * `export_hugging_face(...)`: the checkpoint's encoder and head as a Hugging Face model
    directory; every checkpoint weight not written is named in one warning;
  * `export_tfhub(...)`: the encoder and preprocessor SavedModels (tfhub_modules);
  * `export_keras_hub(...)`: a fine-tuned classifier as a keras-hub preset that
    `keras_hub.models.BertTextClassifier.from_preset(export_dir)` loads with its head
    (keras-hub is optional: only this export imports it).
"""

import json
import os
import tempfile

from absl import logging

from bert.formats import hugging_face
from bert.formats import litert_convert as litert_models
from bert.formats import tfhub_modules
from bert import heads
from bert import modeling
from bert import tokenization
from bert.formats import checkpoint_files
from bert.training import checkpoints
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import output_lock
from bert.utils import errors


def resolve_seq_length(export_format, seq_length, max_seq_length, seq_length_set,
                       max_seq_length_set):
  """The preprocessor's sequence length (tfhub, keras_hub), or None (huggingface).

  seq_length / max_seq_length: the flag values; *_set: whether the user gave them.
  """
  if export_format == "huggingface":
    for name, value, given in (("seq_length", seq_length, seq_length_set),
                               ("max_seq_length", max_seq_length, max_seq_length_set)):
      if given:
        raise errors.UserError(
            f"--{name}={value} applies to --format=tfhub only; a Hugging Face "
            "export takes the model's max_position_embeddings as model_max_length")
    return None
  if seq_length is None:
    return max_seq_length
  if max_seq_length_set and seq_length != max_seq_length:
    raise errors.UserError(
        f"--seq_length={seq_length} and --max_seq_length={max_seq_length} "
        "disagree; pass only one of them")
  return seq_length


def _model_for_head(config, head_info, signature, where):
  """The keras model whose weights the checkpoint holds, from its head_info/signature."""
  head = head_info.get("head")
  if head in hugging_face.REFUSED_HEADS:
    raise errors.UserError(f"cannot export a {head} head to Hugging Face: "
                                 f"{hugging_face.REFUSED_HEADS[head]}")
  if head in ("classifier", "multi_label"):
    return heads.build_classifier_model(config, len(head_info["labels"]))[0]
  if head == "regression":
    return heads.build_classifier_model(config, 1)[0]
  if head == "token_classification":
    return heads.build_token_classifier_model(config, len(head_info["labels"]))[0]
  if head == "multiple_choice":
    return heads.build_multiple_choice_model(config, int(head_info["num_choices"]))[0]
  if head == "squad":
    return heads.build_squad_model(config)[0]
  if head == "pretraining":
    return heads.build_pretraining_model(
        config, use_next_sentence="cls/seq_relationship/output_weights" in signature)[0]
  raise errors.UserError(f"{where}: its recorded head_info names the head {head!r}, "
                               "not one this project exports")


def _first_difference(saved, model):
  """(name, saved shape or None, model's shape or None) of the first weight, encoder
  weights first, where the checkpoint's recorded signature and `model` differ; None when
  they agree or the checkpoint records no signature."""
  if not saved:
    return None
  ours = json.loads(checkpoints.model_signature(model))["weights"]
  names = sorted(set(saved) | set(ours), key=lambda n: (not n.startswith("bert/"), n))
  for name in names:
    if saved.get(name) != ours.get(name):
      return name, saved.get(name), ours.get(name)
  return None


def _shape(shape):
  return "absent" if shape is None else str(list(shape))


def load_for_export(config, init_checkpoint):
  """Loads a checkpoint for export: (model, head_info or None, every weight name it holds).

  Our TF2 checkpoints (a run's output_dir or ckpt-N) are rebuilt as the very model they
  hold, from the head_info the run saved (task, head, labels); one written before runs
  recorded it, or holding no fine-tuned head, loads into a pretraining model (masked-LM
  and next-sentence heads when present). Google and Hugging Face checkpoints load by name
  into a pretraining model, as before.
  """
  kind, resolved = checkpoint_files.resolve_checkpoint(init_checkpoint)
  head_info = signature = None
  if kind == checkpoint_files.OURS:
    head_info = checkpoints.head_info_of(resolved)
    signature = checkpoints.saved_signature(resolved) or {}
  if head_info:
    model = _model_for_head(config, head_info, signature, resolved)
    differs = _first_difference(signature, model)
    if differs and not differs[0].startswith("bert/"):
      # The encoder fits the config: what disagrees with the weights is the recorded
      # head, not the config.
      name, saved, built = differs
      raise errors.UserError(
          f"--init_checkpoint={init_checkpoint}: its recorded head_info says "
          f"{checkpoints.describe_head(head_info)}, but its weights do not hold that head "
          f"({name}: {_shape(saved)} in the checkpoint, {_shape(built)} for that head); "
          "the recorded head_info is wrong (the config is right): the checkpoint was "
          "altered or written by another program; export an unaltered checkpoint of that run")
    report = checkpoints.load_checkpoint(model, resolved, head_info=head_info)
    if not report.get("whole_model"):
      raise errors.UserError(
          f"--init_checkpoint={init_checkpoint}: its weights do not fit the "
          f"{checkpoints.describe_head(head_info)} model built from --bert_config_file; "
          "use the bert_config.json of that run")
    return model, head_info, sorted(signature)
  model = heads.build_pretraining_model(
      config, use_next_sentence=signature is None
      or "cls/seq_relationship/output_weights" in signature)[0]
  report = checkpoints.load_checkpoint(model, resolved)
  held = sorted(set(report["loaded"]) | set(report["unused"]) | set(signature or ()))
  return model, None, held


def export_hugging_face(export_dir, config, init_checkpoint, vocab_file, do_lower_case,
                        overwrite=False, log=None, warn=None):
  """Writes the checkpoint's encoder and head as a Hugging Face model directory.

  Returns (architecture, names written, names not written). Every checkpoint weight not
  written is named through `warn` (absl logging.warning by default): nothing is dropped
  silently.
  """
  log = log or logging.info
  warn = warn or logging.warning
  model, head_info, held = load_for_export(config, init_checkpoint)
  variables = modeling.google_variable_map(model)
  names, architecture = hugging_face.exportable_names(
      [n for n in held if n in variables], head_info)
  if head_info:
    log("The checkpoint holds %s", checkpoints.describe_head(head_info))
  log("Exporting %d weights as Hugging Face %s", len(names), architecture)
  left_out = sorted(set(held) - set(names))
  if left_out:
    warn("Not exported (no place in Hugging Face's %s): %s", architecture,
         ", ".join(left_out))
  tensors = {name: variables[name].numpy() for name in names}
  hugging_face.write_hugging_face(export_dir, tensors, config, vocab_file, do_lower_case,
                                  overwrite=overwrite, log=log, head_info=head_info)
  return architecture, names, left_out


def export_tfhub(export_dir, config, init_checkpoint, vocab_file, do_lower_case,
                 seq_length, overwrite=False, normalize=None, log=None, litert="none"):
  """The encoder and preprocessor SavedModels (and, as --litert says, the encoder's
  LiteRT models in export_dir/litert); returns their two paths."""
  log = log or logging.info
  encoder = modeling.BertModel(config)
  report = checkpoints.load_checkpoint(encoder, init_checkpoint)
  log("Loaded %d encoder variables (%s)", len(report["loaded"]), report["format"])
  request = litert_models.request(
      litert, {"task": "encoder", "head": "encoder", "max_seq_length": seq_length,
               "do_lower_case": bool(do_lower_case), "normalize": normalize,
               "num_texts": 2, "max_position_embeddings": config.max_position_embeddings,
               "type_vocab_size": config.type_vocab_size}, vocab_file)
  return tfhub_modules.export_encoder_and_preprocessor(
      export_dir, encoder, vocab_file, do_lower_case, seq_length=seq_length,
      overwrite=overwrite, log=log, normalize=normalize, litert=request)


# --------------------------------------------------------------------------- keras-hub

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


def export_keras_hub(export_dir, config, init_checkpoint, vocab_file, do_lower_case,
                     seq_length, overwrite=False, log=None):
  """Writes a fine-tuned classifier as a keras-hub preset; returns the labels written.

  The preset is keras-hub's own (written by `BertTextClassifier.save_to_preset`):
  config.json and model.weights.h5 (the BertBackbone), task.json and task.weights.h5
  (the head, num_classes from the checkpoint's head), preprocessor.json and
  tokenizer.json with assets/tokenizer/vocabulary.txt (packing to `seq_length`), and
  metadata.json, to which the labels are added: keras-hub's text classifiers have no
  place for label names. The encoder and pooler go through keras-hub's own Hugging Face
  converter (our Hugging Face export in a temporary directory), the head is copied in;
  the tokenizer lower-cases and strips accents as do_lower_case says.
  """
  log = log or logging.info
  keras_hub = import_keras_hub()
  if config.hidden_act != "gelu":
    raise errors.UserError(
        f"hidden_act={config.hidden_act!r}: keras-hub's BertBackbone computes the "
        "original's tanh-approximated \"gelu\" only; export --format=tfhub or huggingface")
  model, head_info, held = load_for_export(config, init_checkpoint)
  head = (head_info or {}).get("head")
  if head not in KERAS_HUB_HEADS:
    holds = checkpoints.describe_head(head_info) if head_info else "no fine-tuned head"
    raise errors.UserError(
        f"--init_checkpoint={init_checkpoint}: --format=keras_hub writes a fine-tuned "
        f"classifier (keras_hub.models.BertTextClassifier), and this checkpoint holds "
        f"{holds}; export --format=huggingface instead (keras_hub.models.BertBackbone"
        ".from_preset loads that directory as an encoder)")
  if head_info.get("ltr"):
    raise errors.UserError(
        "cannot export a left-to-right (--ltr) model to keras-hub: its attention is "
        "causal, and keras-hub's BertBackbone attends in both directions")
  variables = modeling.google_variable_map(model)
  names, _ = hugging_face.exportable_names([n for n in held if n in variables], head_info)
  tensors = {name: variables[name].numpy() for name in names}
  kernel, bias = tensors["output_weights"], tensors["output_bias"]  # [classes, H], [classes]
  log("The checkpoint holds %s", checkpoints.describe_head(head_info))
  with tempfile.TemporaryDirectory() as scratch:  # a local scratch, not a user's path
    converted = os.path.join(scratch, "huggingface")
    hugging_face.write_hugging_face(converted, tensors, config, vocab_file, do_lower_case,
                                    head_info=head_info)
    backbone = keras_hub.models.BertBackbone.from_preset(
        converted, num_segments=config.type_vocab_size, dropout=config.hidden_dropout_prob)
  # Built here, not from the converted directory: keras-hub's Hugging Face converter sets
  # lowercase only, and its tokenizer then keeps accents ("café" -> [UNK]), where the
  # original strips them whenever it lower-cases.
  # The tokens as every reader of ours reads them (a byte-order mark dropped).
  tokenizer = keras_hub.models.BertTokenizer(
      vocabulary=list(tokenization.load_vocab(vocab_file)), lowercase=do_lower_case,
      strip_accents=do_lower_case)
  preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
      tokenizer, sequence_length=seq_length)
  classifier = keras_hub.models.BertTextClassifier(
      backbone, num_classes=int(bias.shape[0]), preprocessor=preprocessor)
  classifier.output_dense.kernel.assign(kernel.T)
  classifier.output_dense.bias.assign(bias)
  labels = head_info.get("labels") if head != "regression" else None
  with errors.disk_full_names(export_dir, "export_dir"):
    with output_lock.lock_export(export_dir), atomic_output.atomic_path(
        export_dir, overwrite=overwrite) as tmp:
      # keras-hub writes local folders: the preset is made in a local scratch folder, then
      # copied to the export's temporary (a URL's too).
      with tempfile.TemporaryDirectory() as scratch:
        preset = os.path.join(scratch, "preset")
        classifier.save_to_preset(preset)
        metadata_file = os.path.join(preset, "metadata.json")
        with open(metadata_file, encoding="utf-8") as handle:
          metadata = json.load(handle)
        metadata.update({"finetuning_task": head_info.get("task"), "head": head,
                         "labels": labels})
        with open(metadata_file, "w", encoding="utf-8") as handle:
          json.dump(metadata, handle, indent=4, ensure_ascii=False)
          handle.write("\n")
        file_io.copy_tree(preset, tmp)
  log("Wrote a keras-hub BertTextClassifier preset (%d classes, sequence_length %d)",
      int(bias.shape[0]), seq_length)
  return labels
