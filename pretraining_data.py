"""The pretraining-data generator: masked-LM / next-sentence tf.train.Examples from text.

Middle floor: create_pretraining_data.py parses its flags and calls `generate`; tests and
benchmarks call the functions here. Nothing here reads absl FLAGS.

The algorithm is the original's, each step drawing from the same distribution as the
original's: `dupe_factor` passes, a target length drawn per document pass, segment A/B with
random-next and put-back, random front/back truncation, 15% masking split 80/10/10,
optional whole-word masking, the instances shuffled. Pairing walks the documents in Python;
truncation, masking and serialization run in NumPy for thousands of instances at once.
What differs (docs/pretraining_data.md): the random generators are not the original's
(the same seed gives other, equally distributed, instances), and the corpus is streamed in
chunks of `documents_per_chunk` documents, each chunk with its own generators seeded from
(`random_seed`, chunk index), so random-next segments come from the same chunk and
instances are shuffled within the chunk. Chunks go to `num_workers` processes and are
written in order, so the output bytes do not depend on the number of workers.

TensorFlow is imported by `generate` only after the worker pool has started (spawned
workers need NumPy only; starting them first overlaps both start-ups), and never by the
workers, which import this module: so it is not imported at the top.
"""

import bisect
import collections
import contextlib
import functools
import hashlib
import itertools
import multiprocessing
import os
import random
import struct
import time

from absl import logging
import numpy as np

import atomic_output
import fast_tokenization
import file_io
import progress
import script_utils
import tokenization

# Sentences tokenized per call of the in-graph tokenizer: large enough to amortise the
# call, small enough to keep the ragged intermediates of one call in a few MB.
_TOKENIZE_BATCH = 4096
_PROGRESS_EVERY_S = 10.0

InstanceOptions = collections.namedtuple("InstanceOptions", [
    "max_seq_length", "max_predictions_per_seq", "dupe_factor", "short_seq_prob",
    "masked_lm_prob", "mask_token_prob", "random_token_prob", "do_whole_word_mask",
    "cls_id", "sep_id", "mask_id", "vocab_ids", "is_subword"])
InstanceOptions.__doc__ = """What a worker needs to turn token ids into instances.

vocab_ids: the ids of the vocabulary's tokens in file order (the original's
  `list(tokenizer.vocab.keys())`, as ids), from which random replacements are drawn.
is_subword: bytes, is_subword[id] == 1 when the token starts with "##".
"""

