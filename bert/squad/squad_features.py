"""SQuAD features: questions -> windowed model inputs (InputFeatures), and their TFRecords.

Faithful to the original's convert_examples_to_features: answer spans tightened to the
tokenized answer, windows doc_stride tokens apart, a token trusted in the window where
it has the most context, windows without the answer pointing at [CLS]. Paragraphs are
tokenized once and the max-context flags computed in NumPy: the same features, much
faster (tests compare them with a literal port of the original)."""

import collections
import dataclasses
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from bert import fast_tokenization
from bert import input_pipeline
from bert.squad import squad_data
from bert.squad import squad_options
from bert import tokenization
from bert.utils import errors

# The original numbers features from here, so unique ids never collide with indices.
FIRST_UNIQUE_ID = 1000000000


# eq=False: a window is itself (compared and hashed by identity), as the original's class.
@dataclasses.dataclass(eq=False)
class InputFeatures:
  """One window of one example, as the model sees it.

  tokens: the WordPiece tokens "[CLS] question [SEP] window [SEP]" (unpadded).
  token_to_orig_map: {position in tokens: index into example.doc_tokens}, window tokens only.
  token_is_max_context: {position in tokens: whether this window is the token's best}.
  input_ids, input_mask, segment_ids: int lists of length max_seq_length.
  start_position, end_position: the answer's positions in tokens (0 = [CLS]), training only.
  """
  unique_id: Optional[int]
  example_index: int
  doc_span_index: int
  tokens: List[str]
  token_to_orig_map: Dict[int, int]
  token_is_max_context: Dict[int, bool]
  input_ids: List[int]
  input_mask: List[int]
  segment_ids: List[int]
  start_position: Optional[int] = None
  end_position: Optional[int] = None
  is_impossible: Optional[bool] = None


DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


# --------------------------------------------------------------------------- windows


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
  """Tightens a token span to the tokenized answer text.

  The word-level span is often wider than the answer: for the answer "1895" in the
  context "(1895-1943).", the word is "(1895-1943)." whose tokens are
  "( 1895 - 1943 ) ."; the smallest sub-span whose tokens join to "1895" is returned.
  """
  tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
  for new_start in range(input_start, input_end + 1):
    for new_end in range(input_end, new_start - 1, -1):
      text_span = " ".join(doc_tokens[new_start:(new_end + 1)])
      if text_span == tok_answer_text:
        return new_start, new_end
  return input_start, input_end


def make_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
  """Windows of at most max_tokens_for_doc tokens, doc_stride apart, covering the document."""
  if max_tokens_for_doc < 1:
    raise errors.UserError(
        f"--max_seq_length leaves {max_tokens_for_doc} tokens for the document after the "
        "question and [CLS]/[SEP]/[SEP]; raise --max_seq_length or lower --max_query_length")
  if doc_stride < 1:
    raise errors.UserError(f"--doc_stride={doc_stride}: must be at least 1")
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

  The original's _check_is_max_context for every token, computed with NumPy over the
  whole document at once (the per-token loop dominated the conversion time). A token's
  score in a window is min(left context, right context) + 0.01 * window length: a token
  near a window edge sees little on one side, and the small length bonus breaks ties in
  favour of longer windows. The first window with the best score wins.
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


# --------------------------------------------------------------------------- tokens


_Document = collections.namedtuple(
    "Document", ["tokens", "ids", "tok_to_orig_index", "orig_to_tok_index", "spans"])


class _TokenCache:
  """Tokenizations shared across questions: each word once, each paragraph once."""

  def __init__(self, tokenizer):
    self.tokenizer = tokenizer
    self.words = {}
    self.docs = {}
    self.questions = {}

  def prefill(self, fast_tokenizer, examples, batch_size=8192):
    """Tokenizes every distinct word and question at once with a FastTokenizer.

    fast_tokenizer: fast_tokenization.FastTokenizer built from the same vocabulary and case
    (in-graph, token-for-token the Python tokenizer; checked on all of dev-v1.1).
    """
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
    """The _Document of a paragraph's words; `spans` caches windows per window size."""
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
    value = _Document(all_doc_tokens, self.tokenizer.convert_tokens_to_ids(all_doc_tokens),
                      tok_to_orig_index, orig_to_tok_index, {})
    # The list itself is kept in the entry so its id cannot be reused by another list.
    self.docs[key] = (doc_tokens, value)
    return value


