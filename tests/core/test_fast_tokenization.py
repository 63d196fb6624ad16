"""FastTokenizer's short path for ASCII rows, against the original's rule.

A row of printable ASCII, tab, newline and carriage return only, with no run of more
than 200 letters and digits (the only word characters ASCII has), is just lower-cased
(when do_lower_case) before WordPiece; any other row gets the whole normalisation.
These tests pin which rows take which path and that both give the original's tokens:
exact lists (ASCII control characters, which the original drops, and words at and over
the limit), every ASCII character and every pair of them as rows of their own, batches
of short rows only, of other rows only, and mixed, both case settings, both real
vocabularies and a small one. The reference is tests/support/reference_tokenization.py's
plain rewrite of the original.
"""
import re

import pytest
import tensorflow as tf

from bert import fast_tokenization
from bert import tokenization
from conftest import shared_path
from reference_tokenization import SMALL_VOCAB, reference_basic, reference_wordpiece

ASCII = [chr(cp) for cp in range(128)]
PRINTABLE = {"\t", "\n", "\r"} | {chr(cp) for cp in range(0x20, 0x7F)}


def _short_by_definition(text):
  """A row for the short path: printable ASCII only, no run of over 200 [A-Za-z0-9]."""
  runs = re.findall("[A-Za-z0-9]+", text)
  return all(c in PRINTABLE for c in text) and all(len(r) <= 200 for r in runs)


