"""SQuAD data: read the JSON, convert to windowed features, cache them, turn logits into answers.

Middle floor: used by run_squad.py; imports tokenization (ground) and script_utils, and
TensorFlow only inside the TFRecord functions, so the pure-Python parts load fast.

Faithful to the original run_squad.py, step by step:
  * the context is split on whitespace (space, tab, CR, LF and U+202F) with a map from
    every character to its word, so an answer's `answer_start` gives its word span;
  * every word is WordPiece-tokenized; the answer span is tightened to the tokenized
    answer text (`_improve_answer_span`);
  * the document is cut into windows of max_seq_length - len(question) - 3 tokens that
    start doc_stride tokens apart; a token's logits are only trusted in the window where
    it has the most context (`_check_is_max_context`);
  * training windows that miss the answer, and unanswerable v2.0 questions, point at
    [CLS] (position 0);
  * prediction: n-best start/end pairs per window, the best spans projected back onto the
    original context (`get_final_text`), softmax over the n-best, and for v2.0 the null
    score = the minimum over windows of start_logit[0] + end_logit[0].

Differences, all documented in docs/squad.md: a training question with several answers
(a dev-format file) trains on its first answer where the original raised an error; a
malformed file, a question without an id or an empty context fail with a one-line
message; paragraphs are tokenized once and shared by their questions, which gives the
same features as the original, much faster.
"""

import collections
import json
import math

from absl import logging
import numpy as np

import script_utils
import tokenization

# The original numbers features from here, so unique ids never collide with indices.
FIRST_UNIQUE_ID = 1000000000
# A null score above any real start+end logit sum: "no window offered a null answer yet".
_NO_NULL_SCORE = 1000000


class SquadExample:
  """One question about one paragraph.

  doc_tokens are the paragraph's whitespace-separated words; start_position and
  end_position index them (training only; -1 for an impossible v2.0 question).
  Questions of the same paragraph share the same doc_tokens list, which lets the
  feature conversion tokenize each paragraph once.
  """

  def __init__(self, qas_id, question_text, doc_tokens, orig_answer_text=None,
               start_position=None, end_position=None, is_impossible=False):
    self.qas_id = qas_id
    self.question_text = question_text
    self.doc_tokens = doc_tokens
    self.orig_answer_text = orig_answer_text
    self.start_position = start_position
    self.end_position = end_position
    self.is_impossible = is_impossible

  def __repr__(self):
    parts = [f"qas_id: {self.qas_id}", f"question_text: {self.question_text}",
             f"doc_tokens: [{' '.join(self.doc_tokens)}]"]
    if self.start_position is not None:
      parts += [f"start_position: {self.start_position}",
                f"end_position: {self.end_position}",
                f"is_impossible: {self.is_impossible}"]
    return ", ".join(parts)


class InputFeatures:
  """One window of one example, as the model sees it.

  tokens: the WordPiece tokens "[CLS] question [SEP] window [SEP]" (unpadded).
  token_to_orig_map: {position in tokens: index into example.doc_tokens}, window tokens only.
  token_is_max_context: {position in tokens: whether this window is the token's best}.
  input_ids, input_mask, segment_ids: int lists of length max_seq_length.
  start_position, end_position: the answer's positions in tokens (0 = [CLS]), training only.
  """

  def __init__(self, unique_id, example_index, doc_span_index, tokens, token_to_orig_map,
               token_is_max_context, input_ids, input_mask, segment_ids,
               start_position=None, end_position=None, is_impossible=None):
    self.unique_id = unique_id
    self.example_index = example_index
    self.doc_span_index = doc_span_index
    self.tokens = tokens
    self.token_to_orig_map = token_to_orig_map
    self.token_is_max_context = token_is_max_context
    self.input_ids = input_ids
    self.input_mask = input_mask
    self.segment_ids = segment_ids
    self.start_position = start_position
    self.end_position = end_position
    self.is_impossible = is_impossible


DocSpan = collections.namedtuple("DocSpan", ["start", "length"])
RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])


# --------------------------------------------------------------------------- reading


