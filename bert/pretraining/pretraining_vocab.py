"""Learning a WordPiece vocabulary (and a matching bert_config.json) from a text corpus:
create_vocab.py's work.

Words are split by this project's BasicTokenizer with the same do_lower_case, so both
tokenizers split text exactly as the learner saw it; the vocabulary is laid out like
Google's ([PAD], [unused0]..., [UNK], [CLS], [SEP], [MASK], then the learned tokens).
Option names are the script's flag names, so an error names the flag."""

import collections
import dataclasses
import time
import unicodedata
from typing import Optional

from absl import logging
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from bert import modeling
from bert.pretraining import pretraining_corpus_check
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import progress
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import settings


@dataclasses.dataclass(frozen=True)
class LearnOptions:
  """What the learner runs with; each field is create_vocab.py's flag of the same name."""
  vocab_size: int = settings.setting(
      30522, "Target vocabulary size, reserved tokens included; the learner stays within "
      "--slack_ratio below it. A small corpus may give fewer.")
  do_lower_case: bool = settings.setting(
      tokenization.DO_LOWER_CASE, "Lower-case and strip accents before learning; must match the --do_lower_case "
      "the vocabulary is later used with.")
  num_unused: int = settings.setting(
      99, "How many [unusedN] tokens to reserve. The first 99 go between [PAD] and [UNK] "
      "as in Google's vocabularies (so [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103), the "
      "rest after [MASK].")
  max_input_chars_per_word: int = settings.setting(
      tokenization.MAX_INPUT_CHARS_PER_WORD,
      "Words longer than this are not counted (WordPiece makes them [UNK]).")
  max_token_length: int = settings.setting(
      50, "Longest token the learner makes; longer words are not learned from.")
  max_unique_chars: int = settings.setting(
      1000, "Alphabet size: only the most frequent characters become tokens; words with "
      "other characters are not learned from. Raise it for scripts with many characters "
      "(Korean, Chinese, Japanese: 3000+).")
  lower_thresh: int = settings.setting(
      10, "Lowest token count the learner's threshold search may go down to.")
  upper_thresh: int = settings.setting(
      10_000_000, "Highest token count the learner's threshold search starts from.")
  num_iterations: int = settings.setting(4, "Learner iterations.")
  max_input_tokens: int = settings.setting(
      5_000_000, "Distinct words the learner considers (the most frequent ones).")
  slack_ratio: float = settings.setting(
      0.05, "Accept a vocabulary this fraction below --vocab_size.")
  holdout_every: int = settings.setting(
      100, "Keep every N-th line out of learning to measure the [UNK] rate (0: measure on "
      "the training lines instead).")
  log_every_lines: int = settings.setting(200_000, "Progress log interval, in lines.")
  # --normalize is every command's (flags_common.define_normalize_flag).
  normalize: Optional[str] = None  # None or "nfc"

  def __post_init__(self):
    check_options(self)


# BERT-Base's architecture, for a config when no template is given.
_BERT_BASE = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 2, "vocab_size": 30522,
}
# Google's layout puts 99 [unusedN] between [PAD] and [UNK].
_UNUSED_BEFORE_UNK = 99
# Upper bounds far above any real run: beyond them a typo, not a choice (the largest
# released BERT vocabularies have about 120,000 tokens; mBERT's alphabet ~10,000 chars).
_MAX_VOCAB_SIZE = 1_000_000


def reserved_tokens(num_unused):
  """[PAD], [unused0..98], [UNK], [CLS], [SEP], [MASK], [unused99..num_unused-1]."""
  before = min(num_unused, _UNUSED_BEFORE_UNK)
  tokens = [tokenization.PAD_TOKEN] + [f"[unused{i}]" for i in range(before)]
  tokens += [tokenization.UNK_TOKEN, tokenization.CLS_TOKEN, tokenization.SEP_TOKEN,
             tokenization.MASK_TOKEN]
  tokens += [f"[unused{i}]" for i in range(before, num_unused)]
  return tokens


def check_options(options):
  """Values the learner cannot run with -> one-line UserError naming flag and value.

  Returns the reserved tokens."""
  o = options
  checks = [
      ("num_unused", o.num_unused >= 0, "must be >= 0"),
      ("num_iterations", o.num_iterations >= 1, "must be at least 1"),
      ("vocab_size", o.vocab_size <= _MAX_VOCAB_SIZE,
       f"more than {_MAX_VOCAB_SIZE:,}, beyond any sane vocabulary"),
      ("max_unique_chars", o.max_unique_chars >= 1, "must be at least 1"),
      ("max_token_length", o.max_token_length >= 1, "must be at least 1"),
      ("max_input_tokens", o.max_input_tokens >= 1, "must be at least 1"),
      ("max_input_chars_per_word", o.max_input_chars_per_word >= 1, "must be at least 1"),
      ("lower_thresh", o.lower_thresh >= 1, "must be at least 1"),
      ("upper_thresh", o.upper_thresh >= o.lower_thresh,
       f"must be at least --lower_thresh={o.lower_thresh}"),
      ("slack_ratio", 0.0 <= o.slack_ratio < 1.0, "must be in [0, 1)"),
      ("holdout_every", o.holdout_every >= 0, "must be >= 0 (0: no held-out lines)"),
      ("log_every_lines", o.log_every_lines >= 1, "must be at least 1"),
  ]
  for name, ok, message in checks:
    if not ok:
      raise errors.UserError(f"--{name}={getattr(o, name)}: {message}")
  reserved = reserved_tokens(o.num_unused)
  if o.vocab_size <= len(reserved):
    raise errors.UserError(
        f"--vocab_size={o.vocab_size}: must exceed the {len(reserved)} reserved tokens "
        "(lower --num_unused or raise --vocab_size)")
  return reserved


