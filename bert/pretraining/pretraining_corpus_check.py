"""A corpus check that warns before the hours are spent: the usual wrong turns of a new language.

create_vocab.py and create_pretraining_data.py print its report of a sample at start
(--check_only stops there): the [UNK] rate and its likely cause, letters that
--do_lower_case=True breaks in caseless scripts, decomposed (NFD) text, and corpora of a
paragraph a line (their random-next share, estimated with the generator's own pairing).
It only reports; the data is never changed. docs/new_language.md explains each warning."""

import dataclasses
import random
import re
import statistics
import unicodedata

from absl import logging

from bert import modeling_config
from bert.pretraining import pretraining_corpus
from bert.pretraining import pretraining_instances
from bert import tokenization
from bert.utils import errors
from bert.utils import input_checks

# Lines read from the start of the corpus (fewer when the first MAX_SAMPLE_CHARS run out).
SAMPLE_LINES = 5000
MAX_SAMPLE_CHARS = 4_000_000
# Lines of the sample given to a sentence splitter for the estimate (splitters are slow:
# pysbd takes about 1.5 ms a sentence on this project's 2-core machine).
SPLIT_SAMPLE_LINES = 300
# Warn above these.
UNK_WARN_RATE = 0.03  # [UNK] tokens per token: Google's vocabularies give < 0.001 on
#                       their own languages, a vocabulary of another script 0.2 or more.
DAMAGED_LETTERS_WARN = 0.01  # letters the lower-casing path changes, in caseless scripts
NFD_LINES_WARN = 0.01  # lines not in NFC form
RANDOM_NEXT_WARN = 0.7  # one sentence a line gives about 0.5 (the original's corpora)
PARAGRAPH_LINE_CHARS = 400  # mean characters a line that looks like paragraphs
HEADING_LINES_WARN = 0.01

_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*\s+\S")
_HEADING = re.compile(r"(?:=+ )+[^= ].*?(?: =+)+")


@dataclasses.dataclass
class Report:
  """What the check measured (see report_lines) and the warnings, one line each."""
  source: str
  vocab_file: str = None
  do_lower_case: bool = True
  lines: int = 0
  documents: int = 0
  chars_per_line: float = 0.0
  multi_sentence_lines: int = 0
  heading_lines: int = 0
  nfd_lines: int = 0
  damaged_letters: float = 0.0
  damaged_scripts: tuple = ()
  unk_rate: float = None
  unk_tokens: int = 0
  tokens: int = 0
  uncovered_chars: float = 0.0
  uncovered_examples: tuple = ()
  random_next: float = None
  random_next_split: float = None
  splitter: str = None
  split_applied: bool = False
  warnings: list = dataclasses.field(default_factory=list)


def read_sample(input_files, max_lines=SAMPLE_LINES, max_chars=MAX_SAMPLE_CHARS):
  """The first documents of the corpus: list of documents, each a list of stripped lines.

  A blank line ends a document (as create_pretraining_data reads them); undecodable lines
  are skipped here (the real run reports them).
  """
  documents, document, lines, chars = [], [], 0, 0
  for path in input_files:
    for _, line in input_checks.read_text_lines(path, "skip"):
      line = line.strip()
      if not line:
        if document:
          documents.append(document)
          document = []
        if lines >= max_lines or chars >= max_chars:
          return documents
        continue
      document.append(line)
      lines += 1
      chars += len(line)
      if lines >= 2 * max_lines or chars >= 2 * max_chars:  # no blank line for too long
        break
    else:
      continue
    break
  if document:
    documents.append(document)
  return documents


