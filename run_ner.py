"""BERT on CoNLL-2003 named-entity recognition, fine-tuned or feature-based (paper Table 7).

--mode=finetune (Table 7, top): the whole encoder is trained with one output layer on
top of every token; a word's label and prediction sit on its first WordPiece.

--mode=feature (Table 7, bottom): the encoder is frozen. Its activations (a choice of
layers, --feature_layers) are computed once per split and cached as TFRecords in
<output_dir>/feature_cache; a randomly initialised two-layer BiLSTM (--lstm_units per
direction) and an output layer are trained on them.

  python run_ner.py --data_dir=../shared/data/conll2003 \
    --vocab_file=$BERT_DIR/vocab.txt --bert_config_file=$BERT_DIR/bert_config.json \
    --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval --do_predict \
    --learning_rate=5e-5 --num_train_epochs=3 --output_dir=/tmp/ner

Reads <data_dir>/train.txt, valid.txt, test.txt (or CoNLL's eng.train, eng.testa,
eng.testb), IOB1 or IOB2. Writes eval_results.txt (eval_f1, eval_precision, eval_recall,
eval_accuracy, eval_loss, per-type eval_f1_<TYPE>, global_step), dev_predictions.txt and
test_predictions.txt in conlleval's input format (word, the file's other columns, gold
tag, predicted tag), dev_conlleval.txt / test_conlleval.txt (conlleval's report) and,
for a labelled test file, test_results.txt (test_f1, ...).
"""

import os
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np

import flags_common
import script_utils

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=128)
flags_common.define_run_flags(train_batch_size=32, learning_rate=5e-5, num_train_epochs=3.0)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

LAYER_CHOICES = ("embeddings", "second_to_last", "last", "sum_last_four",
                 "concat_last_four", "sum_all")

flags.DEFINE_string("train_file", None,
                    "Training file (default: train.txt or eng.train in --data_dir).")
flags.DEFINE_string("dev_file", None,
                    "Dev file (default: valid.txt, dev.txt or eng.testa in --data_dir).")
flags.DEFINE_string("test_file", None,
                    "Test file (default: test.txt or eng.testb in --data_dir).")
flags.DEFINE_enum("label_scheme", "auto", ["auto", "iob1", "iob2"],
                  "Tag scheme of the files: iob1 (the original CoNLL-2003 release), iob2 "
                  "(B- on every entity's first word) or auto (IOB1 when some entity starts "
                  "with I-). The model learns IOB2; predictions are written in the input's "
                  "scheme.")
flags.DEFINE_list("entity_types", ["PER", "ORG", "LOC", "MISC"],
                  "Entity types of the data (labels O, B-<type>, I-<type>).")
flags.DEFINE_integer("doc_stride", 64,
                     "A sentence longer than max_seq_length - 2 WordPieces is split into "
                     "overlapping windows whose starts are about this many pieces apart.")
flags.DEFINE_enum("mode", "finetune", ["finetune", "feature"],
                  "finetune: train the encoder and a token classifier; feature: freeze the "
                  "encoder and train a two-layer BiLSTM on cached activations.")
flags.DEFINE_enum("feature_layers", "concat_last_four", list(LAYER_CHOICES),
                  "--mode=feature: which activations feed the BiLSTM. sum_* are plain "
                  "(equal-weight) sums of the layers' outputs.")
flags.DEFINE_integer("lstm_units", 768,
                     "--mode=feature: units of each direction of each BiLSTM layer.")
flags.DEFINE_float("feature_learning_rate", 1e-3,
                   "--mode=feature: peak learning rate of the BiLSTM (trained from scratch, "
                   "so far above the fine-tuning rates); --learning_rate is not used there.")
flags.DEFINE_string("feature_cache_dir", None,
                    "--mode=feature: where the frozen activations are cached (default "
                    "<output_dir>/feature_cache); runs that differ only in the BiLSTM's "
                    "settings can share one.")
flags.DEFINE_integer("feature_batch_size", 32,
                     "--mode=feature: batch size of the frozen encoder pass.")
flags.DEFINE_float("dropout_rate", 0.1,
                   "--mode=finetune: dropout before the token classifier.")
