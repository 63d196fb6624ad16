"""pretraining_vocab_learner.learn gives the token list of tensorflow-text's own learner
(wordpiece_tokenizer_learner_lib.learn), called here on the same word counts and settings:
token for token, ties and order included, on synthetic corpora (English uncased and cased,
Korean, a tiny one), random small ones (hypothesis), and the real corpora of ../shared."""
import collections
import random

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as reference

from bert.pretraining import pretraining_vocab
from bert.pretraining import pretraining_vocab_learner
from bert import tokenization
from conftest import shared_path

RESERVED = pretraining_vocab.reserved_tokens(99)
SMALL_RESERVED = pretraining_vocab.reserved_tokens(3)


def _counts(lines, do_lower_case):
  """The word counts create_vocab.py gives the learner: BasicTokenizer's words."""
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  counts = collections.Counter()
  for line in lines:
    counts.update(basic.tokenize(line))
  return counts


def _assert_same(word_counts, vocab_size, reserved=SMALL_RESERVED, **settings_):
  want = reference.learn(word_counts, vocab_size, reserved, **settings_)
  got = pretraining_vocab_learner.learn(word_counts, vocab_size, reserved, **settings_)
  assert got == want, next(((i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w),
                           (len(got), len(want)))
  return got


# ---------------------------------------------------------------- synthetic corpora

_ONSETS = ["b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st",
           "tr", "pl", "ch", "sh", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "ea", "ou", "io", "ai"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "ng", "ck", "st"]
_SUFFIXES = ["", "", "", "s", "ed", "ing", "er", "ly", "ness", "tion", "able", "'s"]


def _english_lines(seed, num_lines, cased):
  """Lines of made-up English: stems of a Zipf-like frequency, suffixes, punctuation,
  numbers; capitals and accents where cased (the uncased counts fold them)."""
  rng = random.Random(seed)
  stems = sorted({"".join(rng.choice(x) for x in (_ONSETS, _VOWELS, _CODAS)) +
                  rng.choice(["", "".join(rng.choice(x) for x in (_ONSETS, _VOWELS))])
                  for _ in range(700)})
  weights = [1.0 / (rank + 1) for rank in range(len(stems))]
  lines = []
  for _ in range(num_lines):
    words = []
    for _ in range(rng.randint(3, 14)):
      word = rng.choices(stems, weights)[0] + rng.choice(_SUFFIXES)
      if cased and rng.random() < 0.2:
        word = word.capitalize()
      if cased and rng.random() < 0.03:
        word = word.replace("e", "é", 1)
      words.append(word)
    if rng.random() < 0.2:
      words.append(str(rng.randint(1, 2000)))
    lines.append(" ".join(words) + rng.choice([" .", " ?", "!", ",", ""]))
  return lines


_SYLLABLES = "가나다라마바사아자차카타파하고노도로모보소오조호구누두루무부수우주후기니디리미비시이지치"
_PARTICLES = ["은", "는", "이", "가", "을", "를", "에", "에서", "으로", "도", "만", "까지", "부터",
              "처럼", "의", "와", "과", ""]
_ENDINGS = ["다", "요", "어요", "었다", "습니다", "네", "지만", "고", "ㅋㅋ", "ㅎㅎ"]


def _korean_lines(seed, num_lines):
  """Lines of made-up Korean: stems of one to three syllables with particles and
  endings (many distinct words, as an agglutinative language makes them), emoticons."""
  rng = random.Random(seed)
  stems = sorted({"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3)))
                  for _ in range(900)})
  weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(stems))]
  lines = []
  for _ in range(num_lines):
    words = [rng.choices(stems, weights)[0] + rng.choice(_PARTICLES if rng.random() < 0.7
                                                         else _ENDINGS)
             for _ in range(rng.randint(2, 9))]
    lines.append(" ".join(words) + rng.choice(["", ".", "!!", "~", "?"]))
  return lines


# Small enough that tensorflow-text's own learner answers in about a second each.
@pytest.fixture(scope="module")
def english_uncased():
  return _counts(_english_lines(1, 300, cased=False), True)


@pytest.fixture(scope="module")
def english_cased():
  return _counts(_english_lines(2, 300, cased=True), False)


