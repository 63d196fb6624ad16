"""Checkpoint I/O: Google's TF1 checkpoints, our TF2 checkpoints, Hugging Face safetensors.

Middle floor. Every loader maps onto the Google TF1 variable names that
`modeling.google_variable_map(model)` gives each weight, so one table of names serves
all three formats:

  * Google TF1 name-based checkpoints (`.../bert_model.ckpt` prefix): read by name with
    `tf.train.load_checkpoint`, every shape checked;
  * our TF2 object-based checkpoints (written by training.py as
    `tf.train.Checkpoint(step=..., model=..., encoder=..., optimizer=...)`): the encoder is
    restored (heads differ between tasks; a finished run also writes the Google layout);
  * Hugging Face BERT checkpoints (`model.safetensors`, or a directory holding it with
    its `config.json`): torch `Linear.weight` [out, in] is transposed to a kernel [in, out].

`save_google_checkpoint` writes a model back out in Google's layout (same names), so tools
written for the original can read what we train.
"""

import json
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from absl import logging

import modeling
import script_utils

GOOGLE, OURS, HUGGING_FACE = "google_tf1", "tf2", "hugging_face"

_HF_CONFIG_KEYS = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "initializer_range"}
# Hugging Face's "gelu" is the exact erf form; its "gelu_new" is the original's tanh form.
_HF_ACTIVATIONS = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                   "gelu_fast": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}


# --------------------------------------------------------------------------- configs


def load_bert_config(path):
  """Reads Google's bert_config.json, or a Hugging Face BERT config.json.

  A Hugging Face config is recognised by its `model_type`/`architectures` keys; its
  activation name is translated (HF "gelu" = our "gelu_exact").
  """
  script_utils.check_input_file(path, "bert_config_file")
  try:
    with open(path, "r", encoding="utf-8") as handle:
      data = json.load(handle)
  except json.JSONDecodeError as exc:
    raise ValueError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                     f"{exc.msg}") from None
  except UnicodeDecodeError:
    raise ValueError(f"{path}: not valid UTF-8") from None
  if isinstance(data, dict) and ("model_type" in data or "architectures" in data):
    return config_from_hugging_face(data, source=path)
  return modeling.BertConfig.from_dict(data, source=path)


def config_from_hugging_face(data, source="config.json"):
  model_type = data.get("model_type", "bert")
  if model_type not in ("bert",):
    raise ValueError(f"{source}: model_type {model_type!r} is not a BERT model")
  act = data.get("hidden_act", "gelu")
  if act not in _HF_ACTIVATIONS:
    raise ValueError(f"{source}: unsupported hidden_act {act!r}")
  values = {k: v for k, v in data.items() if k in _HF_CONFIG_KEYS}
  values["hidden_act"] = _HF_ACTIVATIONS[act]
  return modeling.BertConfig.from_dict(values, source=source)


def check_vocab_matches_config(vocab_size, config, vocab_file="vocab_file"):
  """Fails when the vocabulary and the config disagree: ids would index the wrong rows."""
  if vocab_size != config.vocab_size:
    raise ValueError(
        f"{vocab_file}: {vocab_size} tokens, but the BERT config says vocab_size="
        f"{config.vocab_size}; use the vocab.txt that came with the checkpoint")


def check_max_seq_length(max_seq_length, config, flag="max_seq_length"):
  if max_seq_length > config.max_position_embeddings:
    raise ValueError(
        f"--{flag}={max_seq_length} is larger than the model's max_position_embeddings="
        f"{config.max_position_embeddings}; lower --{flag}")
  if max_seq_length < 3:
    raise ValueError(f"--{flag}={max_seq_length} leaves no room for [CLS] and [SEP]")


# --------------------------------------------------------------------------- detection


def _safetensors_file(path):
  if os.path.isdir(path):
    candidate = os.path.join(path, "model.safetensors")
    return candidate if os.path.isfile(candidate) else None
  return path if path.endswith(".safetensors") else None


def resolve_checkpoint(path):
  """(kind, path) for a checkpoint given as a prefix, a directory or a safetensors file."""
  if not path:
    raise ValueError("no checkpoint path given")
  st = _safetensors_file(path)
  if st:
    if not os.path.isfile(st):
      raise FileNotFoundError(2, "no such file", st)
    return HUGGING_FACE, st
  prefix = path
  if os.path.isdir(path):
    prefix = tf.train.latest_checkpoint(path)
    if prefix is None:
      google = os.path.join(path, "bert_model.ckpt")
      if os.path.exists(google + ".index"):
        prefix = google
      else:
        raise ValueError(f"{path}: no checkpoint in this directory (no 'checkpoint' file, "
                         "bert_model.ckpt.index or model.safetensors)")
  if not tf.io.gfile.exists(prefix + ".index"):
    raise ValueError(f"{path}: not a checkpoint ({prefix}.index does not exist); pass the "
                     "prefix, e.g. .../bert_model.ckpt")
  try:
    names = dict(tf.train.list_variables(prefix))
  except (tf.errors.OpError, ValueError) as exc:
    raise ValueError(f"{prefix}: unreadable checkpoint ({exc})") from None
  if any(n.startswith("bert/") or n.startswith("cls/") for n in names):
    return GOOGLE, prefix
  if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
    return OURS, prefix
  raise ValueError(f"{prefix}: neither a Google BERT checkpoint (no bert/* variables) "
                   "nor one of ours")


