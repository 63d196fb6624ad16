"""The tiny odd-sized BERT config every test uses, written out once.

hidden 32, intermediate 37 (odd, so no shape coincides with another), 3 layers, 4 heads,
with the key order and values of Google's bert_config.json. Tests pass what differs (the
vocabulary size always; max_position_embeddings, dropout, ... where the test needs its
own): `tiny_config(vocab_size, **overrides)` -> modeling.BertConfig,
`tiny_config_dict(...)` -> the JSON dict, `write_tiny_config(path, ...)` -> the file.
`make_tiny_model(directory, **overrides)`: that config for a vocabulary of 2000 words
beside the first 2000 lines of the shared uncased vocabulary (skips without ../shared).
"""
import json
import os

# The shape keys alone (for helpers that take only the encoder's shape).
TINY_SHAPE = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
              "intermediate_size": 37}


def tiny_config_dict(vocab_size, **overrides):
  """The tiny config as a bert_config.json dict (every key, Google's order)."""
  config = {"vocab_size": vocab_size, **TINY_SHAPE, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}
  unknown = sorted(set(overrides) - set(config))
  if unknown:
    raise KeyError(f"not a BERT config key: {unknown}")
  config.update(overrides)
  return config


def tiny_config(vocab_size, **overrides):
  """The tiny config as a modeling.BertConfig."""
  # Imported here: the dict helpers serve tests that never load TensorFlow themselves.
  from bert import modeling  # pylint: disable=g-import-not-at-top
  return modeling.BertConfig(**tiny_config_dict(vocab_size, **overrides))


def write_tiny_config(path, vocab_size, **overrides):
  """Writes the tiny config as JSON at `path`; returns str(path)."""
  with open(path, "w", encoding="utf-8") as handle:
    json.dump(tiny_config_dict(vocab_size, **overrides), handle)
  return str(path)


def make_tiny_model(directory, **overrides):
  """bert_config.json (hidden 32, 3 layers, or what `overrides` says) + the first 2000
  lines of the uncased vocab."""
  # Imported here: processes outside pytest (dist_pretraining_helper.py) import this
  # module, and conftest is pytest's.
  from conftest import shared_path  # pylint: disable=g-import-not-at-top
  os.makedirs(directory, exist_ok=True)
  with open(shared_path("vocab", "uncased_vocab.txt"), encoding="utf-8") as handle:
    vocab = [next(handle) for _ in range(2000)]
  with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as handle:
    handle.writelines(vocab)
  with open(os.path.join(directory, "bert_config.json"), "w", encoding="utf-8") as handle:
    json.dump(tiny_config_dict(2000, **overrides), handle)
  return directory
