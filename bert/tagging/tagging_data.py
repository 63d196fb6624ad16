"""What every token-level task needs: a CoNLL column file in, one tag per word out.

A word's first WordPiece carries its label and its prediction. A sentence longer than a
window is not truncated (that would drop words from the score): it is cut into
overlapping windows, and every word is decoded from the one where it has the most
context, the max-context rule run_squad uses. Tags that are IOB chunks can be learned as
IOB2 (iob=True) and written back in the file's scheme. NumPy only."""

import collections
import dataclasses
from typing import List, Optional

import numpy as np

from bert import modeling_config
from bert.tagging import tagging_conlleval
from bert.utils import atomic_output
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks

# Label id of positions that carry no word label: WordPieces after a word's first one,
# [CLS], [SEP] and padding. Loss and decoding skip it.
IGNORE_LABEL_ID = -1


# --------------------------------------------------------------------------- reading


@dataclasses.dataclass
class TaggedSentence:
  """One sentence of a CoNLL file.

  words: the first column of each line. labels: the tag column's value on each line (as
  written in the file), or None for unlabelled input (a file with one column).
  columns: each line's other columns, in file order, kept so predictions can be written
  in the input's own layout. line_number: where the sentence starts.
  """
  guid: str
  words: List[str]
  labels: Optional[List[str]]
  columns: List[List[str]]
  line_number: int = 0
  document_start: bool = False


def check_tag_column(tag_column):
  """Refuses --tag_column 1 or less: column 1 holds the words (None: the last column)."""
  if tag_column is not None and tag_column < 2:
    raise errors.UserError(f"--tag_column={tag_column}: the tags are column 2 or "
                                 "later (column 1 holds the words)")


def read_conll(path, tag_column=None):
  """Reads a CoNLL column file into a list of TaggedSentence.

  Lines are `word col2 col3 ...`, separated by single spaces or tabs; a blank line ends a
  sentence; `-DOCSTART-` lines mark documents and are not sentences. tag_column: the
  column holding the tags, counted from 1 (the word) as `cut -f` does: 2 is
  CoNLL-2003's part-of-speech tag, 3 its chunk tag, 4 its entity tag; None: the last
  column (at least 2). A file where every line has one column is read as unlabelled (labels None). A
  line whose column count differs from the file's first line, or a file without the tag
  column, raises UserError naming file:line.
  """
  examples = []
  words, labels, columns = [], [], []
  start_line = 0
  document_start = False
  num_columns = None
  tag_index = -1 if tag_column is None else tag_column - 1
  name = paths.basename(path)

  def flush():
    nonlocal words, labels, columns, document_start
    if words:
      examples.append(TaggedSentence(
          guid=f"{name}-{len(examples)}", words=words,
          labels=labels if num_columns and num_columns > 1 else None,
          columns=columns, line_number=start_line, document_start=document_start))
      document_start = False
    words, labels, columns = [], [], []

  for number, line in input_checks.read_text_lines(path):
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
      if 1 < num_columns <= tag_index:
        raise errors.UserError(
            f"{path}:{number}: {num_columns} columns, no column {tag_column} to take the "
            f"tags from (--tag_column={tag_column})")
    elif len(fields) != num_columns:
      raise errors.UserError(
          f"{path}:{number}: expected {num_columns} columns like the file's first line, "
          f"found {len(fields)} ({line.strip()!r}); CoNLL lines are `word POS chunk TAG` "
          "separated by spaces, with a blank line between sentences")
    if not words:
      start_line = number
    words.append(fields[0])
    if num_columns > 1:
      tag_at = tag_index % num_columns
      labels.append(fields[tag_at])
      columns.append(fields[1:tag_at] + fields[tag_at + 1:])
    else:
      columns.append([])
  flush()
  if not examples:
    raise errors.UserError(f"{path}: no sentences found (expected CoNLL columns "
                                 "`word POS chunk TAG`, blank lines between sentences)")
  return examples


# --------------------------------------------------------------------------- labels


def learned_tags(example, iob):
  """The tags the model learns for one sentence: IOB2 when `iob`, else as written."""
  return tagging_conlleval.convert_tags(example.labels, tagging_conlleval.IOB2) if iob else example.labels


