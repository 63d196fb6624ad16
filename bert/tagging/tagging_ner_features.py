"""Feature-based NER (paper Table 7, bottom): frozen BERT activations and a BiLSTM tagger.

The encoder is frozen, so its activations are computed once per split and cached as a
TFRecord file (`write_feature_cache`); a two-layer BiLSTM is trained on them. The file's
name holds a fingerprint of every setting that determines the activations
(`cache_path`), so a changed flag or checkpoint computes a new file and runs that differ
only in the BiLSTM share one."""

import time

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from bert import input_pipeline
from bert.formats import checkpoint_files
from bert.tagging import tagging_options
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors

# --feature_layers choices: which encoder activations feed the BiLSTM.
LAYER_CHOICES = tagging_options.LAYER_CHOICES

# Layers each choice needs (at least); the others work with any encoder.
_LAYERS_NEEDED = {"second_to_last": 2, "sum_last_four": 4, "concat_last_four": 4}

# A progress line every this many encoder batches while caching.
_LOG_EVERY_BATCHES = 20


# --------------------------------------------------------------------------- layers


def check_layer_choice(choice, num_layers):
  """Raises UserError when `choice` needs more encoder layers than `num_layers`."""
  if choice not in LAYER_CHOICES:
    raise errors.UserError(
        f"--feature_layers={choice}: use one of {', '.join(LAYER_CHOICES)}")
  needed = _LAYERS_NEEDED.get(choice, 1)
  if num_layers < needed:
    raise errors.UserError(
        f"--feature_layers={choice} needs at least {needed} encoder layers; the model "
        f"has {num_layers}")


def combine_layers(outputs, choice):
  """The `choice` combination of a BertModel's outputs.

  outputs: embedding_output float [B, S, H] and encoder_outputs, one float [B, S, H] per
  transformer layer. Returns float [B, S, D]: D = 4H for concat_last_four, else H.
  sum_* are plain (equal-weight) sums; sum_all sums the transformer layers, not the
  embeddings. Call check_layer_choice first.
  """
  layers = outputs["encoder_outputs"]
  if choice == "embeddings":
    return outputs["embedding_output"]
  if choice == "last":
    return layers[-1]
  if choice == "second_to_last":
    return layers[-2]
  if choice == "sum_last_four":
    return tf.add_n(layers[-4:])
  if choice == "concat_last_four":
    return tf.concat(layers[-4:], axis=-1)
  return tf.add_n(layers)  # sum_all


def feature_dim(choice, hidden_size):
  """D of combine_layers' output for an encoder of width `hidden_size`."""
  return hidden_size * 4 if choice == "concat_last_four" else hidden_size


# --------------------------------------------------------------------------- the cache


def checkpoint_identity(path):
  """What makes two --init_checkpoint values the same weights: "random" without one,
  else the resolved checkpoint (a directory's latest ckpt-N, a Google prefix, a
  safetensors file) with the size and modification time of each of its files."""
  if not path:
    return "random"
  _, resolved = checkpoint_files.resolve_checkpoint(path)
  # Real paths: the same checkpoint typed relative, with ../ or through a symlink is the
  # same identity (and shares the cache).
  resolved = file_io.realpath(resolved)
  files = [resolved] if file_io.isfile(resolved) else (
      [resolved + ".index"] + file_io.glob(paths.glob_escape(resolved) + ".data-*"))
  stats = [(f, file_io.getsize(f), file_io.mtime_ns(f)) for f in files]
  return repr((resolved, stats))


def file_identity(path):
  """(real path, size, modification time) of a data file, for a fingerprint."""
  return (file_io.realpath(path), file_io.getsize(path), file_io.mtime_ns(path))


def cache_path(cache_dir, split_name, choice, fingerprint):
  """<cache_dir>/<split>-<feature_layers>-<fingerprint>.tfrecord"""
  return paths.join(cache_dir, f"{split_name}-{choice}-{fingerprint}.tfrecord")


def _record(values, labels, index):
  """One cache record: values float16 [length, D], labels int [length], index int.
  Serialized deterministically (map keys sorted): equal activations, equal bytes."""
  return tf.train.Example(features=tf.train.Features(feature={
      "features": tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[values.tobytes()])),
      "label_ids": tf.train.Feature(int64_list=tf.train.Int64List(
          value=labels.tolist())),
      "feature_index": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(index)])),
  })).SerializeToString(deterministic=True)


