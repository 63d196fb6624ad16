"""SQuAD decoding: the model's start/end logits -> answer text, n-best lists, null odds.

Faithful to the original's write_predictions (candidate spans per window, projected back
onto the context by `get_final_text`; for v2.0 the null score against
null_score_diff_threshold). Per-word BasicTokenizer output is cached: the same text as
the original, much faster. No TensorFlow."""

import collections
import json
import math

from absl import logging
import numpy as np

from bert.squad import squad_options
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import errors

# A null score above any real start+end logit sum: "no window offered a null answer yet".
_NO_NULL_SCORE = 1000000

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])


def compute_softmax(scores):
  """Softmax of a list of floats, shifted by the max for stability (the original's)."""
  if not scores:
    return []
  max_score = max(scores)
  exp_scores = [math.exp(score - max_score) for score in scores]
  total_sum = 0.0
  for x in exp_scores:
    total_sum += x
  return [x / total_sum for x in exp_scores]


def get_best_indexes(logits, n_best_size):
  """Indices of the n_best_size largest logits, largest first; ties keep index order."""
  logits = np.asarray(logits)
  return np.argsort(-logits, kind="stable")[:n_best_size].tolist()


# --------------------------------------------------------------------------- text


def _non_space_positions(text):
  """Index in `text` of every character that is not " " (the n-th entry: the n-th one)."""
  return [i for i, c in enumerate(text) if c != " "]


def _map_through_spaces(position, tok_text, orig_ns_to_s):
  """tok_text index -> orig_text index via the space-free texts; None if it is a space."""
  if tok_text[position] == " ":
    return None
  ns_position = position - tok_text.count(" ", 0, position)
  if ns_position >= len(orig_ns_to_s):
    return None
  return orig_ns_to_s[ns_position]


def get_final_text(pred_text, orig_text, do_lower_case,
                   verbose_logging=squad_options.VERBOSE_LOGGING,
                   tok_text=None):
  """Projects a de-tokenized prediction back onto the original text.

  pred_text is normalised (lower-cased, accents stripped, punctuation split off) and
  orig_text is the span of original words it came from, e.g.
    pred_text = "steve smith", orig_text = "Steve Smith's"  ->  "Steve Smith".
  orig_text is run through BasicTokenizer, pred_text is located in it, and the two are
  aligned character by character after removing spaces (BasicTokenizer only inserts or
  removes spaces and changes case, so the space-free texts have the same length). When
  the alignment fails, the whole orig_text is returned (the original's fallback).

  tok_text: " ".join(BasicTokenizer(do_lower_case).tokenize(orig_text)) when the caller
  has it already (compute_predictions builds it from cached per-word tokenizations).
  """
  if tok_text is None:
    basic_tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    tok_text = " ".join(basic_tokenizer.tokenize(orig_text))

  start_position = tok_text.find(pred_text)
  if start_position == -1:
    if verbose_logging:
      logging.info("Unable to find text: '%s' in '%s'", pred_text, orig_text)
    return orig_text
  end_position = start_position + len(pred_text) - 1

  orig_ns_text = orig_text.replace(" ", "")
  tok_ns_text = tok_text.replace(" ", "")
  if len(orig_ns_text) != len(tok_ns_text):
    if verbose_logging:
      logging.info("Length not equal after stripping spaces: '%s' vs '%s'",
                   orig_ns_text, tok_ns_text)
    return orig_text

  # Character n of the space-free texts is the same character in both; map the
  # prediction's first and last characters through that alignment.
  orig_ns_to_s = _non_space_positions(orig_text)
  orig_start_position = _map_through_spaces(start_position, tok_text, orig_ns_to_s)
  if orig_start_position is None:
    if verbose_logging:
      logging.info("Couldn't map start position")
    return orig_text
  orig_end_position = _map_through_spaces(end_position, tok_text, orig_ns_to_s)
  if orig_end_position is None:
    if verbose_logging:
      logging.info("Couldn't map end position")
    return orig_text

  return orig_text[orig_start_position:(orig_end_position + 1)]


def detokenize_wordpieces(tok_tokens):
  """Joins WordPiece tokens into text the way the original does before get_final_text."""
  tok_text = " ".join(tok_tokens)
  tok_text = tok_text.replace(" ##", "")
  tok_text = tok_text.replace("##", "")
  tok_text = tok_text.strip()
  return " ".join(tok_text.split())


