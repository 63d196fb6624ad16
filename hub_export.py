"""A BERT encoder and its preprocessing as two TF-Hub-style SavedModels.

Middle floor: imports tokenization and modeling (ground), export and script_utils; never
reads absl FLAGS. export_encoder.py is the command-line front end.

The two SavedModels follow TF Hub's "text embeddings with Transformer encoders" API, so
code written for Google's published BERT SavedModels runs on ours unchanged:

encoder (`export_encoder(...)`)
  * `obj(inputs, training=False)`: inputs a dict of int32 [batch, seq] tensors
    `input_word_ids`, `input_mask`, `input_type_ids`; returns a dict
    `pooled_output` float32 [batch, hidden], `sequence_output` float32
    [batch, seq, hidden], `encoder_outputs` a list of num_hidden_layers float32
    [batch, seq, hidden] (the last one is sequence_output), and `default`
    (= pooled_output). `training=True` switches dropout on.
  * `obj.variables`, `obj.trainable_variables`, `obj.non_trainable_variables`: what a
    fine-tuning loop differentiates and updates.
  * signature `serving_default` (saved_model_cli, TF Serving): the same three inputs,
    outputs `pooled_output`, `sequence_output`, `default` and `encoder_outputs_0` ...
    `encoder_outputs_{L-1}` (a signature can only return a flat dict of tensors).

preprocessor (`export_preprocessor(...)`)
  * `obj.tokenize(strings)`: tf.string [batch] -> int32 tf.RaggedTensor
    [batch, (words), (pieces)] of WordPiece ids, TF Hub's convention (a word is a
    vocabulary piece that does not start with "##" and the "##" pieces that follow it).
    The tokenization is the original FullTokenizer's, token for token
    (tokenization.FastTokenizer), with the case setting baked in.
  * `obj.bert_pack_inputs(segments, seq_length=S)`: a list of one or two int32 ragged
    [batch, (words), (pieces)] or [batch, (pieces)] tensors -> dict of int32 [batch, S]
    `input_word_ids`, `input_mask`, `input_type_ids`: `[CLS] a [SEP] (b [SEP])`,
    zero-padded. Too long pairs are trimmed as the original's `truncate_seq_pair` does
    (always from the longer segment, which equals a round-robin budget split).
  * `obj(strings)` and signature `serving_default` (input `inputs`): one segment packed
    to the export's default seq_length (128 unless chosen otherwise);
    signature `serve_pair` (inputs `text_a`, `text_b`): a pair at that length.
  * `obj.vocab_file` (an asset), `obj.do_lower_case` (a bool variable): how the text is
    tokenized, as Google's BERT SavedModels expose it.

Why not export.write_saved_model (keras.export.ExportArchive): an ExportArchive endpoint
becomes a signature, and a signature cannot take a Python `training` flag, ragged
segments or a list of outputs. The objects here are saved with tf.saved_model.save, the
way ExportArchive itself saves: a plain trackable holding the Keras variables in lists
(never the Keras model object, which `saved_model_cli run` cannot execute), and
tf.functions traced for each accepted call pattern.

Loading needs only `import tensorflow` and, for the preprocessor, `import
tensorflow_text` (its graph holds tensorflow-text ops).
"""

import os
import time

import export
import modeling
import script_utils
import tokenization

ENCODER_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Our BertModel's names for the same three inputs, in the same order.
_MODEL_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
ENCODER_DIR, PREPROCESSOR_DIR = "encoder", "preprocessor"
DEFAULT_SEQ_LENGTH = 128
# A WordPiece continuation piece starts with this (the original's WordpieceTokenizer).
_SUFFIX_INDICATOR = "##"


def _tf():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf


def encoder_input_specs(seq_length=None):
  """{name: tf.TensorSpec int32 [None, seq_length]} for the three encoder inputs."""
  tf = _tf()
  return {name: tf.TensorSpec([None, seq_length], tf.int32, name=name)
          for name in ENCODER_INPUT_NAMES}


# --------------------------------------------------------------------------- encoder


