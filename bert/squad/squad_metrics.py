"""The official SQuAD scoring definitions (v1.1 and v2.0), written here so no download is needed.

The two official scripts differ in ways that change the last digits, so each is
reproduced separately: v1.1 counts a question without a prediction as 0, v2.0 leaves it
out of the total (and here every v2.0 number covers the same set, the predicted
questions, where the official script crashes or mixes sets); v2.0 gives an empty
prediction F1 1 when the gold answer normalises to nothing too, and drops gold answers
that normalise to nothing. The results match evaluate-v1.1.py / evaluate-v2.0.py to the
last digit on real predictions (tests/squad/test_squad_metrics.py)."""

import collections
import json
import re
import string

from bert.squad import squad_options
from bert.utils import file_io
from bert.utils import errors

_PUNCTUATION = frozenset(string.punctuation)
# \b is Unicode-aware for str patterns in Python 3, as re.UNICODE asks in the v2.0 script.
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s):
  """Lower-case, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace.

  The order matters and is the official one: punctuation goes before the article regex,
  so "the-end" becomes "theend" (no article removed).
  """
  text = s.lower()
  text = "".join(ch for ch in text if ch not in _PUNCTUATION)
  text = _ARTICLES.sub(" ", text)
  return " ".join(text.split())


def _overlap_f1(prediction_tokens, gold_tokens):
  common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
  num_same = sum(common.values())
  if num_same == 0:
    return 0
  precision = 1.0 * num_same / len(prediction_tokens)
  recall = 1.0 * num_same / len(gold_tokens)
  return (2 * precision * recall) / (precision + recall)


# ----------------------------------------------------------------------------- v1.1


def f1_score_v1(prediction, ground_truth):
  return _overlap_f1(normalize_answer(prediction).split(),
                     normalize_answer(ground_truth).split())


def exact_match_score_v1(prediction, ground_truth):
  return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
  return max(metric_fn(prediction, gt) for gt in ground_truths)


def evaluate_v1(dataset, predictions, warn=None):
  """evaluate-v1.1.py: {"exact_match": %, "f1": %} over every question of `dataset`.

  Args:
    dataset: the "data" list of a SQuAD JSON file.
    predictions: {question id: answer text}.
    warn: called with a message for each unanswered question (the official script
      prints "Unanswered question ... will receive score 0." to stderr).
  """
  f1 = exact_match = total = 0
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        total += 1
        if qa["id"] not in predictions:
          if warn is not None:
            warn(f"Unanswered question {qa['id']} will receive score 0.")
          continue
        ground_truths = [answer["text"] for answer in qa["answers"]]
        if not ground_truths:
          # v1.1 has no unanswerable questions; the official script would crash on
          # max() of nothing. Scoring against "" keeps a v2.0 file usable here.
          ground_truths = [""]
        prediction = predictions[qa["id"]]
        exact_match += metric_max_over_ground_truths(exact_match_score_v1, prediction,
                                                     ground_truths)
        f1 += metric_max_over_ground_truths(f1_score_v1, prediction, ground_truths)
  if total == 0:
    raise errors.UserError("the dataset has no questions to score")
  return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# ----------------------------------------------------------------------------- v2.0


def get_tokens(s):
  if not s:
    return []
  return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
  return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
  gold_toks = get_tokens(a_gold)
  pred_toks = get_tokens(a_pred)
  if not gold_toks or not pred_toks:
    # An empty side means "no answer": full credit only when both say so.
    return int(gold_toks == pred_toks)
  return _overlap_f1(pred_toks, gold_toks)


def make_qid_to_has_ans(dataset):
  return {qa["id"]: bool(qa["answers"])
          for article in dataset for p in article["paragraphs"] for qa in p["qas"]}


def get_raw_scores(dataset, preds, warn=None):
  """Per-question exact and F1 (0/1 and [0, 1]) before any no-answer threshold."""
  exact_scores = {}
  f1_scores = {}
  for article in dataset:
    for p in article["paragraphs"]:
      for qa in p["qas"]:
        qid = qa["id"]
        gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold_answers:
          # The only correct answer to an unanswerable question is the empty string.
          gold_answers = [""]
        if qid not in preds:
          if warn is not None:
            warn(f"Missing prediction for {qid}")
          continue
        a_pred = preds[qid]
        exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
  return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
  """A question whose no-answer probability exceeds the threshold counts as "no answer"."""
  new_scores = {}
  for qid, s in scores.items():
    if na_probs[qid] > na_prob_thresh:
      new_scores[qid] = float(not qid_to_has_ans[qid])
    else:
      new_scores[qid] = s
  return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
  if not qid_list:
    total = len(exact_scores)
    exact = sum(exact_scores.values())
    f1 = sum(f1_scores.values())
  else:
    total = len(qid_list)
    exact = sum(exact_scores[k] for k in qid_list)
    f1 = sum(f1_scores[k] for k in qid_list)
  if total == 0:
    raise errors.UserError("no prediction matches a question of the dataset; "
                                 "check that the predictions belong to this data file")
  return collections.OrderedDict([
      ("exact", 100.0 * exact / total),
      ("f1", 100.0 * f1 / total),
      ("total", total),
  ])