# --------------------------------------------------------------------------- loading


_LAYER_RE = re.compile(r"^bert/encoder/layer_(\d+)/")


def _assign_by_name(model, tensors, source, strict_encoder=True):
  """Assigns {google_name: np.ndarray} to the model's variables; returns the report."""
  targets = modeling.google_variable_map(model)
  loaded, mismatched = [], []
  for name, variable in targets.items():
    if name not in tensors:
      continue
    value = tensors[name]
    if tuple(value.shape) != tuple(variable.shape):
      mismatched.append(f"{name}: checkpoint {list(value.shape)} vs model "
                        f"{list(variable.shape)}")
      continue
    variable.assign(value.astype(variable.dtype))
    loaded.append(name)
  if mismatched:
    raise ValueError(f"{source}: {len(mismatched)} shape mismatch(es) with the BERT config, "
                     f"first: {mismatched[0]}; use the bert_config.json of this checkpoint")
  missing = sorted(set(targets) - set(loaded))
  ignored = {"global_step"}
  unused = sorted(n for n in tensors if n not in targets and n not in ignored
                  and not n.endswith(("/adam_m", "/adam_v")) and "/lamb_" not in n)
  if strict_encoder and loaded:
    bad_missing = [n for n in missing if n.startswith("bert/")]
    bad_unused = [n for n in unused if _LAYER_RE.match(n) or n.startswith("bert/")]
    if bad_missing or bad_unused:
      config = modeling.find_encoder(model).config
      raise ValueError(
          f"{source}: the checkpoint does not fit the BERT config "
          f"(num_hidden_layers={config.num_hidden_layers}): "
          + (f"missing {bad_missing[0]}" if bad_missing else f"extra {bad_unused[0]}")
          + "; use the bert_config.json of this checkpoint")
  if not loaded:
    raise ValueError(f"{source}: no variable of the checkpoint matches the model")
  return {"format": None, "path": source, "loaded": sorted(loaded), "missing": missing,
          "unused": unused}


def _log_report(report):
  logging.info("Loaded %d variables from %s (%s)", len(report["loaded"]), report["path"],
               report["format"])
  for name in report["loaded"]:
    logging.debug("  init from checkpoint: %s", name)
  if report["missing"]:
    logging.info("Not in the checkpoint (freshly initialised): %s",
                 ", ".join(report["missing"]))
  if report["unused"]:
    logging.info("In the checkpoint but unused by this model: %s",
                 ", ".join(report["unused"]))


def read_google_checkpoint(prefix):
  reader = tf.train.load_checkpoint(prefix)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def hugging_face_to_google_name(name):
  """Maps one Hugging Face BertModel/BertForPreTraining weight name to Google's, or None."""
  name = re.sub(r"^(bert\.|model\.)", "", name)
  if name.endswith(("position_ids", "token_type_ids")):
    return None  # index buffers, not weights
  direct = {
      "embeddings.word_embeddings.weight": "bert/embeddings/word_embeddings",
      "embeddings.position_embeddings.weight": "bert/embeddings/position_embeddings",
      "embeddings.token_type_embeddings.weight": "bert/embeddings/token_type_embeddings",
      "cls.predictions.bias": "cls/predictions/output_bias",
      "cls.predictions.decoder.bias": "cls/predictions/output_bias",
      "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
      "cls.seq_relationship.bias": "cls/seq_relationship/output_bias",
  }
  if name in direct:
    return direct[name]
  name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
      "LayerNorm.bias", "LayerNorm.beta")
  name = re.sub(r"\.weight$", ".kernel", name)
  name = re.sub(r"^encoder\.layer\.(\d+)\.", r"encoder.layer_\1.", name)
  if name.startswith(("embeddings.", "encoder.", "pooler.")):
    return "bert/" + name.replace(".", "/")
  if name.startswith("cls.predictions.transform."):
    return name.replace(".", "/")
  return None