STAT_KEYS = ("documents", "sentences", "corpus_tokens", "instances", "instance_tokens",
             "masked", "masked_as_mask", "masked_kept", "masked_random", "random_next")

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
  budget = np.minimum(np.maximum(1, np.rint(length * opt.masked_lm_prob).astype(np.int64)),
                      opt.max_predictions_per_seq)
  budget = np.minimum(budget, length - 3)  # never more than there are candidates
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
                stats):
  """Token matrix, masking and labels for a batch of truncated pairs.

  flat: int32 [num_tokens], the chunk's ids; the rest int64 [n]. Returns dict of NumPy
  arrays: input_ids [n, S] (masked, 0-padded), length [n], num_a [n], positions [n, k]
  and labels [n, k] (0-padded), num_masked [n].
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
  stats["instance_tokens"] += int(length.sum())
  return {"input_ids": padded[:, :seq], "length": length, "num_a": a_length,
          "positions": np.where(valid, positions, 0), "labels": labels,
          "num_masked": num_masked}


# --------------------------------------------------------------------------- serialization
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


# --------------------------------------------------------------------------- chunks


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
  encoder = encoder or ExampleEncoder(opt.max_seq_length, opt.max_predictions_per_seq)
  arrays = arrays or _option_arrays(opt)
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
  batches = []
  for lo in range(0, num, _ENCODE_BATCH):
    part = slice(lo, lo + _ENCODE_BATCH)
    batch = build_batch(flat_ids, a_start[part], a_length[part], b_start[part],
                        b_length[part], opt, arrays, generator, stats)
    batch["next_sentence_labels"] = random_next[part]
    records, sizes = encoder.encode(batch)
    batches.append((records, sizes.tolist()))
  return batches, stats


def _option_arrays(opt):
  return {"vocab_ids": np.asarray(opt.vocab_ids, np.int64),
          "is_subword": np.frombuffer(opt.is_subword, np.uint8).astype(bool)}


_WORKER = {}


def _init_worker(opt):
  _WORKER["opt"] = opt
  _WORKER["encoder"] = ExampleEncoder(opt.max_seq_length, opt.max_predictions_per_seq)
  _WORKER["arrays"] = _option_arrays(opt)


def _process_chunk(task):
  """Worker entry: (seed, flat_ids, sentence_splits, doc_sentence_counts) -> results."""
  seed, flat_ids, splits, counts = task
  return create_chunk_examples(flat_ids, splits, counts, _WORKER["opt"], seed,
                               _WORKER["encoder"], _WORKER["arrays"])


def read_documents(input_files, on_encoding_error, counters, split_sentences=None):
  """Yields raw documents (list of stripped, non-blank lines) from the input files.

  As the original, a blank line ends a document and a new file does not: a file that ends
  without a blank line continues its last document into the next file.
  counters: dict; "lines", "skipped_lines" and "chars" are added to as lines are read.
  split_sentences: None, or a function line -> list of sentences (not the original's:
  for corpora of one paragraph a line).
  """
  document = []
  for path in input_files:
    previous = 0
    for number, line in script_utils.read_text_lines(path, on_encoding_error):
      counters["skipped_lines"] += number - previous - 1
      previous = number
      counters["lines"] += 1
      counters["chars"] += len(line)
      line = line.strip()
      if line and split_sentences is not None:
        document.extend(s for s in (x.strip() for x in split_sentences(line)) if s)
      elif line:
        document.append(line)
      elif document:
        yield document
        document = []
  if document:
    yield document


def chunk_documents(documents, documents_per_chunk):
  """Groups raw documents into chunks; a last chunk under half size joins the one before.

  A tiny last chunk would draw its random-next segments from only a few documents.
  """
  pending = None
  chunk = []
  for document in documents:
    chunk.append(document)
    if len(chunk) == documents_per_chunk:
      if pending is not None:
        yield pending
      pending, chunk = chunk, []
  if chunk and pending is not None and len(chunk) < documents_per_chunk // 2 + 1:
    pending.extend(chunk)
    chunk = []
  if pending is not None:
    yield pending
  if chunk:
    yield chunk


# --------------------------------------------------------------------------- tokenizer


class _Tokenizer:
  """Sentences -> flat ids + row splits, through fast_tokenization.FastTokenizer (in-graph).

  normalize: None (the original) or "nfc", applied by the tokenizer itself.
  """

  def __init__(self, vocab_file, do_lower_case, normalize=None):
    options = {} if normalize is None else {"normalize": normalize}
    self._fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case, **options)

  def tokenize(self, sentences):
    """sentences: list[str] -> (flat ids int32 [num_tokens], row splits int64 [n + 1])."""
    tf = _import_tensorflow()
    flats, lengths = [], []
    for start in range(0, len(sentences), _TOKENIZE_BATCH):
      ragged = self._fast.tokenize_untraced(
          tf.constant(sentences[start:start + _TOKENIZE_BATCH]))
      flats.append(ragged.flat_values.numpy().astype(np.int32))
      lengths.append(np.diff(ragged.row_splits.numpy()))
    flat = np.concatenate(flats) if flats else np.zeros([0], np.int32)
    splits = np.zeros([len(sentences) + 1], np.int64)
    if lengths:
      np.cumsum(np.concatenate(lengths), out=splits[1:])
    return flat, splits


@functools.lru_cache(maxsize=2)
def get_tokenizer(vocab_file, do_lower_case, normalize=None):
  """The in-graph tokenizer for (vocab, case, normalisation), built once per process."""
  # Building the in-graph tokenizer traces a tf.function (seconds); callers that run
  # several generations in one process (tests, benchmarks) build it once.
  return _Tokenizer(vocab_file, do_lower_case, normalize)


def _instance_options(vocab, vocab_file, **kwargs):
  missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
  if missing:
    raise script_utils.UserError(
        f"--vocab_file={vocab_file}: has no {', '.join(missing)} token; use a BERT "
        "WordPiece vocabulary (one token a line)")
  ids = list(vocab.values())
  is_subword = bytearray(max(ids) + 1)
  for token, index in vocab.items():
    if token.startswith("##"):
      is_subword[index] = 1
  return InstanceOptions(cls_id=vocab["[CLS]"], sep_id=vocab["[SEP]"],
                         mask_id=vocab["[MASK]"], vocab_ids=ids,
                         is_subword=bytes(is_subword), **kwargs)


# --------------------------------------------------------------------------- driver

# Bounds on sizes: far beyond any sane run, they fail at once instead of after minutes of
# building tables. 8,192 positions is 16 times BERT's 512-position table (the longest
# context of BERT-family encoders we know of, ModernBERT's, is 8,192); the rest bound
# memory or run time by orders of magnitude above the original's settings.
MAX_SEQ_LENGTH_LIMIT = 8192
_LIMITS = {"max_seq_length": MAX_SEQ_LENGTH_LIMIT,
           "max_predictions_per_seq": MAX_SEQ_LENGTH_LIMIT,
           "dupe_factor": 1000, "documents_per_chunk": 1_000_000,
           "num_workers": 1024, "num_output_shards": 100_000}


def _check_limit(name, value):
  if value is not None and value > _LIMITS[name]:
    raise script_utils.UserError(
        f"--{name}={value}: more than {_LIMITS[name]:,}, beyond any sane run")


def output_paths(output_file, num_output_shards=None):
  """The files to write: the comma-separated list, or N numbered shards of one name."""
  files = [f.strip() for f in str(output_file or "").split(",") if f.strip()]
  if not files:
    raise script_utils.UserError("--output_file is required")
  if num_output_shards is None:
    return files
  if num_output_shards < 1:
    raise script_utils.UserError(
        f"--num_output_shards={num_output_shards}: must be at least 1")
  _check_limit("num_output_shards", num_output_shards)
  if len(files) != 1:
    raise script_utils.UserError(
        "--num_output_shards needs a single --output_file name, not a list")
  return [f"{files[0]}-{i:05d}-of-{num_output_shards:05d}"
          for i in range(num_output_shards)]


def check_options(max_seq_length, max_predictions_per_seq, dupe_factor, masked_lm_prob,
                  short_seq_prob, mask_token_prob, random_token_prob, documents_per_chunk,
                  num_workers):
  """Flag values the algorithm cannot run with -> one-line UserError naming the flag."""
  checks = [
      (max_seq_length >= 5,
       f"--max_seq_length={max_seq_length}: must be at least 5 ([CLS] A [SEP] B [SEP])"),
      (max_predictions_per_seq >= 1,
       f"--max_predictions_per_seq={max_predictions_per_seq}: must be at least 1"),
      (dupe_factor >= 1, f"--dupe_factor={dupe_factor}: must be at least 1"),
      (0.0 < masked_lm_prob <= 1.0, f"--masked_lm_prob={masked_lm_prob}: must be in (0, 1]"),
      (0.0 <= short_seq_prob <= 1.0,
       f"--short_seq_prob={short_seq_prob}: must be in [0, 1]"),
      (0.0 <= mask_token_prob <= 1.0 and 0.0 <= random_token_prob <= 1.0 and
       mask_token_prob + random_token_prob <= 1.0 + 1e-9,
       f"--mask_token_prob={mask_token_prob} and --random_token_prob={random_token_prob}: "
       "must be in [0, 1] with a sum <= 1"),
      (documents_per_chunk >= 2,
       f"--documents_per_chunk={documents_per_chunk}: must be at least 2 (random-next "
       "needs another document)"),
      (num_workers is None or num_workers >= 0,
       f"--num_workers={num_workers}: must be 0 or more"),
  ]
  for ok, message in checks:
    if not ok:
      raise script_utils.UserError(message)
  for name, value in [("max_seq_length", max_seq_length),
                      ("max_predictions_per_seq", max_predictions_per_seq),
                      ("dupe_factor", dupe_factor),
                      ("documents_per_chunk", documents_per_chunk),
                      ("num_workers", num_workers)]:
    _check_limit(name, value)


def check_run(input_patterns, output_file, vocab_file, options, num_output_shards=None,
              prepare_outputs=True):
  """Everything create_pretraining_data.py checks before reading the corpus.

  input_patterns, output_file: the flags' comma-separated files (and globs, for input);
  options: generate's instance options (max_seq_length, dupe_factor, ...). Fails with a
  one-line UserError naming the flag; returns (input files, output files). With
  prepare_outputs (not --check_only) the outputs' folders are created and checked.
  """
  for name, value in (("input_file", input_patterns), ("output_file", output_file),
                      ("vocab_file", vocab_file)):
    if not value:
      raise script_utils.UserError(f"--{name} is required")
  input_files = script_utils.expand_file_patterns(input_patterns, "input_file")
  outputs = output_paths(output_file, num_output_shards)
  check_options(**{k: v for k, v in options.items()
                   if k not in ("do_whole_word_mask", "random_seed")})
  for path in input_files:
    script_utils.check_input_file(path, "input_file", allow_empty=True)
  script_utils.check_input_file(vocab_file, "vocab_file")
  if prepare_outputs:
    for path in outputs:
      atomic_output.prepare_output_file(path, "output_file")
  return input_files, outputs


def _import_tensorflow():
  # Deferred on purpose (see the module docstring): the spawned workers import this
  # module and need NumPy only, and the parent imports TensorFlow after the pool started.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf


SENTENCE_SPLITTERS = ("pysbd",)


def sentence_splitter(name, language="en"):
  """A function line -> list of sentences from an optional sentence-boundary library.

  name: "pysbd" (pip install pysbd; rule-based, about 20 languages, not Korean). The
  library is imported only when asked for; a missing one is a one-line UserError.
  """
  if name not in SENTENCE_SPLITTERS:
    raise script_utils.UserError(
        f"--split_sentences={name}: unknown; choose one of {', '.join(SENTENCE_SPLITTERS)}")
  try:
    # An optional dependency, imported only when asked for: deferred on purpose.
    import pysbd  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise script_utils.UserError(
        f"--split_sentences={name}: the {name} package is not installed "
        f"(pip install {name})") from None
  try:
    segmenter = pysbd.Segmenter(language=language, clean=False)
  except ValueError as exc:
    raise script_utils.UserError(
        f"--sentence_language={language}: {name} does not support it ({exc})") from None
  return segmenter.segment


class _Progress:
  """Logs documents, instances, rate, share of the input read and an ETA, every 10 s."""

  def __init__(self, total_chars, counters, log):
    self._chars = progress.Progress(total_chars or 1)
    self.start = self._chars.started
    self._counters = counters
    self._log = log
    self._last = (self.start, -1)

  def __call__(self, documents, written, final=False):
    now = time.time()
    if not final and now - self._last[0] < _PROGRESS_EVERY_S:
      return
    if final and self._last[1] == written:
      return
    self._last = (now, written)
    elapsed = max(now - self.start, 1e-9)
    self._chars.update(min(self._counters["chars"], self._chars.total))
    done = self._chars.done / self._chars.total
    self._log(f"documents {documents:,}  instances {written:,}  "
              f"{written / elapsed:,.0f} instances/s  read {100 * done:.1f}%  "
              f"elapsed {progress.format_duration(elapsed)}  ETA ~{self._chars.eta()}")


class _RoundRobinWriter:
  """Writes the workers' serialized records round-robin over the output TFRecord writers,
  adding up their statistics."""

  def __init__(self, writers, totals, progress):
    self.writers = writers
    self.totals = totals
    self.progress = progress
    self.written = 0

  def __call__(self, result):
    batches, stats = result
    num_writers = len(self.writers)
    for records, sizes in batches:
      offset = 0
      if num_writers == 1:
        write_record = self.writers[0].write
        for size in sizes:
          write_record(records[offset:offset + size])
          offset += size
      else:
        for number, size in enumerate(sizes, self.written):
          self.writers[number % num_writers].write(records[offset:offset + size])
          offset += size
      self.written += len(sizes)
    for key in STAT_KEYS:
      self.totals[key] += stats[key]
    self.progress(self.totals["documents"], self.written)


def _chunk_tasks(documents, tokenizer, random_seed, documents_per_chunk, unk_id, totals):
  """Yields the workers' tasks (seed, flat ids bytes, splits bytes, sentence counts), one
  per chunk of documents, tokenized in this process; counts [UNK] into totals."""
  for index, chunk in enumerate(chunk_documents(documents, documents_per_chunk)):
    sentences = [s for d in chunk for s in d]
    flat, splits = tokenizer.tokenize(sentences)
    totals["unk_tokens"] += int((flat == unk_id).sum())
    yield (chunk_seed(random_seed, index), flat.astype("=i4").tobytes(),
           splits.astype("=i8").tobytes(), [len(d) for d in chunk])


def _run_tasks(tasks, pool, num_workers, write):
  """Runs the tasks in this process or on the pool; results are written in task order,
  so the bytes do not depend on num_workers."""
  if pool is None:
    for task in tasks:
      write(_process_chunk(task))
    return
  # Bounded look-ahead keeps memory flat (imap would tokenize the whole corpus ahead).
  pending = collections.deque()
  for task in tasks:
    pending.append(pool.apply_async(_process_chunk, (task,)))
    while len(pending) > num_workers:
      write(pending.popleft().get())
  while pending:
    write(pending.popleft().get())
  pool.close()
  pool.join()


def _check_corpus_shape(totals, input_files):
  """Corpora the algorithm cannot make pairs from -> UserError naming the input."""
  shown = ",".join(input_files)
  if totals["documents"] == 0:
    raise script_utils.UserError(
        f"--input_file={shown}: no text found (empty corpus); expected one sentence a "
        "line with blank lines between documents")
  if totals["documents"] < 2:
    raise script_utils.UserError(
        f"--input_file={shown}: only one document; random-next sentences need at least "
        "two documents separated by blank lines")
  if totals["sentences"] == totals["documents"]:
    raise script_utils.UserError(
        f"--input_file={shown}: every document has a single sentence, too short to "
        "make a sentence pair; put one sentence a line and a blank line only between "
        "documents")


def _validate(input_files, output_files, vocab_file, options):
  check_options(**options)
  for path in input_files:
    script_utils.check_input_file(path, "input_file", allow_empty=True)
  script_utils.check_input_file(vocab_file, "vocab_file")
  for path in output_files:
    atomic_output.prepare_output_file(path, "output_file")


def _start_workers(opt, num_workers):
  """The spawned worker pool (None for num_workers=0, where this process does the work)."""
  if num_workers == 0:
    _init_worker(opt)
    return None
  # Spawned, not forked: the parent runs TensorFlow threads, and the workers need only
  # NumPy. Started before TensorFlow is imported, so that both start-ups overlap.
  return multiprocessing.get_context("spawn").Pool(
      num_workers, initializer=_init_worker, initargs=(opt,))


def generate(input_files, output_files, vocab_file, do_lower_case=True,
             do_whole_word_mask=False, max_seq_length=128, max_predictions_per_seq=20,
             random_seed=12345, dupe_factor=10, masked_lm_prob=0.15, short_seq_prob=0.1,
             mask_token_prob=0.8, random_token_prob=0.1, num_workers=0,
             documents_per_chunk=1000, on_encoding_error="fail", normalize=None,
             split_sentences=None, log=logging.info):
  """Writes the pretraining TFRecords; returns the summary dict (counts and fractions).

  input_files, output_files: lists of paths. Every output is written under a temporary
  name and renamed when the whole run succeeded. normalize: None (the original) or "nfc",
  which the tokenizer applies to every line first. split_sentences: None, or a function
  line -> list of sentences applied to every line (sentence_splitter).
  """
  _validate(input_files, output_files, vocab_file, dict(
      max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
      dupe_factor=dupe_factor, masked_lm_prob=masked_lm_prob, short_seq_prob=short_seq_prob,
      mask_token_prob=mask_token_prob, random_token_prob=random_token_prob,
      documents_per_chunk=documents_per_chunk, num_workers=num_workers))
  if num_workers is None:
    num_workers = os.cpu_count() or 1
  vocab = tokenization.load_vocab(vocab_file)
  opt = _instance_options(
      vocab, vocab_file, max_seq_length=max_seq_length,
      max_predictions_per_seq=max_predictions_per_seq, dupe_factor=dupe_factor,
      short_seq_prob=short_seq_prob, masked_lm_prob=masked_lm_prob,
      mask_token_prob=mask_token_prob, random_token_prob=random_token_prob,
      do_whole_word_mask=do_whole_word_mask)
  counters = {"lines": 0, "skipped_lines": 0, "chars": 0}
  totals = dict.fromkeys(STAT_KEYS + ("unk_tokens",), 0)
  report = _Progress(sum(file_io.local_size(p) for p in input_files), counters, log)
  with script_utils.disk_full_names(", ".join(output_files)), contextlib.ExitStack() as stack:
    pool = _start_workers(opt, num_workers)
    if pool is not None:
      stack.callback(pool.terminate)
    tf = _import_tensorflow()
    tokenizer = get_tokenizer(vocab_file, do_lower_case, normalize)
    tmp_paths = [stack.enter_context(atomic_output.atomic_path(p)) for p in output_files]
    write = _RoundRobinWriter(
        [stack.enter_context(tf.io.TFRecordWriter(p)) for p in tmp_paths], totals, report)
    documents = read_documents(input_files, on_encoding_error, counters, split_sentences)
    _run_tasks(_chunk_tasks(documents, tokenizer, random_seed, documents_per_chunk,
                            vocab.get("[UNK]", -1), totals),
               pool, num_workers, write)
    if counters["skipped_lines"]:
      log(f"skipped {counters['skipped_lines']:,} lines that were not valid UTF-8")
    _check_corpus_shape(totals, input_files)
    report(totals["documents"], write.written, final=True)
  summary = summarize(totals, write.written, time.time() - report.start)
  summary["skipped_lines"] = counters["skipped_lines"]
  return summary


def summarize(totals, written, seconds):
  """The end-of-run figures: counts, masking split, random-next and [UNK] rates."""
  masked = max(totals["masked"], 1)
  return {
      "documents": totals["documents"],
      "sentences": totals["sentences"],
      "corpus_tokens": totals["corpus_tokens"],
      "instances_written": written,
      "instance_tokens": totals["instance_tokens"],
      "masked_fraction": totals["masked"] / max(totals["instance_tokens"], 1),
      "mask_token_fraction": totals["masked_as_mask"] / masked,
      "kept_fraction": totals["masked_kept"] / masked,
      "random_token_fraction": totals["masked_random"] / masked,
      "random_next_fraction": totals["random_next"] / max(written, 1),
      "unk_rate": totals["unk_tokens"] / max(totals["corpus_tokens"], 1),
      "seconds": seconds,
      "instances_per_second": written / max(seconds, 1e-9),
  }


def summary_lines(summary):
  """create_pretraining_data.py's `key = value` lines of the summary."""
  return [f"{key} = {value:.4f}" if isinstance(value, float) else f"{key} = {value:,}"
          for key, value in summary.items()]
