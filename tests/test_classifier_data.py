"""classifier_data: every processor on the real GLUE files, errors, metrics, output files."""
import os

import numpy as np
import pytest

import classifier_data as cd
import script_utils
from conftest import shared_path


def _glue(task):
  return shared_path("glue", task)


def _sample(task=""):
  return shared_path("glue_format_samples", task) if task else shared_path("glue_format_samples")


# --------------------------------------------------------------------------- real GLUE files


def test_mrpc_reads_bom_file_and_unbalanced_quotes():
  p = cd.get_processor("MRPC")
  train = p.get_train_examples(_glue("MRPC"))
  dev = p.get_dev_examples(_glue("MRPC"))
  test = p.get_test_examples(_glue("MRPC"))
  # Official row counts: a quoting reader would merge rows at the unbalanced quotes.
  assert (len(train), len(dev), len(test)) == (3668, 408, 1725)
  assert train[0] == cd.InputExample(
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
  p = cd.get_processor("cola")
  train = p.get_train_examples(_glue("CoLA"))
  dev = p.get_dev_examples(_glue("CoLA"))
  assert (len(train), len(dev)) == (8551, 1043)
  assert train[0] == cd.InputExample(
      "train-0", "Our friends won't buy this analysis, let alone the next one we propose.",
      None, "1")
  assert dev[0] == cd.InputExample("dev-0", "The sailors rode the breeze clear of the rocks.",
                                   None, "1")
  assert train[-1].text_a == "What all did you get for Christmas?"
  assert [sum(e.label == lab for e in dev) for lab in ("0", "1")] == [324, 719]
  assert p.metric == "matthews" and p.submission_file == "CoLA.tsv" and p.num_texts == 1


def test_cola_test_file_layout(tmp_path):
  # GLUE's CoLA test.tsv: header "index<TAB>sentence".
  (tmp_path / "test.tsv").write_text("index\tsentence\n0\tBill whistled.\n1\tHe left.\n")
  test = cd.ColaProcessor().get_test_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.label) for e in test] == [
      ("test-0", "Bill whistled.", None), ("test-1", "He left.", None)]


def test_sst2_names_and_columns():
  for name in ("sst2", "SST-2"):
    assert isinstance(cd.get_processor(name), cd.Sst2Processor)
  p = cd.Sst2Processor()
  dev = p.get_dev_examples(_glue("SST-2"))
  test = p.get_test_examples(_glue("SST-2"))
  assert len(dev) == 872 and len(test) == 1821
  assert dev[0] == cd.InputExample("dev-1", "it 's a charming and often affecting journey . ",
                                   None, "1")
  assert [sum(e.label == lab for e in dev) for lab in ("0", "1")] == [428, 444]
  assert test[0].text_a == "uneasy mishmash of styles and genres ."
  assert test[-1].guid == "test-1820"


def test_stsb_is_regression_with_float_labels():
  p = cd.get_processor("sts-b")
  dev = p.get_dev_examples(_glue("STS-B"))
  assert len(dev) == 1500 and p.is_regression and p.get_labels() is None
  assert p.num_outputs == 1
  assert dev[0] == cd.InputExample("dev-1", "A man with a hard hat is dancing.",
                                   "A man wearing a hard hat is dancing.", 5.0)
  assert dev[-1].label == 0.0 and dev[-1].text_b.startswith("New York police officer")
  assert len(p.get_train_examples(_glue("STS-B"))) == 5749
  assert len(p.get_test_examples(_glue("STS-B"))) == 1379
  assert p.format_prediction(3.14159) == "3.142"


def test_rte():
  p = cd.get_processor("rte")
  dev = p.get_dev_examples(_glue("RTE"))
  assert len(dev) == 277 and len(p.get_train_examples(_glue("RTE"))) == 2490
  assert dev[0].text_b == "Christopher Reeve had an accident." and dev[0].label == "not_entailment"
  assert [sum(e.label == lab for e in dev) for lab in p.get_labels()] == [146, 131]
  assert len(p.get_test_examples(_glue("RTE"))) == 3000
  assert p.submission_file == "RTE.tsv"