def merge_eval(main_eval, new_eval, prefix):
  for k in new_eval:
    main_eval[f"{prefix}_{k}"] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
  """Sweeps the no-answer threshold over the sorted na_probs; returns (best %, threshold).

  Starts from "answer nothing" (every unanswerable question right) and, question by
  question in increasing no-answer probability, switches to the model's answer. Only
  the questions in `scores` (those with a prediction) count, in the numerator as in the
  denominator; the official script counts every unanswerable question of the dataset in
  the start score, which exceeds 100% when predictions are missing.
  """
  num_no_ans = sum(1 for k in scores if not qid_to_has_ans[k])
  cur_score = num_no_ans
  best_score = cur_score
  best_thresh = 0.0
  qid_list = sorted(na_probs, key=lambda k: na_probs[k])
  for qid in qid_list:
    if qid not in scores:
      continue
    if qid_to_has_ans[qid]:
      diff = scores[qid]
    else:
      diff = -1 if preds[qid] else 0
    cur_score += diff
    if cur_score > best_score:
      best_score = cur_score
      best_thresh = na_probs[qid]
  return 100.0 * best_score / len(scores), best_thresh


def find_all_best_thresh(main_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans):
  best_exact, exact_thresh = find_best_thresh(preds, exact_raw, na_probs, qid_to_has_ans)
  best_f1, f1_thresh = find_best_thresh(preds, f1_raw, na_probs, qid_to_has_ans)
  main_eval["best_exact"] = best_exact
  main_eval["best_exact_thresh"] = exact_thresh
  main_eval["best_f1"] = best_f1
  main_eval["best_f1_thresh"] = f1_thresh


def evaluate_v2(dataset, preds, na_probs=None, na_prob_thresh=1.0, warn=None):
  """evaluate-v2.0.py: exact/f1/total, HasAns_*, NoAns_* and, given na_probs, best_*.

  Args:
    dataset: the "data" list of a SQuAD JSON file.
    preds: {question id: answer text}; "" means "no answer".
    na_probs: {question id: no-answer score} (run_squad's null_odds.json) or None. With
      None every score is 0.0 and no threshold search is reported, as the official script.
    na_prob_thresh: questions whose na_prob is above it are scored as "no answer".
    warn: called with one message per question without a prediction (the official
      "Missing prediction for ID"), then once with their count.
  Returns:
    An OrderedDict in the official script's key order.
  """
  have_na_probs = na_probs is not None
  if not have_na_probs:
    na_probs = {k: 0.0 for k in preds}
  qid_to_has_ans = make_qid_to_has_ans(dataset)
  exact_raw, f1_raw = get_raw_scores(dataset, preds, warn=warn)
  missing_na = [qid for qid in exact_raw if qid not in na_probs]
  if missing_na:
    raise errors.UserError(f"the no-answer probability file has no entry for question "
                                 f"{missing_na[0]} ({len(missing_na)} missing); pass the "
                                 "null_odds.json written with these predictions")
  # Questions without a prediction are left out of every total, like the official
  # "Missing prediction" path (which crashes on the HasAns/NoAns split instead).
  missing = len(qid_to_has_ans) - len(exact_raw)
  if missing and warn is not None:
    warn(f"{missing} of {len(qid_to_has_ans)} questions have no prediction; every score "
         f"covers the {len(exact_raw)} predicted questions only")
  has_ans_qids = [k for k, v in qid_to_has_ans.items() if v and k in exact_raw]
  no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v and k in exact_raw]
  exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
  f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
  out_eval = make_eval_dict(exact_thresh, f1_thresh)
  if has_ans_qids:
    merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids),
               "HasAns")
  if no_ans_qids:
    merge_eval(out_eval, make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids),
               "NoAns")
  if have_na_probs:
    find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
  return out_eval


def score_predicted(dataset, predictions, na_probs=None,
                    version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                    path="predict_file"):
  """The official scores of the questions of `dataset` that have a prediction.

  run_squad predicts a slice of a file (--predict_articles, --max_predict_examples); the
  file is cut down to the predicted questions and scored with evaluate_v1 (v1.1 keys
  exact_match, f1) or evaluate_v2 (with na_probs: run_squad's null_odds.json).
  Returns a dict, or None when no predicted question has a gold answer (a test file).
  """
  subset = []
  answered = 0
  for article in dataset:
    paragraphs = []
    for paragraph in article["paragraphs"]:
      qas = [qa for qa in paragraph["qas"] if qa["id"] in predictions]
      answered += sum(1 for qa in qas if qa.get("answers"))
      if qas:
        paragraphs.append({"context": paragraph["context"], "qas": qas})
    if paragraphs:
      subset.append({"paragraphs": paragraphs})
  if not answered:
    return None
  subset = check_dataset({"data": subset}, path)
  if version_2_with_negative:
    return dict(evaluate_v2(subset, predictions, na_probs=na_probs))
  return evaluate_v1(subset, predictions)