class _BasicTokenCache:
  """BasicTokenizer output per context word, so each word is tokenized once.

  BasicTokenizer treats every whitespace-separated word on its own (cleaning, CJK
  spacing, lower-casing, accent stripping and punctuation splitting are all per
  character or per word), so tokenizing " ".join(words) gives the concatenation of the
  words' tokens: the same tok_text as the original, at a fraction of the cost.
  """

  def __init__(self, basic_tokenizer):
    self.basic_tokenizer = basic_tokenizer
    self.words = {}

  def tok_text(self, orig_tokens):
    pieces = []
    for word in orig_tokens:
      tokens = self.words.get(word)
      if tokens is None:
        tokens = self.basic_tokenizer.tokenize(word)
        self.words[word] = tokens
      pieces.extend(tokens)
    return " ".join(pieces)


# --------------------------------------------------------------------------- n-best


_Prelim = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit",
                         "end_logit"])
_Nbest = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])
# The v2.0 null candidate: the window with the smallest start_logit[0] + end_logit[0].
_Null = collections.namedtuple("Null", ["score", "feature_index", "start_logit",
                                        "end_logit"])


def _prelim_for_feature(feature_index, feature, start_logits, end_logits, n_best_size,
                        max_answer_length):
  """The valid (start, end) pairs among the n-best starts and ends of one window."""
  start_indexes = get_best_indexes(start_logits, n_best_size)
  end_indexes = get_best_indexes(end_logits, n_best_size)
  num_tokens = len(feature.tokens)
  to_orig = feature.token_to_orig_map
  max_context = feature.token_is_max_context
  prelim = []
  for start_index in start_indexes:
    # Spans starting in the question, on [CLS]/[SEP] or padding, or where another window
    # has more context are invalid.
    if start_index >= num_tokens or start_index not in to_orig:
      continue
    if not max_context.get(start_index, False):
      continue
    for end_index in end_indexes:
      if end_index >= num_tokens or end_index not in to_orig:
        continue
      if end_index < start_index:
        continue
      if end_index - start_index + 1 > max_answer_length:
        continue
      prelim.append(_Prelim(feature_index, start_index, end_index,
                            float(start_logits[start_index]), float(end_logits[end_index])))
  return prelim


def _prelim_predictions(features, results, n_best_size, max_answer_length,
                        version_2_with_negative):
  """(candidate spans of every window, best first; the _Null candidate or None)."""
  prelim_predictions = []
  null = _Null(_NO_NULL_SCORE, 0, 0.0, 0.0)
  for feature_index, (feature, result) in enumerate(zip(features, results)):
    start_logits = np.asarray(result.start_logits, dtype=np.float64)
    end_logits = np.asarray(result.end_logits, dtype=np.float64)
    if version_2_with_negative:
      feature_null_score = float(start_logits[0] + end_logits[0])
      if feature_null_score < null.score:
        null = _Null(feature_null_score, feature_index, float(start_logits[0]),
                     float(end_logits[0]))
    prelim_predictions.extend(_prelim_for_feature(
        feature_index, feature, start_logits, end_logits, n_best_size, max_answer_length))
  if not version_2_with_negative:
    null = None
  else:
    prelim_predictions.append(_Prelim(null.feature_index, 0, 0, null.start_logit,
                                      null.end_logit))
  prelim_predictions = sorted(prelim_predictions,
                              key=lambda x: (x.start_logit + x.end_logit), reverse=True)
  return prelim_predictions, null


def _nbest_entries(example, features, prelim_predictions, null, n_best_size,
                   do_lower_case, verbose_logging, token_cache):
  """The n-best _Nbest answers: distinct texts, best first ("" is the null answer)."""
  seen_predictions = set()
  nbest = []
  for pred in prelim_predictions:
    if len(nbest) >= n_best_size:
      break
    feature = features[pred.feature_index]
    if pred.start_index > 0:  # a non-null prediction
      tok_tokens = feature.tokens[pred.start_index:(pred.end_index + 1)]
      orig_doc_start = feature.token_to_orig_map[pred.start_index]
      orig_doc_end = feature.token_to_orig_map[pred.end_index]
      orig_tokens = example.doc_tokens[orig_doc_start:(orig_doc_end + 1)]
      final_text = get_final_text(detokenize_wordpieces(tok_tokens), " ".join(orig_tokens),
                                  do_lower_case, verbose_logging=verbose_logging,
                                  tok_text=token_cache.tok_text(orig_tokens))
      if final_text in seen_predictions:
        continue
    else:
      final_text = ""
    seen_predictions.add(final_text)
    nbest.append(_Nbest(final_text, pred.start_logit, pred.end_logit))

  # The empty answer is always among a v2.0 n-best, even when it ranks below n_best_size.
  if null is not None and "" not in seen_predictions:
    nbest.append(_Nbest("", null.start_logit, null.end_logit))
  # In rare cases no span is valid (every window too short); the original's nonce answer.
  if not nbest:
    nbest.append(_Nbest("empty", 0.0, 0.0))
  return nbest