def _encoder_call_fn(model):
  """The TF-Hub encoder call around our Keras BertModel (same weights, renamed i/o)."""

  def call(inputs, training=False):
    """inputs: dict of int32 [batch, seq] input_word_ids, input_mask, input_type_ids."""
    outputs = model({ours: inputs[hub] for ours, hub in
                     zip(_MODEL_INPUT_NAMES, ENCODER_INPUT_NAMES)}, training=training)
    pooled = outputs["pooled_output"]
    return {"pooled_output": pooled,
            "sequence_output": outputs["sequence_output"],
            "encoder_outputs": list(outputs["encoder_outputs"]),
            "default": pooled}

  return call


def build_encoder_module(model):
  """A saveable TF-Hub-style encoder object around `model` (a modeling.BertModel).

  Returns (root, signatures) for tf.saved_model.save. The root shares the model's
  variables (no copy), so it is also usable in-process exactly like the reloaded one.
  """
  tf = _tf()
  call = tf.function(_encoder_call_fn(model), autograph=False)
  specs = encoder_input_specs()
  # One graph per training mode: the saved __call__ dispatches on the Python flag.
  traced = [call.get_concrete_function(specs, training=training)
            for training in (False, True)]
  root = tf.__internal__.tracking.AutoTrackable()
  # The tf.Variables the traced graphs read (what keras.export.ExportArchive tracks
  # too). Tracking the Keras variable wrappers instead saves them under other names
  # than the graphs capture: tf.saved_model.load copes, `saved_model_cli run` fails
  # with "Could not find variable". Revived, these are what fine-tuning updates.
  trainable, seen = [], set()
  for concrete in traced:
    for variable in concrete.trainable_variables:
      if id(variable) not in seen:
        seen.add(id(variable))
        trainable.append(variable)
  others = []
  for concrete in traced:
    for variable in concrete.variables:
      if id(variable) not in seen:
        seen.add(id(variable))
        others.append(variable)
  root.variables = trainable + others
  root.trainable_variables = list(trainable)
  root.non_trainable_variables = others
  root.__call__ = call


  num_layers = modeling.find_encoder(model).config.num_hidden_layers

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=name)
                                for name in ENCODER_INPUT_NAMES], autograph=False)
  def serve(input_word_ids, input_mask, input_type_ids):
    outputs = call({"input_word_ids": input_word_ids, "input_mask": input_mask,
                    "input_type_ids": input_type_ids}, training=False)
    flat = {"pooled_output": outputs["pooled_output"],
            "sequence_output": outputs["sequence_output"],
            "default": outputs["default"]}
    for index in range(num_layers):
      flat[f"encoder_outputs_{index}"] = outputs["encoder_outputs"][index]
    return flat

  return root, {"serving_default": serve.get_concrete_function()}


# --------------------------------------------------------------------------- preprocessor


def _group_words(ids, continues_word):
  """Ragged [batch, (pieces)] ids -> [batch, (words), (pieces)].

  ids: int32 tf.RaggedTensor [batch, (pieces)]; continues_word: bool tf.Tensor
  [vocab_size], True for "##" pieces. WordPiece turns every word into one non-"##"
  piece followed by "##" pieces (or a single [UNK]), so word starts are exactly the
  non-"##" pieces; the first piece of a row always starts a word.
  """
  tf = _tf()
  ids = ids.with_row_splits_dtype(tf.int64)
  flat = ids.flat_values
  total = tf.shape(flat, out_type=tf.int64)[0]
  first_of_row = tf.equal(tf.range(total),
                          tf.gather(ids.row_splits, ids.value_rowids()))
  starts = tf.logical_or(tf.logical_not(tf.gather(continues_word, flat)), first_of_row)
  word_starts = tf.cast(tf.reshape(tf.where(starts), [-1]), tf.int64)
  word_splits = tf.concat([word_starts, tf.reshape(total, [1])], axis=0)
  words = tf.RaggedTensor.from_row_splits(flat, word_splits, validate=False)
  # Words per row: the word starts that fall inside each row's pieces.
  words_before_row = tf.searchsorted(word_starts, ids.row_splits, side="left",
                                     out_type=tf.int64)
  return tf.RaggedTensor.from_row_splits(words, words_before_row, validate=False)


