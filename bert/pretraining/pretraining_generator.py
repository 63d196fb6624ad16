"""The pretraining-data generator: masked-LM / next-sentence tf.train.Examples from text.

The driver of create_pretraining_data.py (checks, writers, progress, summary) over
pretraining_corpus, pretraining_tokenizer, pretraining_workers, pretraining_instances and
pretraining_records. The algorithm is the original's, drawing from the same
distributions; docs/pretraining_data.md says what differs (the random generators, and a
corpus streamed in seeded chunks written in order, so the bytes do not depend on
--num_workers). TensorFlow is imported by `generate` only after the worker pool has
started, and never by the workers, which need NumPy only."""

import contextlib
import dataclasses
import os
import time

from absl import logging

from bert import masking
from bert.pretraining import pretraining_corpus
from bert.pretraining import pretraining_instances
from bert.pretraining import pretraining_packing
from bert.pretraining import pretraining_workers
from bert import tokenization
from bert.training import run_options
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import progress
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import settings


_PROGRESS_EVERY_S = 10.0


def _instance_options(vocab, vocab_file, **kwargs):
  vocabulary = masking.Vocabulary.from_vocab(vocab, vocab_file)
  return pretraining_instances.InstanceOptions(
      cls_id=vocabulary.cls_id, sep_id=vocabulary.sep_id, mask_id=vocabulary.mask_id,
      vocab_ids=list(vocabulary.vocab_ids), is_subword=vocabulary.is_subword, **kwargs)


# --------------------------------------------------------------------------- driver

# Bounds on sizes: far beyond any sane run, they fail at once instead of after minutes of
# building tables. 8,192 positions is 16 times BERT's 512-position table (the longest
# context of BERT-family encoders we know of, ModernBERT's, is 8,192); the rest bound
# memory or run time by orders of magnitude above the original's settings.
MAX_SEQ_LENGTH_LIMIT = 8192
_LIMITS = {"max_seq_length": MAX_SEQ_LENGTH_LIMIT,
           "max_predictions_per_seq": MAX_SEQ_LENGTH_LIMIT,
           "max_sequences_per_row": MAX_SEQ_LENGTH_LIMIT,
           "dupe_factor": 1000, "documents_per_chunk": 1_000_000,
           "num_workers": 1024, "num_output_shards": 100_000}


def _check_limit(name, value):
  if value is not None and value > _LIMITS[name]:
    raise errors.UserError(
        f"--{name}={value}: more than {_LIMITS[name]:,}, beyond any sane run")


def output_paths(output_file, num_output_shards=None):
  """The files to write: the comma-separated list, or N numbered shards of one name."""
  files = [f.strip() for f in str(output_file or "").split(",") if f.strip()]
  if not files:
    raise errors.UserError("--output_file is required")
  if num_output_shards is None:
    return files
  if num_output_shards < 1:
    raise errors.UserError(
        f"--num_output_shards={num_output_shards}: must be at least 1")
  _check_limit("num_output_shards", num_output_shards)
  if len(files) != 1:
    raise errors.UserError(
        "--num_output_shards needs a single --output_file name, not a list")
  return [f"{files[0]}-{i:05d}-of-{num_output_shards:05d}"
          for i in range(num_output_shards)]