def _nbest_json(nbest):
  """The n-best as OrderedDicts {text, probability, start_logit, end_logit}."""
  probs = compute_softmax([entry.start_logit + entry.end_logit for entry in nbest])
  nbest_json = []
  for i, entry in enumerate(nbest):
    output = collections.OrderedDict()
    output["text"] = entry.text
    output["probability"] = probs[i]
    output["start_logit"] = entry.start_logit
    output["end_logit"] = entry.end_logit
    nbest_json.append(output)
  return nbest_json


def predict_example(example, features, results, n_best_size, max_answer_length,
                    do_lower_case,
                    version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                    null_score_diff_threshold=squad_options.NULL_SCORE_DIFF_THRESHOLD,
                    verbose_logging=squad_options.VERBOSE_LOGGING, token_cache=None):
  """The original's write_predictions for one example.

  Args:
    example: the squad_data.SquadExample.
    features: its squad_features.InputFeatures (all windows, in order).
    results: a RawResult per feature (start_logits/end_logits: float [max_seq_length]).
    token_cache: a _BasicTokenCache shared over examples, or None.
  Returns:
    (answer text, n-best list of OrderedDicts {text, probability, start_logit,
    end_logit}, null score difference or None when not version_2_with_negative).
  """
  if token_cache is None:
    token_cache = _BasicTokenCache(tokenization.BasicTokenizer(do_lower_case=do_lower_case))
  prelim_predictions, null = _prelim_predictions(features, results, n_best_size,
                                                 max_answer_length, version_2_with_negative)
  nbest = _nbest_entries(example, features, prelim_predictions, null, n_best_size,
                         do_lower_case, verbose_logging, token_cache)
  nbest_json = _nbest_json(nbest)
  if null is None:
    return nbest_json[0]["text"], nbest_json, None
  best_non_null_entry = next((entry for entry in nbest if entry.text), None)
  if best_non_null_entry is None:
    # Only the null answer was valid (the original crashed here): answer "" with a
    # difference far above any threshold.
    return "", nbest_json, float(_NO_NULL_SCORE)
  score_diff = null.score - best_non_null_entry.start_logit - best_non_null_entry.end_logit
  if score_diff > null_score_diff_threshold:
    return "", nbest_json, score_diff
  return best_non_null_entry.text, nbest_json, score_diff


def compute_predictions(all_examples, all_features, all_results, n_best_size,
                        max_answer_length, do_lower_case,
                        version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                        null_score_diff_threshold=squad_options.NULL_SCORE_DIFF_THRESHOLD,
                        verbose_logging=squad_options.VERBOSE_LOGGING):
  """Answers for every example from the model's logits.

  Args:
    all_examples: list of squad_data.SquadExample.
    all_features: list of squad_features.InputFeatures (convert_examples_to_features).
    all_results: list of RawResult, one per feature (any order, matched by unique_id).
  Returns:
    (all_predictions {qas_id: text}, all_nbest_json {qas_id: [...]},
     scores_diff_json {qas_id: float}, empty unless version_2_with_negative),
    all OrderedDicts in example order.
  Raises:
    ValueError: a feature has no result (predictions and features out of step), or two
      examples share a qas_id (one answer would overwrite the other).
  """
  example_index_to_features = collections.defaultdict(list)
  for feature in all_features:
    example_index_to_features[feature.example_index].append(feature)
  unique_id_to_result = {result.unique_id: result for result in all_results}
  token_cache = _BasicTokenCache(tokenization.BasicTokenizer(do_lower_case=do_lower_case))

  all_predictions = collections.OrderedDict()
  all_nbest_json = collections.OrderedDict()
  scores_diff_json = collections.OrderedDict()
  for example_index, example in enumerate(all_examples):
    if example.qas_id in all_predictions:
      raise errors.UserError(
          f"two questions have the id {example.qas_id}; ids must be unique")
    features = example_index_to_features[example_index]
    try:
      results = [unique_id_to_result[f.unique_id] for f in features]
    except KeyError as exc:
      raise ValueError(f"no model output for feature {exc.args[0]} of question "
                       f"{example.qas_id}") from None
    text, nbest_json, score_diff = predict_example(
        example, features, results, n_best_size, max_answer_length, do_lower_case,
        version_2_with_negative, null_score_diff_threshold,
        verbose_logging=verbose_logging, token_cache=token_cache)
    all_predictions[example.qas_id] = text
    all_nbest_json[example.qas_id] = nbest_json
    if version_2_with_negative:
      scores_diff_json[example.qas_id] = score_diff
  return all_predictions, all_nbest_json, scores_diff_json


