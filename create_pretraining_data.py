r"""Creates masked-LM / next-sentence pretraining TFRecords from plain text, fast.

  python create_pretraining_data.py \
    --input_file=../shared/data/corpora/sample_text.txt \
    --output_file=out/tf_examples.tfrecord \
    --vocab_file=../shared/data/vocab/uncased_vocab.txt \
    --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
    --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

Input: one sentence a line, a blank line between documents; several files comma-separated
or globbed. Output: tf.train.Examples with the original's seven features, round-robin over
the comma-separated `--output_file` list (or `--num_output_shards` files), readable by the
original run_pretraining.py and by ours.

The algorithm is the original's, call for call on the same `random.Random`: document
shuffling, `dupe_factor` passes, a target length drawn per document pass, segment A/B with
random-next and put-back, random front/back truncation, 15% masking split 80/10/10,
optional whole-word masking, the instances shuffled. What differs (docs/pretraining_data.md):
the corpus is streamed in chunks of `--documents_per_chunk` documents, each chunk run through
that algorithm with its own generator seeded from (`--random_seed`, chunk index), so random-
next segments come from the same chunk and instances are shuffled within the chunk. A corpus
that fits in one chunk gives the original's instances exactly (chunk 0 uses `--random_seed`
itself). Chunks go to `--num_workers` processes and are written in order, so the output bytes
do not depend on the number of workers.
"""

import array
import collections
import contextlib
import functools
import hashlib
import multiprocessing
import os
import random
import struct
import sys
import time

from absl import app
from absl import flags
from absl import logging

import flags_common
import script_utils

flags_common.define_runtime_flags()

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files, globs allowed).")
flags.DEFINE_string(
    "output_file", None,
    "Output TF example file (or comma-separated list of files, written round-robin).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased models and False "
    "for cased models.")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer(
    "dupe_factor", 10, "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float(
    "short_seq_prob", 0.1,
    "Probability of creating sequences which are shorter than the maximum length.")
# Ours, not the original's.
flags.DEFINE_float(
    "mask_token_prob", 0.8,
    "Of the chosen positions, the share replaced by [MASK] (the paper's Table 8 ablation).")
flags.DEFINE_float(
    "random_token_prob", 0.1,
    "Of the chosen positions, the share replaced by a random vocabulary token; the rest "
    "(1 - mask_token_prob - random_token_prob) keep their token.")
flags.DEFINE_integer(
    "num_output_shards", None,
    "Write N files named <output_file>-0000i-of-0000N instead of --output_file itself "
    "(round-robin, as for a comma-separated list).")
flags.DEFINE_integer(
    "num_workers", None,
    "Worker processes creating instances (0: in this process). Default: one per CPU. "
    "The output bytes are the same for every value.")
flags.DEFINE_integer(
    "documents_per_chunk", 1000,
    "Documents read, shuffled and paired together; bounds memory. Random-next segments "
    "come from the same chunk (the original: from the whole corpus).")
flags.DEFINE_enum("on_encoding_error", "fail", ["fail", "skip"],
                  "A line that is not valid UTF-8: fail naming file and line, or skip it.")

FLAGS = flags.FLAGS

# Sentences tokenized per call of the in-graph tokenizer: large enough to amortise the
# call, small enough to keep the ragged intermediates of one call in a few MB.
_TOKENIZE_BATCH = 4096
_PROGRESS_EVERY_S = 10.0
_FLOAT_ONE = struct.pack("<f", 1.0)
_FLOAT_ZERO = struct.pack("<f", 0.0)

InstanceOptions = collections.namedtuple("InstanceOptions", [
    "max_seq_length", "max_predictions_per_seq", "dupe_factor", "short_seq_prob",
    "masked_lm_prob", "mask_token_prob", "random_token_prob", "do_whole_word_mask",
    "cls_id", "sep_id", "mask_id", "vocab_ids", "is_subword"])
InstanceOptions.__doc__ = """What a worker needs to turn token ids into instances.

vocab_ids: the ids of the vocabulary's tokens in file order (the original's
  `list(tokenizer.vocab.keys())`, as ids), from which random replacements are drawn.
is_subword: bytes, is_subword[id] == 1 when the token starts with "##".
"""

