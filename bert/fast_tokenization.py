"""The in-graph twin of tokenization.FullTokenizer: the same tokens and ids in TensorFlow.

`FastTokenizer` runs the original's tokenization inside a graph (tf.data, SavedModels)
on tensorflow-text's `FastWordpieceTokenizer`; `pack_inputs` packs one or two segments
into BERT's inputs with the original's truncation. The character classes come from this
Python's `unicodedata`, the tables the pure-Python tokenizer uses, so both paths agree
code point for code point.
"""

import functools
import re
import sys
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

from bert import tokenization
from bert.utils import errors


@functools.lru_cache(maxsize=1)
def _category_runs():
  """[(first, last, category)] for every code point, from this Python's unicodedata."""
  runs = []
  start, current = 0, unicodedata.category("\x00")
  for cp in range(1, sys.maxunicode + 1):
    category = unicodedata.category(chr(cp))
    if category != current:
      runs.append((start, cp - 1, current))
      start, current = cp, category
  runs.append((start, sys.maxunicode, current))
  return runs


# Rows that take FastTokenizer's short path: printable ASCII, tab, newline and return
# only, and no word longer than the original's limit. In ASCII every character but
# letters and digits is a space or punctuation, so a word is a run of [A-Za-z0-9]. Any
# other character (ASCII control characters included), or a run of more than
# MAX_INPUT_CHARS_PER_WORD letters and digits, sends the row through the whole
# normalisation.
_ASCII_SEPARATOR = r"[\t\n\r\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]"
_SHORT_ASCII_ROW = r"{sep}*(?:[0-9A-Za-z]{{1,{n}}}{sep}+)*[0-9A-Za-z]{{0,{n}}}".format(
    sep=_ASCII_SEPARATOR, n=tokenization.MAX_INPUT_CHARS_PER_WORD)


def _ranges(category_test, add=(), remove=()):
  """Sorted (first, last) code point ranges: categories passing the test, plus `add`
  code points or ranges, minus `remove`; surrogates (never in UTF-8 text) left out."""
  mask = bytearray(sys.maxunicode + 1)
  for first, last, category in _category_runs():
    if category_test(category):
      mask[first:last + 1] = b"\x01" * (last - first + 1)
  for value, items in ((1, add), (0, remove)):
    for item in items:
      first, last = item if isinstance(item, tuple) else (item, item)
      mask[first:last + 1] = bytes([value]) * (last - first + 1)
  mask[0xD800:0xE000] = bytes(0xE000 - 0xD800)
  return [(m.start(), m.end() - 1) for m in re.finditer(b"\x01+", bytes(mask))]


def _re2_class(ranges, negate=False):
  """An RE2 character class for code point ranges, e.g. [\\x{41}-\\x{5a}]."""
  parts = "".join(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}"
                  for lo, hi in ranges)
  return ("[^" if negate else "[") + parts + "]"


