"""tf.data pipelines: the pretraining TFRecords, and TFRecord helpers for fine-tuning features.

`pretraining_dataset` reads create_pretraining_data.py's records as the original did,
except that its interleave is seeded, so a resumed run sees the same batches as an
uninterrupted one; `check_pretraining_files` names a file of the wrong schema before the
first batch, where the original failed deep inside TensorFlow."""

import collections
import dataclasses

import tensorflow as tf

from bert import masking_graph
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

# Records beyond the original's layout (create_pretraining_data.py --pack_sequences,
# --dynamic_masking) say what they are by their features: packed rows hold these...
PACKED_FEATURES = collections.OrderedDict([
    ("position_ids", ("max_seq_length", tf.int64)),
    ("sequence_ids", ("max_seq_length", tf.int64)),
    ("next_sentence_positions", ("max_sequences_per_row", tf.int64)),
    ("next_sentence_labels", ("max_sequences_per_row", tf.int64)),
    ("next_sentence_weights", ("max_sequences_per_row", tf.float32)),
])
# ... and records without masks hold no masked_lm_* but what they were made for.
UNMASKED_LAYOUT_FEATURES = collections.OrderedDict([
    ("max_predictions_per_seq", (1, tf.int64)),
    ("masked_lm_prob", (1, tf.float32)),
])
MASKED_LM_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")


@dataclasses.dataclass(frozen=True)
class RecordLayout:
  """What pretraining records hold: packed rows (several sequences a row, with
  max_sequences_per_row next-sentence slots) or one sequence a row; masked by the
  generator or not (masks drawn as it trains, masking_graph.mask_batch).
  `masked_lm_prob` is the one records without masks were made for."""
  packed: bool = False
  masked: bool = True
  max_sequences_per_row: int = 1
  masked_lm_prob: float = None

  def describe(self):
    rows = (f"packed rows (up to {self.max_sequences_per_row} sequences a row)"
            if self.packed else "one sequence a row")
    return f"{rows}, {'masked' if self.masked else 'without masks (masked as it trains)'}"


def pretraining_features(layout=RecordLayout()):
  """name -> (length key or number, dtype) of the records of `layout`."""
  features = collections.OrderedDict(
      (k, v) for k, v in PRETRAINING_FEATURES.items()
      if layout.masked or k not in MASKED_LM_FEATURES)
  if layout.packed:
    features.update(PACKED_FEATURES)
  if not layout.masked:
    features.update(UNMASKED_LAYOUT_FEATURES)
  return features


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq,
                             layout=RecordLayout()):
  sizes = {"max_seq_length": max_seq_length,
           "max_predictions_per_seq": max_predictions_per_seq,
           "max_sequences_per_row": layout.max_sequences_per_row}
  return {name: tf.io.FixedLenFeature([sizes.get(size, size)], dtype)
          for name, (size, dtype) in pretraining_features(layout).items()}


def _layout_of(feature):
  """The RecordLayout of a record's features (a tf.train.Features map)."""
  packed = "sequence_ids" in feature
  masked = "masked_lm_ids" in feature
  sequences = len(feature["next_sentence_weights"].float_list.value) if (
      packed and "next_sentence_weights" in feature) else 1
  prob = None
  if not masked and "masked_lm_prob" in feature:
    values = feature["masked_lm_prob"].float_list.value
    prob = round(float(values[0]), 6) if values else None
  return RecordLayout(packed=packed, masked=masked, max_sequences_per_row=sequences,
                      masked_lm_prob=prob)


# Files whose first records are read at once, each from its own reader: remote storage
# answers each file's first request in about one round trip, so thousands of files cost
# a few dozen round trips, not thousands.
PARALLEL_FIRST_RECORDS = 32


def _first_record(path, flag_name):
  """The first record of one TFRecord file (None when it holds none), read alone; a file
  that is no TFRecord file is a UserError naming it."""
  try:
    records = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as exc:
    raise errors.UserError(
        f"--{flag_name}: {path} is not a TFRecord file ({exc.message.splitlines()[0]}); "
        "pass the output of create_pretraining_data.py") from None
  return records[0] if records else None