# One instance before padding. input_ids: list[int] with masking applied, [CLS] A [SEP] B
# [SEP]; num_a: len(A); masked_lm_positions / masked_lm_ids: list[int], sorted by position.
TrainingInstance = collections.namedtuple("TrainingInstance", [
    "input_ids", "num_a", "masked_lm_positions", "masked_lm_ids", "is_random_next"])

STAT_KEYS = ("documents", "sentences", "corpus_tokens", "instances", "instance_tokens",
             "masked", "masked_as_mask", "masked_kept", "masked_random", "random_next")


def chunk_seed(random_seed, chunk_index):
  """The seed of chunk `chunk_index`'s random.Random.

  Chunk 0 uses `random_seed` itself, so a corpus that fits in one chunk is processed with
  exactly the original's generator; the others hash (seed, index) so that chunks of
  neighbouring seeds do not share streams.
  """
  if chunk_index == 0:
    return random_seed
  digest = hashlib.sha256(f"{random_seed}:{chunk_index}".encode()).digest()
  return int.from_bytes(digest[:8], "little")


# --------------------------------------------------------------------------- algorithm
# The original's algorithm on token ids. Every random draw is the original's, in its order:
# rng.random(), rng.randint(a, b) == a + _randbelow(b - a + 1), rng.shuffle(x); the inlined
# versions below consume the same getrandbits() calls as CPython's (tests check it).


def _randbelow(getrandbits, n):
  k = n.bit_length()
  r = getrandbits(k)
  while r >= n:
    r = getrandbits(k)
  return r


# Per list length, the shuffle's steps (i, i + 1, bit length of i + 1), from the end.
_SHUFFLE_STEPS = {}


def _shuffle_steps(length):
  steps = _SHUFFLE_STEPS.get(length)
  if steps is None:
    steps = [(i, i + 1, (i + 1).bit_length()) for i in range(length - 1, 0, -1)]
    if length <= 4096:
      _SHUFFLE_STEPS[length] = steps
  return steps


def _shuffle(getrandbits, x):
  """random.Random.shuffle(x), inlined: same draws, same permutation."""
  for i, n, k in _shuffle_steps(len(x)):
    j = getrandbits(k)
    while j >= n:
      j = getrandbits(k)
    x[i], x[j] = x[j], x[i]


def _mask(tokens, num_a, opt, rng, stats):
  """The original's create_masked_lm_predictions on ids.

  tokens: list[int], [CLS] A [SEP] B [SEP] with len(A) == num_a.
  Returns (output_ids, positions, label_ids), positions sorted.
  """
  getrandbits = rng.getrandbits
  rand = rng.random
  length = len(tokens)
  sep_a = num_a + 1
  num_to_predict = min(opt.max_predictions_per_seq,
                       max(1, int(round(length * opt.masked_lm_prob))))
  if opt.do_whole_word_mask:
    is_subword = opt.is_subword
    cand_indexes = []
    for i in range(1, length - 1):
      if i == sep_a:
        continue
      if cand_indexes and is_subword[tokens[i]]:
        cand_indexes[-1].append(i)
      else:
        cand_indexes.append([i])
    _shuffle(getrandbits, cand_indexes)
    chosen = []
    for index_set in cand_indexes:
      if len(chosen) >= num_to_predict:
        break
      # A whole word that would exceed the budget is skipped, as in the original; the
      # candidate sets are disjoint, so the original's covered-index check never fires.
      if len(chosen) + len(index_set) > num_to_predict:
        continue
      chosen.extend(index_set)
  else:
    chosen = list(range(1, sep_a))
    chosen.extend(range(sep_a + 1, length - 1))
    _shuffle(getrandbits, chosen)
    del chosen[num_to_predict:]

  output = list(tokens)
  p_mask = opt.mask_token_prob
  keep_threshold = _keep_threshold(opt)
  vocab_ids = opt.vocab_ids
  num_vocab = len(vocab_ids)
  mask_id = opt.mask_id
  n_mask = n_keep = n_random = 0
  for index in chosen:
    if rand() < p_mask:
      output[index] = mask_id
      n_mask += 1
    elif rand() < keep_threshold:
      n_keep += 1
    else:
      output[index] = vocab_ids[_randbelow(getrandbits, num_vocab)]
      n_random += 1
  stats["masked_as_mask"] += n_mask
  stats["masked_kept"] += n_keep
  stats["masked_random"] += n_random
  stats["masked"] += len(chosen)
  chosen.sort()
  return output, chosen, [tokens[i] for i in chosen]


