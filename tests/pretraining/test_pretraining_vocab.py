"""pretraining_vocab in-process: words counted by worker processes are those of one
process; the Hugging Face learner (--learner=tokenizers) writes Google's layout that both
tokenizers read, follows the settings it shares, and is refused in one line where the
package is missing or a setting is tensorflow-text's alone; every learner refuses what
create_vocab refuses, with the same line."""
import collections
import dataclasses
import json
import os
import random
import sys

import pytest

from bert import fast_tokenization
from bert.pretraining import pretraining_vocab
from bert import tokenization
from bert.utils import errors

LearnOptions = pretraining_vocab.LearnOptions

_WORDS = ["The", "cat", "sat", "on", "the", "mat", "dogs", "running", "Ran", "café",
          "naïve", "über", "rapidly", "unhappiness", "happy", "2024", "U.S.", "co-op",
          "학교에서", "친구들과", "먹었습니다", "東京", "ㅋㅋㅋ", "don't", "e-mail", "well-known"]


def _lines(seed, count):
  """Mixed-script lines with repeated chunks (so the memo of chunks matters), tabs,
  punctuation glued to words and CJK characters that split apart."""
  rng = random.Random(seed)
  lines = []
  for _ in range(count):
    words = [rng.choice(_WORDS) + rng.choice(["", "", "", ",", ".", "!", "'s"])
             for _ in range(rng.randint(1, 12))]
    lines.append(rng.choice([" ", " ", "\t"]).join(words))
  return lines


def _write(path, lines, blank_every=7):
  with open(path, "w", encoding="utf-8") as handle:
    for i, line in enumerate(lines):
      handle.write(line + "\n")
      if i % blank_every == blank_every - 1:
        handle.write("\n")
  return str(path)


# ---------------------------------------------------------------- counting


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_worker_processes_count_what_one_process_counts(tmp_path, do_lower_case):
  """Two spawned workers against this process: the same counts, the same order of first
  appearance (tensorflow-text's learner keeps it among equal counts), the same held-out
  lines."""
  corpus = _write(tmp_path / "corpus.txt", _lines(1, 3000))
  results = []
  for workers in (0, 2):
    with pretraining_vocab.WordCounter(do_lower_case, 12, workers) as counter:
      lines, held_out = pretraining_vocab.read_corpus([corpus], counter, 10, 100_000)
    results.append((list(counter.words.items()), counter.num_words, lines, held_out))
  assert results[0] == results[1]
  words, num_words, lines, held_out = results[0]
  # The reference: BasicTokenizer on each training line, longer words than 12 left out.
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  want = collections.Counter()
  total = 0
  with open(corpus, encoding="utf-8") as handle:
    kept = [line.strip() for line in handle if line.strip()]
  for number, line in enumerate(kept, start=1):
    if number % 10:
      tokens = basic.tokenize(line)
      total += len(tokens)
      want.update(t for t in tokens if len(t) <= 12)
  assert dict(words) == dict(want) and num_words == total
  assert lines == 3000 and held_out == kept[9::10]
  assert ("unhappiness" in dict(words)) and ("well" in dict(words))
  assert ("The" in dict(words)) != do_lower_case and "東" in dict(words)


def test_an_unset_number_of_workers_starts_none_for_a_small_corpus(tmp_path):
  corpus = _write(tmp_path / "corpus.txt", _lines(2, 200))
  with pretraining_vocab.WordCounter(True, 100, None) as counter:
    pretraining_vocab.read_corpus([corpus], counter, 0, 100_000)
    assert counter._pool is None  # pylint: disable=protected-access
  assert counter.num_words > 0


# ---------------------------------------------------------------- the learners' runs


def _options(**given):
  """Small vocabularies; tensorflow-text's learner's search may go down to counts of 2."""
  if given.get("learner") != "tokenizers":
    given.setdefault("lower_thresh", 2)
  return LearnOptions(**{"vocab_size": 300, "num_unused": 3, "holdout_every": 10, **given})


def _tokenizers():
  return pytest.importorskip("tokenizers", reason="--learner=tokenizers needs the "
                             "tokenizers package (requirements.txt pins it)")