@pytest.fixture(scope="module")
def vocab_files(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "small_vocab.txt"
  path.write_text("".join(t + "\n" for t in SMALL_VOCAB), encoding="utf-8")
  return {"small": str(path), "uncased": shared_path("vocab", "uncased_vocab.txt"),
          "cased": shared_path("vocab", "cased_vocab.txt")}


@pytest.fixture(scope="module")
def tokenizers(vocab_files):
  """(vocab name, do_lower_case) -> (vocab dict, FastTokenizer), every combination."""
  return {(name, lower): (tokenization.load_vocab(path),
                          fast_tokenization.FastTokenizer(path, do_lower_case=lower))
          for name, path in vocab_files.items() for lower in (True, False)}


def _reference(texts, vocab, lower):
  return [reference_wordpiece(reference_basic(t, lower), vocab) for t in texts]


def _pieces(fast, texts):
  return [[p.decode("utf-8") for p in row]
          for row in fast.tokenize_to_pieces(tf.constant(texts, tf.string)).to_list()]


# ----------------------------------------------------------------- which rows are short


def test_row_test_matches_its_definition():
  texts = ASCII + [chr(cp) for cp in range(128, 256)] + ["\u00e9", "\U0001f917", "", " "]
  texts += [a + b for a in ASCII for b in ASCII]
  for n in (199, 200, 201, 300):
    for word in ("a" * n, "Z9" * (n // 2) + "q" * (n % 2), "7" * n):
      texts += [word, "x " + word + "!", "(" + word + ")", word + "\x01", word + "_" + word,
                "\u00e9 " + word]
  pattern = fast_tokenization._SHORT_ASCII_ROW  # pylint: disable=protected-access
  got = tf.strings.regex_full_match(tf.constant(texts), pattern)
  expected = [_short_by_definition(t) for t in texts]
  assert got.numpy().tolist() == expected
  assert [re.fullmatch(pattern, t) is not None for t in texts] == expected
  # Control characters (tab, newline, return apart), DEL and non-ASCII leave the path.
  assert [c for c in ASCII if not _short_by_definition(c)] == [
      chr(cp) for cp in list(range(0x00, 0x09)) + [0x0B, 0x0C] + list(range(0x0E, 0x20)) + [0x7F]]


# ----------------------------------------------------------------- exact lists

EXACT = [
    # text, uncased vocabulary lower-cased, cased vocabulary cased
    ("Hel\x00lo,\tWor\x7fld!", ["hello", ",", "world", "!"], ["Hello", ",", "World", "!"]),
    # \x0b, \x0c and \x1c-\x1f are whitespace to str.split() but control characters to the
    # original: dropped, so their neighbours join.
    ("un\x0bwant\x1fed\x0cNews", ["unwanted", "##ne", "##ws"], ["unwanted", "##N", "##ews"]),
    ("x\x1cy\x1dz\x1e\x1f", ["x", "##y", "##z"], ["x", "##y", "##z"]),
    ("A\rb\nC\td", ["a", "b", "c", "d"], ["A", "b", "C", "d"]),
    ("\x1b[31mRed\x1b[0m alert", ["[", "31", "##m", "##red", "[", "0", "##m", "alert"],
     ["[", "31", "##m", "##R", "##ed", "[", "0", "##m", "alert"]),
    ("Bell\x07 and DEL\x7f!", ["bell", "and", "del", "!"], ["Bell", "and", "DE", "##L", "!"]),
    ("\x01\x02\x03", [], []),
    ("Hello, World!", ["hello", ",", "world", "!"], ["Hello", ",", "World", "!"]),
    ("the [MASK] dog", ["the", "[", "mask", "]", "dog"],
     ["the", "[", "MA", "##S", "##K", "]", "dog"]),
    # Over-long words: a run of 201 letters and digits is one [UNK], 200 are pieces.
    ("x " + "a" * 201 + " Y", ["x", "[UNK]", "y"], ["x", "[UNK]", "Y"]),
    ("x" + "9" * 201 + "_y", ["[UNK]", "_", "y"], ["[UNK]", "_", "y"]),
    ("q" * 150 + "7" * 51 + "!", ["[UNK]", "!"], ["[UNK]", "!"]),
    ("q" * 150 + "7" * 50 + "!", ["q"] + ["##q"] * 149 + ["##7"] * 50 + ["!"],
     ["q"] + ["##q"] * 149 + ["##7"] * 50 + ["!"]),
    ("a" * 200, ["aaa"] + ["##aa"] * 98 + ["##a"], ["a"] + ["##aa"] * 99 + ["##a"]),
    ("a" * 201 + "\x00", ["[UNK]"], ["[UNK]"]),
    ("", [], []),
]


def test_exact_tokens_on_real_vocabularies(tokenizers):
  texts = [t for t, _, _ in EXACT]
  for (name, lower), column in ((("uncased", True), 1), (("cased", False), 2)):
    vocab, fast = tokenizers[(name, lower)]
    expected = [case[column] for case in EXACT]
    assert _reference(texts, vocab, lower) == expected
    # In one mixed batch, and each row as a batch of its own (either path alone).
    assert _pieces(fast, texts) == expected
    assert [_pieces(fast, [t])[0] for t in texts] == expected
    assert fast.tokenize_batch(texts) == [[vocab[p] for p in row] for row in expected]


# ----------------------------------------------------------------- every ASCII character


@pytest.mark.parametrize("name", ["small", "uncased", "cased"])
@pytest.mark.parametrize("lower", [True, False])
def test_every_ascii_pair_as_its_own_row(name, lower, tokenizers):
  # "a<c><d>b" for every pair of ASCII characters (16,384 rows) and "A<c>b" for each:
  # shows whether each is dropped, a space, split off or kept, next to any other, and
  # lower-cased or not. The rows of either path alone, and all of them mixed.
  vocab, fast = tokenizers[(name, lower)]
  texts = ["a" + c + d + "b" for c in ASCII for d in ASCII] + ["A" + c + "b" for c in ASCII]
  texts += ["Ab" + c * 3 + "Ba" for c in ASCII]
  expected = _reference(texts, vocab, lower)
  assert _pieces(fast, texts) == expected
  short = [i for i, t in enumerate(texts) if _short_by_definition(t)]
  other = [i for i, t in enumerate(texts) if not _short_by_definition(t)]
  assert len(short) == 98 * 98 + 2 * 98 and len(other) == len(texts) - len(short)
  for rows in (short, other):
    assert _pieces(fast, [texts[i] for i in rows]) == [expected[i] for i in rows]


@pytest.mark.parametrize("lower", [True, False])
def test_mixed_batches_keep_the_rows_order(lower, tokenizers):
  vocab, fast = tokenizers[("uncased" if lower else "cased", lower)]
  rows = ["Hello, World!", "Cr\u00e8me br\u00fbl\u00e9e", "a\x00b c", "", "\u0130stanbul",
          "x " + "a" * 201 + " y", "\u00e9 " + "b" * 201 + " \u00e9", "THE END.", "\u535a\u63a8",
          "  \t ", "caf\u00e9\u200b au lait", "a" * 200 + "\u0301"]
  for shift in range(len(rows)):
    texts = rows[shift:] + rows[:shift]
    expected = _reference(texts, vocab, lower)
    assert _pieces(fast, texts) == expected
    assert fast.tokenize_untraced(tf.constant(texts)).to_list() == [
        [vocab[p] for p in row] for row in expected]
  # Batches of one kind only, and no rows at all.
  for texts in (rows[::2], rows[1::2], [r for r in rows if _short_by_definition(r)],
                [r for r in rows if not _short_by_definition(r)], []):
    assert _pieces(fast, texts) == _reference(texts, vocab, lower)


def test_saved_model_keeps_both_paths(tmp_path, tokenizers):
  vocab, fast = tokenizers[("small", True)]
  path = str(tmp_path / "tok")
  tf.saved_model.save(fast, path)
  loaded = tf.saved_model.load(path)
  texts = ["AB ab", "a\x00b", "a\u00e9b", "a" * 201 + " b", "b" * 200]
  expected = [[vocab[p] for p in row] for row in _reference(texts, vocab, True)]
  assert loaded.tokenize(tf.constant(texts)).to_list() == expected
  assert expected[:4] == [[5, 8, 5, 8], [5, 8], [1], [1, 6]]
