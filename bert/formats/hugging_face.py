"""Hugging Face BERT checkpoints: Google's variable names to theirs, the writer, and the
reader that loads theirs.

`export` is export_encoder.py --format=huggingface's writer: a directory that
transformers loads with `from_pretrained`, the weights under transformers' own names
(dense kernels transposed to torch's [out, in]), and the head the checkpoint holds under
the class that `pipeline()` and `AutoModelFor*` pick. docs/export_encoder.md lists the
files and the class each head gets; `google_to_hugging_face_name` and its exact inverse
map the names."""

import errno
import json
import re

from absl import logging
import numpy as np
from safetensors.numpy import load as load_bytes
from safetensors.numpy import save as save_bytes

from bert import modeling
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import output_lock
from bert.utils import errors
from bert.utils import input_checks

WEIGHTS_NAME, CONFIG_NAME = "model.safetensors", "config.json"
VOCAB_NAME, TOKENIZER_CONFIG_NAME = "vocab.txt", "tokenizer_config.json"
LAYER_NORM_EPS = 1e-12  # the original's LayerNorm epsilon

# Our activation name -> Hugging Face's name for the same function.
_ACTIVATIONS_TO_HF = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu",
                      "tanh": "tanh", "linear": "linear"}
_EMBEDDINGS = ("word_embeddings", "position_embeddings", "token_type_embeddings")
_MLM, _NSP = "cls/predictions/", "cls/seq_relationship/"
# Every weight of a head: a checkpoint holding only some of them is refused.
_HEAD_WEIGHTS = {
    _MLM: ("cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
           "cls/predictions/transform/LayerNorm/gamma",
           "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias"),
    _NSP: ("cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias"),
}
_ARCHITECTURES = {(True, True): "BertForPreTraining", (True, False): "BertForMaskedLM",
                  (False, True): "BertForNextSentencePrediction",
                  (False, False): "BertModel"}
# Fine-tuned heads (Task.head_info()["head"]) -> (architecture, our weight prefix, their
# module, keeps the pooler).
_TASK_HEADS = {
    "classifier": ("BertForSequenceClassification", "", "classifier", True),
    "regression": ("BertForSequenceClassification", "", "classifier", True),
    "multi_label": ("BertForSequenceClassification", "", "classifier", True),
    "token_classification": ("BertForTokenClassification", "", "classifier", False),
    "multiple_choice": ("BertForMultipleChoice", "", "classifier", True),
    "squad": ("BertForQuestionAnswering", "cls/squad/", "qa_outputs", False),
}
_PROBLEM_TYPES = {"classifier": "single_label_classification", "regression": "regression",
                  "multi_label": "multi_label_classification"}
# Heads with no Hugging Face counterpart: why, in one phrase.
REFUSED_HEADS = {
    "feature_ner": "feature-based NER's BiLSTM tagger over frozen BERT activations has no "
                   "Hugging Face counterpart (export its encoder with --format=tfhub, or "
                   "fine-tune with run_ner.py --mode=finetune for a BertForTokenClassification)",
}
_SPECIAL_TOKENS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                   "cls_token": "[CLS]", "mask_token": "[MASK]"}


# Hugging Face config keys that map onto BertConfig's.
_HF_CONFIG_KEYS = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "initializer_range"}
# Hugging Face's "gelu" is the exact erf form; its "gelu_new" is the original's tanh form.
_HF_ACTIVATIONS = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                   "gelu_fast": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}


# --------------------------------------------------------------------------- reading


def config_from_hugging_face(data, source="config.json"):
  model_type = data.get("model_type", "bert")
  if model_type not in ("bert",):
    raise errors.UserError(f"{source}: model_type {model_type!r} is not a BERT model")
  act = data.get("hidden_act", "gelu")
  if act not in _HF_ACTIVATIONS:
    raise errors.UserError(f"{source}: unsupported hidden_act {act!r}")
  values = {k: v for k, v in data.items() if k in _HF_CONFIG_KEYS}
  values["hidden_act"] = _HF_ACTIVATIONS[act]
  return modeling.BertConfig.from_dict(values, source=source)


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
  try:
    raw = load_bytes(file_io.read_bytes(path))
  except Exception as exc:  # safetensors raises its own error types for bad files
    raise errors.UserError(f"{path}: not a readable safetensors file ({exc})") from None
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


# --------------------------------------------------------------------------- names


