"""Multi-label classification: labels.txt and TSV reading, features, results file, the
metrics against hand-computed values, the loss against NumPy, the CoNLL converter."""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import metrics
from bert.multilabel import multilabel_data
from bert import tokenization
from bert.utils import errors
from conftest import ROOT, shared_path

LABELS = ["LOC", "MISC", "ORG", "PER"]


def write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


# --------------------------------------------------------------------------- reading


def test_label_list_and_its_refusals(tmp_path):
  assert multilabel_data.read_label_list(write(tmp_path / "l.txt", "\ufeffb\n a \n\nc\n")) == [
      "b", "a", "c"]
  for text, message in [("a\na\n", r"l.txt:2: label 'a' is listed twice \(first on line 1\)"),
                        ("a\nb,c\n", r"l.txt:2: label 'b,c' has a comma or a space"),
                        ("two words\n", r"l.txt:1: label 'two words' has a comma"),
                        ("\n\n", r"l.txt: no labels")]:
    with pytest.raises(errors.UserError, match=message):
      multilabel_data.read_label_list(write(tmp_path / "l.txt", text))


def test_reads_texts_and_label_sets(tmp_path):
  path = write(tmp_path / "train.tsv",  # a byte-order mark is not part of the text
               "\ufeffEU rejects German call .\tMISC,ORG\nPeter Blackburn\tPER\n\n"
               "No entity here .\t\nLeft , right\tPER , LOC\r\n")
  examples = multilabel_data.read_examples(path, LABELS)
  assert [(e.text, e.labels, e.line_number) for e in examples] == [
      ("EU rejects German call .", ["MISC", "ORG"], 1), ("Peter Blackburn", ["PER"], 2),
      ("No entity here .", [], 4), ("Left , right", ["PER", "LOC"], 5)]
  np.testing.assert_array_equal(multilabel_data.label_matrix(examples, LABELS), [
      [0, 1, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0], [1, 0, 0, 1]])
  test = multilabel_data.read_examples(write(tmp_path / "test.tsv", "a b\nc\n"), LABELS,
                                       require_labels=False)
  assert [(e.text, e.labels) for e in test] == [("a b", None), ("c", None)]
  test = multilabel_data.read_examples(write(tmp_path / "test.tsv", "a\tPER\nc\t\n"),
                                       LABELS, require_labels=False)
  assert [(e.text, e.labels) for e in test] == [("a", ["PER"]), ("c", [])]


@pytest.mark.parametrize("text,require,message", [
    ("a\tPER\nb\n", True, r"t.tsv:2: 1 tab-separated fields, expected text<TAB>labels"),
    ("a\tb\tPER\n", True, r"t.tsv:1: 3 tab-separated fields, expected text<TAB>labels "
                          r"\(an example without labels ends with a tab; a tab inside"),
    ("a\tPER\nb\tper\n", True, r"t.tsv:2: unknown label 'per'; labels_file has LOC, MISC, "
                               r"ORG, PER$"),
    ("text\tlabels\n", True, r"t.tsv:1: unknown label 'labels'; .* \(a header line\? "),
    ("a\tPER,,LOC\n", True, r"t.tsv:1: empty label in 'PER,,LOC' \(two commas\?\)"),
    ("a\tPER,PER\n", True, r"t.tsv:1: a label is written twice in 'PER,PER'"),
    (" \tPER\n", True, r"t.tsv:1: the text is empty"),
    ("\n\n", True, r"t.tsv: no examples"),
    ("a\nb\tPER\n", False, r"t.tsv:2: 2 tab-separated fields, the file's first line has 1"),
    ("a\tPER\tx\n", False, r"t.tsv:1: 3 tab-separated fields, expected text<TAB>labels "
     r"or text alone \(an example"),
])
def test_ambiguous_or_bad_lines_are_refused(tmp_path, text, require, message):
  with pytest.raises(errors.UserError, match=message):
    multilabel_data.read_examples(write(tmp_path / "t.tsv", text), LABELS, require)


def test_features_pack_one_text_and_multi_hot_labels():
  tokenizer = tokenization.FullTokenizer(shared_path("vocab", "uncased_vocab.txt"))
  examples = [multilabel_data.MultiLabelExample("Peter Blackburn", ["PER"], 1),
              multilabel_data.MultiLabelExample("EU rejects German call to boycott", [], 2)]
  features = multilabel_data.convert_examples_to_features(examples, LABELS, 6, tokenizer)
  assert [tokenizer.convert_ids_to_tokens(row) for row in features["input_ids"]] == [
      ["[CLS]", "peter", "blackburn", "[SEP]", "[PAD]", "[PAD]"],
      ["[CLS]", "eu", "rejects", "german", "call", "[SEP]"]]
  assert features["input_mask"].tolist() == [[1, 1, 1, 1, 0, 0], [1] * 6]
  assert features["segment_ids"].tolist() == [[0] * 6] * 2
  assert features["label_ids"].dtype == np.float32
  assert features["label_ids"].tolist() == [[0, 0, 0, 1], [0, 0, 0, 0]]


def test_results_file_byte_for_byte(tmp_path):
  path = str(tmp_path / "test_results.tsv")
  multilabel_data.write_results(path, LABELS, np.array([[0.9, 0.1, 0.5, 0.2],
                                                        [0.0, 0.25, 0.4999999, 1.0]]), 0.5)
  assert open(path, encoding="utf-8").read() == (
      "labels\tLOC\tMISC\tORG\tPER\n"
      "LOC,ORG\t0.900000\t0.100000\t0.500000\t0.200000\n"
      "PER\t0.000000\t0.250000\t0.500000\t1.000000\n")