def is_whitespace(c):
  """The original's whitespace for splitting contexts: U+202F counts, other Zs do not."""
  return c == " " or c == "\t" or c == "\r" or c == "\n" or ord(c) == 0x202F


def whitespace_split(paragraph_text):
  """Splits a context into words and maps every character to its word.

  Returns:
    (doc_tokens, char_to_word_offset): the words, and for each character of the text
    the index of the word it belongs to (whitespace maps to the word before it; -1
    before the first word).
  """
  doc_tokens = []
  char_to_word_offset = []
  prev_is_whitespace = True
  for c in paragraph_text:
    if is_whitespace(c):
      prev_is_whitespace = True
    else:
      if prev_is_whitespace:
        doc_tokens.append(c)
      else:
        doc_tokens[-1] += c
      prev_is_whitespace = False
    char_to_word_offset.append(len(doc_tokens) - 1)
  return doc_tokens, char_to_word_offset


class ReadStats:
  """What read_squad_examples kept and skipped, for the log and for tests."""

  def __init__(self):
    self.questions = 0
    self.examples = 0
    self.skipped_answers = 0
    self.multi_answer = 0
    self.impossible = 0


def _where(path, article_index, paragraph_index, question_index=None):
  where = f"{path}: article {article_index} paragraph {paragraph_index}"
  if question_index is not None:
    where += f" question {question_index}"
  return where


def parse_squad_examples(data, is_training, version_2_with_negative=False, path="input",
                         stats=None):
  """Builds SquadExamples from the "data" list of a SQuAD JSON file.

  Args:
    data: list of articles ({"paragraphs": [{"context", "qas": [...]}]}).
    is_training: read the answers (word spans) as training targets.
    version_2_with_negative: honour "is_impossible" (SQuAD 2.0).
    path: the file name used in messages.
    stats: a ReadStats to fill, or None.
  Returns:
    A list of SquadExample. Training answers whose text cannot be found at their
    offset are skipped with a warning, as in the original.
  Raises:
    script_utils.UserError: a malformed structure, a question without "id" or
      "question", or a paragraph with an empty context.
  """
  stats = stats if stats is not None else ReadStats()
  if not isinstance(data, list):
    raise script_utils.UserError(
        f"{path}: not a SQuAD file (expected a JSON object with a \"data\" list of articles)")
  examples = []
  for a, entry in enumerate(data):
    paragraphs = entry.get("paragraphs") if isinstance(entry, dict) else None
    if not isinstance(paragraphs, list):
      raise script_utils.UserError(f"{path}: article {a} has no \"paragraphs\" list")
    for p, paragraph in enumerate(paragraphs):
      if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str):
        raise script_utils.UserError(f"{_where(path, a, p)}: no \"context\" string")
      qas = paragraph.get("qas")
      if not isinstance(qas, list):
        raise script_utils.UserError(f"{_where(path, a, p)}: no \"qas\" list")
      paragraph_text = paragraph["context"]
      doc_tokens, char_to_word_offset = whitespace_split(paragraph_text)
      if not doc_tokens and qas:
        raise script_utils.UserError(
            f"{_where(path, a, p)}: the context is empty; give it its text or remove the "
            "paragraph")
      for q, qa in enumerate(qas):
        stats.questions += 1
        if not isinstance(qa, dict) or not qa.get("id"):
          raise script_utils.UserError(
              f"{_where(path, a, p, q)}: the question has no \"id\"; every question needs "
              "a unique id (predictions are keyed by it)")
        qas_id = qa["id"]
        question_text = qa.get("question")
        if not isinstance(question_text, str):
          raise script_utils.UserError(
              f"{_where(path, a, p, q)} (id {qas_id}): no \"question\" text")
        start_position = None
        end_position = None
        orig_answer_text = None
        is_impossible = False
        if is_training:
          answers = qa.get("answers") or []
          if version_2_with_negative:
            is_impossible = bool(qa.get("is_impossible", not answers))
          if not is_impossible:
            if not answers:
              raise script_utils.UserError(
                  f"{_where(path, a, p, q)} (id {qas_id}): a training question needs an "
                  "answer (or \"is_impossible\": true with --version_2_with_negative)")
            if len(answers) > 1:
              # Dev-format files list several answers; the original insisted on one.
              stats.multi_answer += 1
            answer = answers[0]
            orig_answer_text = answer.get("text") if isinstance(answer, dict) else None
            answer_offset = answer.get("answer_start") if isinstance(answer, dict) else None
            if (not isinstance(orig_answer_text, str) or not orig_answer_text or
                isinstance(answer_offset, bool) or not isinstance(answer_offset, int) or
                answer_offset < 0 or
                answer_offset + len(orig_answer_text) > len(paragraph_text)):
              stats.skipped_answers += 1
              logging.warning("%s (id %s): answer %r at offset %r is outside the context; "
                              "skipped", _where(path, a, p, q), qas_id, orig_answer_text,
                              answer_offset)
              continue
            start_position = char_to_word_offset[answer_offset]
            end_position = char_to_word_offset[answer_offset + len(orig_answer_text) - 1]
            # Only answers whose text can be recovered from the document are kept; a
            # mismatch is usually odd Unicode or a wrong offset (the original's rule).
            actual_text = " ".join(doc_tokens[max(start_position, 0):(end_position + 1)])
            cleaned_answer_text = " ".join(tokenization.whitespace_tokenize(orig_answer_text))
            if start_position < 0 or actual_text.find(cleaned_answer_text) == -1:
              stats.skipped_answers += 1
              logging.warning("Could not find answer: '%s' vs. '%s' (%s, id %s)",
                              actual_text, cleaned_answer_text, _where(path, a, p, q),
                              qas_id)
              continue
          else:
            stats.impossible += 1
            start_position = -1
            end_position = -1
            orig_answer_text = ""
        examples.append(SquadExample(
            qas_id=qas_id, question_text=question_text, doc_tokens=doc_tokens,
            orig_answer_text=orig_answer_text, start_position=start_position,
            end_position=end_position, is_impossible=is_impossible))
  stats.examples = len(examples)
  return examples