def read_hugging_face_checkpoint(path):
  """{google_name: np.ndarray} from a Hugging Face safetensors file."""
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  try:
    raw = load_file(path)
  except Exception as exc:  # safetensors raises its own error types for bad files
    raise ValueError(f"{path}: not a readable safetensors file ({exc})") from None
  tensors = {}
  for hf_name, value in raw.items():
    name = hugging_face_to_google_name(hf_name)
    if name is None:
      continue
    # torch Linear stores [out, in]; Google's dense kernels are [in, out]. The
    # [num_outputs, H] head weights already match Google's layout.
    if name.endswith("/kernel"):
      value = value.T
    tensors[name] = np.ascontiguousarray(value)
  if "cls/predictions/output_bias" not in tensors and any(
      k.endswith("predictions.decoder.weight") for k in raw):
    pass  # decoder weight is tied to the embeddings: nothing more to load
  return tensors


def load_checkpoint(model, path, strict_encoder=True):
  """Loads a checkpoint of any supported kind into `model` (encoder and present heads).

  Returns a report dict: format, path, loaded / missing / unused variable names (logged,
  as the original did). ValueError with a clear message on any shape mismatch, or on an
  encoder that does not fit the config (missing or extra layers).
  """
  kind, resolved = resolve_checkpoint(path)
  if kind == GOOGLE:
    report = _assign_by_name(model, read_google_checkpoint(resolved), resolved,
                             strict_encoder)
  elif kind == HUGGING_FACE:
    report = _assign_by_name(model, read_hugging_face_checkpoint(resolved), resolved,
                             strict_encoder)
  else:
    report = _restore_ours(model, resolved)
  report["format"] = kind
  _log_report(report)
  return report


def _restore_ours(model, prefix):
  encoder = modeling.find_encoder(model)
  names = dict(tf.train.list_variables(prefix))
  if not any(n.startswith("encoder/") for n in names):
    raise ValueError(f"{prefix}: this TF2 checkpoint holds no 'encoder' object")
  status = tf.train.Checkpoint(encoder=encoder).restore(prefix)
  try:
    status.assert_existing_objects_matched()
  except AssertionError as exc:
    raise ValueError(f"{prefix}: the checkpoint's encoder does not fit the BERT config "
                     f"({str(exc).splitlines()[0][:200]})") from None
  status.expect_partial()
  encoder_names = sorted(encoder.google_variables())
  all_names = modeling.google_variable_map(model)
  return {"format": None, "path": prefix, "loaded": encoder_names,
          "missing": sorted(set(all_names) - set(encoder_names)), "unused": []}


# --------------------------------------------------------------------------- saving


def save_google_checkpoint(model, prefix, global_step=None, extra=None):
  """Writes `model` as a Google-layout TF1 checkpoint at `prefix` (atomically).

  Produces prefix.index, prefix.data-00000-of-00001, prefix.meta and a `checkpoint`
  state file, readable by the original code's `tf.train.init_from_checkpoint` and by
  `load_checkpoint`. `extra` adds {name: np.ndarray} (e.g. optimizer slots).
  """
  values = {name: np.asarray(var.numpy()) for name, var in
            modeling.google_variable_map(model).items()}
  if extra:
    values.update({k: np.asarray(v) for k, v in extra.items()})
  if global_step is not None:
    values["global_step"] = np.asarray(global_step, dtype=np.int64)
  directory, basename = os.path.split(os.path.abspath(prefix))
  os.makedirs(directory, exist_ok=True)
  # Written into a temporary directory beside the target, then moved into place data
  # first and index last: a reader never sees an index pointing at missing data.
  tmp_dir = tempfile.mkdtemp(prefix=f".{basename}.saving-", dir=directory)
  try:
    graph = tf.Graph()
    with graph.as_default():
      feeds, variables = {}, {}
      for name, value in sorted(values.items()):
        # Initialised through placeholders: constants would be copied into the .meta.
        placeholder = tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape)
        variables[name] = tf.compat.v1.Variable(placeholder, name=name)
        feeds[placeholder] = value
      saver = tf.compat.v1.train.Saver(var_list=variables, max_to_keep=1)
      with tf.compat.v1.Session(graph=graph) as session:
        session.run(tf.compat.v1.global_variables_initializer(), feed_dict=feeds)
        saver.save(session, os.path.join(tmp_dir, basename), write_meta_graph=True,
                   write_state=False)
    for name in sorted(os.listdir(tmp_dir), key=lambda n: n.endswith(".index")):
      os.replace(os.path.join(tmp_dir, name), os.path.join(directory, name))
  finally:
    shutil.rmtree(tmp_dir, ignore_errors=True)
  with script_utils.atomic_open(os.path.join(directory, "checkpoint")) as handle:
    handle.write(f'model_checkpoint_path: "{basename}"\n'
                 f'all_model_checkpoint_paths: "{basename}"\n')
  return prefix
