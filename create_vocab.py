"""Learns a WordPiece vocab.txt (and a matching bert_config.json) from a text corpus.

The original release never shipped a way to make a vocabulary. This script learns one
with tensorflow-text's WordPiece vocabulary learner, from the pretraining corpus format
(one sentence a line, blank lines between documents; comma-separated files and globs):

  python create_vocab.py --input_file=corpus_ko.txt --output_file=ko/vocab.txt \\
    --vocab_size=32000 --do_lower_case=False

Words are split by this project's BasicTokenizer (tokenization.py) with the same
--do_lower_case, so FullTokenizer and FastTokenizer split text exactly as the learner
saw it. The vocabulary is laid out like Google's: [PAD] (id 0), [unused0]..[unused98],
[UNK], [CLS], [SEP], [MASK] (ids 100-103 with the default --num_unused=99), any further
[unusedN] tokens, then the learned tokens (single characters first, both bare and ##).

A bert_config.json with BERT-Base's architecture (or that of --bert_config_template)
and the written vocab_size goes beside the vocabulary (--output_config_file).
Every --holdout_every-th line is kept out of learning; the summary reports the [UNK]
rate of the new vocabulary on those lines (with a warning above a few percent).

Before learning, a corpus check (corpus_check.py) prints a summary block of a sample:
caseless scripts under --do_lower_case=True (Hangul syllables come apart into jamo),
decomposed (NFD) text, paragraph-a-line corpora. --check_only stops there.
--normalize=nfc (opt-in; the original does not normalise) puts every line in NFC form
before counting; pass the same to create_pretraining_data.py.
"""

import runtime_log  # first: quiets TensorFlow's runtime log before TensorFlow loads

runtime_log.quiet()

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import json
import os
import time
import unicodedata

from absl import app
from absl import flags
from absl import logging

import corpus_check
import flags_common
import modeling
import pretraining_data
import script_utils
import tokenization

flags_common.define_runtime_flags()

flags.DEFINE_string("input_file", None,
                    "Input raw text file(s): one sentence a line, blank lines between "
                    "documents (comma-separated, globs allowed).")
flags.DEFINE_string("output_file", None, "Where to write the vocabulary (vocab.txt).")
flags.DEFINE_integer("vocab_size", 30522,
                     "Target vocabulary size, reserved tokens included; the learner "
                     "stays within --slack_ratio below it. A small corpus may give fewer.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case and strip accents before learning; must match the "
                  "--do_lower_case the vocabulary is later used with.")
flags.DEFINE_integer("num_unused", 99,
                     "How many [unusedN] tokens to reserve. The first 99 go between [PAD] "
                     "and [UNK] as in Google's vocabularies (so [UNK]=100, [CLS]=101, "
                     "[SEP]=102, [MASK]=103), the rest after [MASK].")
flags.DEFINE_string("output_config_file", None,
                    "Where to write bert_config.json (default: beside --output_file; "
                    "pass an empty string to write none).")
flags.DEFINE_string("bert_config_template", None,
                    "A bert_config.json whose architecture to copy (default: BERT-Base, "
                    "L=12 H=768 A=12); only vocab_size is changed.")
flags.DEFINE_integer("max_input_chars_per_word", tokenization.MAX_INPUT_CHARS_PER_WORD,
                     "Words longer than this are not counted (WordPiece makes them [UNK]).")
flags.DEFINE_integer("max_token_length", 50,
                     "Longest token the learner makes; longer words are not learned from.")
flags.DEFINE_integer("max_unique_chars", 1000,
                     "Alphabet size: only the most frequent characters become tokens; "
                     "words with other characters are not learned from. Raise it for "
                     "scripts with many characters (Korean, Chinese, Japanese: 3000+).")
flags.DEFINE_integer("lower_thresh", 10,
                     "Lowest token count the learner's threshold search may go down to.")
flags.DEFINE_integer("upper_thresh", 10000000,
                     "Highest token count the learner's threshold search starts from.")