def load_squad_json(input_file):
  """Reads a SQuAD JSON file; a malformed one fails with file:line:column."""
  if "://" in str(input_file):  # gs:// and other remote file systems need TensorFlow
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    open_fn = tf.io.gfile.GFile
  else:
    open_fn = open
  with open_fn(input_file, "rb") as reader:
    raw = reader.read()
  try:
    input_json = json.loads(raw.decode("utf-8-sig"))
  except UnicodeDecodeError as exc:
    raise script_utils.UserError(
        f"{input_file}: not valid UTF-8 (byte {exc.start}); convert it to UTF-8") from None
  except json.JSONDecodeError as exc:
    raise script_utils.UserError(
        f"{input_file}:{exc.lineno}:{exc.colno}: malformed JSON ({exc.msg})") from None
  if not isinstance(input_json, dict) or "data" not in input_json:
    raise script_utils.UserError(
        f"{input_file}: not a SQuAD file (expected a JSON object with a \"data\" list)")
  return input_json


def read_squad_examples(input_file, is_training, version_2_with_negative=False,
                        stats=None):
  """The original's read_squad_examples: a SQuAD JSON file -> list of SquadExample."""
  stats = stats if stats is not None else ReadStats()
  examples = parse_squad_examples(load_squad_json(input_file)["data"], is_training,
                                  version_2_with_negative, path=input_file, stats=stats)
  if stats.skipped_answers:
    logging.warning("%s: skipped %d of %d questions whose answer text does not match the "
                    "context at its offset", input_file, stats.skipped_answers,
                    stats.questions)
  if stats.multi_answer:
    logging.info("%s: %d training questions have several answers; the first is used",
                 input_file, stats.multi_answer)
  return examples


