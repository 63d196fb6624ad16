"""CoNLL-2003 named-entity recognition: reading, WordPiece features, decoding and scoring.

Middle floor: used by ner_task.py; reads no absl FLAGS.

What the paper does (Section 5.3, Table 7), and what this module implements:
  * each sentence is tokenized word by word; the FIRST WordPiece of a word carries the
    word's label and its prediction; the other pieces (and [CLS], [SEP], padding) get
    the label id IGNORE_LABEL_ID (-1), which the loss and the decoder skip;
  * a sentence longer than max_seq_length - 2 WordPieces is not truncated: it is cut
    into overlapping windows (starts on word boundaries, `doc_stride` pieces apart) and
    every word is decoded from exactly one window, the one where it has the most
    context on both sides (the rule run_squad uses for document spans);
  * entity-level precision, recall and F1 are computed with the CoNLL evaluation
    script's (conlleval) chunk rules, so scores match `conlleval < predictions.txt`.

Label schemes. CoNLL-2003 was released in IOB1 (I-X everywhere; B-X only between two
adjacent entities of the same type); ../shared/data/conll2003 and most copies today use
IOB2 (every entity starts with B-X). Both are read; the model always learns IOB2 tags
(`label_list`), and predictions are written back in the scheme of the input file.
Chunks are found with conlleval's rules, which read both: a chunk starts at B-X, at an
I-X after O, and at any tag whose type differs from the previous tag's type.
"""

import collections
import dataclasses
import hashlib
import os
from typing import List, Optional

import numpy as np

import atomic_output
import script_utils

# Label id of positions that carry no word label: WordPieces after a word's first one,
# [CLS], [SEP] and padding. Loss and decoding skip it.
IGNORE_LABEL_ID = -1

# The four CoNLL-2003 entity types, in the order of the shared task's description.
CONLL2003_ENTITY_TYPES = ("PER", "ORG", "LOC", "MISC")

IOB1 = "iob1"
IOB2 = "iob2"


def make_label_list(entity_types=CONLL2003_ENTITY_TYPES):
  """The IOB2 tag set the model predicts: "O" first (id 0), then B-/I- per type."""
  labels = ["O"]
  for entity_type in entity_types:
    labels += [f"B-{entity_type}", f"I-{entity_type}"]
  return labels


# --------------------------------------------------------------------------- reading


@dataclasses.dataclass
class NerExample:
  """One sentence of a CoNLL file.

  words: the first column of each line. labels: the last column (the gold NER tags as
  written in the file), or None for unlabelled input (a file with one column).
  columns: the columns between the word and the tag (POS, chunk), kept so predictions
  can be written in the input's own layout. line_number: where the sentence starts.
  """
  guid: str
  words: List[str]
  labels: Optional[List[str]]
  columns: List[List[str]]
  line_number: int = 0
  document_start: bool = False


def read_conll(path):
  """Reads a CoNLL-2003 column file into a list of NerExample.

  Lines are `word [POS chunk ...] TAG`, separated by single spaces or tabs; a blank line
  ends a sentence; `-DOCSTART-` lines mark documents and are not sentences. A file
  where every line has one column is read as unlabelled (labels None). A line whose
  column count differs from the file's first line raises UserError naming file:line.
  """
  examples = []
  words, labels, columns = [], [], []
  start_line = 0
  document_start = False
  num_columns = None
  name = os.path.basename(path)

  def flush():
    nonlocal words, labels, columns, document_start
    if words:
      examples.append(NerExample(
          guid=f"{name}-{len(examples)}", words=words,
          labels=labels if num_columns and num_columns > 1 else None,
          columns=columns, line_number=start_line, document_start=document_start))
      document_start = False
    words, labels, columns = [], [], []

  for number, line in script_utils.read_text_lines(path):
    fields = line.split()
    if not fields:
      flush()
      continue
    if fields[0] == "-DOCSTART-":
      flush()
      document_start = True
      continue
    if num_columns is None:
      num_columns = len(fields)
    elif len(fields) != num_columns:
      raise script_utils.UserError(
          f"{path}:{number}: expected {num_columns} columns like the file's first line, "
          f"found {len(fields)} ({line.strip()!r}); CoNLL lines are `word POS chunk TAG` "
          "separated by spaces, with a blank line between sentences")
    if not words:
      start_line = number
    words.append(fields[0])
    if num_columns > 1:
      labels.append(fields[-1])
      columns.append(fields[1:-1])
    else:
      columns.append([])
  flush()
  if not examples:
    raise script_utils.UserError(f"{path}: no sentences found (expected CoNLL columns "
                                 "`word POS chunk TAG`, blank lines between sentences)")
  return examples