def _first_records(files, flag_name):
  """[the first record of each file, or None for a file that holds none], the files
  read in parallel (PARALLEL_FIRST_RECORDS at a time). A read that fails is read again
  file by file, so that its one line names the file (_first_record)."""
  if len(files) == 1:
    return [_first_record(files[0], flag_name)]
  names = tf.constant(list(files))
  indices = tf.range(len(files), dtype=tf.int64)
  dataset = tf.data.Dataset.from_tensor_slices((indices, names)).interleave(
      lambda index, name: tf.data.TFRecordDataset(name).take(1).map(
          lambda record: (index, record)),
      cycle_length=PARALLEL_FIRST_RECORDS, num_parallel_calls=PARALLEL_FIRST_RECORDS,
      deterministic=False)
  found = [None] * len(files)
  try:
    for index, record in dataset.as_numpy_iterator():
      found[int(index)] = record
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
    return [_first_record(path, flag_name) for path in files]
  return found


def _example_features(path, record, flag_name):
  """The features of one file's first record (a tf.train.Features map); a UserError
  naming the file when it holds none or the record is no tf.train.Example."""
  if record is None:
    raise errors.UserError(
        f"--{flag_name}: {path} holds no records; recreate it with "
        "create_pretraining_data.py or leave it out")
  try:
    example = tf.train.Example.FromString(record)
  except Exception:  # noqa: BLE001 - protobuf raises its own DecodeError
    raise errors.UserError(
        f"--{flag_name}: {path} record 0 is not a tf.train.Example; pass the output of "
        "create_pretraining_data.py") from None
  return example.features.feature


def _check_first_record(path, feature, this, expected, flag_name, vocab_size):
  """A UserError naming the file unless its first record's features (of RecordLayout
  `this`) fit the flags (`expected`: max_seq_length, max_predictions_per_seq) and the
  vocabulary."""
  flag_of = {"max_seq_length": "--max_seq_length",
             "max_predictions_per_seq": "--max_predictions_per_seq"}
  max_predictions_per_seq = expected["max_predictions_per_seq"]
  sizes = dict(expected, max_sequences_per_row=this.max_sequences_per_row)
  for name, (size, dtype) in pretraining_features(this).items():
    if name not in feature:
      raise errors.UserError(
          f"--{flag_name}: {path} record 0 has no feature {name!r} (it has "
          f"{sorted(feature)}); pass the output of create_pretraining_data.py")
    kind = "float_list" if dtype == tf.float32 else "int64_list"
    values = getattr(feature[name], kind).value
    want = sizes.get(size, size)
    if len(values) != want:
      if size in flag_of:
        fix = (f"rerun with {flag_of[size]}={len(values)} or recreate the data with "
               f"{flag_of[size]}={want}")
      else:
        fix = "recreate the data with create_pretraining_data.py"
      raise errors.UserError(
          f"--{flag_name}: {path} record 0 has {name} of length {len(values)}, but "
          f"{flag_of.get(size, 'the schema')} is {want}; {fix}")
  if not this.masked:
    made_for = int(feature["max_predictions_per_seq"].int64_list.value[0])
    if made_for != max_predictions_per_seq:
      raise errors.UserError(
          f"--{flag_name}: {path} holds records without masks made for "
          f"--max_predictions_per_seq={made_for}, but --max_predictions_per_seq is "
          f"{max_predictions_per_seq}; rerun with --max_predictions_per_seq={made_for} "
          "or recreate the data")
  if vocab_size is not None:
    ids = list(feature["input_ids"].int64_list.value)
    if "masked_lm_ids" in feature:
      ids += list(feature["masked_lm_ids"].int64_list.value)
    if ids and (max(ids) >= vocab_size or min(ids) < 0):
      bad = max(ids) if max(ids) >= vocab_size else min(ids)
      raise errors.UserError(
          f"--{flag_name}: {path} record 0 has token id {bad}, but vocab_size is "
          f"{vocab_size} in --bert_config_file; the data was made with another "
          "vocabulary: recreate it with the model's vocab.txt")