def check_options(max_seq_length, max_predictions_per_seq, dupe_factor, masked_lm_prob,
                  short_seq_prob, mask_token_prob, random_token_prob, documents_per_chunk,
                  num_workers,
                  max_sequences_per_row=pretraining_packing.MAX_SEQUENCES_PER_ROW,
                  dynamic_masking=False, do_whole_word_mask=False, pack_sequences=False):
  """Flag values the algorithm cannot run with -> one-line UserError naming the flag;
  a setting changed from its default without the flag it acts with (or, the masking
  rules, with --dynamic_masking) is refused by the one partner table
  (run_options.PARTNERS), as the command refuses the flags as typed."""
  masking.MaskingOptions(  # checks masked_lm_prob and the 80/10/10 shares
      masked_lm_prob=masked_lm_prob, do_whole_word_mask=do_whole_word_mask,
      mask_token_prob=mask_token_prob, random_token_prob=random_token_prob)
  values = dict(max_sequences_per_row=max_sequences_per_row, pack_sequences=pack_sequences,
                dynamic_masking=dynamic_masking, do_whole_word_mask=do_whole_word_mask,
                mask_token_prob=mask_token_prob, random_token_prob=random_token_prob)
  defaults = {field.name: field.default for cls in (GeneratorOptions, masking.MaskingOptions)
              for field in dataclasses.fields(cls)}
  broken = run_options.unmet_partner(lambda name: values[name] != defaults[name],
                                     values.get, lambda name: name in values)
  if broken:
    raise run_options.partner_error(
        run_options.typed(broken.setting, values[broken.setting]), broken)
  checks = [
      (max_sequences_per_row >= 1,
       f"--max_sequences_per_row={max_sequences_per_row}: must be at least 1 (the "
       "instances a packed row may hold)"),
      (max_seq_length >= 5,
       f"--max_seq_length={max_seq_length}: must be at least 5 ([CLS] A [SEP] B [SEP])"),
      (max_predictions_per_seq >= 1,
       f"--max_predictions_per_seq={max_predictions_per_seq}: must be at least 1"),
      (dupe_factor >= 1, f"--dupe_factor={dupe_factor}: must be at least 1"),
      (0.0 <= short_seq_prob <= 1.0,
       f"--short_seq_prob={short_seq_prob}: must be in [0, 1]"),
      (documents_per_chunk >= 2,
       f"--documents_per_chunk={documents_per_chunk}: must be at least 2 (random-next "
       "needs another document)"),
      (num_workers is None or num_workers >= 0,
       f"--num_workers={num_workers}: must be 0 or more"),
  ]
  for ok, message in checks:
    if not ok:
      raise errors.UserError(message)
  for name, value in [("max_seq_length", max_seq_length),
                      ("max_predictions_per_seq", max_predictions_per_seq),
                      ("dupe_factor", dupe_factor),
                      ("documents_per_chunk", documents_per_chunk),
                      ("num_workers", num_workers),
                      ("max_sequences_per_row", max_sequences_per_row)]:
    _check_limit(name, value)


def check_run(input_patterns, output_file, vocab_file, options, num_output_shards=None,
              prepare_outputs=True):
  """Everything create_pretraining_data.py checks before reading the corpus.

  input_patterns, output_file: the flags' comma-separated files (and globs, for input);
  options: generate's instance options (max_seq_length, dupe_factor, ...). Fails with a
  one-line UserError naming the flag; returns (input files, output files). With
  prepare_outputs (not --check_only) the outputs' folders are created and checked.
  """
  for name, value in (("input_file", input_patterns), ("output_file", output_file),
                      ("vocab_file", vocab_file)):
    if not value:
      raise errors.UserError(f"--{name} is required")
  input_files = input_checks.expand_file_patterns(input_patterns, "input_file")
  outputs = output_paths(output_file, num_output_shards)
  check_options(**{k: v for k, v in options.items() if k != "random_seed"})
  for path in input_files:
    input_checks.check_input_file(path, "input_file", allow_empty=True)
  input_checks.check_input_file(vocab_file, "vocab_file")
  if prepare_outputs:
    for path in outputs:
      atomic_output.prepare_output_file(path, "output_file")
  return input_files, outputs


def _import_tensorflow():
  # Deferred on purpose (see the module docstring): the spawned workers import the
  # script, and so this module, and need NumPy only; the parent imports TensorFlow and
  # the in-graph tokenizer after the pool started, so that both start-ups overlap.
  from bert.pretraining import pretraining_tokenizer  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf, pretraining_tokenizer


