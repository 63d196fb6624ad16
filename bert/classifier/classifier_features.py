"""Classifier features: `InputExample`s -> BERT's token ids, in tf.data and in Python.

`make_dataset` tokenizes and packs in the graph and pads each batch to its own longest
row; `predict_batches` makes the same eval/predict batches eagerly in NumPy, so that a
prediction that runs once does not pay for tracing the tokenizer into a dataset map;
`convert_single_example` is the original's Python conversion, kept as the reference the
fast path is tested against. All follow the original's `if tokens_b:`: a second text
that yields no tokens makes a single-segment example."""

import dataclasses

import numpy as np
import tensorflow as tf

from bert.classifier import classifier_examples
from bert import fast_tokenization
from bert import input_pipeline
from bert import tokenization
from bert.utils import errors

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass
class InputFeatures:
  """A single set of features of data (the original's names); lists of max_seq_length."""
  input_ids: list
  input_mask: list
  segment_ids: list
  label_id: object
  is_real_example: bool = True


# --------------------------------------------------------------------------- Python path


def convert_single_example(example, label_list, max_seq_length, tokenizer):
  """The original's conversion of one `InputExample` into `InputFeatures` (FullTokenizer).

  [CLS] a [SEP] (b [SEP]); segment 0 for [CLS], a and the first [SEP], 1 for b and
  its [SEP]; zero padding to max_seq_length. A pair loses tokens from the end of its
  longer text first (tokenization.truncate_seq_pair), a single text its tail. As in the
  original, a text_b that is empty or yields no tokens counts as no text_b.
  """
  tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
  tokens, segment_ids = tokenization.pack_tokens(tokenizer.tokenize(example.text_a),
                                                 tokens_b, max_seq_length)
  input_ids = tokenizer.convert_tokens_to_ids(tokens)
  input_mask = [1] * len(input_ids)
  padding = max_seq_length - len(input_ids)
  input_ids += [0] * padding
  input_mask += [0] * padding
  segment_ids += [0] * padding
  return InputFeatures(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                       label_id=classifier_examples.label_to_id(example.label, label_list))


# --------------------------------------------------------------------------- graph path


def pack_texts(tokenizer, text_a, text_b, seq_length):
  """In-graph conversion of a batch of texts, the original's rules.

  tokenizer: fast_tokenization.FastTokenizer. text_a: tf.string [batch]; text_b: tf.string
  [batch] or None. fast_tokenization.pack_inputs packs a row whose text_b yields no tokens
  ("", spaces, control or zero-width characters) as a single text, as the original's
  `if tokens_b:` does. Returns int32 [batch, seq_length] input_ids, input_mask,
  segment_ids, plus "length" int32 [batch] (real tokens per row).
  """
  # Eagerly (predict_batches) op by op: tracing the tokenizer costs more than running it
  # once over thousands of rows. In a graph (tf.data) its traced function.
  tokenize = tokenizer.tokenize_untraced if tf.executing_eagerly() else tokenizer.tokenize
  segments = [tokenize(text_a)]
  if text_b is not None:
    segments.append(tokenize(text_b))
  packed = fast_tokenization.pack_inputs(segments, seq_length, tokenizer.cls_id, tokenizer.sep_id)
  packed = {k: tf.cast(packed[k], tf.int32) for k in FEATURE_NAMES}
  packed["length"] = tf.reduce_sum(packed["input_mask"], axis=1)
  return packed


# (id(tokenizer), seq_length, pair) -> (tokenizer, tf.function). Tracing the tokenizer and
# packing takes seconds; every dataset of a run (train, eval, predict) calls the same
# traced function instead of tracing its own copy.
_PACKERS = {}


def _packer(tokenizer, seq_length, pair):
  key = (id(tokenizer), int(seq_length), bool(pair))
  if key not in _PACKERS or _PACKERS[key][0] is not tokenizer:
    spec = tf.TensorSpec([None], tf.string)
    if pair:
      fn = tf.function(lambda a, b: pack_texts(tokenizer, a, b, seq_length),
                       input_signature=[spec, spec], autograph=False)
    else:
      fn = tf.function(lambda a: pack_texts(tokenizer, a, None, seq_length),
                       input_signature=[spec], autograph=False)
    _PACKERS[key] = (tokenizer, fn)
  return _PACKERS[key][1]