# --------------------------------------------------------------------------- tag schemes


def split_tag(tag):
  """'B-PER' -> ('B', 'PER'); 'O' -> ('O', ''). Splits at the first hyphen, as conlleval."""
  prefix, sep, entity_type = tag.partition("-")
  return (prefix, entity_type) if sep else (tag, "")


def _end_of_chunk(prev_tag, tag, prev_type, this_type):
  """conlleval's endOfChunk: did a chunk end between the previous word and this one?"""
  if (prev_tag, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"),
                         ("E", "I"), ("E", "O")}:
    return True
  if prev_tag not in ("O", ".") and prev_type != this_type:
    return True
  return prev_tag in ("]", "[")


def _start_of_chunk(prev_tag, tag, prev_type, this_type):
  """conlleval's startOfChunk: does a chunk start at this word?"""
  if (prev_tag, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"),
                         ("E", "I"), ("O", "E")}:
    return True
  if tag not in ("O", ".") and prev_type != this_type:
    return True
  return tag in ("[", "]")


def get_chunks(tags):
  """Entity chunks of one sentence as (type, first_word, last_word_inclusive) tuples.

  Uses conlleval's start/end rules, so IOB1 (chunks may start with I-) and IOB2 give
  the same chunks for the same entities, and ill-formed predictions (I-X after O) are
  read the way the official scorer reads them.
  """
  chunks = []
  prev_tag, prev_type = "O", ""
  open_chunk = None  # [type, start]
  for index, full_tag in enumerate(list(tags) + ["O"]):
    tag, this_type = split_tag(full_tag)
    if open_chunk is not None and _end_of_chunk(prev_tag, tag, prev_type, this_type):
      chunks.append((open_chunk[0], open_chunk[1], index - 1))
      open_chunk = None
    if index < len(tags) and _start_of_chunk(prev_tag, tag, prev_type, this_type):
      open_chunk = [this_type, index]
    prev_tag, prev_type = tag, this_type
  return chunks


def chunks_to_tags(chunks, length, scheme):
  """Writes chunks back as tags: IOB2 (B- on every first word) or IOB1 (B- only when
  the previous word ends a chunk of the same type)."""
  tags = ["O"] * length
  for entity_type, start, end in sorted(chunks, key=lambda c: c[1]):
    for position in range(start, end + 1):
      tags[position] = f"I-{entity_type}"
    if scheme == IOB2:
      tags[start] = f"B-{entity_type}"
    elif start > 0 and any(c[0] == entity_type and c[2] == start - 1 for c in chunks):
      tags[start] = f"B-{entity_type}"
  return tags


def convert_tags(tags, scheme):
  """Re-encodes one sentence's tags into `scheme` (IOB1 or IOB2) through its chunks."""
  return chunks_to_tags(get_chunks(tags), len(tags), scheme)


def detect_scheme(examples):
  """IOB1 if some chunk starts with an I- tag (impossible in IOB2), else IOB2."""
  for example in examples:
    if not example.labels:
      continue
    prev_tag, prev_type = "O", ""
    for full_tag in example.labels:
      tag, this_type = split_tag(full_tag)
      if tag == "I" and _start_of_chunk(prev_tag, tag, prev_type, this_type):
        return IOB1
      prev_tag, prev_type = tag, this_type
  return IOB2


def check_labels(examples, label_list, path):
  """Every gold tag, read as IOB2, must be in label_list; else a UserError naming the line."""
  known = set(label_list)
  for example in examples:
    if not example.labels:
      continue
    for offset, tag in enumerate(convert_tags(example.labels, IOB2)):
      if tag not in known:
        original = example.labels[offset]
        raise script_utils.UserError(
            f"{path}:{example.line_number + offset}: tag {original!r} is not one of the "
            f"entity types {sorted({split_tag(t)[1] for t in label_list if t != 'O'})}; "
            "pass the data's types with --entity_types")


# --------------------------------------------------------------------------- features


