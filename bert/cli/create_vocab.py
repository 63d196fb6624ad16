"""Learns a WordPiece vocab.txt (and a matching bert_config.json) from a text corpus.

The original release never shipped a way to make a vocabulary. This learns one with
tensorflow-text's WordPiece learner (its tokens, computed sooner), or Hugging Face
tokenizers' with --learner=tokenizers, over words split by this project's BasicTokenizer,
so both tokenizers split text exactly as the learner saw it, laid out like Google's
(bert/pretraining/pretraining_vocab.py). docs/tokenization.md shows the command and what
it reports."""

from bert.cli import launch

# The process is set up before anything loads; the word-counting workers import this
# module again, and it loads no TensorFlow (a gs:// path loads it when read).
launch.prepare(__name__)

# pylint: disable=g-import-not-at-top,wrong-import-position
import json

from absl import flags

from bert.cli import flags_common
from bert.pretraining import pretraining_vocab
from bert.utils import errors

flags_common.define_runtime_flags()

flags_common.define_path("input_file", None,
                         "Input raw text file(s): one sentence a line, blank lines between "
                         "documents (comma-separated, globs allowed).")
flags_common.define_normalize_flag("before counting words")
flags_common.define_check_only_flag(
    "case, normalisation, sentence-pair warnings on a sample",
    "learning or writing anything")
flags_common.define_path("output_file", None,
                         "Where to write the vocabulary (vocab.txt); required unless --check_only.",
                         output="file")
flags_common.define_flags(pretraining_vocab.LearnOptions, (
    "vocab_size", "do_lower_case", "num_unused"))
flags_common.define_path("output_config_file", None,
                         "Where to write bert_config.json (default: beside --output_file; "
                         "pass an empty string to write none).", output="file")
flags_common.define_path("bert_config_template", None,
                         "A bert_config.json whose architecture to copy (default: BERT-Base, "
                         "L=12 H=768 A=12); only vocab_size is changed.")
flags_common.define_flags(pretraining_vocab.LearnOptions, (
    "max_input_chars_per_word", "max_token_length", "max_unique_chars", "lower_thresh",
    "upper_thresh", "num_iterations", "max_input_tokens", "slack_ratio", "holdout_every",
    "log_every_lines"))
# The command counts with one worker per CPU by default (the library: in its process).
flags_common.define_flags(pretraining_vocab.LearnOptions, ("learner", "num_workers"),
                          defaults={"num_workers": None})

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
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
