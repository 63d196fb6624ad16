"""pretraining_corpus_check.py: the corpus check fires on the three traps of a new language (Korean
under lower-casing, decomposed Hangul, paragraph-a-line wiki text) and stays quiet on clean
cased Korean; its random-next estimate is the generator's own pairing."""
import random
import sys
import unicodedata

import pytest

from bert.pretraining import pretraining_corpus_check
from bert.pretraining import pretraining_corpus
from bert.utils import errors
from conftest import shared_path

SYLLABLES = "가나다라마바사아자차카타파하고노도로모보소오조초코토포호는은이가를을에서도만"


def _korean_documents(seed=0, documents=40, lines=12):
  """Cased Korean text: words of 2-4 syllables, 3-8 words a line, one sentence a line."""
  rng = random.Random(seed)
  words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
           for _ in range(300)]
  return [[" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + "."
           for _ in range(lines)] for _ in range(documents)]


def _vocab(tmp_path, documents):
  """A vocabulary that covers every character of the documents (NFC, as written)."""
  chars = sorted({c for d in documents for l in d for c in l if not c.isspace()})
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path)


def _wiki_documents(seed=0, articles=30):
  """WikiText's shape: ' = Title = ' lines, then paragraphs of many sentences a line."""
  rng = random.Random(seed)
  words = ["the", "game", "was", "released", "in", "japan", "and", "critics", "praised",
           "its", "story", "battle", "system", "sales", "were", "strong", "series", "team"]

  def sentence():
    return " ".join(rng.choice(words) for _ in range(rng.randint(8, 14))).capitalize() + "."

  return [[f"= Article {a} ="] + [" ".join(sentence() for _ in range(12)) for _ in range(3)]
          + ["= = Reception = ="] + [" ".join(sentence() for _ in range(12))]
          for a in range(articles)]


def test_clean_cased_korean_is_quiet(tmp_path):
  documents = _korean_documents()
  report = pretraining_corpus_check.check_corpus(documents, False, vocab_file=_vocab(tmp_path, documents))
  assert report.warnings == []
  assert report.unk_rate == 0.0 and report.tokens > 3000
  assert report.nfd_lines == 0 and report.damaged_letters == 0.0
  assert pretraining_corpus_check.report_lines(report)[-1] == "  no warnings"


def test_korean_under_lower_casing_is_named(tmp_path):
  documents = _korean_documents()
  vocab = _vocab(tmp_path, documents)
  report = pretraining_corpus_check.check_corpus(documents, True, vocab_file=vocab)
  # Every Hangul syllable comes apart into jamo, none of which the vocabulary holds; only
  # the "." survives.
  assert report.damaged_scripts == ("HANGUL",) and report.damaged_letters == 1.0
  assert report.unk_rate > 0.8
  unk, hangul = report.warnings
  assert unk.startswith(f"[UNK] rate {report.unk_rate:.3f} with --vocab_file={vocab} "
                        "--do_lower_case=True (above 0.03); likely cause: "
                        "--do_lower_case=True changes HANGUL letters")
  assert "Hangul syllables come apart into jamo" in hangul
  assert "use --do_lower_case=False" in hangul
  # Without a vocabulary (create_vocab's check) the case warning still fires.
  assert len(pretraining_corpus_check.check_corpus(documents, True).warnings) == 1


def test_cased_scripts_keep_their_uncased_recipe():
  documents = [["Ça été très élégant, naïve façade.", "Über Straße und Ökonomie."]] * 3
  report = pretraining_corpus_check.check_corpus(documents, True)
  assert report.damaged_letters == 0.0 and report.warnings == []
  # Kana lose their voicing mark under the lower-casing path: が -> か.
  kana = pretraining_corpus_check.check_corpus([["がぎぐげご ばびぶ"]] * 2, True)
  assert kana.damaged_scripts == ("HIRAGANA",) and kana.damaged_letters == 1.0


def test_decomposed_hangul_and_the_nfc_remedy(tmp_path):
  documents = _korean_documents()
  vocab = _vocab(tmp_path, documents)
  nfd = [[unicodedata.normalize("NFD", l) for l in d] for d in documents]
  report = pretraining_corpus_check.check_corpus(nfd, False, vocab_file=vocab)
  assert report.nfd_lines == report.lines == 480
  unk, nfd_warning = report.warnings
  assert "likely cause: the text is decomposed (NFD) where the vocabulary is not: pass " \
         "--normalize=nfc" in unk
  assert nfd_warning.startswith("480 of 480 lines hold decomposed (NFD) text")
  fixed = pretraining_corpus_check.check_corpus(nfd, False, vocab_file=vocab, normalize="nfc")
  assert fixed.warnings == [] and fixed.unk_rate == 0.0
  # Under lower-casing the tokenizer decomposes anyway: no NFD warning, the case one.
  lowered = pretraining_corpus_check.check_corpus(nfd, True)
  assert [w for w in lowered.warnings if "NFD) text" in w] == []


