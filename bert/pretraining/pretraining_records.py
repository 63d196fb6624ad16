"""tf.train.Example records written by hand, for the pretraining data, batch by batch.

NumPy only (the pretraining workers import it, never TensorFlow). The bytes
of a record equal `example.SerializeToString(deterministic=True)` of the original's
padded tf.train.Example (features in key order, packed values): `ExampleEncoder.encode`
lays out a whole batch of instances with one gather, `varint_rows` encodes id lists.
"""

import struct

import numpy as np

# tf.train.Example written by hand: the bytes equal
# `example.SerializeToString(deterministic=True)` (features in key order, packed values).
# The id lists are varint-encoded for a whole batch in NumPy; the other features depend
# only on a length or a label and are built once.


def _varint(value):
  out = bytearray()
  while True:
    bits = value & 0x7F
    value >>= 7
    if value:
      out.append(bits | 0x80)
    else:
      out.append(bits)
      return bytes(out)


def _len_delimited(tag, payload):
  return tag + _varint(len(payload)) + payload


def _feature_entry(key, feature):
  """One map<string, Feature> entry of Features.feature."""
  return _len_delimited(b"\x0a", _len_delimited(b"\x0a", key.encode()) +
                        _len_delimited(b"\x12", feature))


def _int64_feature(packed):
  return _len_delimited(b"\x1a", _len_delimited(b"\x0a", packed))


def _float_feature(packed):
  return _len_delimited(b"\x12", _len_delimited(b"\x0a", packed))


def _entry_header(key, packed_length, is_float=False):
  """The bytes of a feature entry that come before its packed values."""
  list_header = b"\x0a" + _varint(packed_length)
  feature = (b"\x12" if is_float else b"\x1a") + _varint(
      len(list_header) + packed_length) + list_header
  inner = _len_delimited(b"\x0a", key.encode()) + b"\x12" + _varint(
      len(feature) + packed_length) + feature
  return b"\x0a" + _varint(len(inner) + packed_length) + inner


def varint_rows(values):
  """Varint-encodes each row of an int array [n, k] of values in [0, 2**28).

  Returns (bytes uint8 [total], num_bytes int64 [n]): the rows' packed encodings back to
  back, and each row's length.
  """
  values = np.asarray(values).astype("<u4")
  if values.size and int(values.max()) >= 1 << 28:
    raise ValueError("token id or position of 2**28 or more")
  more1, more2, more3 = values >= 1 << 7, values >= 1 << 14, values >= 1 << 21
  num_bytes = 1 + more1.astype(np.int64) + more2 + more3
  # Each value's varint bytes, laid out little-endian in one uint32: 7 bits a byte, the
  # top bit of a byte set when another byte follows.
  packed = ((values & 0x7F) | ((values << 1) & 0x7F00) | ((values << 2) & 0x7F0000) |
            ((values << 3) & 0x7F000000))
  packed |= more1.astype("<u4") << 7
  packed |= more2.astype("<u4") << 15
  packed |= more3.astype("<u4") << 23
  keep = np.arange(4) < num_bytes[..., None]
  return packed.view(np.uint8).reshape(values.shape + (4,))[keep], num_bytes.sum(axis=1)


