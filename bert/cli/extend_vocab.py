"""Puts new words into a vocab.txt in place of its [unusedN] entries, in order.

The original README advises this for domain words. Every other line is kept byte for
byte, so the vocabulary keeps its size and ids and the model's checkpoint loads
unchanged; the new words' embeddings are the unused entries' rows, which fine-tuning
trains. A word the vocabulary already has as one piece is skipped; a word the tokenizer
would split before WordPiece (punctuation, CJK ideographs) is refused with the reason;
with --do_lower_case a word is written as the tokenizer reads it (lower-cased, accents
stripped), with a note. With --corpus_file it reports how the corpus tokenizes before
and after. docs/tokenization.md says when to extend a vocabulary and when to learn a new
one."""

import json

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.cli import launch
from bert.training import run_options
from bert.utils import errors
from bert.utils import input_checks

flags_common.define_runtime_flags()
flags_common.define_path("words_file", None,
                         "The new words, one a line, in the order they take the [unusedN] "
                         "entries (blank lines are skipped).")
flags_common.define_path("output_file", None, "Where to write the new vocab.txt.",
                         output="file")
flags_common.define_path("corpus_file", None,
                         "Optional text: report how many of its words are new words (now "
                         "one piece each) and the pieces per word before and after.")
flags_common.define_flags(run_options.RunOptions, ("vocab_file", "do_lower_case"), helps={
    "vocab_file": "The vocabulary to extend (vocab.txt).",
    "do_lower_case": "The model's --do_lower_case: words are written as its tokenizer "
                     "reads them (lower-cased and accents stripped when true)."})
flags_common.define_normalize_flag("before checking each word")
flags.mark_flags_as_required(["vocab_file", "words_file", "output_file"])

FLAGS = flags.FLAGS


def main(_):
  logging.set_verbosity(logging.INFO)
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    for flag in ("vocab_file", "words_file") + (("corpus_file",) if FLAGS.corpus_file else ()):
      input_checks.check_input_file(FLAGS[flag].value, flag)
    from bert import vocab_extension  # pylint: disable=g-import-not-at-top
    plan, summary = vocab_extension.extend_vocab(
        FLAGS.vocab_file, FLAGS.words_file, FLAGS.output_file,
        do_lower_case=FLAGS.do_lower_case, corpus_file=FLAGS.corpus_file,
        normalize=flags_common.normalize_option(FLAGS.normalize))
    for note in plan.notes:
      logging.info("%s", note)
    for number, word, reason in plan.skipped:
      logging.info("%s:%d: %r skipped: %s", FLAGS.words_file, number, word, reason)
    for word, line, unused in plan.added:
      logging.info("%s:%d: %s (was %s)", FLAGS.output_file, line, word, unused)
    logging.info("Wrote %s: %d words added, %d skipped, %d [unusedN] entries left",
                 FLAGS.output_file, summary["added"], summary["skipped"],
                 summary["unused_left"])
    print(json.dumps(summary, ensure_ascii=False))


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