@dataclasses.dataclass
class NerFeature:
  """One window of one sentence, ready for the model.

  input_ids, input_mask, segment_ids, label_ids: int32 [max_seq_length]; label_ids holds
  the IOB2 label id at each word's first WordPiece and IGNORE_LABEL_ID elsewhere.
  word_index: int32 [max_seq_length], the sentence word a position belongs to, -1 for
  [CLS], [SEP] and padding. decode_mask: int32 [max_seq_length], 1 at the first piece
  of each word that this window is responsible for predicting (each word of a sentence
  has exactly one such position over all its windows).
  """
  example_index: int
  window_index: int
  input_ids: np.ndarray
  input_mask: np.ndarray
  segment_ids: np.ndarray
  label_ids: np.ndarray
  word_index: np.ndarray
  decode_mask: np.ndarray


def tokenize_words(words, tokenizer):
  """WordPieces of each word; a word the tokenizer drops entirely (control characters
  only) becomes [UNK] so that it still gets a prediction."""
  pieces = []
  for word in words:
    word_pieces = tokenizer.tokenize(word)
    pieces.append(word_pieces if word_pieces else ["[UNK]"])
  return pieces


def make_windows(word_lengths, max_tokens, doc_stride):
  """Splits a sentence's WordPieces into windows of at most `max_tokens` pieces.

  word_lengths: number of pieces of each word. Returns a list of (start, end) piece
  offsets (end exclusive). Windows start and end on word boundaries (a single word
  longer than max_tokens is cut), consecutive windows overlap, and successive starts
  are at least `doc_stride` pieces apart when the words allow it.
  """
  word_starts = np.concatenate([[0], np.cumsum(word_lengths)]).astype(int)
  total = int(word_starts[-1])
  if total <= max_tokens:
    return [(0, total)]
  boundaries = [int(b) for b in word_starts]
  windows = []
  start = 0
  while True:
    limit = start + max_tokens
    if limit >= total:
      windows.append((start, total))
      return windows
    # End on the last word boundary inside the window, or cut a word longer than it.
    end = max((b for b in boundaries if start < b <= limit), default=limit)
    windows.append((start, end))
    following = [b for b in boundaries if start + doc_stride <= b < end]
    next_start = following[0] if following else end
    if next_start <= start:
      next_start = end
    start = next_start


