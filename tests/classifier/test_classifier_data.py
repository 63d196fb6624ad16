"""classifier_data, the family's reader: every processor on the real GLUE files, its errors;
and classifier_examples' output files (GLUE submissions, probabilities)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert.classifier import classifier_examples as ce
from bert.classifier import classifier_data
from bert.utils import errors
from conftest import ROOT, shared_path
import tiny


def _generic(task, **columns):
  """The tsv/csv task's processor with these DelimitedFileOptions fields."""
  return classifier_data.get_processor(task, columns=ce.DelimitedFileOptions(**columns))


def _glue(task):
  return shared_path("glue", task)


def _sample(task=""):
  return shared_path("glue_format_samples", task) if task else shared_path("glue_format_samples")


# --------------------------------------------------------------------------- real GLUE files


def test_mrpc_reads_bom_file_and_unbalanced_quotes():
  p = classifier_data.get_processor("MRPC")
  train = p.get_train_examples(_glue("MRPC"))
  dev = p.get_dev_examples(_glue("MRPC"))
  test = p.get_test_examples(_glue("MRPC"))
  # Official row counts: a quoting reader would merge rows at the unbalanced quotes.
  assert (len(train), len(dev), len(test)) == (3668, 408, 1725)
  assert train[0] == ce.InputExample(
      guid="train-1",
      text_a='Amrozi accused his brother, whom he called "the witness", of deliberately '
             'distorting his evidence.',
      text_b='Referring to him as only "the witness", Amrozi accused his brother of '
             'deliberately distorting his evidence.',
      label="1")
  assert dev[0].text_b == '"The foodservice pie business does not fit our long-term growth strategy.'
  assert train[-1].guid == "train-3668" and train[-1].label == "0"
  assert train[-1].text_a.startswith("The 30-year bond US30YT=RR rose 22/32")
  assert [sum(e.label == lab for e in train) for lab in ("0", "1")] == [1194, 2474]
  assert test[0].label is None and test[0].guid == "test-0" and test[-1].guid == "test-1724"
  assert not any("\ufeff" in e.text_a or "\ufeff" in e.text_b for e in train + dev)
  assert p.get_labels() == ["0", "1"] and p.metric == "accuracy_f1" and p.num_texts == 2


def test_cola_no_header_in_train_dev():
  p = classifier_data.get_processor("cola")
  train = p.get_train_examples(_glue("CoLA"))
  dev = p.get_dev_examples(_glue("CoLA"))
  assert (len(train), len(dev)) == (8551, 1043)
  assert train[0] == ce.InputExample(
      "train-0", "Our friends won't buy this analysis, let alone the next one we propose.",
      None, "1")
  assert dev[0] == ce.InputExample("dev-0", "The sailors rode the breeze clear of the rocks.",
                                   None, "1")
  assert train[-1].text_a == "What all did you get for Christmas?"
  assert [sum(e.label == lab for e in dev) for lab in ("0", "1")] == [324, 719]
  assert p.metric == "matthews" and p.submission_file == "CoLA.tsv" and p.num_texts == 1


def test_cola_test_file_layout(tmp_path):
  # GLUE's CoLA test.tsv: header "index<TAB>sentence".
  (tmp_path / "test.tsv").write_text("index\tsentence\n0\tBill whistled.\n1\tHe left.\n")
  test = classifier_data.ColaProcessor().get_test_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.label) for e in test] == [
      ("test-0", "Bill whistled.", None), ("test-1", "He left.", None)]


def test_sst2_names_and_columns():
  for name in ("sst2", "SST-2"):
    assert isinstance(classifier_data.get_processor(name), classifier_data.Sst2Processor)
  p = classifier_data.Sst2Processor()
  dev = p.get_dev_examples(_glue("SST-2"))
  test = p.get_test_examples(_glue("SST-2"))
  assert len(dev) == 872 and len(test) == 1821
  assert dev[0] == ce.InputExample("dev-1", "it 's a charming and often affecting journey . ",
                                   None, "1")
  assert [sum(e.label == lab for e in dev) for lab in ("0", "1")] == [428, 444]
  assert test[0].text_a == "uneasy mishmash of styles and genres ."
  assert test[-1].guid == "test-1820"


