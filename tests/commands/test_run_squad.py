"""run_squad.py end to end: a tiny random model trained and run on real SQuAD 2.0 questions.

One run of the command (train 2 steps, predict, score, export); the test then checks the
files against an independent recomputation: features converted here with the pure-Python
tokenizer, logits from the exported SavedModel, answers and scores recomputed.
"""
import json
import os

import numpy as np
import pytest

from bert.squad import squad_data
from bert.squad import squad_decoding
from bert.squad import squad_features
from bert.squad import squad_metrics
from bert.squad import squad_task
from bert import tokenization
from bert.training import run_options
from bert.utils import errors
import cli_harness
from conftest import shared_path
import tiny

# One layer: the run's files are checked against a recomputation from its export, the
# same for any depth, and most of the run's time is tracing and exporting, which grows
# with the layers.
TINY_CONFIG = tiny.tiny_config_dict(30522, num_hidden_layers=1)
SEQ, STRIDE, QUERY = 64, 24, 16
NUM_PREDICT = 6


def _read_key_values(path):
  values = {}
  for line in open(path, encoding="utf-8"):
    key, value = line.strip().split(" = ")
    values[key] = float(value)
  return values


@pytest.fixture(scope="module")
def squad_run(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("squad_run")
  config = tmp / "bert_config.json"
  config.write_text(json.dumps(TINY_CONFIG))
  data = shared_path("squad", "dev-v2.0-normans.json")
  out, export_dir = tmp / "out", tmp / "export"
  args = [f"--vocab_file={shared_path('vocab', 'uncased_vocab.txt')}",
          f"--bert_config_file={config}", "--do_train", f"--train_file={data}",
          "--max_train_examples=16", "--train_batch_size=8", "--num_train_epochs=1",
          "--do_predict", f"--predict_file={data}", "--predict_articles=0:1",
          f"--max_predict_examples={NUM_PREDICT}", "--predict_batch_size=4",
          "--version_2_with_negative", f"--max_seq_length={SEQ}", f"--doc_stride={STRIDE}",
          f"--max_query_length={QUERY}", f"--output_dir={out}", f"--export_dir={export_dir}",
          "--litert=none"]  # LiteRT has tests of its own (tests/formats, tests/litert)
  # The command line's real path in a warm process (no TensorFlow start-up per run).
  proc = cli_harness.run("run_squad.py", args, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return data, out, export_dir, proc.stderr


def test_run_squad_v2_outputs_match_recomputation(squad_run):
  data_file, out, export_dir, _ = squad_run
  for name in ("train.tf_record", "eval.tf_record", "predictions.json",
               "nbest_predictions.json", "null_odds.json", "eval_results.txt"):
    assert (out / name).is_file(), name
  # 16 questions / batch 8 * 1 epoch = 2 steps (the original counts questions, not windows).
  assert (out / "ckpt-2.index").is_file() and not (out / "ckpt-3.index").exists()
  assert not [p for p in os.listdir(out) if p.startswith(".")]  # no temporaries left

  examples = squad_data.read_squad_examples(data_file, is_training=False,
                                            version_2_with_negative=True)[:NUM_PREDICT]
  tokenizer = tokenization.FullTokenizer(shared_path("vocab", "uncased_vocab.txt"), True)
  features = squad_features.convert_examples_to_features(examples, tokenizer, SEQ, STRIDE, QUERY,
                                                     is_training=False)
  predictions = json.loads((out / "predictions.json").read_text())
  nbest = json.loads((out / "nbest_predictions.json").read_text())
  null_odds = json.loads((out / "null_odds.json").read_text())
  assert list(predictions) == [e.qas_id for e in examples]
  for qid, text in predictions.items():
    assert sum(e["probability"] for e in nbest[qid]) == pytest.approx(1.0)
    assert "" in [e["text"] for e in nbest[qid]]  # v2.0 always offers the null answer
    assert (text == "") == (null_odds[qid] > 0.0)

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # eval.tf_record holds the features the pure-Python tokenizer gives (the script used
  # the batched FastTokenizer).
  records = list(squad_features.record_dataset(str(out / "eval.tf_record"), SEQ, False,
                                           batch_size=100, drop_remainder=False))[0]
  np.testing.assert_array_equal(records["input_ids"], [f.input_ids for f in features])
  np.testing.assert_array_equal(records["unique_ids"], [f.unique_id for f in features])

  # The exported model gives the logits behind the predictions.
  serving = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
  outputs = serving(**{k: tf.constant([getattr(f, k) for f in features], tf.int32)
                       for k in ("input_ids", "input_mask", "segment_ids")})
  results = [squad_decoding.RawResult(f.unique_id, s, e) for f, s, e in
             zip(features, outputs["start_logits"].numpy(), outputs["end_logits"].numpy())]
  again, _, again_odds = squad_decoding.compute_predictions(
      examples, features, results, 20, 30, True, version_2_with_negative=True)
  assert dict(again) == predictions
  assert list(again_odds.values()) == pytest.approx(list(null_odds.values()), abs=1e-4)

  # eval_results.txt: the official v2.0 scores of these six questions.
  with open(data_file, encoding="utf-8") as handle:
    dataset = handle.read()
  dataset = json.loads(dataset)["data"]
  wanted = set(predictions)
  subset = [{"paragraphs": [{"context": p["context"],
                             "qas": [qa for qa in p["qas"] if qa["id"] in wanted]}
                            for p in a["paragraphs"]]} for a in dataset[:1]]
  expected = squad_metrics.evaluate_v2(subset, predictions, na_probs=null_odds)
  scores = _read_key_values(out / "eval_results.txt")
  assert scores["global_step"] == 2
  for key, value in expected.items():
    assert scores[key] == pytest.approx(value), key


SMALL_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "paris", "is", "in", "france", ".",
               "where", "?"]


def _run_predict(tmp_path, data, *extra):
  """run_squad.py --do_predict on `data` with a tiny vocabulary and config written here."""
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(SMALL_VOCAB) + "\n")
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(dict(TINY_CONFIG, vocab_size=len(SMALL_VOCAB))))
  bad = tmp_path / "bad.json"
  bad.write_text(json.dumps(data))
  out = tmp_path / "out"
  proc = cli_harness.run(
      "run_squad.py",
      [f"--vocab_file={vocab}", f"--bert_config_file={config}", "--do_predict",
       f"--predict_file={bad}", f"--max_seq_length={SEQ}", f"--max_query_length={QUERY}",
       f"--output_dir={out}", *extra])
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  assert not (out / "predictions.json").exists()
  return str(bad), proc.stderr.strip().splitlines()[-1]