flags_common.define_finetuning_flags(data_dir_help="Folder with the CoNLL-2003 files.")

_DEFAULT_FILES = {"train": ("train.txt", "eng.train"),
                  "dev": ("valid.txt", "dev.txt", "eng.testa"),
                  "test": ("test.txt", "eng.testb")}


# --------------------------------------------------------------------------- data


def _split_path(split):
  given = {"train": FLAGS.train_file, "dev": FLAGS.dev_file, "test": FLAGS.test_file}[split]
  if given:
    path = given if os.path.exists(given) else os.path.join(FLAGS.data_dir, given)
    return script_utils.check_input_file(path, f"{split}_file")
  for name in _DEFAULT_FILES[split]:
    path = os.path.join(FLAGS.data_dir, name)
    if os.path.isfile(path):
      return script_utils.check_input_file(path, "data_dir")
  raise script_utils.UserError(
      f"--data_dir={FLAGS.data_dir}: no {split} file ({' or '.join(_DEFAULT_FILES[split])});"
      f" name it with --{split}_file")


class Split:
  """A split's examples, features and the arrays the model reads."""

  def __init__(self, name, path, examples, features, scheme, ner_data):
    self.name, self.path, self.examples, self.features = name, path, examples, features
    self.scheme = scheme
    self.arrays = ner_data.features_to_arrays(features)
    self.arrays["feature_index"] = np.arange(len(features), dtype=np.int32)
    self.labelled = all(e.labels is not None for e in examples)


def _load_split(name, tokenizer, label_list, ner_data):
  path = _split_path(name)
  examples = ner_data.read_conll(path)
  limit = FLAGS.max_train_examples if name == "train" else FLAGS.max_eval_examples
  if limit and limit > 0:
    examples = examples[:limit]
  if name != "test" and any(e.labels is None for e in examples):
    raise script_utils.UserError(f"{path}: {name} data needs a tag column")
  ner_data.check_labels(examples, label_list, path)
  scheme = (ner_data.detect_scheme(examples) if FLAGS.label_scheme == "auto"
            else FLAGS.label_scheme)
  features = ner_data.convert_examples_to_features(
      examples, label_list, FLAGS.max_seq_length, tokenizer, doc_stride=FLAGS.doc_stride)
  windows = len(features) - len(examples)
  logging.info("%s: %d sentences, %d windows (%d extra for long sentences), scheme %s",
               path, len(examples), len(features), windows, scheme.upper())
  return Split(name, path, examples, features, scheme, ner_data)


# Batches are cut to their longest row rounded up to a multiple of this: short CoNLL
# sentences cost little, and prediction's tf.function sees only a few distinct shapes
# (every new shape would be a new trace of the whole model).
LENGTH_BUCKET = 32


def _bucket_length(length, full_length):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rounded = (tf.maximum(length, 1) + LENGTH_BUCKET - 1) // LENGTH_BUCKET * LENGTH_BUCKET
  return tf.minimum(rounded, full_length)


def _trim_to_longest(features):
  """Cuts the padding no row of the batch uses: every [B, S, ...] array -> [B, S_batch, ...]
  with S_batch the longest row rounded up to LENGTH_BUCKET."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  length = _bucket_length(tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=-1)),
                          tf.shape(features["input_mask"])[1])
  return {k: (v[:, :length] if len(v.shape) >= 2 else v) for k, v in features.items()}


def _pad_to_bucket(batch):
  """Pads a padded_batch of cached features [B, S, ...] to S rounded up to LENGTH_BUCKET."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  length = tf.shape(batch["input_mask"])[1]
  extra = _bucket_length(length, length + LENGTH_BUCKET) - length
  padded = dict(batch)
  padded["features"] = tf.pad(batch["features"], [[0, 0], [0, extra], [0, 0]])
  padded["input_mask"] = tf.pad(batch["input_mask"], [[0, 0], [0, extra]])
  padded["label_ids"] = tf.pad(batch["label_ids"], [[0, 0], [0, extra]], constant_values=-1)
  return padded


