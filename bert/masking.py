"""Masks drawn as pretraining trains: the original's masking rules, in the input pipeline.

create_pretraining_data.py --dynamic_masking writes each instance once, without masks;
run_pretraining.py masks every batch with `mask_batch` (RoBERTa's dynamic masking), by
the original's rules: of every sequence, min(max_predictions_per_seq, max(1,
round(length × masked_lm_prob))) positions, never [CLS], [SEP] or padding, taken in a
uniformly random order (whole words with do_whole_word_mask, a word that would exceed
the budget skipped); each becomes [MASK] (mask_token_prob), a random vocabulary token
(random_token_prob) or stays itself. The draws are stateless, a function of the seed and
the batch's number in the stream, so every epoch draws new masks, the same seed the same
masks, and a resumed run (which skips the batches already seen) those of an
uninterrupted one. Packed rows are masked sequence by sequence.
"""

import dataclasses

import tensorflow as tf

from bert import tokenization
from bert.utils import errors


@dataclasses.dataclass(frozen=True)
class MaskingOptions:
  """The masking rules (run_pretraining.py's flags of the same names)."""
  masked_lm_prob: float = 0.15
  do_whole_word_mask: bool = False
  mask_token_prob: float = 0.8
  random_token_prob: float = 0.1

  def __post_init__(self):
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise errors.UserError(f"--masked_lm_prob={self.masked_lm_prob}: must be in (0, 1]")
    if not (0.0 <= self.mask_token_prob <= 1.0 and 0.0 <= self.random_token_prob <= 1.0
            and self.mask_token_prob + self.random_token_prob <= 1.0 + 1e-9):
      raise errors.UserError(
          f"--mask_token_prob={self.mask_token_prob} and --random_token_prob="
          f"{self.random_token_prob}: must be in [0, 1] with a sum <= 1")


@dataclasses.dataclass(frozen=True)
class Vocabulary:
  """What masking needs of the vocabulary: the special ids, every id in file order (the
  random replacements are drawn from them, as the original draws from its word list) and
  which ids are "##" pieces (whole-word masking joins them to the word before)."""
  cls_id: int
  sep_id: int
  mask_id: int
  vocab_ids: tuple
  is_subword: tuple

  @classmethod
  def from_file(cls, vocab_file):
    vocab = tokenization.load_vocab(vocab_file)
    missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
      raise errors.UserError(
          f"--vocab_file={vocab_file}: has no {', '.join(missing)} token; use the BERT "
          "WordPiece vocabulary the records were made with")
    ids = list(vocab.values())
    is_subword = [0] * (max(ids) + 1)
    for token, index in vocab.items():
      if token.startswith("##"):
        is_subword[index] = 1
    return cls(vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"], tuple(ids),
               tuple(is_subword))


def _seeds(seed, batch_index, stream):
  """Three stateless seeds [2] for the batch `batch_index` of input stream `stream`."""
  index = tf.cast(batch_index, tf.int64) * 1024 + tf.cast(stream, tf.int64)
  return [tf.stack([tf.constant(seed, tf.int64), index * 4 + k]) for k in range(3)]