@pytest.fixture(scope="module")
def korean():
  return _counts(_korean_lines(3, 300), False)


@pytest.fixture(scope="module")
def small():
  return _counts(_english_lines(4, 120, cased=False), True)


def test_english_uncased_with_the_default_settings(english_uncased):
  vocab = _assert_same(english_uncased, 1500, RESERVED)
  assert len(english_uncased) > 1000  # not trivial: many distinct words
  assert vocab[:104] == RESERVED and len(vocab) > 200 and "##ing" in vocab


def test_english_cased(english_cased):
  vocab = _assert_same(english_cased, 500, RESERVED, lower_thresh=3)
  assert "é" in vocab and any(t[:1].isupper() for t in vocab)


def test_korean_cased_with_a_large_alphabet(korean):
  vocab = _assert_same(korean, 2000, RESERVED, max_unique_chars=3000, lower_thresh=2)
  assert "##에서" in vocab


@pytest.mark.parametrize("settings_", [
    dict(num_iterations=1), dict(num_iterations=2), dict(num_iterations=7),
    dict(max_unique_chars=12), dict(max_unique_chars=1),
    dict(slack_ratio=0.0), dict(slack_ratio=0.5),
    dict(lower_thresh=1), dict(lower_thresh=40, upper_thresh=45),
    dict(upper_thresh=20), dict(upper_thresh=None, lower_thresh=None),
    dict(max_input_tokens=300), dict(max_input_tokens=0), dict(max_input_tokens=-1),
    dict(max_token_length=4),
    dict(include_joiner_token=False), dict(joiner="@@"),
])
def test_each_setting(small, settings_):
  _assert_same(small, 300, **settings_)


@pytest.mark.parametrize("vocab_size", [10, 120, 5000])
def test_korean_at_several_sizes(korean, vocab_size):
  _assert_same(korean, vocab_size, max_unique_chars=200)


@pytest.mark.slow  # tensorflow-text's own learner: about a CPU-minute in all
@pytest.mark.parametrize("corpus,do_lower_case,settings_", [
    ("english", True, dict()), ("english", False, dict(lower_thresh=4)),
    ("korean", False, dict(max_unique_chars=3000, lower_thresh=2)),
])
def test_larger_synthetic_corpora(corpus, do_lower_case, settings_):
  lines = (_english_lines(5, 3000, cased=not do_lower_case) if corpus == "english" else
           _korean_lines(6, 3000))
  _assert_same(_counts(lines, do_lower_case), 2500, RESERVED, **settings_)


def test_ties_at_the_max_input_tokens_cut_follow_the_input_order():
  """Words of equal count beyond max_input_tokens: the first given are kept (tensorflow-
  text sorts by count, stable), so the order of the counts matters."""
  counts = {"cat": 5, "dog": 5, "cow": 5, "ant": 5, "owl": 3}
  first = _assert_same(counts, 40, lower_thresh=1, max_input_tokens=2)
  reordered = dict(reversed(list(counts.items())))
  second = _assert_same(reordered, 40, lower_thresh=1, max_input_tokens=2)
  assert "cat" in first and "dog" in first and "cat" not in second and "ant" in second


def test_a_tiny_corpus():
  vocab = _assert_same({"a": 1}, 20)
  assert vocab == SMALL_RESERVED + ["a", "##a"]
  _assert_same({"hello": 3, "help": 2, "yellow": 1}, 30, lower_thresh=1)
  _assert_same([("aa", 2), ("a", 7), ("ab", 1)], 12, lower_thresh=1)


def test_words_the_learner_leaves_out():
  """Reserved words and words over max_token_length are not learned from but count for
  the threshold search; a reserved token that is also a character or a ##piece is
  listed once."""
  reserved = ["[PAD]", "[UNK]", "x", "##s"]
  counts = {"[PAD]": 500, "cats": 20, "dogs": 30, "x": 2, "extraordinarily": 40,
            "hats": 11}
  vocab = _assert_same(counts, 30, reserved, lower_thresh=1, max_token_length=8)
  assert vocab.count("x") == 1 and vocab.count("##s") == 1
  assert "extraordinarily" not in vocab