# --------------------------------------------------------------------------- files


def _write_json_like_original(path, obj):
  # json.dumps(indent=4) with ASCII escapes plus a newline: byte for byte the original.
  with errors.disk_full_names(path), atomic_output.atomic_open(path) as writer:
    writer.write(json.dumps(obj, indent=4) + "\n")


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case, output_prediction_file,
                      output_nbest_file, output_null_log_odds_file=None,
                      version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                      null_score_diff_threshold=squad_options.NULL_SCORE_DIFF_THRESHOLD,
                      verbose_logging=squad_options.VERBOSE_LOGGING):
  """Writes predictions.json, nbest_predictions.json and (v2.0) null_odds.json atomically.

  Returns all_predictions ({qas_id: text}).
  """
  all_predictions, all_nbest_json, scores_diff_json = compute_predictions(
      all_examples, all_features, all_results, n_best_size, max_answer_length,
      do_lower_case, version_2_with_negative, null_score_diff_threshold, verbose_logging)
  write_prediction_files(all_predictions, all_nbest_json, scores_diff_json,
                         output_prediction_file, output_nbest_file,
                         output_null_log_odds_file if version_2_with_negative else None)
  return all_predictions


def write_prediction_files(all_predictions, all_nbest_json, scores_diff_json,
                           output_prediction_file, output_nbest_file,
                           output_null_log_odds_file=None):
  """Writes what compute_predictions returned; null_odds.json only when a path is given."""
  logging.info("Writing predictions to: %s", output_prediction_file)
  _write_json_like_original(output_prediction_file, all_predictions)
  logging.info("Writing nbest to: %s", output_nbest_file)
  _write_json_like_original(output_nbest_file, all_nbest_json)
  if output_null_log_odds_file:
    _write_json_like_original(output_null_log_odds_file, scores_diff_json)


# --------------------------------------------------------------------------- one question


def answer_from_logits(example, features, start_logits, end_logits,
                       do_lower_case=tokenization.DO_LOWER_CASE,
                       n_best_size=squad_options.N_BEST_SIZE,
                       max_answer_length=squad_options.MAX_ANSWER_LENGTH,
                       version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                       null_score_diff_threshold=squad_options.NULL_SCORE_DIFF_THRESHOLD):
  """Turns a SQuAD model's logits for one question into its answer text.

  Args:
    example, features: from `squad_features.features_for_question` (or one example of
      read_squad_examples with its features).
    start_logits, end_logits: float [num_windows, max_seq_length], the model outputs
      for `features` in the same order.
    do_lower_case: as the tokenizer; decides how the text is aligned back.
  Returns:
    (answer text, n-best list of {text, probability, start_logit, end_logit}, null score
    difference or None). With version_2_with_negative the answer is "" when the null
    score beats the best span by more than null_score_diff_threshold.

  Example:
    example, feats = squad_features.features_for_question(q, context, tokenizer)
    out = model({k: np.array([getattr(f, k) for f in feats], np.int32)
                 for k in ("input_ids", "input_mask", "segment_ids")})
    text, nbest, _ = squad_decoding.answer_from_logits(example, feats,
                                                       out["start_logits"],
                                                       out["end_logits"])
  """
  start_logits = np.asarray(start_logits)
  end_logits = np.asarray(end_logits)
  if start_logits.shape[0] != len(features) or end_logits.shape[0] != len(features):
    raise ValueError(f"expected logits for {len(features)} windows, got "
                     f"{start_logits.shape[0]} and {end_logits.shape[0]}")
  results = [RawResult(f.unique_id, s, e)
             for f, s, e in zip(features, start_logits, end_logits)]
  return predict_example(example, features, results, n_best_size, max_answer_length,
                         do_lower_case, version_2_with_negative, null_score_diff_threshold)