class ExampleEncoder:
  """Serializes batches of instances as the original's padded tf.train.Example.

  A record is 13 byte runs: the Example's length header; then per feature, in key order,
  an entry header (fixed, or depending only on the packed length) and the packed values.
  Headers and the small features come from a table built once; the packed id lists and
  the 0/1 masks are encoded for the whole batch; one gather lays out every record.
  """

  def __init__(self, max_seq_length, max_predictions_per_seq):
    seq, preds = max_seq_length, max_predictions_per_seq
    self.max_seq_length, self.max_predictions_per_seq = seq, preds
    table = bytearray()

    def add_all(pieces):
      starts = []
      for piece in pieces:
        starts.append(len(table))
        table.extend(piece)
      return (np.asarray(starts, np.int64),
              np.asarray([len(p) for p in pieces], np.int64))

    # Ids below 2**28 take at most 4 varint bytes.
    self._ids_header = add_all([_entry_header("input_ids", n) for n in range(4 * seq + 1)])
    self._lm_header = add_all([_entry_header("masked_lm_ids", n)
                               for n in range(4 * preds + 1)])
    self._pos_header = add_all([_entry_header("masked_lm_positions", n)
                                for n in range(4 * preds + 1)])
    self._mask_header = add_all([_entry_header("input_mask", seq)])
    self._segment_header = add_all([_entry_header("segment_ids", seq)])
    self._weights = add_all([_feature_entry("masked_lm_weights", _float_feature(
        struct.pack("<f", 1.0) * n + struct.pack("<f", 0.0) * (preds - n)))
                             for n in range(preds + 1)])
    self._labels = add_all([_feature_entry("next_sentence_labels",
                                           _int64_feature(bytes([v]))) for v in (0, 1)])
    # Headers and table features at their longest, plus the packed values: ids (4 bytes at
    # most each), the 0/1 mask and segment ids (1 each), labels and positions (4 each).
    longest_body = int(sum(int(lengths.max()) for _, lengths in (
        self._ids_header, self._lm_header, self._pos_header, self._mask_header,
        self._segment_header, self._weights, self._labels)) + 6 * seq + 8 * preds)
    self._outer_header = add_all([b"\x0a" + _varint(n) for n in range(longest_body + 1)])
    self._table = np.frombuffer(bytes(table), np.uint8)

  def encode(self, batch):
    """batch: build_batch's dict. Returns (records bytes concatenated, sizes int64 [n])."""
    seq, preds = self.max_seq_length, self.max_predictions_per_seq
    positions, labels = batch["positions"], batch["labels"]
    n = positions.shape[0]
    if positions.shape[1] < preds:  # max_predictions_per_seq > max_seq_length
      pad = np.zeros((n, preds - positions.shape[1]), np.int64)
      positions = np.concatenate([positions, pad], axis=1)
      labels = np.concatenate([labels, pad], axis=1)
    ids, ids_len = varint_rows(batch["input_ids"])
    lm_ids, lm_len = varint_rows(labels)
    lm_pos, pos_len = varint_rows(positions)
    length = batch["length"]
    column = np.arange(seq)[None, :]
    mask = (column < length[:, None]).astype(np.uint8)
    # [CLS] A [SEP] are segment 0, B [SEP] segment 1.
    segments = ((column >= batch["num_a"][:, None] + 2) & (mask > 0)).astype(np.uint8)
    # One source array: the table, then this batch's encodings.
    sources = [self._table, ids, lm_ids, lm_pos, mask.ravel(), segments.ravel()]
    base = np.cumsum([0] + [len(s) for s in sources])
    source = np.concatenate(sources)

    def run_of(table_runs, index):
      return table_runs[0][index], table_runs[1][index]

    def runs_in(source_index, run_lengths):
      starts = base[source_index] + np.cumsum(run_lengths) - run_lengths
      return starts, run_lengths

    fixed = np.zeros(n, np.int64)
    ones = fixed + 1
    body = [
        run_of(self._ids_header, ids_len), runs_in(1, ids_len),
        run_of(self._mask_header, fixed), runs_in(4, seq * ones),
        run_of(self._lm_header, lm_len), runs_in(2, lm_len),
        run_of(self._pos_header, pos_len), runs_in(3, pos_len),
        run_of(self._weights, batch["num_masked"]),
        run_of(self._labels, batch["next_sentence_labels"]),
        run_of(self._segment_header, fixed), runs_in(5, seq * ones),
    ]
    body_length = sum(run_length for _, run_length in body)
    runs = [run_of(self._outer_header, body_length)] + body
    starts = np.stack([s for s, _ in runs], axis=1).ravel()
    run_lengths = np.stack([l for _, l in runs], axis=1).ravel()
    # Concatenated ranges [start, start + length) of every run, in record order.
    out_start = np.cumsum(run_lengths) - run_lengths
    index = np.repeat(starts - out_start, run_lengths) + np.arange(int(run_lengths.sum()))
    sizes = run_lengths.reshape(n, len(runs)).sum(axis=1)
    return source[index].tobytes(), sizes


def encode_features(features, float_names=()):
  """Serializes rows of features as tf.train.Examples, deterministically.

  features: {name: NumPy array [n, width]} of ints (below 2**28) or, for the names in
  float_names, floats. Used for the layouts beyond the original's (packed rows, records
  without masks), where speed matters less than for ExampleEncoder. Returns (records
  bytes concatenated, sizes int64 [n]), the bytes of
  `example.SerializeToString(deterministic=True)`.
  """
  names = sorted(features)
  n = len(next(iter(features.values())))
  headers = {}
  columns = []  # per feature: (encoded bytes, per-row lengths, is_float)
  for name in names:
    values = features[name]
    if name in float_names:
      raw = np.ascontiguousarray(values, "<f4").view(np.uint8).reshape(n, -1)
      columns.append((raw.ravel(), np.full(n, raw.shape[1], np.int64), True))
    else:
      columns.append(varint_rows(values) + (False,))
  starts = [np.cumsum(lengths) - lengths for _, lengths, _ in columns]
  records, sizes = [], np.zeros(n, np.int64)
  for r in range(n):
    body = bytearray()
    for name, (data, lengths, is_float), start in zip(names, columns, starts):
      length = int(lengths[r])
      key = (name, length)
      if key not in headers:
        headers[key] = _entry_header(name, length, is_float)
      body += headers[key]
      body += data[start[r]:start[r] + length].tobytes()
    record = b"\x0a" + _varint(len(body)) + bytes(body)
    records.append(record)
    sizes[r] = len(record)
  return b"".join(records), sizes