def _lower_path(char):
  """What BasicTokenizer's do_lower_case=True makes of one character."""
  decomposed = unicodedata.normalize("NFD", char.lower())
  return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def _damaged_letters(text_chars):
  """(share of letters, scripts): caseless letters that the lower-casing path changes.

  Cased letters (Latin, Greek, Cyrillic, ...) are left out: stripping their accents is
  what an uncased model is meant to do.
  """
  letters = damaged = 0
  scripts = {}
  for char, count in text_chars.items():
    if not unicodedata.category(char).startswith("L"):
      continue
    letters += count
    if char.lower() != char or char.upper() != char:
      continue
    if _lower_path(char) != char:
      damaged += count
      script = unicodedata.name(char, "UNKNOWN").split()[0]
      scripts[script] = scripts.get(script, 0) + count
  ordered = tuple(s for s, _ in sorted(scripts.items(), key=lambda kv: -kv[1]))
  return (damaged / letters if letters else 0.0), ordered


def _char_counts(lines):
  counts = {}
  for line in lines:
    for char in line:
      counts[char] = counts.get(char, 0) + 1
  return counts


def _uncovered(basic, lines, vocab):
  """(share of the characters the WordPiece step sees that have no token, examples)."""
  seen = _char_counts("".join(basic.tokenize(line)) for line in lines)
  total = sum(seen.values())
  missing = {c: n for c, n in seen.items() if c not in vocab and "##" + c not in vocab}
  examples = tuple(sorted(missing, key=lambda c: -missing[c])[:5])
  return (sum(missing.values()) / total if total else 0.0), examples


def estimate_random_next(documents, count_tokens,
                         max_seq_length=modeling_config.DEFAULT_MAX_SEQ_LENGTH,
                         short_seq_prob=pretraining_instances.SHORT_SEQ_PROB, seed=0):
  """The share of random-next pairs the generator would make of these documents.

  documents: list of lists of sentences; count_tokens: sentence -> token count. Runs
  pretraining_instances.plan_instances (the generator's own pairing) three passes over
  them.
  None when fewer than two documents have tokens.
  """
  prefixes, starts, offset = [], [], 0
  for document in documents:
    lengths = [n for n in (count_tokens(s) for s in document) if n]
    if lengths:
      prefix = [0]
      for n in lengths:
        prefix.append(prefix[-1] + n)
      prefixes.append(prefix)
      starts.append(offset)
      offset += prefix[-1]
  if len(prefixes) < 2:
    return None
  opt = pretraining_instances.InstanceOptions(
      max_seq_length=max_seq_length, max_predictions_per_seq=20, dupe_factor=3,
      short_seq_prob=short_seq_prob, masked_lm_prob=0.15, mask_token_prob=0.8,
      random_token_prob=0.1, do_whole_word_mask=False, cls_id=0, sep_id=0, mask_id=0,
      vocab_ids=[], is_subword=b"")
  random_next = pretraining_instances.plan_instances(prefixes, starts, opt,
                                                     random.Random(seed))[4]
  return sum(random_next) / len(random_next) if random_next else None


def _shape(report, lines):
  report.lines = len(lines)
  report.chars_per_line = statistics.fmean(len(l) for l in lines) if lines else 0.0
  report.multi_sentence_lines = sum(len(_SENTENCE_END.findall(l)) >= 2 for l in lines)
  report.heading_lines = sum(bool(_HEADING.fullmatch(l)) for l in lines)