# --------------------------------------------------------------------------- tf.data


def _text_columns(examples, label_list):
  """The examples as from_tensor_slices columns; text_b only when some example has one."""
  regression = label_list is None
  columns = {
      "text_a": [e.text_a for e in examples],
      "label_ids": np.array([classifier_examples.label_to_id(e.label, label_list)
                             for e in examples], np.float32 if regression else np.int32),
      "example_index": np.arange(len(examples), dtype=np.int32),
  }
  if any(e.text_b is not None for e in examples):
    columns["text_b"] = [e.text_b or "" for e in examples]
  return columns


def _batch_rows(dataset, batch_size, *, is_training, fixed_padding, seed, window_batches):
  """Batches of packed rows. Training drops the remainder; with per-batch padding its
  batches (cut from length-sorted windows) are shuffled within a window's worth of
  batches, so that the lengths do not come in order."""
  dataset = dataset.batch(batch_size, drop_remainder=is_training)
  if is_training and not fixed_padding:
    dataset = dataset.shuffle(window_batches, seed=seed + 1, reshuffle_each_iteration=True)
  return dataset


def make_dataset(examples, label_list, tokenizer, max_seq_length, batch_size, *,
                 is_training, fixed_padding=classifier_examples.FIXED_PADDING, seed=0,
                 window_batches=None, pad_to_multiple_of=1, input_context=None):
  """A tf.data pipeline of batches for training, eval or prediction.

  examples: list of classifier_examples.InputExample. label_list: label strings, or None for
  regression. tokenizer: fast_tokenization.FastTokenizer (runs in the graph; ids equal
  FullTokenizer's).

  Each element is a dict: input_ids, input_mask, segment_ids int32 [batch, seq];
  label_ids int32 [batch] (float32 for regression); example_index int32 [batch], the
  position in `examples` (eval/predict batches are reordered by length, this puts the
  results back in order).

  Padding: with fixed_padding every batch is max_seq_length long (static shapes, for
  TPUs). Otherwise rows are sorted by length within each window of `window_batches`
  batches (for training, a window of the shuffled stream, at most one epoch long, as
  Hugging Face's group_by_length does; its batches are then shuffled again), and a batch
  is only as long as its longest row, rounded up to a multiple of `pad_to_multiple_of`.
  Default windows: 32 batches for training; for eval/predict one eager chunk
  (`eval_window_batches`: its rows are tokenized together, so sorting them all costs
  nothing more). The default multiple is 1: training's loop and evaluation.predict and
  evaluate take any length in one trace, and every padded position is matmul work; pass
  8 where every shape compiles, as with XLA, to bound the number of shapes.

  Training repeats forever, reshuffles each epoch (seeded) and drops the remainder.
  run_classifier's eval and predict take `predict_batches` instead (the same batches,
  made eagerly); this graph version of them is the reference it is tested against.
  """
  if not examples:
    raise errors.UserError("no examples to feed")
  if window_batches is None:
    window_batches = TRAIN_WINDOW_BATCHES if is_training else eval_window_batches(batch_size)
  columns = _text_columns(examples, label_list)
  has_b = "text_b" in columns
  dataset = tf.data.Dataset.from_tensor_slices(columns)
  if input_context is not None and input_context.num_input_pipelines > 1:
    dataset = dataset.shard(input_context.num_input_pipelines,
                            input_context.input_pipeline_id)
  window_batches = max(int(window_batches), 1)
  window = batch_size * window_batches
  if is_training:
    dataset = dataset.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    # A window longer than an epoch would put copies of one example in one batch.
    rows = len(examples) // max(getattr(input_context, "num_input_pipelines", 1), 1)
    window = max(batch_size, min(window, rows))
  sort_windows = not fixed_padding
  packer = _packer(tokenizer, max_seq_length, has_b)

  def convert(batch):
    packed = (packer(batch["text_a"], batch["text_b"]) if has_b else
              packer(batch["text_a"]))
    features = {k: packed[k] for k in FEATURE_NAMES + ("length",)}
    features["label_ids"] = batch["label_ids"]
    features["example_index"] = batch["example_index"]
    if sort_windows:
      order = tf.argsort(packed["length"], stable=True)
      features = {k: tf.gather(v, order) for k, v in features.items()}
    return features

  dataset = dataset.batch(window).map(convert, num_parallel_calls=tf.data.AUTOTUNE,
                                      deterministic=True).unbatch()
  dataset = _batch_rows(dataset, batch_size, is_training=is_training,
                        fixed_padding=fixed_padding, seed=seed, window_batches=window_batches)

  def finish(features):
    features = dict(features)
    features.pop("length")
    if fixed_padding:
      return features
    return input_pipeline.trim_to_longest(features, FEATURE_NAMES,
                                          multiple=int(pad_to_multiple_of))

  return dataset.map(finish, num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=True).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------- eager batches