def _array_dataset(arrays, batch_size, training, seed):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  dataset = tf.data.Dataset.from_tensor_slices(arrays)
  if training:
    dataset = dataset.shuffle(len(arrays["input_ids"]), seed=seed,
                              reshuffle_each_iteration=True).repeat()
  return dataset.batch(batch_size, drop_remainder=training).map(_trim_to_longest).prefetch(2)


def _token_loss_fn(features, outputs):
  """Mean cross-entropy over each window's labelled positions (first WordPieces).

  logits float32 [B, S, num_labels]; label_ids int32 [B, S] with -1 where no label.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  logits = tf.cast(outputs["logits"], tf.float32)
  labels = tf.cast(features["label_ids"], tf.int32)
  weights = tf.cast(labels >= 0, tf.float32)
  safe_labels = tf.maximum(labels, 0)
  token_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=safe_labels,
                                                              logits=logits)
  count = tf.reduce_sum(weights, axis=-1)
  per_example = tf.reduce_sum(token_loss * weights, axis=-1) / tf.maximum(count, 1.0)
  correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), safe_labels),
                    tf.float32) * weights
  return per_example, {"token_accuracy": (tf.reduce_sum(correct), tf.reduce_sum(weights))}


def _collect_predictions(training, model, dataset, num_features, max_seq_length):
  """Runs the model; returns (predicted ids int32 [N, S], log-probability of the gold
  label summed, number of labelled positions), rows in feature order."""
  predicted = np.zeros((num_features, max_seq_length), np.int32)
  nll_sum, count = 0.0, 0
  for batch in training.predict(model, dataset):
    logits = batch["logits"].astype(np.float64)
    index = batch["feature_index"]
    width = min(logits.shape[1], max_seq_length)  # cached batches may be padded wider
    predicted[index, :width] = np.argmax(logits[:, :width], axis=-1)
    labels = batch["label_ids"]
    mask = labels >= 0
    if mask.any():
      shifted = logits - logits.max(-1, keepdims=True)
      log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
      gold = np.take_along_axis(log_probs, np.maximum(labels, 0)[..., None], -1)[..., 0]
      nll_sum += float(-(gold * mask).sum())
      count += int(mask.sum())
  return predicted, nll_sum, count


def _evaluate_split(split, predicted, nll_sum, count, label_list, ner_data, prefix,
                    global_step, write_results):
  tags = ner_data.decode_predictions(split.examples, split.features, predicted, label_list)
  out = FLAGS.output_dir
  ner_data.write_conll_predictions(os.path.join(out, f"{prefix}_predictions.txt"),
                                   split.examples, tags, split.scheme)
  if not split.labelled:
    logging.info("%s has no gold tags: wrote predictions only", split.path)
    return None
  metrics = ner_data.evaluate_examples(split.examples, tags, split.scheme)
  report = ner_data.conlleval_report(metrics)
  with script_utils.atomic_open(os.path.join(out, f"{prefix}_conlleval.txt")) as handle:
    handle.write(report)
  key = "eval" if prefix == "dev" else "test"
  results = {f"{key}_f1": metrics["f1"], f"{key}_precision": metrics["precision"],
             f"{key}_recall": metrics["recall"], f"{key}_accuracy": metrics["accuracy"],
             f"{key}_loss": nll_sum / max(count, 1), "global_step": global_step,
             f"{key}_sentences": len(split.examples)}
  for entity_type, values in metrics["per_type"].items():
    results[f"{key}_f1_{entity_type}"] = values["f1"]
  if write_results:
    script_utils.write_key_values(os.path.join(out, write_results), results,
                                  log=logging.info)
  for line in report.splitlines():
    logging.info("%s conlleval: %s", prefix, line)
  return results


# --------------------------------------------------------------------------- feature mode


def _combine_layers(outputs, choice, num_layers):
  """The --feature_layers combination of a BertModel's outputs: float32 [B, S, D]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  layers = outputs["encoder_outputs"]
  if choice == "embeddings":
    return outputs["embedding_output"]
  if choice == "last":
    return layers[-1]
  if choice in ("second_to_last", "sum_last_four", "concat_last_four"):
    needed = 2 if choice == "second_to_last" else 4
    if num_layers < needed:
      raise script_utils.UserError(
          f"--feature_layers={choice} needs at least {needed} encoder layers; the model "
          f"has {num_layers}")
  if choice == "second_to_last":
    return layers[-2]
  if choice == "sum_last_four":
    return tf.add_n(layers[-4:])
  if choice == "concat_last_four":
    return tf.concat(layers[-4:], axis=-1)
  return tf.add_n(layers)  # sum_all: every transformer layer, not the embeddings