class WordCounter:
  """Counts the words BasicTokenizer makes of a corpus, memoised per space-separated chunk.

  BasicTokenizer's output for a line is the concatenation of its output for the pieces
  between ASCII spaces (cleaning, CJK spacing and splitting never join across a space),
  so each distinct chunk is tokenized once, however often it occurs.
  """

  def __init__(self, do_lower_case, max_chars_per_word):
    self._basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    self._max_chars = max_chars_per_word
    self._pending = collections.Counter()
    self.words = collections.Counter()
    self.num_words = 0

  def add_line(self, line):
    self._pending.update(line.split(" "))
    if len(self._pending) > 1_000_000:
      self.flush()

  def flush(self):
    for chunk, count in self._pending.items():
      for word in self._basic.tokenize(chunk):
        self.num_words += count
        if len(word) <= self._max_chars:
          self.words[word] += count
    self._pending.clear()


def read_corpus(files, counter, holdout_every, log_every, normalize=None):
  """Feeds the lines to `counter`; returns (lines read, held-out lines).

  normalize: None or "nfc" (each line put in NFC form first)."""
  total_bytes = sum(file_io.local_size(f) for f in files) or 1
  done_bytes, num_lines, held_out = 0, 0, []
  rates = progress.Progress(total_bytes)
  for path in files:
    for _, line in input_checks.read_text_lines(path):
      done_bytes += len(line.encode("utf-8"))
      line = line.strip()
      if not line:
        continue
      if normalize == "nfc":  # as tokenization's normalize="nfc" does
        line = unicodedata.normalize("NFC", line)
      num_lines += 1
      if holdout_every and num_lines % holdout_every == 0:
        held_out.append(line)
      else:
        counter.add_line(line)
      if num_lines % log_every == 0:
        rates.update(min(done_bytes, total_bytes))
        logging.info("read %d lines, %.1f of %.1f MB, %.2f MB/s, ETA %s", num_lines,
                     done_bytes / 1e6, total_bytes / 1e6, rates.rate() / 1e6, rates.eta())
  counter.flush()
  return num_lines, held_out


def learn_vocab(word_counts, vocab_size, reserved, **learn_params):
  """tensorflow-text's WordPiece learner over (word, count); returns the token list."""
  vocab = learner.learn(word_counts, vocab_size, reserved, **learn_params)
  if vocab[:len(reserved)] != reserved:  # the learner puts them first; make sure
    raise RuntimeError("the WordPiece learner did not keep the reserved tokens first")
  return vocab


def unk_rate(vocab_file, do_lower_case, lines, normalize=None):
  """(fraction of WordPiece tokens that are [UNK], token count) on `lines`."""
  options = {} if normalize is None else {"normalize": normalize}
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case, **options)
  total = unknown = 0
  for line in lines:
    tokens = tokenizer.tokenize(line)
    total += len(tokens)
    unknown += sum(1 for t in tokens if t == tokenization.UNK_TOKEN)
  return (unknown / total if total else 0.0), total


def write_config(path, template, vocab_size):
  """bert_config.json: the template's architecture (or BERT-Base's) with `vocab_size`."""
  if template:
    input_checks.check_input_file(template, "bert_config_template")
    config = modeling.BertConfig.from_json_file(template)
  else:
    config = modeling.BertConfig.from_dict(dict(_BERT_BASE), source="BERT-Base defaults")
  config.vocab_size = vocab_size
  with atomic_output.atomic_open(path) as handle:
    handle.write(config.to_json_string())


def config_path(output_file, output_config_file):
  """Where bert_config.json goes: output_config_file, else beside the vocabulary ("": none)."""
  if output_config_file is not None:
    return output_config_file
  return paths.join(paths.dirname(paths.abspath(output_file)), "bert_config.json")


def log_corpus_check(files, do_lower_case, normalize):
  """Logs pretraining_corpus_check's summary block of a sample of `files` (warnings as warnings)."""
  pretraining_corpus_check.log_report(pretraining_corpus_check.check_corpus(
      pretraining_corpus_check.read_sample(files), do_lower_case, normalize=normalize,
      source=",".join(files)))