def _keep_threshold(opt):
  """Second draw of the original: keep when rng.random() < 0.5 (of the non-[MASK] 20%)."""
  rest = 1.0 - opt.mask_token_prob
  if rest <= 0.0:
    return 1.0
  # Rounded so that the defaults give exactly the original's 0.5 (0.1 / 0.2 in binary
  # floating point is 0.49999999999999994).
  return round((rest - opt.random_token_prob) / rest, 12)


def create_instances_from_document(documents, document_index, opt, rng, stats):
  """The original's create_instances_from_document on ids; returns list[TrainingInstance].

  documents: list of documents, each a list of sentences, each a non-empty list[int].
  """
  getrandbits = rng.getrandbits
  rand = rng.random
  document = documents[document_index]
  num_sentences = len(document)
  max_num_tokens = opt.max_seq_length - 3
  # Usually fill the whole sequence; sometimes (short_seq_prob) a shorter one, to reduce
  # the mismatch between pretraining and fine-tuning on short inputs.
  target_seq_length = max_num_tokens
  if rand() < opt.short_seq_prob:
    target_seq_length = 2 + _randbelow(getrandbits, max_num_tokens - 1)
  cls_id, sep_id = opt.cls_id, opt.sep_id
  instances = []
  current_chunk = []
  current_length = 0
  i = 0
  while i < num_sentences:
    segment = document[i]
    current_chunk.append(segment)
    current_length += len(segment)
    if i == num_sentences - 1 or current_length >= target_seq_length:
      a_end = 1
      if len(current_chunk) >= 2:
        a_end = 1 + _randbelow(getrandbits, len(current_chunk) - 1)
      tokens_a = []
      for j in range(a_end):
        tokens_a.extend(current_chunk[j])
      tokens_b = []
      if len(current_chunk) == 1 or rand() < 0.5:
        is_random_next = True
        target_b_length = target_seq_length - len(tokens_a)
        # Ten tries at another document; with a single document the last draw is used.
        for _ in range(10):
          random_document_index = _randbelow(getrandbits, len(documents))
          if random_document_index != document_index:
            break
        random_document = documents[random_document_index]
        random_start = _randbelow(getrandbits, len(random_document))
        for j in range(random_start, len(random_document)):
          tokens_b.extend(random_document[j])
          if len(tokens_b) >= target_b_length:
            break
        # The sentences of this chunk not used as A are put back for the next instance.
        i -= len(current_chunk) - a_end
      else:
        is_random_next = False
        for j in range(a_end, len(current_chunk)):
          tokens_b.extend(current_chunk[j])

      # truncate_seq_pair: one token at a time from the longer segment, front or back at
      # random, kept as index windows so a very long sentence costs O(n), not O(n^2).
      a_lo, a_hi, b_lo, b_hi = 0, len(tokens_a), 0, len(tokens_b)
      while (a_hi - a_lo) + (b_hi - b_lo) > max_num_tokens:
        if a_hi - a_lo > b_hi - b_lo:
          if rand() < 0.5:
            a_lo += 1
          else:
            a_hi -= 1
        elif rand() < 0.5:
          b_lo += 1
        else:
          b_hi -= 1
      num_a = a_hi - a_lo
      tokens = [cls_id]
      tokens.extend(tokens_a[a_lo:a_hi])
      tokens.append(sep_id)
      tokens.extend(tokens_b[b_lo:b_hi])
      tokens.append(sep_id)
      output, positions, labels = _mask(tokens, num_a, opt, rng, stats)
      instances.append(TrainingInstance(output, num_a, positions, labels, is_random_next))
      stats["instances"] += 1
      stats["instance_tokens"] += len(tokens)
      stats["random_next"] += is_random_next
      current_chunk = []
      current_length = 0
    i += 1
  return instances


# --------------------------------------------------------------------------- serialization
# tf.train.Example written by hand: the bytes equal
# `example.SerializeToString(deterministic=True)` (features in key order, packed values),
# at a fraction of the cost of building protobuf objects per instance.


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


_SMALL_VARINTS = [_varint(v) for v in range(1 << 14)]


def _len_delimited(tag, payload):
  n = len(payload)
  return tag + (_SMALL_VARINTS[n] if n < 16384 else _varint(n)) + payload


_KEY_HEADERS = {}


