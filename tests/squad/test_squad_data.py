"""SQuAD: reading (squad_data), windows and max-context (squad_features), answer
alignment and n-best post-processing (squad_decoding)."""
import collections
import json
import math

import numpy as np
import pytest

from bert.squad import squad_data
from bert.squad import squad_decoding
from bert.squad import squad_features
from bert import tokenization
from bert.utils import errors
from conftest import shared_path

# Every WordPiece the hand-made examples of the reading tests need (uncased).
SMALL_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "born", "in", "zurich", "(", "1895",
               "\u2013", "1943", ")", ",", "he", "moved", "to", "bern", ".", "when", "where",
               "what", "?", "a", "b", "q"]


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.FullTokenizer(shared_path("vocab", "uncased_vocab.txt"), True)


@pytest.fixture(params=["small", "real"])
def any_tokenizer(request, tmp_path):
  """A vocabulary the test writes itself, and the real uncased one where it exists."""
  if request.param == "real":
    return tokenization.FullTokenizer(shared_path("vocab", "uncased_vocab.txt"), True)
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(SMALL_VOCAB) + "\n", encoding="utf-8")
  return tokenization.FullTokenizer(str(path), True)


# --------------------------------------------------------------------------- reading


def test_whitespace_split_char_map():
  # U+202F splits like a space (the original's rule); U+00A0 does not.
  doc, offsets = squad_data.whitespace_split(" ab\tc\u202fd\u00a0e ")
  assert doc == ["ab", "c", "d\u00a0e"]
  assert offsets == [-1, 0, 0, 0, 1, 1, 2, 2, 2, 2]


def _write_squad(tmp_path, paragraphs, name="data.json"):
  path = tmp_path / name
  path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t",
                                                          "paragraphs": paragraphs}]}))
  return str(path)


def test_read_training_answers_skip_mismatched_offsets(tmp_path, any_tokenizer):
  context = "Born in Z\u00fcrich (1895\u20131943), he\tmoved to Bern."
  qas = [
      {"id": "good", "question": "When?", "answers": [
          {"text": "1895", "answer_start": context.index("1895")},
          {"text": "1895\u20131943", "answer_start": context.index("1895")}]},
      {"id": "wrong-offset", "question": "Where?", "answers": [
          {"text": "Bern", "answer_start": 0}]},
      {"id": "outside", "question": "Where?", "answers": [
          {"text": "Bern", "answer_start": 999}]},
      {"id": "moved", "question": "What?", "answers": [
          {"text": "moved", "answer_start": context.index("moved")}]},
  ]
  path = _write_squad(tmp_path, [{"context": context, "qas": qas}])
  stats = squad_data.ReadStats()
  examples = squad_data.read_squad_examples(path, is_training=True, stats=stats)
  assert [e.qas_id for e in examples] == ["good", "moved"]
  assert (stats.questions, stats.skipped_answers, stats.multi_answer) == (4, 2, 1)
  good, moved = examples
  assert good.doc_tokens == ["Born", "in", "Z\u00fcrich", "(1895\u20131943),", "he", "moved",
                             "to", "Bern."]
  assert (good.start_position, good.end_position, good.orig_answer_text) == (3, 3, "1895")
  assert (moved.start_position, moved.end_position) == (5, 5)
  # The word "(1895–1943)," is tightened to the WordPiece "1895" of the answer.
  features = squad_features.convert_examples_to_features(examples, any_tokenizer, 32, 8, 8,
                                                         is_training=True)
  first = features[0]
  assert first.tokens[first.start_position:first.end_position + 1] == ["1895"]
  assert first.tokens[first.start_position - 1] == "("
  second = features[1]
  assert second.tokens[second.start_position:second.end_position + 1] == ["moved"]