def unk_warning(rate, counter, max_unique_chars):
  """A warning line when the new vocabulary leaves too many [UNK], with the likely cause."""
  if rate <= pretraining_corpus_check.UNK_WARN_RATE:
    return None
  alphabet = len({c for word in counter.words for c in word})
  cause = (f"the corpus has {alphabet:,} distinct characters but --max_unique_chars="
           f"{max_unique_chars}: raise it" if alphabet > max_unique_chars else
           "raise --vocab_size, or lower --lower_thresh for a small corpus")
  return (f"WARNING: [UNK] rate {rate:.3f} of the new vocabulary (above "
          f"{pretraining_corpus_check.UNK_WARN_RATE}); likely cause: {cause}")


def learn(files, reserved, options, source=None):
  """Counts the words and runs the learner (source: what --input_file said, for errors).

  Returns (vocab tokens, counter, lines read, held-out lines, learning seconds)."""
  o = options
  start = time.time()
  counter = WordCounter(o.do_lower_case, o.max_input_chars_per_word)
  num_lines, held_out = read_corpus(files, counter, o.holdout_every, o.log_every_lines,
                                    o.normalize)
  if not counter.words:
    raise errors.UserError(
        f"--input_file={source or ','.join(files)}: no words to learn from (the corpus is "
        "empty)")
  logging.info("counted %d words (%d distinct) in %d lines in %.1f s; learning (the "
               "learner is pure Python and logs nothing: about a CPU-minute per 20,000 "
               "distinct words)...", counter.num_words, len(counter.words), num_lines,
               time.time() - start)
  learn_start = time.time()
  vocab = learn_vocab(
      counter.words, o.vocab_size, reserved,
      upper_thresh=o.upper_thresh, lower_thresh=o.lower_thresh,
      num_iterations=o.num_iterations, max_input_tokens=o.max_input_tokens,
      max_token_length=o.max_token_length, max_unique_chars=o.max_unique_chars,
      slack_ratio=o.slack_ratio)
  return vocab, counter, num_lines, held_out, time.time() - learn_start


def _training_lines(files):
  for path in files:
    for _, line in input_checks.read_text_lines(path):
      if line.strip():
        yield line.strip()


def _check_inputs(files, output_file, bert_config_template, options, check_only):
  """Everything that can fail before the corpus is read; returns the reserved tokens."""
  for path in files:
    input_checks.check_input_file(path, "input_file", allow_empty=True)
  if not output_file and not check_only:
    raise errors.UserError("--output_file is required (where to write vocab.txt)")
  reserved = check_options(options)
  if bert_config_template:
    # Read now: a typo in the template must not cost a whole learning run (and leave a
    # vocab.txt without its bert_config.json).
    input_checks.check_input_file(bert_config_template, "bert_config_template")
    modeling.BertConfig.from_json_file(bert_config_template)
  return reserved


def create_vocab(input_patterns, output_file, options, output_config_file=None,
                 bert_config_template=None, check_only=False):
  """create_vocab.py's whole run. Returns the summary dict (None with check_only).

  input_patterns: comma-separated files and globs. output_config_file: None (beside
  output_file), "" (none) or a path. check_only: log the corpus check and stop (no
  output_file needed).
  """
  files = input_checks.expand_file_patterns(input_patterns, "input_file")
  reserved = _check_inputs(files, output_file, bert_config_template, options, check_only)
  log_corpus_check(files, options.do_lower_case, options.normalize)
  if check_only:
    return None
  config_file = config_path(output_file, output_config_file)
  atomic_output.prepare_output_file(output_file, "output_file")
  if config_file:
    atomic_output.prepare_output_file(config_file, "output_config_file")

  start = time.time()
  vocab, counter, num_lines, held_out, learn_seconds = learn(files, reserved, options,
                                                             input_patterns)
  with atomic_output.atomic_open(output_file) as handle:
    for token in vocab:
      handle.write(token + "\n")
  if config_file:
    write_config(config_file, bert_config_template, len(vocab))

  measured = held_out or [line for _, line in zip(range(10000), _training_lines(files))]
  rate, num_tokens = unk_rate(output_file, options.do_lower_case, measured,
                              options.normalize)
  warning = unk_warning(rate, counter, options.max_unique_chars)
  if warning:
    logging.warning(warning)
  logging.info("wrote %s (%d tokens)%s", output_file, len(vocab),
               f" and {config_file}" if config_file else "")
  return collections.OrderedDict([
      ("lines", num_lines), ("words", counter.num_words),
      ("distinct_words", len(counter.words)), ("vocab_size", len(vocab)),
      ("reserved_tokens", len(reserved)),
      ("unk_rate", round(rate, 6)),
      ("unk_rate_measured_on", f"{len(measured)} {'held-out' if held_out else 'training'} "
                               f"lines, {num_tokens} tokens"),
      ("learn_seconds", round(learn_seconds, 1)),
      ("total_seconds", round(time.time() - start, 1)),
  ])
