"""WordPiece tokenization, token-for-token the original BERT release, plus an in-graph twin.

Ground floor: imports nothing of ours. The pure-Python classes (`FullTokenizer`,
`BasicTokenizer`, `WordpieceTokenizer`) follow the original algorithm exactly, quirks
included (no never-split list, so the text "[MASK]" becomes `[`, `mask`, `]`).

`FastTokenizer` runs the same tokenization inside a TensorFlow graph (tf.data, SavedModel)
on tensorflow-text's `FastBertTokenizer`. TensorFlow is imported only when it is first
used, so users of the Python tokenizer do not pay for it.
"""

import collections
import functools
import os
import re
import sys
import unicodedata

# The original's special tokens; their ids come from the vocabulary file.
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"

# The Unicode categories the original drops as control characters (tab, newline and
# carriage return excepted: they are whitespace).
_CONTROL_CATEGORIES = ("Cc", "Cf")

# A word longer than this many characters becomes a single [UNK] (the original's value).
MAX_INPUT_CHARS_PER_WORD = 200

# Google's checkpoint directory names say how the model was pretrained: uncased_L-12_H-768_A-12,
# wwm_cased_L-24_H-1024_A-16, multi_cased_L-12_H-768_A-12, chinese_L-12_H-768_A-12, the
# small BERTs' uncased_L-4_H-256_A-4, ... (multilingual_ and chinese_ are lower-cased).
_GOOGLE_MODEL_NAME = re.compile(
    r"(?:wwm_)?(uncased|cased|multi_cased|multilingual|chinese)_L-\d+_H-\d+_A-\d+")
_LOWER_CASED_KINDS = ("uncased", "multilingual", "chinese")

# vocab_case_warning's thresholds, on the share of whole-word vocabulary entries that
# begin with a cased letter and are capitalised: Google's uncased vocabulary has 0.0%
# (0 of 21,887), its cased one 37.8% (7,954 of 21,054).
_CASED_VOCAB_SHARE = 0.05  # above: a cased vocabulary
_UNCASED_VOCAB_SHARE = 0.01  # below: an uncased one
_MIN_CASED_ENTRIES = 20  # fewer entries that begin with a cased letter: cannot tell


def _google_model_name(init_checkpoint):
  """The innermost path component named like a Google release, or None."""
  for part in reversed(re.split(r"[/\\]", str(init_checkpoint))):
    if _GOOGLE_MODEL_NAME.match(part):
      return part
  return None


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
  """Fails when --do_lower_case contradicts the case of a Google model named in the path.

  Any path component named like Google's releases counts (`uncased_*`, `cased_*`,
  `multi_cased_*`, `multilingual_*`, `chinese_*`, optionally `wwm_`-prefixed, followed
  by `L-<layers>_H-<hidden>_A-<heads>`), the innermost one deciding; the original knew
  only seven exact names. Any other checkpoint passes: nothing tells how it was trained
  (vocab_case_warning looks at its vocabulary instead).
  """
  if not init_checkpoint:
    return
  model_name = _google_model_name(init_checkpoint)
  if model_name is None:
    return
  lower_cased = _GOOGLE_MODEL_NAME.match(model_name).group(1) in _LOWER_CASED_KINDS
  if lower_cased and not do_lower_case:
    actual, kind, wanted = "False", "lowercased", "True"
  elif not lower_cased and do_lower_case:
    actual, kind, wanted = "True", "cased", "False"
  else:
    return
  raise ValueError(
      f"You passed in `--do_lower_case={actual}` with `--init_checkpoint={init_checkpoint}`. "
      f"However, `{model_name}` seems to be a {kind} model, so you should pass in "
      f"`--do_lower_case={wanted}` so that the fine-tuning matches how the model was "
      "pre-training. If this error is wrong, please just comment out this check.")