# Rows tokenized per eager call: large calls cost less per row (each op runs once per
# call); rounded to whole sorting windows.
EAGER_CHUNK_ROWS = 8192
# Training's length-sorted windows, in batches (Hugging Face's group_by_length sorts
# "megabatches" of up to 50 batches the same way).
TRAIN_WINDOW_BATCHES = 32


def eval_window_batches(batch_size):
  """Eval/predict windows: one eager chunk of rows, all sorted by length together. Batch
  widths then follow the length distribution closely (the first 5,000 SST-2 training
  sentences at batch 32: 14.3 tokens a row with windows of 32 batches, 13.7 with 256)
  and nothing waits longer for it: a chunk is tokenized in one call anyway."""
  return max(EAGER_CHUNK_ROWS // max(int(batch_size), 1), 1)


def predict_batches(examples, label_list, tokenizer, max_seq_length, batch_size, *,
                    fixed_padding=classifier_examples.FIXED_PADDING, window_batches=None,
                    pad_to_multiple_of=1):
  """Yields make_dataset(..., is_training=False)'s batches as dicts of NumPy arrays.

  The same elements, key for key and value for value: input_ids, input_mask,
  segment_ids int32 [batch, length], label_ids, example_index; each window of
  `window_batches` batches (default: one eager chunk, `eval_window_batches`) sorted by
  length (stable), each batch cut to its longest row
  rounded up to `pad_to_multiple_of` (or every batch max_seq_length long, in order, with
  fixed_padding). Made without tf.data: the texts are tokenized and packed eagerly, a
  few thousand rows per call, so nothing is traced.
  """
  if not examples:
    raise errors.UserError("no examples to feed")
  columns = _text_columns(examples, label_list)
  has_b = "text_b" in columns
  if window_batches is None:
    window_batches = eval_window_batches(batch_size)
  window = batch_size * max(int(window_batches), 1)
  chunk = max(EAGER_CHUNK_ROWS // window, 1) * window
  multiple = max(int(pad_to_multiple_of), 1)
  for start in range(0, len(examples), chunk):
    stop = min(start + chunk, len(examples))
    text_b = (tf.constant(columns["text_b"][start:stop], tf.string) if has_b else None)
    packed = pack_texts(tokenizer, tf.constant(columns["text_a"][start:stop], tf.string),
                        text_b, max_seq_length)
    rows = {k: packed[k].numpy() for k in FEATURE_NAMES + ("length",)}
    rows["label_ids"] = columns["label_ids"][start:stop]
    rows["example_index"] = columns["example_index"][start:stop]
    if not fixed_padding:  # sorted within each window, as make_dataset's convert()
      order = np.concatenate([
          w + np.argsort(rows["length"][w:w + window], kind="stable")
          for w in range(0, stop - start, window)])
      rows = {k: v[order] for k, v in rows.items()}
    for first in range(0, stop - start, batch_size):
      batch = {k: v[first:first + batch_size] for k, v in rows.items() if k != "length"}
      if not fixed_padding:
        batch = {k: np.asarray(v) for k, v in input_pipeline.trim_to_longest(
            batch, FEATURE_NAMES, multiple=multiple).items()}
      yield batch