@functools.lru_cache(maxsize=None)
def _graph_patterns():
  """RE2 patterns that make the in-graph path agree with this Python's unicodedata.

  The character classes are computed from the same `unicodedata` tables the Python
  tokenizer uses, rather than RE2's or ICU's own (other Unicode versions), so both
  paths drop, strip and split exactly the same characters.
  """
  tab_newline_return = (0x09, 0x0A, 0x0D)
  # The original drops NUL, U+FFFD and every control (Cc) and format (Cf) character
  # but tab, newline and carriage return (which it treats as spaces).
  dropped = _re2_class(_ranges(lambda cat: cat in tokenization.CONTROL_CATEGORIES,
                               add=(0x0, 0xFFFD), remove=tab_newline_return))
  marks = _re2_class(_ranges(lambda cat: cat == "Mn"))
  # Marks go before lower-casing too: every Mn is case-ignorable to Python (skipped by
  # the final-sigma rule either way), but ICU may not know recent ones, and would
  # then lower-case the sigma before them as a final one.
  dropped_and_marks = _re2_class(_ranges(
      lambda cat: cat in tokenization.CONTROL_CATEGORIES or cat == "Mn", add=(0x0, 0xFFFD),
      remove=tab_newline_return))
  # Characters that end a word: whitespace (Zs, and whatever str.split() splits on),
  # punctuation (P*, and the ASCII symbol ranges) and CJK ideographs. A run of anything
  # else is one word to WordpieceTokenizer.
  split_whitespace = tuple(cp for cp in range(0x3001) if chr(cp).isspace())  # all of them
  separators = _ranges(
      lambda cat: cat == "Zs" or cat.startswith("P"),
      add=split_whitespace + ((33, 47), (58, 64), (91, 96), (123, 126)) + tokenization.CJK_RANGES)
  separator = _re2_class(separators)
  # A cheap test for "may hold a word over the limit": runs of characters other than
  # the common separators (ASCII, general punctuation, CJK symbols and ideographs,
  # full-width forms). Rarer separators count as word characters here, so it flags a
  # superset of the rows that really hold a long word; few ranges keep RE2's DFA small.
  common_blocks = [(0x00, 0x7F), (0x2000, 0x206F), (0x3000, 0x303F), (0xFF00, 0xFF65)]
  common = [(max(lo, blo), min(hi, bhi)) for lo, hi in separators
            for blo, bhi in common_blocks + list(tokenization.CJK_RANGES)
            if lo <= bhi and blo <= hi]
  maybe_long_word = "(?s).*%s{%d}.*" % (_re2_class(sorted(common), negate=True),
                                        tokenization.MAX_INPUT_CHARS_PER_WORD + 1)
  return dropped, marks, dropped_and_marks, separator, maybe_long_word


def _unassigned_pattern(vocab_tokens):
  """An RE2 class of the characters unassigned (Cn) to this Python that no token holds.

  To the original such a character is an ordinary one: kept, no case, no mark, no
  separator, so a word holding it is [UNK] when no vocabulary token has it. ICU and
  RE2 may know a newer Unicode in which it is punctuation, a format character or an
  upper-case letter; the in-graph path replaces it by a noncharacter first, which every
  Unicode version leaves unassigned. (Unassigned code points among the CJK ranges are
  separators to the original and stay as they are.)
  """
  in_vocab = {ord(c) for c in set("".join(vocab_tokens)) if unicodedata.category(c) == "Cn"}
  return _re2_class(_ranges(lambda cat: cat == "Cn",
                            remove=tokenization.CJK_RANGES + tuple(in_vocab)))


def _noncharacters():
  """The 66 code points Unicode reserves as permanently unassigned (category Cn)."""
  plane_ends = [plane * 0x10000 + low for plane in range(17) for low in (0xFFFE, 0xFFFF)]
  return list(range(0xFDD0, 0xFDF0)) + plane_ends


def _placeholder_for_long_words(vocab_tokens):
  """A character in no vocabulary token, so that a word made of it is one [UNK].

  A word longer than tokenization.MAX_INPUT_CHARS_PER_WORD characters is replaced by this character
  before WordPiece (tensorflow-text's own limit counts bytes, not characters). The word
  is replaced whole, between separators, so it becomes a one-character word that no
  vocabulary token matches: [UNK], whatever the text around it holds, this character
  included. A noncharacter is never assigned by any Unicode version, so no table
  (Python's or ICU's) makes it a separator, a mark or a letter with a case.
  """
  used = set("".join(vocab_tokens))
  for cp in _noncharacters():
    if chr(cp) not in used:
      return chr(cp)
  raise errors.UserError("vocabulary uses every Unicode noncharacter; cannot mark long words")


def _flat_segment(segment):
  """A segment as int32 values with int64 row splits, [batch, (words), (pieces)] merged."""
  if segment.ragged_rank > 1:
    segment = segment.merge_dims(1, -1)
  return tf.cast(segment, tf.int32).with_row_splits_dtype(tf.int64)


