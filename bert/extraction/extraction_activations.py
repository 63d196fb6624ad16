"""Feature extraction, as the original's extract_features.py: text lines in, JSON lines of
the encoder's activations out.

One example a line (`text_a` or `text_a ||| text_b`), converted as the original did, is
written with the requested layers' activations for every real token, values rounded to
6 decimals, in the original's format:

  {"linex_index": 0, "features": [{"token": "[CLS]", "layers": [{"index": -1,
   "values": [...]}, ...]}, ...]}
"""

import collections
import json
import re
import time

from absl import logging
import numpy as np
import tensorflow as tf

from bert import modeling
from bert import modeling_config
from bert import tokenization
from bert.training import checkpoints
from bert.training import evaluation
from bert.training import model_config
from bert.utils import atomic_output
from bert.utils import output_lock
from bert.utils import progress
from bert.utils import errors
from bert.utils import input_checks

InputExample = collections.namedtuple("InputExample", ["unique_id", "text_a", "text_b"])
InputFeatures = collections.namedtuple(
    "InputFeatures", ["unique_id", "tokens", "input_ids", "input_mask", "input_type_ids"])

_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


def read_examples(input_file):
  """One InputExample per line, as the original (which strips each line; a blank line is
  an example of no text). A file without any line is a UserError: there is nothing to
  extract, and an empty output under the final name would look like a finished run."""
  examples = []
  for number, line in input_checks.read_text_lines(input_file):
    line = line.strip()
    match = _PAIR_RE.match(line)
    if match is None:
      examples.append(InputExample(number - 1, line, None))
    else:
      examples.append(InputExample(number - 1, match.group(1), match.group(2)))
  if not examples:
    raise errors.UserError(
        f"--input_file={input_file}: the file is empty; give one example a line "
        "('text_a' or 'text_a ||| text_b')")
  return examples


def convert_examples_to_features(examples, seq_length, tokenizer):
  """The original's conversion: [CLS] A [SEP] (B [SEP]), truncated to seq_length."""
  features = []
  for example in examples:
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    tokens, type_ids = tokenization.pack_tokens(tokenizer.tokenize(example.text_a),
                                                tokens_b, seq_length)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    features.append(InputFeatures(example.unique_id, tokens, input_ids, [1] * len(tokens),
                                  type_ids))
  return features


def parse_layers(text, num_layers):
  """'-1,-2' -> [-1, -2]; every index must name one of the encoder's layers."""
  try:
    indexes = [int(x) for x in text.split(",") if x.strip()]
  except ValueError:
    raise errors.UserError(
        f"--layers={text}: expected comma-separated integers such as -1,-2,-3,-4") from None
  if not indexes:
    raise errors.UserError("--layers is empty")
  for index in indexes:
    if not -num_layers <= index < num_layers:
      raise errors.UserError(
          f"--layers: {index} is out of range for a model with {num_layers} layers "
          f"(use -{num_layers}..{num_layers - 1})")
  return indexes


def _batches(features, batch_size):
  for start in range(0, len(features), batch_size):
    chunk = features[start:start + batch_size]
    width = max(len(f.input_ids) for f in chunk)

    def pad(rows):
      return np.array([r + [0] * (width - len(r)) for r in rows], dtype=np.int32)

    yield chunk, {"input_ids": pad([f.input_ids for f in chunk]),
                  "input_mask": pad([f.input_mask for f in chunk]),
                  "segment_ids": pad([f.input_type_ids for f in chunk])}


def extract(features, encoder, layer_indexes, batch_size, writer):
  """Runs the encoder over `features` and writes the original's JSON lines.

  encoder: a modeling.BertModel; layer_indexes: from parse_layers; writer: a text file.
  Each batch is padded to its own longest example (int32 [batch, longest]).
  """
  spec = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[{"input_ids": spec, "input_mask": spec,
                                 "segment_ids": spec}])
  def layers_of(inputs):
    outputs = encoder(inputs, training=False)["encoder_outputs"]
    return tf.stack([outputs[i] for i in layer_indexes], axis=0)

  done, last, rates = 0, time.time(), progress.Progress(len(features))
  for chunk, inputs in _batches(features, batch_size):
    values = layers_of(inputs).numpy()  # [layers, batch, seq, hidden]
    for row, feature in enumerate(chunk):
      tokens_json = []
      for position, token in enumerate(feature.tokens):
        layers_json = []
        for j, layer_index in enumerate(layer_indexes):
          layer = collections.OrderedDict()
          layer["index"] = layer_index
          layer["values"] = [round(float(x), 6) for x in values[j, row, position]]
          layers_json.append(layer)
        entry = collections.OrderedDict()
        entry["token"] = token
        entry["layers"] = layers_json
        tokens_json.append(entry)
      output = collections.OrderedDict()
      output["linex_index"] = feature.unique_id
      output["features"] = tokens_json
      writer.write(json.dumps(output) + "\n")
    done += len(chunk)
    rates.update(done)
    if time.time() - last >= evaluation.PROGRESS_EVERY_SECONDS or done == len(features):
      last = time.time()
      logging.info("%d/%d examples, %.1f examples/s, ETA %s", done, len(features),
                   rates.rate(), rates.eta())


def extract_file(input_file, output_file, vocab_file, do_lower_case, bert_config_file,
                 init_checkpoint, layers, max_seq_length, batch_size, normalize=None):
  """Reads input_file, writes output_file (atomically); returns the number of examples.

  The arguments are extract_features.py's flags of the same names (normalize: None or
  "nfc").
  """
  if batch_size <= 0:
    raise errors.UserError(f"--batch_size={batch_size} must be positive")
  config = model_config.load_bert_config(bert_config_file)
  modeling_config.check_max_seq_length(max_seq_length, config)
  tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case, normalize=normalize)
  model_config.check_vocab_matches_config(len(tokenizer.vocab), config, vocab_file)
  layer_indexes = parse_layers(layers, config.num_hidden_layers)
  examples = read_examples(input_file)
  pairs = [e for e in examples if e.text_b is not None]
  if pairs and config.type_vocab_size < 2:  # segment 1 has no embedding
    raise errors.UserError(
        f"{input_file}:{pairs[0].unique_id + 1}: the line is a pair ('text_a ||| text_b', "
        f"segment 1), but {bert_config_file} has type_vocab_size "
        f"{config.type_vocab_size}; give single texts or a config with type_vocab_size 2")
  features = convert_examples_to_features(examples, max_seq_length, tokenizer)
  # The output's place (its folder created, as every command's) before the model loads.
  atomic_output.prepare_output_file(output_file, "output_file", clean=False)
  # One run per output file from here on; a killed run's hidden temporary is removed.
  with output_lock.lock_output(output_file, "output_file", is_file=True):
    encoder = modeling.BertModel(config, dtype="float32")  # the original's numerics
    checkpoints.load_checkpoint(encoder, init_checkpoint)
    with errors.disk_full_names(output_file, "output_file"):
      with atomic_output.atomic_open(output_file) as writer:
        extract(features, encoder, layer_indexes, batch_size, writer)
  return len(features)