# --------------------------------------------------------------------------- features


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text,
                         tok_answer_text=None):
  """Tightens a token span to the tokenized answer text.

  The word-level span is often wider than the answer: for the answer "1895" in the
  context "(1895-1943).", the word is "(1895-1943)." whose tokens are
  "( 1895 - 1943 ) ."; the smallest sub-span whose tokens join to "1895" is returned.
  """
  if tok_answer_text is None:
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
  for new_start in range(input_start, input_end + 1):
    for new_end in range(input_end, new_start - 1, -1):
      text_span = " ".join(doc_tokens[new_start:(new_end + 1)])
      if text_span == tok_answer_text:
        return new_start, new_end
  return input_start, input_end


def _check_is_max_context(doc_spans, cur_span_index, position):
  """Whether `cur_span_index` is the window where token `position` has the most context.

  A token's score in a window is min(left context, right context) + 0.01 * window length:
  a token near a window edge sees little on one side, and the small length bonus breaks
  ties in favour of longer windows. The first window with the best score wins.
  """
  best_score = None
  best_span_index = None
  for span_index, doc_span in enumerate(doc_spans):
    end = doc_span.start + doc_span.length - 1
    if position < doc_span.start or position > end:
      continue
    num_left_context = position - doc_span.start
    num_right_context = end - position
    score = min(num_left_context, num_right_context) + 0.01 * doc_span.length
    if best_score is None or score > best_score:
      best_score = score
      best_span_index = span_index
  return cur_span_index == best_span_index


def make_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
  """Windows of at most max_tokens_for_doc tokens, doc_stride apart, covering the document."""
  if max_tokens_for_doc < 1:
    raise script_utils.UserError(
        f"--max_seq_length leaves {max_tokens_for_doc} tokens for the document after the "
        "question and [CLS]/[SEP]/[SEP]; raise --max_seq_length or lower --max_query_length")
  if doc_stride < 1:
    raise script_utils.UserError(f"--doc_stride={doc_stride}: must be at least 1")
  doc_spans = []
  start_offset = 0
  while start_offset < num_tokens:
    length = min(num_tokens - start_offset, max_tokens_for_doc)
    doc_spans.append(DocSpan(start=start_offset, length=length))
    if start_offset + length == num_tokens:
      break
    start_offset += min(length, doc_stride)
  return doc_spans


def max_context_flags(doc_spans):
  """For every window, a list of booleans: is this the token's max-context window.

  Same answers as calling _check_is_max_context for every token, computed with NumPy
  over the whole document at once (the per-token loop dominated the conversion time).
  """
  if not doc_spans:
    return []
  num_tokens = doc_spans[-1].start + doc_spans[-1].length
  positions = np.arange(num_tokens)
  best_score = np.full(num_tokens, -np.inf)
  best_span = np.full(num_tokens, -1)
  for span_index, span in enumerate(doc_spans):
    end = span.start + span.length - 1
    inside = positions[span.start:end + 1]
    score = np.minimum(inside - span.start, end - inside) + 0.01 * span.length
    better = score > best_score[span.start:end + 1]  # strict: the first best window wins
    best_score[span.start:end + 1][better] = score[better]
    best_span[span.start:end + 1][better] = span_index
  return [(best_span[s.start:s.start + s.length] == i).tolist()
          for i, s in enumerate(doc_spans)]