# --------------------------------------------------------------------------- sample files


def test_qqp_qnli_wnli_samples():
  qqp = cd.get_processor("qqp")
  dev = qqp.get_dev_examples(_sample("QQP"))
  assert dev[0] == cd.InputExample("dev-1", "Why are African-Americans so beautiful?",
                                   "Why are hispanics so beautiful?", "0")
  assert [e.label for e in qqp.get_train_examples(_sample("QQP"))] == ["0", "1", "0"]
  test = qqp.get_test_examples(_sample("QQP"))
  assert test[0].guid == "test-0" and test[0].text_a.startswith("Would the idea of Trump")
  assert test[0].text_b.startswith("Do you think that if Donald Trump")

  qnli = cd.get_processor("qnli")
  dev = qnli.get_dev_examples(_sample("QNLI"))
  assert [e.label for e in dev] == ["entailment", "not_entailment"]
  assert dev[0].text_a == "What came into force after the new constitution was herald?"
  assert qnli.get_test_examples(_sample("QNLI"))[0].text_a == (
      "What organization is devoted to Jihad against Israel?")

  wnli = cd.get_processor("wnli")
  dev = wnli.get_dev_examples(_sample("WNLI"))
  assert [(e.text_b, e.label) for e in dev] == [("The hair has to be cleaned.", "0"),
                                               ("Susan did not answer.", "1")]
  assert wnli.get_test_examples(_sample("WNLI"))[0].text_b == (
      "Horses ran away when Maude and Dora came in sight.")


