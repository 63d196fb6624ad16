"""Property tests (hypothesis) for the data readers and the SQuAD normaliser.

Each reader, fed garbage, either parses it or raises a UserError that names the file;
never a TypeError/KeyError/IndexError or a bare UnicodeDecodeError. Fed a VALID file built
from arbitrary Unicode, it returns exactly what an independent reading of the format says.
The tokenizers' own fuzz tests live in tests/core/test_tokenization_fuzz.py.
"""
import collections
import csv
import io
import os
import string
import tempfile

from hypothesis import HealthCheck, example, given, settings, strategies as st
import pytest

from bert.classifier import classifier_data
from bert.squad import squad_data
from bert.squad import squad_metrics
from bert.swag import swag_data
from bert.tagging import tagging_data
from bert.utils import errors

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

# Characters that break naive readers: the line and record separators Python's
# str.splitlines()/str.split() know but file iteration does not, NUL, BOM, quotes.
TRICKY = ["\x00", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029",
          "\ufeff", "\xa0", "\u3000", '"', "'", ",", "\\", "é", "中", "\U0001F600"]


def text_without(forbidden, min_size=0, max_size=12):
  """Arbitrary Unicode (with the tricky characters well represented) minus `forbidden`."""
  char = st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(TRICKY))
  return st.lists(char.filter(lambda c: c not in forbidden), min_size=min_size,
                   max_size=max_size).map("".join)


def no_space(min_size=1, max_size=10):
  """A word: arbitrary Unicode without any character Python counts as whitespace."""
  char = st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(TRICKY))
  return st.lists(char.filter(lambda c: not c.isspace()), min_size=min_size,
                  max_size=max_size).map("".join)


def write_bytes(directory, name, data):
  path = os.path.join(directory, name)
  with open(path, "wb") as handle:
    handle.write(data)
  return path


def expect_user_error(path, call):
  """Runs call(); returns its value, or None after a UserError naming `path` (or, for a
  whole data_dir, its directory). Any other exception fails the test."""
  try:
    return call()
  except errors.UserError as exc:
    assert path in str(exc) or os.path.dirname(path) in str(exc), str(exc)
    return None


# --------------------------------------------------------------------------- GLUE


GLUE_FIELD = text_without({"\t", "\n", "\r"})


@FUZZ
@given(rows=st.lists(st.lists(st.one_of(st.sampled_from(["0", "1"]), GLUE_FIELD),
                              min_size=3, max_size=6), max_size=6),
       bom=st.booleans())
@example(rows=[["0", "0", "0", "\x0c", "0"]], bom=False)  # the form feed found by hypothesis
@example(rows=[["1", "a", "b", "one \u2028 sentence", "two"]], bom=True)
@example(rows=[["1", "a", "b", "one", "two"], ["1", "a", "b", "one", "tw", "o"]], bom=False)
def test_mrpc_reader_reads_every_valid_row_and_names_the_first_bad_one(rows, bom):
  """MRPC layout: header, label column 0, texts 3 and 4; rows split on newlines only,
  as the original's file iteration did (a U+2028 inside a sentence is not a row end);
  a row of more or fewer than the header's 5 columns is refused (a tab in a sentence)."""
  with tempfile.TemporaryDirectory() as directory:
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    body = "".join("\t".join(r) + "\n" for r in rows)
    path = write_bytes(directory, "train.tsv",
                       (b"\xef\xbb\xbf" if bom else b"") + (header + body).encode("utf-8"))
    expected, error_line = [], None
    for line, fields in enumerate(rows, start=2):
      if "\t".join(fields) == "":
        continue  # a blank line carries no row
      if len(fields) != 5 or fields[0] not in ("0", "1"):
        error_line = line
        break
      expected.append((fields[3], fields[4], fields[0]))
    processor = classifier_data.get_processor("mrpc")
    if error_line is None and not expected:
      error_line = ""  # no data rows: an error naming the file
    try:
      examples = processor.get_train_examples(directory)
    except errors.UserError as exc:
      assert error_line is not None, f"valid file rejected: {exc}"
      assert f"{path}:{error_line}" in str(exc), str(exc)
      return
    assert error_line is None, f"row {error_line} should have been rejected"
    assert [(e.text_a, e.text_b, e.label) for e in examples] == expected


@FUZZ
@given(data=st.binary(max_size=300), task=st.sampled_from(["mrpc", "cola", "sst2", "stsb",
                                                           "mnli", "qnli", "tsv", "csv"]))
