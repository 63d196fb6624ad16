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

Before learning, a corpus check prints a summary block of a sample: caseless scripts
under --do_lower_case=True (Hangul syllables come apart into jamo), decomposed (NFD)
text, paragraph-a-line corpora. --check_only stops there.
--normalize=nfc (opt-in; the original does not normalise) puts every line in NFC form
before counting; pass the same to create_pretraining_data.py.
"""

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