flags.DEFINE_integer("num_iterations", 4, "Learner iterations.")
flags.DEFINE_integer("max_input_tokens", 5000000,
                     "Distinct words the learner considers (the most frequent ones).")
flags.DEFINE_float("slack_ratio", 0.05,
                   "Accept a vocabulary this fraction below --vocab_size.")
flags.DEFINE_integer("holdout_every", 100,
                     "Keep every N-th line out of learning to measure the [UNK] rate "
                     "(0: measure on the training lines instead).")
flags.DEFINE_integer("log_every_lines", 200000, "Progress log interval, in lines.")
flags_common.define_normalize_flag("before counting words")
flags.DEFINE_bool("check_only", False,
                  "Print the corpus check (case, normalisation, sentence-pair warnings on "
                  "a sample) and stop without learning or writing anything.")

FLAGS = flags.FLAGS

# BERT-Base's architecture, for a config when no template is given.
_BERT_BASE = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 12,
    "type_vocab_size": 2, "vocab_size": 30522,
}
# Google's layout puts 99 [unusedN] between [PAD] and [UNK].
_UNUSED_BEFORE_UNK = 99


def reserved_tokens(num_unused):
  """[PAD], [unused0..98], [UNK], [CLS], [SEP], [MASK], [unused99..num_unused-1]."""
  before = min(num_unused, _UNUSED_BEFORE_UNK)
  tokens = [tokenization.PAD_TOKEN] + [f"[unused{i}]" for i in range(before)]
  tokens += [tokenization.UNK_TOKEN, tokenization.CLS_TOKEN, tokenization.SEP_TOKEN,
             tokenization.MASK_TOKEN]
  tokens += [f"[unused{i}]" for i in range(before, num_unused)]
  return tokens


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


def _read_corpus(files, counter, holdout_every, log_every, normalize=None):
  """Feeds the lines to `counter`; returns (lines read, held-out lines).

  normalize: None or "nfc" (each line put in NFC form first)."""
  total_bytes = sum(os.path.getsize(f) for f in files if "://" not in f) or 1
  done_bytes, num_lines, held_out = 0, 0, []
  start = time.time()
  for path in files:
    for _, line in script_utils.read_text_lines(path):
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
        elapsed = time.time() - start
        rate = done_bytes / max(elapsed, 1e-9)
        logging.info("read %d lines, %.1f of %.1f MB, %.2f MB/s, ETA %.0f s", num_lines,
                     done_bytes / 1e6, total_bytes / 1e6, rate / 1e6,
                     max(total_bytes - done_bytes, 0) / max(rate, 1e-9))
  counter.flush()
  return num_lines, held_out


def learn_vocab(word_counts, vocab_size, reserved, **learn_params):
  """tensorflow-text's WordPiece learner over (word, count); returns the token list."""
  # Imported here: it pulls in TensorFlow through the tensorflow_text package.
  from tensorflow_text.tools.wordpiece_vocab import (  # pylint: disable=g-import-not-at-top
      wordpiece_tokenizer_learner_lib as learner)
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
  if template:
    script_utils.check_input_file(template, "bert_config_template")
    config = modeling.BertConfig.from_json_file(template)
  else:
    config = modeling.BertConfig.from_dict(dict(_BERT_BASE), source="BERT-Base defaults")
  config.vocab_size = vocab_size
  with script_utils.atomic_open(path) as handle:
    handle.write(config.to_json_string())


# Upper bounds far above any real run: beyond them a typo, not a choice (the largest
# released BERT vocabularies have about 120,000 tokens; mBERT's alphabet ~10,000 chars).
_MAX_VOCAB_SIZE = 1_000_000