def google_to_hugging_face_name(name, head=None):
  """Google TF1 name -> Hugging Face BertForPreTraining name, or None when it has none.

  head: a fine-tuned head kind (see _TASK_HEADS): its output_weights/output_bias map to
  the task class's classifier.* / qa_outputs.*.

  bert/encoder/layer_3/attention/self/query/kernel -> bert.encoder.layer.3.attention.self
  .query.weight; LayerNorm gamma/beta -> weight/bias; cls/predictions/output_bias ->
  cls.predictions.bias; cls/seq_relationship/output_{weights,bias} -> .weight/.bias.
  Task heads this project adds (classifier `output_weights`, `cls/squad/...`) have no
  BertForPreTraining name: None.
  """
  if head in _TASK_HEADS:
    _, prefix, module, _ = _TASK_HEADS[head]
    leaf = {f"{prefix}output_weights": "weight", f"{prefix}output_bias": "bias"}.get(name)
    if leaf:
      return f"{module}.{leaf}"
  if name.startswith("bert/embeddings/") and name.split("/")[-1] in _EMBEDDINGS:
    return "bert.embeddings." + name.split("/")[-1] + ".weight"
  if name == "cls/predictions/output_bias":
    return "cls.predictions.bias"
  if name.startswith(_NSP):
    leaf = {"output_weights": "weight", "output_bias": "bias"}.get(name[len(_NSP):])
    return "cls.seq_relationship." + leaf if leaf else None
  if not name.startswith(("bert/embeddings/LayerNorm/", "bert/encoder/layer_",
                          "bert/pooler/", "cls/predictions/transform/")):
    return None
  leaf = {"kernel": "weight", "bias": "bias", "gamma": "weight",
          "beta": "bias"}.get(name.rsplit("/", 1)[-1])
  if leaf is None:
    return None
  path = re.sub(r"/layer_(\d+)/", r"/layer/\1/", name.rsplit("/", 1)[0])
  return path.replace("/", ".") + "." + leaf


def _is_dense_kernel(name):
  return name.endswith("/kernel")


def hugging_face_state_dict(tensors, head=None):
  """{google_name: float array} -> {hf_name: float32 C-contiguous np.ndarray}.

  Dense kernels [in, out] become torch Linear weights [out, in]; embeddings, LayerNorm
  vectors and the next-sentence weights [2, hidden] keep their layout. A name without a
  Hugging Face counterpart is a ValueError (choose what to export before calling).
  """
  state = {}
  for name, value in tensors.items():
    hf_name = google_to_hugging_face_name(name, head)
    if hf_name is None:
      raise errors.UserError(
          f"{name}: no Hugging Face BertForPreTraining weight corresponds to it")
    value = np.asarray(value, dtype=np.float32)
    if _is_dense_kernel(name):
      value = value.T
    state[hf_name] = np.ascontiguousarray(value)
  return state


def exportable_names(names, head_info=None):
  """The names Hugging Face has a place for, and the architecture they fill.

  names: the Google names of the weights at hand (the encoder's and any heads').
  head_info: what a fine-tuned head means (Task.head_info()), or None (pretraining heads
  or the encoder alone, decided by the names present).
  Returns (sorted exportable names, architecture). ValueError for a head that is only
  partly present, which would otherwise load half random; errors.UserError for a
  head with no Hugging Face counterpart.
  """
  names = set(names)
  head = (head_info or {}).get("head")
  if (head_info or {}).get("ltr"):
    raise errors.UserError(
        "cannot export a left-to-right (--ltr) model to Hugging Face: its attention is "
        "causal, and Hugging Face's BERT classes attend in both directions, so they would "
        "compute other numbers than this model; use it with this project's scripts (--ltr)")
  if head in REFUSED_HEADS:
    raise errors.UserError(f"cannot export a {head} head to Hugging Face: "
                                 f"{REFUSED_HEADS[head]}")
  if head in _TASK_HEADS:
    architecture, prefix, _, pooler = _TASK_HEADS[head]
    required = (f"{prefix}output_weights", f"{prefix}output_bias")
    missing = [n for n in required if n not in names]
    if missing:
      raise ValueError(f"the checkpoint's {head} head lacks {missing[0]}")
    keep = sorted(n for n in names if n in required or (
        n.startswith("bert/") and google_to_hugging_face_name(n) is not None
        and (pooler or not n.startswith("bert/pooler/"))))
    return keep, architecture
  if head not in (None, "pretraining"):
    raise errors.UserError(f"head {head!r}: no Hugging Face export is known for it")
  present = {}
  for prefix, required in _HEAD_WEIGHTS.items():
    have = [n for n in required if n in names]
    if have and len(have) != len(required):
      missing = sorted(set(required) - set(have))[0]
      raise errors.UserError(
          f"the checkpoint has {have[0]} but not {missing}: an incomplete "
          f"{prefix.rstrip('/')} head")
    present[prefix] = bool(have)
  architecture = _ARCHITECTURES[(present[_MLM], present[_NSP])]
  keep = sorted(n for n in names if google_to_hugging_face_name(n) is not None
                and (not n.startswith("cls/") or present[_MLM if n.startswith(_MLM)
                                                         else _NSP]))
  return keep, architecture