def test_stsb_is_regression_with_float_labels():
  p = classifier_data.get_processor("sts-b")
  dev = p.get_dev_examples(_glue("STS-B"))
  assert len(dev) == 1500 and p.is_regression and p.get_labels() is None
  assert p.num_outputs == 1
  assert dev[0] == ce.InputExample("dev-1", "A man with a hard hat is dancing.",
                                   "A man wearing a hard hat is dancing.", 5.0)
  assert dev[-1].label == 0.0 and dev[-1].text_b.startswith("New York police officer")
  assert len(p.get_train_examples(_glue("STS-B"))) == 5749
  assert len(p.get_test_examples(_glue("STS-B"))) == 1379
  assert p.format_prediction(3.14159) == "3.142"


def test_rte():
  p = classifier_data.get_processor("rte")
  dev = p.get_dev_examples(_glue("RTE"))
  assert len(dev) == 277 and len(p.get_train_examples(_glue("RTE"))) == 2490
  assert dev[0].text_b == "Christopher Reeve had an accident." and dev[0].label == "not_entailment"
  assert [sum(e.label == lab for e in dev) for lab in p.get_labels()] == [146, 131]
  assert len(p.get_test_examples(_glue("RTE"))) == 3000
  assert p.submission_file == "RTE.tsv"


# --------------------------------------------------------------------------- sample files


def test_qqp_qnli_wnli_samples():
  qqp = classifier_data.get_processor("qqp")
  dev = qqp.get_dev_examples(_sample("QQP"))
  assert dev[0] == ce.InputExample("dev-1", "Why are African-Americans so beautiful?",
                                   "Why are hispanics so beautiful?", "0")
  assert [e.label for e in qqp.get_train_examples(_sample("QQP"))] == ["0", "1", "0"]
  test = qqp.get_test_examples(_sample("QQP"))
  assert test[0].guid == "test-0" and test[0].text_a.startswith("Would the idea of Trump")
  assert test[0].text_b.startswith("Do you think that if Donald Trump")

  qnli = classifier_data.get_processor("qnli")
  dev = qnli.get_dev_examples(_sample("QNLI"))
  assert [e.label for e in dev] == ["entailment", "not_entailment"]
  assert dev[0].text_a == "What came into force after the new constitution was herald?"
  assert qnli.get_test_examples(_sample("QNLI"))[0].text_a == (
      "What organization is devoted to Jihad against Israel?")

  wnli = classifier_data.get_processor("wnli")
  dev = wnli.get_dev_examples(_sample("WNLI"))
  assert [(e.text_b, e.label) for e in dev] == [("The hair has to be cleaned.", "0"),
                                                ("Susan did not answer.", "1")]
  assert wnli.get_test_examples(_sample("WNLI"))[0].text_b == (
      "Horses ran away when Maude and Dora came in sight.")


def test_mnli_two_dev_sets_two_test_sets_and_ax():
  p = classifier_data.get_processor("MNLI")
  data_dir = _sample("MNLI")
  train = p.get_train_examples(data_dir)
  assert train[0] == ce.InputExample(
      "train-0", "Conceptually cream skimming has two basic dimensions - product and geography.",
      "Product and geography are what make cream skimming work. ", "neutral")
  eval_sets = p.get_eval_sets(data_dir)
  assert [(s.name, s.key_prefix, len(s.examples)) for s in eval_sets] == [
      ("dev_matched", "eval_", 2), ("dev_mismatched", "eval_mismatched_", 2)]
  assert eval_sets[0].examples[0].guid == "dev_matched-0"
  assert eval_sets[0].examples[0].text_a == "The new rights are nice enough"
  assert eval_sets[1].examples[0].label == "contradiction"
  predict_sets = p.get_predict_sets(data_dir)  # ax.tsv sits in the parent folder
  assert [(s.name, s.results_file, s.submission_file, len(s.examples)) for s in predict_sets] == [
      ("test_matched", "test_results.tsv", "MNLI-m.tsv", 1),
      ("test_mismatched", "test_results_mismatched.tsv", "MNLI-mm.tsv", 1),
      ("ax", "test_results_ax.tsv", "AX.tsv", 3)]
  assert predict_sets[2].examples[0] == ce.InputExample(
      "ax-0", "The cat sat on the mat.", "The cat did not sit on the mat.", None)