def _check_flags():
  """Flag values the learner cannot run with -> one-line UserError naming flag and value."""
  checks = [
      ("num_unused", FLAGS.num_unused >= 0, "must be >= 0"),
      ("num_iterations", FLAGS.num_iterations >= 1, "must be at least 1"),
      ("vocab_size", FLAGS.vocab_size <= _MAX_VOCAB_SIZE,
       f"more than {_MAX_VOCAB_SIZE:,}, beyond any sane vocabulary"),
      ("max_unique_chars", FLAGS.max_unique_chars >= 1, "must be at least 1"),
      ("max_token_length", FLAGS.max_token_length >= 1, "must be at least 1"),
      ("max_input_tokens", FLAGS.max_input_tokens >= 1, "must be at least 1"),
      ("max_input_chars_per_word", FLAGS.max_input_chars_per_word >= 1,
       "must be at least 1"),
      ("lower_thresh", FLAGS.lower_thresh >= 1, "must be at least 1"),
      ("upper_thresh", FLAGS.upper_thresh >= FLAGS.lower_thresh,
       f"must be at least --lower_thresh={FLAGS.lower_thresh}"),
      ("slack_ratio", 0.0 <= FLAGS.slack_ratio < 1.0, "must be in [0, 1)"),
      ("holdout_every", FLAGS.holdout_every >= 0, "must be >= 0 (0: no held-out lines)"),
      ("log_every_lines", FLAGS.log_every_lines >= 1, "must be at least 1"),
  ]
  for name, ok, message in checks:
    if not ok:
      raise script_utils.UserError(f"--{name}={FLAGS[name].value}: {message}")
  reserved = reserved_tokens(FLAGS.num_unused)
  if FLAGS.vocab_size <= len(reserved):
    raise script_utils.UserError(
        f"--vocab_size={FLAGS.vocab_size}: must exceed the {len(reserved)} reserved tokens "
        "(lower --num_unused or raise --vocab_size)")
  return reserved


def prepare_output_file(path, flag_name):
  """Checks before learning that a file can be written at `path`; creates its folder."""
  if "://" in path:
    return
  if os.path.isdir(path):
    raise script_utils.UserError(f"--{flag_name}={path}: is a directory, expected a file")
  directory = os.path.dirname(os.path.abspath(path))
  parent = directory
  while not os.path.exists(parent):
    parent = os.path.dirname(parent)
  if not os.path.isdir(parent):
    raise script_utils.UserError(f"--{flag_name}={path}: {parent} is a file, not a directory")
  try:
    os.makedirs(directory, exist_ok=True)
  except OSError as exc:
    raise script_utils.UserError(
        f"--{flag_name}={path}: cannot create directory {directory} ({exc.strerror})"
    ) from None
  if not os.access(directory, os.W_OK | os.X_OK):
    raise script_utils.UserError(f"--{flag_name}={path}: directory {directory} is not writable")
  pretraining_data.remove_stale_temporaries(path)


def _config_path():
  if FLAGS.output_config_file is not None:
    return FLAGS.output_config_file
  return os.path.join(os.path.dirname(os.path.abspath(FLAGS.output_file)), "bert_config.json")


def _print_corpus_check(files, normalize):
  report = corpus_check.check_corpus(corpus_check.read_sample(files), FLAGS.do_lower_case,
                                     normalize=normalize, source=",".join(files))
  for line in corpus_check.report_lines(report):
    (logging.warning if line.startswith("WARNING: ") else logging.info)(line)


def _unk_warning(rate, counter):
  """A warning line when the new vocabulary leaves too many [UNK], with the likely cause."""
  if rate <= corpus_check.UNK_WARN_RATE:
    return None
  alphabet = len({c for word in counter.words for c in word})
  cause = (f"the corpus has {alphabet:,} distinct characters but --max_unique_chars="
           f"{FLAGS.max_unique_chars}: raise it" if alphabet > FLAGS.max_unique_chars else
           "raise --vocab_size, or lower --lower_thresh for a small corpus")
  return (f"WARNING: [UNK] rate {rate:.3f} of the new vocabulary (above "
          f"{corpus_check.UNK_WARN_RATE}); likely cause: {cause}")