# --------------------------------------------------------------------------- features


def _answer_token_span(example, doc, tokenizer):
  """(start, end) of a training answer in the document's WordPiece tokens."""
  tok_start_position = doc.orig_to_tok_index[example.start_position]
  if example.end_position < len(example.doc_tokens) - 1:
    tok_end_position = doc.orig_to_tok_index[example.end_position + 1] - 1
  else:
    tok_end_position = len(doc.tokens) - 1
  return _improve_answer_span(doc.tokens, tok_start_position, tok_end_position, tokenizer,
                              example.orig_answer_text)


def _windows(doc, max_tokens_for_doc, doc_stride):
  """(doc_spans, max-context flags) of a document, computed once per window size."""
  spans = doc.spans.get(max_tokens_for_doc)
  if spans is None:
    doc_spans = make_doc_spans(len(doc.tokens), max_tokens_for_doc, doc_stride)
    spans = (doc_spans, max_context_flags(doc_spans))
    doc.spans[max_tokens_for_doc] = spans
  return spans


def _window_positions(example, answer_span, doc_span, doc_offset):
  """Training targets of one window: the answer's positions, or (0, 0) = [CLS]."""
  if example.is_impossible:
    return 0, 0
  doc_start = doc_span.start
  doc_end = doc_span.start + doc_span.length - 1
  if answer_span[0] >= doc_start and answer_span[1] <= doc_end:
    return answer_span[0] - doc_start + doc_offset, answer_span[1] - doc_start + doc_offset
  # A window that does not hold the whole answer learns to point at [CLS].
  return 0, 0


def _example_features(example, example_index, query, doc, max_seq_length, doc_stride,
                      answer_span, special_ids):
  """The InputFeatures (unique_id unset) of one example's windows.

  query: (tokens, ids) of the truncated question; answer_span: token (start, end) when
  training, else None; special_ids: the ids of [CLS] and [SEP].
  """
  query_tokens, query_ids = query
  cls_id, sep_id = special_ids
  # The -3 accounts for [CLS], [SEP] and [SEP].
  doc_spans, max_context = _windows(doc, max_seq_length - len(query_tokens) - 3,
                                    doc_stride)
  doc_offset = len(query_tokens) + 2
  head_tokens = [tokenization.CLS_TOKEN] + query_tokens + [tokenization.SEP_TOKEN]
  head_ids = [cls_id] + query_ids + [sep_id]
  features = []
  for doc_span_index, doc_span in enumerate(doc_spans):
    begin, end = doc_span.start, doc_span.start + doc_span.length
    positions = range(doc_offset, doc_offset + doc_span.length)
    input_ids = head_ids + doc.ids[begin:end] + [sep_id]
    padding = max_seq_length - len(input_ids)
    start_position = end_position = None
    if answer_span is not None:
      start_position, end_position = _window_positions(example, answer_span, doc_span,
                                                       doc_offset)
    features.append(InputFeatures(
        unique_id=None, example_index=example_index, doc_span_index=doc_span_index,
        tokens=head_tokens + doc.tokens[begin:end] + [tokenization.SEP_TOKEN],
        token_to_orig_map=dict(zip(positions, doc.tok_to_orig_index[begin:end])),
        token_is_max_context=dict(zip(positions, max_context[doc_span_index])),
        input_ids=input_ids + [0] * padding,
        input_mask=[1] * len(input_ids) + [0] * padding,
        segment_ids=[0] * doc_offset + [1] * (doc_span.length + 1) + [0] * padding,
        start_position=start_position, end_position=end_position,
        is_impossible=example.is_impossible))
  return features


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, fast_tokenizer=None):
  """The original's convert_examples_to_features; returns the list of InputFeatures.

  Args:
    examples: list of squad_data.SquadExample.
    tokenizer: a tokenization.FullTokenizer.
    max_seq_length, doc_stride, max_query_length: as the flags of the same names.
    is_training: set start/end positions (and keep windows without the answer, which
      point at [CLS] as in the original).
    fast_tokenizer: optional fast_tokenization.FastTokenizer (same vocabulary and case):
      tokenizes all distinct words and questions in a few batched graph calls, faster
      than the Python tokenizer, with the same tokens.
  Returns:
    InputFeatures numbered FIRST_UNIQUE_ID, FIRST_UNIQUE_ID + 1, ... in example order.
  """
  cache = _TokenCache(tokenizer)
  if fast_tokenizer is not None:
    cache.prefill(fast_tokenizer, examples)
  special_ids = tokenizer.convert_tokens_to_ids([tokenization.CLS_TOKEN,
                                                 tokenization.SEP_TOKEN])
  features = []
  for example_index, example in enumerate(examples):
    query_tokens = cache.question(example.question_text)[:max_query_length]
    query = (query_tokens, tokenizer.convert_tokens_to_ids(query_tokens))
    doc = cache.document(example.doc_tokens)
    answer_span = None
    if is_training:
      answer_span = ((-1, -1) if example.is_impossible else
                     _answer_token_span(example, doc, tokenizer))
    features.extend(_example_features(example, example_index, query, doc, max_seq_length,
                                      doc_stride, answer_span, special_ids))
  for offset, feature in enumerate(features):
    feature.unique_id = FIRST_UNIQUE_ID + offset
  return features