def test_paragraph_a_line_wiki_text_warns_with_estimates():
  report = pretraining_corpus_check.check_corpus(_wiki_documents(), True)
  assert report.heading_lines == 60 and report.lines == 180
  assert report.multi_sentence_lines == 120
  # A paragraph line of ~130 words fills a 125-token target alone, so it is always paired
  # with a random document; only a heading and the paragraph after it can make an
  # actual-next pair (half the time).
  assert 0.7 < report.random_next < 0.85
  warnings = report.warnings
  assert any(w.startswith("the corpus looks like one paragraph a line") and
             "next-sentence pairs will be skewed" in w for w in warnings)
  assert any(w.startswith("60 of 180 lines look like wiki headings") for w in warnings)


def test_sentence_splitting_estimate_with_pysbd():
  pytest.importorskip("pysbd")
  report = pretraining_corpus_check.check_corpus(_wiki_documents(), True)
  assert report.splitter == "pysbd" and not report.split_applied
  # Split into ~10-word sentences, the pairs are the usual mix again.
  assert 0.45 < report.random_next_split < 0.7
  splitter = pretraining_corpus.sentence_splitter("pysbd", "en")
  applied = pretraining_corpus_check.check_corpus(_wiki_documents(), True, split_sentences=splitter,
                                      splitter_name="pysbd")
  assert applied.split_applied and 0.45 < applied.random_next < 0.7
  assert not [w for w in applied.warnings if "paragraph" in w and "skewed" in w]
  assert splitter("It rose. It fell again.") == ["It rose. ", "It fell again."]


def test_missing_splitter_is_one_line_error(monkeypatch):
  monkeypatch.setitem(sys.modules, "pysbd", None)  # import pysbd -> ImportError
  with pytest.raises(errors.UserError) as error:
    pretraining_corpus.sentence_splitter("pysbd")
  assert str(error.value) == ("--split_sentences=pysbd: the pysbd package is not installed "
                              "(pip install pysbd)")
  with pytest.raises(errors.UserError, match="--split_sentences=nltk: unknown"):
    pretraining_corpus.sentence_splitter("nltk")


def test_random_next_estimate_is_the_generators_pairing():
  # Documents of two 10-token sentences with a 125-token target: half the passes make one
  # actual-next pair, half make two random-next ones: 2/3 random-next (as in
  # tests/pretraining/test_pretraining_generator.py, where the written records show it).
  documents = [["s a", "s b"] for _ in range(3000)]
  share = pretraining_corpus_check.estimate_random_next(documents, lambda s: 10, short_seq_prob=0.0)
  assert abs(share - 2 / 3) < 0.02  # 9,000 passes: standard error ~0.005
  assert pretraining_corpus_check.estimate_random_next([["one"]], lambda s: 1) is None


def test_read_sample_stops_at_a_document_end(tmp_path):
  path = tmp_path / "c.txt"
  path.write_text("a\nb\n\nc\nd\ne\n\nf\n", encoding="utf-8")
  assert pretraining_corpus_check.read_sample([str(path)], max_lines=3) == [["a", "b"], ["c", "d", "e"]]
  assert pretraining_corpus_check.read_sample([str(path)]) == [["a", "b"], ["c", "d", "e"], ["f"]]


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def nsmc_sample():
  return pretraining_corpus_check.read_sample([shared_path("korean", "corpus", "nsmc_reviews.txt")],
                                  max_lines=1500)


def test_real_korean_reviews_clean_and_traps(nsmc_sample, tmp_path):
  quiet = pretraining_corpus_check.check_corpus(nsmc_sample, False)
  assert quiet.warnings == [] and 0.4 < quiet.random_next < 0.65
  lowered = pretraining_corpus_check.check_corpus(nsmc_sample, True)
  assert lowered.damaged_scripts[0] == "HANGUL" and lowered.damaged_letters > 0.9
  nfd = [[unicodedata.normalize("NFD", l) for l in d] for d in nsmc_sample]
  assert any("NFD) text" in w for w in pretraining_corpus_check.check_corpus(nfd, False).warnings)
  english = pretraining_corpus_check.check_corpus(nsmc_sample, False,
                                      vocab_file=shared_path("vocab", "cased_vocab.txt"))
  assert english.unk_rate > 0.2
  assert "the vocabulary has no token for" in english.warnings[0]
