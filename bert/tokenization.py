"""WordPiece tokenization, token-for-token the original BERT release, in pure Python.

The original algorithm exactly, quirks included (no never-split list: "[MASK]" in text
becomes `[`, `mask`, `]`). Free of TensorFlow; its in-graph twin is
fast_tokenization.FastTokenizer (the same tokens and ids)."""

import collections
import functools
import os
import re
import unicodedata

from bert.utils import errors
from bert.utils import file_io

# The original's special tokens; their ids come from the vocabulary file.
PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"

# The original's default case: uncased models (--do_lower_case's default).
DO_LOWER_CASE = True

# The Unicode categories the original drops as control characters (tab, newline and
# carriage return excepted: they are whitespace).
CONTROL_CATEGORIES = ("Cc", "Cf")

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
  raise errors.UserError(
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
  raise errors.UserError(f"normalize={normalize!r}: expected None (none, as the original) or "
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


def load_vocab(vocab_file):
  """Reads a vocabulary file into an OrderedDict token -> id (id = line number, from 0).

  Each line is stripped of surrounding whitespace, as the original does. Unlike the
  original, which silently drops undecodable bytes and lets a later duplicate overwrite
  an earlier id, both fail here with a ValueError naming the file and line(s).
  """
  data = file_io.read_bytes(vocab_file, "vocab file ",
                           " (pass --vocab_file=<the vocab.txt of your model>)",
                           "the vocab.txt file")
  vocab = collections.OrderedDict()
  first_line = {}
  lines = data.split(b"\n")
  if lines and lines[-1] == b"":
    lines.pop()  # the newline that ends the last line does not start another
  for index, raw in enumerate(lines):
    try:
      # Only the file's start may hold a byte-order mark; anywhere else it is text.
      token = (file_io.decode_text(raw) if index == 0 else raw.decode("utf-8")).strip()
    except UnicodeDecodeError as exc:
      raise errors.UserError(errors.not_utf8_message(f"vocab file {vocab_file}", exc,
                                                     line=index + 1)) from None
    if token in vocab:
      raise errors.UserError(
          f"vocab file {vocab_file}:{index + 1}: token {token!r} duplicates "
          f"line {first_line[token]}; every token must appear once")
    vocab[token] = index
    first_line[token] = index + 1
  if not vocab:
    raise errors.UserError(f"vocab file {vocab_file}: the file is empty")
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

  def __init__(self, vocab_file, do_lower_case=DO_LOWER_CASE, normalize=None):
    self.vocab_file = vocab_file
    self.vocab = load_vocab(vocab_file)
    if UNK_TOKEN not in self.vocab:
      # The original loads such a file and fails later, on the first word outside it,
      # with a bare KeyError: '[UNK]'.
      raise errors.UserError(f"vocab file {vocab_file}: has no {UNK_TOKEN}, which the "
                             "tokenizer emits for every word outside the vocabulary")
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
    try:
      return convert_by_vocab(self.vocab, tokens)
    except KeyError as exc:  # the original's exception type, with what is missing named
      raise KeyError(f"token {exc.args[0]!r} is not in the vocabulary {self.vocab_file} "
                     f"({len(self.vocab)} tokens)") from None

  def convert_ids_to_tokens(self, ids):
    try:
      return convert_by_vocab(self.inv_vocab, ids)
    except KeyError as exc:
      raise KeyError(f"id {exc.args[0]!r} is not in the vocabulary {self.vocab_file} "
                     f"(ids 0 to {len(self.vocab) - 1})") from None


class BasicTokenizer:
  """Cleans text, spaces out CJK ideographs, splits on whitespace and punctuation.

  With do_lower_case, each word is lower-cased, NFD-decomposed and stripped of its
  non-spacing marks (accents); without it, the text keeps its case and accents.
  normalize="nfc" (not in the original; default None) applies NFC to the text first.
  """

  def __init__(self, do_lower_case=DO_LOWER_CASE, normalize=None):
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
      if is_punctuation(char):
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
      if is_chinese_char(ord(char)):
        output.append(" ")
        output.append(char)
        output.append(" ")
      else:
        output.append(char)
    return "".join(output)

  def _is_chinese_char(self, cp):
    return is_chinese_char(cp)

  def _clean_text(self, text):
    output = []
    for char in text:
      cp = ord(char)
      if cp == 0 or cp == 0xFFFD or is_control(char):
        continue
      output.append(" " if is_whitespace(char) else char)
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
def is_whitespace(char):
  """Whether the original splits words at `char` (a space, tab, newline or Zs)."""
  # \t, \n and \r are control characters to Unicode, but they separate words.
  if char in (" ", "\t", "\n", "\r"):
    return True
  return unicodedata.category(char) == "Zs"


@functools.lru_cache(maxsize=1 << 16)
def is_control(char):
  """Whether the original drops `char` as a control character (Cc, Cf; not tab, newline
  or carriage return)."""
  if char in ("\t", "\n", "\r"):
    return False
  # Control (Cc) and format (Cf) only, as the original's final version: private-use
  # (Co) and unassigned (Cn) characters stay, and become [UNK] unless in the vocabulary.
  return unicodedata.category(char) in CONTROL_CATEGORIES


@functools.lru_cache(maxsize=1 << 16)
def is_punctuation(char):
  """Whether the original splits `char` off as punctuation (Unicode P*, and ASCII
  symbols)."""
  cp = ord(char)
  # ASCII symbols such as "$", "^" and "`" are not Unicode punctuation, but the
  # original splits them off like punctuation.
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


# The CJK Unified Ideographs blocks the original spaces out. Hangul, Hiragana and
# Katakana are not among them: those scripts keep their words whole.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


@functools.lru_cache(maxsize=1 << 16)
def is_chinese_char(cp):
  """Whether the code point `cp` is a CJK ideograph the original spaces out (CJK_RANGES)."""
  return any(low <= cp <= high for low, high in CJK_RANGES)


# The original's private names of the character classes (its tokenization.py API).
_is_whitespace = is_whitespace
_is_control = is_control
_is_punctuation = is_punctuation
_is_chinese_char = is_chinese_char
