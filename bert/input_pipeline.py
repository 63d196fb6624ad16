"""tf.data pipelines: the pretraining TFRecords, and TFRecord helpers for fine-tuning features.

`pretraining_dataset` reads create_pretraining_data.py's records as the original did,
except that its interleave is seeded, so a resumed run sees the same batches as an
uninterrupted one; `check_pretraining_files` names a file of the wrong schema before the
first batch, where the original failed deep inside TensorFlow."""

import collections

import tensorflow as tf

from bert.utils import atomic_output
from bert.utils import paths
from bert.utils import errors
from bert.utils import tfrecord_framing

# name -> (length key, dtype) of create_pretraining_data.py's records (the spec's table).
PRETRAINING_FEATURES = collections.OrderedDict([
    ("input_ids", ("max_seq_length", tf.int64)),
    ("input_mask", ("max_seq_length", tf.int64)),
    ("segment_ids", ("max_seq_length", tf.int64)),
    ("masked_lm_positions", ("max_predictions_per_seq", tf.int64)),
    ("masked_lm_ids", ("max_predictions_per_seq", tf.int64)),
    ("masked_lm_weights", ("max_predictions_per_seq", tf.float32)),
    ("next_sentence_labels", (1, tf.int64)),
])

# The original reads at most this many files in parallel (its num_cpu_threads) and keeps
# a shuffle buffer of 100 records after the interleave.
NUM_PARALLEL_FILES = 4
RECORD_SHUFFLE_BUFFER = 100


# --------------------------------------------------------------------------- padding

# Training batches of the sentence-pair, multiple-choice and token tasks are cut to their
# longest row rounded up to a multiple of this: few distinct shapes for a compiled
# (--enable_xla) step and for the NER feature cache's tf.function. Eval and prediction
# batches are cut to their longest row exactly: evaluation.predict traces one
# shape-generic graph, and every padded position is matmul work.
TRAINING_LENGTH_MULTIPLE = 32


def trim_to_longest(features, keys, multiple=1, mask_key="input_mask"):
  """Cuts the padding no row of a batch uses (per-batch dynamic padding).

  The sequence axis is the last axis of `features[mask_key]` (1 on real tokens, 0 on
  padding), e.g. int32 [B, S] for sentences, [B, C, S] for multiple choice. Every tensor
  named in `keys` is cut on that axis (a [B, S, D] feature tensor keeps its D) to the
  longest real row of the batch, rounded up to a multiple of `multiple` (few distinct
  lengths, so a tf.function traces few shapes), at least 1, at most the padded length.
  Other entries pass through unchanged. Returns a new dict.
  """
  mask = features[mask_key]
  axis = len(mask.shape) - 1
  padded = tf.shape(mask)[axis]
  length = tf.maximum(tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1)), 1)
  if multiple > 1:
    length = (length + multiple - 1) // multiple * multiple
  length = tf.minimum(length, padded)
  index = (slice(None),) * axis + (slice(0, length),)
  return {k: (v[index] if k in keys else v) for k, v in features.items()}


def array_dataset(arrays, batch_size, is_training, trim_keys, multiple=1, seed=0,
                  input_context=None):
  """Batches of in-memory feature arrays ({name: np.ndarray [N, ...]}), trimmed per batch.

  Training: sharded by input pipeline, shuffled (seeded, reshuffled each epoch), repeated,
  full batches only. Otherwise one pass in order, the last batch possibly short. Every
  batch goes through trim_to_longest(batch, trim_keys, multiple).
  """
  dataset = tf.data.Dataset.from_tensor_slices(arrays)
  if is_training:
    if input_context is not None and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    count = len(next(iter(arrays.values())))
    dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True).repeat()
  dataset = dataset.batch(batch_size, drop_remainder=is_training)
  return dataset.map(lambda batch: trim_to_longest(batch, trim_keys, multiple)).prefetch(2)


# --------------------------------------------------------------------------- generic


