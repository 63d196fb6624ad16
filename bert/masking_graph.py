"""The masking rules in the graph: run_pretraining.py masks each batch of records made
without masks (create_pretraining_data.py --dynamic_masking) as it reads them.

The rules are bert/masking.py's, which the generator applies in NumPy; here they run in
the graph, on a batch at a time. The draws are stateless, a function of the seed and the
batch's number in the stream, so every epoch draws new masks, the same seed the same
masks, and a resumed run (which skips the batches it trained on) those of an
uninterrupted one. Packed rows are masked sequence by sequence. Apart from bert/masking.py
because that one loads no TensorFlow: the generator's worker processes import it."""

import numpy as np
import tensorflow as tf


def _masking_seeds(seed, batch_index, stream):
  """Three stateless seeds [2] for the batch `batch_index` of input stream `stream`."""
  index = tf.cast(batch_index, tf.int64) * 1024 + tf.cast(stream, tf.int64)
  return [tf.stack([tf.constant(seed, tf.int64), index * 4 + k]) for k in range(3)]


def _segment_counts(values, segments, width):
  """Per row, the sum of `values` int32 [B, S] over each segment id in [0, width)."""
  batch = tf.shape(values)[0]
  flat = segments + tf.range(batch)[:, None] * width
  return tf.reshape(tf.math.unsorted_segment_sum(values, flat, batch * width),
                    [batch, width])


def _words(ids, sequence, position, vocabulary, whole_words):
  """The candidates and their words, as the original groups them.

  Returns candidate bool [B, S] (no [CLS], [SEP] or padding), word int32 [B, S] (1, 2,
  ... along the row; 0 off the candidates) and, per word number, size and sequence int32
  [B, S + 1]. With whole_words a "##" piece joins the candidate before it (across A's
  [SEP] too, as the original), except as its sequence's first candidate.
  """
  candidate = ((sequence > 0) & tf.not_equal(ids, vocabulary.cls_id)
               & tf.not_equal(ids, vocabulary.sep_id))
  start = candidate
  if whole_words:
    table = tf.constant(np.frombuffer(vocabulary.is_subword, np.uint8).astype(np.int32))
    subword = tf.gather(table, tf.clip_by_value(ids, 0, len(vocabulary.is_subword) - 1)) > 0
    start = candidate & (~subword | tf.equal(position, 1))
  word = tf.where(candidate, tf.cumsum(tf.cast(start, tf.int32), axis=1), 0)
  width = tf.shape(ids)[1] + 1
  size = _segment_counts(tf.cast(candidate, tf.int32), word, width)
  batch = tf.shape(ids)[0]
  word_sequence = tf.maximum(tf.reshape(tf.math.unsorted_segment_max(
      tf.where(start, sequence, 0), word + tf.range(batch)[:, None] * width,
      batch * width), [batch, width]), 0)
  return candidate, word, size, word_sequence


def _take_words(size, word_sequence, budget, seed):
  """Which words are masked, bool [B, S + 1] by word number: each sequence's words in a
  uniformly random order, each taken while it fits the sequence's budget, a word that
  would exceed it skipped (the original's loop over its shuffled candidates)."""
  batch, width = tf.shape(size)[0], tf.shape(size)[1]
  key = tf.random.stateless_uniform([batch, width], seed, dtype=tf.float64)
  # Sorted by sequence, then by the random key; words of size 0 (none) go last.
  sort_key = tf.where(size > 0, tf.cast(word_sequence, tf.float64) + key,
                      tf.cast(width + 1, tf.float64))
  order = tf.argsort(sort_key, axis=1, stable=True)
  ordered = [tf.transpose(tf.gather(v, order, batch_dims=1))  # [S + 1, B] each
             for v in (size, word_sequence)]
  ordered.append(tf.transpose(tf.gather(budget, tf.transpose(ordered[1]), batch_dims=1)))

  def step(carry, column):
    (used, previous), _ = carry
    size_r, sequence_r, budget_r = column
    used = tf.where(tf.equal(sequence_r, previous), used, 0)  # a new sequence starts at 0
    fits = (size_r > 0) & (used + size_r <= budget_r)
    return (used + tf.where(fits, size_r, 0), sequence_r), fits

  _, taken = tf.scan(step, tuple(ordered), initializer=(
      (tf.zeros([batch], tf.int32), tf.fill([batch], -1)), tf.zeros([batch], tf.bool)))
  inverse = tf.argsort(order, axis=1, stable=True)
  return tf.gather(tf.transpose(taken), inverse, batch_dims=1)


