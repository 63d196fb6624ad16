"""The official SQuAD scoring: real predictions of Google's BERT, hand-computed cases, CLI."""
import json
import os
import subprocess
import sys

import pytest

import squad_metrics
from conftest import ROOT, shared_path

EVALUATE = os.path.join(ROOT, "squad_evaluate.py")


def _load(*parts):
  with open(shared_path("squad", *parts), encoding="utf-8") as handle:
    return json.load(handle)


# --------------------------------------------------------------- the shared real predictions


def test_v1_real_ensemble_predictions_exact_official_scores():
  dataset = _load("dev-v1.1.json")["data"]
  preds = _load("bert_ensemble_v1.1_predictions.json")
  result = squad_metrics.evaluate_v1(dataset, preds)
  # The official evaluate-v1.1.py output, to the last digit.
  assert result == {"exact_match": 86.20624408703878, "f1": 92.19557978351145}


@pytest.mark.parametrize("name,expected", [
    ("dev-v2.0-normans.json", {
        "exact": 74.51923076923077, "f1": 77.58012820512819, "total": 208,
        "HasAns_exact": 71.875, "HasAns_f1": 78.50694444444444, "HasAns_total": 96,
        "NoAns_exact": 76.78571428571429, "NoAns_f1": 76.78571428571429,
        "NoAns_total": 112}),
    ("dev-v2.0-normans-rhine.json", {
        "exact": 78.04532577903683, "f1": 81.21604552199453, "total": 706,
        "HasAns_exact": 71.50259067357513, "HasAns_f1": 77.30188636924387,
        "HasAns_total": 386, "NoAns_exact": 85.9375, "NoAns_f1": 85.9375,
        "NoAns_total": 320}),
])
def test_v2_real_single_predictions_exact_official_scores(name, expected):
  dataset = _load(name)["data"]
  preds = _load("bert_single_v2.0_predictions.json")
  result = squad_metrics.evaluate_v2(dataset, preds)
  assert list(result) == list(expected)  # the official key order
  assert dict(result) == expected


# --------------------------------------------------------------- definitions by hand


def test_normalize_answer_official_order():
  assert squad_metrics.normalize_answer("The  Cat's hat!") == "cats hat"
  # Punctuation goes first, so "the-end" loses its hyphen and is no longer an article.
  assert squad_metrics.normalize_answer("the-end") == "theend"
  assert squad_metrics.normalize_answer("An apple, a pear and THE plum.") == "apple pear and plum"
  # Only ASCII punctuation is removed; the en dash stays.
  assert squad_metrics.normalize_answer("1895\u20131943") == "1895\u20131943"


def test_f1_and_exact_hand_computed():
  # gold tokens [cat, sat, on, mat], pred [cat, on, mat]: P = 1, R = 3/4, F1 = 6/7.
  assert squad_metrics.compute_f1("the cat sat on the mat", "cat on mat") == pytest.approx(6 / 7)
  assert squad_metrics.f1_score_v1("cat on mat", "the cat sat on the mat") == pytest.approx(6 / 7)
  # Repeated tokens count with multiplicity: pred [a1 a1 x] vs gold [a1 x x] -> 2 common.
  assert squad_metrics.compute_f1("a1 x x", "a1 a1 x") == pytest.approx(2 / 3)
  assert squad_metrics.compute_exact("The Cat.", "cat") == 1
  # Empty answers: v2.0 gives full credit when both are empty; v1.1 never does.
  assert squad_metrics.compute_f1("", "") == 1
  assert squad_metrics.compute_f1("", "the") == 1  # "the" normalises to nothing
  assert squad_metrics.compute_f1("", "paris") == 0
  assert squad_metrics.f1_score_v1("", "") == 0


def _toy_v2():
  def qa(qid, answers):
    return {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0}
                                                    for t in answers]}
  dataset = [{"paragraphs": [{"context": "x", "qas": [
      qa("q1", ["Paris"]), qa("q2", ["blue whale", "the blue whale"]), qa("q3", []),
      qa("q4", [])]}]}]
  preds = {"q1": "paris", "q2": "whale", "q3": "london", "q4": ""}
  na_probs = {"q1": 0.1, "q2": 0.5, "q3": 0.6, "q4": 0.9, "not-in-data": 0.0}
  return dataset, preds, na_probs


