"""The original's create_training_instances, restated in NumPy for whole chunks at once.

NumPy only (the pretraining workers import it, never TensorFlow).
`create_chunk_examples` turns one chunk of tokenized documents into serialized
tf.train.Examples (pretraining_records.py) and statistics; `plan_instances` (segment
pairing), `truncate_pairs` and `build_batch` (masking) are its steps, each drawing from
the same distribution as the original's (docs/pretraining_data.md says what differs).
"""

import bisect
import collections
import hashlib
import itertools
import random

import numpy as np

from bert import masking
from bert.pretraining import pretraining_packing
from bert.pretraining import pretraining_records


InstanceOptions = collections.namedtuple("InstanceOptions", [
    "max_seq_length", "max_predictions_per_seq", "dupe_factor", "short_seq_prob",
    "masked_lm_prob", "mask_token_prob", "random_token_prob", "do_whole_word_mask",
    "cls_id", "sep_id", "mask_id", "vocab_ids", "is_subword", "pack_sequences",
    "max_sequences_per_row", "dynamic_masking"], defaults=(False, 1, False))
InstanceOptions.__doc__ = """What a worker needs to turn token ids into instances.

vocab_ids: the ids of the vocabulary's tokens in file order (the original's
  `list(tokenizer.vocab.keys())`, as ids), from which random replacements are drawn.
is_subword: bytes, is_subword[id] == 1 when the token starts with "##".
pack_sequences: write rows packed with up to max_sequences_per_row instances
  (pretraining_packing); dynamic_masking: write the instances without masks (run_pretraining
  masks them as it trains). Neither changes the instances, nor (packing) their masks.
"""

# The original's share of instances cut short at random (--short_seq_prob's default).
SHORT_SEQ_PROB = 0.1

STAT_KEYS = ("documents", "sentences", "corpus_tokens", "instances", "instance_tokens",
             "masked", "masked_as_mask", "masked_kept", "masked_random", "random_next",
             "records")

# Instances masked and serialized together: large enough to amortise NumPy's per-call
# cost, small enough that the [batch, max_seq_length] temporaries stay a few MB.
_ENCODE_BATCH = 2048


def chunk_seed(random_seed, chunk_index):
  """The seed of chunk `chunk_index`'s generators: a hash of (seed, index), so that chunks
  of neighbouring seeds do not share streams."""
  digest = hashlib.sha256(f"{random_seed}:{chunk_index}".encode()).digest()
  return int.from_bytes(digest[:8], "little")


# --------------------------------------------------------------------------- algorithm
# The original's create_training_instances, restated so that each step draws from the
# same distribution as the original's, most of them for a whole chunk at once:
#   * segment pairing (target length, A/B split, random-next with put-back) walks each
#     document as the original does, but over sentence token counts (bisect on prefix
#     sums), never copying tokens;
#   * truncation: the original removes one token at a time from the longer segment, front
#     or back by a coin. Which segment loses how many tokens depends only on the lengths,
#     and the front/back coins are independent, so the tokens cut from each front are a
#     Binomial(cut, 1/2) draw;
#   * masking: the original shuffles the candidates and takes them in order; a uniformly
#     random key per candidate (per whole word with --do_whole_word_mask) sorted gives
#     the same uniformly random order for every instance of a batch at once;
#   * 80/10/10 replacement: one uniform draw per chosen position;
#   * the instances of a chunk are shuffled, as the original shuffles all of its own.