def _checked_seq_length(seq_length, num_segments):
  """seq_length (int or scalar int tensor) -> (int64 scalar tensor, int or None if dynamic).

  Too short to hold [CLS], a token and a [SEP] per segment: a ValueError when the value
  is known now, an InvalidArgumentError when the graph runs otherwise.
  """
  least = 2 * num_segments + 1
  static = tf.get_static_value(seq_length) if tf.is_tensor(seq_length) else seq_length
  if static is not None:
    if not float(static).is_integer() or static < least:
      raise errors.UserError(
          f"seq_length={static} leaves no room for the tokens (needs >= {least})")
    return tf.constant(int(static), tf.int64), int(static)
  seq_length = tf.cast(seq_length, tf.int64)
  check = tf.debugging.assert_greater_equal(
      seq_length, tf.constant(least, tf.int64),
      message=f"pack_inputs: seq_length leaves no room for the tokens (needs >= {least})")
  with tf.control_dependencies([check]):
    return tf.identity(seq_length), None


def pack_inputs(segments, seq_length, cls_id, sep_id):
  """Packs one or two segments into BERT's inputs, in the graph, as the original does.

  `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, zero-padded. A pair is truncated like
  `truncate_seq_pair` (one token at a time from the longer segment, B on a tie) to
  seq_length - 3 tokens; a single segment keeps its first seq_length - 2. A row whose
  B holds no tokens is a single segment, `[CLS] A [SEP]` with A cut to seq_length - 2
  and every segment id 0, as the original's `if tokens_b:` makes it (row by row).

  Args:
    segments: a list of one or two tf.RaggedTensor int32 or int64 [batch, (n)] of
      token ids, e.g. from FastTokenizer.tokenize ([batch, (words), (pieces)] is
      merged into [batch, (n)]).
    seq_length: int, or an int scalar tf.Tensor, the length of every output row.
    cls_id, sep_id: int ids of [CLS] and [SEP].

  Returns:
    dict of int32 tf.Tensor [batch, seq_length]: input_ids, input_mask, segment_ids.
  """
  if len(segments) not in (1, 2):
    raise ValueError(f"pack_inputs takes one or two segments, got {len(segments)}")
  segments = [_flat_segment(s) for s in segments]
  if len(segments) == 2:
    known = [s.shape[0] for s in segments]
    if None not in known and known[0] != known[1]:
      raise ValueError(f"the two texts of a pair (text_a and text_b) must have the same "
                       f"batch; text_a has {known[0]} rows, text_b {known[1]}")
    # Two texts of different batches would otherwise fail deep in the truncation with
    # "Incompatible shapes" (or broadcast a batch of one over the other).
    rows = [tf.cast(s.nrows(), tf.int32) for s in segments]
    check = tf.debugging.Assert(tf.equal(rows[0], rows[1]), [
        "the two texts of a pair (text_a and text_b) must have the same batch; text_a "
        "has rows:", rows[0], "text_b has rows:", rows[1]], name="pair_batches_agree")
    with tf.control_dependencies([check]):
      segments = [tf.identity(s) for s in segments]
  seq_length, static_length = _checked_seq_length(seq_length, len(segments))
  lengths = [s.row_lengths() for s in segments]
  budget = seq_length - 2  # [CLS] and A's [SEP]
  if len(segments) == 1:
    keep = [tf.minimum(lengths[0], budget)]
  else:
    len_a, len_b = lengths
    has_b = tf.cast(len_b > 0, tf.int64)  # [batch]: 0 for a row packed as single
    budget = budget - has_b
    # Closed form of popping from the longer list (B on a tie) until the pair fits:
    # a short segment is kept whole, two long ones share the budget, A getting the odd
    # one. An empty B leaves A the whole budget, like a single segment.
    keep = [tf.minimum(len_a, tf.maximum((budget + 1) // 2, budget - len_b)),
            tf.minimum(len_b, tf.maximum(budget // 2, budget - len_a))]
  trimmed = []
  for segment, n in zip(segments, keep):
    positions = tf.ragged.range(segment.row_lengths())
    trimmed.append(tf.ragged.boolean_mask(segment, positions < tf.expand_dims(n, 1)))
  batch = segments[0].nrows()
  cls = tf.fill([batch, 1], tf.constant(cls_id, tf.int32))
  sep = tf.fill([batch, 1], tf.constant(sep_id, tf.int32))
  pieces = [cls, trimmed[0], sep]
  types = [tf.zeros_like(cls), tf.zeros_like(trimmed[0]), tf.zeros_like(sep)]
  if len(trimmed) == 2:
    sep_b = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(has_b)], tf.constant(sep_id, tf.int32)), has_b)
    pieces += [trimmed[1], sep_b]
    types += [tf.ones_like(trimmed[1]), tf.ones_like(sep_b)]
  input_ids = tf.concat(pieces, axis=1)
  segment_ids = tf.concat(types, axis=1)
  if static_length is not None:
    shape = [None, static_length]
  else:
    shape = tf.stack([batch, seq_length])
  return {
      "input_ids": input_ids.to_tensor(0, shape=shape),
      "input_mask": tf.ones_like(input_ids).to_tensor(0, shape=shape),
      "segment_ids": segment_ids.to_tensor(0, shape=shape),
  }


class FastTokenizer(tf.Module):
  """FullTokenizer in the graph: the same tokens and ids, usable in tf.data and SavedModels.

  tensorflow-text's FastWordpieceTokenizer does the splitting and WordPiece; the text is
  normalised first the way the original's BasicTokenizer does it (FastBertTokenizer's own
  lower-casing would apply NFKC folding, and it keeps format characters the original
  drops). Rows of printable ASCII with no over-long word, where that normalisation is
  at most ASCII lower-casing, skip the rest of it (docs/tokenization.md).
  """

  def __init__(self, vocab_file, do_lower_case=tokenization.DO_LOWER_CASE, name=None,
               normalize=None):
    super().__init__(name=name)
    self.vocab_file = vocab_file
    self.do_lower_case = bool(do_lower_case)
    self.normalize = tokenization.check_normalize(normalize)
    vocab = tokenization.load_vocab(vocab_file)
    tokens = list(vocab)
    missing = [t for t in (tokenization.UNK_TOKEN, tokenization.CLS_TOKEN,
                           tokenization.SEP_TOKEN) if t not in vocab]
    if missing:
      raise errors.UserError(f"vocab file {vocab_file}: lacks {', '.join(missing)}; a "
                             "BERT vocabulary needs [UNK], [CLS] and [SEP]")
    self.vocab_size = len(tokens)
    self.unk_id = vocab[tokenization.UNK_TOKEN]
    self.cls_id = vocab[tokenization.CLS_TOKEN]
    self.sep_id = vocab[tokenization.SEP_TOKEN]
    self.pad_id = vocab.get(tokenization.PAD_TOKEN, 0)
    self.mask_id = vocab.get(tokenization.MASK_TOKEN, -1)
    (self._dropped, self._marks, self._dropped_and_marks, self._separator,
     self._maybe_long_word) = _graph_patterns()
    # One character no token holds: it stands for long words and unassigned ones.
    self._placeholder = _placeholder_for_long_words(tokens)
    self._unassigned = _unassigned_pattern(tokens)
    # tensorflow-text's FastWordpieceTokenizer splits on whitespace and punctuation and
    # runs WordPiece (FastBertTokenizer is it behind a FastBertNormalizer, which would
    # only turn the control and format characters into spaces that _normalize has
    # already dropped: all but tab, newline and return, which it splits on as spaces).
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=tokens, token_out_type=tf.int32, unknown_token=tokenization.UNK_TOKEN,
        # Room for 200 characters of 4 bytes; longer words are replaced beforehand.
        max_bytes_per_word=4 * tokenization.MAX_INPUT_CHARS_PER_WORD + 4)
    self._vocab_tensor = tf.constant(tokens, tf.string)

  def _normalize(self, strings):
    strings = tf.strings.regex_replace(strings, self._unassigned, self._placeholder)
    if self.normalize:
      strings = tf_text.normalize_utf8(strings, self.normalize.upper())
    # Drop before lower-casing: a dropped character between letters changes the
    # final-sigma rule of lower-casing.
    if self.do_lower_case:
      text = tf.strings.regex_replace(strings, self._dropped_and_marks, "")
      text = tf.strings.lower(text, encoding="utf-8")
      text = tf_text.normalize_utf8(text, "NFD")
      text = tf.strings.regex_replace(text, self._marks, "")
    else:
      text = tf.strings.regex_replace(strings, self._dropped, "")
    return self._mark_long_words(text)

  def _mark_long_words(self, text):
    # Only the rows that may hold a word over the limit are split into words and
    # separators (both kept, so joining them back gives the row again), and those
    # words are replaced by the placeholder.
    rows = tf.where(tf.strings.regex_full_match(text, self._maybe_long_word))
    pieces = tf_text.regex_split(tf.gather_nd(text, rows), self._separator,
                                 self._separator)
    too_long = tf.strings.length(pieces.flat_values,
                                 unit="UTF8_CHAR") > tokenization.MAX_INPUT_CHARS_PER_WORD
    pieces = pieces.with_flat_values(
        tf.where(too_long, self._placeholder, pieces.flat_values))
    fixed = tf.strings.reduce_join(pieces, axis=1)
    return tf.tensor_scatter_nd_update(text, rows, fixed)

  def _normalize_short_ascii(self, strings):
    """The normalisation of rows that match _SHORT_ASCII_ROW: at most ASCII lower-casing.

    Such a row holds no control or format character to drop (tab, newline and return
    are spaces to the original and to FastWordpieceTokenizer alike), no accent, nothing
    unassigned, and no word over the limit.
    """
    return tf.strings.lower(strings) if self.do_lower_case else strings  # ASCII only

  def _ids(self, strings):
    """strings [batch] -> ragged int32 ids [batch, (pieces)].

    Rows of short-word printable ASCII are only lower-cased; the others get the whole
    normalisation (gathered, normalised, and put back in their places).
    """
    short_ascii = tf.strings.regex_full_match(strings, _SHORT_ASCII_ROW)

    def mixed():
      others = tf.where(tf.logical_not(short_ascii))
      return tf.tensor_scatter_nd_update(self._normalize_short_ascii(strings), others,
                                         self._normalize(tf.gather_nd(strings, others)))

    text = tf.cond(tf.reduce_all(short_ascii),
                   lambda: self._normalize_short_ascii(strings), mixed)
    return self._wordpiece.tokenize(text)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize(self, strings):
    """strings: tf.string [batch] -> tf.RaggedTensor int32 [batch, (pieces)] of ids."""
    return self._ids(strings)

  def tokenize_untraced(self, strings):
    """tokenize() run op by op, not traced into a graph.

    Tracing costs about a second once; a command that tokenizes a few large batches
    and exits (create_pretraining_data.py) starts faster without it, and a batch of
    thousands of sentences runs as fast either way.
    """
    return self._ids(tf.convert_to_tensor(strings, tf.string))

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize_to_pieces(self, strings):
    """strings: tf.string [batch] -> tf.RaggedTensor tf.string [batch, (pieces)]."""
    return tf.ragged.map_flat_values(tf.gather, self._vocab_tensor, self._ids(strings))

  def tokenize_batch(self, texts, batch_size=4096):
    """list of str -> list of lists of int ids, like FullTokenizer + convert_tokens_to_ids."""
    result = []
    for start in range(0, len(texts), batch_size):
      ids = self.tokenize(tf.constant(texts[start:start + batch_size], tf.string))
      flat = ids.flat_values.numpy().tolist()
      splits = ids.row_splits.numpy().tolist()
      result.extend(flat[splits[i]:splits[i + 1]] for i in range(len(splits) - 1))
    return result