class _TokenCache:
  """Tokenizations shared across questions: each word once, each paragraph once."""

  def __init__(self, tokenizer):
    self.tokenizer = tokenizer
    self.words = {}
    self.docs = {}
    self.questions = {}

  def prefill(self, fast_tokenizer, examples, batch_size=8192):
    """Tokenizes every distinct word and question at once with a FastTokenizer.

    fast_tokenizer: tokenization.FastTokenizer built from the same vocabulary and case
    (in-graph, token-for-token the Python tokenizer; checked on all of dev-v1.1).
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    words = list({w for e in examples for w in e.doc_tokens if w not in self.words})
    questions = list({e.question_text for e in examples})
    texts = words + questions
    inv_vocab = self.tokenizer.inv_vocab
    pieces = []
    for begin in range(0, len(texts), batch_size):
      ids = fast_tokenizer.tokenize(tf.constant(texts[begin:begin + batch_size])).to_list()
      pieces.extend([inv_vocab[i] for i in row] for row in ids)
    self.words.update(zip(words, pieces[:len(words)]))
    self.questions.update(zip(questions, pieces[len(words):]))

  def question(self, text):
    pieces = self.questions.get(text)
    if pieces is None:
      pieces = self.tokenizer.tokenize(text)
    return list(pieces)

  def word(self, word):
    pieces = self.words.get(word)
    if pieces is None:
      pieces = self.tokenizer.tokenize(word)
      self.words[word] = pieces
    return pieces

  def document(self, doc_tokens):
    """(all_doc_tokens, all_doc_ids, tok_to_orig_index, orig_to_tok_index) of a paragraph."""
    key = id(doc_tokens)
    entry = self.docs.get(key)
    if entry is not None and entry[0] is doc_tokens:
      return entry[1]
    tok_to_orig_index = []
    orig_to_tok_index = []
    all_doc_tokens = []
    for i, token in enumerate(doc_tokens):
      orig_to_tok_index.append(len(all_doc_tokens))
      sub_tokens = self.word(token)
      tok_to_orig_index.extend([i] * len(sub_tokens))
      all_doc_tokens.extend(sub_tokens)
    all_doc_ids = self.tokenizer.convert_tokens_to_ids(all_doc_tokens)
    value = (all_doc_tokens, all_doc_ids, tok_to_orig_index, orig_to_tok_index, {})
    # The list itself is kept in the entry so its id cannot be reused by another list.
    self.docs[key] = (doc_tokens, value)
    return value


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, output_fn=None,
                                 fast_tokenizer=None):
  """The original's convert_examples_to_features; returns the list of InputFeatures.

  Args:
    examples: list of SquadExample.
    tokenizer: a tokenization.FullTokenizer.
    max_seq_length, doc_stride, max_query_length: as the flags of the same names.
    is_training: set start/end positions (and keep windows without the answer, which
      point at [CLS] as in the original).
    output_fn: optional callback called with each InputFeatures as it is made
      (the original's FeatureWriter.process_feature).
    fast_tokenizer: optional tokenization.FastTokenizer (same vocabulary and case):
      tokenizes all distinct words and questions in a few batched graph calls, about
      3x faster on the dev set, with the same tokens.
  """
  cache = _TokenCache(tokenizer)
  if fast_tokenizer is not None:
    cache.prefill(fast_tokenizer, examples)
  cls_id, sep_id = tokenizer.convert_tokens_to_ids([tokenization.CLS_TOKEN,
                                                    tokenization.SEP_TOKEN])
  features = []
  unique_id = FIRST_UNIQUE_ID
  for example_index, example in enumerate(examples):
    query_tokens = cache.question(example.question_text)
    if len(query_tokens) > max_query_length:
      query_tokens = query_tokens[0:max_query_length]
    query_ids = tokenizer.convert_tokens_to_ids(query_tokens)

    (all_doc_tokens, all_doc_ids, tok_to_orig_index, orig_to_tok_index,
     span_cache) = cache.document(example.doc_tokens)

    tok_start_position = None
    tok_end_position = None
    if is_training and example.is_impossible:
      tok_start_position = -1
      tok_end_position = -1
    if is_training and not example.is_impossible:
      tok_start_position = orig_to_tok_index[example.start_position]
      if example.end_position < len(example.doc_tokens) - 1:
        tok_end_position = orig_to_tok_index[example.end_position + 1] - 1
      else:
        tok_end_position = len(all_doc_tokens) - 1
      tok_start_position, tok_end_position = _improve_answer_span(
          all_doc_tokens, tok_start_position, tok_end_position, tokenizer,
          example.orig_answer_text)

    # The -3 accounts for [CLS], [SEP] and [SEP].
    max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
    spans = span_cache.get(max_tokens_for_doc)
    if spans is None:
      doc_spans = make_doc_spans(len(all_doc_tokens), max_tokens_for_doc, doc_stride)
      spans = (doc_spans, max_context_flags(doc_spans))
      span_cache[max_tokens_for_doc] = spans
    doc_spans, max_context = spans

    doc_offset = len(query_tokens) + 2
    head_tokens = [tokenization.CLS_TOKEN] + query_tokens + [tokenization.SEP_TOKEN]
    head_ids = [cls_id] + query_ids + [sep_id]
    for doc_span_index, doc_span in enumerate(doc_spans):
      begin, end = doc_span.start, doc_span.start + doc_span.length
      tokens = head_tokens + all_doc_tokens[begin:end] + [tokenization.SEP_TOKEN]
      positions = range(doc_offset, doc_offset + doc_span.length)
      token_to_orig_map = dict(zip(positions, tok_to_orig_index[begin:end]))
      token_is_max_context = dict(zip(positions, max_context[doc_span_index]))
      input_ids = head_ids + all_doc_ids[begin:end] + [sep_id]
      num_real = len(input_ids)
      padding = max_seq_length - num_real
      input_mask = [1] * num_real + [0] * padding
      segment_ids = [0] * doc_offset + [1] * (doc_span.length + 1) + [0] * padding
      input_ids = input_ids + [0] * padding

      start_position = None
      end_position = None
      if is_training and not example.is_impossible:
        doc_start = doc_span.start
        doc_end = doc_span.start + doc_span.length - 1
        if tok_start_position >= doc_start and tok_end_position <= doc_end:
          start_position = tok_start_position - doc_start + doc_offset
          end_position = tok_end_position - doc_start + doc_offset
        else:
          # A window that does not hold the whole answer learns to point at [CLS].
          start_position = 0
          end_position = 0
      if is_training and example.is_impossible:
        start_position = 0
        end_position = 0

      feature = InputFeatures(
          unique_id=unique_id, example_index=example_index,
          doc_span_index=doc_span_index, tokens=tokens,
          token_to_orig_map=token_to_orig_map, token_is_max_context=token_is_max_context,
          input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
          start_position=start_position, end_position=end_position,
          is_impossible=example.is_impossible)
      features.append(feature)
      if output_fn is not None:
        output_fn(feature)
      unique_id += 1
  return features


# --------------------------------------------------------------------------- TFRecords


def _int_feature(tf, values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def feature_to_example(feature, is_training):
  """An InputFeatures -> serialized tf.train.Example with the original's feature names."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  fields = collections.OrderedDict()
  fields["unique_ids"] = _int_feature(tf, [feature.unique_id])
  fields["input_ids"] = _int_feature(tf, feature.input_ids)
  fields["input_mask"] = _int_feature(tf, feature.input_mask)
  fields["segment_ids"] = _int_feature(tf, feature.segment_ids)
  if is_training:
    fields["start_positions"] = _int_feature(tf, [feature.start_position])
    fields["end_positions"] = _int_feature(tf, [feature.end_position])
    fields["is_impossible"] = _int_feature(tf, [int(bool(feature.is_impossible))])
  return tf.train.Example(
      features=tf.train.Features(feature=fields)).SerializeToString()


def write_tf_record(path, features, is_training, shuffle_seed=None):
  """Writes features to a TFRecord file atomically (temporary name, then rename).

  shuffle_seed: training features are written in a shuffled order when given (the
  original shuffled the examples; here windows are shuffled too, since the reader's
  shuffle buffer is small). Returns the number of records.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  order = list(range(len(features)))
  if shuffle_seed is not None:
    np.random.RandomState(shuffle_seed).shuffle(order)
  with script_utils.atomic_path(path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for i in order:
        writer.write(feature_to_example(features[i], is_training))
  return len(order)


def record_dataset(input_file, seq_length, is_training, batch_size, drop_remainder,
                   shuffle_buffer=100, seed=None):
  """tf.data over a feature TFRecord file.

  Yields dicts: input_ids, input_mask, segment_ids int32 [batch, seq_length],
  unique_ids int32 [batch] (int64 in the file; ids start at 1e9, within int32), and when
  is_training start_positions, end_positions, is_impossible int32 [batch].
  Training repeats forever and shuffles with a buffer of `shuffle_buffer` (the
  original used 100).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  name_to_features = {
      "unique_ids": tf.io.FixedLenFeature([], tf.int64),
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
  }
  if is_training:
    name_to_features["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
    name_to_features["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    name_to_features["is_impossible"] = tf.io.FixedLenFeature([], tf.int64)

  def decode(records):
    parsed = tf.io.parse_example(records, name_to_features)
    return {k: tf.cast(v, tf.int32) for k, v in parsed.items()}

  dataset = tf.data.TFRecordDataset(input_file)
  if is_training:
    dataset = dataset.repeat().shuffle(buffer_size=shuffle_buffer, seed=seed)
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
  return dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
      tf.data.AUTOTUNE)


# --------------------------------------------------------------------------- predictions


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


_compute_softmax = compute_softmax


def get_best_indexes(logits, n_best_size):
  """Indices of the n_best_size largest logits, largest first; ties keep index order."""
  logits = np.asarray(logits)
  return np.argsort(-logits, kind="stable")[:n_best_size].tolist()


_get_best_indexes = get_best_indexes


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


def get_final_text(pred_text, orig_text, do_lower_case, basic_tokenizer=None,
                   verbose_logging=False, tok_text=None):
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
    if basic_tokenizer is None:
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


_Prelim = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit",
                         "end_logit"])
