"""Learns a WordPiece vocab.txt (and a matching bert_config.json) from a text corpus.

The original release never shipped a way to make a vocabulary. This learns one with
tensorflow-text's learner over words split by this project's BasicTokenizer, so both
tokenizers split text exactly as the learner saw it, laid out like Google's
(bert/pretraining/pretraining_vocab.py). docs/tokenization.md shows the command and what
it reports."""

from bert.cli import launch

# This module's own imports load TensorFlow: the process is set up for it first.
launch.prepare(__name__)

# pylint: disable=g-import-not-at-top,wrong-import-position
import json

from absl import flags

from bert.cli import flags_common
from bert.pretraining import pretraining_vocab
from bert import tokenization
from bert.utils import errors

flags_common.define_runtime_flags()

flags_common.define_path("input_file", None,
                         "Input raw text file(s): one sentence a line, blank lines between "
                         "documents (comma-separated, globs allowed).")
flags_common.define_path("output_file", None,
                         "Where to write the vocabulary (vocab.txt); required unless --check_only.",
                         output="file")
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
flags_common.define_path("output_config_file", None,
                         "Where to write bert_config.json (default: beside --output_file; "
                         "pass an empty string to write none).", output="file")
flags_common.define_path("bert_config_template", None,
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
flags_common.define_check_only_flag(
    "case, normalisation, sentence-pair warnings on a sample",
    "learning or writing anything")

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    options = flags_common.settings_from_flags(pretraining_vocab.LearnOptions, FLAGS)
    summary = pretraining_vocab.create_vocab(
        FLAGS.input_file, FLAGS.output_file, options,
        output_config_file=FLAGS.output_config_file,
        bert_config_template=FLAGS.bert_config_template, check_only=FLAGS.check_only)
    if summary is not None:
      print(json.dumps(summary, ensure_ascii=False))


flags.mark_flag_as_required("input_file")


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