class _Progress:
  """Logs documents, instances, rate, share of the input read and an ETA, every 10 s."""

  def __init__(self, total_chars, counters, log):
    self._chars = progress.Progress(total_chars or 1)
    self.start = self._chars.started
    self._counters = counters
    self._log = log
    self._last = (self.start, -1)

  def __call__(self, documents, written, final=False):
    now = time.time()
    if not final and now - self._last[0] < _PROGRESS_EVERY_S:
      return
    if final and self._last[1] == written:
      return
    self._last = (now, written)
    elapsed = max(now - self.start, 1e-9)
    self._chars.update(min(self._counters["chars"], self._chars.total))
    done = self._chars.done / self._chars.total
    self._log(f"documents {documents:,}  instances {written:,}  "
              f"{written / elapsed:,.0f} instances/s  read {100 * done:.1f}%  "
              f"elapsed {progress.format_duration(elapsed)}  ETA ~{self._chars.eta()}")


class _RoundRobinWriter:
  """Writes the workers' serialized records round-robin over the output TFRecord writers,
  adding up their statistics."""

  def __init__(self, writers, totals, progress):
    self.writers = writers
    self.totals = totals
    self.progress = progress
    self.written = 0

  def __call__(self, result):
    batches, stats = result
    num_writers = len(self.writers)
    for records, sizes in batches:
      offset = 0
      if num_writers == 1:
        write_record = self.writers[0].write
        for size in sizes:
          write_record(records[offset:offset + size])
          offset += size
      else:
        for number, size in enumerate(sizes, self.written):
          self.writers[number % num_writers].write(records[offset:offset + size])
          offset += size
      self.written += len(sizes)
    for key in pretraining_instances.STAT_KEYS:
      self.totals[key] += stats[key]
    self.progress(self.totals["documents"], self.totals["instances"])


def _chunk_tasks(documents, tokenizer, random_seed, documents_per_chunk, unk_id, totals):
  """Yields the workers' tasks (seed, flat ids bytes, splits bytes, sentence counts), one
  per chunk of documents, tokenized in this process; counts [UNK] into totals."""
  for index, chunk in enumerate(
      pretraining_corpus.chunk_documents(documents, documents_per_chunk)):
    sentences = [s for d in chunk for s in d]
    flat, splits = tokenizer.tokenize(sentences)
    totals["unk_tokens"] += int((flat == unk_id).sum())
    yield (pretraining_instances.chunk_seed(random_seed, index), flat.astype("=i4").tobytes(),
           splits.astype("=i8").tobytes(), [len(d) for d in chunk])


def _check_corpus_shape(totals, input_files):
  """Corpora the algorithm cannot make pairs from -> UserError naming the input."""
  shown = ",".join(input_files)
  if totals["documents"] == 0:
    raise errors.UserError(
        f"--input_file={shown}: no text found (empty corpus); expected one sentence a "
        "line with blank lines between documents")
  if totals["documents"] < 2:
    raise errors.UserError(
        f"--input_file={shown}: only one document; random-next sentences need at least "
        "two documents separated by blank lines")
  if totals["sentences"] == totals["documents"]:
    raise errors.UserError(
        f"--input_file={shown}: every document has a single sentence, too short to "
        "make a sentence pair; put one sentence a line and a blank line only between "
        "documents")


def _validate(input_files, output_files, vocab_file, options):
  check_options(**options)
  for path in input_files:
    input_checks.check_input_file(path, "input_file", allow_empty=True)
  input_checks.check_input_file(vocab_file, "vocab_file")
  for path in output_files:
    atomic_output.prepare_output_file(path, "output_file")


