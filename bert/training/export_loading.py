"""A checkpoint loaded for export (export_encoder.py): the options checked before any
weight is read (`check_export`), and the `Source` that the format writers
(bert/formats/writers.py) read the weights from when they ask (`source`)."""

import functools
import json

from absl import logging

from bert import heads
from bert import modeling
from bert import modeling_config
from bert import tokenization
from bert.formats import checkpoint_files
from bert.formats import hugging_face
from bert.formats import tfhub_modules
from bert.formats import writers
from bert.training import checkpoints
from bert.training import model_config
from bert.utils import errors


def resolve_seq_length(export_format, seq_length, max_seq_length, seq_length_set,
                       max_seq_length_set):
  """The preprocessor's sequence length (tfhub, keras_hub), or None (huggingface).

  seq_length / max_seq_length: the flag values; *_set: whether the user gave them.
  """
  if not writers.reads(export_format, "seq_length"):
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


# Every model an export loads a checkpoint into computes in float32, whatever precision
# trained it (its variables are float32 under every policy): the exported graphs and their
# LiteRT conversions are float32's.
EXPORT_DTYPE = "float32"


def _model_for_head(config, head_info, signature, where):
  """The keras model whose weights the checkpoint holds, from its head_info/signature."""
  head = head_info.get("head")
  if head in hugging_face.REFUSED_HEADS:
    raise errors.UserError(f"cannot export a {head} head to Hugging Face: "
                                 f"{hugging_face.REFUSED_HEADS[head]}")
  if head in ("classifier", "multi_label"):
    return heads.build_classifier_model(config, len(head_info["labels"]),
                                        dtype=EXPORT_DTYPE)[0]
  if head == "regression":
    return heads.build_classifier_model(config, 1, dtype=EXPORT_DTYPE)[0]
  if head == "token_classification":
    return heads.build_token_classifier_model(config, len(head_info["labels"]),
                                              dtype=EXPORT_DTYPE)[0]
  if head == "multiple_choice":
    return heads.build_multiple_choice_model(config, int(head_info["num_choices"]),
                                             dtype=EXPORT_DTYPE)[0]
  if head == "squad":
    return heads.build_squad_model(config, dtype=EXPORT_DTYPE)[0]
  if head == "pretraining":
    return heads.build_pretraining_model(
        config, use_next_sentence="cls/seq_relationship/output_weights" in signature,
        dtype=EXPORT_DTYPE)[0]
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
  """The model a checkpoint holds, loaded for export (writers.Loaded: the model, its
  head_info or None, every weight name it holds).

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
    return writers.Loaded(model, head_info, sorted(signature),
                          checkpoints.describe_head(head_info))
  model = heads.build_pretraining_model(
      config, use_next_sentence=signature is None
      or "cls/seq_relationship/output_weights" in signature, dtype=EXPORT_DTYPE)[0]
  report = checkpoints.load_checkpoint(model, resolved)
  held = sorted(set(report["loaded"]) | set(report["unused"]) | set(signature or ()))
  return writers.Loaded(model, None, held)


def load_encoder(config, init_checkpoint, log=None):
  """The checkpoint's encoder alone (a modeling.BertModel), whatever heads it holds."""
  log = log or logging.info
  encoder = modeling.BertModel(config, dtype=EXPORT_DTYPE)
  report = checkpoints.load_checkpoint(encoder, init_checkpoint)
  log("Loaded %d encoder variables (%s)", len(report["loaded"]), report["format"])
  return encoder


def check_export(export_format, export_dir, config, init_checkpoint, vocab_file,
                 do_lower_case, seq_length=None, overwrite=False, normalize=None,
                 litert=None):
  """Refuses, before any weight is read, an export that cannot work: a sequence length
  beyond the model, a case setting or vocabulary that contradicts the checkpoint or the
  config, an occupied export_dir, an option the format does not read.

  seq_length: resolve_seq_length's; normalize: None or "nfc"; litert: --litert's value
  when the user gave it, else None.
  """
  if seq_length is not None:
    modeling_config.check_max_seq_length(seq_length, config, flag="seq_length")
  tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
  vocab = tokenization.load_vocab(vocab_file)
  model_config.check_vocab_matches_config(len(vocab), config, vocab_file)
  tfhub_modules.check_export_dir(export_dir, overwrite)
  if normalize and not writers.reads(export_format, "normalize"):
    raise errors.UserError(
        f"--normalize={normalize} with --format={export_format}: its "
        "tokenizer has no NFC step, so the export would tokenize decomposed text "
        "differently from training; normalise the text before it reaches the tokenizer "
        "or export --format=tfhub")
  if litert not in (None, "none") and not writers.reads(export_format, "litert"):
    raise errors.UserError(
        f"--litert={litert} with --format={export_format}: the LiteRT models are "
        "the encoder's of --format=tfhub (export_dir/litert beside encoder/)")


def source(config, init_checkpoint, vocab_file, do_lower_case, seq_length=None,
           normalize=None, litert="none", log=None):
  """The writers' Source of a checkpoint: its weights are read when a writer asks, as the
  whole model it holds (load_for_export) or its encoder alone (load_encoder)."""
  return writers.Source(
      config, init_checkpoint, vocab_file, do_lower_case,
      load_model=functools.partial(load_for_export, config, init_checkpoint),
      load_encoder=functools.partial(load_encoder, config, init_checkpoint, log),
      seq_length=seq_length, normalize=normalize, litert=litert)