def model_weights(model, names=None):
  """{google_name: np.ndarray} of `model`'s weights (all, or only `names`)."""
  variables = modeling.google_variable_map(model)
  names = sorted(variables) if names is None else names
  return {name: np.asarray(variables[name].numpy()) for name in names}


# --------------------------------------------------------------------------- configs


def head_labels(head_info):
  """{"id2label", "label2id", "num_labels", "problem_type"} config entries of a head."""
  head = (head_info or {}).get("head")
  values = {}
  labels = (head_info or {}).get("labels")
  if head in ("classifier", "multi_label", "token_classification") and labels:
    labels = [str(label) for label in labels]
    if input_checks.first_repeat(labels):
      raise errors.UserError(f"the run's label list repeats a label: {labels}")
    values["id2label"] = {str(i): label for i, label in enumerate(labels)}
    values["label2id"] = {label: i for i, label in enumerate(labels)}
    values["num_labels"] = len(labels)
  elif head == "regression":
    values.update(id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}, num_labels=1)
  if head in _PROBLEM_TYPES:
    values["problem_type"] = _PROBLEM_TYPES[head]
  if head == "multiple_choice":
    values["num_choices"] = int(head_info.get("num_choices", 0)) or None
  return {k: v for k, v in values.items() if v is not None}


def hugging_face_config(config, architecture="BertModel", pad_token_id=0, head_info=None):
  """modeling.BertConfig -> the dict of a Hugging Face BertConfig with the same numbers
  (and, for a fine-tuned head, its labels and problem type: head_labels)."""
  if config.hidden_act not in _ACTIVATIONS_TO_HF:
    raise errors.UserError(
        f"hidden_act {config.hidden_act!r} has no Hugging Face equivalent")
  known = set(_ARCHITECTURES.values()) | {v[0] for v in _TASK_HEADS.values()}
  if architecture not in known:
    raise ValueError(f"unknown architecture {architecture!r}")
  values = config.to_dict()
  values.update({
      "architectures": [architecture], "model_type": "bert",
      "hidden_act": _ACTIVATIONS_TO_HF[config.hidden_act],
      "layer_norm_eps": LAYER_NORM_EPS, "pad_token_id": int(pad_token_id),
      "classifier_dropout": None, "tie_word_embeddings": True, "dtype": "float32",
      "is_decoder": False, "add_cross_attention": False, "use_cache": True})
  values.update(head_labels(head_info))
  if head_info and head_info.get("task"):
    values["finetuning_task"] = str(head_info["task"])
  return dict(sorted(values.items()))


def tokenizer_config(do_lower_case, model_max_length):
  """tokenizer_config.json for BertTokenizer: the original's FullTokenizer settings.

  Accents are stripped exactly when lower-casing (strip_accents None), CJK characters
  are split (tokenize_chinese_chars), as the original BasicTokenizer does.
  """
  return {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(do_lower_case),
          "strip_accents": None, "tokenize_chinese_chars": True,
          "model_max_length": int(model_max_length), **_SPECIAL_TOKENS}


# --------------------------------------------------------------------------- writing


def _check_target(export_dir, overwrite):
  if file_io.isfile(export_dir):
    raise errors.UserError(f"{export_dir}: exists and is not a directory")
  if (file_io.isdir(export_dir) and file_io.listdir(export_dir) and not overwrite and
      not atomic_output.left_half_moved(export_dir, export_dir, overwrite_flag="--overwrite")):
    raise errors.UserError(f"{export_dir}: exists and is not empty; choose a new "
                                 "directory or pass --overwrite to replace it")


def _write_json(path, obj):
  with file_io.open(path, "w", encoding="utf-8", newline="\n") as handle:
    json.dump(obj, handle, indent=2, ensure_ascii=False)
    handle.write("\n")


