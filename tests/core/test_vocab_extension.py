"""extend_vocab.py's work (bert/vocab_extension.py): the new
vocabulary differs from the old one only in the replaced [unusedN] lines, byte for byte;
each new word is one piece through FullTokenizer and the in-graph FastTokenizer alike;
words the tokenizer would split are refused with the reason, and case and accents are
normalised as the tokenizer does; the corpus report's counts."""
import pytest
import tensorflow as tf

from bert import fast_tokenization
from bert import tokenization
from bert import vocab_extension as extension
from bert.utils import errors
from conftest import shared_path

# A vocabulary laid out like Google's, with a Windows line end on one unused entry (kept
# as it is) and one on a word (kept too).
LINES = [b"[PAD]", b"[unused0]", b"[unused1]\r", b"[unused2]", b"[UNK]", b"[CLS]",
         b"[SEP]", b"[MASK]", b"[unused3]", b"the", b"cat\r", b"sat", b"on", b"mat", b".",
         b"b", b"i", b"t", b"c", b"o", b"n", b"e", b"r", b"s", b"a", b"m", b"h", b"l",
         b"##b", b"##i", b"##t", b"##c", b"##o", b"##n", b"##e", b"##r", b"##s", b"##a",
         b"##m", b"##h", b"##l", b"##in", b"##er"]