# --------------------------------------------------------------------------- metrics


def test_multi_label_metrics_hand_computed():
  labels = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
  predictions = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 0]])
  # a: tp 2 fp 0 fn 0 -> 1; b: tp 2 -> 1; c: tp 0 fp 1 fn 1 -> 0. Micro: tp 4 fp 1 fn 1.
  assert metrics.multi_label_metrics(predictions, labels, ["a", "b", "c"]) == {
      "micro_precision": 4 / 5, "micro_recall": 4 / 5, "micro_f1": 8 / 10,
      "macro_f1": 2 / 3, "subset_accuracy": 2 / 4, "f1_a": 1.0, "f1_b": 1.0, "f1_c": 0.0}
  # A label never present nor predicted scores 0 (scikit-learn's zero_division default).
  nothing = metrics.multi_label_metrics(np.zeros((2, 2)), np.zeros((2, 2)), ["x", "y"])
  assert (nothing["micro_f1"], nothing["macro_f1"], nothing["subset_accuracy"]) == (
      0.0, 0.0, 1.0)
  with pytest.raises(ValueError, match="3 names"):
    metrics.multi_label_metrics(np.zeros((2, 2)), np.zeros((2, 2)), ["x", "y", "z"])


def test_sigmoid_and_cross_entropy_against_the_definition():
  logits = np.array([[-3.0, 0.0, 2.5], [40.0, -40.0, 0.7]])
  labels = np.array([[0, 1, 1], [1, 0, 0]], np.float64)
  p = 1 / (1 + np.exp(-logits))
  np.testing.assert_allclose(metrics.sigmoid(logits), p, rtol=1e-15)
  assert metrics.sigmoid(np.array([-1000.0, 1000.0])).tolist() == [0.0, 1.0]
  with np.errstate(divide="ignore"):  # np.where evaluates log(1 - 1) too
    naive = np.mean(np.where(labels == 1, -np.log(p), -np.log(1 - p)), axis=-1)
  np.testing.assert_allclose(metrics.sigmoid_cross_entropy(logits, labels), naive,
                             rtol=1e-12, atol=1e-15)


def test_loss_matches_numpy_and_eval_loss():
  rng = np.random.default_rng(3)
  logits = rng.normal(size=(5, 4)).astype(np.float32) * 3
  labels = (rng.random((5, 4)) < 0.4).astype(np.float32)
  labels[0] = (logits[0] >= 0)  # one row predicted exactly right
  per_example, pairs = heads.multi_label_loss({"label_ids": tf.constant(labels)},
                                              {"logits": tf.constant(logits)}, 0.5)
  p = 1 / (1 + np.exp(-logits.astype(np.float64)))
  expected = np.mean(-(labels * np.log(p) + (1 - labels) * np.log(1 - p)), axis=-1)
  np.testing.assert_allclose(per_example.numpy(), expected, rtol=1e-5)
  exact = np.sum(np.all((p >= 0.5) == labels.astype(bool), axis=-1))
  assert exact >= 1
  assert [float(v) for v in pairs["accuracy"]] == [exact, 5.0]
  values = multilabel_data.eval_values(logits, labels, LABELS, 0.5)
  assert values["eval_loss"] == pytest.approx(float(np.mean(expected)), rel=1e-6)
  assert values["eval_accuracy"] == exact / 5
  high = heads.multi_label_loss({"label_ids": tf.constant(labels)},
                                {"logits": tf.constant(logits)}, threshold=0.99)[1]
  assert float(high["accuracy"][0]) == np.sum(np.all((p >= 0.99) == labels, axis=-1))


# --------------------------------------------------------------------------- converter


CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP B-NP I-PER

BRUSSELS NNP B-NP B-LOC
1996-08-22 CD I-NP O

Nothing NN B-NP O
"""


def _convert(conll_dir, out):
  return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "conll_entity_types.py"),
                         str(conll_dir), str(out)], capture_output=True, text=True,
                        timeout=120)


def test_conll_converter_writes_the_entity_types(tmp_path):
  for name in ("train.txt", "valid.txt", "test.txt"):
    (tmp_path / name).write_text(CONLL, encoding="utf-8")
  proc = _convert(tmp_path, tmp_path / "out")
  assert proc.returncode == 0, proc.stderr
  assert (tmp_path / "out" / "labels.txt").read_text() == "LOC\nMISC\nORG\nPER\n"
  expected = ("EU rejects German\tMISC,ORG\nPeter Blackburn\tPER\n"
              "BRUSSELS 1996-08-22\tLOC\nNothing\t\n")
  for name in ("train.tsv", "dev.tsv", "test.tsv"):
    assert (tmp_path / "out" / name).read_text() == expected
  assert proc.stdout.splitlines()[0] == (
      "train.tsv (sentences)=4 LOC=1 MISC=1 ORG=1 PER=1")
  (tmp_path / "test.txt").write_text("Peter NNP B-NP PER\n", encoding="utf-8")
  proc = _convert(tmp_path, tmp_path / "out2")
  assert proc.returncode == 2
  assert proc.stderr.strip() == ("conll_entity_types.py: error: test.txt-0 (line 1): tag "
                                 "'PER' is neither O nor B-TYPE / I-TYPE")
