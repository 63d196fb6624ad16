"""SQuAD data: read a SQuAD JSON file into questions (SquadExample) with word-level answers.

Faithful to the original's read_squad_examples: the context split into whitespace
words, an answer's offset giving its word span, answers not found at their offset
skipped with a warning. What differs (docs/squad.md): a training question with several
answers trains on its first, and a malformed file, a missing or repeated id, a v2.0
question read without version_2_with_negative or an empty context is one line."""

import dataclasses
from typing import List, Optional

from absl import logging

from bert.squad import squad_metrics
from bert.squad import squad_options
from bert import tokenization
from bert.utils import errors


# eq=False: an example is itself (compared and hashed by identity), as the original's class.
@dataclasses.dataclass(eq=False)
class SquadExample:
  """One question about one paragraph.

  doc_tokens are the paragraph's whitespace-separated words; start_position and
  end_position index them (training only; -1 for an impossible v2.0 question).
  Questions of the same paragraph share the same doc_tokens list, which lets the
  feature conversion tokenize each paragraph once.
  """
  qas_id: str
  question_text: str
  doc_tokens: List[str]
  orig_answer_text: Optional[str] = None
  start_position: Optional[int] = None
  end_position: Optional[int] = None
  is_impossible: bool = False

  def __repr__(self):
    parts = [f"qas_id: {self.qas_id}", f"question_text: {self.question_text}",
             f"doc_tokens: [{' '.join(self.doc_tokens)}]"]
    if self.start_position is not None:
      parts += [f"start_position: {self.start_position}",
                f"end_position: {self.end_position}",
                f"is_impossible: {self.is_impossible}"]
    return ", ".join(parts)


# --------------------------------------------------------------------------- whitespace


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


# --------------------------------------------------------------------------- reading


@dataclasses.dataclass
class ReadStats:
  """What parse_squad_examples kept and skipped, for the log and for tests."""
  questions: int = 0
  examples: int = 0
  skipped_answers: int = 0
  multi_answer: int = 0
  impossible: int = 0


def _where(path, article_index, paragraph_index, question_index=None):
  where = f"{path}: article {article_index} paragraph {paragraph_index}"
  if question_index is not None:
    where += f" question {question_index}"
  return where


def _question_id(qa, where, seen_ids, is_training):
  """The question's id; in prediction mode a string that no earlier question has.

  seen_ids: {id: where it was first seen}, filled here (prediction mode only).
  """
  if not isinstance(qa, dict) or not qa.get("id"):
    raise errors.UserError(
        f"{where}: the question has no \"id\"; every question needs a unique id "
        "(predictions are keyed by it)")
  qas_id = qa["id"]
  if is_training:
    return qas_id  # training never keys anything by the id
  if not isinstance(qas_id, str):
    raise errors.UserError(
        f"{where}: the question id {qas_id!r} is a {type(qas_id).__name__}, not a string "
        "(predictions.json is keyed by the id as a string)")
  if qas_id in seen_ids:
    raise errors.UserError(
        f"{where}: duplicate question id {qas_id!r} (first at {seen_ids[qas_id]}); ids must "
        "be unique, or one question's prediction overwrites the other's")
  seen_ids[qas_id] = where.rsplit(": ", 1)[-1]
  return qas_id


def _check_version(qa, where, qas_id, version_2_with_negative):
  if qa.get("is_impossible") and not version_2_with_negative:
    raise errors.UserError(
        f"{where} (id {qas_id}): \"is_impossible\" is true, so this is a SQuAD 2.0 file; "
        "pass --version_2_with_negative (without it no question can get the null answer)")


def _training_answer(qa, where, qas_id, paragraph_text, doc_tokens, char_to_word_offset,
                     stats):
  """(orig_answer_text, start word, end word) of a training answer, or None to skip it."""
  answers = qa.get("answers") or []
  if not answers:
    raise errors.UserError(
        f"{where} (id {qas_id}): a training question needs an answer (or "
        "\"is_impossible\": true with --version_2_with_negative)")
  if len(answers) > 1:
    # Dev-format files list several answers; the original insisted on one.
    stats.multi_answer += 1
  answer = answers[0]
  orig_answer_text = answer.get("text") if isinstance(answer, dict) else None
  answer_offset = answer.get("answer_start") if isinstance(answer, dict) else None
  for field, value, kind in (("text", orig_answer_text, str),
                             ("answer_start", answer_offset, int)):
    # A wrong type is a malformed file, not an answer that is missing: the
    # original crashes on it; skipping it would train on fewer answers without a word.
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
      raise errors.UserError(
          f"{where} (id {qas_id}): the answer's \"{field}\" is a {type(value).__name__} "
          f"({value!r}), not {'a string' if kind is str else 'an integer'}; fix the file")
  if (not isinstance(orig_answer_text, str) or not orig_answer_text or
      isinstance(answer_offset, bool) or not isinstance(answer_offset, int) or
      answer_offset < 0 or answer_offset + len(orig_answer_text) > len(paragraph_text)):
    stats.skipped_answers += 1
    logging.warning("%s (id %s): answer %r at offset %r is outside the context; skipped",
                    where, qas_id, orig_answer_text, answer_offset)
    return None
  start_position = char_to_word_offset[answer_offset]
  end_position = char_to_word_offset[answer_offset + len(orig_answer_text) - 1]
  # Only answers whose text can be recovered from the document are kept; a mismatch is
  # usually odd Unicode or a wrong offset (the original's rule).
  actual_text = " ".join(doc_tokens[max(start_position, 0):(end_position + 1)])
  cleaned_answer_text = " ".join(tokenization.whitespace_tokenize(orig_answer_text))
  if start_position < 0 or actual_text.find(cleaned_answer_text) == -1:
    stats.skipped_answers += 1
    logging.warning("Could not find answer: '%s' vs. '%s' (%s, id %s)", actual_text,
                    cleaned_answer_text, where, qas_id)
    return None
  return orig_answer_text, start_position, end_position