def _reserved(num_unused):
  return pretraining_vocab.reserved_tokens(num_unused)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_tokenizers_writes_googles_layout_that_both_tokenizers_read(tmp_path,
                                                                    do_lower_case):
  _tokenizers()
  corpus = _write(tmp_path / "corpus.txt", _lines(3, 1500))
  out = tmp_path / "vocab.txt"
  summary = pretraining_vocab.create_vocab(
      corpus, str(out), _options(learner="tokenizers", do_lower_case=do_lower_case,
                                 num_unused=120))
  written = out.read_text(encoding="utf-8").split("\n")
  assert written[-1] == "" and "" not in written[:-1]
  tokens = written[:-1]
  assert tokens[:125] == _reserved(120)
  assert (tokens[0], tokens[100:104]) == ("[PAD]", ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])
  assert summary["learner"] == "tokenizers" and summary["vocab_size"] == len(tokens) <= 300
  assert len(set(tokens)) == len(tokens)
  learned = tokens[125:]
  assert any(t.startswith("##") and len(t) > 3 for t in learned)
  assert any(t[:1].isupper() for t in learned) != do_lower_case
  config = json.loads((tmp_path / "bert_config.json").read_text(encoding="utf-8"))
  assert config["vocab_size"] == len(tokens)
  # The same summary keys as the default learner's.
  default = pretraining_vocab.create_vocab(
      corpus, str(tmp_path / "default.txt"), _options(do_lower_case=do_lower_case,
                                                      num_unused=120),
      output_config_file="")
  assert list(summary) == list(default)
  assert summary["lines"] == default["lines"] and summary["words"] == default["words"]
  assert summary["unk_rate_measured_on"].startswith("150 held-out lines, ")

  # Both tokenizers read it exactly: every line a token at its line number, the same ids.
  full = tokenization.FullTokenizer(str(out), do_lower_case=do_lower_case)
  assert list(full.vocab) == tokens and list(full.vocab.values()) == list(range(len(tokens)))
  fast = fast_tokenization.FastTokenizer(str(out), do_lower_case=do_lower_case)
  held_out = _lines(4, 60)
  pieces = [full.tokenize(line) for line in held_out]
  assert fast.tokenize_batch(held_out) == [full.convert_tokens_to_ids(p) for p in pieces]
  assert (fast.unk_id, fast.cls_id, fast.sep_id, fast.mask_id) == (100, 101, 102, 103)
  # A word never seen splits into learned pieces.
  unseen = full.tokenize("happyhappy")
  assert unseen[0] == "happy" and len(unseen) > 1 and "[UNK]" not in unseen


def test_tokenizers_keeps_max_unique_chars_characters(tmp_path):
  _tokenizers()
  corpus = _write(tmp_path / "corpus.txt", _lines(5, 800))
  out = tmp_path / "vocab.txt"
  pretraining_vocab.create_vocab(corpus, str(out), _options(
      learner="tokenizers", max_unique_chars=20, vocab_size=200), output_config_file="")
  tokens = out.read_text(encoding="utf-8").splitlines()[len(_reserved(3)):]
  alphabet = {c for t in tokens for c in (t[2:] if t.startswith("##") else t)}
  assert len(alphabet) <= 20 and "東" not in alphabet and "e" in alphabet


def test_tokenizers_alphabet_is_tensorflow_texts_and_its_runs_agree():
  """The alphabet: the most frequent characters, ties in character order; a word with
  another character is not learned from. The trainer's own numbering of ##characters
  varies between runs and breaks ties between merges: here every run gives one list."""
  _tokenizers()
  counts = {"aab": 5, "abc": 3, "xyz": 1, "ax": 2, "bca": 2}
  # a: 10 + 3 + 2 + 2 = 17, b: 5 + 3 + 2 = 10, then c and x at 5 and 3... c: 3 + 2 = 5.
  vocab = pretraining_vocab.learn_with_tokenizers(counts, 30, ["[UNK]"], 3)
  assert vocab[0] == "[UNK]" and not [t for t in vocab if "x" in t or "y" in t]
  assert {"a", "b", "c", "##a", "##b", "##c"} <= set(vocab)
  words = collections.Counter(word for line in _lines(9, 2000)
                              for word in tokenization.BasicTokenizer(False).tokenize(line))
  runs = {tuple(pretraining_vocab.learn_with_tokenizers(words, 120, _reserved(3), 40))
          for _ in range(4)}
  assert len(runs) == 1 and len(next(iter(runs))) == 120


def test_the_learners_share_the_counts_and_the_held_out_lines(tmp_path):
  _tokenizers()
  corpus = _write(tmp_path / "corpus.txt", _lines(6, 500))
  summaries = [pretraining_vocab.create_vocab(
      corpus, str(tmp_path / f"{learner}.txt"), _options(learner=learner, holdout_every=4),
      output_config_file="") for learner in pretraining_vocab.LEARNERS]
  drop = ("learner", "vocab_size", "unk_rate", "pieces_per_word", "unk_rate_measured_on",
          "learn_seconds", "total_seconds")
  first, second = ({k: v for k, v in s.items() if k not in drop} for s in summaries)
  assert first == second and first["lines"] == 500
  assert all(s["unk_rate_measured_on"].startswith("125 held-out lines, ") for s in summaries)