def test_glue_readers_never_crash_on_garbage(data, task):
  with tempfile.TemporaryDirectory() as directory:
    ext = "csv" if task == "csv" else "tsv"
    path = write_bytes(directory, f"train.{ext}", data)
    processor = classifier_data.get_processor(task)
    if hasattr(processor, "set_data_dir"):
      processor.set_data_dir(directory)

    def read():
      labels = processor.get_labels()
      examples = processor.get_train_examples(directory)
      for example in examples:
        assert isinstance(example.text_a, str)
        assert labels is None or example.label in labels
      return examples

    expect_user_error(path, read)


# --------------------------------------------------------------------------- SQuAD


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-5, 50),
                      st.floats(allow_nan=False, allow_infinity=False), text_without(set()))
JSON_VALUE = st.recursive(
    JSON_LEAF, lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["data", "paragraphs", "context", "qas", "id",
                                         "question", "answers", "text", "answer_start",
                                         "is_impossible", "title"]), children,
                        max_size=5)),
    max_leaves=20)


@FUZZ
@given(data=st.binary(max_size=200))
def test_squad_loader_never_crashes_on_garbage_bytes(data):
  with tempfile.TemporaryDirectory() as directory:
    path = write_bytes(directory, "train.json", data)
    loaded = expect_user_error(path, lambda: squad_data.load_squad_json(path))
    if loaded is not None:
      assert isinstance(loaded, dict) and "data" in loaded


@FUZZ
@given(data=st.one_of(JSON_VALUE, st.lists(JSON_VALUE, max_size=3)),
       is_training=st.booleans(), v2=st.booleans())
def test_squad_parser_never_crashes_on_odd_structures(data, is_training, v2):
  """Any JSON under "data": a list of SquadExample or a UserError naming the file."""
  examples = expect_user_error("odd.json", lambda: squad_data.parse_squad_examples(
      data, is_training, v2, path="odd.json"))
  for example in examples or []:
    assert isinstance(example.question_text, str)
    assert all(isinstance(t, str) and t for t in example.doc_tokens)


@FUZZ
@given(words=st.lists(no_space(), min_size=1, max_size=12), data=st.data())
def test_squad_answer_positions_are_the_answer_words(words, data):
  """A context of space-separated words and an answer that is a run of them: the
  example's doc_tokens are the words and its positions point at the run."""
  start = data.draw(st.integers(0, len(words) - 1))
  end = data.draw(st.integers(start, len(words) - 1))
  context = " ".join(words)
  offset = len(" ".join(words[:start])) + (1 if start else 0)
  answer = " ".join(words[start:end + 1])
  assert context[offset:offset + len(answer)] == answer
  squad = [{"title": "t", "paragraphs": [{"context": context, "qas": [{
      "id": "q", "question": "?", "answers": [{"text": answer, "answer_start": offset}]}]}]}]
  [example] = squad_data.parse_squad_examples(squad, True, False, path="gen.json")
  assert example.doc_tokens == words
  assert (example.start_position, example.end_position) == (start, end)
  assert example.orig_answer_text == answer


# --------------------------------------------------------------------------- CoNLL


@FUZZ
@given(data=st.binary(max_size=300))
def test_conll_reader_never_crashes_on_garbage(data):
  with tempfile.TemporaryDirectory() as directory:
    path = write_bytes(directory, "train.txt", data)
    examples = expect_user_error(path, lambda: tagging_data.read_conll(path))
    for example in examples or []:
      assert example.words and all(w.strip() == w and w for w in example.words)
      assert example.labels is None or len(example.labels) == len(example.words)


@FUZZ
@given(documents=st.lists(st.lists(st.lists(
    st.tuples(no_space().filter(lambda w: w != "-DOCSTART-"), no_space(max_size=4),
              st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-MISC"])),
    min_size=1, max_size=5), min_size=1, max_size=3), min_size=1, max_size=2),
       separator=st.sampled_from([" ", "\t"]), crlf=st.booleans())
def test_conll_reader_parses_valid_files_exactly(documents, separator, crlf):
  """Documents of sentences of (word, POS, tag) lines: every word and tag comes back."""
  end = "\r\n" if crlf else "\n"
  lines, expected = [], []
  for document in documents:
    lines += ["-DOCSTART- -X- O", ""]
    for sentence in document:
      lines += [separator.join(token) for token in sentence] + [""]
      expected.append(([w for w, _, _ in sentence], [t for _, _, t in sentence],
                       [[p] for _, p, _ in sentence]))
  with tempfile.TemporaryDirectory() as directory:
    path = write_bytes(directory, "train.txt", end.join(lines).encode("utf-8"))
    examples = tagging_data.read_conll(path)
  assert [(e.words, e.labels, e.columns) for e in examples] == expected


# --------------------------------------------------------------------------- SWAG


SWAG_COLUMNS = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
                "ending0", "ending1", "ending2", "ending3", "label"]


