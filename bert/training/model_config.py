"""A run's model configuration, checked before anything is built: the BERT config
(Google's bert_config.json or a Hugging Face config.json), and the vocabulary against it
(max_seq_length's rule is modeling_config.check_max_seq_length)."""

import json

from bert.formats import hugging_face
from bert import modeling
from bert.utils import file_io
from bert.utils import errors
from bert.utils import input_checks


def load_bert_config(path):
  """Reads Google's bert_config.json, or a Hugging Face BERT config.json.

  A Hugging Face config is recognised by its `model_type`/`architectures` keys; its
  activation name is translated (HF "gelu" = our "gelu_exact").
  """
  input_checks.check_input_file(path, "bert_config_file")
  try:
    with file_io.open_text(path, newline=None) as handle:
      data = json.loads(handle.read())
  except json.JSONDecodeError as exc:
    raise errors.UserError(
        f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
        f"{exc.msg}") from None
  except UnicodeDecodeError:
    raise errors.UserError(errors.not_utf8_message(path)) from None
  if isinstance(data, dict) and ("model_type" in data or "architectures" in data):
    return hugging_face.config_from_hugging_face(data, source=path)
  return modeling.BertConfig.from_dict(data, source=path)


def check_vocab_matches_config(vocab_size, config, vocab_file="vocab_file"):
  """Fails when the vocabulary and the config disagree: ids would index the wrong rows."""
  if vocab_size != config.vocab_size:
    raise errors.UserError(
        f"{vocab_file}: {vocab_size} tokens, but the BERT config says vocab_size="
        f"{config.vocab_size}; use the vocab.txt that came with the checkpoint")