@dataclasses.dataclass(frozen=True)
class GeneratorOptions:
  """The instance settings of create_pretraining_data.py, each its flag of the same name
  (flags_common makes them from these fields: type, default, help); the masking rules are
  masking.MaskingOptions'. generate() takes each as a keyword with this default."""
  max_seq_length: int = settings.setting(128, "Maximum sequence length.")
  max_predictions_per_seq: int = settings.setting(
      20, "Maximum number of masked LM predictions per sequence.")
  random_seed: int = settings.setting(12345, "Random seed for data generation.")
  dupe_factor: int = settings.setting(
      10, "Number of times to duplicate the input data (with different masks).")
  short_seq_prob: float = settings.setting(
      0.1, "Probability of creating sequences which are shorter than the maximum length.")
  # In this process as a library; the command's default is one worker per CPU.
  num_workers: int = settings.setting(
      0, "Worker processes creating instances (0: in this process). Default: one per CPU. "
      "The output bytes are the same for every value.")
  documents_per_chunk: int = settings.setting(
      1000, "Documents read, shuffled and paired together; bounds memory. Random-next "
      "segments come from the same chunk (the original: from the whole corpus).")
  pack_sequences: bool = settings.setting(
      False, "Pack several instances into each row of --max_seq_length (the same instances "
      "and masks as without it), each attending only to itself, so that training computes "
      "on text instead of padding. run_pretraining.py reads packed records without a flag.")
  max_sequences_per_row: int = settings.setting(
      pretraining_packing.MAX_SEQUENCES_PER_ROW,
      "--pack_sequences: the most instances one row may hold.")
  dynamic_masking: bool = settings.setting(
      False, "Write each instance once without masks; run_pretraining.py masks them as it "
      "trains, anew each epoch (use --dupe_factor=1), with its own --masked_lm_prob, "
      "--do_whole_word_mask, --mask_token_prob and --random_token_prob.")


# generate()'s keyword defaults: the declarations' (one place each value is written).
_DEFAULT = GeneratorOptions()
_MASKING = masking.MaskingOptions()


def generate(input_files, output_files, vocab_file, do_lower_case=True,
             do_whole_word_mask=_MASKING.do_whole_word_mask,
             max_seq_length=_DEFAULT.max_seq_length,
             max_predictions_per_seq=_DEFAULT.max_predictions_per_seq,
             random_seed=_DEFAULT.random_seed, dupe_factor=_DEFAULT.dupe_factor,
             masked_lm_prob=_MASKING.masked_lm_prob, short_seq_prob=_DEFAULT.short_seq_prob,
             mask_token_prob=_MASKING.mask_token_prob,
             random_token_prob=_MASKING.random_token_prob,
             num_workers=_DEFAULT.num_workers,
             documents_per_chunk=_DEFAULT.documents_per_chunk, on_encoding_error="fail",
             normalize=None, split_sentences=None, pack_sequences=_DEFAULT.pack_sequences,
             max_sequences_per_row=_DEFAULT.max_sequences_per_row,
             dynamic_masking=_DEFAULT.dynamic_masking, log=logging.info):
  """Writes the pretraining TFRecords; returns the summary dict (counts and fractions).

  input_files, output_files: lists of paths. Every output is written under a temporary
  name and renamed when the whole run succeeded. normalize: None (the original) or "nfc",
  which the tokenizer applies to every line first. split_sentences: None, or a function
  line -> list of sentences applied to every line (pretraining_corpus.sentence_splitter).
  pack_sequences: rows packed with up to max_sequences_per_row instances each;
  dynamic_masking: instances written without masks, for run_pretraining.py to mask as
  it trains (docs/pretraining_data.md).
  """
  _validate(input_files, output_files, vocab_file, dict(
      max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
      dupe_factor=dupe_factor, masked_lm_prob=masked_lm_prob, short_seq_prob=short_seq_prob,
      mask_token_prob=mask_token_prob, random_token_prob=random_token_prob,
      documents_per_chunk=documents_per_chunk, num_workers=num_workers,
      max_sequences_per_row=max_sequences_per_row, pack_sequences=pack_sequences,
      dynamic_masking=dynamic_masking, do_whole_word_mask=do_whole_word_mask))
  if num_workers is None:
    num_workers = os.cpu_count() or 1
  vocab = tokenization.load_vocab(vocab_file)
  opt = _instance_options(
      vocab, vocab_file, max_seq_length=max_seq_length,
      max_predictions_per_seq=max_predictions_per_seq, dupe_factor=dupe_factor,
      short_seq_prob=short_seq_prob, masked_lm_prob=masked_lm_prob,
      mask_token_prob=mask_token_prob, random_token_prob=random_token_prob,
      do_whole_word_mask=do_whole_word_mask, pack_sequences=pack_sequences,
      max_sequences_per_row=max_sequences_per_row if pack_sequences else 1,
      dynamic_masking=dynamic_masking)
  full_row = int(round(max_seq_length * masked_lm_prob))
  if pack_sequences and max_predictions_per_seq < full_row:
    log(f"--pack_sequences: a row holds at most --max_predictions_per_seq="
        f"{max_predictions_per_seq} masked positions, fewer than a full row of "
        f"{max_seq_length} tokens gets at --masked_lm_prob={masked_lm_prob:g} ({full_row}), "
        "so rows will stay part empty; set it to about max_seq_length x masked_lm_prob, "
        "as the original's README says")
  counters = {"lines": 0, "skipped_lines": 0, "chars": 0}
  totals = dict.fromkeys(pretraining_instances.STAT_KEYS + ("unk_tokens",), 0)
  report = _Progress(sum(file_io.local_size(p) for p in input_files), counters, log)
  with errors.disk_full_names(", ".join(output_files)), contextlib.ExitStack() as stack:
    pool = pretraining_workers.start_workers(opt, num_workers)
    if pool is not None:
      stack.callback(pool.terminate)
    tf, pretraining_tokenizer = _import_tensorflow()
    tokenizer = pretraining_tokenizer.get_tokenizer(vocab_file, do_lower_case, normalize)
    tmp_paths = [stack.enter_context(atomic_output.atomic_path(p)) for p in output_files]
    write = _RoundRobinWriter(
        [stack.enter_context(tf.io.TFRecordWriter(p)) for p in tmp_paths], totals, report)
    documents = pretraining_corpus.read_documents(input_files, on_encoding_error, counters,
                                                  split_sentences)
    pretraining_workers.run_tasks(
        _chunk_tasks(documents, tokenizer, random_seed, documents_per_chunk,
                     vocab.get("[UNK]", -1), totals),
        pool, num_workers, write)
    if counters["skipped_lines"]:
      log(f"skipped {counters['skipped_lines']:,} lines that were not valid UTF-8")
    _check_corpus_shape(totals, input_files)
    report(totals["documents"], write.written, final=True)
  summary = summarize(totals, write.written, time.time() - report.start, max_seq_length,
                      packed=pack_sequences, masked=not dynamic_masking)
  summary["skipped_lines"] = counters["skipped_lines"]
  return summary


