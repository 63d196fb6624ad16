"""The original release's tokenizer algorithm, written plainly: the yardstick for speed.

BasicTokenizer (clean, space out CJK ideographs, split on whitespace, lower-case and strip
accents, split off punctuation) then greedy longest-match-first WordPiece, one character
class lookup per character as the original does it (no memoisation, no ASCII shortcut:
those are this project's FullTokenizer's own speed-ups). Used by
benchmarks/bench_tokenization.py, which checks that its ids equal FullTokenizer's and
FastTokenizer's on every line before timing anything.
"""

import unicodedata

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_whitespace(char):
  return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def _is_control(char):
  return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


def _is_cjk(cp):
  return any(low <= cp <= high for low, high in _CJK_RANGES)


class Tokenizer:
  """text -> WordPiece ids, as the original's FullTokenizer + convert_tokens_to_ids."""

  def __init__(self, vocab, do_lower_case=True, max_chars_per_word=200, unk="[UNK]"):
    self.vocab = vocab  # token -> id
    self.do_lower_case = do_lower_case
    self.max_chars_per_word = max_chars_per_word
    self.unk = unk

  def _basic(self, text):
    cleaned = []
    for char in text:
      cp = ord(char)
      if cp == 0 or cp == 0xFFFD or _is_control(char):
        continue
      cleaned.append(" " if _is_whitespace(char) else char)
    spaced = []
    for char in cleaned:
      spaced.append(f" {char} " if _is_cjk(ord(char)) else char)
    words = []
    for token in "".join(spaced).split():
      if self.do_lower_case:
        token = "".join(c for c in unicodedata.normalize("NFD", token.lower())
                        if unicodedata.category(c) != "Mn")
      current = []
      for char in token:
        if _is_punctuation(char):
          if current:
            words.append("".join(current))
            current = []
          words.append(char)
        else:
          current.append(char)
      if current:
        words.append("".join(current))
    return words

  def _wordpiece(self, word):
    if len(word) > self.max_chars_per_word:
      return [self.unk]
    pieces, start = [], 0
    while start < len(word):
      end = len(word)
      piece = None
      while start < end:
        candidate = word[start:end] if start == 0 else "##" + word[start:end]
        if candidate in self.vocab:
          piece = candidate
          break
        end -= 1
      if piece is None:
        return [self.unk]
      pieces.append(piece)
      start = end
    return pieces

  def ids(self, text):
    return [self.vocab[p] for w in self._basic(text) for p in self._wordpiece(w)]
