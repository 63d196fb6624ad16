"""Extract pre-computed feature vectors from BERT: the original's extract_features.py.

Reads one example a line (`text_a` or `text_a ||| text_b`), runs the encoder, and writes
one JSON line per example with the activations of the requested layers for every real
token ([CLS] and [SEP] included), values rounded to 6 decimals, in the original's format:

  {"linex_index": 0, "features": [{"token": "[CLS]", "layers": [{"index": -1,
   "values": [...]}, ...]}, ...]}

Example (the original README's command runs unchanged):

  python extract_features.py \
    --input_file=/tmp/input.txt --output_file=/tmp/output.jsonl \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
    --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

Batches are padded to their own longest example, not to max_seq_length: padded positions
get -10000 in the attention mask and so change nothing in the real tokens' values.
"""

import collections
import json
import re
import time

from absl import app
from absl import flags
from absl import logging

import flags_common
import script_utils

flags_common.define_model_flags(max_seq_length=128)
flags_common.define_tpu_flags()
flags_common.define_runtime_flags()
flags.DEFINE_string("input_file", None,
                    "Input text: one example per line, a pair as 'text_a ||| text_b'.")
flags.DEFINE_string("output_file", None, "Output JSON-lines file.")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma-separated encoder layers to output (-1 is the last).")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Accepted for compatibility with the original; lookups are gathers here.")
flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint"])

FLAGS = flags.FLAGS

InputExample = collections.namedtuple("InputExample", ["unique_id", "text_a", "text_b"])
InputFeatures = collections.namedtuple(
    "InputFeatures", ["unique_id", "tokens", "input_ids", "input_mask", "input_type_ids"])

_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


def read_examples(input_file):
  """One InputExample per line, as the original (which strips each line; a blank line is
  an example of no text). A file without any line is a UserError: there is nothing to
  extract, and an empty output under the final name would look like a finished run."""
  examples = []
  for number, line in script_utils.read_text_lines(input_file):
    line = line.strip()
    match = _PAIR_RE.match(line)
    if match is None:
      examples.append(InputExample(number - 1, line, None))
    else:
      examples.append(InputExample(number - 1, match.group(1), match.group(2)))
  if not examples:
    raise script_utils.UserError(
        f"--input_file={input_file}: the file is empty; give one example a line "
        "('text_a' or 'text_a ||| text_b')")
  return examples


def convert_examples_to_features(examples, seq_length, tokenizer, truncate_seq_pair):
  """The original's conversion: [CLS] A [SEP] (B [SEP]), truncated to seq_length."""
  features = []
  for example in examples:
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    if tokens_b:
      truncate_seq_pair(tokens_a, tokens_b, seq_length - 3)
    else:
      tokens_a = tokens_a[:seq_length - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    type_ids = [0] * len(tokens)
    if tokens_b:
      tokens += tokens_b + ["[SEP]"]
      type_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    features.append(InputFeatures(example.unique_id, tokens, input_ids, [1] * len(tokens),
                                  type_ids))
  return features


def parse_layers(text, num_layers):
  """'-1,-2' -> [-1, -2]; every index must name one of the encoder's layers."""
  try:
    indexes = [int(x) for x in text.split(",") if x.strip()]
  except ValueError:
    raise script_utils.UserError(
        f"--layers={text}: expected comma-separated integers such as -1,-2,-3,-4") from None
  if not indexes:
    raise script_utils.UserError("--layers is empty")
  for index in indexes:
    if not -num_layers <= index < num_layers:
      raise script_utils.UserError(
          f"--layers: {index} is out of range for a model with {num_layers} layers "
          f"(use -{num_layers}..{num_layers - 1})")
  return indexes


def _batches(features, batch_size):
  import numpy as np  # pylint: disable=g-import-not-at-top
  for start in range(0, len(features), batch_size):
    chunk = features[start:start + batch_size]
    width = max(len(f.input_ids) for f in chunk)

    def pad(rows):
      return np.array([r + [0] * (width - len(r)) for r in rows], dtype=np.int32)

    yield chunk, {"input_ids": pad([f.input_ids for f in chunk]),
                  "input_mask": pad([f.input_mask for f in chunk]),
                  "segment_ids": pad([f.input_type_ids for f in chunk])}


def extract(features, encoder, layer_indexes, batch_size, writer):
  """Runs the encoder over `features` and writes the original's JSON lines."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spec = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[{"input_ids": spec, "input_mask": spec,
                                 "segment_ids": spec}])
  def layers_of(inputs):
    outputs = encoder(inputs, training=False)["encoder_outputs"]
    return tf.stack([outputs[i] for i in layer_indexes], axis=0)

  done, start = 0, time.time()
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
    elapsed = time.time() - start
    logging.info("%d/%d examples, %.1f examples/s", done, len(features),
                 done / max(elapsed, 1e-9))


def main(_):
  logging.set_verbosity(logging.INFO)
  with script_utils.report_user_errors(FLAGS.verbose):
    import checkpoints  # pylint: disable=g-import-not-at-top
    import modeling  # pylint: disable=g-import-not-at-top
    import tokenization  # pylint: disable=g-import-not-at-top

    if FLAGS.use_tpu:
      raise script_utils.UserError(
          "--use_tpu: feature extraction runs on CPU/GPU here; drop --use_tpu")
    if FLAGS.batch_size <= 0:
      raise script_utils.UserError(f"--batch_size={FLAGS.batch_size} must be positive")
    script_utils.check_input_file(FLAGS.input_file, "input_file", allow_empty=True)
    script_utils.check_input_file(FLAGS.vocab_file, "vocab_file")
    config = checkpoints.load_bert_config(FLAGS.bert_config_file)
    checkpoints.check_max_seq_length(FLAGS.max_seq_length, config)
    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
    checkpoints.check_vocab_matches_config(len(tokenizer.vocab), config, FLAGS.vocab_file)
    layer_indexes = parse_layers(FLAGS.layers, config.num_hidden_layers)

    examples = read_examples(FLAGS.input_file)
    features = convert_examples_to_features(examples, FLAGS.max_seq_length, tokenizer,
                                            tokenization.truncate_seq_pair)
    encoder = modeling.BertModel(config)
    checkpoints.load_checkpoint(encoder, FLAGS.init_checkpoint)
    with script_utils.atomic_open(FLAGS.output_file) as writer:
      extract(features, encoder, layer_indexes, FLAGS.batch_size, writer)
    logging.info("Wrote %d examples to %s", len(features), FLAGS.output_file)


if __name__ == "__main__":
  app.run(main)