def pack_segments(segments, seq_length, cls_id, sep_id):
  """bert_pack_inputs: one or two segments -> TF Hub's encoder inputs, in the graph.

  The same packing and truncation as tokenization.pack_inputs (the original's
  `truncate_seq_pair`: trim the longer segment one token at a time, B on a tie, to
  seq_length - 3; a single segment keeps its first seq_length - 2 tokens), but with
  `seq_length` a scalar tensor, so that one saved function serves every length, and
  built from dense gathers, which trace in a fraction of the time of ragged ops.

  Args:
    segments: list of one or two int32/int64 tf.RaggedTensor, [batch, (pieces)] or
      [batch, (words), (pieces)] (merged into [batch, (pieces)]).
    seq_length: int or int32 scalar tensor, the length of every output row.
    cls_id, sep_id: int ids of [CLS] and [SEP].

  Returns:
    dict of int32 tf.Tensor [batch, seq_length]: input_word_ids, input_mask,
    input_type_ids.
  """
  tf = _tf()
  if len(segments) not in (1, 2):
    raise ValueError(f"bert_pack_inputs takes one or two segments, got {len(segments)}")
  flat = []
  for segment in segments:
    if segment.ragged_rank > 1:
      segment = segment.merge_dims(1, -1)
    flat.append(segment.with_row_splits_dtype(tf.int64))
  seq_length = tf.cast(seq_length, tf.int64)
  check = tf.debugging.assert_greater_equal(
      seq_length, tf.constant(2 * len(flat) + 1, tf.int64),
      message="bert_pack_inputs: seq_length leaves no room for [CLS], [SEP] and a token")
  with tf.control_dependencies([check]):
    budget = seq_length - (len(flat) + 1)  # room left by [CLS] and one [SEP] a segment
  lengths = [s.row_lengths() for s in flat]
  if len(flat) == 1:
    keep = [tf.minimum(lengths[0], budget)]
  else:
    len_a, len_b = lengths
    # Popping from the longer segment (B on a tie) until the pair fits keeps a short
    # segment whole and splits the budget between two long ones, A getting the odd one.
    keep = [tf.minimum(len_a, tf.maximum((budget + 1) // 2, budget - len_b)),
            tf.minimum(len_b, tf.maximum(budget // 2, budget - len_a))]
  batch = flat[0].nrows()
  position = tf.range(seq_length)[tf.newaxis, :]  # [1, seq_length]
  word_ids = tf.where(position == 0, tf.constant(cls_id, tf.int32),
                      tf.zeros([batch, seq_length], tf.int32))
  type_ids = tf.zeros([batch, seq_length], tf.int32)
  start = tf.ones([batch, 1], tf.int64)  # where the current segment begins in a row
  for index, (segment, n) in enumerate(zip(flat, keep)):
    n = n[:, tf.newaxis]
    inside = (position >= start) & (position < start + n)
    # A padded copy of the values keeps the gather valid for empty segments.
    values = tf.concat([tf.cast(segment.flat_values, tf.int32), [0]], axis=0)
    source = tf.clip_by_value(segment.row_splits[:-1, tf.newaxis] + position - start,
                              0, tf.shape(values, out_type=tf.int64)[0] - 1)
    word_ids = tf.where(inside, tf.gather(values, source), word_ids)
    word_ids = tf.where(position == start + n, tf.constant(sep_id, tf.int32), word_ids)
    if index:
      type_ids = tf.where((position >= start) & (position <= start + n), 1, type_ids)
    start = start + n + 1
  input_mask = tf.cast(position < start, tf.int32)
  return {"input_word_ids": word_ids, "input_mask": input_mask, "input_type_ids": type_ids}


def build_preprocessor_module(vocab_file, do_lower_case, seq_length=DEFAULT_SEQ_LENGTH):
  """A saveable TF-Hub-style preprocessor: the original tokenization, packing, defaults.

  Returns (root, signatures) for tf.saved_model.save.
  """
  tf = _tf()
  tokenizer = tokenization.FastTokenizer(vocab_file, do_lower_case)
  vocab = list(tokenization.load_vocab(vocab_file))
  default_seq_length = int(seq_length)
  cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id

  root = tf.__internal__.tracking.AutoTrackable()
  root.tokenizer = tokenizer
  root.vocab_file = tf.saved_model.Asset(vocab_file)
  root.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False,
                                   name="do_lower_case")
  continues_word = tf.constant([token.startswith(_SUFFIX_INDICATOR) for token in vocab])

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def tokenize(strings):
    """strings: tf.string [batch] -> int32 tf.RaggedTensor [batch, (words), (pieces)]."""
    return _group_words(tokenizer.tokenize(strings), continues_word)

  @tf.function(autograph=False)
  def bert_pack_inputs(inputs, seq_length=default_seq_length):
    """inputs: list of 1-2 int32 ragged segments -> dict of int32 [batch, seq_length]."""
    return pack_segments(list(inputs), seq_length, cls_id, sep_id)

  for num_segments in (1, 2):
    for ragged_rank in (1, 2):
      spec = tf.RaggedTensorSpec([None] + [None] * ragged_rank, tf.int32,
                                 ragged_rank=ragged_rank)
      bert_pack_inputs.get_concrete_function(
          [spec] * num_segments, seq_length=tf.TensorSpec([], tf.int32))

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
               autograph=False)
  def call(inputs):
    """inputs: tf.string [batch] -> one segment packed to the default seq_length."""
    return pack_segments([tokenize(inputs)], default_seq_length, cls_id, sep_id)

  text_a, text_b = export.text_specs(2)

  @tf.function(input_signature=[text_a, text_b], autograph=False)
  def serve_pair(text_a, text_b):  # pylint: disable=redefined-outer-name
    return pack_segments([tokenize(text_a), tokenize(text_b)], default_seq_length,
                         cls_id, sep_id)

  root.tokenize = tokenize
  root.bert_pack_inputs = bert_pack_inputs
  root.__call__ = call
  root.serve_pair = serve_pair
  signatures = {"serving_default": call.get_concrete_function(),
                "serve_pair": serve_pair.get_concrete_function()}
  return root, signatures


# --------------------------------------------------------------------------- writing


def save_module(root, path, signatures):
  """tf.saved_model.save of a built root at `path` (a directory that must not exist)."""
  tf = _tf()
  tf.saved_model.save(root, path, signatures=signatures)


def check_export_dir(export_dir, overwrite=False):
  """Refuses an export_dir that is a file, or a non-empty directory unless overwrite."""
  if not export_dir:
    raise script_utils.UserError("--export_dir is required")
  if os.path.exists(export_dir):
    if not os.path.isdir(export_dir):
      raise script_utils.UserError(
          f"--export_dir={export_dir}: exists and is not a directory")
    if os.listdir(export_dir) and not overwrite:
      raise script_utils.UserError(
          f"--export_dir={export_dir}: exists and is not empty; choose a new directory "
          "or pass --overwrite to replace it")
  parent = os.path.dirname(os.path.abspath(export_dir))
  if not os.path.isdir(parent):
    raise script_utils.UserError(
        f"--export_dir={export_dir}: its parent directory {parent} does not exist")


def export_encoder_and_preprocessor(export_dir, model, vocab_file, do_lower_case,
                                    seq_length=DEFAULT_SEQ_LENGTH, overwrite=False,
                                    log=None):
  """Writes `<export_dir>/encoder` and `<export_dir>/preprocessor`, all at once.

  model: a modeling.BertModel holding the weights to export. Both SavedModels are
  written under a temporary directory beside export_dir that is renamed into place
  when both are complete, so an interrupted export leaves nothing that looks finished;
  an existing non-empty export_dir is refused unless `overwrite`. `log`: a function
  taking a %-format and arguments (absl's logging.info), told about each stage.
  Returns (encoder_path, preprocessor_path).
  """
  log = log or (lambda *args: None)
  check_export_dir(export_dir, overwrite)
  with script_utils.atomic_path(export_dir, overwrite=True) as tmp:
    os.makedirs(tmp)
    for name, build, args in (
        (ENCODER_DIR, build_encoder_module, (model,)),
        (PREPROCESSOR_DIR, build_preprocessor_module,
         (vocab_file, do_lower_case, seq_length))):
      started = time.time()
      log("Tracing the %s", name)
      root, signatures = build(*args)
      log("Writing the %s SavedModel", name)
      save_module(root, os.path.join(tmp, name), signatures)
      log("Wrote the %s in %.1f s", name, time.time() - started)
  return os.path.join(export_dir, ENCODER_DIR), os.path.join(export_dir, PREPROCESSOR_DIR)
