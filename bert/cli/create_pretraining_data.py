"""Creates masked-LM / next-sentence pretraining TFRecords from plain text, fast.

The algorithm is the original's, restated for speed (bert/pretraining); the output bytes
depend on the seed only, not on --num_workers. A corpus check of a sample runs first and
warns of the usual wrong turns (--check_only stops there). docs/pretraining_data.md shows
the command, the formats and what differs from the original."""

import sys

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.cli import launch
from bert.pretraining import pretraining_corpus_check
from bert.pretraining import pretraining_corpus
from bert.pretraining import pretraining_generator
from bert.training import run_options
from bert.utils import errors

flags_common.define_runtime_flags()

flags_common.define_path("input_file", None,
                         "Input raw text file (or comma-separated list of files, globs allowed).")
flags_common.define_path(
    "output_file", None,
    "Output TF example file (or comma-separated list of files, written round-robin).",
    output="file")
# The vocabulary and its case, declared once with the other model settings (RunOptions).
flags_common.define_flags(run_options.RunOptions, ("vocab_file", "do_lower_case"))
# The instance settings (and how a line that is not UTF-8 is met), made from their
# declarations (pretraining_generator.GeneratorOptions; the command runs one worker per
# CPU by default) and the masking rules (masking.MaskingOptions).
flags_common.define_flags(pretraining_generator.GeneratorOptions,
                          defaults={"num_workers": None})
flags_common.define_masking_flags()
# Ours, not the original's.
flags.DEFINE_integer(
    "num_output_shards", None,
    "Write N files named <output_file>-0000i-of-0000N instead of --output_file itself "
    "(round-robin, as for a comma-separated list).")
flags_common.define_normalize_flag("before tokenizing")
flags.DEFINE_string(
    "split_sentences", None,
    "Split each line into sentences with a sentence-boundary library (optional "
    "dependency): pysbd. For corpora of one paragraph a line; not the original's.")
flags.DEFINE_string("sentence_language", "en",
                    "--split_sentences: the language (an ISO code the library supports).")
flags_common.define_check_only_flag(
    "a sample's [UNK] rate, case, normalisation and sentence-pair warnings",
    "writing anything")

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    flags_common.check_partners(FLAGS)  # a flag typed without the one it acts with
    # generate()'s two options objects, each checked as it is made.
    options = flags_common.settings_from_flags(pretraining_generator.GeneratorOptions, FLAGS)
    masking_options = flags_common.masking_options(FLAGS)
    # Flags checked before check_run, which creates the output's folder.
    normalize = flags_common.normalize_option(FLAGS.normalize)
    splitter = (pretraining_corpus.sentence_splitter(FLAGS.split_sentences,
                                                     FLAGS.sentence_language)
                if FLAGS.split_sentences else None)
    input_files, outputs = pretraining_generator.check_run(
        FLAGS.input_file, FLAGS.output_file, FLAGS.vocab_file, options, masking_options,
        num_output_shards=FLAGS.num_output_shards, prepare_outputs=not FLAGS.check_only)
    pretraining_corpus_check.log_report(pretraining_corpus_check.check_corpus(
        pretraining_corpus_check.read_sample(input_files), FLAGS.do_lower_case,
        vocab_file=FLAGS.vocab_file, normalize=normalize, split_sentences=splitter,
        splitter_name=FLAGS.split_sentences, max_seq_length=options.max_seq_length,
        short_seq_prob=options.short_seq_prob, source=",".join(input_files)))
    if FLAGS.check_only:
      return
    logging.info("reading %d input file(s); writing %d output file(s)", len(input_files),
                 len(outputs))
    summary = pretraining_generator.generate(
        input_files, outputs, FLAGS.vocab_file, options, masking_options,
        do_lower_case=FLAGS.do_lower_case, normalize=normalize, split_sentences=splitter)
    logging.info("*** Wrote %d instances to %s ***", summary["instances_written"],
                 ", ".join(outputs))
    for line in pretraining_generator.summary_lines(summary):
      print(line)
    sys.stdout.flush()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