def _vocab(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_bytes(b"\n".join(LINES) + b"\n")
  return path


def _extend(tmp_path, words, do_lower_case=True, corpus=None):
  words_file = tmp_path / "words.txt"
  words_file.write_text("\n".join(words) + "\n", encoding="utf-8")
  corpus_file = None
  if corpus is not None:
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_text(corpus, encoding="utf-8")
  return extension.extend_vocab(str(_vocab(tmp_path)), str(words_file),
                                str(tmp_path / "new.txt"), do_lower_case=do_lower_case,
                                corpus_file=corpus_file and str(corpus_file))


def test_only_the_replaced_lines_differ_and_each_word_is_one_piece(tmp_path):
  plan, summary = _extend(tmp_path, ["Bitcoin", "", "miner", "cat", "BITCOIN", "Ché",
                                     "heater"])
  new = (tmp_path / "new.txt").read_bytes()
  assert new.endswith(b"\n")
  new_lines = new[:-1].split(b"\n")
  assert len(new_lines) == len(LINES)
  changed = {i: (old, line) for i, (old, line) in enumerate(zip(LINES, new_lines))
             if old != line}
  assert changed == {1: (b"[unused0]", b"bitcoin"), 2: (b"[unused1]\r", b"miner\r"),
                     3: (b"[unused2]", b"che"), 8: (b"[unused3]", b"heater")}
  assert plan.added == [("bitcoin", 2, "[unused0]"), ("miner", 3, "[unused1]"),
                        ("che", 4, "[unused2]"), ("heater", 9, "[unused3]")]
  words = str(tmp_path / "words.txt")
  assert plan.skipped == [(4, "cat", "already one piece ('cat', id 10)"),
                          (5, "BITCOIN", "the same token as line 1 ('bitcoin')")]
  assert plan.notes == [
      f"{words}:1: 'Bitcoin' is added as 'bitcoin': with --do_lower_case the tokenizer "
      "lower-cases words and strips their accents",
      f"{words}:5: 'BITCOIN' is added as 'bitcoin': with --do_lower_case the tokenizer "
      "lower-cases words and strips their accents",
      f"{words}:6: 'Ché' is added as 'che': with --do_lower_case the tokenizer lower-cases "
      "words and strips their accents"]
  assert summary == {"added": 4, "skipped": 2, "unused_left": 0}

  old_slow = tokenization.FullTokenizer(str(tmp_path / "vocab.txt"), True)
  slow = tokenization.FullTokenizer(str(tmp_path / "new.txt"), True)
  fast = fast_tokenization.FastTokenizer(str(tmp_path / "new.txt"), do_lower_case=True)
  for written, word in (("Bitcoin", "bitcoin"), ("miner", "miner"), ("Ché", "che"),
                        ("HEATER", "heater")):
    assert len(old_slow.tokenize(written)) > 1
    assert slow.tokenize(written) == [word]
    assert fast.tokenize(tf.constant([written])).to_list() == [
        slow.convert_tokens_to_ids([word])]
  # The ids of every other token are unchanged: a checkpoint made for the old vocabulary
  # reads the same rows.
  assert {t: i for t, i in slow.vocab.items() if t in old_slow.vocab} == {
      t: i for t, i in old_slow.vocab.items() if t in slow.vocab}


def test_without_lower_casing_the_word_keeps_its_case(tmp_path):
  plan, _ = _extend(tmp_path, ["Bitcoin", "Ché"], do_lower_case=False)
  assert [w for w, _, _ in plan.added] == ["Bitcoin", "Ché"]
  assert plan.notes == []
  fast = fast_tokenization.FastTokenizer(str(tmp_path / "new.txt"), do_lower_case=False)
  slow = tokenization.FullTokenizer(str(tmp_path / "new.txt"), False)
  assert slow.tokenize("Bitcoin Ché") == ["Bitcoin", "Ché"]
  assert fast.tokenize(tf.constant(["Bitcoin Ché"])).to_list() == [
      slow.convert_tokens_to_ids(["Bitcoin", "Ché"])]


@pytest.mark.parametrize("words,expected", [
    (["miner", "e-mail", "x.y"],
     "WORDS:2: 'e-mail' cannot be one piece: the basic tokenizer splits it into 'e', "
     "'-', 'mail' before WordPiece sees it (it splits punctuation off every word) (and 1 "
     "more such words); remove it from --words_file"),
    (["東京"],
     "WORDS:1: '東京' cannot be one piece: the basic tokenizer splits it into '東', "
     "'京' before WordPiece sees it (it makes every CJK ideograph a word of its own); "
     "remove it from --words_file"),
    (["two words"],
     "WORDS:1: 'two words' cannot be one piece: the basic tokenizer splits it into "
     "'two', 'words' before WordPiece sees it (it splits at whitespace: one word a line); "
     "remove it from --words_file"),
    (["\u200b"],
     "WORDS:1: '\\u200b' cannot be one piece: the tokenizer drops every character of "
     "it (control characters); remove it from --words_file"),
    (["ab", "bc", "cd", "de", "ef"],
     "--words_file=WORDS: 5 new words, but --vocab_file=VOCAB has only 4 [unusedN] "
     "entries to put them in; give at most 4 words, or learn a new vocabulary "
     "(create_vocab.py)"),
])
def test_refusals_name_the_word_and_why_and_write_nothing(tmp_path, words, expected):
  with pytest.raises(errors.UserError) as error:
    _extend(tmp_path, words)
  message = str(error.value).replace(str(tmp_path / "words.txt"), "WORDS").replace(
      str(tmp_path / "vocab.txt"), "VOCAB")
  assert message == expected
  assert not (tmp_path / "new.txt").exists()


def test_the_corpus_report_counts_pieces_before_and_after(tmp_path):
  # before: bitcoin = b ##i ##t ##c ##o ##in (6), miners = m ##in ##er ##s (4),
  # the/cat/sat/. one each; after: bitcoin 1, miners = miner ##s (2).
  corpus = "the bitcoin miners sat .\nBitcoin the cat\n"
  _, summary = _extend(tmp_path, ["bitcoin", "miner"], corpus=corpus)
  assert summary["corpus"] == {
      "words": 8, "distinct_words": 6, "new_words_seen": 1, "new_word_occurrences": 2,
      "new_word_occurrences_one_piece": 2, "new_word_pieces_before": 12,
      "pieces_per_word_before": round((6 + 1 + 4 + 1 + 1 + 6 + 1 + 1) / 8, 4),
      "pieces_per_word_after": round((1 + 1 + 2 + 1 + 1 + 1 + 1 + 1) / 8, 4),
      "words_changed": 1}


def test_googles_uncased_vocabulary_keeps_every_other_line(tmp_path):
  vocab = shared_path("vocab", "uncased_vocab.txt")
  words = tmp_path / "words.txt"
  words.write_text("cryptocurrency\nblockchain\nbitcoin\n", encoding="utf-8")
  plan, _ = extension.extend_vocab(vocab, str(words), str(tmp_path / "new.txt"))
  with open(vocab, "rb") as handle:
    old = handle.read().split(b"\n")
  new = (tmp_path / "new.txt").read_bytes().split(b"\n")
  assert [i for i, (a, b) in enumerate(zip(old, new)) if a != b] == [1, 2, 3]
  assert new[1:4] == [b"cryptocurrency", b"blockchain", b"bitcoin"]
  assert len(old) == len(new) and plan.slots == 994