@FUZZ
@given(data=st.binary(max_size=300), require_label=st.sampled_from([None, True, False]))
def test_swag_reader_never_crashes_on_garbage(data, require_label):
  with tempfile.TemporaryDirectory() as directory:
    path = write_bytes(directory, "train.csv", data)
    examples = expect_user_error(
        path, lambda: swag_data.read_swag_examples(path, require_label=require_label))
    for example in examples or []:
      assert len(example.endings) == swag_data.NUM_CHOICES


@FUZZ
@given(rows=st.lists(st.tuples(st.lists(text_without({"\r"}, min_size=1), min_size=10,
                                        max_size=10),
                               st.sampled_from(["0", "1", "2", "3"])),
                     min_size=1, max_size=5))
def test_swag_reader_parses_valid_csv_exactly(rows):
  """Rows written by csv.writer (quotes, commas and newlines inside fields) read back."""
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator="\n")
  writer.writerow(SWAG_COLUMNS)
  for fields, label in rows:
    writer.writerow(fields + [label])
  with tempfile.TemporaryDirectory() as directory:
    path = write_bytes(directory, "val.csv", buffer.getvalue().encode("utf-8"))
    examples = swag_data.read_swag_examples(path, require_label=True)
  expected = [(f[3], f[4], f[6:10], int(label)) for f, label in rows
              if not all(not cell.strip() for cell in f + [label])]
  assert [(e.context_sentence, e.start_ending, e.endings, e.label)
          for e in examples] == expected


# --------------------------------------------------------------------------- SQuAD scorer


ANY_TEXT = text_without(set(), max_size=30)


@FUZZ
@given(s=ANY_TEXT)
def test_normalised_answers_have_the_official_shape(s):
  """Lower-cased, no ASCII punctuation, no article token, single spaces, no edges."""
  normal = squad_metrics.normalize_answer(s)
  assert not any(ch in string.punctuation for ch in normal)
  assert normal == normal.strip() and "  " not in normal
  assert not set(normal.split(" ")) & {"a", "an", "the"}
  assert normal == " ".join(normal.split())
  assert not any("A" <= ch <= "Z" for ch in normal)
  assert squad_metrics.normalize_answer(normal) == normal


@FUZZ
@given(s=ANY_TEXT)
def test_articles_punctuation_and_case_do_not_change_the_match(s):
  decorated = "The " + s + " !?"
  assert squad_metrics.compute_exact(s, decorated) == 1
  assert squad_metrics.exact_match_score_v1(decorated, s)


@FUZZ
@given(gold=ANY_TEXT, pred=ANY_TEXT)
def test_f1_is_a_symmetric_token_overlap(gold, pred):
  f1 = squad_metrics.compute_f1(gold, pred)
  assert 0.0 <= f1 <= 1.0
  assert f1 == pytest.approx(squad_metrics.compute_f1(pred, gold))
  assert squad_metrics.compute_f1(gold, gold) == 1
  assert squad_metrics.compute_exact(gold, gold) == 1
  g = squad_metrics.normalize_answer(gold).split()
  p = squad_metrics.normalize_answer(pred).split()
  if g and p:
    common = sum((collections.Counter(g) & collections.Counter(p)).values())
    expected = 0.0 if not common else 2 * common / (len(g) + len(p))
    assert f1 == pytest.approx(expected)
    assert (f1 == 1.0) == (collections.Counter(g) == collections.Counter(p))


def test_normaliser_examples_by_hand():
  assert squad_metrics.normalize_answer("The  Cat's  hat!") == "cats hat"
  assert squad_metrics.normalize_answer("the-end") == "theend"
  assert squad_metrics.normalize_answer("An apple, a pear") == "apple pear"
  assert squad_metrics.compute_f1("the cat sat", "a cat sat down") == pytest.approx(0.8)