def test_tokenizers_learns_from_the_counts_as_counted():
  """Each word reaches the trainer as often as it was counted, whole: a word of count 1
  among frequent ones, and a word longer than one batch of text, still come out."""
  _tokenizers()
  counts = collections.Counter({"zebra": 1, "a": 300_000, "ab": 40, "abc" * 300: 2})
  vocab = pretraining_vocab.learn_with_tokenizers(counts, 200, ["[PAD]", "[UNK]"], 100)
  assert vocab[:2] == ["[PAD]", "[UNK]"]
  assert {"z", "##e", "##b", "##r", "##a", "ab", "##c"} <= set(vocab)
  texts = list(pretraining_vocab._repeated_words(counts, max_chars=1000))  # pylint: disable=protected-access
  assert collections.Counter(w for t in texts for w in t.split()) == counts
  assert max(len(t) for t in texts) < 1000 + 1000


# ---------------------------------------------------------------- refusals


def test_tokenizers_refuses_tensorflow_texts_own_settings():
  for name, value in (("num_iterations", 3), ("lower_thresh", 2), ("upper_thresh", 99),
                      ("max_input_tokens", 10), ("max_token_length", 20),
                      ("slack_ratio", 0.1)):
    with pytest.raises(errors.UserError) as raised:
      pretraining_vocab.check_options(LearnOptions(learner="tokenizers", **{name: value}))
    assert str(raised.value) == (f"--{name}={value}: a setting of --learner=tensorflow_text; "
                                 "--learner=tokenizers does not use it")


def test_without_the_package_tokenizers_is_refused_in_one_line(monkeypatch, tmp_path):
  monkeypatch.setitem(sys.modules, "tokenizers", None)  # import tokenizers: ImportError
  corpus = _write(tmp_path / "corpus.txt", _lines(7, 20))
  with pytest.raises(errors.UserError) as raised:
    pretraining_vocab.create_vocab(corpus, str(tmp_path / "v.txt"),
                                   LearnOptions(learner="tokenizers"))
  assert str(raised.value) == (
      "--learner=tokenizers needs the Hugging Face tokenizers package, which is not "
      "installed here: pip install tokenizers (or the training install, which holds it: "
      'pip install "bert-tensorflow2[tensorflow]")')
  assert os.listdir(tmp_path) == ["corpus.txt"]
  # The default learner needs nothing more.
  pretraining_vocab.check_options(LearnOptions())


def _refusals(tmp_path):
  """(what to run, the error line) of what create_vocab refuses before writing."""
  good = _write(tmp_path / "good.txt", _lines(8, 30))
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n", encoding="utf-8")
  latin = tmp_path / "latin.txt"
  latin.write_bytes(b"the cat .\ncaf\xe9 au lait .\n")
  template = tmp_path / "template.json"
  template.write_text('{"hidden_size": 32,,}', encoding="utf-8")
  blocker = tmp_path / "blocker"
  blocker.write_text("a file\n", encoding="utf-8")
  out = str(tmp_path / "out" / "vocab.txt")
  return [
      (dict(input_patterns=str(tmp_path / "nope*.txt"), output_file=out),
       f"--input_file: no file matches '{tmp_path}/nope*.txt'"),
      (dict(input_patterns=str(empty), output_file=out),
       f"--input_file={empty}: no words to learn from (the corpus is empty)"),
      (dict(input_patterns=str(latin), output_file=out), f"{latin}:2"),
      (dict(input_patterns=good, output_file=out, bert_config_template=str(template)),
       str(template)),
      (dict(input_patterns=good, output_file=str(blocker / "v.txt")),
       f"--output_file={blocker / 'v.txt'}: {blocker} is a file, not a directory"),
      (dict(input_patterns=good, output_file=out, vocab_size=104),
       "--vocab_size=104: must exceed the 104 reserved tokens (lower --num_unused or raise "
       "--vocab_size)"),
      (dict(input_patterns=good, output_file=out, num_unused=-1), "--num_unused=-1: must be >= 0"),
      (dict(input_patterns=good, output_file=out, holdout_every=-2),
       "--holdout_every=-2: must be >= 0 (0: no held-out lines)"),
      (dict(input_patterns=good, output_file=out, num_workers=-1),
       "--num_workers=-1: must be 0 (this process) to 1024"),
      (dict(input_patterns=good, output_file=None), "--output_file is required"),
  ]


@pytest.mark.parametrize("learner", pretraining_vocab.LEARNERS)
def test_every_learner_refuses_what_create_vocab_refuses(tmp_path, learner):
  if learner == "tokenizers":
    _tokenizers()
  for given, message in _refusals(tmp_path):
    run = dict(given)
    options = {k: run.pop(k) for k in ("vocab_size", "num_unused", "holdout_every",
                                       "num_workers") if k in run}
    with pytest.raises(errors.UserError) as raised:
      pretraining_vocab.create_vocab(
          run.pop("input_patterns"), run.pop("output_file"),
          dataclasses.replace(LearnOptions(learner=learner), **options), **run)
    assert message in str(raised.value), (given, str(raised.value))
    assert "\n" not in str(raised.value)
    # At most the output's folder was made up front: nothing in it.
    assert not os.listdir(tmp_path / "out") if os.path.isdir(tmp_path / "out") else True