def test_xnli_language_filter_and_contradictory(tmp_path):
  data_dir = _sample()
  zh = classifier_data.get_processor("xnli")
  assert zh.language == "zh"
  train = zh.get_train_examples(data_dir)
  assert len(train) == 4 and train[0].text_b == "产品 和 地理 是 什么 使 奶油 抹 霜 工作 ."
  dev = zh.get_dev_examples(data_dir)
  assert [(e.guid, e.text_a, e.label) for e in dev] == [("dev-15", "他说，妈妈，我回来了。", "neutral")]
  de = classifier_data.get_processor("xnli", xnli_language="de")
  assert de.get_dev_examples(data_dir)[0].guid == "dev-3"
  # The MT train files spell one label "contradictory"; the original maps it.
  (tmp_path / "multinli").mkdir()
  (tmp_path / "multinli" / "multinli.train.fr.tsv").write_text(
      "premise\thypo\tlabel\nA\tB\tcontradictory\nC\tD\tentailment\n")
  fr = classifier_data.get_processor("xnli", xnli_language="fr").get_train_examples(str(tmp_path))
  assert [e.label for e in fr] == ["contradiction", "entailment"]


# --------------------------------------------------------------------------- errors


def _error(fn):
  # errors.UserError, which file_io.read_bytes raises too.
  with pytest.raises(errors.UserError) as info:
    fn()
  message = str(info.value)
  assert "\n" not in message
  return message


