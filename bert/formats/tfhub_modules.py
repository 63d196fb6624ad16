"""A BERT encoder and its preprocessing as two TF-Hub-style SavedModels, and Keras 3
layers that fine-tune them.

The SavedModels follow TF Hub's "text embeddings with Transformer encoders" API, so code
written for Google's published BERT SavedModels runs on ours unchanged
(docs/export_encoder.md lists the calls and signatures). They are saved with
tf.saved_model.save, as plain trackables holding the Keras variables, not with serving's
ExportArchive: a signature cannot take a Python `training` flag, ragged segments or a
list of outputs. The Keras layers exist because `hub.KerasLayer` is Keras 2 and Keras
3's `TFSMLayer` cannot fine-tune (its variables keep the ":0" of their names, which
Keras 3's optimizers refuse)."""

import time

from absl import logging
import keras
import tensorflow as tf
import tensorflow_text  # noqa: F401  pylint: disable=unused-import  (the preprocessor's ops)

from bert.formats import serving
from bert import fast_tokenization
from bert.formats import litert_convert
from bert.formats import litert_metadata
from bert import modeling
from bert import modeling_config
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import output_lock
from bert.utils import errors

ENCODER_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Our BertModel's names for the same three inputs, in the same order.
_MODEL_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
ENCODER_DIR, PREPROCESSOR_DIR = "encoder", "preprocessor"
DEFAULT_SEQ_LENGTH = 128
# A WordPiece continuation piece starts with this (the original's WordpieceTokenizer).
_SUFFIX_INDICATOR = "##"


def encoder_input_specs(seq_length=None):
  """{name: tf.TensorSpec int32 [None, seq_length]} for the three encoder inputs."""
  return {name: tf.TensorSpec([None, seq_length], tf.int32, name=name)
          for name in ENCODER_INPUT_NAMES}


# --------------------------------------------------------------------------- encoder


def _encoder_call_fn(model):
  """The TF-Hub encoder call around our Keras BertModel (same weights, renamed i/o)."""

  def call(inputs, training=False):
    """inputs: dict of int32 [batch, seq] input_word_ids, input_mask, input_type_ids."""
    # Checked under the names the caller gave them (the encoder checks its own too).
    inputs = modeling.check_input_shapes_in_graph(inputs, "encoder", ENCODER_INPUT_NAMES)
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


def _pack(segments, seq_length, cls_id, sep_id):
  """bert_pack_inputs: fast_tokenization.pack_inputs (the original's packing and truncation),
  under TF Hub's input names.

  segments: list of one or two int32 tf.RaggedTensor, [batch, (pieces)] or
  [batch, (words), (pieces)]; seq_length: int or int32 scalar tensor (one saved function
  serves every length). Returns dict of int32 [batch, seq_length] input_word_ids,
  input_mask, input_type_ids.
  """
  packed = fast_tokenization.pack_inputs(segments, seq_length, cls_id, sep_id)
  return {hub: packed[ours] for hub, ours in zip(ENCODER_INPUT_NAMES, _MODEL_INPUT_NAMES)}