_Nbest = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])


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


def predict_example(example, features, results, n_best_size, max_answer_length,
                    do_lower_case, version_2_with_negative=False,
                    null_score_diff_threshold=0.0, basic_tokenizer=None,
                    verbose_logging=False, token_cache=None):
  """The original's write_predictions for one example.

  Args:
    example: the SquadExample.
    features: its InputFeatures (all windows, in order).
    results: a RawResult per feature (start_logits/end_logits: float [max_seq_length]).
  Returns:
    (answer text, n-best list of OrderedDicts {text, probability, start_logit,
    end_logit}, null score difference or None when not version_2_with_negative).
  """
  if token_cache is None:
    token_cache = _BasicTokenCache(
        basic_tokenizer or tokenization.BasicTokenizer(do_lower_case=do_lower_case))
  prelim_predictions = []
  score_null = _NO_NULL_SCORE
  min_null_feature_index = 0
  null_start_logit = 0.0
  null_end_logit = 0.0
  for feature_index, (feature, result) in enumerate(zip(features, results)):
    start_logits = np.asarray(result.start_logits, dtype=np.float64)
    end_logits = np.asarray(result.end_logits, dtype=np.float64)
    if version_2_with_negative:
      feature_null_score = float(start_logits[0] + end_logits[0])
      if feature_null_score < score_null:
        score_null = feature_null_score
        min_null_feature_index = feature_index
        null_start_logit = float(start_logits[0])
        null_end_logit = float(end_logits[0])
    prelim_predictions.extend(_prelim_for_feature(
        feature_index, feature, start_logits, end_logits, n_best_size, max_answer_length))

  if version_2_with_negative:
    prelim_predictions.append(_Prelim(min_null_feature_index, 0, 0, null_start_logit,
                                      null_end_logit))
  prelim_predictions = sorted(prelim_predictions,
                              key=lambda x: (x.start_logit + x.end_logit), reverse=True)

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
      tok_text = detokenize_wordpieces(tok_tokens)
      orig_text = " ".join(orig_tokens)
      final_text = get_final_text(tok_text, orig_text, do_lower_case,
                                  verbose_logging=verbose_logging,
                                  tok_text=token_cache.tok_text(orig_tokens))
      if final_text in seen_predictions:
        continue
      seen_predictions.add(final_text)
    else:
      final_text = ""
      seen_predictions.add(final_text)
    nbest.append(_Nbest(final_text, pred.start_logit, pred.end_logit))

  # The empty answer is always among a v2.0 n-best, even when it ranks below n_best_size.
  if version_2_with_negative and "" not in seen_predictions:
    nbest.append(_Nbest("", null_start_logit, null_end_logit))
  # In rare cases no span is valid (every window too short); the original's nonce answer.
  if not nbest:
    nbest.append(_Nbest("empty", 0.0, 0.0))

  total_scores = []
  best_non_null_entry = None
  for entry in nbest:
    total_scores.append(entry.start_logit + entry.end_logit)
    if best_non_null_entry is None and entry.text:
      best_non_null_entry = entry
  probs = compute_softmax(total_scores)

  nbest_json = []
  for i, entry in enumerate(nbest):
    output = collections.OrderedDict()
    output["text"] = entry.text
    output["probability"] = probs[i]
    output["start_logit"] = entry.start_logit
    output["end_logit"] = entry.end_logit
    nbest_json.append(output)

  if not version_2_with_negative:
    return nbest_json[0]["text"], nbest_json, None
  if best_non_null_entry is None:
    # Only the null answer was valid (the original crashed here): answer "" with a
    # difference far above any threshold.
    return "", nbest_json, float(_NO_NULL_SCORE)
  score_diff = (score_null - best_non_null_entry.start_logit -
                best_non_null_entry.end_logit)
  if score_diff > null_score_diff_threshold:
    return "", nbest_json, score_diff
  return best_non_null_entry.text, nbest_json, score_diff