def _feature_dim(choice, hidden_size):
  return hidden_size * 4 if choice == "concat_last_four" else hidden_size


def _checkpoint_identity(path):
  """What makes two --init_checkpoint values the same weights: path, size and mtime."""
  if not path:
    return "random"
  candidates = [path, path + ".index", os.path.join(path, "model.safetensors")]
  stats = [(c, os.path.getsize(c), int(os.path.getmtime(c)))
           for c in candidates if os.path.isfile(c)]
  return repr((os.path.abspath(path), stats))


def _cache_features(split, encoder, config, cache_dir, ner_data):
  """Writes (once) and returns the TFRecord of the frozen encoder's activations.

  One record per window: `features` float16 bytes [length, D] (real tokens only),
  `label_ids` int64 [length], `feature_index` int64. The file name holds a fingerprint of
  everything that determines it, so a changed flag or checkpoint computes a new file.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  data_stat = os.stat(split.path)
  fingerprint = ner_data.settings_fingerprint(
      data=(os.path.abspath(split.path), data_stat.st_size, int(data_stat.st_mtime)),
      checkpoint=_checkpoint_identity(FLAGS.init_checkpoint), config=config.to_dict(),
      vocab=os.path.abspath(FLAGS.vocab_file), lower=FLAGS.do_lower_case,
      max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
      limit=(FLAGS.max_train_examples, FLAGS.max_eval_examples),
      layers=FLAGS.feature_layers, ltr=FLAGS.ltr, types=tuple(FLAGS.entity_types))
  path = os.path.join(cache_dir, f"{split.name}-{FLAGS.feature_layers}-{fingerprint}.tfrecord")
  if os.path.exists(path):
    logging.info("Using cached %s features: %s", split.name, path)
    return path

  @tf.function
  def extract(batch):
    outputs = encoder({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")},
                      training=False)
    return _combine_layers(outputs, FLAGS.feature_layers, config.num_hidden_layers)

  dataset = _array_dataset(split.arrays, FLAGS.feature_batch_size, False, 0)
  total = len(split.features)
  done, start = 0, time.time()
  with script_utils.atomic_path(path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for batch in dataset:
        values = extract(batch).numpy().astype(np.float16)
        lengths = batch["input_mask"].numpy().sum(-1)
        labels = batch["label_ids"].numpy()
        for row, index in enumerate(batch["feature_index"].numpy()):
          length = int(lengths[row])
          example = tf.train.Example(features=tf.train.Features(feature={
              "features": tf.train.Feature(bytes_list=tf.train.BytesList(
                  value=[values[row, :length].tobytes()])),
              "label_ids": tf.train.Feature(int64_list=tf.train.Int64List(
                  value=labels[row, :length].tolist())),
              "feature_index": tf.train.Feature(int64_list=tf.train.Int64List(
                  value=[int(index)])),
          }))
          writer.write(example.SerializeToString())
        done += len(lengths)
        elapsed = time.time() - start
        if done == total or done // FLAGS.feature_batch_size % 20 == 0:
          rate = done / max(elapsed, 1e-9)
          logging.info("%s features: %d/%d windows, %.1f windows/s, ETA %ds",
                       split.name, done, total, rate, int((total - done) / max(rate, 1e-9)))
  logging.info("Cached %s features in %s", split.name, path)
  return path


def _feature_dataset(path, dim, batch_size, training, seed):
  """Batches of cached activations: features float32 [B, S, dim], input_mask int32 [B, S],
  label_ids int32 [B, S] (-1 on padding), feature_index int32 [B]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spec = {"features": tf.io.FixedLenFeature([], tf.string),
          "label_ids": tf.io.VarLenFeature(tf.int64),
          "feature_index": tf.io.FixedLenFeature([], tf.int64)}

  def parse(record):
    parsed = tf.io.parse_single_example(record, spec)
    labels = tf.cast(tf.sparse.to_dense(parsed["label_ids"]), tf.int32)
    values = tf.reshape(tf.io.decode_raw(parsed["features"], tf.float16), [-1, dim])
    return {"features": tf.cast(values, tf.float32),
            "input_mask": tf.ones_like(labels),
            "label_ids": labels,
            "feature_index": tf.cast(parsed["feature_index"], tf.int32)}

  dataset = tf.data.TFRecordDataset(path)
  if training:
    dataset = dataset.shuffle(4096, seed=seed, reshuffle_each_iteration=True).repeat()
  dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  dataset = dataset.padded_batch(
      batch_size, padding_values={"features": 0.0, "input_mask": 0, "label_ids": -1,
                                  "feature_index": 0},
      drop_remainder=training)
  return dataset.map(_pad_to_bucket).prefetch(2)