def _feature_entry(key, feature):
  """One map<string, Feature> entry of Features.feature."""
  header = _KEY_HEADERS.get(key)
  if header is None:
    encoded = key.encode()
    header = _KEY_HEADERS[key] = b"\x0a" + _varint(len(encoded)) + encoded + b"\x12"
  n = len(feature)
  return _len_delimited(
      b"\x0a", header + (_SMALL_VARINTS[n] if n < 16384 else _varint(n)) + feature)


def _int64_feature(packed):
  return _len_delimited(b"\x1a", _len_delimited(b"\x0a", packed))


def _float_feature(packed):
  return _len_delimited(b"\x12", _len_delimited(b"\x0a", packed))


class ExampleEncoder:
  """Serializes TrainingInstances as the original's padded tf.train.Example."""

  def __init__(self, max_seq_length, max_predictions_per_seq, max_id):
    self.max_seq_length = max_seq_length
    self.max_predictions_per_seq = max_predictions_per_seq
    size = max(max_id, max_seq_length, 4 * max_predictions_per_seq) + 1
    self._varints = [_varint(v) for v in range(size)]
    # Features whose bytes depend only on a length or a label are built once and reused.
    self._cache = {}

  def _cached(self, key, build):
    value = self._cache.get(key)
    if value is None:
      value = self._cache[key] = build()
    return value

  def encode(self, instance):
    """Returns the serialized tf.train.Example (bytes) of one TrainingInstance."""
    seq = self.max_seq_length
    preds = self.max_predictions_per_seq
    varints = self._varints
    cached = self._cached
    ids = instance.input_ids
    length = len(ids)
    pad = seq - length
    num_b = length - instance.num_a - 2
    num_masked = len(instance.masked_lm_positions)
    mask_pad = preds - num_masked
    mask_zeros = b"\x00" * mask_pad
    parts = (
        _feature_entry("input_ids", _int64_feature(
            b"".join(map(varints.__getitem__, ids)) + b"\x00" * pad)),
        cached(("input_mask", length), lambda: _feature_entry(
            "input_mask", _int64_feature(b"\x01" * length + b"\x00" * pad))),
        _feature_entry("masked_lm_ids", _int64_feature(
            b"".join(map(varints.__getitem__, instance.masked_lm_ids)) + mask_zeros)),
        _feature_entry("masked_lm_positions", _int64_feature(
            b"".join(map(varints.__getitem__, instance.masked_lm_positions)) +
            mask_zeros)),
        cached(("masked_lm_weights", num_masked), lambda: _feature_entry(
            "masked_lm_weights",
            _float_feature(_FLOAT_ONE * num_masked + _FLOAT_ZERO * mask_pad))),
        cached(("next_sentence_labels", instance.is_random_next), lambda: _feature_entry(
            "next_sentence_labels",
            _int64_feature(b"\x01" if instance.is_random_next else b"\x00"))),
        cached(("segment_ids", length, num_b), lambda: _feature_entry(
            "segment_ids",
            _int64_feature(b"\x00" * (length - num_b) + b"\x01" * num_b + b"\x00" * pad))),
    )
    return _len_delimited(b"\x0a", b"".join(parts))


# --------------------------------------------------------------------------- chunks


def documents_from_ids(flat_ids, sentence_splits, doc_sentence_counts):
  """Rebuilds a chunk's documents from the tokenizer's flat output.

  flat_ids: int32 [num_tokens]; sentence_splits: int64 [num_sentences + 1], the ragged row
  splits; each a NumPy array, a list, or its raw native-endian bytes (what the workers
  receive: no NumPy import there, and the pickle is the bare buffer).
  doc_sentence_counts: list[int], sentences of each raw document.
  Sentences that tokenize to nothing and documents left empty are dropped, as the original.
  """
  flat = _as_list(flat_ids, "i")
  splits = _as_list(sentence_splits, "q")
  documents = []
  s = 0
  for count in doc_sentence_counts:
    document = []
    for k in range(s, s + count):
      lo, hi = splits[k], splits[k + 1]
      if hi > lo:
        document.append(flat[lo:hi])
    s += count
    if document:
      documents.append(document)
  return documents


def _as_list(values, typecode):
  if isinstance(values, (bytes, bytearray)):
    return array.array(typecode, values).tolist()
  return values.tolist() if hasattr(values, "tolist") else list(values)


