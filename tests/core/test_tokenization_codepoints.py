"""Every Unicode code point through both tokenizers, against the original's rule written plainly.

The original's final tokenization.py drops NUL, U+FFFD and the control (Cc) and format
(Cf) characters but tab, newline and carriage return (whitespace); private-use (Co) and
unassigned (Cn) characters are kept, so a word holding one is [UNK] unless the
vocabulary has it. The reference (tests/support/reference_tokenization.py) is that
algorithm, written out again independently of tokenization.py. Code points are batched many to a line so that the
sweeps over all 1,112,064 of them take seconds: for token lists, 512 a line, each as a
word `a<c>b` (which shows whether <c> is dropped, a space, split off or kept, and keeps
one [UNK] from hiding its neighbours); for BasicTokenizer's word lists, which hide
nothing, 1,024 consecutive code points a line.
"""
import collections
import sys
import unicodedata

import pytest

from bert import fast_tokenization
from bert import tokenization
from conftest import shared_path
import reference_tokenization
from reference_tokenization import SMALL_VOCAB, SPECIALS, reference_basic, reference_wordpiece

CODE_POINTS_PER_LINE = 512


# ----------------------------------------------------------------- fixtures


def _every_code_point():
  return [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]


@pytest.fixture(scope="module")
def lines():
  every = _every_code_point()
  assert len(every) == 1_112_064
  return [" ".join("a" + chr(cp) + "b" for cp in every[i:i + CODE_POINTS_PER_LINE])
          for i in range(0, len(every), CODE_POINTS_PER_LINE)]


@pytest.fixture(scope="module")
def reference_words(lines):
  """do_lower_case -> the reference's words of every line."""
  return {lower: [reference_basic(line, lower) for line in lines] for lower in (True, False)}


@pytest.fixture(scope="module")
def small_vocab_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "small_vocab.txt"
  path.write_text("".join(t + "\n" for t in SMALL_VOCAB), encoding="utf-8")
  return str(path)


def _vocab_file(name, small_vocab_file):
  if name == "small":
    return small_vocab_file
  return shared_path("vocab", f"{name}_vocab.txt")


# ----------------------------------------------------------------- the rule itself


def test_control_characters_are_exactly_cc_and_cf():
  import tensorflow as tf
  every = [chr(cp) for cp in _every_code_point()]
  # pylint: disable=protected-access
  assert [c for c in every if tokenization.is_control(c)] == [
      c for c in every if reference_tokenization.is_control(c)]
  kept = "".join(c for c in every if not (ord(c) in (0, 0xFFFD) or reference_tokenization.is_control(c)))
  # 65 Cc (NUL among them) and 163 Cf characters but tab, newline and return; U+FFFD.
  assert len(every) - len(kept) == 65 + 163 - 3 + 1
  # The in-graph path's classes, applied to every code point at once.
  text = tf.constant(["".join(every)])
  dropped, _, dropped_and_marks = fast_tokenization._graph_patterns()[:3]
  assert tf.strings.regex_replace(text, dropped, "").numpy()[0].decode() == kept
  no_marks = "".join(c for c in kept if unicodedata.category(c) != "Mn")
  assert tf.strings.regex_replace(text, dropped_and_marks, "").numpy()[0].decode() == no_marks
  for char in "\ue000\U000f0000\U0010fffd\u0378\U0001fae8\U0010ffff\t\n\r":
    assert char in kept


def test_basic_tokenizer_equals_reference_on_every_code_point():
  # Word lists show every character the tokenizer keeps, drops or splits at, so code
  # points can be packed densely here: 1,024 consecutive ones a line, no spaces.
  every = _every_code_point()
  dense = ["".join(chr(cp) for cp in every[i:i + 1024]) for i in range(0, len(every), 1024)]
  for lower in (True, False):
    basic = tokenization.BasicTokenizer(do_lower_case=lower)
    bad = [i for i, line in enumerate(dense)
           if basic.tokenize(line) != reference_basic(line, lower)]
    assert bad == [], f"BasicTokenizer(do_lower_case={lower}): lines {bad[:5]} differ"


# The vocabulary the test writes runs by default (no ../shared needed); the two real
# vocabularies, 20 s each, with the slow tests (`make test-slow`).
# both tokenizers on every code point (40 s); the Python path on every code point runs by default
# above, and tests/core/test_tokenization_fuzz.py compares the two on random text (make test-slow)
@pytest.mark.slow
@pytest.mark.parametrize("vocab_name", ["small", pytest.param("uncased", marks=pytest.mark.slow),
                                        pytest.param("cased", marks=pytest.mark.slow)])
@pytest.mark.parametrize("lower", [True, False])
def test_both_paths_equal_reference_on_every_code_point(vocab_name, lower, lines,
                                                         reference_words, small_vocab_file):
  vocab_file = _vocab_file(vocab_name, small_vocab_file)
  vocab = tokenization.load_vocab(vocab_file)
  expected = [reference_wordpiece(words, vocab) for words in reference_words[lower]]
  fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case=lower)
  got = fast.tokenize_to_pieces(lines).to_list()
  bad = [i for i, (row, want) in enumerate(zip(got, expected))
         if [p.decode("utf-8") for p in row] != want]
  assert bad == [], f"FastTokenizer: lines {bad[:5]} differ (from code point " + (
      f"{ord(lines[bad[0]][1]):#x})" if bad else ")")
  # The Python path: its words equal the reference's (the test above), its WordPiece
  # on those words here, and the whole FullTokenizer on every 16th line.
  full = tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
  step = 1 if vocab_name == "small" else 16
  bad = [i for i in range(0, len(lines), step)
         if full.wordpiece_tokenizer.tokenize(" ".join(reference_words[lower][i])) !=
         expected[i]]
  assert bad == [], f"WordpieceTokenizer: lines {bad[:5]} differ"
  assert all(full.tokenize(lines[i]) == expected[i] for i in range(0, len(lines), 16))
  # The sweep meets every kind of outcome: kept, dropped and split-off characters.
  assert sum(row.count("[UNK]") for row in expected) > 900_000
  counts = collections.Counter(len(row) for row in expected)
  assert counts[CODE_POINTS_PER_LINE] > 1000 and len(counts) > 20