def build_bilstm_tagger(feature_dim, num_labels, lstm_units):
  """Two-layer BiLSTM + output layer over frozen BERT activations.

  Inputs: features float32 [B, S, feature_dim], input_mask int32 [B, S].
  Output: logits float32 [B, S, num_labels].
  """
  import keras  # pylint: disable=g-import-not-at-top
  features = keras.Input(shape=(None, feature_dim), dtype="float32", name="features")
  input_mask = keras.Input(shape=(None,), dtype="int32", name="input_mask")
  mask = keras.ops.cast(input_mask, "bool")
  hidden = features
  for index in range(2):
    hidden = keras.layers.Bidirectional(
        keras.layers.LSTM(lstm_units, return_sequences=True), name=f"bilstm_{index}")(
            hidden, mask=mask)
  logits = keras.layers.Dense(num_labels, name="output", dtype="float32")(hidden)
  return keras.Model(inputs={"features": features, "input_mask": input_mask},
                     outputs={"logits": logits}, name="bilstm_tagger")


# --------------------------------------------------------------------------- main


def main(_):
  with script_utils.report_user_errors(FLAGS.verbose):
    _run()


def _run():
  # Imported here so that --help and flag errors answer without loading TensorFlow.
  import checkpoints  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  import ner_data  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import tokenization  # pylint: disable=g-import-not-at-top
  import training  # pylint: disable=g-import-not-at-top

  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
    raise script_utils.UserError(
        "At least one of --do_train, --do_eval or --do_predict must be set")
  if not os.path.isdir(FLAGS.data_dir):
    raise script_utils.UserError(f"--data_dir={FLAGS.data_dir}: no such folder")
  if FLAGS.doc_stride < 1:
    raise script_utils.UserError(f"--doc_stride={FLAGS.doc_stride}: must be at least 1")
  script_utils.check_input_file(FLAGS.vocab_file, "vocab_file")
  config = checkpoints.load_bert_config(FLAGS.bert_config_file)
  checkpoints.check_max_seq_length(FLAGS.max_seq_length, config)
  tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
  checkpoints.check_vocab_matches_config(len(tokenizer.vocab), config, FLAGS.vocab_file)
  script_utils.ensure_output_dir(FLAGS.output_dir)
  label_list = ner_data.make_label_list([t.strip() for t in FLAGS.entity_types if t.strip()])
  feature_mode = FLAGS.mode == "feature"

  # Every input is read and checked before any model is built: bad data fails in seconds.
  splits = {}
  if FLAGS.do_train:
    splits["train"] = _load_split("train", tokenizer, label_list, ner_data)
  if FLAGS.do_eval:
    splits["dev"] = _load_split("dev", tokenizer, label_list, ner_data)
  if FLAGS.do_predict:
    splits["test"] = _load_split("test", tokenizer, label_list, ner_data)

  num_train_steps = 1
  if FLAGS.do_train:
    num_train_steps = max(int(len(splits["train"].features) / FLAGS.train_batch_size
                              * FLAGS.num_train_epochs), 1)
    logging.info("Training %s: %d windows, batch %d, %d steps", FLAGS.mode,
                 len(splits["train"].features), FLAGS.train_batch_size, num_train_steps)
  warmup = int(num_train_steps * FLAGS.warmup_proportion)

  strategy = training.create_strategy(FLAGS.distribution_strategy, FLAGS.tpu_name,
                                      FLAGS.tpu_zone, FLAGS.gcp_project, FLAGS.num_gpus)
  training.setup_precision(FLAGS.dtype)
  training.setup_determinism(FLAGS.seed, FLAGS.deterministic)

  if feature_mode:
    # The frozen encoder runs once per split; only the BiLSTM tagger is trained.
    encoder = modeling.BertModel(config, causal=FLAGS.ltr)
    if FLAGS.init_checkpoint:
      checkpoints.load_checkpoint(encoder, FLAGS.init_checkpoint)
    else:
      logging.warning("No --init_checkpoint: features come from a random encoder")
    cache_dir = FLAGS.feature_cache_dir or os.path.join(FLAGS.output_dir, "feature_cache")
    script_utils.ensure_output_dir(cache_dir, "feature_cache_dir")
    caches = {name: _cache_features(split, encoder, config, cache_dir, ner_data)
              for name, split in splits.items()}
    dim = _feature_dim(FLAGS.feature_layers, config.hidden_size)
    with strategy.scope():
      model = build_bilstm_tagger(dim, len(label_list), FLAGS.lstm_units)
      optimizer = optimization.create_optimizer(
          FLAGS.feature_learning_rate, num_train_steps, warmup,
          optimizer_type=FLAGS.optimizer)
    tracked_encoder = model  # what the training checkpoints call `encoder=`

    def train_dataset_fn(ctx):
      return _feature_dataset(caches["train"], dim,
                              ctx.get_per_replica_batch_size(FLAGS.train_batch_size),
                              True, FLAGS.seed)

    def eval_dataset(name, batch_size):
      return _feature_dataset(caches[name], dim, batch_size, False, 0)
  else:
    with strategy.scope():
      model, tracked_encoder = modeling.build_token_classifier_model(
          config, len(label_list), causal=FLAGS.ltr, dropout_rate=FLAGS.dropout_rate)
      optimizer = optimization.create_optimizer(
          FLAGS.learning_rate, num_train_steps, warmup, optimizer_type=FLAGS.optimizer)

    def train_dataset_fn(ctx):
      return _array_dataset(splits["train"].arrays,
                            ctx.get_per_replica_batch_size(FLAGS.train_batch_size),
                            True, FLAGS.seed)

    def eval_dataset(name, batch_size):
      return _array_dataset(splits[name].arrays, batch_size, False, 0)

  has_checkpoint = training.latest_step(FLAGS.output_dir) > 0
  if has_checkpoint and not FLAGS.do_train:
    training.restore_model(model, FLAGS.output_dir)
  elif not feature_mode and not has_checkpoint:
    if FLAGS.init_checkpoint:
      checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
    else:
      logging.warning("No --init_checkpoint: the encoder starts from random weights")

  global_step = training.latest_step(FLAGS.output_dir)
  if FLAGS.do_train:
    result = training.run_training(
        strategy=strategy, model=model, encoder=tracked_encoder, optimizer=optimizer,
        loss_fn=_token_loss_fn, dataset_fn=train_dataset_fn,
        global_batch_size=FLAGS.train_batch_size, num_train_steps=num_train_steps,
        output_dir=FLAGS.output_dir, steps_per_loop=flags_common.steps_per_loop(FLAGS),
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        log_every_steps=FLAGS.log_every_steps, jit_compile=FLAGS.enable_xla,
        dtype=FLAGS.dtype)
    global_step = result["global_step"]

  for name, prefix, batch_size, results_file in (
      ("dev", "dev", FLAGS.eval_batch_size, "eval_results.txt"),
      ("test", "test", FLAGS.predict_batch_size, "test_results.txt")):
    if name not in splits:
      continue
    split = splits[name]
    predicted, nll_sum, count = _collect_predictions(
        training, model, eval_dataset(name, batch_size), len(split.features),
        FLAGS.max_seq_length)
    _evaluate_split(split, predicted, nll_sum, count, label_list, ner_data, prefix,
                    global_step, results_file)


if __name__ == "__main__":
  app.run(main)