def vocab_case_warning(vocab, do_lower_case):
  """A one-sentence warning when the vocabulary's case contradicts do_lower_case, else None.

  vocab: a vocab.txt path, or the tokens (a list, or a dict such as load_vocab's).
  Looks at whole-word entries (no `##`, no `[...]`) made of letters that begin with a
  cased letter (Latin, Greek, Cyrillic, ...). Under do_lower_case=True, more than 5% of
  them capitalised means a cased vocabulary, whose capitalised entries the lower-cased
  text can never match. Under do_lower_case=False, fewer than 1% capitalised in a
  vocabulary mostly of such words means an uncased one, in which every capitalised word
  is split or [UNK]. Vocabularies with fewer than 20 such entries (Chinese, Korean, tiny
  test vocabularies) are not judged.
  """
  if isinstance(vocab, (str, bytes, os.PathLike)):
    vocab = load_vocab(vocab)
  words = [t for t in vocab if t.isalpha() and not t.startswith("##")]
  cased = [t for t in words if t[0].lower() != t[0].upper()]
  if len(cased) < _MIN_CASED_ENTRIES:
    return None
  capitalised = sum(1 for t in cased if t[0].isupper())
  share = capitalised / len(cased)
  if do_lower_case and share > _CASED_VOCAB_SHARE:
    return (f"the vocabulary looks cased: {capitalised:,} of its {len(cased):,} whole-word "
            f"entries that begin with a cased letter ({share:.1%}) are capitalised, which "
            "text lower-cased by do_lower_case=True never matches; use do_lower_case=False "
            "with this vocabulary, or an uncased vocabulary")
  if not do_lower_case and share < _UNCASED_VOCAB_SHARE and 2 * len(cased) > len(words):
    return (f"the vocabulary looks uncased: only {capitalised:,} of its {len(cased):,} "
            f"whole-word entries that begin with a cased letter ({share:.1%}) are "
            "capitalised, so with do_lower_case=False capitalised words become other "
            "pieces or [UNK]; use do_lower_case=True with this vocabulary, or a cased one")
  return None


# Unicode normalisations a tokenizer may apply before the original's steps (not in the
# original, which applies none): for text and vocabularies in different forms.
NORMALIZATIONS = ("nfc",)


def check_normalize(normalize):
  """None or one of NORMALIZATIONS (any case) -> None or its lower-case name."""
  if normalize is None or str(normalize).lower() in NORMALIZATIONS:
    return None if normalize is None else str(normalize).lower()
  raise ValueError(f"normalize={normalize!r}: expected None (none, as the original) or "
                   f"one of {', '.join(NORMALIZATIONS)}")