def create_chunk_examples(documents, opt, seed, encoder=None):
  """The original's create_training_instances on one chunk; returns (records, stats).

  documents: list of documents (lists of non-empty list[int] sentences); shuffled in place.
  records: list[bytes] of serialized tf.train.Examples in the original's final
  (shuffled) order; stats: dict over STAT_KEYS.
  """
  if encoder is None:
    encoder = ExampleEncoder(opt.max_seq_length, opt.max_predictions_per_seq,
                             max(opt.vocab_ids))
  rng = random.Random(seed)
  stats = dict.fromkeys(STAT_KEYS, 0)
  stats["documents"] = len(documents)
  stats["sentences"] = sum(len(d) for d in documents)
  stats["corpus_tokens"] = sum(len(s) for d in documents for s in d)
  records = []
  if not documents:
    return records, stats
  rng.shuffle(documents)
  encode = encoder.encode
  for _ in range(opt.dupe_factor):
    for document_index in range(len(documents)):
      for instance in create_instances_from_document(documents, document_index, opt, rng,
                                                     stats):
        records.append(encode(instance))
  # Shuffling the serialized records draws exactly what the original's shuffle of its
  # instance objects draws: the permutation depends only on the length.
  rng.shuffle(records)
  return records, stats


_WORKER = {}


def _init_worker(opt):
  _WORKER["opt"] = opt
  _WORKER["encoder"] = ExampleEncoder(opt.max_seq_length, opt.max_predictions_per_seq,
                                      max(opt.vocab_ids))


def _process_chunk(task):
  """Worker entry: (seed, flat_ids, sentence_splits, doc_sentence_counts) -> (records, stats)."""
  seed, flat_ids, splits, counts = task
  documents = documents_from_ids(flat_ids, splits, counts)
  return create_chunk_examples(documents, _WORKER["opt"], seed, _WORKER["encoder"])