def write_feature_cache(path, encoder, dataset, choice, num_windows, label="features"):
  """Runs the frozen `encoder` over `dataset` and writes its activations to `path`.

  dataset: batches in feature order with input_ids, input_mask, segment_ids, label_ids
  int32 [B, S] and feature_index int32 [B]. Written atomically: an interrupted run leaves
  no file. Logs progress (windows/s, ETA) every few batches. One record per window:

    features       bytes, float16 [length, D]  (real tokens only: length = sum(input_mask))
    label_ids      int64 [length]              (-1 where no word label)
    feature_index  int64                       (the window's row in the split's features)
  """
  @tf.function
  def extract(batch):
    outputs = encoder({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")},
                      training=False)
    return combine_layers(outputs, choice)

  done, start = 0, time.time()
  with atomic_output.atomic_path(path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for number, batch in enumerate(dataset, start=1):
        values = extract(batch).numpy().astype(np.float16)
        lengths = batch["input_mask"].numpy().sum(-1)
        labels = batch["label_ids"].numpy()
        for row, index in enumerate(batch["feature_index"].numpy()):
          length = int(lengths[row])
          writer.write(_record(values[row, :length], labels[row, :length], index))
        done += len(lengths)
        if done == num_windows or number % _LOG_EVERY_BATCHES == 0:
          rate = done / max(time.time() - start, 1e-9)
          logging.info("%s: %d/%d windows, %.1f windows/s, ETA %ds", label, done,
                       num_windows, rate, int((num_windows - done) / max(rate, 1e-9)))
  return path


def _bucket_up(length):
  multiple = input_pipeline.TRAINING_LENGTH_MULTIPLE
  return (tf.maximum(length, 1) + multiple - 1) // multiple * multiple


def pad_to_bucket(batch):
  """Pads a padded batch of cached windows to S rounded up to TRAINING_LENGTH_MULTIPLE.

  batch: features float32 [B, S, D], input_mask int32 [B, S], label_ids int32 [B, S]
  (padded with 0, 0 and -1), feature_index int32 [B]. Returns the same keys, S -> S'.
  """
  length = tf.shape(batch["input_mask"])[1]
  extra = _bucket_up(length) - length
  padded = dict(batch)
  padded["features"] = tf.pad(batch["features"], [[0, 0], [0, extra], [0, 0]])
  padded["input_mask"] = tf.pad(batch["input_mask"], [[0, 0], [0, extra]])
  padded["label_ids"] = tf.pad(batch["label_ids"], [[0, 0], [0, extra]], constant_values=-1)
  return padded


def _parse_record(record, dim):
  spec = {"features": tf.io.FixedLenFeature([], tf.string),
          "label_ids": tf.io.VarLenFeature(tf.int64),
          "feature_index": tf.io.FixedLenFeature([], tf.int64)}
  parsed = tf.io.parse_single_example(record, spec)
  labels = tf.cast(tf.sparse.to_dense(parsed["label_ids"]), tf.int32)
  values = tf.reshape(tf.io.decode_raw(parsed["features"], tf.float16), [-1, dim])
  return {"features": tf.cast(values, tf.float32),
          "input_mask": tf.ones_like(labels),
          "label_ids": labels,
          "feature_index": tf.cast(parsed["feature_index"], tf.int32)}


def feature_dataset(path, dim, batch_size, training, seed=0, input_context=None):
  """Batches of cached activations from `path`.

  Elements: features float32 [B, S, dim], input_mask int32 [B, S], label_ids int32
  [B, S] (-1 on padding), feature_index int32 [B]; S is the batch's longest window
  rounded up to input_pipeline.TRAINING_LENGTH_MULTIPLE. training: sharded by input
  pipeline (input_context), shuffled (seeded), repeated, full batches only; else one
  pass in file order.
  """
  dataset = tf.data.TFRecordDataset(path)
  if training:
    if input_context is not None and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    dataset = dataset.shuffle(4096, seed=seed, reshuffle_each_iteration=True).repeat()
  dataset = dataset.map(lambda record: _parse_record(record, dim),
                        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  dataset = dataset.padded_batch(
      batch_size, padding_values={"features": 0.0, "input_mask": 0, "label_ids": -1,
                                  "feature_index": 0},
      drop_remainder=training)
  return dataset.map(pad_to_bucket).prefetch(2)


# --------------------------------------------------------------------------- the tagger


def build_bilstm_tagger(dim, num_labels, lstm_units, dtype=None):
  """Two-layer BiLSTM + output layer over frozen BERT activations.

  Inputs: features float32 [B, S, dim], input_mask int32 [B, S].
  Output: logits float32 [B, S, num_labels] (the loss is
  heads.token_classification_loss, as in fine-tuning).
  dtype: the BiLSTMs' Keras dtype policy (None: the global policy), as heads.build_*.
  """
  features = keras.Input(shape=(None, dim), dtype="float32", name="features")
  input_mask = keras.Input(shape=(None,), dtype="int32", name="input_mask")
  mask = keras.ops.cast(input_mask, "bool")
  hidden = features
  for index in range(2):
    hidden = keras.layers.Bidirectional(
        keras.layers.LSTM(lstm_units, return_sequences=True, dtype=dtype),
        name=f"bilstm_{index}", dtype=dtype)(hidden, mask=mask)
  logits = keras.layers.Dense(num_labels, name="output", dtype="float32")(hidden)
  return keras.Model(inputs={"features": features, "input_mask": input_mask},
                     outputs={"logits": logits}, name="bilstm_tagger")