def _best_window_per_word(first_piece_offsets, windows):
  """For each word, the window index where its first piece has the most context
  (min of pieces to its left and right in the window, ties to the earlier window)."""
  owners = []
  for offset in first_piece_offsets:
    best, best_score = None, None
    for index, (start, end) in enumerate(windows):
      if start <= offset < end:
        score = min(offset - start, end - 1 - offset)
        if best_score is None or score > best_score:
          best, best_score = index, score
    owners.append(best)
  return owners


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                 doc_stride=64):
  """NerExample list -> NerFeature list (one or more windows per sentence).

  Gold tags (IOB1 or IOB2: conlleval's chunk rules read both) are re-encoded into IOB2
  before looking them up in label_list. Unlabelled examples get IGNORE_LABEL_ID everywhere.
  """
  if max_seq_length < 3:
    raise script_utils.UserError(f"max_seq_length={max_seq_length}: must be at least 3 "
                                 "([CLS], one WordPiece, [SEP])")
  if doc_stride < 1:
    raise script_utils.UserError(f"doc_stride={doc_stride}: must be at least 1")
  label_map = {label: i for i, label in enumerate(label_list)}
  max_tokens = max_seq_length - 2
  features = []
  for example_index, example in enumerate(examples):
    pieces = tokenize_words(example.words, tokenizer)
    lengths = [len(p) for p in pieces]
    label_ids_per_word = ([label_map[t] for t in convert_tags(example.labels, IOB2)]
                          if example.labels else [IGNORE_LABEL_ID] * len(example.words))
    flat_tokens, flat_word, flat_first = [], [], []
    for word_index, word_pieces in enumerate(pieces):
      for piece_index, piece in enumerate(word_pieces):
        flat_tokens.append(piece)
        flat_word.append(word_index)
        flat_first.append(piece_index == 0)
    first_offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    windows = make_windows(lengths, max_tokens, doc_stride)
    owners = _best_window_per_word(first_offsets, windows)
    for window_index, (start, end) in enumerate(windows):
      tokens = ["[CLS]"] + flat_tokens[start:end] + ["[SEP]"]
      input_ids = np.zeros(max_seq_length, np.int32)
      input_ids[:len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
      input_mask = np.zeros(max_seq_length, np.int32)
      input_mask[:len(tokens)] = 1
      label_ids = np.full(max_seq_length, IGNORE_LABEL_ID, np.int32)
      word_index = np.full(max_seq_length, -1, np.int32)
      decode_mask = np.zeros(max_seq_length, np.int32)
      for position, offset in enumerate(range(start, end), start=1):
        word = flat_word[offset]
        word_index[position] = word
        if flat_first[offset]:
          label_ids[position] = label_ids_per_word[word]
          decode_mask[position] = int(owners[word] == window_index)
      features.append(NerFeature(
          example_index=example_index, window_index=window_index, input_ids=input_ids,
          input_mask=input_mask, segment_ids=np.zeros(max_seq_length, np.int32),
          label_ids=label_ids, word_index=word_index, decode_mask=decode_mask))
  return features


def features_to_arrays(features):
  """Stacks features into a dict of int32 arrays [num_features, max_seq_length]."""
  return {
      "input_ids": np.stack([f.input_ids for f in features]),
      "input_mask": np.stack([f.input_mask for f in features]),
      "segment_ids": np.stack([f.segment_ids for f in features]),
      "label_ids": np.stack([f.label_ids for f in features]),
  }


def decode_predictions(examples, features, predicted_ids, label_list):
  """Per-position label ids -> one IOB2 tag per word of every example.

  predicted_ids: int [num_features, max_seq_length], argmax of the logits. Only the
  positions in each feature's decode_mask are read, so every word is predicted from
  exactly one window. Raises ValueError if a word got no or two predictions.
  """
  tags = [[None] * len(example.words) for example in examples]
  for feature, row in zip(features, predicted_ids):
    for position in np.flatnonzero(feature.decode_mask):
      word = int(feature.word_index[position])
      slot = tags[feature.example_index]
      if slot[word] is not None:
        raise ValueError(f"word {word} of example {feature.example_index} decoded twice")
      slot[word] = label_list[int(row[position])]
  for example_index, example_tags in enumerate(tags):
    if any(t is None for t in example_tags):
      raise ValueError(f"example {example_index} has words without a prediction")
  return tags


# --------------------------------------------------------------------------- scoring


class ConllEvalCounts:
  """The counters of the CoNLL evaluation script (conlleval), fed sentence by sentence.

  Chunk and token counting follow conlleval exactly: a chunk is correct when gold and
  guessed chunks start on the same word with the same type and end on the same word;
  a blank line between sentences is an "O O" boundary that is not counted as a token.
  """

  def __init__(self):
    self.correct_chunk = 0
    self.found_correct = 0
    self.found_guessed = 0
    self.correct_tags = 0
    self.token_counter = 0
    self.correct_chunk_by_type = collections.Counter()
    self.found_correct_by_type = collections.Counter()
    self.found_guessed_by_type = collections.Counter()
    self._last = ("O", "", "O", "")  # last correct tag, its type, last guessed, its type
    self._in_correct = False

  def _step(self, correct_full, guessed_full, boundary=False):
    correct, correct_type = split_tag(correct_full)
    guessed, guessed_type = split_tag(guessed_full)
    if boundary:
      guessed = "O"
    last_correct, last_correct_type, last_guessed, last_guessed_type = self._last
    end_correct = _end_of_chunk(last_correct, correct, last_correct_type, correct_type)
    end_guessed = _end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
    start_correct = _start_of_chunk(last_correct, correct, last_correct_type, correct_type)
    start_guessed = _start_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
    if self._in_correct:
      if end_correct and end_guessed and last_guessed_type == last_correct_type:
        self._in_correct = False
        self.correct_chunk += 1
        self.correct_chunk_by_type[last_correct_type] += 1
      elif end_correct != end_guessed or guessed_type != correct_type:
        self._in_correct = False
    if start_correct and start_guessed and guessed_type == correct_type:
      self._in_correct = True
    if start_correct:
      self.found_correct += 1
      self.found_correct_by_type[correct_type] += 1
    if start_guessed:
      self.found_guessed += 1
      self.found_guessed_by_type[guessed_type] += 1
    if not boundary:
      if correct == guessed and guessed_type == correct_type:
        self.correct_tags += 1
      self.token_counter += 1
    self._last = (correct, correct_type, guessed, guessed_type)

  def add_sentence(self, gold_tags, guessed_tags):
    if len(gold_tags) != len(guessed_tags):
      raise ValueError(f"{len(gold_tags)} gold tags but {len(guessed_tags)} guessed")
    for correct, guessed in zip(gold_tags, guessed_tags):
      self._step(correct, guessed)
    self._step("O", "O", boundary=True)

  def _finished_correct_chunk(self):
    # conlleval counts a chunk still open at the end of the input.
    if self._in_correct:
      return 1, self._last[1]
    return 0, None

  def metrics(self):
    """Overall and per-type precision/recall/F1 as fractions (conlleval prints x100)."""
    extra, extra_type = self._finished_correct_chunk()
    correct_chunk = self.correct_chunk + extra
    by_type = collections.Counter(self.correct_chunk_by_type)
    if extra:
      by_type[extra_type] += 1

    def prf(correct, guessed, gold):
      precision = correct / guessed if guessed > 0 else 0.0
      recall = correct / gold if gold > 0 else 0.0
      f1 = (2 * precision * recall / (precision + recall)) if precision + recall > 0 else 0.0
      return precision, recall, f1

    precision, recall, f1 = prf(correct_chunk, self.found_guessed, self.found_correct)
    result = {
        "precision": precision, "recall": recall, "f1": f1,
        "accuracy": (self.correct_tags / self.token_counter) if self.token_counter else 0.0,
        "tokens": self.token_counter, "found_correct": self.found_correct,
        "found_guessed": self.found_guessed, "correct_chunks": correct_chunk,
        "per_type": {},
    }
    for entity_type in sorted(set(self.found_correct_by_type) | set(self.found_guessed_by_type)):
      p, r, f = prf(by_type[entity_type], self.found_guessed_by_type[entity_type],
                    self.found_correct_by_type[entity_type])
      result["per_type"][entity_type] = {
          "precision": p, "recall": r, "f1": f,
          "found_guessed": self.found_guessed_by_type[entity_type]}
    return result


def conll_evaluate(gold_sentences, guessed_sentences):
  """conlleval's metrics for parallel lists of per-sentence tag lists."""
  counts = ConllEvalCounts()
  for gold, guessed in zip(gold_sentences, guessed_sentences, strict=True):
    counts.add_sentence(gold, guessed)
  return counts.metrics()


def conlleval_report(metrics):
  """The text conlleval prints for these metrics (percentages with two decimals)."""
  lines = [
      f"processed {metrics['tokens']} tokens with {metrics['found_correct']} phrases; "
      f"found: {metrics['found_guessed']} phrases; correct: {metrics['correct_chunks']}."]
  if metrics["tokens"] > 0:
    lines.append(
        f"accuracy: {100 * metrics['accuracy']:6.2f}%; "
        f"precision: {100 * metrics['precision']:6.2f}%; "
        f"recall: {100 * metrics['recall']:6.2f}%; FB1: {100 * metrics['f1']:6.2f}")
  for entity_type, values in metrics["per_type"].items():
    lines.append(
        f"{entity_type:>17}: precision: {100 * values['precision']:6.2f}%; "
        f"recall: {100 * values['recall']:6.2f}%; FB1: {100 * values['f1']:6.2f}  "
        f"{values['found_guessed']}")
  return "\n".join(lines) + "\n"


def write_conll_predictions(path, examples, predicted_tags, scheme):
  """Writes `word [columns...] GOLD PREDICTED` lines, a blank line after each sentence:
  the input that conlleval reads. Predicted tags are converted to `scheme`; unlabelled
  input gets only the predicted column. -DOCSTART- lines are left out so that the
  file's conlleval token count equals our `tokens`."""
  with script_utils.disk_full_names(path), atomic_output.atomic_open(path) as handle:
    for example, tags in zip(examples, predicted_tags, strict=True):
      tags = convert_tags(tags, scheme)
      for index, word in enumerate(example.words):
        fields = [word] + list(example.columns[index])
        if example.labels is not None:
          fields.append(example.labels[index])
        fields.append(tags[index])
        handle.write(" ".join(fields) + "\n")
      handle.write("\n")


def settings_fingerprint(**settings):
  """Short stable hash of the settings that determine cached features."""
  text = repr(sorted(settings.items()))
  return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def evaluate_examples(examples, predicted_tags, scheme):
  """conlleval metrics of predictions (IOB2) against gold, both in the file's scheme."""
  gold = [example.labels for example in examples]
  guessed = [convert_tags(tags, scheme) for tags in predicted_tags]
  return conll_evaluate(gold, guessed)