def plan_instances(doc_prefixes, doc_starts, opt, rng):
  """Pairs segments as the original's create_instances_from_document, dupe_factor times.

  doc_prefixes: per document, the prefix sums of its (non-empty) sentences' token counts,
    [0, n0, n0 + n1, ...]; doc_starts: each document's first token in the flat id array.
  rng: random.Random. Returns lists (a_start, a_length, b_start, b_length, random_next):
  each segment is a contiguous run of whole sentences in the flat id array, before
  truncation.
  """
  rand = rng.random
  max_num_tokens = opt.max_seq_length - 3
  short_seq_prob = opt.short_seq_prob
  num_docs = len(doc_prefixes)
  a_starts, a_lengths, b_starts, b_lengths, random_next = [], [], [], [], []
  for _ in range(opt.dupe_factor):
    for d in range(num_docs):
      prefix = doc_prefixes[d]
      base = doc_starts[d]
      num_sentences = len(prefix) - 1
      # Usually fill the whole sequence; sometimes (short_seq_prob) a shorter one, to
      # reduce the mismatch between pretraining and fine-tuning on short inputs.
      target = max_num_tokens
      if rand() < short_seq_prob:
        target = 2 + int(rand() * (max_num_tokens - 1))  # randint(2, max_num_tokens)
      first = 0
      while first < num_sentences:
        # The chunk ends at the first sentence that brings it to `target` tokens, or at
        # the document's last sentence.
        end = min(bisect.bisect_left(prefix, prefix[first] + target, first + 1),
                  num_sentences)
        count = end - first
        a_end = first + 1 + (int(rand() * (count - 1)) if count >= 2 else 0)
        a_lo, a_hi = prefix[first], prefix[a_end]
        a_starts.append(base + a_lo)
        a_lengths.append(a_hi - a_lo)
        if count == 1 or rand() < 0.5:
          # Ten tries at another document; with a single document the last draw is used.
          for _ in range(10):
            other = int(rand() * num_docs)
            if other != d:
              break
          other_prefix = doc_prefixes[other]
          other_sentences = len(other_prefix) - 1
          start = int(rand() * other_sentences)
          stop = min(bisect.bisect_left(other_prefix,
                                        other_prefix[start] + target - (a_hi - a_lo),
                                        start + 1), other_sentences)
          b_starts.append(doc_starts[other] + other_prefix[start])
          b_lengths.append(other_prefix[stop] - other_prefix[start])
          random_next.append(1)
          # The sentences of the chunk not used as A are put back for the next instance.
          first = a_end
        else:
          b_starts.append(base + a_hi)
          b_lengths.append(prefix[end] - a_hi)
          random_next.append(0)
          first = end
  return a_starts, a_lengths, b_starts, b_lengths, random_next


def truncate_pairs(a_start, a_length, b_start, b_length, max_num_tokens, generator):
  """The original's truncate_seq_pair for every pair at once; returns the new 4 arrays.

  int64 [n] each. The longer segment loses a token until the pair fits (B on a tie):
  the longer one first loses the length difference, then the two alternate, B first.
  Each lost token is the front one with probability 1/2.
  """
  excess = np.maximum(a_length + b_length - max_num_tokens, 0)
  difference = a_length - b_length
  first = np.minimum(excess, np.abs(difference))
  rest = excess - first
  cut_a = np.where(difference > 0, first, 0) + rest // 2
  cut_b = excess - cut_a
  front_a = generator.binomial(cut_a, 0.5)
  front_b = generator.binomial(cut_b, 0.5)
  return a_start + front_a, a_length - cut_a, b_start + front_b, b_length - cut_b


def _choose_positions(tokens, length, num_a, opt, arrays, generator):
  """The positions to predict, as the original chooses them; int64 [n, k_max], sorted.

  tokens: int64 [n, max_seq_length], [CLS] A [SEP] B [SEP] then 0s. Returns (positions,
  valid): unused slots hold max_seq_length and are False in `valid` [n, k_max].
  """
  n, seq = tokens.shape
  k_max = min(opt.max_predictions_per_seq, seq)
  pos = np.arange(seq)[None, :]
  candidate = (pos >= 1) & (pos < length[:, None] - 1) & (pos != num_a[:, None] + 1)
  budget = masking.prediction_budget(length, opt.masked_lm_prob, opt.max_predictions_per_seq)
  if not opt.do_whole_word_mask:
    keys = generator.random((n, seq))
    keys[~candidate] = 2.0
    smallest = np.argpartition(keys, k_max - 1, axis=1)[:, :k_max]
    order = np.argsort(np.take_along_axis(keys, smallest, 1), axis=1)
    chosen = np.take_along_axis(smallest, order, 1)
    valid = np.arange(k_max)[None, :] < budget[:, None]
    chosen = np.where(valid, chosen, seq)
    chosen.sort(axis=1)
    return chosen, valid
  # Whole words: a "##" piece joins the candidate before it (across A's [SEP] too, as
  # in the original); the words are taken in random order, a word that would exceed
  # the budget is skipped, and the scan stops once the budget is used up.
  subword = arrays["is_subword"][tokens] & candidate
  starts = candidate & (~subword | (pos == 1))
  word = np.cumsum(starts, axis=1) - 1
  num_words = starts.sum(axis=1)
  width = max(int(num_words.max()), 1)
  rows = np.broadcast_to(np.arange(n)[:, None], (n, seq))
  sizes = np.bincount((rows * width + word)[candidate], minlength=n * width)
  sizes = sizes.reshape(n, width)
  keys = generator.random((n, width))
  keys[np.arange(width)[None, :] >= num_words[:, None]] = 2.0
  order = np.argsort(keys, axis=1)
  ordered_sizes = np.take_along_axis(sizes, order, 1)
  used = np.zeros(n, np.int64)
  taken = np.zeros((n, width), bool)
  for r in range(width):
    size = ordered_sizes[:, r]
    fits = (size > 0) & (used + size <= budget)
    used += np.where(fits, size, 0)
    taken[:, r] = fits
  word_taken = np.zeros((n, width), bool)
  np.put_along_axis(word_taken, order, taken, 1)
  chosen_mask = candidate & np.take_along_axis(word_taken, np.maximum(word, 0), 1)
  chosen = np.argsort(~chosen_mask, axis=1, kind="stable")[:, :k_max]
  valid = np.arange(k_max)[None, :] < chosen_mask.sum(axis=1)[:, None]
  return np.where(valid, chosen, seq), valid


