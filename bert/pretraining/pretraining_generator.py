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
from bert import modeling_config
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


def _instance_options(vocabulary, options, masking_options):
  """What the workers need (pretraining_instances.InstanceOptions): the instance and
  masking settings and the vocabulary's ids (a masking.Vocabulary)."""
  return pretraining_instances.InstanceOptions(
      max_seq_length=options.max_seq_length,
      max_predictions_per_seq=options.max_predictions_per_seq,
      dupe_factor=options.dupe_factor, short_seq_prob=options.short_seq_prob,
      masked_lm_prob=masking_options.masked_lm_prob,
      mask_token_prob=masking_options.mask_token_prob,
      random_token_prob=masking_options.random_token_prob,
      do_whole_word_mask=masking_options.do_whole_word_mask,
      cls_id=vocabulary.cls_id, sep_id=vocabulary.sep_id, mask_id=vocabulary.mask_id,
      vocab_ids=list(vocabulary.vocab_ids), is_subword=vocabulary.is_subword,
      pack_sequences=options.pack_sequences,
      max_sequences_per_row=options.max_sequences_per_row if options.pack_sequences else 1,
      dynamic_masking=options.dynamic_masking)


# --------------------------------------------------------------------------- driver

# Bounds on sizes: far beyond any sane run, they fail at once instead of after minutes of
# building tables. A sequence's positions are bounded by modeling_config's rule (its
# max_seq_length, and so the predictions and instances in it); the rest bound memory or
# run time by orders of magnitude above the original's settings.
_LIMITS = {"max_predictions_per_seq": modeling_config.MAX_SEQ_LENGTH_BOUND,
           "max_sequences_per_row": modeling_config.MAX_SEQ_LENGTH_BOUND,
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


def _check_options(options):
  """GeneratorOptions' values the algorithm cannot run with -> one-line UserError naming
  the flag (its __post_init__)."""
  o = options
  checks = [
      (o.max_sequences_per_row >= 1,
       f"--max_sequences_per_row={o.max_sequences_per_row}: must be at least 1 (the "
       "instances a packed row may hold)"),
      (o.max_predictions_per_seq >= 1,
       f"--max_predictions_per_seq={o.max_predictions_per_seq}: must be at least 1"),
      (o.dupe_factor >= 1, f"--dupe_factor={o.dupe_factor}: must be at least 1"),
      (0.0 <= o.short_seq_prob <= 1.0,
       f"--short_seq_prob={o.short_seq_prob}: must be in [0, 1]"),
      (o.documents_per_chunk >= 2,
       f"--documents_per_chunk={o.documents_per_chunk}: must be at least 2 (random-next "
       "needs another document)"),
      (o.num_workers is None or o.num_workers >= 0,
       f"--num_workers={o.num_workers}: must be 0 or more"),
  ]
  for ok, message in checks:
    if not ok:
      raise errors.UserError(message)
  # An instance is a pair: [CLS] A [SEP] B [SEP].
  modeling_config.check_max_seq_length(o.max_seq_length, least=5,
                                       needs="[CLS] A [SEP] B [SEP]")
  for name in ("max_predictions_per_seq", "dupe_factor", "documents_per_chunk",
               "num_workers", "max_sequences_per_row"):
    _check_limit(name, getattr(o, name))


def check_partners(options, masking_options):
  """The one partner table (run_options.PARTNERS) held to the values, as the command
  holds the flags as typed: a setting changed from its default without the one it acts
  with (--max_sequences_per_row without --pack_sequences), or a masking rule other than
  --masked_lm_prob (which sizes the records) with --dynamic_masking, whose masks
  run_pretraining.py draws as it trains, is refused in one line."""
  values = {**dataclasses.asdict(options), **dataclasses.asdict(masking_options)}
  defaults = {field.name: field.default
              for cls in (GeneratorOptions, masking.MaskingOptions)
              for field in dataclasses.fields(cls)}
  broken = run_options.unmet_partner(lambda name: values[name] != defaults[name],
                                     values.get, lambda name: name in values)
  if broken:
    raise run_options.partner_error(
        run_options.typed(broken.setting, values[broken.setting]), broken)


def check_run(input_patterns, output_file, vocab_file, options, masking_options,
              num_output_shards=None, prepare_outputs=True):
  """Everything create_pretraining_data.py checks before reading the corpus.

  input_patterns, output_file: the flags' comma-separated files (and globs, for input);
  options, masking_options: generate's GeneratorOptions and masking.MaskingOptions (each
  checked when made). Fails with a one-line UserError naming the flag; returns (input
  files, output files). With prepare_outputs (not --check_only) the outputs' folders are
  created and checked.
  """
  for name, value in (("input_file", input_patterns), ("output_file", output_file),
                      ("vocab_file", vocab_file)):
    if not value:
      raise errors.UserError(f"--{name} is required")
  input_files = input_checks.expand_file_patterns(input_patterns, "input_file")
  outputs = output_paths(output_file, num_output_shards)
  check_partners(options, masking_options)
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


def _validate(input_files, output_files, vocab_file, options, masking_options):
  check_partners(options, masking_options)
  for path in input_files:
    input_checks.check_input_file(path, "input_file", allow_empty=True)
  input_checks.check_input_file(vocab_file, "vocab_file")
  for path in output_files:
    atomic_output.prepare_output_file(path, "output_file")


@dataclasses.dataclass(frozen=True)
class GeneratorOptions:
  """The instance settings of create_pretraining_data.py, each its flag of the same name
  (flags_common makes them from these fields: type, default, help), checked when made;
  the masking rules are masking.MaskingOptions'. generate() takes both objects."""
  max_seq_length: int = settings.setting(modeling_config.DEFAULT_MAX_SEQ_LENGTH,
                                         "Maximum sequence length.")
  max_predictions_per_seq: int = settings.setting(
      masking.MAX_PREDICTIONS_PER_SEQ, "Maximum number of masked LM predictions per sequence.")
  random_seed: int = settings.setting(12345, "Random seed for data generation.")
  dupe_factor: int = settings.setting(
      10, "Number of times to duplicate the input data (with different masks).")
  short_seq_prob: float = settings.setting(
      pretraining_instances.SHORT_SEQ_PROB, "Probability of creating sequences which are shorter than the maximum length.")
  # In this process as a library; the command's default is one worker per CPU.
  num_workers: int = settings.setting(
      pretraining_workers.IN_THIS_PROCESS, "Worker processes creating instances (0: in this process). Default: one per CPU. "
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
  on_encoding_error: str = settings.setting(
      "fail", "A line that is not valid UTF-8: fail naming file and line, or skip it.",
      choices=("fail", "skip"))

  def __post_init__(self):
    _check_options(self)


def generate(input_files, output_files, vocab_file, options=GeneratorOptions(),
             masking_options=masking.MaskingOptions(), *,
             do_lower_case=tokenization.DO_LOWER_CASE,
             normalize=None, split_sentences=None):
  """Writes the pretraining TFRecords; returns the summary dict (counts and fractions).

  input_files, output_files: lists of paths. Every output is written under a temporary
  name and renamed when the whole run succeeded. options: a GeneratorOptions (the
  instance settings: pack_sequences, rows packed with up to max_sequences_per_row
  instances each; dynamic_masking, instances written without masks, for
  run_pretraining.py to mask as it trains: docs/pretraining_data.md); masking_options: a
  masking.MaskingOptions. do_lower_case: the tokenizer's, as the model's. normalize: None
  (the original) or "nfc", which the tokenizer applies to every line first.
  split_sentences: None, or a function line -> list of sentences applied to every line
  (pretraining_corpus.sentence_splitter).
  """
  _validate(input_files, output_files, vocab_file, options, masking_options)
  num_workers = options.num_workers
  if num_workers is None:
    num_workers = os.cpu_count() or 1
  vocab = tokenization.load_vocab(vocab_file)
  opt = _instance_options(masking.Vocabulary.from_vocab(vocab, vocab_file), options,
                          masking_options)
  max_seq_length = options.max_seq_length
  max_predictions_per_seq = options.max_predictions_per_seq
  masked_lm_prob = masking_options.masked_lm_prob
  full_row = int(round(max_seq_length * masked_lm_prob))
  if options.pack_sequences and max_predictions_per_seq < full_row:
    logging.info(
        f"--pack_sequences: a row holds at most --max_predictions_per_seq="
        f"{max_predictions_per_seq} masked positions, fewer than a full row of "
        f"{max_seq_length} tokens gets at --masked_lm_prob={masked_lm_prob:g} ({full_row}), "
        "so rows will stay part empty; set it to about max_seq_length x masked_lm_prob, "
        "as the original's README says")
  counters = {"lines": 0, "skipped_lines": 0, "chars": 0}
  totals = dict.fromkeys(pretraining_instances.STAT_KEYS + ("unk_tokens",), 0)
  report = _Progress(sum(file_io.local_size(p) for p in input_files), counters,
                     logging.info)
  with errors.disk_full_names(", ".join(output_files)), contextlib.ExitStack() as stack:
    pool = pretraining_workers.start_workers(opt, num_workers)
    if pool is not None:
      stack.callback(pool.terminate)
    tf, pretraining_tokenizer = _import_tensorflow()
    tokenizer = pretraining_tokenizer.get_tokenizer(vocab_file, do_lower_case, normalize)
    tmp_paths = [stack.enter_context(atomic_output.atomic_path(p)) for p in output_files]
    write = _RoundRobinWriter(
        [stack.enter_context(tf.io.TFRecordWriter(p)) for p in tmp_paths], totals, report)
    documents = pretraining_corpus.read_documents(input_files, options.on_encoding_error,
                                                  counters, split_sentences)
    pretraining_workers.run_tasks(
        _chunk_tasks(documents, tokenizer, options.random_seed, options.documents_per_chunk,
                     vocab.get("[UNK]", -1), totals),
        pool, num_workers, write)
    if counters["skipped_lines"]:
      logging.info(f"skipped {counters['skipped_lines']:,} lines that were not valid UTF-8")
    _check_corpus_shape(totals, input_files)
    report(totals["documents"], write.written, final=True)
  summary = summarize(totals, write.written, time.time() - report.start, max_seq_length,
                      packed=options.pack_sequences, masked=not options.dynamic_masking)
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