def convert_to_unicode(text):
  """str -> str; UTF-8 bytes -> str (undecodable bytes dropped, as the original does)."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise ValueError("Unsupported string type: %s" % (type(text)))


def printable_text(text):
  """Text fit for print() and logging: str unchanged, bytes decoded."""
  return convert_to_unicode(text)


def _read_bytes(path):
  if "://" in str(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if not tf.io.gfile.exists(path):
      raise ValueError(f"vocab file {path}: no such file")
    with tf.io.gfile.GFile(path, "rb") as handle:
      return handle.read()
  if not os.path.exists(path):
    raise ValueError(f"vocab file {path}: no such file (pass --vocab_file=<the vocab.txt "
                     "of your model>)")
  if os.path.isdir(path):
    raise ValueError(f"vocab file {path}: is a directory, expected the vocab.txt file")
  with open(path, "rb") as handle:
    return handle.read()


def load_vocab(vocab_file):
  """Reads a vocabulary file into an OrderedDict token -> id (id = line number, from 0).

  Each line is stripped of surrounding whitespace, as the original does. Unlike the
  original, which silently drops undecodable bytes and lets a later duplicate overwrite
  an earlier id, both fail here with a ValueError naming the file and line(s).
  """
  data = _read_bytes(vocab_file)
  vocab = collections.OrderedDict()
  first_line = {}
  lines = data.split(b"\n")
  if lines and lines[-1] == b"":
    lines.pop()  # the newline that ends the last line does not start another
  for index, raw in enumerate(lines):
    try:
      token = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
      raise ValueError(f"vocab file {vocab_file}:{index + 1}: not valid UTF-8 (byte "
                       f"{exc.start}); convert the file to UTF-8") from None
    if token in vocab:
      raise ValueError(f"vocab file {vocab_file}:{index + 1}: token {token!r} duplicates "
                       f"line {first_line[token]}; every token must appear once")
    vocab[token] = index
    first_line[token] = index + 1
  if not vocab:
    raise ValueError(f"vocab file {vocab_file}: the file is empty")
  return vocab


def convert_by_vocab(vocab, items):
  """Maps every item through `vocab` (a KeyError for an unknown item, as the original)."""
  return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens):
  return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
  return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
  """Strips and splits on whitespace (Python's str.split, as the original)."""
  text = text.strip()
  if not text:
    return []
  return text.split()


def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Truncates a pair in place so that their total length is at most max_length.

  One token at a time from the end of the currently longer list (tokens_b on a tie):
  a short text keeps all of its tokens while a long one loses its tail.
  """
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def pack_tokens(tokens_a, tokens_b, max_seq_length):
  """The original's packing of WordPieces: (tokens, segment_ids), unpadded.

  `[CLS] a [SEP]` (segment 0) and, when tokens_b holds tokens, `b [SEP]` (segment 1); a
  pair is truncated with truncate_seq_pair to max_seq_length - 3 tokens, a single text
  keeps its first max_seq_length - 2. An empty or None tokens_b counts as no second text
  (the original's `if tokens_b:`). The input lists are not changed.
  """
  tokens_a, tokens_b = list(tokens_a), list(tokens_b or [])
  if tokens_b:
    truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
  else:
    tokens_a = tokens_a[:max_seq_length - 2]
  tokens = [CLS_TOKEN] + tokens_a + [SEP_TOKEN]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + [SEP_TOKEN]
    segment_ids += [1] * (len(tokens_b) + 1)
  return tokens, segment_ids


class FullTokenizer:
  """End-to-end tokenization: BasicTokenizer, then WordpieceTokenizer on each word.

  normalize=None is the original; "nfc" composes the text (NFC) before anything else,
  for text in decomposed form (e.g. Hangul copied from macOS) and a vocabulary learned
  from composed text.
  """

  def __init__(self, vocab_file, do_lower_case=True, normalize=None):
    self.vocab = load_vocab(vocab_file)
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case,
                                          normalize=normalize)
    self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

  def tokenize(self, text):
    split_tokens = []
    for token in self.basic_tokenizer.tokenize(text):
      split_tokens.extend(self.wordpiece_tokenizer.tokenize(token))
    return split_tokens

  def convert_tokens_to_ids(self, tokens):
    return convert_by_vocab(self.vocab, tokens)

  def convert_ids_to_tokens(self, ids):
    return convert_by_vocab(self.inv_vocab, ids)


class BasicTokenizer:
  """Cleans text, spaces out CJK ideographs, splits on whitespace and punctuation.

  With do_lower_case, each word is lower-cased, NFD-decomposed and stripped of its
  non-spacing marks (accents); without it, the text keeps its case and accents.
  normalize="nfc" (not in the original; default None) applies NFC to the text first.
  """

  def __init__(self, do_lower_case=True, normalize=None):
    self.do_lower_case = do_lower_case
    self.normalize = check_normalize(normalize)

  def tokenize(self, text):
    text = convert_to_unicode(text)
    if self.normalize:
      text = unicodedata.normalize(self.normalize.upper(), text)
    text = self._clean_text(text)
    # Multilingual and Chinese models were trained with this; it does no harm to
    # English models, whose vocabularies hold few ideographs.
    text = self._tokenize_chinese_chars(text)
    split_tokens = []
    for token in whitespace_tokenize(text):
      if self.do_lower_case:
        token = token.lower()
        token = self._run_strip_accents(token)
      split_tokens.extend(self._run_split_on_punc(token))
    return whitespace_tokenize(" ".join(split_tokens))

  def _run_strip_accents(self, text):
    text = unicodedata.normalize("NFD", text)
    return "".join(char for char in text if unicodedata.category(char) != "Mn")

  def _run_split_on_punc(self, text):
    output = []
    start_new_word = True
    for char in text:
      if _is_punctuation(char):
        output.append([char])
        start_new_word = True
      else:
        if start_new_word:
          output.append([])
        start_new_word = False
        output[-1].append(char)
    return ["".join(x) for x in output]

  def _tokenize_chinese_chars(self, text):
    if text.isascii():  # no ideographs: skip the per-character scan (most English text)
      return text
    output = []
    for char in text:
      if _is_chinese_char(ord(char)):
        output.append(" ")
        output.append(char)
        output.append(" ")
      else:
        output.append(char)
    return "".join(output)

  def _is_chinese_char(self, cp):
    return _is_chinese_char(cp)

  def _clean_text(self, text):
    output = []
    for char in text:
      cp = ord(char)
      if cp == 0 or cp == 0xFFFD or _is_control(char):
        continue
      output.append(" " if _is_whitespace(char) else char)
    return "".join(output)


class WordpieceTokenizer:
  """Greedy longest-match-first WordPiece over words already split by BasicTokenizer."""

  def __init__(self, vocab, unk_token=UNK_TOKEN,
               max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text):
    """"unaffable" -> ["un", "##aff", "##able"]; a word with any unmatched rest -> [UNK]."""
    text = convert_to_unicode(text)
    output_tokens = []
    for token in whitespace_tokenize(text):
      chars = list(token)
      if len(chars) > self.max_input_chars_per_word:
        output_tokens.append(self.unk_token)
        continue
      is_bad = False
      start = 0
      sub_tokens = []
      while start < len(chars):
        end = len(chars)
        cur_substr = None
        while start < end:
          substr = "".join(chars[start:end])
          if start > 0:
            substr = "##" + substr
          if substr in self.vocab:
            cur_substr = substr
            break
          end -= 1
        if cur_substr is None:
          is_bad = True
          break
        sub_tokens.append(cur_substr)
        start = end
      if is_bad:
        output_tokens.append(self.unk_token)
      else:
        output_tokens.extend(sub_tokens)
    return output_tokens


# The character classes below are called once per character of every text; they depend
# on the character alone, so they are memoised (a dict lookup instead of a unicodedata
# call and range scans), which makes the pure-Python path several times faster.
@functools.lru_cache(maxsize=1 << 16)
def _is_whitespace(char):
  # \t, \n and \r are control characters to Unicode, but they separate words.
  if char in (" ", "\t", "\n", "\r"):
    return True
  return unicodedata.category(char) == "Zs"


@functools.lru_cache(maxsize=1 << 16)
def _is_control(char):
  if char in ("\t", "\n", "\r"):
    return False
  # Control (Cc) and format (Cf) only, as the original's final version: private-use
  # (Co) and unassigned (Cn) characters stay, and become [UNK] unless in the vocabulary.
  return unicodedata.category(char) in _CONTROL_CATEGORIES


@functools.lru_cache(maxsize=1 << 16)
def _is_punctuation(char):
  cp = ord(char)
  # ASCII symbols such as "$", "^" and "`" are not Unicode punctuation, but the
  # original splits them off like punctuation.
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


# The CJK Unified Ideographs blocks the original spaces out. Hangul, Hiragana and
# Katakana are not among them: those scripts keep their words whole.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


@functools.lru_cache(maxsize=1 << 16)
def _is_chinese_char(cp):
  return any(low <= cp <= high for low, high in _CJK_RANGES)


# --------------------------------------------------------------------------- in-graph


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
  dropped = _re2_class(_ranges(lambda cat: cat in _CONTROL_CATEGORIES,
                               add=(0x0, 0xFFFD), remove=tab_newline_return))
  marks = _re2_class(_ranges(lambda cat: cat == "Mn"))
  # Marks go before lower-casing too: every Mn is case-ignorable to Python (skipped by
  # the final-sigma rule either way), but ICU may not know recent ones, and would
  # then lower-case the sigma before them as a final one.
  dropped_and_marks = _re2_class(_ranges(
      lambda cat: cat in _CONTROL_CATEGORIES or cat == "Mn", add=(0x0, 0xFFFD),
      remove=tab_newline_return))
  # Characters that end a word: whitespace (Zs, and whatever str.split() splits on),
  # punctuation (P*, and the ASCII symbol ranges) and CJK ideographs. A run of anything
  # else is one word to WordpieceTokenizer.
  split_whitespace = tuple(cp for cp in range(0x3001) if chr(cp).isspace())  # all of them
  separators = _ranges(
      lambda cat: cat == "Zs" or cat.startswith("P"),
      add=split_whitespace + ((33, 47), (58, 64), (91, 96), (123, 126)) + _CJK_RANGES)
  separator = _re2_class(separators)
  # A cheap test for "may hold a word over the limit": runs of characters other than
  # the common separators (ASCII, general punctuation, CJK symbols and ideographs,
  # full-width forms). Rarer separators count as word characters here, so it flags a
  # superset of the rows that really hold a long word; few ranges keep RE2's DFA small.
  common_blocks = [(0x00, 0x7F), (0x2000, 0x206F), (0x3000, 0x303F), (0xFF00, 0xFF65)]
  common = [(max(lo, blo), min(hi, bhi)) for lo, hi in separators
            for blo, bhi in common_blocks + list(_CJK_RANGES) if lo <= bhi and blo <= hi]
  maybe_long_word = "(?s).*%s{%d}.*" % (_re2_class(sorted(common), negate=True),
                                        MAX_INPUT_CHARS_PER_WORD + 1)
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
  return _re2_class(_ranges(lambda cat: cat == "Cn", remove=_CJK_RANGES + tuple(in_vocab)))


def _noncharacters():
  """The 66 code points Unicode reserves as permanently unassigned (category Cn)."""
  plane_ends = [plane * 0x10000 + low for plane in range(17) for low in (0xFFFE, 0xFFFF)]
  return list(range(0xFDD0, 0xFDF0)) + plane_ends


def _placeholder_for_long_words(vocab_tokens):
  """A character in no vocabulary token, so that a word made of it is one [UNK].

  A word longer than MAX_INPUT_CHARS_PER_WORD characters is replaced by this character
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
  raise ValueError("vocabulary uses every Unicode noncharacter; cannot mark long words")


def _flat_segment(segment):
  """A segment as int32 values with int64 row splits, [batch, (words), (pieces)] merged."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if segment.ragged_rank > 1:
    segment = segment.merge_dims(1, -1)
  return tf.cast(segment, tf.int32).with_row_splits_dtype(tf.int64)


def _checked_seq_length(seq_length, num_segments):
  """seq_length (int or scalar int tensor) -> (int64 scalar tensor, int or None if dynamic).

  Too short to hold [CLS], a token and a [SEP] per segment: a ValueError when the value
  is known now, an InvalidArgumentError when the graph runs otherwise.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  least = 2 * num_segments + 1
  static = tf.get_static_value(seq_length) if tf.is_tensor(seq_length) else seq_length
  if static is not None:
    if not float(static).is_integer() or static < least:
      raise ValueError(f"seq_length={static} leaves no room for the tokens (needs >= {least})")
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
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if len(segments) not in (1, 2):
    raise ValueError(f"pack_inputs takes one or two segments, got {len(segments)}")
  segments = [_flat_segment(s) for s in segments]
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


@functools.lru_cache(maxsize=1)
def _fast_tokenizer_class():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top

  class FastTokenizer(tf.Module):
    """FullTokenizer in the graph: the same tokens and ids, usable in tf.data and SavedModels.

    tensorflow-text's FastBertTokenizer does the splitting and WordPiece; the text is
    normalised first the way the original's BasicTokenizer does it (its own lower-casing
    would apply NFKC folding, and it keeps format characters the original drops).
    """

    def __init__(self, vocab_file, do_lower_case=True, name=None, normalize=None):
      super().__init__(name=name)
      self.vocab_file = vocab_file
      self.do_lower_case = bool(do_lower_case)
      self.normalize = check_normalize(normalize)
      vocab = load_vocab(vocab_file)
      tokens = list(vocab)
      missing = [t for t in (UNK_TOKEN, CLS_TOKEN, SEP_TOKEN) if t not in vocab]
      if missing:
        raise ValueError(f"vocab file {vocab_file}: lacks {', '.join(missing)}; a BERT "
                         "vocabulary needs [UNK], [CLS] and [SEP]")
      self.vocab_size = len(tokens)
      self.unk_id = vocab[UNK_TOKEN]
      self.cls_id = vocab[CLS_TOKEN]
      self.sep_id = vocab[SEP_TOKEN]
      self.pad_id = vocab.get(PAD_TOKEN, 0)
      self.mask_id = vocab.get(MASK_TOKEN, -1)
      (self._dropped, self._marks, self._dropped_and_marks, self._separator,
       self._maybe_long_word) = _graph_patterns()
      # One character no token holds: it stands for long words and unassigned ones.
      self._placeholder = _placeholder_for_long_words(tokens)
      self._unassigned = _unassigned_pattern(tokens)
      self._tokenizer = tf_text.FastBertTokenizer(
          vocab=tokens, token_out_type=tf.int32, unknown_token=UNK_TOKEN,
          # Room for 200 characters of 4 bytes; longer words are replaced beforehand.
          max_bytes_per_word=4 * MAX_INPUT_CHARS_PER_WORD + 4,
          lower_case_nfd_strip_accents=False)
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
                                   unit="UTF8_CHAR") > MAX_INPUT_CHARS_PER_WORD
      pieces = pieces.with_flat_values(
          tf.where(too_long, self._placeholder, pieces.flat_values))
      fixed = tf.strings.reduce_join(pieces, axis=1)
      return tf.tensor_scatter_nd_update(text, rows, fixed)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, strings):
      """strings: tf.string [batch] -> tf.RaggedTensor int32 [batch, (pieces)] of ids."""
      return self.tokenize_untraced(strings)

    def tokenize_untraced(self, strings):
      """tokenize() run op by op, not traced into a graph.

      Tracing costs about a second once; a command that tokenizes a few large batches
      and exits (create_pretraining_data.py) starts faster without it, and a batch of
      thousands of sentences runs as fast either way.
      """
      return self._tokenizer.tokenize(self._normalize(strings))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize_to_pieces(self, strings):
      """strings: tf.string [batch] -> tf.RaggedTensor tf.string [batch, (pieces)]."""
      ids = self._tokenizer.tokenize(self._normalize(strings))
      return tf.ragged.map_flat_values(tf.gather, self._vocab_tensor, ids)

    def tokenize_batch(self, texts, batch_size=4096):
      """list of str -> list of lists of int ids, like FullTokenizer + convert_tokens_to_ids."""
      result = []
      for start in range(0, len(texts), batch_size):
        ids = self.tokenize(tf.constant(texts[start:start + batch_size], tf.string))
        flat = ids.flat_values.numpy().tolist()
        splits = ids.row_splits.numpy().tolist()
        result.extend(flat[splits[i]:splits[i + 1]] for i in range(len(splits) - 1))
      return result

  return FastTokenizer


def __getattr__(name):
  # FastTokenizer subclasses tf.Module; building the class on first use keeps
  # `import tokenization` free of TensorFlow for the pure-Python tokenizer.
  if name == "FastTokenizer":
    return _fast_tokenizer_class()
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