def build_batch(flat, a_start, a_length, b_start, b_length, opt, arrays, generator,
                stats, masked=True):
  """Token matrix, masking and labels for a batch of truncated pairs.

  flat: int32 [num_tokens], the chunk's ids; the rest int64 [n]. Returns dict of NumPy
  arrays: input_ids [n, S] (masked, 0-padded), length [n], num_a [n], positions [n, k]
  and labels [n, k] (0-padded), num_masked [n]. masked=False: input_ids unmasked, and
  neither positions nor labels (nothing is drawn from `generator`).
  """
  seq = opt.max_seq_length
  n = len(a_start)
  pos = np.arange(seq)[None, :]
  la = a_length[:, None]
  length = a_length + b_length + 3
  source = np.where(pos <= la, a_start[:, None] + pos - 1, b_start[:, None] + pos - la - 2)
  np.clip(source, 0, len(flat) - 1, out=source)
  tokens = flat[source].astype(np.int64)
  tokens[:, 0] = opt.cls_id
  tokens[(pos == la + 1) | (pos == length[:, None] - 1)] = opt.sep_id
  tokens[pos >= length[:, None]] = 0
  stats["instance_tokens"] += int(length.sum())
  if not masked:
    return {"input_ids": tokens, "length": length, "num_a": a_length}
  positions, valid = _choose_positions(tokens, length, a_length, opt, arrays, generator)
  # A scratch column takes the writes of unused slots.
  padded = np.concatenate([tokens, np.zeros((n, 1), np.int64)], axis=1)
  labels = np.where(valid, np.take_along_axis(padded, positions, 1), 0)
  draw = generator.random(positions.shape)
  as_mask = valid & (draw < opt.mask_token_prob)
  as_random = valid & ~as_mask & (draw >= 1.0 - opt.random_token_prob)
  vocab_ids = arrays["vocab_ids"]
  replacement = np.where(
      as_mask, opt.mask_id,
      np.where(as_random, vocab_ids[generator.integers(0, len(vocab_ids), positions.shape)],
               labels))
  np.put_along_axis(padded, positions, replacement, 1)
  num_masked = valid.sum(axis=1)
  total_masked = int(num_masked.sum())
  stats["masked"] += total_masked
  stats["masked_as_mask"] += int(as_mask.sum())
  stats["masked_random"] += int(as_random.sum())
  stats["masked_kept"] += total_masked - int(as_mask.sum()) - int(as_random.sum())
  return {"input_ids": padded[:, :seq], "length": length, "num_a": a_length,
          "positions": np.where(valid, positions, 0), "labels": labels,
          "num_masked": num_masked}


def create_chunk_examples(flat_ids, sentence_splits, doc_sentence_counts, opt, seed,
                          encoder=None, arrays=None):
  """The original's create_training_instances on one chunk of documents.

  flat_ids: int32 [num_tokens], the chunk's token ids; sentence_splits: int64
  [num_sentences + 1], the ragged row splits (each a NumPy array or its raw native-endian
  bytes, as the workers receive them); doc_sentence_counts: list[int], sentences of each
  raw document. Sentences that tokenize to nothing and documents left empty are dropped,
  as in the original.
  Returns (batches, stats): batches, a list of (records, sizes): serialized
  tf.train.Examples back to back (bytes) and each one's size (list[int]), together in the
  chunk's shuffled order; stats: dict over STAT_KEYS.
  """
  if isinstance(flat_ids, (bytes, bytearray)):
    flat_ids = np.frombuffer(flat_ids, np.int32)
    sentence_splits = np.frombuffer(sentence_splits, np.int64)
  encoder = encoder or pretraining_records.ExampleEncoder(opt.max_seq_length,
                                                      opt.max_predictions_per_seq)
  arrays = arrays or option_arrays(opt)
  stats = dict.fromkeys(STAT_KEYS, 0)
  sentence_lengths = np.diff(sentence_splits).tolist()
  splits = sentence_splits.tolist()
  doc_prefixes, doc_starts = [], []
  s = 0
  for count in doc_sentence_counts:
    lengths = [n for n in sentence_lengths[s:s + count] if n]
    if lengths:
      doc_prefixes.append(list(itertools.accumulate(lengths, initial=0)))
      doc_starts.append(splits[s])
      stats["sentences"] += len(lengths)
    s += count
  stats["documents"] = len(doc_prefixes)
  stats["corpus_tokens"] = int(len(flat_ids))
  if not doc_prefixes:
    return [], stats
  generator = np.random.default_rng(seed)
  plan = [np.asarray(v, np.int64) for v in plan_instances(
      doc_prefixes, doc_starts, opt, random.Random(seed))]
  num = len(plan[0])
  order = generator.permutation(num)
  a_start, a_length, b_start, b_length, random_next = (v[order] for v in plan)
  a_start, a_length, b_start, b_length = truncate_pairs(
      a_start, a_length, b_start, b_length, opt.max_seq_length - 3, generator)
  stats["instances"] = num
  stats["random_next"] = int(random_next.sum())
  masked = not opt.dynamic_masking
  batches, parts = [], []
  for lo in range(0, num, _ENCODE_BATCH):
    part = slice(lo, lo + _ENCODE_BATCH)
    batch = build_batch(flat_ids, a_start[part], a_length[part], b_start[part],
                        b_length[part], opt, arrays, generator, stats, masked=masked)
    batch["next_sentence_labels"] = random_next[part]
    if opt.pack_sequences:
      parts.append(batch)
    elif masked:
      records, sizes = encoder.encode(batch)
      batches.append((records, sizes.tolist()))
    else:
      batches.append(_encode_unmasked(batch, opt))
  if parts:
    batches = _pack_and_encode(parts, opt, seed)
  stats["records"] = sum(len(sizes) for _, sizes in batches)
  return batches, stats