def _listed_positions(ids, chosen, max_predictions_per_seq):
  """The chosen positions in increasing order, as the original lists them: positions and
  labels int32 [B, P] (0-padded), weights float32 [B, P]."""
  positions = tf.argsort(tf.cast(~chosen, tf.int32), axis=1, stable=True)
  positions = positions[:, :max_predictions_per_seq]
  count = tf.reduce_sum(tf.cast(chosen, tf.int32), axis=1)
  valid = tf.range(tf.shape(positions)[1])[None, :] < count[:, None]
  positions = tf.where(valid, positions, 0)
  labels = tf.where(valid, tf.gather(ids, positions, batch_dims=1), 0)
  pad = [[0, 0], [0, max_predictions_per_seq - tf.shape(positions)[1]]]  # rows < P long
  return tf.pad(positions, pad), tf.pad(labels, pad), tf.pad(tf.cast(valid, tf.float32), pad)


def mask_batch(features, batch_index, max_predictions_per_seq, vocabulary, options, seed,
               stream=0):
  """Masks a batch of records without masks by bert/masking.py's rules.

  features: input_ids, input_mask int32 [B, S]; packed rows also sequence_ids and
  position_ids [B, S]. batch_index: int64 scalar, the batch's number in the stream;
  stream: the input pipeline's number (several hosts draw different masks);
  vocabulary: masking.Vocabulary; options: masking.MaskingOptions. Returns the features
  with input_ids masked and the original's masked_lm_positions, masked_lm_ids (int32
  [B, P]) and masked_lm_weights (float32 [B, P]).
  """
  ids = features["input_ids"]
  if "sequence_ids" in features:
    sequence, position = features["sequence_ids"], features["position_ids"]
  else:
    sequence = tf.cast(features["input_mask"] > 0, tf.int32)
    position = tf.broadcast_to(tf.range(tf.shape(ids)[1])[None, :], tf.shape(ids))
  order_seed, replace_seed, token_seed = _masking_seeds(seed, batch_index, stream)
  candidate, word, size, word_sequence = _words(ids, sequence, position, vocabulary,
                                                options.do_whole_word_mask)
  # Each sequence's budget, masking.prediction_budget's formula, from its length with
  # [CLS] and [SEP]s (tf.round rounds half to even, as NumPy's rint).
  length = _segment_counts(tf.cast(sequence > 0, tf.int32), sequence, tf.shape(ids)[1] + 1)
  budget = tf.maximum(1, tf.cast(tf.round(tf.cast(length, tf.float64)
                                          * options.masked_lm_prob), tf.int32))
  budget = tf.minimum(tf.minimum(budget, max_predictions_per_seq), length - 3)
  taken = _take_words(size, word_sequence, budget, order_seed)
  chosen = candidate & tf.gather(taken, word, batch_dims=1)
  positions, labels, weights = _listed_positions(ids, chosen, max_predictions_per_seq)
  # 80/10/10: one uniform draw per position.
  draw = tf.random.stateless_uniform(tf.shape(ids), replace_seed)
  as_mask = chosen & (draw < options.mask_token_prob)
  as_random = chosen & ~as_mask & (draw >= 1.0 - options.random_token_prob)
  random_ids = tf.gather(tf.constant(vocabulary.vocab_ids, tf.int32),
                         tf.random.stateless_uniform(
                             tf.shape(ids), token_seed, minval=0,
                             maxval=len(vocabulary.vocab_ids), dtype=tf.int32))
  masked_ids = tf.where(as_mask, vocabulary.mask_id, tf.where(as_random, random_ids, ids))
  return {**features, "input_ids": masked_ids, "masked_lm_positions": positions,
          "masked_lm_ids": labels, "masked_lm_weights": weights}