def label_list_from(examples, iob):
  """The labels found in `examples` (learned form), sorted; with `iob`, "O" first."""
  tags = {tag for example in examples if example.labels
          for tag in learned_tags(example, iob)}
  if iob:
    return ["O"] + sorted(tags - {"O"})
  return sorted(tags)


def is_chunk_tag(tag):
  """O, B-X or I-X: a tag that conlleval's chunk rules read as the file wrote it."""
  return tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2)


def check_chunk_tags(examples, path, tag_column, remedy):
  """Refuses IOB reading of a column whose tags are not chunk tags, naming the column and
  a few of the tags found there.

  conlleval's rules read any other tag (a part-of-speech tag, say) as outside every
  chunk: a part-of-speech column read as IOB becomes all O, one label, and the run
  trains a one-output model and scores 0 without a word. remedy: what to do instead.
  """
  found, first = [], None
  for example in examples:
    for offset, tag in enumerate(example.labels or ()):
      if not is_chunk_tag(tag):
        if first is None:
          first = example.line_number + offset
        if tag not in found:
          found.append(tag)
  if found:
    column = f"column {tag_column}" if tag_column else "the last column"
    shown = ", ".join(repr(tag) for tag in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    raise errors.UserError(
        f"{path}:{first}: {column} holds tags that are not IOB chunk tags (B-X, I-X or "
        f"O): {shown}{more}; {remedy}")


def first_unknown_tag(examples, label_list, iob):
  """(example, word offset) of the first gold tag not in label_list, or None."""
  known = set(label_list)
  for example in examples:
    if not example.labels:
      continue
    for offset, tag in enumerate(learned_tags(example, iob)):
      if tag not in known:
        return example, offset
  return None


# --------------------------------------------------------------------------- features


@dataclasses.dataclass
class WindowFeature:
  """One window of one sentence, ready for the model.

  input_ids, input_mask, segment_ids, label_ids: int32 [max_seq_length]; label_ids holds
  the label id at each word's first WordPiece and IGNORE_LABEL_ID elsewhere.
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


# The windows' default stride (--doc_stride), and whether tags are IOB chunks (--iob;
# run_ner's entities are).
DOC_STRIDE = 64
IOB = False


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                 doc_stride=DOC_STRIDE, iob=IOB):
  """TaggedSentence list -> WindowFeature list (one or more windows per sentence).

  iob: the tags are IOB chunks, learned as IOB2 (IOB1 and IOB2 gold read alike through
  conlleval's chunk rules); else each tag is looked up in label_list as written.
  Unlabelled examples get IGNORE_LABEL_ID everywhere.
  """
  modeling_config.check_max_seq_length(max_seq_length)
  if doc_stride < 1:
    raise errors.UserError(f"doc_stride={doc_stride}: must be at least 1")
  label_map = {label: i for i, label in enumerate(label_list)}
  max_tokens = max_seq_length - 2
  features = []
  for example_index, example in enumerate(examples):
    pieces = tokenize_words(example.words, tokenizer)
    lengths = [len(p) for p in pieces]
    label_ids_per_word = ([label_map[t] for t in learned_tags(example, iob)]
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
      features.append(WindowFeature(
          example_index=example_index, window_index=window_index, input_ids=input_ids,
          input_mask=input_mask, segment_ids=np.zeros(max_seq_length, np.int32),
          label_ids=label_ids, word_index=word_index, decode_mask=decode_mask))
  return features


def features_to_arrays(features):
  """Stacks features into a dict of int32 arrays [num_features, max_seq_length], plus
  feature_index int32 [num_features] (each row's place, to put predictions back)."""
  return {
      "input_ids": np.stack([f.input_ids for f in features]),
      "input_mask": np.stack([f.input_mask for f in features]),
      "segment_ids": np.stack([f.segment_ids for f in features]),
      "label_ids": np.stack([f.label_ids for f in features]),
      "feature_index": np.arange(len(features), dtype=np.int32),
  }


# --------------------------------------------------------------------------- decoding


def decode_positions(examples, features):
  """Where each word is predicted: (rows, positions), int arrays [total words], word by
  word in input order (every word of examples[0], then of examples[1], ...).

  rows index `features` (and the rows of per-feature outputs), positions the sequence
  axis; `outputs[rows, positions]` is one output per word. Raises ValueError if a word is
  decoded by no window or by two (a bug in the windows, not in the user's data).
  """
  starts = np.concatenate([[0], np.cumsum([len(e.words) for e in examples])]).astype(int)
  rows = np.full(starts[-1], -1, np.int64)
  positions = np.full(starts[-1], -1, np.int64)
  for row, feature in enumerate(features):
    for position in np.flatnonzero(feature.decode_mask):
      slot = starts[feature.example_index] + int(feature.word_index[position])
      if rows[slot] >= 0:
        raise ValueError(f"word {int(feature.word_index[position])} of example "
                         f"{feature.example_index} decoded twice")
      rows[slot], positions[slot] = row, position
  missing = np.flatnonzero(rows < 0)
  if missing.size:
    example_index = int(np.searchsorted(starts, missing[0], side="right") - 1)
    raise ValueError(f"example {example_index} has words without a prediction")
  return rows, positions


def split_by_sentence(examples, values):
  """Per-word values (decode_positions' order) -> one list per example."""
  result, start = [], 0
  for example in examples:
    result.append(list(values[start:start + len(example.words)]))
    start += len(example.words)
  return result


def decode_predictions(examples, features, predicted_ids, label_list):
  """Per-position label ids -> one tag (label_list's form) per word of every example.

  predicted_ids: int [num_features, max_seq_length], argmax of the logits. Only each
  word's decode position is read, so every word is predicted from exactly one window.
  """
  rows, positions = decode_positions(examples, features)
  ids = np.asarray(predicted_ids)[rows, positions]
  return split_by_sentence(examples, [label_list[int(i)] for i in ids])


def gold_label_ids(examples, label_list, iob):
  """Every word's gold label id, int64 [total words], in decode_positions' order."""
  label_map = {label: i for i, label in enumerate(label_list)}
  return np.array([label_map[t] for e in examples for t in learned_tags(e, iob)],
                  np.int64)


# --------------------------------------------------------------------------- baselines


def baseline_tags(train_examples, examples, per_word):
  """Two baselines' predictions for `examples`, one tag list per sentence.

  per_word False: the training data's most frequent tag everywhere (the majority tag).
  per_word True: each word's most frequent tag in the training data (exact word form),
  the majority tag for a word never seen. Ties go to the tag that sorts first.
  """
  def most_frequent(counter):
    return min(counter, key=lambda tag: (-counter[tag], tag))

  overall = collections.Counter()
  by_word = collections.defaultdict(collections.Counter)
  for example in train_examples:
    for word, tag in zip(example.words, example.labels, strict=True):
      overall[tag] += 1
      by_word[word][tag] += 1
  majority = most_frequent(overall)
  best = {word: most_frequent(counter) for word, counter in by_word.items()}
  return [[best.get(word, majority) if per_word else majority for word in example.words]
          for example in examples]


# --------------------------------------------------------------------------- writing


def write_conll_predictions(path, examples, predicted_tags, scheme=None):
  """Writes `word [columns...] GOLD PREDICTED` lines, a blank line after each sentence:
  the input that conlleval reads. scheme: IOB1 or IOB2 to re-encode predicted chunk tags
  into (the input file's scheme), None to write them as they are. Unlabelled input gets
  only the predicted column. -DOCSTART- lines are left out so that the file's conlleval
  token count equals the words scored."""
  with errors.disk_full_names(path), atomic_output.atomic_open(path) as handle:
    for example, tags in zip(examples, predicted_tags, strict=True):
      if scheme is not None:
        tags = tagging_conlleval.convert_tags(tags, scheme)
      for index, word in enumerate(example.words):
        fields = [word] + list(example.columns[index])
        if example.labels is not None:
          fields.append(example.labels[index])
        fields.append(tags[index])
        handle.write(" ".join(fields) + "\n")
      handle.write("\n")