def layout_features(opt):
  """The features that say what records without masks were made for: run_pretraining.py
  masks them with the same --max_predictions_per_seq and (packed) --masked_lm_prob."""
  return {"max_predictions_per_seq": opt.max_predictions_per_seq,
          "masked_lm_prob": opt.masked_lm_prob}


def _with_layout(features, opt, n):
  for name, value in layout_features(opt).items():
    dtype = np.float32 if isinstance(value, float) else np.int64
    features[name] = np.full((n, 1), value, dtype)
  return features


def _float_names(features):
  return tuple(k for k, v in features.items() if v.dtype.kind == "f")


def _encode_unmasked(batch, opt):
  """One sequence a row, without masks: input_ids, input_mask, segment_ids,
  next_sentence_labels and the layout features."""
  n, seq = batch["input_ids"].shape
  column = np.arange(seq)[None, :]
  length = batch["length"][:, None]
  features = _with_layout({
      "input_ids": batch["input_ids"],
      "input_mask": (column < length).astype(np.int64),
      "segment_ids": ((column >= batch["num_a"][:, None] + 2) & (column < length)
                      ).astype(np.int64),
      "next_sentence_labels": batch["next_sentence_labels"][:, None].astype(np.int64),
  }, opt, n)
  records, sizes = pretraining_records.encode_features(features, _float_names(features))
  return records, sizes.tolist()


def _pack_and_encode(parts, opt, seed):
  """Packs a chunk's instances into rows (pretraining_packing), shuffled by a generator
  of their own (so that the instances and masks are those of the unpacked records)."""
  instances = {key: np.concatenate([p[key] for p in parts])
               for key in parts[0] if key in ("input_ids", "length", "num_a", "positions",
                                              "labels", "num_masked",
                                              "next_sentence_labels")}
  if opt.dynamic_masking:
    predictions = masking.prediction_budget(
        instances["length"], opt.masked_lm_prob, opt.max_predictions_per_seq)
  else:
    predictions = instances["num_masked"]
  row, offset, num_rows = pretraining_packing.pack(
      instances["length"], predictions, opt.max_seq_length, opt.max_predictions_per_seq,
      opt.max_sequences_per_row)
  # The rows in a random order: best-fit decreasing opens them longest instance first.
  shuffled = np.random.default_rng([seed, 1]).permutation(num_rows)
  rank = np.empty(num_rows, np.int64)
  rank[shuffled] = np.arange(num_rows)
  features = pretraining_packing.packed_rows(
      instances, rank[row], offset, num_rows, opt.max_seq_length,
      opt.max_predictions_per_seq, opt.max_sequences_per_row,
      masked=not opt.dynamic_masking)
  if opt.dynamic_masking:
    features = _with_layout(features, opt, num_rows)
  batches = []
  for lo in range(0, num_rows, _ENCODE_BATCH):
    part = {k: v[lo:lo + _ENCODE_BATCH] for k, v in features.items()}
    records, sizes = pretraining_records.encode_features(part, _float_names(part))
    batches.append((records, sizes.tolist()))
  return batches


def option_arrays(opt):
  """The worker-side NumPy forms of opt.vocab_ids and opt.is_subword."""
  return {"vocab_ids": np.asarray(opt.vocab_ids, np.int64),
          "is_subword": np.frombuffer(opt.is_subword, np.uint8).astype(bool)}