def read_documents(input_files, on_encoding_error, counters):
  """Yields raw documents (list of stripped, non-blank lines) from the input files.

  As the original, a blank line ends a document and a new file does not: a file that ends
  without a blank line continues its last document into the next file.
  counters: dict; "lines", "skipped_lines" and "chars" are added to as lines are read.
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
      if line:
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
  """Sentences -> flat ids + row splits, through tokenization.FastTokenizer (in-graph)."""

  def __init__(self, vocab_file, do_lower_case):
    import tokenization  # pylint: disable=g-import-not-at-top
    self.vocab = tokenization.load_vocab(vocab_file)
    fast = getattr(tokenization, "FastTokenizer", None)
    # Until FastTokenizer is available everywhere, FullTokenizer gives the same ids.
    self._fast = fast(vocab_file, do_lower_case) if fast is not None else None
    self._full = (None if self._fast is not None else
                  tokenization.FullTokenizer(vocab_file, do_lower_case))

  def tokenize(self, sentences):
    """sentences: list[str] -> (flat ids int32 [num_tokens], row splits int64 [n + 1])."""
    import numpy as np  # pylint: disable=g-import-not-at-top
    flats, lengths = [], []
    for start in range(0, len(sentences), _TOKENIZE_BATCH):
      batch = sentences[start:start + _TOKENIZE_BATCH]
      if self._fast is not None and hasattr(self._fast, "tokenize"):
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
        ragged = self._fast.tokenize(tf.constant(batch))
        splits = ragged.row_splits.numpy()
        flats.append(ragged.flat_values.numpy().astype(np.int32))
        lengths.append(np.diff(splits))
      else:
        if self._fast is not None:
          ids = self._fast.tokenize_batch(batch)
        else:
          ids = [self._full.convert_tokens_to_ids(self._full.tokenize(s)) for s in batch]
        flats.append(np.fromiter((t for s in ids for t in s), dtype=np.int32))
        lengths.append(np.array([len(s) for s in ids], dtype=np.int64))
    flat = np.concatenate(flats) if flats else np.zeros([0], np.int32)
    splits = np.zeros([len(sentences) + 1], np.int64)
    if lengths:
      np.cumsum(np.concatenate(lengths), out=splits[1:])
    return flat, splits


@functools.lru_cache(maxsize=2)
def _get_tokenizer(vocab_file, do_lower_case):
  # Building the in-graph tokenizer traces a tf.function (seconds); callers that run
  # several generations in one process (tests, benchmarks) build it once.
  return _Tokenizer(vocab_file, do_lower_case)


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


def output_paths(output_file, num_output_shards=None):
  """The files to write: the comma-separated list, or N numbered shards of one name."""
  files = [f.strip() for f in str(output_file or "").split(",") if f.strip()]
  if not files:
    raise script_utils.UserError("--output_file is required")
  if num_output_shards:
    if len(files) != 1:
      raise script_utils.UserError(
          "--num_output_shards needs a single --output_file name, not a list")
    if num_output_shards < 1:
      raise script_utils.UserError("--num_output_shards must be at least 1")
    return [f"{files[0]}-{i:05d}-of-{num_output_shards:05d}"
            for i in range(num_output_shards)]
  return files


def check_options(max_seq_length, max_predictions_per_seq, dupe_factor, masked_lm_prob,
                  short_seq_prob, mask_token_prob, random_token_prob, documents_per_chunk,
                  num_workers):
  """Flag values the algorithm cannot run with -> one-line UserError naming the flag."""
  checks = [
      (max_seq_length >= 5, "--max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP])"),
      (max_predictions_per_seq >= 1, "--max_predictions_per_seq must be at least 1"),
      (dupe_factor >= 1, "--dupe_factor must be at least 1"),
      (0.0 < masked_lm_prob <= 1.0, "--masked_lm_prob must be in (0, 1]"),
      (0.0 <= short_seq_prob <= 1.0, "--short_seq_prob must be in [0, 1]"),
      (0.0 <= mask_token_prob <= 1.0 and 0.0 <= random_token_prob <= 1.0 and
       mask_token_prob + random_token_prob <= 1.0 + 1e-9,
       "--mask_token_prob and --random_token_prob must be in [0, 1] with a sum <= 1"),
      (documents_per_chunk >= 2,
       "--documents_per_chunk must be at least 2 (random-next needs another document)"),
      (num_workers is None or num_workers >= 0, "--num_workers must be 0 or more"),
  ]
  for ok, message in checks:
    if not ok:
      raise script_utils.UserError(message)


def _check_output_directory(path):
  """Fails before the long run, not after it, when an output cannot be written."""
  if "://" in path:
    return
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise script_utils.UserError(
        f"--output_file={path}: directory {directory} does not exist; create it first")
  if not os.access(directory, os.W_OK | os.X_OK):
    raise script_utils.UserError(
        f"--output_file={path}: directory {directory} is not writable")
  if os.path.isdir(path):
    raise script_utils.UserError(f"--output_file={path}: is a directory, expected a file")


def _format_duration(seconds):
  seconds = int(max(0, seconds))
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def generate(input_files, output_files, vocab_file, do_lower_case=True,
             do_whole_word_mask=False, max_seq_length=128, max_predictions_per_seq=20,
             random_seed=12345, dupe_factor=10, masked_lm_prob=0.15, short_seq_prob=0.1,
             mask_token_prob=0.8, random_token_prob=0.1, num_workers=0,
             documents_per_chunk=1000, on_encoding_error="fail", log=logging.info):
  """Writes the pretraining TFRecords; returns the summary dict (counts and fractions).

  input_files, output_files: lists of paths. Every output is written under a temporary
  name and renamed when the whole run succeeded.
  """
  check_options(max_seq_length, max_predictions_per_seq, dupe_factor, masked_lm_prob,
                short_seq_prob, mask_token_prob, random_token_prob, documents_per_chunk,
                num_workers)
  for path in input_files:
    script_utils.check_input_file(path, "input_file", allow_empty=True)
  script_utils.check_input_file(vocab_file, "vocab_file")
  for path in output_files:
    _check_output_directory(path)
  start = time.time()
  total_chars = sum(os.path.getsize(p) for p in input_files if "://" not in p) or 1
  if num_workers is None:
    num_workers = os.cpu_count() or 1

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tokenizer = _get_tokenizer(vocab_file, do_lower_case)
  opt = _instance_options(
      tokenizer.vocab, vocab_file, max_seq_length=max_seq_length,
      max_predictions_per_seq=max_predictions_per_seq, dupe_factor=dupe_factor,
      short_seq_prob=short_seq_prob, masked_lm_prob=masked_lm_prob,
      mask_token_prob=mask_token_prob, random_token_prob=random_token_prob,
      do_whole_word_mask=do_whole_word_mask)
  unk_id = tokenizer.vocab.get("[UNK]", -1)
  pool = None
  if num_workers > 0:
    # Spawned, not forked: the parent runs TensorFlow threads, and the workers need only
    # this module's pure-Python half (no TensorFlow, no NumPy).
    pool = multiprocessing.get_context("spawn").Pool(
        num_workers, initializer=_init_worker, initargs=(opt,))
  else:
    _init_worker(opt)

  totals = dict.fromkeys(STAT_KEYS, 0)
  totals["unk_tokens"] = 0
  counters = {"lines": 0, "skipped_lines": 0, "chars": 0}
  written = 0
  last_log = [start, -1]

  def tasks():
    chunks = chunk_documents(read_documents(input_files, on_encoding_error, counters),
                             documents_per_chunk)
    for index, chunk in enumerate(chunks):
      sentences = [s for d in chunk for s in d]
      flat, splits = tokenizer.tokenize(sentences)
      totals["unk_tokens"] += int((flat == unk_id).sum())
      yield (chunk_seed(random_seed, index), flat.astype("=i4").tobytes(),
             splits.astype("=i8").tobytes(), [len(d) for d in chunk])

  def progress(final=False):
    now = time.time()
    if not final and now - last_log[0] < _PROGRESS_EVERY_S:
      return
    if final and last_log[1] == written:
      return
    last_log[:] = [now, written]
    elapsed = max(now - start, 1e-9)
    done = min(counters["chars"] / total_chars, 1.0)
    eta = elapsed * (1.0 - done) / done if done > 0 else 0.0
    log(f"documents {totals['documents']:,}  instances {written:,}  "
        f"{written / elapsed:,.0f} instances/s  read {100 * done:.1f}%  "
        f"elapsed {_format_duration(elapsed)}  ETA ~{_format_duration(eta)}")

  with contextlib.ExitStack() as stack:
    if pool is not None:
      stack.callback(pool.terminate)
    tmp_paths = [stack.enter_context(script_utils.atomic_path(p)) for p in output_files]
    writers = [stack.enter_context(tf.io.TFRecordWriter(p)) for p in tmp_paths]
    num_writers = len(writers)

    def write(result):
      nonlocal written
      records, stats = result
      for record in records:
        writers[written % num_writers].write(record)
        written += 1
      for key in STAT_KEYS:
        totals[key] += stats[key]
      progress()

    if pool is None:
      for task in tasks():
        write(_process_chunk(task))
    else:
      # Bounded look-ahead keeps memory flat (imap would tokenize the whole corpus ahead)
      # and results are written in chunk order, so the bytes do not depend on num_workers.
      pending = collections.deque()
      for task in tasks():
        pending.append(pool.apply_async(_process_chunk, (task,)))
        while len(pending) > num_workers:
          write(pending.popleft().get())
      while pending:
        write(pending.popleft().get())
      pool.close()
      pool.join()

    if counters["skipped_lines"]:
      log(f"skipped {counters['skipped_lines']:,} lines that were not valid UTF-8")
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
    progress(final=True)
  summary = summarize(totals, written, time.time() - start)
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


def main(_):
  with script_utils.report_user_errors(FLAGS.verbose):
    for name in ("input_file", "output_file", "vocab_file"):
      if not FLAGS[name].value:
        raise script_utils.UserError(f"--{name} is required")
    input_files = script_utils.expand_file_patterns(FLAGS.input_file, "input_file")
    outputs = output_paths(FLAGS.output_file, FLAGS.num_output_shards)
    logging.info("reading %d input file(s); writing %d output file(s)", len(input_files),
                 len(outputs))
    summary = generate(
        input_files, outputs, FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
        do_whole_word_mask=FLAGS.do_whole_word_mask, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed, dupe_factor=FLAGS.dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        mask_token_prob=FLAGS.mask_token_prob, random_token_prob=FLAGS.random_token_prob,
        num_workers=FLAGS.num_workers, documents_per_chunk=FLAGS.documents_per_chunk,
        on_encoding_error=FLAGS.on_encoding_error)
    logging.info("*** Wrote %d instances to %s ***", summary["instances_written"],
                 ", ".join(outputs))
    for key, value in summary.items():
      shown = f"{value:.4f}" if isinstance(value, float) else f"{value:,}"
      print(f"{key} = {shown}")
    sys.stdout.flush()


if __name__ == "__main__":
  app.run(main)