def test_read_errors_are_one_line_user_errors(tmp_path, any_tokenizer):
  bad = tmp_path / "bad.json"
  bad.write_text('{"data": [\n  {"paragraphs": [}\n]}')
  with pytest.raises(errors.UserError, match=r"bad\.json:2:19: malformed SQuAD data file"):
    squad_data.read_squad_examples(str(bad), is_training=False)
  no_id = _write_squad(tmp_path, [{"context": "a b", "qas": [{"question": "q?"}]}], "noid.json")
  with pytest.raises(errors.UserError,
                     match=r"noid\.json: article 0 paragraph 0 question 0: the question has "
                           "no \"id\""):
    squad_data.read_squad_examples(no_id, is_training=False)
  empty = _write_squad(tmp_path, [{"context": " \n ", "qas": [{"id": "x", "question": "q"}]}],
                       "empty.json")
  with pytest.raises(errors.UserError, match="article 0 paragraph 0: the context is empty"):
    squad_data.read_squad_examples(empty, is_training=False)
  # Predict mode ignores answers; a v2.0 unanswerable question trains on [CLS].
  v2 = _write_squad(tmp_path, [{"context": "a b", "qas": [
      {"id": "imp", "question": "q", "answers": [], "is_impossible": True}]}], "v2.json")
  examples = squad_data.read_squad_examples(v2, is_training=True,
                                            version_2_with_negative=True)
  assert (examples[0].is_impossible, examples[0].start_position) == (True, -1)
  features = squad_features.convert_examples_to_features(examples, any_tokenizer, 16, 4, 4,
                                                         is_training=True)
  assert (features[0].start_position, features[0].end_position) == (0, 0)


def _qa(qid, question="q?", **extra):
  return dict({"id": qid, "question": question}, **extra)


def test_duplicate_question_ids_are_refused_for_prediction(tmp_path):
  paragraphs = [{"context": "a b", "qas": [_qa("x1"), _qa("dup")]},
                {"context": "a c", "qas": [_qa("dup")]}]
  path = _write_squad(tmp_path, paragraphs, "dup.json")
  with pytest.raises(errors.UserError) as caught:
    squad_data.read_squad_examples(path, is_training=False)
  assert str(caught.value) == (
      f"{path}: article 0 paragraph 1 question 0: duplicate question id 'dup' (first at "
      "article 0 paragraph 0 question 1); ids must be unique, or one question's prediction "
      "overwrites the other's")
  # Training keys nothing by the id: the same file trains on all three questions.
  answers = [{"text": "a", "answer_start": 0}]
  for paragraph in paragraphs:
    for qa in paragraph["qas"]:
      qa["answers"] = answers
  path = _write_squad(tmp_path, paragraphs, "dup_train.json")
  assert len(squad_data.read_squad_examples(path, is_training=True)) == 3
  # An id that is not a string would be written to predictions.json as one ("1"), where
  # it can collide with a real "1" and never match the data file's id.
  path = _write_squad(tmp_path, [{"context": "a b", "qas": [_qa(1)]}], "int.json")
  with pytest.raises(errors.UserError,
                     match=r"question 0: the question id 1 is a int, not a string"):
    squad_data.read_squad_examples(path, is_training=False)
  # compute_predictions refuses duplicates built by hand, rather than losing one.
  example = squad_data.SquadExample("same", "q", ["a"])
  with pytest.raises(ValueError, match="two questions have the id same"):
    squad_decoding.compute_predictions([example, example], [], [], 20, 30, True)


@pytest.mark.parametrize("is_training", [False, True])
def test_v2_questions_need_version_2_with_negative(tmp_path, is_training):
  answers = [{"text": "a", "answer_start": 0}]
  path = _write_squad(tmp_path, [{"context": "a b", "qas": [
      _qa("ok", answers=answers), _qa("imp", answers=[], is_impossible=True)]}], "v2.json")
  with pytest.raises(errors.UserError) as caught:
    squad_data.read_squad_examples(path, is_training=is_training)
  assert str(caught.value) == (
      f"{path}: article 0 paragraph 0 question 1 (id imp): \"is_impossible\" is true, so "
      "this is a SQuAD 2.0 file; pass --version_2_with_negative (without it no question can "
      "get the null answer)")
  examples = squad_data.read_squad_examples(path, is_training=is_training,
                                            version_2_with_negative=True)
  assert [(e.qas_id, e.is_impossible) for e in examples] == [
      ("ok", False), ("imp", is_training)]
  # "is_impossible": false is a v2.0 file's answerable question, fine without the flag.
  path = _write_squad(tmp_path, [{"context": "a b", "qas": [
      _qa("ok", answers=answers, is_impossible=False)]}], "v2_answerable.json")
  assert len(squad_data.read_squad_examples(path, is_training=is_training)) == 1