def write_hugging_face(export_dir, tensors, config, vocab_file, do_lower_case,
                       overwrite=False, log=None, head_info=None):
  """Writes a Hugging Face BERT directory (weights, config, vocabulary, tokenizer config).

  tensors: {google_name: array} of the weights to export: the whole encoder and the heads
  to include (see exportable_names). config: modeling.BertConfig. Everything is written
  under a temporary directory beside export_dir, renamed into place when complete; an
  existing non-empty export_dir is refused unless `overwrite`. `log`: a function taking a
  %-format and arguments (absl's logging.info). head_info: what a fine-tuned head means
  (finetune.Task.head_info; docs/export_encoder.md lists the class each head gets).
  Returns the architecture written.
  """
  log = log or (lambda *args: None)
  names, architecture = exportable_names(tensors, head_info)
  if set(names) != set(tensors):
    extra = sorted(set(tensors) - set(names))[0]
    raise errors.UserError(
        f"{extra}: no Hugging Face {architecture} weight corresponds to it")
  state = hugging_face_state_dict(tensors, (head_info or {}).get("head"))
  _check_shapes(state, config)
  vocab = [line.strip() for _, line in input_checks.read_text_lines(vocab_file)]
  pad_token_id = vocab.index("[PAD]") if "[PAD]" in vocab else 0
  # A full disk is named below, where the weights are written (an OSError naming
  # export_dir).
  with output_lock.writing_export(export_dir, lambda: _check_target(export_dir, overwrite),
                                  name_full_disk=False) as tmp:
    file_io.makedirs(tmp)
    log("Writing %d weights (%s) to %s", len(state), architecture, WEIGHTS_NAME)
    weights_file = paths.join(tmp, WEIGHTS_NAME)
    try:
      # Serialized in memory and written as one file, so that a URL takes it too (and
      # the file gets the mode of any file we write, not safetensors' private 0600).
      file_io.write_bytes(weights_file, save_bytes(state, metadata={"format": "pt"}))
    except OSError as exc:
      if exc.errno == errno.ENOSPC:  # named by the export, not its temporary
        raise OSError(errno.ENOSPC, "No space left on device", export_dir) from None
      raise
    except Exception as exc:  # safetensors' SafetensorError: not an OSError
      if "No space left" in str(exc) or "StorageFull" in str(exc):
        raise OSError(errno.ENOSPC, "No space left on device", export_dir) from None
      raise
    _write_json(paths.join(tmp, CONFIG_NAME),
                hugging_face_config(config, architecture, pad_token_id, head_info))
    # The vocabulary as it is, less a byte-order mark (not part of the first token).
    file_io.write_bytes(paths.join(tmp, VOCAB_NAME),
                        file_io.decode_text(file_io.read_bytes(vocab_file)).encode("utf-8"))
    _write_json(paths.join(tmp, TOKENIZER_CONFIG_NAME),
                tokenizer_config(do_lower_case, config.max_position_embeddings))
  return architecture


def export(export_dir, source, overwrite=False, log=None, warn=None):
  """export_encoder.py --format=huggingface: the encoder and head a checkpoint holds
  (source: a writers.Source) as a Hugging Face model directory.

  Returns (architecture, names written, names not written). Every checkpoint weight not
  written is named through `warn` (absl logging.warning by default): nothing is dropped
  silently.
  """
  log = log or logging.info
  warn = warn or logging.warning
  loaded = source.load_model()
  variables = modeling.google_variable_map(loaded.model)
  held = loaded.weight_names
  names, architecture = exportable_names([n for n in held if n in variables],
                                         loaded.head_info)
  if loaded.head_info:
    log("The checkpoint holds %s", loaded.description)
  log("Exporting %d weights as Hugging Face %s", len(names), architecture)
  left_out = sorted(set(held) - set(names))
  if left_out:
    warn("Not exported (no place in Hugging Face's %s): %s", architecture,
         ", ".join(left_out))
  tensors = {name: variables[name].numpy() for name in names}
  write_hugging_face(export_dir, tensors, source.config, source.vocab_file,
                     source.do_lower_case, overwrite=overwrite, log=log,
                     head_info=loaded.head_info)
  return architecture, names, left_out


def _check_shapes(state, config):
  """Refuses weights whose shapes contradict the config (they would not load)."""
  expected = {
      "bert.embeddings.word_embeddings.weight": (config.vocab_size, config.hidden_size),
      "bert.embeddings.position_embeddings.weight": (config.max_position_embeddings,
                                                     config.hidden_size),
      "bert.embeddings.token_type_embeddings.weight": (config.type_vocab_size,
                                                       config.hidden_size)}
  for name, shape in expected.items():
    if name not in state:
      raise errors.UserError(f"{name}: missing; the encoder's weights are incomplete")
    if tuple(state[name].shape) != shape:
      raise errors.UserError(
          f"{name}: shape {list(state[name].shape)} does not fit the config "
          f"({list(shape)})")
  layers = {int(m.group(1)) for m in map(re.compile(r"bert\.encoder\.layer\.(\d+)\.").match,
                                         state) if m}
  if layers != set(range(config.num_hidden_layers)):
    raise errors.UserError(
        f"the weights hold encoder layers {sorted(layers)}, the config "
        f"num_hidden_layers={config.num_hidden_layers}")
