"""The CoNLL evaluation script (conlleval): its chunk rules, and its scores.

Chunks are found with conlleval's rules, which read IOB1 and IOB2 alike (CoNLL-2003 was
released in IOB1; most copies today use IOB2), and counted as conlleval counts them, so
the scores match `conlleval < predictions.txt`."""

import collections

IOB1 = "iob1"
IOB2 = "iob2"


# --------------------------------------------------------------------------- chunk rules


def split_tag(tag):
  """'B-PER' -> ('B', 'PER'); 'O' -> ('O', ''). Splits at the first hyphen, as conlleval."""
  prefix, sep, entity_type = tag.partition("-")
  return (prefix, entity_type) if sep else (tag, "")


# The (previous tag, this tag) pairs at which conlleval's endOfChunk / startOfChunk say yes
# whatever the types.
_ENDS = frozenset({("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"),
                   ("E", "O")})
_STARTS = frozenset({("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"),
                     ("O", "E")})


def _boundary(pairs, prev_tag, tag, side_tag, prev_type, this_type):
  """conlleval's one rule for both ends of a chunk: yes at one of `pairs`; at a change of
  type, unless `side_tag` (the previous tag for an end, this one for a start) is outside
  every chunk (O or .); and at a bracket tag."""
  if (prev_tag, tag) in pairs:
    return True
  if side_tag not in ("O", ".") and prev_type != this_type:
    return True
  return side_tag in ("[", "]")


def _end_of_chunk(prev_tag, tag, prev_type, this_type):
  """conlleval's endOfChunk: did a chunk end between the previous word and this one?"""
  return _boundary(_ENDS, prev_tag, tag, prev_tag, prev_type, this_type)


def _start_of_chunk(prev_tag, tag, prev_type, this_type):
  """conlleval's startOfChunk: does a chunk start at this word?"""
  return _boundary(_STARTS, prev_tag, tag, tag, prev_type, this_type)


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


def evaluate_examples(examples, predicted_tags, scheme):
  """conlleval metrics of predictions (IOB2) against the examples' gold tags, both read
  in the file's scheme (`scheme`)."""
  gold = [example.labels for example in examples]
  guessed = [convert_tags(tags, scheme) for tags in predicted_tags]
  return conll_evaluate(gold, guessed)
