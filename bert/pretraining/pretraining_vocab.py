"""Learning a WordPiece vocabulary (and a matching bert_config.json) from a text corpus:
create_vocab.py's work.

Words are split by this project's BasicTokenizer with the same do_lower_case, so both
tokenizers split text exactly as the learner saw it; the vocabulary is laid out like
Google's ([PAD], [unused0]..., [UNK], [CLS], [SEP], [MASK], then the learned tokens).
Two learners: tensorflow-text's WordPiece algorithm (pretraining_vocab_learner: the tokens
tensorflow-text's own learner gives), and Hugging Face tokenizers' WordPiece trainer (the
tokenizers package, which the training install holds). The words are counted in worker
processes that import no TensorFlow (nor does this module). Option names are the
script's flag names, so an error names the flag."""

import collections
import dataclasses
import multiprocessing
import os
import time
import unicodedata
from typing import Optional

from absl import logging

from bert.pretraining import pretraining_corpus_check
from bert.pretraining import pretraining_vocab_learner
from bert.pretraining import pretraining_workers
from bert import modeling_config
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import progress
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import settings


# --learner's values: which library's way of learning the vocabulary.
LEARNERS = ("tensorflow_text", "tokenizers")
# The settings of tensorflow-text's learner alone: --learner=tokenizers refuses them.
TENSORFLOW_TEXT_SETTINGS = ("max_token_length", "lower_thresh", "upper_thresh",
                            "num_iterations", "max_input_tokens", "slack_ratio")
# Where the Hugging Face learner comes from, in the one line that refuses it without.
TOKENIZERS_INSTALL = ('pip install tokenizers (or the training install, which holds it: '
                      'pip install "bert-tensorflow2[tensorflow]")')


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
      pretraining_vocab_learner.MAX_TOKEN_LENGTH,
      "Longest token the learner makes; longer words are not learned from.")
  max_unique_chars: int = settings.setting(
      pretraining_vocab_learner.MAX_UNIQUE_CHARS,
      "Alphabet size: only the most frequent characters become tokens; words with "
      "other characters are not learned from. Raise it for scripts with many characters "
      "(Korean, Chinese, Japanese: 3000+).")
  lower_thresh: int = settings.setting(
      pretraining_vocab_learner.LOWER_THRESH,
      "Lowest token count the learner's threshold search may go down to.")
  upper_thresh: int = settings.setting(
      pretraining_vocab_learner.UPPER_THRESH,
      "Highest token count the learner's threshold search starts from.")
  num_iterations: int = settings.setting(
      pretraining_vocab_learner.NUM_ITERATIONS,
      "Learner iterations.")
  max_input_tokens: int = settings.setting(
      pretraining_vocab_learner.MAX_INPUT_TOKENS,
      "Distinct words the learner considers (the most frequent ones).")
  slack_ratio: float = settings.setting(
      pretraining_vocab_learner.SLACK_RATIO,
      "Accept a vocabulary this fraction below --vocab_size.")
  holdout_every: int = settings.setting(
      100, "Keep every N-th line out of learning to measure the [UNK] rate (0: measure on "
      "the training lines instead).")
  log_every_lines: int = settings.setting(200_000, "Progress log interval, in lines.")
  learner: str = settings.setting(
      "tensorflow_text",
      "How the vocabulary is learned. tensorflow_text: tensorflow-text's WordPiece learner "
      "(the tokens its learn() gives, token for token, computed on arrays, many times "
      "sooner); --max_token_length, --lower_thresh, --upper_thresh, --num_iterations, "
      "--max_input_tokens and --slack_ratio are its settings. tokenizers: Hugging Face "
      "tokenizers' WordPiece trainer (BPE merges, written as ## pieces; the package "
      "tokenizers, which the training install holds), for corpora of GBs.",
      choices=LEARNERS)
  # In this process as a library; the command's default is one worker per CPU.
  num_workers: int = settings.setting(
      pretraining_workers.IN_THIS_PROCESS, "Worker processes that split the corpus into words (0: in this process). Default: "
      "one per CPU once the corpus holds enough distinct words to pay for starting them. "
      "The counts, and so the vocabulary, are the same for every value.")
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
_MAX_WORKERS = 1024


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
      ("num_workers", o.num_workers is None or 0 <= o.num_workers <= _MAX_WORKERS,
       f"must be 0 (this process) to {_MAX_WORKERS}"),
      ("learner", o.learner in LEARNERS, f"choose one of {', '.join(LEARNERS)}"),
  ]
  for name, ok, message in checks:
    if not ok:
      raise errors.UserError(f"--{name}={getattr(o, name)}: {message}")
  reserved = reserved_tokens(o.num_unused)
  if o.vocab_size <= len(reserved):
    raise errors.UserError(
        f"--vocab_size={o.vocab_size}: must exceed the {len(reserved)} reserved tokens "
        "(lower --num_unused or raise --vocab_size)")
  if o.learner == "tokenizers":
    defaults = LearnOptions()
    for name in TENSORFLOW_TEXT_SETTINGS:
      if getattr(o, name) != getattr(defaults, name):
        raise errors.UserError(
            f"--{name}={getattr(o, name)}: a setting of --learner=tensorflow_text; "
            "--learner=tokenizers does not use it")
    import_tokenizers()  # last: every other refusal is the same with or without it
  return reserved


