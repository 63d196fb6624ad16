"""New words in a vocabulary (extend_vocab.py's work): each word takes the place of an
`[unusedN]` entry, in order, as the original README advises, and every other line stays
byte for byte, so the vocabulary keeps its size and ids and a checkpoint made for it
loads unchanged (the new words' rows of the embedding table are the unused entries'
rows, which fine-tuning then trains). Given leave to append (`append=True`, when
extend_vocab.py grows a checkpoint with the vocabulary: bert/adaptation), the words past
the last [unusedN] entry are added at the end, with new ids.

A word is checked against the tokenizer's own rules before it is written: WordPiece
only ever sees what BasicTokenizer leaves of the text, so a word that it splits
(punctuation, CJK ideographs, whitespace) could never come out as one piece and is
refused, naming the pieces and why; with do_lower_case the word is written as the
tokenizer reads it (lower-cased, accents stripped), with a note. Pure Python: no
TensorFlow.
"""

import collections
import dataclasses
import re

from bert import tokenization
from bert.utils import atomic_output
from bert.utils import errors
from bert.utils import file_io
from bert.utils import input_checks

# The entries Google's vocabularies reserve for new words (create_vocab.py's too).
UNUSED_RE = re.compile(r"^\[unused\d+\]$")


@dataclasses.dataclass
class Plan:
  """What extending a vocabulary does.

  added: [(word, vocab line number (1-based), the [unusedN] entry it replaces, or None
  for a word appended at the end)]; skipped: [(words_file line, word, reason)]; notes:
  [str] (words written as the tokenizer reads them); slots: how many [unusedN] entries
  the vocabulary has; output: the new vocab.txt's bytes.
  """
  added: list
  skipped: list
  notes: list
  slots: int
  output: bytes


def _lines(data):
  """The file's lines without their b"\\n" (a last newline starts no line), as
  tokenization.load_vocab splits them."""
  lines = data.split(b"\n")
  if lines and lines[-1] == b"":
    lines.pop()
  return lines


def _token(raw, index):
  text = file_io.decode_text(raw) if index == 0 else raw.decode("utf-8")
  return text.strip()


def _why_split(word):
  """Why BasicTokenizer splits `word`, as a phrase."""
  reasons = []
  if any(tokenization.is_punctuation(c) for c in word):
    reasons.append("it splits punctuation off every word")
  if any(tokenization.is_chinese_char(ord(c)) for c in word):
    reasons.append("it makes every CJK ideograph a word of its own")
  if any(tokenization.is_whitespace(c) for c in word.strip()):
    reasons.append("it splits at whitespace: one word a line")
  return "; ".join(reasons) or "it splits it there"


def check_word(word, basic):
  """(token, problem, note) for one word of the list: token is what to write (the word as
  the tokenizer reads it), problem a phrase when it can never be one piece, note a
  phrase when the token differs from the word as written."""
  pieces = basic.tokenize(word)
  if not pieces:
    return None, "the tokenizer drops every character of it (control characters)", None
  if len(pieces) > 1:
    shown = ", ".join(repr(p) for p in pieces[:8]) + (", ..." if len(pieces) > 8 else "")
    return None, (f"the basic tokenizer splits it into {shown} before WordPiece sees it "
                  f"({_why_split(word)})"), None
  (token,) = pieces
  if len(token) > tokenization.MAX_INPUT_CHARS_PER_WORD:
    return None, (f"it is longer than {tokenization.MAX_INPUT_CHARS_PER_WORD} characters, "
                  "which WordPiece makes [UNK]"), None
  note = None
  if token != word:
    if basic.do_lower_case:
      note = (f"{word!r} is added as {token!r}: with --do_lower_case the tokenizer "
              "lower-cases words and strips their accents")
    else:
      note = f"{word!r} is added as {token!r}, as the tokenizer reads it"
  return token, None, note