def test_article_slice(tmp_path):
  path = tmp_path / "three.json"
  path.write_text(json.dumps({"data": [
      {"paragraphs": [{"context": f"w{i}", "qas": [_qa(f"q{i}")]}]} for i in range(3)]}))
  examples = squad_data.read_squad_examples(str(path), False, articles=slice(1, None))
  assert [e.qas_id for e in examples] == ["q1", "q2"]


# --------------------------------------------------------------------------- windows


def _check_is_max_context(doc_spans, cur_span_index, position):
  """The original's per-token max-context rule, literally (the reference for the NumPy
  version): score = min(left, right context) + 0.01 * window length; first best wins."""
  best_score = None
  best_span_index = None
  for span_index, doc_span in enumerate(doc_spans):
    end = doc_span.start + doc_span.length - 1
    if position < doc_span.start or position > end:
      continue
    score = min(position - doc_span.start, end - position) + 0.01 * doc_span.length
    if best_score is None or score > best_score:
      best_score = score
      best_span_index = span_index
  return cur_span_index == best_span_index


def test_doc_spans_and_max_context_hand_made():
  spans = squad_features.make_doc_spans(10, 4, 3)
  assert spans == [(0, 4), (3, 4), (6, 4)]
  # Token 3 has score 0.04 in both windows 0 and 1: the first window wins the tie.
  flags = squad_features.max_context_flags(spans)
  assert flags == [[True, True, True, True], [False, True, True, True],
                   [False, True, True, True]]
  spans = squad_features.make_doc_spans(7, 5, 2)
  assert spans == [(0, 5), (2, 5)]
  # Token 2: 2.05 in window 0 vs 0.05; token 3: 1.05 vs 1.05 (tie, window 0);
  # token 4: 0.05 vs 2.05.
  assert squad_features.max_context_flags(spans) == [[True, True, True, True, False],
                                                 [False, False, True, True, True]]
  # A shorter last window loses a tie through the 0.01 * length bonus.
  spans = squad_features.make_doc_spans(6, 4, 2)
  assert spans == [(0, 4), (2, 4)]
  spans = squad_features.make_doc_spans(7, 4, 3)
  assert spans == [(0, 4), (3, 4)]
  for doc_spans in ([(0, 5), (3, 3)], squad_features.make_doc_spans(50, 12, 5)):
    doc_spans = [squad_features.DocSpan(*s) for s in doc_spans]
    flags = squad_features.max_context_flags(doc_spans)
    for i, span in enumerate(doc_spans):
      assert flags[i] == [_check_is_max_context(doc_spans, i, span.start + k)
                          for k in range(span.length)]
  with pytest.raises(errors.UserError, match="raise --max_seq_length"):
    squad_features.make_doc_spans(10, 0, 3)


NORMANS = ("The Normans (Norman: Nourmands; French: Normands) gave their name to Normandy, "
           "a region in France.")


def _normans_example(training=True):
  doc, _ = squad_data.whitespace_split(NORMANS)
  answer = doc.index("France.")
  return squad_data.SquadExample("q", "In what country is Normandy located?", doc,
                                 "France" if training else None,
                                 answer if training else None,
                                 answer if training else None)