def import_tokenizers():
  """Hugging Face tokenizers (an optional package); without it, the one line naming the
  install."""
  try:
    import tokenizers  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise errors.UserError(
        "--learner=tokenizers needs the Hugging Face tokenizers package, which is not "
        f"installed here: {TOKENIZERS_INSTALL}") from None
  return tokenizers


def _count_chunks(chunks, basic, max_chars):
  """(Counter of BasicTokenizer's words, number of words) of (chunk, count) pairs, words
  longer than max_chars not counted."""
  words = collections.Counter()
  num_words = 0
  for chunk, count in chunks:
    for word in basic.tokenize(chunk):
      num_words += count
      if len(word) <= max_chars:
        words[word] += count
  return words, num_words


_WORKER = {}


def _init_worker(do_lower_case, max_chars):
  _WORKER["basic"] = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  _WORKER["max_chars"] = max_chars


def _count_in_worker(chunks):
  return _count_chunks(chunks, _WORKER["basic"], _WORKER["max_chars"])


# Starting a worker costs about a second on a loaded machine (a fresh interpreter that
# imports this module); below this many distinct chunks in one flush, one process splits
# them sooner, so an unset number of workers starts none.
_PARALLEL_CHUNKS = 50_000
# Tasks per worker and flush: small enough to balance the workers, large enough that
# sending them costs little.
_TASKS_PER_WORKER = 4