def _paragraph_examples(paragraph, where, is_training, version_2_with_negative, stats,
                        seen_ids):
  """The SquadExamples of one paragraph ({"context", "qas"}); `where` names it."""
  if not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str):
    raise errors.UserError(f"{where}: no \"context\" string")
  qas = paragraph.get("qas")
  if not isinstance(qas, list):
    raise errors.UserError(f"{where}: no \"qas\" list")
  paragraph_text = paragraph["context"]
  doc_tokens, char_to_word_offset = whitespace_split(paragraph_text)
  if not doc_tokens and qas:
    raise errors.UserError(
        f"{where}: the context is empty; give it its text or remove the paragraph")
  examples = []
  for q, qa in enumerate(qas):
    stats.questions += 1
    where_q = f"{where} question {q}"
    qas_id = _question_id(qa, where_q, seen_ids, is_training)
    _check_version(qa, where_q, qas_id, version_2_with_negative)
    question_text = qa.get("question")
    if not isinstance(question_text, str):
      raise errors.UserError(f"{where_q} (id {qas_id}): no \"question\" text")
    example = SquadExample(qas_id=qas_id, question_text=question_text,
                           doc_tokens=doc_tokens)
    if is_training:
      answers = qa.get("answers") or []
      if version_2_with_negative and qa.get("is_impossible", not answers):
        stats.impossible += 1
        example.is_impossible = True
        example.orig_answer_text = ""
        example.start_position = example.end_position = -1
      else:
        answer = _training_answer(qa, where_q, qas_id, paragraph_text, doc_tokens,
                                  char_to_word_offset, stats)
        if answer is None:
          continue
        (example.orig_answer_text, example.start_position,
         example.end_position) = answer
    examples.append(example)
  return examples


def parse_squad_examples(data, is_training,
                         version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                         path="input",
                         stats=None):
  """Builds SquadExamples from the "data" list of a SQuAD JSON file.

  Args:
    data: list of articles ({"paragraphs": [{"context", "qas": [...]}]}).
    is_training: read the answers (word spans) as training targets.
    version_2_with_negative: honour "is_impossible" (SQuAD 2.0); without it a question
      with "is_impossible": true is an error.
    path: the file name used in messages.
    stats: a ReadStats to fill, or None.
  Returns:
    A list of SquadExample. Training answers whose text cannot be found at their
    offset are skipped with a warning, as in the original.
  Raises:
    errors.UserError: a malformed structure, a question without "id" or
      "question", a duplicate or non-string id (prediction mode), "is_impossible"
      without version_2_with_negative, or a paragraph with an empty context.
  """
  stats = stats if stats is not None else ReadStats()
  if not isinstance(data, list):
    raise errors.UserError(
        f"{path}: not a SQuAD file (expected a JSON object with a \"data\" list of articles)")
  examples = []
  seen_ids = {}
  for a, entry in enumerate(data):
    paragraphs = entry.get("paragraphs") if isinstance(entry, dict) else None
    if not isinstance(paragraphs, list):
      raise errors.UserError(f"{path}: article {a} has no \"paragraphs\" list")
    for p, paragraph in enumerate(paragraphs):
      examples.extend(_paragraph_examples(paragraph, _where(path, a, p), is_training,
                                          version_2_with_negative, stats, seen_ids))
  stats.examples = len(examples)
  return examples


def load_squad_json(input_file):
  """Reads a SQuAD JSON file (squad_metrics.load_json: a malformed one fails with
  file:line:column) and checks that it holds a "data" list."""
  input_json = squad_metrics.load_json(input_file, "SQuAD data file")
  if not isinstance(input_json, dict) or not isinstance(input_json.get("data"), list):
    raise errors.UserError(
        f"{input_file}: not a SQuAD file (expected a JSON object with a \"data\" list of "
        "articles)")
  return input_json


def log_read_stats(input_file, stats, is_training):
  """Logs what parse_squad_examples skipped (a warning) and simplified (info)."""
  if stats.skipped_answers:
    logging.warning("%s: skipped %d of %d questions whose answer text does not match the "
                    "context at its offset", input_file, stats.skipped_answers,
                    stats.questions)
  if is_training and stats.multi_answer:
    logging.info("%s: %d training questions have several answers; the first is used",
                 input_file, stats.multi_answer)


def read_squad_examples(input_file, is_training,
                        version_2_with_negative=squad_options.VERSION_2_WITH_NEGATIVE,
                        stats=None, articles=slice(None)):
  """The original's read_squad_examples: a SQuAD JSON file -> list of SquadExample.

  articles: a slice of the file's articles to read (all by default).
  """
  stats = stats if stats is not None else ReadStats()
  data = load_squad_json(input_file)["data"][articles]
  examples = parse_squad_examples(data, is_training, version_2_with_negative,
                                  path=input_file, stats=stats)
  log_read_stats(input_file, stats, is_training)
  return examples