def mask_batch(features, batch_index, max_predictions_per_seq, vocabulary, options, seed,
               stream=0):
  """Masks a batch of records without masks; returns the features with the original's
  masked_lm_positions, masked_lm_ids (int32 [B, P]) and masked_lm_weights (float32
  [B, P]) and input_ids with the masks applied.

  features: input_ids, input_mask int32 [B, S]; packed rows also sequence_ids and
  position_ids [B, S]. batch_index: int64 scalar, the batch's number in the stream;
  stream: the input pipeline's number (several hosts draw different masks).
  """
  ids = features["input_ids"]
  batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
  column = tf.broadcast_to(tf.range(seq)[None, :], tf.shape(ids))
  if "sequence_ids" in features:
    sequence = features["sequence_ids"]
    position = features["position_ids"]
  else:
    sequence = tf.cast(features["input_mask"] > 0, tf.int32)
    position = column
  order_seed, replace_seed, token_seed = _seeds(seed, batch_index, stream)
  candidate = ((sequence > 0) & tf.not_equal(ids, vocabulary.cls_id)
               & tf.not_equal(ids, vocabulary.sep_id))
  if options.do_whole_word_mask:
    subword = tf.gather(tf.constant(vocabulary.is_subword, tf.int32),
                        tf.clip_by_value(ids, 0, len(vocabulary.is_subword) - 1)) > 0
    # A "##" piece joins the candidate before it, except as its sequence's first one.
    start = candidate & (~subword | tf.equal(position, 1))
  else:
    start = candidate
  # Words numbered 1, 2, ... along the row; 0 for tokens that are no candidates.
  word = tf.where(candidate, tf.cumsum(tf.cast(start, tf.int32), axis=1), 0)
  width = seq + 1
  flat_word = word + tf.range(batch)[:, None] * width
  size = tf.reshape(tf.math.unsorted_segment_sum(
      tf.cast(candidate, tf.int32), flat_word, batch * width), [batch, width])
  word_sequence = tf.reshape(tf.math.unsorted_segment_max(
      tf.where(start, sequence, 0), flat_word, batch * width), [batch, width])
  word_sequence = tf.maximum(word_sequence, 0)
  # Each sequence's budget, from its length with [CLS] and [SEP]s.
  flat_sequence = sequence + tf.range(batch)[:, None] * width
  length = tf.reshape(tf.math.unsorted_segment_sum(
      tf.cast(sequence > 0, tf.int32), flat_sequence, batch * width), [batch, width])
  budget = tf.maximum(1, tf.cast(tf.round(tf.cast(length, tf.float64)
                                          * options.masked_lm_prob), tf.int32))
  budget = tf.minimum(tf.minimum(budget, max_predictions_per_seq), length - 3)
  # Words in a uniformly random order within their sequence: sort by sequence, then key.
  key = tf.random.stateless_uniform([batch, width], order_seed, dtype=tf.float64)
  valid_word = size > 0
  sort_key = tf.where(valid_word, tf.cast(word_sequence, tf.float64) + key,
                      tf.cast(width + 1, tf.float64))
  order = tf.argsort(sort_key, axis=1, stable=True)
  ordered_size = tf.gather(size, order, batch_dims=1)
  ordered_sequence = tf.gather(word_sequence, order, batch_dims=1)
  ordered_budget = tf.gather(budget, ordered_sequence, batch_dims=1)

  def take_step(state, column_values):
    used, previous = state
    size_r, sequence_r, budget_r = column_values
    used = tf.where(tf.equal(sequence_r, previous), used, 0)
    fits = (size_r > 0) & (used + size_r <= budget_r)
    return (used + tf.where(fits, size_r, 0), sequence_r), fits

  _, taken = tf.scan(
      lambda carry, values: take_step(carry[0], values),
      (tf.transpose(ordered_size), tf.transpose(ordered_sequence),
       tf.transpose(ordered_budget)),
      initializer=((tf.zeros([batch], tf.int32), tf.fill([batch], -1)),
                   tf.zeros([batch], tf.bool)))
  taken = tf.transpose(taken)                                   # [B, width], sorted
  inverse = tf.argsort(order, axis=1, stable=True)
  word_taken = tf.gather(taken, inverse, batch_dims=1)          # [B, width], by word
  chosen = candidate & tf.gather(word_taken, word, batch_dims=1)
  # The chosen positions in increasing order, as the original lists them.
  positions = tf.argsort(tf.cast(~chosen, tf.int32), axis=1, stable=True)
  positions = positions[:, :max_predictions_per_seq]
  count = tf.reduce_sum(tf.cast(chosen, tf.int32), axis=1)
  slots = tf.range(tf.shape(positions)[1])[None, :]
  valid = slots < count[:, None]
  positions = tf.where(valid, positions, 0)
  labels = tf.where(valid, tf.gather(ids, positions, batch_dims=1), 0)
  pad = max_predictions_per_seq - tf.shape(positions)[1]  # a row shorter than P
  positions = tf.pad(positions, [[0, 0], [0, pad]])
  labels = tf.pad(labels, [[0, 0], [0, pad]])
  weights = tf.pad(tf.cast(valid, tf.float32), [[0, 0], [0, pad]])
  # 80/10/10: one uniform draw per position.
  draw = tf.random.stateless_uniform(tf.shape(ids), replace_seed)
  as_mask = chosen & (draw < options.mask_token_prob)
  as_random = chosen & ~as_mask & (draw >= 1.0 - options.random_token_prob)
  vocab_ids = tf.constant(vocabulary.vocab_ids, tf.int32)
  random_ids = tf.gather(vocab_ids, tf.random.stateless_uniform(
      tf.shape(ids), token_seed, minval=0, maxval=len(vocabulary.vocab_ids),
      dtype=tf.int32))
  masked_ids = tf.where(as_mask, vocabulary.mask_id, tf.where(as_random, random_ids, ids))
  out = dict(features)
  out.update(input_ids=masked_ids, masked_lm_positions=positions, masked_lm_ids=labels,
             masked_lm_weights=weights)
  return out