def test_windows_hand_made(tokenizer):
  # 27 document tokens; 24 - 5 (question, truncated) - 3 = 16 per window, stride 6.
  features = squad_features.convert_examples_to_features(
      [_normans_example()], tokenizer, max_seq_length=24, doc_stride=6, max_query_length=5,
      is_training=True)
  assert [f.unique_id for f in features] == [1000000000, 1000000001, 1000000002]
  head = ["[CLS]", "in", "what", "country", "is", "normandy", "[SEP]"]
  assert features[0].tokens == head + [
      "the", "norman", "##s", "(", "norman", ":", "no", "##ur", "##man", "##ds", ";",
      "french", ":", "norman", "##ds", ")", "[SEP]"]
  assert features[1].tokens[7:] == [
      "no", "##ur", "##man", "##ds", ";", "french", ":", "norman", "##ds", ")", "gave",
      "their", "name", "to", "normandy", ",", "[SEP]"]
  assert features[2].tokens[7:] == [
      ":", "norman", "##ds", ")", "gave", "their", "name", "to", "normandy", ",", "a",
      "region", "in", "france", ".", "[SEP]"]
  # "french" (document token 11): 4.16 in window 0, 5.16 in window 1.
  assert features[0].token_is_max_context[18] is False
  assert features[1].token_is_max_context[12] is True
  # ";" (token 10): 5.16 in window 0, 4.16 in window 1.
  assert features[0].token_is_max_context[17] is True
  assert features[1].token_is_max_context[11] is False
  assert features[2].token_to_orig_map[20] == 14  # "france" -> the word "France."
  # Only the last window holds the answer; the others point at [CLS].
  assert [(f.start_position, f.end_position) for f in features] == [(0, 0), (0, 0),
                                                                     (20, 20)]
  last = features[2]
  assert last.input_ids[:8] == [101, 1999, 2054, 2406, 2003, 13298, 102, 1024]
  assert last.input_ids[22:] == [102, 0] and last.input_mask[22:] == [1, 0]
  assert last.segment_ids == [0] * 7 + [1] * 16 + [0]


def _reference_convert(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                       is_training):
  """The original algorithm, literally: re-tokenize every word, check every token."""
  out = []
  for example in examples:
    query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
    tok_to_orig_index, orig_to_tok_index, all_doc_tokens = [], [], []
    for i, token in enumerate(example.doc_tokens):
      orig_to_tok_index.append(len(all_doc_tokens))
      for sub_token in tokenizer.tokenize(token):
        tok_to_orig_index.append(i)
        all_doc_tokens.append(sub_token)
    if is_training:
      tok_start = orig_to_tok_index[example.start_position]
      if example.end_position < len(example.doc_tokens) - 1:
        tok_end = orig_to_tok_index[example.end_position + 1] - 1
      else:
        tok_end = len(all_doc_tokens) - 1
      tok_start, tok_end = squad_features._improve_answer_span(
          all_doc_tokens, tok_start, tok_end, tokenizer, example.orig_answer_text)
    max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
    doc_spans, start_offset = [], 0
    while start_offset < len(all_doc_tokens):
      length = min(len(all_doc_tokens) - start_offset, max_tokens_for_doc)
      doc_spans.append(squad_features.DocSpan(start_offset, length))
      if start_offset + length == len(all_doc_tokens):
        break
      start_offset += min(length, doc_stride)
    for index, span in enumerate(doc_spans):
      tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
      to_orig, max_context = {}, {}
      for i in range(span.length):
        split = span.start + i
        to_orig[len(tokens)] = tok_to_orig_index[split]
        max_context[len(tokens)] = _check_is_max_context(doc_spans, index, split)
        tokens.append(all_doc_tokens[split])
      tokens.append("[SEP]")
      ids = tokenizer.convert_tokens_to_ids(tokens)
      ids += [0] * (max_seq_length - len(ids))
      positions = (None, None)
      if is_training:
        offset = len(query_tokens) + 2
        if tok_start >= span.start and tok_end <= span.start + span.length - 1:
          positions = (tok_start - span.start + offset, tok_end - span.start + offset)
        else:
          positions = (0, 0)
      out.append((tokens, to_orig, max_context, ids, positions))
  return out