def _learn(files, reserved, normalize):
  """Counts the words and runs the learner.

  Returns (vocab tokens, counter, lines read, held-out lines, learning seconds)."""
  start = time.time()
  counter = WordCounter(FLAGS.do_lower_case, FLAGS.max_input_chars_per_word)
  num_lines, held_out = _read_corpus(files, counter, FLAGS.holdout_every,
                                     FLAGS.log_every_lines, normalize)
  if not counter.words:
    raise script_utils.UserError(
        f"--input_file={FLAGS.input_file}: no words to learn from (the corpus is empty)")
  logging.info("counted %d words (%d distinct) in %d lines in %.1f s; learning (the "
               "learner is pure Python and logs nothing: about a CPU-minute per 20,000 "
               "distinct words)...", counter.num_words, len(counter.words), num_lines,
               time.time() - start)
  learn_start = time.time()
  vocab = learn_vocab(
      counter.words, FLAGS.vocab_size, reserved,
      upper_thresh=FLAGS.upper_thresh, lower_thresh=FLAGS.lower_thresh,
      num_iterations=FLAGS.num_iterations, max_input_tokens=FLAGS.max_input_tokens,
      max_token_length=FLAGS.max_token_length, max_unique_chars=FLAGS.max_unique_chars,
      slack_ratio=FLAGS.slack_ratio)
  return vocab, counter, num_lines, held_out, time.time() - learn_start


def run():
  files = script_utils.expand_file_patterns(FLAGS.input_file, "input_file")
  for path in files:
    script_utils.check_input_file(path, "input_file", allow_empty=True)
  if not FLAGS.output_file:
    raise script_utils.UserError("--output_file is required (where to write vocab.txt)")
  reserved = _check_flags()
  config_path = _config_path()
  if FLAGS.bert_config_template:
    # Read now: a typo in the template must not cost a whole learning run (and leave a
    # vocab.txt without its bert_config.json).
    script_utils.check_input_file(FLAGS.bert_config_template, "bert_config_template")
    modeling.BertConfig.from_json_file(FLAGS.bert_config_template)
  normalize = flags_common.normalize_option(FLAGS.normalize)
  _print_corpus_check(files, normalize)
  if FLAGS.check_only:
    return
  prepare_output_file(FLAGS.output_file, "output_file")
  if config_path:
    prepare_output_file(config_path, "output_config_file")

  start = time.time()
  vocab, counter, num_lines, held_out, learn_seconds = _learn(files, reserved, normalize)
  with script_utils.atomic_open(FLAGS.output_file) as handle:
    for token in vocab:
      handle.write(token + "\n")
  if config_path:
    write_config(config_path, FLAGS.bert_config_template, len(vocab))

  measured = held_out or [line for _, line in zip(range(10000), _training_lines(files))]
  rate, num_tokens = unk_rate(FLAGS.output_file, FLAGS.do_lower_case, measured, normalize)
  summary = collections.OrderedDict([
      ("lines", num_lines), ("words", counter.num_words),
      ("distinct_words", len(counter.words)), ("vocab_size", len(vocab)),
      ("reserved_tokens", len(reserved)),
      ("unk_rate", round(rate, 6)),
      ("unk_rate_measured_on", f"{len(measured)} {'held-out' if held_out else 'training'} "
                               f"lines, {num_tokens} tokens"),
      ("learn_seconds", round(learn_seconds, 1)),
      ("total_seconds", round(time.time() - start, 1)),
  ])
  warning = _unk_warning(rate, counter)
  if warning:
    logging.warning(warning)
  print(json.dumps(summary, ensure_ascii=False))
  logging.info("wrote %s (%d tokens)%s", FLAGS.output_file, len(vocab),
               f" and {config_path}" if config_path else "")


def _training_lines(files):
  for path in files:
    for _, line in script_utils.read_text_lines(path):
      if line.strip():
        yield line.strip()


def main(_):
  with script_utils.report_user_errors(FLAGS.verbose):
    run()


if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("output_file")
  app.run(main)