def compute_predictions(all_examples, all_features, all_results, n_best_size,
                        max_answer_length, do_lower_case, version_2_with_negative=False,
                        null_score_diff_threshold=0.0, verbose_logging=False):
  """Answers for every example from the model's logits.

  Args:
    all_examples: list of SquadExample.
    all_features: list of InputFeatures (from convert_examples_to_features).
    all_results: list of RawResult, one per feature (any order, matched by unique_id).
  Returns:
    (all_predictions {qas_id: text}, all_nbest_json {qas_id: [...]},
     scores_diff_json {qas_id: float}, empty unless version_2_with_negative),
    all OrderedDicts in example order.
  Raises:
    ValueError: a feature has no result (predictions and features out of step).
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


def _write_json_like_original(path, obj):
  # json.dumps(indent=4) with ASCII escapes plus a newline: byte for byte the original.
  with script_utils.atomic_open(path) as writer:
    writer.write(json.dumps(obj, indent=4) + "\n")


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case, output_prediction_file,
                      output_nbest_file, output_null_log_odds_file=None,
                      version_2_with_negative=False, null_score_diff_threshold=0.0,
                      verbose_logging=False):
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


def features_for_question(question, context, tokenizer, max_seq_length=384, doc_stride=128,
                          max_query_length=64):
  """(SquadExample, [InputFeatures]) for one question about one context.

  Feed the features' input_ids / input_mask / segment_ids (int32 [num_windows,
  max_seq_length]) to a SQuAD model (run_squad's --export_dir SavedModel, for example),
  then pass its logits to `answer_from_logits`.
  """
  doc_tokens, _ = whitespace_split(context)
  if not doc_tokens:
    raise ValueError("the context is empty")
  example = SquadExample(qas_id="0", question_text=question, doc_tokens=doc_tokens)
  features = convert_examples_to_features([example], tokenizer, max_seq_length,
                                          doc_stride, max_query_length, is_training=False)
  return example, features


def answer_from_logits(example, features, start_logits, end_logits, do_lower_case=True,
                       n_best_size=20, max_answer_length=30, version_2_with_negative=False,
                       null_score_diff_threshold=0.0):
  """Turns a SQuAD model's logits for one question into its answer text.

  Args:
    example, features: from `features_for_question` (or one example of
      read_squad_examples with its features).
    start_logits, end_logits: float [num_windows, max_seq_length], the model outputs
      for `features` in the same order.
    do_lower_case: as the tokenizer; decides how the text is aligned back.
  Returns:
    (answer text, n-best list of {text, probability, start_logit, end_logit}, null score
    difference or None). With version_2_with_negative the answer is "" when the null
    score beats the best span by more than null_score_diff_threshold.

  Example:
    example, feats = squad_data.features_for_question(q, context, tokenizer)
    out = model({k: np.array([getattr(f, k) for f in feats], np.int32)
                 for k in ("input_ids", "input_mask", "segment_ids")})
    text, nbest, _ = squad_data.answer_from_logits(example, feats, out["start_logits"],
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