def summarize(totals, written, seconds, max_seq_length=None, packed=False, masked=True):
  """The end-of-run figures: counts, padding, masking split, random-next and [UNK] rates.

  written: the records written (rows, when packed). Without masks (dynamic masking) the
  masking split is not reported: run_pretraining.py draws it.
  """
  instances = totals["instances"]
  summary = {
      "documents": totals["documents"],
      "sentences": totals["sentences"],
      "corpus_tokens": totals["corpus_tokens"],
      "instances_written": instances,
  }
  if packed:
    summary["rows_written"] = written
    summary["instances_per_row"] = instances / max(written, 1)
  summary["instance_tokens"] = totals["instance_tokens"]
  if max_seq_length:
    summary["padding_fraction"] = 1.0 - totals["instance_tokens"] / max(
        written * max_seq_length, 1)
  if masked:
    masked_count = max(totals["masked"], 1)
    summary.update({
        "masked_fraction": totals["masked"] / max(totals["instance_tokens"], 1),
        "mask_token_fraction": totals["masked_as_mask"] / masked_count,
        "kept_fraction": totals["masked_kept"] / masked_count,
        "random_token_fraction": totals["masked_random"] / masked_count,
    })
  summary.update({
      "random_next_fraction": totals["random_next"] / max(instances, 1),
      "unk_rate": totals["unk_tokens"] / max(totals["corpus_tokens"], 1),
      "seconds": seconds,
      "instances_per_second": instances / max(seconds, 1e-9),
  })
  return summary


def summary_lines(summary):
  """create_pretraining_data.py's `key = value` lines of the summary."""
  return [f"{key} = {value:.4f}" if isinstance(value, float) else f"{key} = {value:,}"
          for key, value in summary.items()]