def check_corpus(documents, do_lower_case, vocab_file=None, normalize=None,
                 split_sentences=None, splitter_name=None,
                 max_seq_length=modeling_config.DEFAULT_MAX_SEQ_LENGTH,
                 short_seq_prob=pretraining_instances.SHORT_SEQ_PROB, source="the corpus"):
  """Measures the sample `documents` (read_sample's) and returns a Report with warnings.

  vocab_file: None before a vocabulary exists (create_vocab): no [UNK] rate then.
  normalize: None or "nfc", as the run will apply it. split_sentences: the run's
  splitter (a function line -> sentences), or None; splitter_name names it.
  """
  report = Report(source=source, vocab_file=vocab_file, do_lower_case=do_lower_case,
                  documents=len(documents), splitter=splitter_name,
                  split_applied=split_sentences is not None)
  lines = [l for d in documents for l in d]
  _shape(report, lines)
  report.nfd_lines = sum(not unicodedata.is_normalized("NFC", l) for l in lines)
  if normalize == "nfc":  # what the tokenizers' normalize="nfc" does first
    chars = _char_counts(unicodedata.normalize("NFC", l) for l in lines)
  else:
    chars = _char_counts(lines)
  if do_lower_case:
    report.damaged_letters, report.damaged_scripts = _damaged_letters(chars)
  if vocab_file:
    options = {} if normalize is None else {"normalize": normalize}
    full = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case, **options)
    cache = {}

    def count_tokens(sentence):
      if sentence not in cache:
        tokens = full.tokenize(sentence)
        cache[sentence] = (len(tokens), sum(t == tokenization.UNK_TOKEN for t in tokens))
      return cache[sentence][0]

    for line in lines:
      count_tokens(line)
    report.tokens = sum(cache[l][0] for l in lines)
    report.unk_tokens = sum(cache[l][1] for l in lines)
    report.unk_rate = report.unk_tokens / report.tokens if report.tokens else 0.0
    report.uncovered_chars, report.uncovered_examples = _uncovered(full.basic_tokenizer, lines,
                                                                   full.vocab)
  else:
    options = {} if normalize is None else {"normalize": normalize}
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case, **options)

    def count_tokens(sentence):
      return len(basic.tokenize(sentence))
  _estimate_pairs(report, documents, count_tokens, split_sentences, max_seq_length,
                  short_seq_prob)
  report.warnings = _warnings(report, do_lower_case, vocab_file, normalize)
  return report


def _estimate_pairs(report, documents, count_tokens, split_sentences, max_seq_length,
                    short_seq_prob):
  """Random-next share as the lines are, and after `split_sentences` (or pysbd, when it
  is installed and the corpus looks like paragraphs)."""
  if split_sentences is not None:
    documents = _split(documents, split_sentences)
  report.random_next = estimate_random_next(documents, count_tokens, max_seq_length,
                                            short_seq_prob)
  if split_sentences is None and _looks_like_paragraphs(report):
    try:
      splitter = pretraining_corpus.sentence_splitter("pysbd")
    except errors.UserError:
      return
    report.splitter = "pysbd"
    report.random_next_split = estimate_random_next(
        _split(documents, splitter), count_tokens, max_seq_length, short_seq_prob)


def _split(documents, split_sentences):
  out, lines = [], 0
  for document in documents:
    if lines >= SPLIT_SAMPLE_LINES:
      break
    lines += len(document)
    out.append([s.strip() for l in document for s in split_sentences(l) if s.strip()])
  return out


def _looks_like_paragraphs(report):
  return report.lines > 0 and (
      report.chars_per_line >= PARAGRAPH_LINE_CHARS or
      report.multi_sentence_lines / report.lines >= 0.25)


def _unk_causes(report, do_lower_case, normalize):
  causes = []
  if do_lower_case and report.damaged_letters > DAMAGED_LETTERS_WARN:
    causes.append(f"--do_lower_case=True changes {', '.join(report.damaged_scripts)} "
                  "letters (see below)")
  if report.nfd_lines and normalize is None and not do_lower_case:
    causes.append("the text is decomposed (NFD) where the vocabulary is not: pass "
                  "--normalize=nfc")
  if report.uncovered_chars > 0.01 and not causes:
    shown = " ".join(report.uncovered_examples)
    causes.append(f"the vocabulary has no token for {100 * report.uncovered_chars:.0f}% "
                  f"of the characters (most often: {shown}): it was not learned from "
                  "this language or script; learn one with create_vocab.py")
  return causes or ["check that --vocab_file and --do_lower_case are the pair the "
                    "vocabulary was made with"]