def test_short_row_names_file_and_line(tmp_path):
  (tmp_path / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n"
                                    "0\ta\tb\tentailment\n1\tonly two\n")
  message = _error(lambda: classifier_data.RteProcessor().get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.tsv'}:3: too few columns")
  assert "the row has 2" in message


def test_unknown_label_empty_split_missing_file(tmp_path):
  (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood\t1\nbad\tpositive\n")
  message = _error(lambda: classifier_data.Sst2Processor().get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.tsv'}:3: unknown label 'positive'")
  (tmp_path / "dev.tsv").write_text("sentence\tlabel\n")
  message = _error(lambda: classifier_data.Sst2Processor().get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.tsv'}: no examples in the dev split")
  message = _error(lambda: classifier_data.Sst2Processor().get_test_examples(str(tmp_path)))
  assert message == f"{tmp_path / 'test.tsv'}: no such file; check --data_dir"
  (tmp_path / "train.tsv").write_text("index\tg\tf\ty\to\ts1\ts2\ta\tb\tscore\n"
                                      "0\tg\tf\ty\to\ts\ts\tA.\tB.\thigh\n")
  message = _error(lambda: classifier_data.StsbProcessor().get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.tsv'}:2: label 'high' is not a finite number")
  assert "unknown task" in _error(lambda: classifier_data.get_processor("glue"))


def test_invalid_utf8_names_line(tmp_path):
  (tmp_path / "dev.tsv").write_bytes(b"sentence\tlabel\nok\t1\nbad \xff\t0\n")
  message = _error(lambda: classifier_data.Sst2Processor().get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.tsv'}:3: not valid UTF-8")


# One file per processor and split in the task's real layout (header fields, or None for
# CoLA's headerless train/dev), a good row, and one text column of the row: a tab put
# inside that sentence must be refused, not read as shifted columns.
LAYOUTS = {
    "cola": ("train.tsv", None, ["gj04", "1", "", "The cat sat."], 3),
    "cola-test": ("test.tsv", ["index", "sentence"], ["0", "The cat sat."], 1),
    "sst2": ("train.tsv", ["sentence", "label"], ["a fine film", "1"], 0),
    "mrpc": ("train.tsv", ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
             ["1", "11", "12", "The cat sat.", "A cat sat."], 3),
    "stsb": ("dev.tsv", ["index", "genre", "filename", "year", "old_index", "source1",
                         "source2", "sentence1", "sentence2", "score"],
             ["0", "g", "f", "2012", "1", "s", "s", "A man.", "A woman.", "2.500"], 7),
    "qqp": ("train.tsv", ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
            ["0", "1", "2", "Why?", "Why not?", "0"], 3),
    "qqp-test": ("test.tsv", ["id", "question1", "question2"], ["0", "Why?", "How?"], 1),
    "qnli": ("dev.tsv", ["index", "question", "sentence", "label"],
             ["0", "Who?", "Him.", "entailment"], 1),
    "rte": ("train.tsv", ["index", "sentence1", "sentence2", "label"],
            ["0", "A b.", "C d.", "not_entailment"], 1),
    "wnli": ("train.tsv", ["index", "sentence1", "sentence2", "label"],
             ["0", "A b.", "C d.", "1"], 2),
    "mnli": ("train.tsv", ["index", "promptID", "pairID", "genre", "s1bp", "s2bp", "s1p",
                           "s2p", "sentence1", "sentence2", "label1", "gold_label"],
             ["0", "1", "1n", "fiction", "(", "(", "(", "(", "A b.", "C d.", "neutral",
              "neutral"], 8),
    "mnli-dev": ("dev_matched.tsv", ["index", "promptID", "pairID", "genre", "s1bp",
                                     "s2bp", "s1p", "s2p", "sentence1", "sentence2",
                                     "label1", "label2", "label3", "label4", "label5",
                                     "gold_label"],
                 ["0", "1", "1n", "fiction", "(", "(", "(", "(", "A b.", "C d.", "neutral",
                  "neutral", "neutral", "neutral", "neutral", "neutral"], 9),
    "mnli-test": ("test_mismatched.tsv", ["index", "promptID", "pairID", "genre", "s1bp",
                                          "s2bp", "s1p", "s2p", "sentence1", "sentence2"],
                  ["0", "1", "1n", "fiction", "(", "(", "(", "(", "A b.", "C d."], 8),
    "mnli-ax": ("ax.tsv", ["index", "sentence1", "sentence2"], ["0", "A b.", "C d."], 1),
    "xnli": ("multinli/multinli.train.zh.tsv", ["premise", "hypo", "label"],
             ["A b.", "C d.", "contradictory"], 0),
    "xnli-dev": ("xnli.dev.tsv", ["language", "gold_label"] + [f"c{i}" for i in range(17)],
                 ["zh", "neutral", "(", "(", "(", "(", "A b.", "C d."] + ["x"] * 11, 6),
    "tsv": ("train.tsv", None, ["a fine film", "pos"], 0),
}


def _read_layout(name, directory):
  task = name.split("-")[0]
  processor = classifier_data.get_processor(
      task, columns=ce.DelimitedFileOptions(label_list=["pos", "neg"]) if task == "tsv" else None)
  split = name.split("-")[1] if "-" in name else "train"
  file_name = LAYOUTS[name][0]
  if split == "ax":
    return processor.get_ax_examples(directory)
  if split == "test":
    if file_name == "test_mismatched.tsv":
      return processor.get_test_mismatched_examples(directory)
    return processor.get_test_examples(directory)
  if split == "dev" or file_name == "dev.tsv":
    return processor.get_dev_examples(directory)
  return processor.get_train_examples(directory)


def _write_layout(directory, name, rows):
  file_name, header, _, _ = LAYOUTS[name]
  path = os.path.join(directory, file_name)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  lines = ([header] if header else []) + rows
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("".join("\t".join(fields) + "\n" for fields in lines))
  return path


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_reader_refuses_a_tab_inside_a_sentence(tmp_path, name):
  _, header, good, text_column = LAYOUTS[name]
  directory = str(tmp_path)
  _write_layout(directory, name, [good, good])
  examples = _read_layout(name, directory)
  assert len(examples) == 2
  assert good[text_column] in (examples[0].text_a, examples[0].text_b)
  # The same rows, the second one's text holding a tab: one field more.
  shifted = list(good)
  shifted[text_column] = "The cat\tsat."
  path = _write_layout(directory, name, [good, shifted])
  line = 3 if header else 2
  width = len(header or good)
  source = "the header (line 1) has" if header else (
      "this task's rows have" if name == "cola" else "the first row (line 1) has")
  message = _error(lambda: _read_layout(name, directory))
  assert message.startswith(f"{path}:{line}: too many columns: the row has {width + 1}, "
                            f"{source} {width}; a tab inside a text shifts the columns")


def test_a_short_row_cannot_take_its_label_from_another_column(tmp_path):
  """MNLI's label is the last column: a dev row one column short would read label5."""
  name = "mnli-dev"
  good = LAYOUTS[name][2]
  short = good[:-1]
  short[-1] = "contradiction"
  path = _write_layout(str(tmp_path), name, [good, short])
  message = _error(lambda: _read_layout(name, str(tmp_path)))
  assert message.startswith(f"{path}:3: too few columns: the row has 15, the header "
                            "(line 1) has 16; check the delimiter")


def test_cola_file_of_five_columns_is_not_cola(tmp_path):
  (tmp_path / "train.tsv").write_text("gj04\t1\t\tThe cat sat.\textra\n")
  message = _error(lambda: classifier_data.ColaProcessor().get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.tsv'}:1: too many columns: the row has 5, "
                            "this task's rows have 4")


def test_regression_labels_must_be_finite(tmp_path):
  header = "\t".join(LAYOUTS["stsb"][1])
  for label in ("nan", "inf", "-Infinity", "1e999"):
    (tmp_path / "dev.tsv").write_text(f"{header}\n0\tg\tf\ty\to\ts\ts\tA.\tB.\t{label}\n")
    message = _error(lambda: classifier_data.StsbProcessor().get_dev_examples(str(tmp_path)))
    assert message == (f"{tmp_path / 'dev.tsv'}:2: label {label!r} is not a finite number "
                       "(this is a regression task)")
  (tmp_path / "dev.tsv").write_text(f"{header}\n0\tg\tf\ty\to\ts\ts\tA.\tB.\t 4.5 \n")
  assert classifier_data.StsbProcessor().get_dev_examples(str(tmp_path))[0].label == 4.5


def test_submission_refuses_a_prediction_count_that_differs(tmp_path):
  examples = [ce.InputExample("test-0", "a", "b"), ce.InputExample("test-1", "c", "d")]
  with pytest.raises(ValueError):
    ce.write_submission(str(tmp_path / "RTE.tsv"), classifier_data.RteProcessor(), examples,
                        np.array([1, 0, 1]))
  assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- tsv / csv task


def test_generic_tsv_by_number_with_inferred_labels(tmp_path):
  (tmp_path / "train.tsv").write_text("b\tthe movie\tyes\na\tan \"odd title\tno\n")
  (tmp_path / "test.tsv").write_text("x\ty\n")
  p = _generic("tsv", text_a_column="1", text_b_column="2", label_column="0")
  p.set_data_dir(str(tmp_path))
  assert p.get_labels() == ["a", "b"] and p.num_texts == 2
  train = p.get_train_examples(str(tmp_path))
  assert [(e.text_a, e.text_b, e.label) for e in train] == [
      ("the movie", "yes", "b"), ('an "odd title', "no", "a")]
  test = _generic("tsv", text_a_column="0", text_b_column="1",
                   label_list=["a", "b"]).get_test_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.text_b, e.label) for e in test] == [("test-0", "x", "y", None)]


def test_generic_csv_with_header_names_and_quotes(tmp_path):
  (tmp_path / "train.csv").write_text('id,review,stars\n1,"Great, really",pos\n2,Meh,neg\n')
  (tmp_path / "dev.csv").write_text('id,review,stars\n3,"Said ""no""",neu\n')
  p = _generic("csv", text_a_column="review", label_column="stars", has_header=True,
                   label_list=["neg", "pos"])
  train = p.get_train_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.label) for e in train] == [
      ("train-1", "Great, really", "pos"), ("train-2", "Meh", "neg")]
  message = _error(lambda: p.get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.csv'}:2: unknown label 'neu'")
  bad = _generic("csv", text_a_column="text", label_column="stars", has_header=True)
  assert "no column named 'text'" in _error(lambda: bad.get_train_examples(str(tmp_path)))


def test_generic_task_rows_must_match_the_first_row_or_header(tmp_path):
  (tmp_path / "train.tsv").write_text("the movie\tpos\nan odd\ttitle\tneg\n")
  p = classifier_data.get_processor("tsv")
  p.set_data_dir(str(tmp_path))
  # Label inference reads the same rows: it must not take "title" as a label.
  message = _error(p.get_labels)
  assert message.startswith(f"{tmp_path / 'train.tsv'}:2: too many columns: the row has 3, "
                            "the first row (line 1) has 2")
  (tmp_path / "train.csv").write_text("review,stars\nfine,pos\ntoo,many,neg\nshort\n")
  p = _generic("csv", text_a_column="review", label_column="stars", has_header=True,
                   label_list=["neg", "pos"])
  message = _error(lambda: p.get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.csv'}:3: too many columns: the row has 3, "
                            "the header (line 1) has 2; a ',' inside a text shifts the "
                            "columns: remove it or quote the text")


def test_generic_csv_refuses_unclosed_and_stray_quotes(tmp_path):
  (tmp_path / "train.csv").write_text('fine,pos\n"never closed,neg\nlater,pos\nmore,neg\n')
  p = _generic("csv", label_list=["neg", "pos"])
  message = _error(lambda: p.get_train_examples(str(tmp_path)))
  # Without strict parsing the open quote swallowed every later row into one field.
  assert message.startswith(f"{tmp_path / 'train.csv'}:2: cannot parse the row "
                            "(unexpected end of data)")
  (tmp_path / "train.csv").write_text('fine,pos\n"quoted" tail,neg\n')
  message = _error(lambda: p.get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.csv'}:2: cannot parse the row")
  (tmp_path / "train.csv").write_text('He said "hi" there,pos\n"a ""b"", c",neg\n')
  assert [e.text_a for e in p.get_train_examples(str(tmp_path))] == [
      'He said "hi" there', 'a "b", c']


def test_generic_columns_must_be_unambiguous(tmp_path):
  (tmp_path / "train.csv").write_text("text,text,label\na,b,pos\n")
  p = _generic("csv", text_a_column="text", label_column="label", has_header=True)
  assert _error(lambda: p.get_train_examples(str(tmp_path))) == (
      f"{tmp_path / 'train.csv'}:1: the header names 'text' 2 times; use a 0-based column "
      "number")
  p = _generic("csv", text_a_column="1", label_column="1", label_list=["pos"])
  assert _error(lambda: p.get_train_examples(str(tmp_path))) == (
      f"{tmp_path / 'train.csv'}: the text_a and label columns are both column 1; give "
      "each its own column")
  p = _generic("csv", text_a_column="--1", label_list=["pos"])
  assert "is a name, but the file has no header" in _error(
      lambda: p.get_train_examples(str(tmp_path)))


def test_label_list_given_twice_or_empty_is_refused():
  assert _error(lambda: _generic("tsv", label_list=["a", "b", "a"])) == (
      "--label_list=a,b,a: 'a' is given 2 times; each label once, in label-id order")
  assert _error(lambda: _generic("csv", label_list=["a", " "])) == (
      "--label_list=a, : holds an empty label")
  assert _generic("tsv", label_list=["b", "a"]).get_labels() == ["b", "a"]


def test_inferred_labels_refuse_an_empty_label(tmp_path):
  (tmp_path / "train.tsv").write_text("good\tpos\nfine\t \n")
  p = classifier_data.get_processor("tsv")
  p.set_data_dir(str(tmp_path))
  assert _error(p.get_labels).startswith(f"{tmp_path / 'train.tsv'}:2: the label is empty")


# --------------------------------------------------------------------------- outputs


def test_submission_and_probability_files(tmp_path):
  p = classifier_data.RteProcessor()
  examples = [ce.InputExample("test-0", "a", "b"), ce.InputExample("test-1", "c", "d"),
              ce.InputExample("test-2", "e", "f")]
  ce.write_submission(str(tmp_path / "RTE.tsv"), p, examples, np.array([1, 0, 1]))
  assert (tmp_path / "RTE.tsv").read_bytes() == (
      b"index\tprediction\n0\tnot_entailment\n1\tentailment\n2\tnot_entailment\n")
  ce.write_submission(str(tmp_path / "STS-B.tsv"), classifier_data.StsbProcessor(), examples[:2],
                      np.array([4.12345, 0.5]))
  assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t4.123\n1\t0.500\n"
  ce.write_probabilities(str(tmp_path / "test_results.tsv"),
                         np.array([[0.25, 0.75], [1.0, 0.0]], np.float32))
  assert (tmp_path / "test_results.tsv").read_text() == "0.25\t0.75\n1.0\t0.0\n"
  assert sorted(os.listdir(tmp_path)) == ["RTE.tsv", "STS-B.tsv", "test_results.tsv"]


# --------------------------------------------------------------------------- command line

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on",
              "mat", ".", "a", "man", "went", "home"]
TINY_CONFIG = tiny.tiny_config_dict(len(TINY_VOCAB))


def _cli_cases(root):
  """{id: (argv, expected last line prefix, paths that must not exist)} of run_classifier
  runs whose data has a row of the wrong width; each must stop before training."""
  model = root / "model"
  model.mkdir()
  (model / "vocab.txt").write_text("".join(t + "\n" for t in TINY_VOCAB), encoding="utf-8")
  (model / "bert_config.json").write_text(json.dumps(TINY_CONFIG))
  common = [f"--vocab_file={model / 'vocab.txt'}",
            f"--bert_config_file={model / 'bert_config.json'}", "--max_seq_length=16",
            "--train_batch_size=2", "--num_train_epochs=1"]
  mrpc = root / "mrpc"
  mrpc.mkdir()
  (mrpc / "train.tsv").write_text(
      "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
      "1\t1\t2\tthe cat sat .\tthe cat sat on the mat .\n"
      "0\t3\t4\ta man\twent home .\tthe mat .\n", encoding="utf-8")
  generic = root / "generic"
  generic.mkdir()
  (generic / "train.tsv").write_text("the cat sat .\tyes\na man\twent home .\tno\n")
  mnli = root / "mnli"
  mnli.mkdir()
  header = "\t".join(LAYOUTS["mnli-dev"][1])
  good = LAYOUTS["mnli-dev"][2]
  (mnli / "train.tsv").write_text("\t".join(LAYOUTS["mnli"][1]) + "\n" +
                                  "\t".join(LAYOUTS["mnli"][2]) + "\n")
  (mnli / "dev_matched.tsv").write_text(
      header + "\n" + "\t".join(good) + "\n" + "\t".join(good[:8] + ["a\tb"] + good[9:]) +
      "\n")
  (mnli / "dev_mismatched.tsv").write_text(header + "\n" + "\t".join(good) + "\n")
  cases = {}
  for name, task, data, flags, line in (
      ("mrpc", "MRPC", mrpc / "train.tsv", ["--do_train"], 3),
      ("tsv", "tsv", generic / "train.tsv", ["--do_train"], 2),
      ("mnli", "MNLI", mnli / "dev_matched.tsv", ["--do_train", "--do_eval"], 3)):
    out = root / f"out-{name}"
    argv = [f"--task_name={task}", f"--data_dir={data.parent}", f"--output_dir={out}",
            *common, *flags]
    cases[name] = (argv, f"run_classifier.py: error: {data}:{line}: too many columns: ",
                   [out / "checkpoint", out / "eval_results.txt"])
  return cases


def test_run_classifier_refuses_rows_of_the_wrong_width(tmp_path):
  """The real command line (tests/support/cli_harness.py: one process, every case through absl,
  report_user_errors and SystemExit): exit 2, one error line naming file and line."""
  cases = _cli_cases(tmp_path)
  cases_file, results_file = tmp_path / "cases.json", tmp_path / "results.json"
  cases_file.write_text(json.dumps([{"id": k, "argv": v[0]} for k, v in cases.items()]))
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(
      [sys.executable, os.path.join(ROOT, "tests", "support", "cli_harness.py"), "run_classifier.py",
       str(cases_file), str(results_file)], capture_output=True, text=True, env=env,
      cwd=ROOT, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads(results_file.read_text())
  for name, (_, expected, absent) in cases.items():
    result = results[name]
    assert not result["crashed"] and result["exit"] == 2, (name, result["stderr"][-3000:])
    assert "Traceback" not in result["stderr"], name
    error_lines = [l for l in result["stderr"].splitlines() if "error:" in l]
    assert len(error_lines) == 1 and error_lines[0].startswith(expected), (name, error_lines)
    assert result["stderr"].strip().splitlines()[-1] == error_lines[0]
    for path in absent:
      assert not path.exists(), path
