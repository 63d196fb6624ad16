"""run_ner.py and run_swag.py end to end with a tiny random BERT on real CoNLL / SWAG rows."""
import csv
import os

import numpy as np
import pytest

from bert import metrics
from bert.tagging import tagging_ner_data
from bert.tagging import tagging_data
from bert import tokenization
from conftest import shared_path
from ner_outputs import check_ner_outputs
from script_runs import read_key_values, run_script
from tiny import make_tiny_model


def first_sentences(path, count, long_sentence_words=0):
  """The first `count` sentences of a CoNLL file (with its -DOCSTART- line), plus
  optionally one sentence longer than any window (real lines repeated)."""
  lines, sentences = [], 0
  with open(path, encoding="utf-8") as handle:
    for line in handle:
      lines.append(line)
      if not line.strip() and len(lines) > 2:
        sentences += 1
        if sentences >= count:
          break
  if long_sentence_words:
    words = [l for l in lines if l.strip() and not l.startswith("-DOCSTART-")]
    lines += (words * (long_sentence_words // len(words) + 1))[:long_sentence_words] + ["\n"]
  return "".join(lines)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
  # One layer: the runs' files are checked against recomputations, the same for any depth,
  # and tracing each run's steps (most of this file's time) grows with the layers.
  return make_tiny_model(str(tmp_path_factory.mktemp("tiny_bert")), num_hidden_layers=1)


@pytest.fixture(scope="module")
def conll_dir(tmp_path_factory):
  directory = tmp_path_factory.mktemp("conll")
  conll = shared_path("conll2003")
  (directory / "train.txt").write_text(first_sentences(os.path.join(conll, "train.txt"), 24),
                                       encoding="utf-8")
  # Dev ends with a 40-word sentence: several windows at max_seq_length 16.
  (directory / "valid.txt").write_text(
      first_sentences(os.path.join(conll, "valid.txt"), 8, long_sentence_words=40),
      encoding="utf-8")
  (directory / "test.txt").write_text(first_sentences(os.path.join(conll, "test.txt"), 6),
                                      encoding="utf-8")
  return str(directory)


def model_flags(model_dir):
  return [f"--vocab_file={model_dir}/vocab.txt",
          f"--bert_config_file={model_dir}/bert_config.json"]


def test_run_ner_finetune_eval_predict(tiny_model, conll_dir, tmp_path):
  out = str(tmp_path / "ner")
  run_script("run_ner.py", f"--data_dir={conll_dir}", *model_flags(tiny_model),
             "--do_train", "--do_eval", "--do_predict", "--max_seq_length=16",
             "--doc_stride=5", "--train_batch_size=8", "--num_train_epochs=2",
             "--learning_rate=1e-3", f"--output_dir={out}", "--log_every_steps=1")
  results = check_ner_outputs(out, conll_dir, "dev", "eval_results.txt", "eval")
  assert results["eval_sentences"] == 9
  # 24 sentences in windows of 14 pieces at batch 8, 2 epochs.
  windows = len(tagging_data.convert_examples_to_features(
      tagging_data.read_conll(os.path.join(conll_dir, "train.txt")), tagging_ner_data.make_label_list(),
      16, tokenization.FullTokenizer(os.path.join(tiny_model, "vocab.txt")),
      doc_stride=5))
  assert results["global_step"] == int(windows / 8 * 2)
  assert results["eval_loss"] > 0
  check_ner_outputs(out, conll_dir, "test", "test_results.txt", "test")


def _feature_run(tiny_model, conll_dir, out, *extra):
  common = [f"--data_dir={conll_dir}", *model_flags(tiny_model), "--max_seq_length=16",
            "--doc_stride=5", "--mode=feature", "--feature_layers=sum_all",
            "--lstm_units=8", f"--output_dir={out}"]
  return run_script("run_ner.py", *common, *extra)


@pytest.mark.slow  # run_ner end to end in the default suite: test_run_ner_finetune_eval_predict
def test_run_ner_feature_mode(tiny_model, conll_dir, tmp_path):
  out = str(tmp_path / "ner_feature")
  _feature_run(tiny_model, conll_dir, out, "--do_train", "--do_eval", "--train_batch_size=8",
               "--num_train_epochs=1")
  check_ner_outputs(out, conll_dir, "dev", "eval_results.txt", "eval")
  cache = sorted(os.listdir(os.path.join(out, "feature_cache")))
  assert [name.split("-")[:2] for name in cache] == [["dev", "sum_all"], ["train", "sum_all"]]


@pytest.mark.slow
def test_run_ner_feature_cache_reused(tiny_model, conll_dir, tmp_path):
  out = str(tmp_path / "ner_feature")
  _feature_run(tiny_model, conll_dir, out, "--do_train", "--do_eval", "--train_batch_size=8",
               "--num_train_epochs=1")
  first = read_key_values(os.path.join(out, "eval_results.txt"))
  dev_cache = os.path.join(out, "feature_cache", sorted(os.listdir(
      os.path.join(out, "feature_cache")))[0])
  stamp = os.path.getmtime(dev_cache)
  # Evaluating again restores the trained BiLSTM and reads the cached dev activations.
  again = _feature_run(tiny_model, conll_dir, out, "--do_eval")
  assert "Using cached dev features" in again.stderr
  assert os.path.getmtime(dev_cache) == stamp
  assert read_key_values(os.path.join(out, "eval_results.txt")) == first


def test_run_swag_sample_rows(tiny_model, tmp_path):
  swag_dir = os.path.dirname(shared_path("glue_format_samples", "SWAG", "val.csv"))
  out = str(tmp_path / "swag")
  run_script("run_swag.py", f"--data_dir={swag_dir}", *model_flags(tiny_model),
             "--do_train", "--do_eval", "--do_predict", "--max_seq_length=48",
             "--train_batch_size=2", "--num_train_epochs=1", f"--output_dir={out}")
  results = read_key_values(os.path.join(out, "eval_results.txt"))
  assert results["global_step"] == 2 and results["num_examples"] == 4
  rows = list(csv.DictReader(open(os.path.join(out, "dev_predictions.csv"), encoding="utf-8")))
  probs = np.array([[float(r[f"prob{i}"]) for i in range(4)] for r in rows])
  np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-5)
  labels = [int(r["label"]) for r in rows]
  assert labels == [2, 2, 2, 2]
  assert results["eval_accuracy"] == pytest.approx(metrics.accuracy(np.argmax(probs, 1),
                                                                    labels))
  assert [int(r["prediction"]) for r in rows] == list(np.argmax(probs, 1))
  assert results["eval_loss"] == pytest.approx(-np.mean(np.log(probs[:, 2])), abs=1e-4)
  test_rows = list(csv.DictReader(open(os.path.join(out, "test_predictions.csv"),
                                       encoding="utf-8")))
  assert [r["id"] for r in test_rows] == ["11871", "18444", "18443", "18441"]


def test_user_errors_are_one_line(tiny_model, tmp_path):
  (tmp_path / "val.csv").write_text("sent1,sent2,ending0,ending1,ending2,ending3,label\n"
                                    "A.,He,a,b,c,d,9\n", encoding="utf-8")
  proc = run_script("run_swag.py", f"--data_dir={tmp_path}", *model_flags(tiny_model),
                    "--do_eval", "--max_seq_length=48", f"--output_dir={tmp_path / 'out'}",
                    expect=2)
  assert proc.stderr.strip().splitlines()[-1] == (
      f"run_swag.py: error: {tmp_path}/val.csv:2: label '9' is not one of 0..3")
  assert "Traceback" not in proc.stderr


def test_run_ner_eval_with_nothing_trained_is_an_error(tiny_model, conll_dir, tmp_path):
  """--do_eval alone on an empty output_dir must not score a random head."""
  out = tmp_path / "empty"
  proc = run_script("run_ner.py", f"--data_dir={conll_dir}", *model_flags(tiny_model),
                    "--do_eval", "--max_seq_length=16", "--doc_stride=5",
                    f"--output_dir={out}", expect=2)
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("run_ner.py: error: nothing trained to evaluate: "
                         f"--output_dir={out} holds no checkpoint"), last
  assert "Traceback" not in proc.stderr
  assert not (out / "eval_results.txt").exists()
  assert not (out / "dev_predictions.txt").exists()