# ----------------------------------------------------------------- hand cases


@pytest.mark.parametrize("lower", [True, False])
def test_private_use_and_unassigned_on_small_vocab(lower, small_vocab_file):
  full = tokenization.FullTokenizer(small_vocab_file, do_lower_case=lower)
  fast = fast_tokenization.FastTokenizer(small_vocab_file, do_lower_case=lower)
  cases = [
      ("a\ue000b", ["a", "##\ue000", "##b"]),  # private use with pieces of its own
      ("a \ue000 b", ["a", "\ue000", "b"]),
      ("a\ue001b", ["[UNK]"]),  # private use, not in the vocabulary
      ("a\u0378b a\U000e0080b", ["[UNK]", "[UNK]"]),  # unassigned
      ("a\U0010ffffb \U000f0000", ["[UNK]", "[UNK]"]),  # noncharacter, plane-15 private use
      ("a\u200bb a\u00adb a\x07b", ["a", "##b", "a", "##b", "a", "##b"]),  # Cf, Cf, Cc
      ("\ue001\ue001", ["[UNK]"]),
  ]
  for text, tokens in cases:
    assert full.tokenize(text) == tokens, text
    assert fast.tokenize_to_pieces([text]).to_list() == [[t.encode() for t in tokens]], text


def test_private_use_on_real_vocabularies():
  uncased = shared_path("vocab", "uncased_vocab.txt")
  cased = shared_path("vocab", "cased_vocab.txt")
  for vocab_file, lower in ((uncased, True), (cased, False)):
    full = tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
    fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case=lower)
    private = "private" if lower else "Private"
    cases = [(f"{private} \ue000 use", [private, "[UNK]", "use"]), ("a\ue000b", ["[UNK]"]),
             # U+1FAE8, an emoji of Unicode 15, is unassigned to Python 3.11's tables.
             ("x \U0001fae8 y", ["x", "[UNK]", "y"]), ("\U000f0001", ["[UNK]"])]
    for text, tokens in cases:
      assert full.tokenize(text) == tokens, text
      ids = full.convert_tokens_to_ids(tokens)
      assert fast.tokenize_batch([text]) == [ids], text


def test_long_word_placeholder_cannot_meet_real_text(small_vocab_file):
  # A word over 200 characters becomes one [UNK], whatever characters surround it or
  # fill it, the placeholder's own code point and private-use characters included.
  # pylint: disable=protected-access
  placeholder = fast_tokenization._placeholder_for_long_words(SMALL_VOCAB)
  assert unicodedata.category(placeholder) == "Cn"
  assert (ord(placeholder) & 0xFFFE) == 0xFFFE or 0xFDD0 <= ord(placeholder) <= 0xFDEF
  texts = ["a" * 201 + placeholder + "b", placeholder + " " + "a" * 250,
           "\ue000" * 201 + "," + "\ue000", "a" * 201 + "\ue000",
           placeholder * 201 + " " + placeholder, "x" + "\ue000a" * 150 + "!" + "a" * 3]
  for lower in (True, False):
    full = tokenization.FullTokenizer(small_vocab_file, do_lower_case=lower)
    fast = fast_tokenization.FastTokenizer(small_vocab_file, do_lower_case=lower)
    expected = [full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]
    assert fast.tokenize_batch(texts) == expected
  assert expected[2] == [1, 1, 9] and expected[4] == [1, 1]
  # A vocabulary holding the first noncharacters gets the next one not in any token.
  taken = SPECIALS + ["a\ufdd0", "##\ufdd1x"]
  assert fast_tokenization._placeholder_for_long_words(taken) == "\ufdd2"


def test_nfc_in_the_graph_equals_python_on_every_code_point():
  # normalize="nfc": ICU's NFC (in the graph) after unassigned characters are replaced,
  # against Python's, every code point alone and before a combining acute accent.
  import tensorflow as tf
  import tensorflow_text as tf_text
  # pylint: disable=protected-access
  placeholder = fast_tokenization._placeholder_for_long_words(SMALL_VOCAB)
  unassigned = fast_tokenization._unassigned_pattern(SMALL_VOCAB)
  every = _every_code_point()
  for text in ("".join(chr(cp) for cp in every),
               "".join("a" + chr(cp) + "\u0301 " for cp in every)):
    replaced = "".join(
        placeholder if unicodedata.category(c) == "Cn" and not reference_tokenization.is_cjk(ord(c)) else c
        for c in text)
    graph = tf.strings.regex_replace(tf.constant([text]), unassigned, placeholder)
    assert graph.numpy()[0].decode("utf-8") == replaced
    got = tf_text.normalize_utf8(graph, "NFC").numpy()[0].decode("utf-8")
    assert got == unicodedata.normalize("NFC", replaced)