class WordCounter:
  """Counts the words BasicTokenizer makes of a corpus, memoised per space-separated chunk.

  BasicTokenizer's output for a line is the concatenation of its output for the pieces
  between ASCII spaces (cleaning, CJK spacing and splitting never join across a space),
  so each distinct chunk is tokenized once, however often it occurs. num_workers: worker
  processes that split the chunks (0: this process; None: one per CPU once a flush holds
  enough distinct chunks to pay for starting them). They are spawned and import this
  module, which loads no TensorFlow. Their results are merged in order, so the counts,
  and the order in which words first appear, are those of one process. Use it as a
  context manager (or call close()) to end the workers.
  """

  def __init__(self, do_lower_case, max_chars_per_word,
               num_workers=pretraining_workers.IN_THIS_PROCESS):
    self._basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    self._do_lower_case = do_lower_case
    self._max_chars = max_chars_per_word
    self._num_workers = num_workers
    self._pool = None
    self._pending = collections.Counter()
    self.words = collections.Counter()
    self.num_words = 0

  def __enter__(self):
    return self

  def __exit__(self, exc_type, *_):
    self.close(wait=exc_type is None)

  def close(self, wait=True):
    """Ends the workers: once they exit by themselves (wait), or at once."""
    if self._pool is not None:
      if wait:
        self._pool.close()
      else:
        self._pool.terminate()
      self._pool.join()
      self._pool = None

  def add_line(self, line):
    self._pending.update(line.split(" "))
    if len(self._pending) > 1_000_000:
      self.flush()

  def _workers_for(self, num_chunks):
    if self._num_workers is None:
      return (os.cpu_count() or 1) if num_chunks >= _PARALLEL_CHUNKS else 0
    return self._num_workers

  def flush(self):
    chunks = list(self._pending.items())
    self._pending.clear()
    workers = self._workers_for(len(chunks))
    if not workers:
      results = [_count_chunks(chunks, self._basic, self._max_chars)]
    else:
      if self._pool is None:
        self._pool = multiprocessing.get_context("spawn").Pool(
            workers, initializer=_init_worker, initargs=(self._do_lower_case, self._max_chars))
      size = -(-len(chunks) // (workers * _TASKS_PER_WORKER)) or 1
      results = self._pool.imap(_count_in_worker,
                                [chunks[i:i + size] for i in range(0, len(chunks), size)])
    for words, num_words in results:  # in task order: the first-seen order of one process
      self.words.update(words)
      self.num_words += num_words


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
  """tensorflow-text's WordPiece learner over (word, count); returns the token list.

  pretraining_vocab_learner.learn: the tokens tensorflow-text's own learn() gives on the
  same counts and settings, token for token."""
  vocab = pretraining_vocab_learner.learn(word_counts, vocab_size, reserved, **learn_params)
  if vocab[:len(reserved)] != reserved:  # the learner puts them first; make sure
    raise RuntimeError("the WordPiece learner did not keep the reserved tokens first")
  return vocab


def _repeated_words(word_counts, max_chars=1 << 20):
  """The words, each as often as it was counted, as space-separated texts of about
  max_chars characters each."""
  batch, size = [], 0
  for word, count in word_counts.items():
    while count:
      repeat = min(count, max(1, max_chars // (len(word) + 1)))
      batch.append((word + " ") * repeat)
      size += repeat * (len(word) + 1)
      count -= repeat
      if size >= max_chars:
        yield "".join(batch)
        batch, size = [], 0
  if batch:
    yield "".join(batch)


def learn_with_tokenizers(word_counts, vocab_size, reserved, max_unique_chars):
  """Hugging Face tokenizers' WordPiece trainer over {word: count}; returns the token
  list: the reserved tokens first, in order, then what it learned, by id.

  Its trainer sees each word as often as it was counted, split at spaces only (the words
  are BasicTokenizer's, cased or not as counted). The alphabet is tensorflow-text's
  learner's: the max_unique_chars most frequent characters, and a word with another
  character is not learned from (the trainer's own limit breaks ties at random). The
  trainer numbers the ##characters in the order it meets them, which varies from run to
  run and breaks ties between merges; they are handed to it in order instead, after the
  reserved tokens, so that a run learns the same vocabulary every time."""
  tokenizers = import_tokenizers()
  allowed = pretraining_vocab_learner.alphabet(word_counts, max_unique_chars)
  kept = collections.Counter({word: count for word, count in word_counts.items()
                              if allowed.issuperset(word)})
  continuing = sorted({"##" + c for word in kept for c in word[1:]} - set(reserved))
  tokenizer = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token=tokenization.UNK_TOKEN))
  tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
  trainer = tokenizers.trainers.WordPieceTrainer(
      vocab_size=vocab_size, special_tokens=list(reserved) + continuing,
      continuing_subword_prefix="##", show_progress=False)
  tokenizer.train_from_iterator(_repeated_words(kept), trainer)
  by_id = sorted(tokenizer.get_vocab(with_added_tokens=True).items(), key=lambda t: t[1])
  vocab = [token for token, _ in by_id]
  if vocab[:len(reserved)] != list(reserved) or [i for _, i in by_id] != list(
      range(len(vocab))):
    raise RuntimeError("tokenizers' trainer did not put the reserved tokens first, or "
                       "left a gap in its ids")
  return vocab


def unk_rate(vocab_file, do_lower_case, lines, normalize=None):
  """(fraction of WordPiece tokens that are [UNK], token count, word count) on `lines`:
  the words are BasicTokenizer's, so tokens / words is the pieces per word."""
  options = {} if normalize is None else {"normalize": normalize}
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case, **options)
  total = unknown = words = 0
  for line in lines:
    for word in tokenizer.basic_tokenizer.tokenize(line):
      tokens = tokenizer.wordpiece_tokenizer.tokenize(word)
      words += 1
      total += len(tokens)
      unknown += sum(1 for t in tokens if t == tokenization.UNK_TOKEN)
  return (unknown / total if total else 0.0), total, words