def plan_extension(vocab_file, words_file, do_lower_case=tokenization.DO_LOWER_CASE,
                   normalize=None, append=False):
  """Reads the vocabulary and the word list and decides every line; writes nothing.

  Raises UserError (nothing written) for a word that can never be one piece (the first
  named, with how many more), and, unless `append`, for more new words than [unusedN]
  entries (with `append` those are added at the end, in order).
  """
  data = file_io.read_bytes(vocab_file, "vocab file ",
                            " (pass --vocab_file=<the vocab.txt of your model>)",
                            "the vocab.txt file")
  vocab = tokenization.load_vocab(vocab_file)  # its own checks: UTF-8, no duplicate
  lines = _lines(data)
  slots = [i for i, raw in enumerate(lines) if UNUSED_RE.match(_token(raw, i))]
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case, normalize=normalize)
  wordpiece = tokenization.WordpieceTokenizer(vocab)
  words, skipped, notes, problems, seen = [], [], [], [], {}
  for number, line in input_checks.read_text_lines(words_file):
    word = line.strip()
    if not word:
      continue
    token, problem, note = check_word(word, basic)
    if problem:
      problems.append(f"{words_file}:{number}: {word!r} cannot be one piece: {problem}")
      continue
    if note:
      notes.append(f"{words_file}:{number}: {note}")
    if token in seen:
      skipped.append((number, word, f"the same token as line {seen[token]} ({token!r})"))
      continue
    seen[token] = number
    if wordpiece.tokenize(token) == [token]:
      skipped.append((number, word, f"already one piece ({token!r}, id {vocab[token]})"))
      continue
    words.append(token)
  if problems:
    more = f" (and {len(problems) - 1} more such words)" if len(problems) > 1 else ""
    raise errors.UserError(f"{problems[0]}{more}; remove it from --words_file")
  if len(words) > len(slots) and not append:
    raise errors.UserError(
        f"--words_file={words_file}: {len(words)} new words, but --vocab_file={vocab_file} "
        f"has only {len(slots)} [unusedN] entries to put them in; give at most "
        f"{len(slots)} words, or learn a new vocabulary (create_vocab.py)")
  added, out = [], list(lines)
  for word, index in zip(words, slots):
    old = lines[index]
    new = word.encode("utf-8")
    if index == 0 and old.startswith(file_io.BYTE_ORDER_MARK):
      new = file_io.BYTE_ORDER_MARK + new
    if old.endswith(b"\r"):  # a Windows line end stays as it was
      new += b"\r"
    out[index] = new
    added.append((word, index + 1, _token(old, index)))
  end = b"\r" if lines and lines[-1].endswith(b"\r") else b""  # the file's line ends
  for word in words[len(slots):]:
    out.append(word.encode("utf-8") + end)
    added.append((word, len(out), None))
  output = b"\n".join(out) + (b"\n" if data.endswith(b"\n") or len(out) > len(lines)
                              else b"")
  return Plan(added, skipped, notes, len(slots), output)


def corpus_report(corpus_file, old_vocab, new_vocab, new_words,
                  do_lower_case=tokenization.DO_LOWER_CASE,
                  normalize=None):
  """How the corpus tokenizes before and after: a dict of

  words, distinct_words: the corpus's words (BasicTokenizer's) and distinct ones;
  new_word_occurrences: how many of them are new words, each now one piece;
  new_words_seen: how many of the new words occur; new_word_pieces_before: the pieces
  those occurrences took before; pieces_per_word_before / _after over the whole corpus;
  words_changed: occurrences of other words whose pieces changed (a longer match).
  """
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case, normalize=normalize)
  counts = collections.Counter()
  for _, line in input_checks.read_text_lines(corpus_file):
    counts.update(basic.tokenize(line))
  if not counts:
    raise errors.UserError(f"--corpus_file={corpus_file}: the file holds no word")
  old = tokenization.WordpieceTokenizer(old_vocab)
  new = tokenization.WordpieceTokenizer(new_vocab)
  new_words = set(new_words)
  before = after = seen = pieces_new_before = occurrences = changed = one_piece = 0
  for word, count in counts.items():
    pieces_old, pieces_new = old.tokenize(word), new.tokenize(word)
    before += count * len(pieces_old)
    after += count * len(pieces_new)
    if word in new_words:
      seen += 1
      occurrences += count
      pieces_new_before += count * len(pieces_old)
      one_piece += count * (pieces_new == [word])
    elif pieces_old != pieces_new:
      changed += count
  total = sum(counts.values())
  return {"words": total, "distinct_words": len(counts), "new_words_seen": seen,
          "new_word_occurrences": occurrences, "new_word_occurrences_one_piece": one_piece,
          "new_word_pieces_before": pieces_new_before,
          "pieces_per_word_before": round(before / total, 4),
          "pieces_per_word_after": round(after / total, 4), "words_changed": changed}


def summarize(plan, vocab_file, corpus_file=None, do_lower_case=tokenization.DO_LOWER_CASE,
               normalize=None):
  """A summary dict of a plan: added, skipped, unused_left, and with corpus_file its
  corpus_report."""
  appended = sum(unused is None for _, _, unused in plan.added)
  summary = {"added": len(plan.added), "skipped": len(plan.skipped),
             "unused_left": plan.slots - (len(plan.added) - appended)}
  if corpus_file:
    old_vocab = tokenization.load_vocab(vocab_file)
    new_vocab = collections.OrderedDict(old_vocab)
    for word, line, unused in plan.added:
      if unused is not None:
        del new_vocab[unused]
      new_vocab[word] = line - 1
    summary["corpus"] = corpus_report(corpus_file, old_vocab, new_vocab,
                                      [w for w, _, _ in plan.added], do_lower_case,
                                      normalize)
  return summary


def write_vocab(plan, output_file, flag="output_file"):
  """Writes the plan's vocab.txt at output_file, atomically."""
  atomic_output.prepare_output_file(output_file)
  with errors.disk_full_names(output_file, flag):
    with atomic_output.atomic_open(output_file, "wb") as handle:
      handle.write(plan.output)


def extend_vocab(vocab_file, words_file, output_file,
                 do_lower_case=tokenization.DO_LOWER_CASE,
                 corpus_file=None, normalize=None):
  """Writes output_file (atomically): vocab_file with the words of words_file in place of
  its [unusedN] entries, in order; every other line byte for byte. Returns the plan and
  its summary (summarize)."""
  plan = plan_extension(vocab_file, words_file, do_lower_case, normalize)
  summary = summarize(plan, vocab_file, corpus_file, do_lower_case, normalize)
  write_vocab(plan, output_file)
  return plan, summary