def int64_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def float_feature(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def make_example(features, float_features=None):
  """{name: list of int or float} -> tf.train.Example.

  float_features: the names written as FloatList (the others as Int64List); None: every
  list holding a Python float (slower: each value is looked at).
  """
  feature = {}
  for name, values in features.items():
    values = list(values)
    if float_features is None:
      is_float = any(isinstance(v, float) for v in values)
    else:
      is_float = name in float_features
    feature[name] = float_feature(values) if is_float else int64_feature(values)
  return tf.train.Example(features=tf.train.Features(feature=feature))


def write_examples(path, feature_dicts, float_features=None):
  """Writes an iterable of {name: list} dicts as one TFRecord file, atomically.

  float_features: as for make_example. Returns the number of records written.
  """
  count = 0
  with atomic_output.atomic_path(path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for features in feature_dicts:
        writer.write(make_example(features, float_features).SerializeToString())
        count += 1
  return count


def decode_record(record, spec):
  """Parses one serialized Example; int64 features become int32 (what the model takes).

  record: string scalar. Returns {name: int32 or float32 [length]}.
  """
  parsed = tf.io.parse_single_example(record, spec)
  return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
          for name, t in parsed.items()}


def read_examples(files, spec):
  """An unbatched dataset of decoded records from TFRecord files, in order."""
  return tf.data.TFRecordDataset(list(files)).map(
      lambda r: decode_record(r, spec), num_parallel_calls=tf.data.AUTOTUNE)


# --------------------------------------------------------------------------- pretraining


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
  sizes = {"max_seq_length": max_seq_length,
           "max_predictions_per_seq": max_predictions_per_seq}
  return {name: tf.io.FixedLenFeature([sizes.get(size, size)], dtype)
          for name, (size, dtype) in PRETRAINING_FEATURES.items()}


def check_pretraining_files(files, max_seq_length, max_predictions_per_seq,
                            flag_name="input_file", max_files=50, vocab_size=None):
  """Fails with a UserError naming the file unless its first record fits the flags.

  Checks up to `max_files` files (one record each; cheap even on remote storage).
  """
  expected = {"max_seq_length": max_seq_length,
              "max_predictions_per_seq": max_predictions_per_seq}
  flag_of = {"max_seq_length": "--max_seq_length",
             "max_predictions_per_seq": "--max_predictions_per_seq"}
  for path in list(files)[:max_files]:
    # A file cut short (an interrupted copy) would otherwise fail hours into training,
    # inside a step, without its name; the header walk reads 12 bytes a record.
    tfrecord_framing.check_tfrecord_framing(path, flag_name)
    try:
      records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as exc:
      raise errors.UserError(
          f"--{flag_name}: {path} is not a TFRecord file ({exc.message.splitlines()[0]}); "
          "pass the output of create_pretraining_data.py") from None
    if not records:
      raise errors.UserError(
          f"--{flag_name}: {path} holds no records; recreate it with "
          "create_pretraining_data.py or leave it out")
    try:
      example = tf.train.Example.FromString(records[0])
    except Exception:  # noqa: BLE001 - protobuf raises its own DecodeError
      raise errors.UserError(
          f"--{flag_name}: {path} record 0 is not a tf.train.Example; pass the output of "
          "create_pretraining_data.py") from None
    feature = example.features.feature
    for name, (size, dtype) in PRETRAINING_FEATURES.items():
      if name not in feature:
        raise errors.UserError(
            f"--{flag_name}: {path} record 0 has no feature {name!r} (it has "
            f"{sorted(feature)}); pass the output of create_pretraining_data.py")
      kind = "float_list" if dtype == tf.float32 else "int64_list"
      values = getattr(feature[name], kind).value
      want = expected.get(size, size)
      if len(values) != want:
        if size in flag_of:
          fix = (f"rerun with {flag_of[size]}={len(values)} or recreate the data with "
                 f"{flag_of[size]}={want}")
        else:
          fix = "recreate the data with create_pretraining_data.py"
        raise errors.UserError(
            f"--{flag_name}: {path} record 0 has {name} of length {len(values)}, but "
            f"{flag_of.get(size, 'the schema')} is {want}; {fix}")
    if vocab_size is not None:
      ids = list(feature["input_ids"].int64_list.value) + list(
          feature["masked_lm_ids"].int64_list.value)
      if ids and (max(ids) >= vocab_size or min(ids) < 0):
        bad = max(ids) if max(ids) >= vocab_size else min(ids)
        raise errors.UserError(
            f"--{flag_name}: {path} record 0 has token id {bad}, but vocab_size is "
            f"{vocab_size} in --bert_config_file; the data was made with another "
            "vocabulary: recreate it with the model's vocab.txt")
  return list(files)


def pretraining_dataset(files, max_seq_length, max_predictions_per_seq, batch_size,
                        is_training, input_context=None, seed=12345):
  """Batches of pretraining features, each a dict of int32/float32 [batch_size, length].

  files: list of TFRecord paths (input_checks.expand_file_patterns). batch_size: the
  per-replica batch. Training repeats forever with shuffled file order, a parallel
  (deterministic) interleave over up to 4 files and a 100-record shuffle; eval reads the
  files in order and also repeats, as the original did. With several input pipelines
  (hosts) each takes every n-th file, or every n-th record when there are fewer files.
  """
  spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
  files = list(files)
  pipelines = input_context.num_input_pipelines if input_context else 1
  pipeline_id = input_context.input_pipeline_id if input_context else 0
  shard_records = pipelines > 1 and len(files) < pipelines
  if pipelines > 1 and not shard_records:
    files = files[pipeline_id::pipelines]
  if is_training:
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files))
    dataset = dataset.repeat().shuffle(len(files), seed=seed)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset, cycle_length=min(NUM_PARALLEL_FILES, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shard_records:
      dataset = dataset.shard(pipelines, pipeline_id)
    dataset = dataset.shuffle(RECORD_SHUFFLE_BUFFER, seed=seed + 1)
  else:
    dataset = tf.data.TFRecordDataset(files)
    if shard_records:
      dataset = dataset.shard(pipelines, pipeline_id)
    dataset = dataset.repeat()
  dataset = dataset.map(lambda r: decode_record(r, spec),
                        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  dataset = dataset.batch(batch_size, drop_remainder=True)
  return dataset.prefetch(tf.data.AUTOTUNE)


def file_label(files):
  """A short description of a file list for logs."""
  files = list(files)
  if len(files) <= 3:
    return ", ".join(files)
  return f"{len(files)} files ({paths.dirname(files[0]) or '.'}/...)"