def test_empty_and_odd_words():
  _assert_same({"": 4, "ab": 3, "b": 2}, 20, lower_thresh=1)
  # Only words that the learner leaves out: the reserved tokens alone.
  _assert_same({"toolongword": 3}, 20, max_token_length=4)
  # Joiner characters inside a word are text like any other.
  _assert_same({"a#b": 5, "a##b": 4, "#": 9, "b#": 3}, 30, lower_thresh=1)


_WORDS = st.text(alphabet="abcdeé#가나", min_size=0, max_size=7).filter(
    lambda w: not w.startswith("##"))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(counts=st.lists(st.tuples(_WORDS, st.integers(1, 60)), min_size=1, max_size=40),
       vocab_size=st.integers(5, 60), lower_thresh=st.integers(1, 8),
       upper_thresh=st.one_of(st.none(), st.integers(1, 80)),
       num_iterations=st.integers(1, 5), max_unique_chars=st.integers(0, 8),
       max_input_tokens=st.integers(-1, 30), max_token_length=st.integers(0, 8),
       slack_ratio=st.sampled_from([0.0, 0.05, 0.3]), include_joiner_token=st.booleans(),
       reserved=st.sampled_from([SMALL_RESERVED, ["a", "##b", "[UNK]"], []]))
def test_random_counts_and_settings(counts, vocab_size, lower_thresh, upper_thresh,
                                    num_iterations, max_unique_chars, max_input_tokens,
                                    max_token_length, slack_ratio, include_joiner_token,
                                    reserved):
  """Small random vocabularies of few characters (so that pieces collide, counts tie and
  words repeat in the list): the same list whatever the settings."""
  _assert_same(counts, vocab_size, reserved, lower_thresh=lower_thresh,
               upper_thresh=upper_thresh, num_iterations=num_iterations,
               max_unique_chars=max_unique_chars, max_input_tokens=max_input_tokens,
               max_token_length=max_token_length, slack_ratio=slack_ratio,
               include_joiner_token=include_joiner_token)


def test_what_it_refuses_instead_of_learning_otherwise():
  """Inputs on which tensorflow-text learns by rules these arrays do not hold: refused."""
  learn = pretraining_vocab_learner.learn
  with pytest.raises(ValueError, match="no words"):
    learn({}, 10, [])
  with pytest.raises(ValueError, match="counts must be at least 1, got 0"):
    learn({"a": 0, "b": 2}, 10, [])
  with pytest.raises(ValueError, match="threshold search must stay at 1 or more"):
    learn({"a": 3}, 10, [], upper_thresh=-30)
  with pytest.raises(ValueError, match=r"the word '##a' starts with the joiner '##'"):
    learn({"##a": 3, "b": 4}, 10, [])
  with pytest.raises(ValueError, match="joiner must not be empty"):
    learn({"a": 3}, 10, [], joiner="")
  # Without the joiner token, such a word is text like any other.
  _assert_same({"##a": 3, "b": 4}, 10, [], include_joiner_token=False, lower_thresh=1)


# ---------------------------------------------------------------- the real corpora


def _corpus_lines(path, limit=None):
  with open(path, encoding="utf-8") as handle:
    lines = [line.strip() for line in handle if line.strip()]
  return lines[:limit]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_the_original_sample_text(do_lower_case):
  lines = _corpus_lines(shared_path("corpora", "sample_text.txt"))
  counts = _counts(lines, do_lower_case)
  _assert_same(counts, 300, RESERVED, lower_thresh=1 if do_lower_case else 2)


@pytest.mark.slow  # tensorflow-text's own learner: 1-4 CPU-minutes a case
@pytest.mark.parametrize("do_lower_case,vocab_size", [(True, 8000), (False, 5000)])
def test_reuters_uncased_and_cased(do_lower_case, vocab_size):
  counts = _counts(_corpus_lines(shared_path("corpora", "reuters_docs.txt")), do_lower_case)
  _assert_same(counts, vocab_size, RESERVED)


@pytest.mark.slow  # tensorflow-text's own learner: 2-6 CPU-minutes
def test_korean_reviews_cased():
  lines = _corpus_lines(shared_path("korean", "corpus", "nsmc_reviews.txt"), 15_000)
  counts = _counts(lines, False)
  _assert_same(counts, 8000, RESERVED, max_unique_chars=3000, lower_thresh=3)
