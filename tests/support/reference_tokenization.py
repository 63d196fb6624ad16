"""The original BERT release's tokenization rule, written out again plainly as a reference.

Independent of bert/tokenization.py: BasicTokenizer's cleaning, CJK spacing, accent
stripping and punctuation split, and WordPiece's greedy longest match, as the original's
final tokenization.py does them. SMALL_VOCAB is a vocabulary small enough to build in a
test.
"""
import unicodedata

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# A vocabulary small enough to build in a test: "ab" is `a ##b`, "a<c>b" with a kept
# <c> is [UNK] (except the private-use U+E000, which has pieces of its own), and a
# dropped <c> leaves `a ##b`.
SMALL_VOCAB = SPECIALS + ["a", "b", "##a", "##b", "\ue000", "##\ue000", "\u00e9", "##\u00e9"]


def is_cjk(cp):
  return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
          0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
          0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def is_whitespace(char):
  return char in (" ", "\t", "\n", "\r") or unicodedata.category(char) == "Zs"


def is_control(char):
  if char in ("\t", "\n", "\r"):
    return False
  return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


def reference_basic(text, do_lower_case, normalize=None):
  """The original BasicTokenizer.tokenize (normalize: this project's NFC option)."""
  if normalize == "nfc":
    text = unicodedata.normalize("NFC", text)
  cleaned = []
  for char in text:
    if ord(char) in (0, 0xFFFD) or is_control(char):
      continue
    cleaned.append(" " if is_whitespace(char) else char)
  spaced = []
  for char in cleaned:
    spaced.append(" " + char + " " if is_cjk(ord(char)) else char)
  pieces = []
  for word in "".join(spaced).split():
    if do_lower_case:
      word = unicodedata.normalize("NFD", word.lower())
      word = "".join(c for c in word if unicodedata.category(c) != "Mn")
    current = None
    for char in word:
      if is_punctuation(char):
        pieces.append(char)
        current = None
      else:
        if current is None:
          pieces.append("")
          current = len(pieces) - 1
        pieces[current] += char
  return " ".join(pieces).split()


def reference_wordpiece(words, vocab):
  """The original WordpieceTokenizer over already split words."""
  out = []
  for word in words:
    if len(word) > 200:
      out.append("[UNK]")
      continue
    pieces, start = [], 0
    while start < len(word):
      end, found = len(word), None
      while start < end:
        piece = ("##" if start else "") + word[start:end]
        if piece in vocab:
          found = piece
          break
        end -= 1
      if found is None:
        pieces = ["[UNK]"]
        break
      pieces.append(found)
      start = end
    out.extend(pieces)
  return out