def features_for_question(question, context, tokenizer,
                          max_seq_length=squad_options.MAX_SEQ_LENGTH,
                          doc_stride=squad_options.DOC_STRIDE,
                          max_query_length=squad_options.MAX_QUERY_LENGTH):
  """(SquadExample, [InputFeatures]) for one question about one context.

  Feed the features' input_ids / input_mask / segment_ids (int32 [num_windows,
  max_seq_length]) to a SQuAD model (run_squad's --export_dir SavedModel, for example),
  then pass its logits to `squad_decoding.answer_from_logits`.
  """
  doc_tokens, _ = squad_data.whitespace_split(context)
  if not doc_tokens:
    raise errors.UserError("the context is empty")
  example = squad_data.SquadExample(qas_id="0", question_text=question,
                                    doc_tokens=doc_tokens)
  features = convert_examples_to_features([example], tokenizer, max_seq_length,
                                          doc_stride, max_query_length, is_training=False)
  return example, features


# --------------------------------------------------------------------------- TFRecords


def _record_fields(feature, is_training):
  """{name: int list} of one InputFeatures, with the original's feature names and order."""
  fields = collections.OrderedDict()
  fields["unique_ids"] = [feature.unique_id]
  fields["input_ids"] = feature.input_ids
  fields["input_mask"] = feature.input_mask
  fields["segment_ids"] = feature.segment_ids
  if is_training:
    fields["start_positions"] = [feature.start_position]
    fields["end_positions"] = [feature.end_position]
    fields["is_impossible"] = [int(bool(feature.is_impossible))]
  return fields


def write_tf_record(path, features, is_training):
  """Writes features to a TFRecord file atomically, in order; returns the record count."""
  return input_pipeline.write_examples(
      path, (_record_fields(f, is_training) for f in features), float_features=())


def record_dataset(input_file, seq_length, is_training, batch_size, drop_remainder,
                   seed=None):
  """tf.data over a feature TFRecord file.

  Yields dicts: input_ids, input_mask, segment_ids int32 [batch, seq_length],
  unique_ids int32 [batch] (int64 in the file; ids start at 1e9, within int32), and when
  is_training start_positions, end_positions, is_impossible int32 [batch].
  Training repeats forever and shuffles with a buffer of 100 records (the original's).
  """
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
    dataset = dataset.repeat().shuffle(buffer_size=input_pipeline.RECORD_SHUFFLE_BUFFER,
                                       seed=seed)
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
  return dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
      tf.data.AUTOTUNE)