def test_mnli_two_dev_sets_two_test_sets_and_ax():
  p = cd.get_processor("MNLI")
  data_dir = _sample("MNLI")
  train = p.get_train_examples(data_dir)
  assert train[0] == cd.InputExample(
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
  assert predict_sets[2].examples[0] == cd.InputExample(
      "ax-0", "The cat sat on the mat.", "The cat did not sit on the mat.", None)


def test_xnli_language_filter_and_contradictory(tmp_path):
  data_dir = _sample()
  zh = cd.get_processor("xnli")
  assert zh.language == "zh"
  train = zh.get_train_examples(data_dir)
  assert len(train) == 4 and train[0].text_b == "产品 和 地理 是 什么 使 奶油 抹 霜 工作 ."
  dev = zh.get_dev_examples(data_dir)
  assert [(e.guid, e.text_a, e.label) for e in dev] == [("dev-15", "他说，妈妈，我回来了。", "neutral")]
  de = cd.get_processor("xnli", xnli_language="de")
  assert de.get_dev_examples(data_dir)[0].guid == "dev-3"
  # The MT train files spell one label "contradictory"; the original maps it.
  (tmp_path / "multinli").mkdir()
  (tmp_path / "multinli" / "multinli.train.fr.tsv").write_text(
      "premise\thypo\tlabel\nA\tB\tcontradictory\nC\tD\tentailment\n")
  fr = cd.get_processor("xnli", xnli_language="fr").get_train_examples(str(tmp_path))
  assert [e.label for e in fr] == ["contradiction", "entailment"]


# --------------------------------------------------------------------------- errors


def _error(fn):
  with pytest.raises(script_utils.UserError) as info:
    fn()
  message = str(info.value)
  assert "\n" not in message
  return message


def test_short_row_names_file_and_line(tmp_path):
  (tmp_path / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n"
                                    "0\ta\tb\tentailment\n1\tonly two\n")
  message = _error(lambda: cd.RteProcessor().get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.tsv'}:3: too few columns")
  assert "the row has 2" in message


def test_unknown_label_empty_split_missing_file(tmp_path):
  (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood\t1\nbad\tpositive\n")
  message = _error(lambda: cd.Sst2Processor().get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.tsv'}:3: unknown label 'positive'")
  (tmp_path / "dev.tsv").write_text("sentence\tlabel\n")
  message = _error(lambda: cd.Sst2Processor().get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.tsv'}: no examples in the dev split")
  message = _error(lambda: cd.Sst2Processor().get_test_examples(str(tmp_path)))
  assert message == f"{tmp_path / 'test.tsv'}: no such file; check --data_dir"
  (tmp_path / "train.tsv").write_text("index\tg\tf\ty\to\ts1\ts2\ta\tb\tscore\n"
                                      "0\tg\tf\ty\to\ts\ts\tA.\tB.\thigh\n")
  message = _error(lambda: cd.StsbProcessor().get_train_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'train.tsv'}:2: label 'high' is not a number")
  assert "unknown task" in _error(lambda: cd.get_processor("glue"))


def test_invalid_utf8_names_line(tmp_path):
  (tmp_path / "dev.tsv").write_bytes(b"sentence\tlabel\nok\t1\nbad \xff\t0\n")
  message = _error(lambda: cd.Sst2Processor().get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.tsv'}:3: not valid UTF-8")


# --------------------------------------------------------------------------- tsv / csv task


def test_generic_tsv_by_number_with_inferred_labels(tmp_path):
  (tmp_path / "train.tsv").write_text("b\tthe movie\tyes\na\tan \"odd\ttitle\tno\n")
  (tmp_path / "test.tsv").write_text("x\ty\n")
  p = cd.get_processor("tsv", text_a_column="1", text_b_column="2", label_column="0")
  p.set_data_dir(str(tmp_path))
  assert p.get_labels() == ["a", "b"] and p.num_texts == 2
  train = p.get_train_examples(str(tmp_path))
  assert [(e.text_a, e.text_b, e.label) for e in train] == [
      ("the movie", "yes", "b"), ('an "odd', "title", "a")]
  test = cd.get_processor("tsv", text_a_column="0", text_b_column="1",
                          labels=["a", "b"]).get_test_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.text_b, e.label) for e in test] == [("test-0", "x", "y", None)]


def test_generic_csv_with_header_names_and_quotes(tmp_path):
  (tmp_path / "train.csv").write_text('id,review,stars\n1,"Great, really",pos\n2,Meh,neg\n')
  (tmp_path / "dev.csv").write_text('id,review,stars\n3,"Said ""no""",neu\n')
  p = cd.get_processor("csv", text_a_column="review", label_column="stars", has_header=True,
                       labels=["neg", "pos"])
  train = p.get_train_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.label) for e in train] == [
      ("train-1", "Great, really", "pos"), ("train-2", "Meh", "neg")]
  message = _error(lambda: p.get_dev_examples(str(tmp_path)))
  assert message.startswith(f"{tmp_path / 'dev.csv'}:2: unknown label 'neu'")
  bad = cd.get_processor("csv", text_a_column="text", label_column="stars", has_header=True)
  assert "no column named 'text'" in _error(lambda: bad.get_train_examples(str(tmp_path)))


# --------------------------------------------------------------------------- metrics


def test_accuracy_f1_by_hand():
  predictions = [1, 1, 0, 1, 0, 0, 1, 1]
  labels = [1, 0, 0, 1, 1, 0, 1, 0]
  # tp=3 fp=2 fn=1 tn=2: accuracy 5/8, F1 = 6/9.
  result = cd.compute_metrics("accuracy_f1", predictions, labels)
  assert result["accuracy"] == pytest.approx(0.625)
  assert result["f1"] == pytest.approx(2 / 3)
  assert result["acc_and_f1"] == pytest.approx((0.625 + 2 / 3) / 2)
  assert cd.f1_score([0, 0], [1, 1]) == 0.0


def test_matthews_by_hand():
  predictions = [1, 1, 0, 1, 0, 0, 1, 1]
  labels = [1, 0, 0, 1, 1, 0, 1, 0]
  # (tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (6-2)/sqrt(5*4*4*3) = 4/sqrt(240)
  assert cd.matthews_corrcoef(predictions, labels) == pytest.approx(4 / np.sqrt(240))
  assert cd.compute_metrics("matthews", predictions, labels)["matthews_corrcoef"] == (
      pytest.approx(0.2581988897))
  assert cd.matthews_corrcoef([1, 1, 1], [0, 1, 1]) == 0.0  # constant prediction
  assert cd.matthews_corrcoef([0, 1, 2], [0, 1, 2]) == pytest.approx(1.0)


def test_pearson_spearman_with_ties_by_hand():
  x = [1.0, 2.0, 2.0, 4.0]
  y = [1.0, 3.0, 2.0, 5.0]
  assert list(cd.rankdata_average(x)) == [1.0, 2.5, 2.5, 4.0]
  assert list(cd.rankdata_average([3, 1, 3, 3])) == [3.0, 1.0, 3.0, 3.0]
  # Pearson: mean x 2.25, mean y 2.75; sum dxdy = 6.25, sum dx2 = 4.75, sum dy2 = 8.75.
  result = cd.compute_metrics("pearson_spearman", x, y)
  assert result["pearson"] == pytest.approx(6.25 / np.sqrt(4.75 * 8.75))
  # Spearman = Pearson of ranks [1, 2.5, 2.5, 4] and [1, 3, 2, 4]: 4.5 / sqrt(4.5 * 5).
  assert result["spearman"] == pytest.approx(4.5 / np.sqrt(4.5 * 5.0))
  assert result["corr"] == pytest.approx((result["pearson"] + result["spearman"]) / 2)


# --------------------------------------------------------------------------- outputs


def test_submission_and_probability_files(tmp_path):
  p = cd.RteProcessor()
  examples = [cd.InputExample("test-0", "a", "b"), cd.InputExample("test-1", "c", "d"),
              cd.InputExample("test-2", "e", "f")]
  cd.write_submission(str(tmp_path / "RTE.tsv"), p, examples, np.array([1, 0, 1]))
  assert (tmp_path / "RTE.tsv").read_bytes() == (
      b"index\tprediction\n0\tnot_entailment\n1\tentailment\n2\tnot_entailment\n")
  cd.write_submission(str(tmp_path / "STS-B.tsv"), cd.StsbProcessor(), examples[:2],
                      np.array([4.12345, 0.5]))
  assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t4.123\n1\t0.500\n"
  cd.write_probabilities(str(tmp_path / "test_results.tsv"),
                         np.array([[0.25, 0.75], [1.0, 0.0]], np.float32))
  assert (tmp_path / "test_results.tsv").read_text() == "0.25\t0.75\n1.0\t0.0\n"
  assert sorted(os.listdir(tmp_path)) == ["RTE.tsv", "STS-B.tsv", "test_results.tsv"]


def test_convert_single_example_original_layout():
  class Tok:  # splits on spaces; ids from a fixed table
    vocab = {"[CLS]": 1, "[SEP]": 2, "a": 3, "b": 4, "c": 5, "d": 6, "e": 7}

    def tokenize(self, text):
      return text.split()

    def convert_tokens_to_ids(self, tokens):
      return [self.vocab[t] for t in tokens]

  pair = cd.convert_single_example(cd.InputExample("x", "a b c d", "e", "1"), ["0", "1"], 7,
                                   Tok())
  # Budget 7 - 3 = 4: the longer text_a loses its tail.
  assert pair.input_ids == [1, 3, 4, 5, 2, 7, 2]
  assert pair.segment_ids == [0, 0, 0, 0, 0, 1, 1] and pair.label_id == 1
  single = cd.convert_single_example(cd.InputExample("y", "a b c d e", "", None), ["0", "1"],
                                     6, Tok())
  # An empty text_b is no text_b (the original's `if example.text_b`).
  assert single.input_ids == [1, 3, 4, 5, 6, 2] and single.input_mask == [1] * 6
  assert single.label_id == 0