def test_v2_thresholds_hand_computed():
  dataset, preds, na_probs = _toy_v2()
  result = squad_metrics.evaluate_v2(dataset, preds, na_probs=na_probs)
  # Raw: exact q1 1, q2 0, q3 0, q4 1; F1 q1 1, q2 2/3 (P 1, R 1/2), q3 0, q4 1.
  assert result["exact"] == 50.0
  assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 4)
  assert result["HasAns_exact"] == 50.0
  assert result["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
  assert result["NoAns_exact"] == 50.0 and result["NoAns_total"] == 2
  # Threshold sweep from "answer nothing" (2 of 4 right), in na_prob order q1 q2 q3 q4:
  # exact 3 after q1 (best, thresh 0.1), 3, 2, 2; F1 3 after q1, 3 2/3 after q2 (best,
  # thresh 0.5), then q3 answered wrongly costs 1.
  assert result["best_exact"] == 75.0 and result["best_exact_thresh"] == 0.1
  assert result["best_f1"] == pytest.approx(100 * (3 + 2 / 3) / 4)
  assert result["best_f1_thresh"] == 0.5
  # Applying a threshold of 0.55 turns q3 and q4 into "no answer", both right.
  applied = squad_metrics.evaluate_v2(dataset, preds, na_probs=na_probs, na_prob_thresh=0.55)
  assert applied["exact"] == 75.0
  assert applied["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1 + 1) / 4)
  assert applied["NoAns_exact"] == 100.0


def test_v2_missing_prediction_and_missing_na_prob():
  dataset, preds, na_probs = _toy_v2()
  del preds["q2"]
  warnings = []
  result = squad_metrics.evaluate_v2(dataset, preds, warn=warnings.append)
  assert warnings == ["Missing prediction for q2"]
  assert result["total"] == 3 and result["HasAns_total"] == 1
  with pytest.raises(ValueError, match="no entry for question q3"):
    squad_metrics.evaluate_v2(dataset, {"q1": "", "q3": ""}, na_probs={"q1": 0.0})


def test_v1_unanswered_question_scores_zero():
  dataset, _, _ = _toy_v2()
  warnings = []
  result = squad_metrics.evaluate_v1(dataset[:1], {"q1": "Paris"}, warn=warnings.append)
  assert result == {"exact_match": 25.0, "f1": 25.0}
  assert warnings[0] == "Unanswered question q2 will receive score 0."


# --------------------------------------------------------------- the command


def test_squad_evaluate_command_output_and_errors(tmp_path):
  dataset, preds, na_probs = _toy_v2()
  data_file = tmp_path / "data.json"
  data_file.write_text(json.dumps({"version": "v2.0", "data": dataset}))
  pred_file = tmp_path / "preds.json"
  pred_file.write_text(json.dumps(preds))
  na_file = tmp_path / "null_odds.json"
  na_file.write_text(json.dumps(na_probs))
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  out = subprocess.run([sys.executable, EVALUATE, str(data_file), str(pred_file),
                        "--na-prob-file", str(na_file)], capture_output=True, text=True,
                       env=env, check=True).stdout
  expected = squad_metrics.evaluate_v2(dataset, preds, na_probs=na_probs)
  assert out == json.dumps(expected, indent=2) + "\n"  # the official script's printout

  bad = tmp_path / "bad.json"
  bad.write_text('{"q1": "paris",\n "q2": }')
  proc = subprocess.run([sys.executable, EVALUATE, str(data_file), str(bad), "-o",
                         str(tmp_path / "eval.json")], capture_output=True, text=True,
                        env=env)
  assert proc.returncode == 2
  assert proc.stderr.strip().endswith(f"{bad}:2:8: malformed predictions file "
                                      "(Expecting value)")
  assert "Traceback" not in proc.stderr
  assert not (tmp_path / "eval.json").exists()