def write_config(path, template, vocab_size):
  """bert_config.json: the template's architecture (or BERT-Base's) with `vocab_size`."""
  if template:
    input_checks.check_input_file(template, "bert_config_template")
    config = modeling_config.BertConfig.from_json_file(template)
  else:
    config = modeling_config.BertConfig.from_dict(dict(_BERT_BASE), source="BERT-Base defaults")
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


def unk_warning(rate, counter, max_unique_chars, learner):
  """A warning line when the new vocabulary leaves too many [UNK], with the likely cause."""
  if rate <= pretraining_corpus_check.UNK_WARN_RATE:
    return None
  alphabet = len({c for word in counter.words for c in word})
  cause = (f"the corpus has {alphabet:,} distinct characters but --max_unique_chars="
           f"{max_unique_chars}: raise it" if alphabet > max_unique_chars else
           "raise --vocab_size" if learner == "tokenizers" else
           "raise --vocab_size, or lower --lower_thresh for a small corpus")
  return (f"WARNING: [UNK] rate {rate:.3f} of the new vocabulary (above "
          f"{pretraining_corpus_check.UNK_WARN_RATE}); likely cause: {cause}")


def learn(files, reserved, options, source=None):
  """Counts the words and runs the learner (source: what --input_file said, for errors).

  Returns (vocab tokens, counter, lines read, held-out lines, learning seconds)."""
  o = options
  start = time.time()
  with WordCounter(o.do_lower_case, o.max_input_chars_per_word, o.num_workers) as counter:
    num_lines, held_out = read_corpus(files, counter, o.holdout_every, o.log_every_lines,
                                      o.normalize)
  if not counter.words:
    raise errors.UserError(
        f"--input_file={source or ','.join(files)}: no words to learn from (the corpus is "
        "empty)")
  logging.info("counted %d words (%d distinct) in %d lines in %.1f s; learning with "
               "--learner=%s...", counter.num_words, len(counter.words), num_lines,
               time.time() - start, o.learner)
  learn_start = time.time()
  if o.learner == "tokenizers":
    vocab = learn_with_tokenizers(counter.words, o.vocab_size, reserved, o.max_unique_chars)
  else:
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
    modeling_config.BertConfig.from_json_file(bert_config_template)
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
  rate, num_tokens, num_words = unk_rate(output_file, options.do_lower_case, measured,
                                         options.normalize)
  warning = unk_warning(rate, counter, options.max_unique_chars, options.learner)
  if warning:
    logging.warning(warning)
  logging.info("wrote %s (%d tokens)%s", output_file, len(vocab),
               f" and {config_file}" if config_file else "")
  return collections.OrderedDict([
      ("learner", options.learner),
      ("lines", num_lines), ("words", counter.num_words),
      ("distinct_words", len(counter.words)), ("vocab_size", len(vocab)),
      ("reserved_tokens", len(reserved)),
      ("unk_rate", round(rate, 6)),
      ("pieces_per_word", round(num_tokens / num_words, 4) if num_words else 0.0),
      ("unk_rate_measured_on", f"{len(measured)} {'held-out' if held_out else 'training'} "
                               f"lines, {num_words} words, {num_tokens} tokens"),
      ("learn_seconds", round(learn_seconds, 1)),
      ("total_seconds", round(time.time() - start, 1)),
  ])