def _warnings(report, do_lower_case, vocab_file, normalize):
  warnings = []
  if report.unk_rate is not None and report.unk_rate > UNK_WARN_RATE:
    warnings.append(
        f"[UNK] rate {report.unk_rate:.3f} with --vocab_file={vocab_file} "
        f"--do_lower_case={do_lower_case} (above {UNK_WARN_RATE}); likely cause: "
        + "; ".join(_unk_causes(report, do_lower_case, normalize)))
  if do_lower_case and report.damaged_letters > DAMAGED_LETTERS_WARN:
    scripts = ", ".join(report.damaged_scripts)
    warnings.append(
        f"--do_lower_case=True changes {100 * report.damaged_letters:.0f}% of the letters "
        f"({scripts}): lower-casing decomposes them (NFD) and drops their marks, so "
        + ("Hangul syllables come apart into jamo" if "HANGUL" in report.damaged_scripts
           else "they lose part of their spelling")
        + "; these scripts have no case: use --do_lower_case=False (a cased vocabulary)")
  if report.nfd_lines > NFD_LINES_WARN * max(report.lines, 1) and normalize is None \
      and not do_lower_case:
    warnings.append(
        f"{report.nfd_lines:,} of {report.lines:,} lines hold decomposed (NFD) text "
        "(text copied from macOS often does): a vocabulary learned from it holds "
        "conjoining jamo or bare accents that NFC text never produces, so NFC text "
        "tokenizes to [UNK]; pass --normalize=nfc to create_vocab.py and "
        "create_pretraining_data.py (and to run_classifier.py, which applies it to the "
        "fine-tuning text and its export)")
  warnings += _pair_warnings(report)
  return warnings


def _pair_warnings(report):
  warnings = []
  paragraphs = _looks_like_paragraphs(report) and not report.split_applied
  skewed = report.random_next is not None and report.random_next > RANDOM_NEXT_WARN
  if paragraphs or skewed:
    shown = "unknown" if report.random_next is None else f"{report.random_next:.2f}"
    message = (
        f"the corpus looks like one paragraph a line ({report.chars_per_line:.0f} "
        f"characters a line, {report.multi_sentence_lines:,} of {report.lines:,} lines "
        "with several sentences)" if paragraphs else
        "documents are too short in sentences for next-sentence pairs")
    message += (f": the generator takes each line for a sentence, so next-sentence pairs "
                f"will be skewed (estimated random-next share {shown}; one sentence a line "
                "gives about 0.5)")
    if report.random_next_split is not None and not report.split_applied:
      message += (f"; split into sentences with --split_sentences={report.splitter}: "
                  f"{report.random_next_split:.2f}")
    elif report.random_next_split is None and paragraphs:
      message += "; --split_sentences=pysbd splits them (pip install pysbd)"
    warnings.append(message)
  if report.heading_lines > HEADING_LINES_WARN * max(report.lines, 1):
    warnings.append(
        f"{report.heading_lines:,} of {report.lines:,} lines look like wiki headings "
        "(' = Title = '): each would be a sentence of its article; remove them")
  return warnings


def report_lines(report):
  """The summary block: measurements, then one 'WARNING:' line per warning."""
  lines = [f"corpus check on the first {report.lines:,} lines ({report.documents:,} "
           f"documents) of {report.source}:",
           f"  {report.lines / max(report.documents, 1):.1f} lines a document, "
           f"{report.chars_per_line:.0f} characters a line, "
           f"{report.nfd_lines:,} lines not in NFC form"]
  if report.unk_rate is not None:
    lines.append(f"  [UNK] rate {report.unk_rate:.4f} ({report.unk_tokens:,} of "
                 f"{report.tokens:,} tokens) with {report.vocab_file}, do_lower_case="
                 f"{report.do_lower_case}")
  if report.random_next is not None:
    how = f" (sentences split by {report.splitter})" if report.split_applied else ""
    lines.append(f"  estimated random-next share of next-sentence pairs{how}: "
                 f"{report.random_next:.2f}")
  if report.random_next_split is not None:
    lines.append(f"  ... with --split_sentences={report.splitter}: "
                 f"{report.random_next_split:.2f}")
  lines += [f"WARNING: {w}" for w in report.warnings]
  if not report.warnings:
    lines.append("  no warnings")
  return lines


def log_report(report):
  """Logs the summary block (report_lines): warnings as warnings, the rest as info."""
  for line in report_lines(report):
    (logging.warning if line.startswith("WARNING: ") else logging.info)(line)
