"""The official SQuAD scoring: real predictions of Google's BERT, hand-computed cases, CLI."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

from bert.squad import squad_metrics
from bert.utils import errors
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


def _partial_real_v2():
  """dev-v2.0-normans.json with Google's predictions for 2 questions in 3 (every third
  one missing) and made-up no-answer scores (from an md5 of the id, so reproducible)."""
  data = _load("dev-v2.0-normans.json")["data"]
  all_preds = _load("bert_single_v2.0_predictions.json")
  qids = [qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]]
  preds = {q: all_preds[q] for i, q in enumerate(qids) if i % 3}
  na_probs = {q: int(hashlib.md5(q.encode()).hexdigest()[:6], 16) % 1000 / 1000
              for q in preds}
  return data, qids, preds, na_probs


def test_v2_missing_predictions_score_the_predicted_questions_as_official():
  data, qids, preds, na_probs = _partial_real_v2()
  warnings = []
  result = squad_metrics.evaluate_v2(data, preds, na_probs=na_probs, warn=warnings.append)
  # The official evaluate-v2.0.py crashes on this input (KeyError in HasAns); these are
  # its numbers on the same file cut down to the 138 predicted questions, the set every
  # number here covers. The official best_exact/best_f1 on the whole file would be
  # 104.35/108.27: its sweep starts from all 112 unanswerable questions, 40 of them
  # unpredicted, and divides by 138.
  assert dict(result) == {
      "exact": 75.3623188405797, "f1": 79.28743961352657, "total": 138,
      "HasAns_exact": 68.18181818181819, "HasAns_f1": 76.38888888888889, "HasAns_total": 66,
      "NoAns_exact": 81.94444444444444, "NoAns_f1": 81.94444444444444, "NoAns_total": 72,
      "best_exact": 75.3623188405797, "best_exact_thresh": 0.959,
      "best_f1": 79.28743961352657, "best_f1_thresh": 0.959}
  missing = [q for i, q in enumerate(qids) if not i % 3]
  assert warnings == [f"Missing prediction for {q}" for q in missing] + [
      "70 of 208 questions have no prediction; every score covers the 138 predicted "
      "questions only"]


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
  assert warnings == ["Missing prediction for q2", "1 of 4 questions have no prediction; "
                      "every score covers the 3 predicted questions only"]
  assert result["total"] == 3 and result["HasAns_total"] == 1
  with pytest.raises(ValueError, match="no entry for question q3"):
    squad_metrics.evaluate_v2(dataset, {"q1": "", "q3": ""}, na_probs={"q1": 0.0})


def test_v2_best_thresholds_over_the_predicted_questions_hand_computed():
  dataset, preds, na_probs = _toy_v2()
  del preds["q3"]  # an unanswerable question without a prediction
  result = squad_metrics.evaluate_v2(dataset, preds, na_probs=na_probs)
  # Scored: q1 (exact 1, F1 1), q2 (0, 2/3), q4 ("" right). The sweep starts from the one
  # scored unanswerable question (q4), in na_prob order q1 q2 [q3 skipped] q4: exact
  # 2 after q1 (best, 0.1); F1 2 after q1, 2 2/3 after q2 (best, 0.5). Counting q3 in the
  # start, as the official script does, gave 3/3 = 100% and 3 2/3 / 3 = 122%.
  assert result["best_exact"] == pytest.approx(100 * 2 / 3)
  assert result["best_exact_thresh"] == 0.1
  assert result["best_f1"] == pytest.approx(100 * (2 + 2 / 3) / 3)
  assert result["best_f1_thresh"] == 0.5
  assert result["total"] == 3 and result["NoAns_total"] == 1


def test_data_and_prediction_files_with_repeated_ids_are_refused(tmp_path):
  dataset, _, _ = _toy_v2()
  dataset[0]["paragraphs"][0]["qas"][3]["id"] = "q2"
  with pytest.raises(errors.UserError) as caught:
    squad_metrics.check_dataset({"data": dataset}, "data.json")
  assert str(caught.value) == (
      "data.json: article 0 paragraph 0 question 3: duplicate question id 'q2' (first at "
      "article 0 paragraph 0 question 1); ids must be unique to be scored")
  dataset[0]["paragraphs"][0]["qas"][3]["id"] = 4
  with pytest.raises(errors.UserError, match="question 3: the question id 4 is a int"):
    squad_metrics.check_dataset({"data": dataset}, "data.json")
  # json.load keeps the last of two equal keys; a predictions file with a question twice
  # is refused instead.
  preds = tmp_path / "preds.json"
  preds.write_text('{"q1": "paris", "q2": "x", "q1": "london"}')
  with pytest.raises(errors.UserError) as caught:
    squad_metrics.load_json(str(preds), "predictions file")
  assert str(caught.value) == (f"{preds}: the key 'q1' appears twice in one JSON object; "
                               "each predictions file entry must be unique")


def test_score_predicted_covers_the_predicted_questions_only():
  dataset, _, na_probs = _toy_v2()
  # v1.1: q2 and q4 unpredicted are left out (evaluate_v1 on the whole file counts them
  # 0). q1 is right; q3 (no gold answer, scored against "") is exact but has v1.1 F1 0.
  assert squad_metrics.score_predicted(dataset, {"q1": "Paris", "q3": ""}) == {
      "exact_match": 100.0, "f1": 50.0}
  v2 = squad_metrics.score_predicted(dataset, {"q1": "x", "q4": ""}, na_probs,
                                     version_2_with_negative=True)
  assert (v2["exact"], v2["total"], v2["HasAns_total"], v2["NoAns_total"]) == (50.0, 2, 1, 1)
  # A test file (no gold answers among the predicted questions): nothing to score.
  assert squad_metrics.score_predicted(dataset, {"q3": "", "q4": "x"}) is None


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

  # Missing predictions: reported on stderr (the official message), scores over the rest.
  del preds["q3"]
  pred_file.write_text(json.dumps(preds))
  proc = subprocess.run([sys.executable, EVALUATE, str(data_file), str(pred_file),
                         "--na-prob-file", str(na_file)], capture_output=True, text=True,
                        env=env, check=True)
  assert proc.stderr.splitlines()[-2:] == [
      "Missing prediction for q3",
      "1 of 4 questions have no prediction; every score covers the 3 predicted questions "
      "only"]
  assert json.loads(proc.stdout)["best_exact"] == pytest.approx(100 * 2 / 3)

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