def check_pretraining_files(files, max_seq_length, max_predictions_per_seq,
                            flag_name="input_file", max_files=50, vocab_size=None):
  """Fails with a UserError naming the file unless every file's first record fits the
  flags; the files must all have one layout. Returns that RecordLayout.

  Every file's first record is read (in parallel: cheap for thousands of files, on
  remote storage too), so a file of another layout anywhere in a glob is named here,
  not met as TensorFlow's parse error inside a training or evaluation step. The record
  framing of the first `max_files` files is walked too (tfrecord_framing: it reads a
  header a record, so not every file of a large glob).
  """
  files = list(files)
  expected = {"max_seq_length": max_seq_length,
              "max_predictions_per_seq": max_predictions_per_seq}
  for path in files[:max_files]:
    # A file cut short (an interrupted copy) would otherwise fail hours into training,
    # inside a step, without its name; the header walk reads 12 bytes a record.
    tfrecord_framing.check_tfrecord_framing(path, flag_name)
  layout = first = None
  for path, record in zip(files, _first_records(files, flag_name)):
    feature = _example_features(path, record, flag_name)
    this = _layout_of(feature)
    if layout is None:
      layout, first = this, path
    elif this != layout:
      raise errors.UserError(
          f"--{flag_name}: {path} holds {this.describe()}, but {first} holds "
          f"{layout.describe()}; pass files of one create_pretraining_data.py layout")
    _check_first_record(path, feature, this, expected, flag_name, vocab_size)
  return layout


def pretraining_dataset(files, max_seq_length, max_predictions_per_seq, batch_size,
                        is_training, input_context=None, seed=0,
                        layout=RecordLayout(), masking=None):
  """Batches of pretraining features, each a dict of int32/float32 [batch_size, length].

  files: list of TFRecord paths (input_checks.expand_file_patterns). batch_size: the
  per-replica batch. Training repeats forever with shuffled file order, a parallel
  (deterministic) interleave over up to 4 files and a 100-record shuffle, as the
  original. Evaluation reads the files once, in order, the last batch possibly short
  (the original repeated them to fill its steps, counting records twice). With several
  input pipelines (hosts) each takes every n-th file, or every n-th record when there
  are fewer files.
  seed: the shuffles' and the masks' (a run passes its --seed). layout: the records'
  RecordLayout (check_pretraining_files). Records without masks need
  masking=(masking.Vocabulary, masking.MaskingOptions): each batch is masked as it is
  read, anew each epoch, by stateless draws from `seed` and the batch's number.
  """
  spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq, layout)
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
  layout_names = set(UNMASKED_LAYOUT_FEATURES)

  def decode(record):
    parsed = decode_record(record, spec)
    return {k: v for k, v in parsed.items() if k not in layout_names}

  dataset = dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  dataset = dataset.batch(batch_size, drop_remainder=is_training)
  if not layout.masked:
    if masking is None:
      raise ValueError("records without masks need masking=(vocabulary, options)")
    vocabulary, options = masking
    # Evaluation draws from a seed of its own, the same masks at every evaluation.
    mask_seed = seed if is_training else seed + 7919
    dataset = dataset.enumerate().map(
        lambda index, batch: masking_graph.mask_batch(
            batch, index, max_predictions_per_seq, vocabulary, options, mask_seed,
            stream=pipeline_id),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return dataset.prefetch(tf.data.AUTOTUNE)


def file_label(files):
  """A short description of a file list for logs."""
  files = list(files)
  if len(files) <= 3:
    return ", ".join(files)
  return f"{len(files)} files ({paths.dirname(files[0]) or '.'}/...)"
