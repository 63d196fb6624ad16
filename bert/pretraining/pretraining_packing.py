"""Packing: several pretraining instances in one row of max_seq_length, and the rows'
features. NumPy only (the pretraining workers import it, never TensorFlow).

Each instance keeps its own [CLS] and [SEP]s, segment ids, masked positions and
next-sentence label; `position_ids` restart at 0 for each one and `sequence_ids` number
them within the row (1, 2, ...; 0 on padding), from which the model attends only within a
sequence. The packing is best-fit decreasing (the longest instance first, each into the
open row it fills most closely), which leaves almost no padding on real corpora; a row
also holds at most `max_predictions` masked positions and `max_sequences` instances.
"""

import bisect

import numpy as np

# The most instances a packed row holds unless told otherwise
# (--max_sequences_per_row): room for short instances (--short_seq_prob draws some of a
# few tokens) without many empty next-sentence slots in every row.
MAX_SEQUENCES_PER_ROW = 8


def pack(lengths, predictions, max_seq_length, max_predictions, max_sequences):
  """Best-fit decreasing: assigns every instance a row.

  lengths, predictions: int [n], each instance's tokens and masked positions. A row holds
  at most max_seq_length tokens, max_predictions predictions and max_sequences instances.
  Returns (row int64 [n], offset int64 [n], num_rows): the row of each instance and its
  first position there. Deterministic: ties go to the instance first in input order and
  to the row opened first.
  """
  lengths = np.asarray(lengths, np.int64)
  predictions = np.asarray(predictions, np.int64)
  n = len(lengths)
  row = np.zeros(n, np.int64)
  offset = np.zeros(n, np.int64)
  used_tokens, used_predictions, counts = [], [], []
  # Open rows by their free positions: free -> row numbers (opened first, first), and the
  # sorted list of the free-position values that have open rows.
  by_free = {}
  free_values = []
  shortest = int(lengths.min()) if n else 0

  def close(r, free):
    rows = by_free[free]
    rows.remove(r)
    if not rows:
      del by_free[free]
      del free_values[bisect.bisect_left(free_values, free)]

  def open_at(r, free):
    if free < shortest or counts[r] >= max_sequences or used_predictions[r] >= max_predictions:
      return  # nothing more can go in
    if free not in by_free:
      by_free[free] = []
      bisect.insort(free_values, free)
    by_free[free].append(r)

  for i in np.argsort(-lengths, kind="stable").tolist():
    length, wanted = int(lengths[i]), int(predictions[i])
    target = None
    for k in range(bisect.bisect_left(free_values, length), len(free_values)):
      free = free_values[k]
      for r in by_free[free]:
        if used_predictions[r] + wanted <= max_predictions:
          target = (r, free)
          break
      if target is not None:
        break
    if target is None:
      r = len(used_tokens)
      used_tokens.append(0)
      used_predictions.append(0)
      counts.append(0)
    else:
      r = target[0]
      close(r, target[1])
    row[i], offset[i] = r, used_tokens[r]
    used_tokens[r] += length
    used_predictions[r] += wanted
    counts[r] += 1
    open_at(r, max_seq_length - used_tokens[r])
  return row, offset, len(used_tokens)


def _scatter_rows(values, lengths, row, offset, num_rows, width):
  """values [n, L] whose first lengths[i] entries go to row[i] at offset[i] -> [R, width]."""
  out = np.zeros((num_rows, width), values.dtype)
  take = np.arange(values.shape[1])[None, :] < lengths[:, None]
  instance, column = np.nonzero(take)
  out[row[instance], offset[instance] + column] = values[instance, column]
  return out


def packed_rows(instances, row, offset, num_rows, max_seq_length, max_predictions,
                max_sequences, masked=True):
  """The features of the packed rows, {name: int64 or float32 NumPy array [R, width]}.

  instances: build_batch's arrays for every instance (input_ids [n, S], length [n],
  num_a [n], and with `masked` positions, labels and num_masked) plus
  next_sentence_labels [n]; row, offset: pack's assignment. Within a row the instances
  come in order of their offsets, so the masked positions stay sorted.
  """
  length = instances["length"]
  num_a = instances["num_a"]
  n, seq = instances["input_ids"].shape
  column = np.arange(seq)[None, :]
  # Order the instances by (row, offset): the k-th instance of a row is sequence k + 1.
  order = np.lexsort((offset, row))
  rank = np.empty(n, np.int64)
  rank[order] = np.arange(n)
  first_of_row = np.searchsorted(row[order], np.arange(num_rows))
  index_in_row = rank - first_of_row[row]
  segments = ((column >= num_a[:, None] + 2) & (column < length[:, None])).astype(np.int64)
  features = {
      "input_ids": _scatter_rows(instances["input_ids"], length, row, offset, num_rows,
                                 max_seq_length),
      "segment_ids": _scatter_rows(segments, length, row, offset, num_rows, max_seq_length),
      "position_ids": _scatter_rows(np.broadcast_to(column, (n, seq)).astype(np.int64),
                                    length, row, offset, num_rows, max_seq_length),
      "sequence_ids": _scatter_rows(np.broadcast_to((index_in_row + 1)[:, None], (n, seq)),
                                    length, row, offset, num_rows, max_seq_length),
  }
  features["input_mask"] = (features["sequence_ids"] > 0).astype(np.int64)
  # One next-sentence slot per sequence: its [CLS] position, label and weight 1.
  slot_row = np.zeros((num_rows, max_sequences), np.int64)
  ns = {"next_sentence_positions": slot_row.copy(), "next_sentence_labels": slot_row.copy(),
        "next_sentence_weights": np.zeros((num_rows, max_sequences), np.float32)}
  ns["next_sentence_positions"][row, index_in_row] = offset
  ns["next_sentence_labels"][row, index_in_row] = instances["next_sentence_labels"]
  ns["next_sentence_weights"][row, index_in_row] = 1.0
  features.update(ns)
  if masked:
    count = instances["num_masked"]
    # Each instance's predictions follow those of the instances before it in its row.
    before = np.zeros(n, np.int64)
    sorted_counts = count[order]
    cumulative = np.cumsum(sorted_counts) - sorted_counts
    row_start = cumulative[first_of_row]
    before[order] = cumulative - row_start[row[order]]
    positions = instances["positions"] + offset[:, None]
    features["masked_lm_positions"] = _scatter_rows(positions, count, row, before, num_rows,
                                                    max_predictions)
    features["masked_lm_ids"] = _scatter_rows(instances["labels"], count, row, before,
                                              num_rows, max_predictions)
    features["masked_lm_weights"] = (np.arange(max_predictions)[None, :] < np.bincount(
        row, weights=count, minlength=num_rows)[:, None]).astype(np.float32)
  return features