def test_conversion_matches_the_original_algorithm_on_real_dev(tokenizer):
  examples = squad_data.read_squad_examples(shared_path("squad", "dev-v1.1.json"),
                                            is_training=True)[:45]
  for args in ((64, 20, 16), (40, 7, 9)):
    features = squad_features.convert_examples_to_features(examples, tokenizer, *args,
                                                       is_training=True)
    reference = _reference_convert(examples, tokenizer, *args, is_training=True)
    assert len(features) == len(reference) > len(examples)
    for f, (tokens, to_orig, max_context, ids, positions) in zip(features, reference):
      assert f.tokens == tokens
      assert f.token_to_orig_map == to_orig
      assert f.token_is_max_context == max_context
      assert f.input_ids == ids
      assert (f.start_position, f.end_position) == positions


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize("pred,orig,lower,expected", [
    ("steve smith", "Steve Smith's", True, "Steve Smith"),
    ("1895", "(1895-1943).", True, "1895"),
    ("zurich", "Z\u00fcrich.", True, "Z\u00fcrich"),
    # A decomposed accent makes the space-free texts differ in length: whole span back.
    ("zurich", "Zu\u0308rich.", True, "Zu\u0308rich."),
    ("london", "Paris,", True, "Paris,"),
    ("Smith", "Smith's", False, "Smith"),
    ("smith", "Smith's", False, "Smith's"),  # cased model: "smith" is not in "Smith ' s"
    ("new york", "in New York,", True, "New York"),
])
def test_get_final_text(pred, orig, lower, expected):
  assert squad_decoding.get_final_text(pred, orig, lower) == expected


def test_detokenize_and_softmax():
  assert squad_decoding.detokenize_wordpieces(["norman", "##ds", ")", "gave"]) == "normands ) gave"
  probs = squad_decoding.compute_softmax([9.0, 8.0, 3.0])
  z = 1 + math.exp(-1) + math.exp(-6)
  assert probs == pytest.approx([1 / z, math.exp(-1) / z, math.exp(-6) / z], rel=1e-12)
  assert squad_decoding.get_best_indexes([1.0, 3.0, 3.0, 2.0], 3) == [1, 2, 3]


def _normans_logits(features):
  """Hand-set logits over the three windows of test_windows_hand_made (seq 24)."""
  start = np.full((3, 24), -10.0, np.float32)
  end = np.full((3, 24), -10.0, np.float32)
  start[0, 3] = 20.0                       # in the question: never a valid start
  start[0, 18], end[0, 18] = 7.0, 7.0      # "french" where it lacks max context
  start[0, 0], end[0, 0] = 6.0, 6.0        # null score 12
  start[1, 12], end[1, 12] = 1.0, 1.0      # "french" with max context: "French", 2
  start[1, 0], end[1, 0] = 1.0, 2.0        # null score 3: the minimum over windows
  start[2, 12] = 6.0                       # "their": long spans
  start[2, 20], end[2, 20], end[2, 21] = 5.0, 4.0, 3.0   # "france", "france ."
  start[2, 0], end[2, 0] = 4.5, 2.5        # null score 7
  return [squad_decoding.RawResult(f.unique_id, start[i], end[i])
          for i, f in enumerate(features)]


