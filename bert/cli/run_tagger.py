"""BERT tagging any column of a CoNLL file, one tag per word: part of speech, chunks, ...

--tag_column picks the column (counted from 1, the word); --iob says its tags are IOB
chunks (learned as IOB2, written back in the file's scheme, scored by span F1 as
conlleval does); otherwise every tag is a label as written, scored by accuracy per word.
docs/tagging.md shows the command and the outputs; entities with the paper's
feature-based mode: run_ner.py."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.tagging import tagging_options
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_training_flags()

flags_common.define_conll_file_flags(data_dir_help="Folder with the CoNLL files.")
flags_common.define_flags(tagging_options.TaggingOptions,
                          ("tag_column", "iob", "labels", "dropout_rate"))


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    # The task's own options first, as run_ner.py's (whose run options depend on them).
    settings = flags_common.settings_from_flags(tagging_options.TaggingOptions, FLAGS)
    options = flags_common.options_from_flags(FLAGS)
    from bert.tagging import tagging_task  # deferred: TensorFlow loads here, so --help stays fast
    tagging_task.TaggingTask(options, settings).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
