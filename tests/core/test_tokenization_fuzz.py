"""Property tests: FastTokenizer == FullTokenizer on arbitrary Unicode, ids round-trip,
packing equals the Python reference; and a sweep over every Unicode category run."""
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bert import fast_tokenization
from bert import tokenization
from conftest import shared_path

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

# Characters where the two paths could part ways: controls and format characters that
# are dropped, marks stripped only when lower-casing, Unicode spaces, punctuation outside
# ASCII, CJK next to Hangul/kana, case mappings that change length or depend on context.
TRICKY = list("\x00\x01\t\n\r\x0b\x0c\x1c\x7f\x85\xa0\xad\u034f\u0301\u0308\u064b\u200b"
              "\u200c\u200d\u2028\u2029\u2060\u3000\ufe0f\ufeff\ufffd\ue000\u0378"
              "\u00df\u0130\u0131\u03a3\u03c2\u1e9e\ufb01\uff21\u2126\u212a\u01c5"
              "\u00bf\u00ab\u2014\u3001\u3002\uff01\u061f\u0964$^`~|<=>+"
              "\u4e2d\u6587\uac00\ud55c\u3042\u30a2\u30fc\u0e01\u0915\u093f"
              "\U0001f600\U0001f3fd\U0001f1f0\U00020000\U000e0001") + ["ab", "The", "ing"]

unicode_chars = st.characters(blacklist_categories=("Cs",))
texts = st.lists(st.one_of(st.sampled_from(TRICKY), unicode_chars, st.just(" ")),
                 max_size=40).map("".join)


@pytest.fixture(scope="module")
def pairs():
  configs = [(shared_path("vocab", "uncased_vocab.txt"), True),
             (shared_path("vocab", "cased_vocab.txt"), False)]
  return [(tokenization.FullTokenizer(v, lower), fast_tokenization.FastTokenizer(v, lower))
          for v, lower in configs]


@SETTINGS
@given(batch=st.lists(texts, min_size=1, max_size=12))
def test_fast_equals_full_on_arbitrary_unicode(pairs, batch):
  for full, fast in pairs:
    fast_ids = fast.tokenize_batch(batch)
    pieces = fast.tokenize_to_pieces(batch).to_list()
    for text, ids, row in zip(batch, fast_ids, pieces):
      tokens = full.tokenize(text)
      assert full.convert_tokens_to_ids(tokens) == ids, text
      assert [p.decode("utf-8") for p in row] == tokens, text
      # ids round-trip to the same tokens
      assert full.convert_ids_to_tokens(ids) == tokens


@SETTINGS
@given(word=st.text(alphabet=st.sampled_from(["a", "\u0301", "\U0001f917", "\u00e9", "-"]),
                    min_size=190, max_size=215))
def test_fast_equals_full_around_the_200_character_limit(pairs, word):
  for full, fast in pairs:
    assert fast.tokenize_batch([word]) == [full.convert_tokens_to_ids(full.tokenize(word))]


@SETTINGS
@given(text=st.text(max_size=60))  # surrogates included: Python strings can hold them
def test_python_tokenizer_never_crashes(pairs, text):
  for full, _ in pairs:
    tokens = full.tokenize(text)
    assert all(t and not any(c.isspace() for c in t) for t in tokens)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for t in tokens for c in t)


def _category_run_ends():
  """First and last code point of every run of one Unicode category (about 8,000)."""
  points = []
  for first, last, _ in fast_tokenization._category_runs():  # pylint: disable=protected-access
    points += [first, last] if first != last else [first]
  return [p for p in points if not 0xD800 <= p <= 0xDFFF]


def _sweep(pairs, code_points, patterns):
  for full, fast in pairs:
    for pattern in patterns:
      batch = [pattern.format(chr(cp)) for cp in code_points]
      fast_ids = fast.tokenize_batch(batch)
      bad = [(hex(ord(t[1] if len(t) > 1 else t)), unicodedata.category(t[1:2] or t))
             for t, ids in zip(batch, fast_ids)
             if full.convert_tokens_to_ids(full.tokenize(t)) != ids]
      assert bad == [], f"pattern {pattern!r}: {len(bad)} code points differ"


def test_fast_equals_full_on_every_category_boundary(pairs):
  _sweep(pairs, _category_run_ends(), ["a{}b", "\u0391\u03a3{}\u0392 x"])


@pytest.mark.slow
def test_fast_equals_full_on_every_code_point(pairs):
  every = [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
  # The sigma contexts catch case-ignorable and cased characters that ICU's and
  # Python's Unicode versions disagree on (final-sigma lower-casing).
  _sweep(pairs, every, ["a{}b", "{}", "\u0391\u03a3{}\u0392 x", "{}\u03a3 x",
                        "\u0391{}\u03a3", "\u0391\u03a3{}"])


@settings(SETTINGS, max_examples=20)
@given(rows=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1,
                     max_size=8),
       seq_length=st.integers(5, 24), pair=st.booleans())
def test_pack_inputs_equals_python_reference(rows, seq_length, pair):
  import tensorflow as tf
  rows_a = [list(range(1000, 1000 + n)) for n, _ in rows]
  rows_b = [list(range(2000, 2000 + n)) for _, n in rows]
  segments = [tf.ragged.constant(rows_a, dtype=tf.int32, ragged_rank=1)]
  if pair:
    segments.append(tf.ragged.constant(rows_b, dtype=tf.int32, ragged_rank=1))
  packed = fast_tokenization.pack_inputs(segments, seq_length, cls_id=101, sep_id=102)
  for i, (a, b) in enumerate(zip(rows_a, rows_b)):
    if pair and b:  # the original's `if tokens_b:`: an empty B is a single segment
      tokenization.truncate_seq_pair(a, b, seq_length - 3)
      ids = [101] + a + [102] + b + [102]
      types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    else:
      a = a[:seq_length - 2]
      ids, types = [101] + a + [102], [0] * (len(a) + 2)
    pad = seq_length - len(ids)
    assert packed["input_ids"][i].numpy().tolist() == ids + [0] * pad
    assert packed["input_mask"][i].numpy().tolist() == [1] * len(ids) + [0] * pad
    assert packed["segment_ids"][i].numpy().tolist() == types + [0] * pad


@SETTINGS
@given(text=texts)
def test_basic_tokenizer_splits_at_ascii_spaces(text):
  """create_vocab.py counts words per space-separated chunk: that must be exact."""
  for lower in (True, False):
    basic = tokenization.BasicTokenizer(do_lower_case=lower)
    chunked = [t for chunk in text.split(" ") for t in basic.tokenize(chunk)]
    assert basic.tokenize(text) == chunked