def dataset_version(dataset_json):
  """"1.1" or "2.0" from a SQuAD file's "version" field ("1.1", "v2.0", ...)."""
  version = str(dataset_json.get("version", "")).lstrip("vV")
  if version.startswith("1"):
    return "1.1"
  if version.startswith("2"):
    return "2.0"
  # No usable version field: a file with an unanswerable question can only be 2.0.
  has_impossible = any(qa.get("is_impossible") or not qa.get("answers")
                       for article in dataset_json.get("data", [])
                       for p in article.get("paragraphs", []) for qa in p.get("qas", []))
  return "2.0" if has_impossible else "1.1"


# ----------------------------------------------------------------------------- files


class _DuplicateKey(Exception):
  pass


def _unique_keys(pairs):
  result = {}
  for key, value in pairs:
    if key in result:
      raise _DuplicateKey(key)
    result[key] = value
  return result


def load_json(path, what="JSON file"):
  """json.load with a one-line UserError naming the file, line and column when malformed,
  or when an object repeats a key (json.load would silently keep the last value: a
  predictions file with a question twice, a data file with two "answers"). The one
  reader of SQuAD's JSON files: run_squad's data (squad_data) and the scorer's inputs."""
  raw = file_io.read_bytes(path, missing_hint=f"; expected a {what}", expected=f"a {what}")
  try:
    return json.loads(file_io.decode_text(raw), object_pairs_hook=_unique_keys)
  except _DuplicateKey as exc:
    raise errors.UserError(
        f"{path}: the key {exc.args[0]!r} appears twice in one JSON object; each {what} "
        "entry must be unique") from None
  except UnicodeDecodeError as exc:
    raise errors.UserError(errors.not_utf8_message(path, exc)) from None
  except json.JSONDecodeError as exc:
    raise errors.UserError(
        f"{path}:{exc.lineno}:{exc.colno}: malformed {what} ({exc.msg})") from None


def check_answer_map(obj, path, what):
  """Checks a predictions / null-odds file: a JSON object {question id: value}."""
  if not isinstance(obj, dict):
    raise errors.UserError(
        f"{path}: a {what} must be a JSON object {{question id: ...}}, "
        f"got a {type(obj).__name__}")
  for key, value in obj.items():
    if what == "predictions file" and not isinstance(value, str):
      raise errors.UserError(
          f"{path}: the answer for question {key} is {type(value).__name__}, expected a "
          "string (predictions.json, not nbest_predictions.json)")
    if what != "predictions file" and (isinstance(value, bool) or
                                       not isinstance(value, (int, float))):
      raise errors.UserError(
          f"{path}: the value for question {key} is {type(value).__name__}, expected a number")
  return obj


def check_dataset(obj, path):
  """Checks the outline of a SQuAD file; returns its "data" list.

  Question ids must be unique: a repeated id would be scored twice with one prediction
  (v1.1) or collapse into one question (v2.0).
  """
  seen = {}
  if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
    raise errors.UserError(
        f"{path}: not a SQuAD file (expected a JSON object with a \"data\" list of articles)")
  for a, article in enumerate(obj["data"]):
    paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
    if not isinstance(paragraphs, list):
      raise errors.UserError(f"{path}: article {a} has no \"paragraphs\" list")
    for p, paragraph in enumerate(paragraphs):
      qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
      if not isinstance(qas, list):
        raise errors.UserError(
            f"{path}: article {a} paragraph {p} has no \"qas\" list")
      for q, qa in enumerate(qas):
        where = f"article {a} paragraph {p} question {q}"
        if not isinstance(qa, dict) or "id" not in qa:
          raise errors.UserError(f"{path}: {where} has no \"id\"")
        if not isinstance(qa["id"], str):
          raise errors.UserError(
              f"{path}: {where}: the question id {qa['id']!r} is a "
              f"{type(qa['id']).__name__}, not a string (predictions are keyed by strings)")
        if qa["id"] in seen:
          raise errors.UserError(
              f"{path}: {where}: duplicate question id {qa['id']!r} (first at "
              f"{seen[qa['id']]}); ids must be unique to be scored")
        seen[qa["id"]] = where
        if not isinstance(qa.get("answers", []), list):
          raise errors.UserError(
              f"{path}: question {qa['id']} has an \"answers\" field that is not a list")
        for answer in qa.get("answers", []):
          if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
            raise errors.UserError(
                f"{path}: question {qa['id']} has an answer without a \"text\" string")
        qa.setdefault("answers", [])
  if not seen:  # nothing to score: name the file
    raise errors.UserError(
        f"{path}: the SQuAD file has no questions (every article's paragraphs have empty "
        "\"qas\" lists); pass the data file the predictions were made on")
  return obj["data"]