def test_predictions_v1_and_v2_hand_made(tokenizer, tmp_path):
  example = _normans_example(training=False)
  features = squad_features.convert_examples_to_features([example], tokenizer, 24, 6, 5, False)
  results = _normans_logits(features)
  preds, nbest, diffs = squad_decoding.compute_predictions(
      [example], features, results, n_best_size=2, max_answer_length=5, do_lower_case=True)
  # (20, 20) 9 -> "France", (20, 21) 8 -> "France."; spans from "their" are too long.
  assert preds == {"q": "France"}
  assert [(e["text"], e["start_logit"], e["end_logit"]) for e in nbest["q"]] == [
      ("France", 5.0, 4.0), ("France.", 5.0, 3.0)]
  assert nbest["q"][0]["probability"] == pytest.approx(1 / (1 + math.exp(-1)), rel=1e-12)
  assert diffs == {}
  long_preds, _, _ = squad_decoding.compute_predictions(
      [example], features, results, n_best_size=2, max_answer_length=30, do_lower_case=True)
  assert long_preds == {"q": "their name to Normandy, a region in France"}

  preds, nbest, diffs = squad_decoding.compute_predictions(
      [example], features, results, 2, 5, True, version_2_with_negative=True)
  # The null entry (window 1's 1 + 2) ranks below n_best_size but is always added.
  assert [(e["text"], e["start_logit"], e["end_logit"]) for e in nbest["q"]] == [
      ("France", 5.0, 4.0), ("France.", 5.0, 3.0), ("", 1.0, 2.0)]
  assert diffs == {"q": 3.0 - 9.0}
  assert preds == {"q": "France"}
  preds, _, _ = squad_decoding.compute_predictions(
      [example], features, results, 2, 5, True, version_2_with_negative=True,
      null_score_diff_threshold=-7.0)
  assert preds == {"q": ""}

  # Files: the original's json.dumps(indent=4) + newline, ASCII-escaped.
  out = tmp_path / "predictions.json"
  squad_decoding.write_predictions([example], features, results, 2, 5, True, str(out),
                               str(tmp_path / "nbest.json"), str(tmp_path / "null.json"),
                               version_2_with_negative=True)
  assert out.read_text() == '{\n    "q": "France"\n}\n'
  assert json.loads((tmp_path / "null.json").read_text()) == {"q": -6.0}
  nbest_back = json.loads((tmp_path / "nbest.json").read_text(),
                          object_pairs_hook=collections.OrderedDict)
  assert list(nbest_back["q"][0]) == ["text", "probability", "start_logit", "end_logit"]


def test_answer_from_logits_helper(tokenizer):
  example, features = squad_features.features_for_question(
      "In what country is Normandy located?", NORMANS, tokenizer, max_seq_length=24,
      doc_stride=6, max_query_length=5)
  results = _normans_logits(features)
  text, nbest, diff = squad_decoding.answer_from_logits(
      example, features, [r.start_logits for r in results], [r.end_logits for r in results],
      n_best_size=2, max_answer_length=5)
  assert (text, len(nbest), diff) == ("France", 2, None)
  with pytest.raises(ValueError, match="expected logits for 3 windows"):
    squad_decoding.answer_from_logits(example, features, np.zeros((2, 24)), np.zeros((2, 24)))


def test_cached_tokenizations_equal_the_plain_ones(tokenizer):
  # Per-word BasicTokenizer output joined == tokenizing the joined text (what
  # compute_predictions relies on), including odd characters.
  basic = tokenization.BasicTokenizer(do_lower_case=True)
  cache = squad_decoding._BasicTokenCache(basic)
  words = ["Z\u00fcrich's", "\u4e2d\u6587abc", "a\u00a0b", "x\u200by", "\x00", "(1895\u20131943).",
           "Caf\u00e9", "\ufffdok"]
  assert cache.tok_text(words) == " ".join(basic.tokenize(" ".join(words)))
  # get_final_text with the cached tok_text gives the same answers on real spans.
  examples = squad_data.read_squad_examples(shared_path("squad", "dev-v1.1.json"),
                                            is_training=False)[:300:10]
  rng = np.random.RandomState(0)
  checked = 0
  for example in examples:
    for _ in range(5):
      i = rng.randint(len(example.doc_tokens))
      j = min(i + rng.randint(4), len(example.doc_tokens) - 1)
      words = example.doc_tokens[i:j + 1]
      pieces = [p for w in words for p in tokenizer.tokenize(w)]
      if len(pieces) < 2:
        continue
      pred = squad_decoding.detokenize_wordpieces(pieces[1:])  # drop a piece: a real sub-span
      orig = " ".join(words)
      assert (squad_decoding.get_final_text(pred, orig, True, tok_text=cache.tok_text(words)) ==
              squad_decoding.get_final_text(pred, orig, True))
      checked += 1
  assert checked > 100
