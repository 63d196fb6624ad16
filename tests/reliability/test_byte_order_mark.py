"""A UTF-8 byte-order mark at the start of a file (Notepad and other Windows editors
write one) is dropped by every reader of a text file, through one helper in file_io.

Each reader is given the same file with and without the mark and must return the same
thing. A CoNLL file read the mark as part of its first word: "\\ufeff-DOCSTART-" was a
word, its document marker a sentence, and "-X-" a label.
"""
import json
import os
import re
import tokenize

import pytest

from conftest import ROOT
from bert.utils import file_io
from bert.utils import input_checks

BOM = "\ufeff"


def _pair(tmp_path, name, text):
  """(path without the mark, path with it), both holding `text`."""
  paths = []
  for folder, prefix in (("plain", ""), ("marked", BOM)):
    path = tmp_path / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((prefix + text).encode("utf-8"))
    paths.append(str(path))
  assert open(paths[1], "rb").read().startswith(b"\xef\xbb\xbf")
  return paths


def _same(tmp_path, name, text, read, normalise=repr):
  plain, marked = _pair(tmp_path, name, text)
  got, expected = read(marked), read(plain)
  assert normalise(got).replace(os.sep + "marked" + os.sep, os.sep + "plain" + os.sep) == (
      normalise(expected))
  return expected


def test_the_helpers_drop_the_mark_at_the_start_only():
  assert file_io.decode_text((BOM + "word " + BOM).encode("utf-8")) == "word " + BOM
  assert file_io.decode_text(b"word") == "word"
  assert file_io.decode_text((BOM + "a\r\nb").encode("utf-8")) == "a\r\nb"
  with pytest.raises(UnicodeDecodeError):
    file_io.decode_text(b"caf\xe9")


def test_line_readers(tmp_path):
  lines = _same(tmp_path, "lines.txt", "first line\nsecond\n",
                lambda p: list(input_checks.read_text_lines(p)))
  assert lines == [(1, "first line\n"), (2, "second\n")]
  with file_io.open_text(_pair(tmp_path, "open.txt", "a,b\nc,d\n")[1]) as handle:
    assert list(handle) == ["a,b\n", "c,d\n"]


def test_conll_reader(tmp_path):
  from bert.tagging import tagging_data  # pylint: disable=g-import-not-at-top
  text = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
          "Peter NNP B-NP B-PER\n\n")
  examples = _same(tmp_path, "valid.txt", text, tagging_data.read_conll)
  assert [e.words for e in examples] == [["EU", "rejects"], ["Peter"]]
  assert tagging_data.label_list_from(examples, iob=True) == ["O", "B-ORG", "B-PER"]


def test_tsv_csv_and_multilabel_readers(tmp_path):
  from bert.classifier import classifier_examples  # pylint: disable=g-import-not-at-top
  from bert.multilabel import multilabel_data  # pylint: disable=g-import-not-at-top
  rows = _same(tmp_path, "train.tsv", "label\ttext\n1\tgood\n",
               classifier_examples.read_delimited)
  assert rows == [(1, ["label", "text"]), (2, ["1", "good"])]
  assert _same(tmp_path, "labels.txt", "PER\nLOC\n", multilabel_data.read_label_list) == [
      "PER", "LOC"]
  examples = _same(tmp_path, "ml.tsv", "EU rejects\tORG\n",
                   lambda p: multilabel_data.read_examples(p, ["PER", "ORG"]))
  assert examples[0].text == "EU rejects"


def test_swag_csv_reader(tmp_path):
  from bert.swag import swag_data  # pylint: disable=g-import-not-at-top
  # fold-ind first: a mark left on the header would hide the column the example id is read from.
  text = ("fold-ind,video-id,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
          "ending3,label\n7,v1,\"A man sits. He\",A man sits.,He,gold,walks.,eats.,sings.,"
          "reads.,0\n")
  examples = _same(tmp_path, "val.csv", text, swag_data.read_swag_examples)
  assert examples[0].example_id == "7"


def test_json_readers(tmp_path):
  from bert.squad import squad_metrics  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  import tiny  # pylint: disable=g-import-not-at-top
  assert _same(tmp_path, "predictions.json", '{"q1": "the mat"}',
               squad_metrics.load_json) == {"q1": "the mat"}
  config = json.dumps(tiny.tiny_config_dict(50))
  assert _same(tmp_path, "bert_config.json", config, model_config.load_bert_config,
               lambda c: json.dumps(c.to_dict(), sort_keys=True)) is not None
  _same(tmp_path, "template.json", config, modeling.BertConfig.from_json_file,
        lambda c: json.dumps(c.to_dict(), sort_keys=True))


def test_vocab_and_plain_text_inputs(tmp_path):
  from bert.extraction import extraction_activations  # pylint: disable=g-import-not-at-top
  from bert.pretraining import pretraining_corpus  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  vocab = _same(tmp_path, "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n",
                lambda p: list(tokenization.load_vocab(p)))
  assert vocab[0] == "[PAD]"
  examples = _same(tmp_path, "input.txt", "the cat ||| the mat\n",
                   extraction_activations.read_examples)
  assert (examples[0].text_a, examples[0].text_b) == ("the cat", "the mat")

  def documents(path):
    return list(pretraining_corpus.read_documents([path], "strict", {
        "lines": 0, "skipped_lines": 0, "chars": 0}))

  assert documents(_pair(tmp_path, "corpus.txt", "one.\ntwo.\n")[1]) == documents(
      _pair(tmp_path, "corpus.txt", "one.\ntwo.\n")[0])


def test_no_reader_handles_the_mark_by_itself():
  """One place (file_io's decode_text and open_text): no other module
  of the package or tool decodes with "utf-8-sig" or strips U+FEFF itself."""
  offenders = []
  for folder in ("bert", "tools"):
    for parent, _, names in os.walk(os.path.join(ROOT, folder)):
      for name in names:
        path = os.path.join(parent, name)
        if not name.endswith(".py") or path == os.path.join(ROOT, "bert", "utils",
                                                            "file_io.py"):
          continue
        with open(path, "rb") as handle:
          for token in tokenize.tokenize(handle.readline):
            if token.type == tokenize.STRING and re.search(
                r"utf-?8-sig|\\ufeff|\ufeff", token.string, re.IGNORECASE):
              offenders.append(f"{os.path.relpath(path, ROOT)}:{token.start[0]}")
  assert offenders == []