def build_preprocessor_module(vocab_file, do_lower_case, seq_length=DEFAULT_SEQ_LENGTH,
                              normalize=None):
  """A saveable TF-Hub-style preprocessor: the original tokenization, packing, defaults.

  normalize: None (the original) or "nfc", applied to the text before tokenizing.
  Returns (root, signatures) for tf.saved_model.save.
  """
  tokenizer = fast_tokenization.FastTokenizer(vocab_file, do_lower_case, normalize=normalize)
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
    return _pack(list(inputs), seq_length, cls_id, sep_id)

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
    return _pack([tokenize(inputs)], default_seq_length, cls_id, sep_id)

  text_a, text_b = serving.text_specs(2)

  @tf.function(input_signature=[text_a, text_b], autograph=False)
  def serve_pair(text_a, text_b):  # pylint: disable=redefined-outer-name
    return _pack([tokenize(text_a), tokenize(text_b)], default_seq_length,
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
  tf.saved_model.save(root, path, signatures=signatures)


def check_export_dir(export_dir, overwrite=False):
  """Refuses an export_dir that is a file, or a non-empty directory unless overwrite."""
  if not export_dir:
    raise errors.UserError("--export_dir is required")
  if file_io.exists(export_dir):
    if not file_io.isdir(export_dir):
      raise errors.UserError(
          f"--export_dir={export_dir}: exists and is not a directory")
    where = f"--export_dir={export_dir}"
    if (file_io.listdir(export_dir) and not overwrite and
        not atomic_output.left_half_moved(export_dir, where, overwrite_flag="--overwrite")):
      raise errors.UserError(
          f"--export_dir={export_dir}: exists and is not empty; choose a new directory "
          "or pass --overwrite to replace it")
  parent = paths.dirname(paths.abspath(export_dir))
  if not paths.is_url(parent) and not file_io.isdir(parent):
    raise errors.UserError(
        f"--export_dir={export_dir}: its parent directory {parent} does not exist")


def export_encoder_and_preprocessor(export_dir, model, vocab_file, do_lower_case,
                                    seq_length=DEFAULT_SEQ_LENGTH, overwrite=False,
                                    log=None, normalize=None, litert=None):
  """Writes `<export_dir>/encoder` and `<export_dir>/preprocessor`, all at once, and with
  `litert` (a litert_metadata.Request) `<export_dir>/litert`: the encoder's serving_default as
  LiteRT models, each checked against the encoder SavedModel (litert_convert.py).

  model: a modeling.BertModel holding the weights to export. Both SavedModels are
  written under a temporary directory beside export_dir that is renamed into place
  when both are complete, so an interrupted export leaves nothing that looks finished;
  an existing non-empty export_dir is refused unless `overwrite`. `log`: a function
  taking a %-format and arguments (absl's logging.info), told about each stage.
  Returns (encoder_path, preprocessor_path).
  """
  log = log or (lambda *args: None)
  with output_lock.writing_export(
      export_dir, lambda: check_export_dir(export_dir, overwrite)) as tmp:
    file_io.makedirs(tmp)
    for name, build, args in (
        (ENCODER_DIR, build_encoder_module, (model,)),
        (PREPROCESSOR_DIR, build_preprocessor_module,
         (vocab_file, do_lower_case, seq_length, normalize))):
      started = time.time()
      log("Tracing the %s", name)
      root, signatures = build(*args)
      log("Writing the %s SavedModel", name)
      save_module(root, paths.join(tmp, name), signatures)
      log("Wrote the %s in %.1f s", name, time.time() - started)
    if litert is not None:
      litert_convert.write(paths.join(tmp, ENCODER_DIR),
                           paths.join(tmp, litert_metadata.FOLDER), litert,
                           litert_metadata.folder(export_dir), log)
  return paths.join(export_dir, ENCODER_DIR), paths.join(export_dir, PREPROCESSOR_DIR)


def export(export_dir, source, overwrite=False, log=None):
  """export_encoder.py --format=tfhub: the encoder of a checkpoint (source: a
  writers.Source) and its preprocessor, with the encoder's LiteRT models as source.litert
  says (export_dir/litert); returns the two SavedModels' paths."""
  log = log or logging.info
  encoder = source.load_encoder()
  config = source.config
  request = litert_metadata.request(
      source.litert, {"task": "encoder", "head": "encoder", "max_seq_length": source.seq_length,
                      "do_lower_case": bool(source.do_lower_case),
                      "normalize": source.normalize, "num_texts": 2,
                      "max_position_embeddings": config.max_position_embeddings,
                      "type_vocab_size": config.type_vocab_size}, source.vocab_file)
  return export_encoder_and_preprocessor(
      export_dir, encoder, source.vocab_file, source.do_lower_case,
      seq_length=source.seq_length, overwrite=overwrite, log=log,
      normalize=source.normalize, litert=request)


# --------------------------------------------------------------------------- Keras 3


class KerasEncoder(keras.layers.Layer):
  """An exported encoder SavedModel (`<export_dir>/encoder`) as a trainable Keras 3 layer.

  Each variable of the reloaded encoder is wrapped in a `keras.Variable`, which shares
  the tf.Variable rather than copying it: the optimizer updates the weights that the
  SavedModel's graphs read, and `model.export` / `model.save_weights` save them.
  `trainable=False` freezes the encoder (features only).

  call(inputs, training=None): inputs a dict of int32 [batch, seq] `input_word_ids`,
  `input_mask`, `input_type_ids` (what KerasPreprocessor returns); returns a dict
  `pooled_output` float32 [batch, hidden], `sequence_output` float32 [batch, seq, hidden],
  `encoder_outputs` (a list of num_hidden_layers [batch, seq, hidden]) and `default`
  (= pooled_output). training=True switches the encoder's dropout on.
  """

  def __init__(self, encoder_path, trainable=True, **kwargs):
    super().__init__(trainable=trainable, **kwargs)
    self.encoder_path = encoder_path
    self.encoder = tf.saved_model.load(encoder_path)
    # Keras 3 variable names may not hold ":" or "/" (an optimizer scope name).
    self.shared_variables = [
        keras.Variable(variable, trainable=variable.trainable, dtype=variable.dtype.name,
                       name=variable.name.split(":")[0].replace("/", "_"))
        for variable in self.encoder.variables]
    self.built = True

  def call(self, inputs, training=None):
    inputs = {name: inputs[name] for name in ENCODER_INPUT_NAMES}
    return self.encoder(inputs, training=bool(training))

  def get_config(self):
    return {**super().get_config(), "encoder_path": self.encoder_path}


class KerasPreprocessor(keras.layers.Layer):
  """An exported preprocessor SavedModel as a Keras 3 layer: text -> encoder inputs.

  call(inputs): tf.string [batch] (one segment) or a list [text_a, text_b] of two
  (pairs) -> dict of int32 [batch, seq_length] `input_word_ids`, `input_mask`,
  `input_type_ids`, tokenized and packed as the original. seq_length None: the export's
  default (export_encoder.py --seq_length). No weights; it needs `import
  tensorflow_text` in the process (the SavedModel holds its ops).
  """

  def __init__(self, preprocessor_path, seq_length=None, **kwargs):
    super().__init__(trainable=False, **kwargs)
    self.preprocessor_path = preprocessor_path
    self.seq_length = seq_length
    self.preprocessor = tf.saved_model.load(preprocessor_path)
    self.built = True

  def call(self, inputs):
    texts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if len(texts) not in (1, 2):
      raise ValueError(f"KerasPreprocessor takes one or two texts, got {len(texts)}")
    if self.seq_length is None:
      return (self.preprocessor(texts[0]) if len(texts) == 1
              else self.preprocessor.serve_pair(*texts))
    segments = [self.preprocessor.tokenize(text) for text in texts]
    return self.preprocessor.bert_pack_inputs(
        segments, seq_length=tf.constant(self.seq_length, tf.int32))

  def get_config(self):
    return {**super().get_config(), "preprocessor_path": self.preprocessor_path,
            "seq_length": self.seq_length}


def build_keras_classifier(export_dir, num_labels, seq_length=None, pairs=False,
                           dropout_rate=modeling_config.HEAD_DROPOUT_RATE,
                           initializer_range=0.02):
  """A Keras 3 text classifier around an export: text -> logits, encoder fine-tunable.

  Input: tf.string [batch] (`text`), or with pairs a dict of two, `text_a` and `text_b`.
  Output: float32 [batch, num_labels] logits from dropout + dense on the pooled output,
  as the original run_classifier's head. `model.export(path)` writes a SavedModel whose
  `serve` endpoint takes the same string inputs. Returns (model, encoder_layer).
  """
  preprocessor = KerasPreprocessor(paths.join(export_dir, PREPROCESSOR_DIR), seq_length,
                                   name="preprocessor")
  encoder = KerasEncoder(paths.join(export_dir, ENCODER_DIR), name="encoder")
  if pairs:
    inputs = {name: keras.Input(shape=(), dtype="string", name=name)
              for name in ("text_a", "text_b")}
    encoder_inputs = preprocessor([inputs["text_a"], inputs["text_b"]])
  else:
    inputs = keras.Input(shape=(), dtype="string", name="text")
    encoder_inputs = preprocessor(inputs)
  pooled = keras.layers.Dropout(dropout_rate, name="dropout")(
      encoder(encoder_inputs)["pooled_output"])
  logits = keras.layers.Dense(
      num_labels, kernel_initializer=keras.initializers.TruncatedNormal(
          stddev=initializer_range), name="classifier")(pooled)
  return keras.Model(inputs, logits, name="bert_hub_classifier"), encoder