def _squad_file(*questions, context="Paris is in France."):
  return {"version": "1.1", "data": [{"paragraphs": [{"context": context,
                                                      "qas": list(questions)}]}]}


def test_run_squad_bad_input_one_line(tmp_path):
  path, last = _run_predict(tmp_path, _squad_file({"question": "Where is Paris?"}))
  assert last == (f"run_squad.py: error: {path}: article 0 paragraph 0 question 0: the "
                  "question has no \"id\"; every question needs a unique id (predictions "
                  "are keyed by it)")


def test_run_squad_refuses_duplicate_ids(tmp_path):
  question = {"id": "q1", "question": "Where is Paris?"}
  path, last = _run_predict(tmp_path, _squad_file(question, dict(question)))
  assert last == (f"run_squad.py: error: {path}: article 0 paragraph 0 question 1: "
                  "duplicate question id 'q1' (first at article 0 paragraph 0 question 0); "
                  "ids must be unique, or one question's prediction overwrites the other's")


def test_run_squad_refuses_v2_file_without_the_flag(tmp_path):
  path, last = _run_predict(tmp_path, _squad_file(
      {"id": "a", "question": "Where is Paris?", "answers": [
          {"text": "France", "answer_start": 12}], "is_impossible": False},
      {"id": "b", "question": "Where is Paris?", "answers": [], "is_impossible": True}))
  assert last == (f"run_squad.py: error: {path}: article 0 paragraph 0 question 1 (id b): "
                  "\"is_impossible\" is true, so this is a SQuAD 2.0 file; pass "
                  "--version_2_with_negative (without it no question can get the null "
                  "answer)")


def test_squad_task_flag_checks(tmp_path):
  """The original's flag checks, before anything is read or built."""
  def task(**settings):
    options = run_options.RunOptions(output_dir=str(tmp_path), max_seq_length=128,
                                      do_eval=True)
    return squad_task.SquadTask(options, squad_task.SquadOptions(**settings))

  with pytest.raises(errors.UserError, match="^If `do_predict` is True, then "
                     "`predict_file` must be specified.$"):
    task()
  with pytest.raises(errors.UserError, match=r"^The max_seq_length \(128\) must be "
                     r"greater than max_query_length \(125\) \+ 3$"):
    task(predict_file="p.json", max_query_length=125)
  with pytest.raises(errors.UserError, match="^--doc_stride=0: must be at least 1$"):
    task(predict_file="p.json", doc_stride=0)
  with pytest.raises(errors.UserError, match="^--predict_articles=3: expected "
                     "START:END article indices, e.g. 0:40$"):
    task(predict_file="p.json", predict_articles="3")
  assert task(predict_file="p.json", max_query_length=124).predicting
  assert squad_task.article_slice("40:", "x") == slice(40, None)
  assert squad_task.article_slice(":8", "x") == slice(None, 8)
  assert squad_task.article_slice(None, "x") == slice(None)
