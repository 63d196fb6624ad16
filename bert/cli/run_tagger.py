"""BERT tagging any column of a CoNLL file, one tag per word: part of speech, chunks, ...

--tag_column picks the column (counted from 1, the word); --iob says its tags are IOB
chunks (learned as IOB2, written back in the file's scheme, scored by span F1 as
conlleval does); otherwise every tag is a label as written, scored by accuracy per word.
docs/tagging.md shows the command and the outputs; entities with the paper's
feature-based mode: run_ner.py."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=128)
flags_common.define_run_flags(train_batch_size=32, learning_rate=5e-5, num_train_epochs=3.0)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_conll_file_flags()
flags.DEFINE_integer("tag_column", None,
                     "The column holding the tags, counted from 1 (the word) as `cut -f` "
                     "counts: CoNLL-2003's part of speech is 2, its chunk 3, its entity 4. "
                     "Default: the last column.")
flags.DEFINE_bool("iob", False,
                  "The tags are IOB chunks (B-X, I-X, O: chunks, entities): learned as "
                  "IOB2, written back in the file's scheme, scored by span F1 as conlleval "
                  "scores them. Without it each tag is a label as written, scored by "
                  "accuracy.")
flags.DEFINE_list("labels", None,
                  "The label set, in the order of the model's outputs (default: every "
                  "tag of the train, dev and test files, sorted; with --iob, O first).")
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the token classifier.")
flags_common.define_finetuning_flags(data_dir_help="Folder with the CoNLL files.")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    options = flags_common.options_from_flags(FLAGS)
    from bert.tagging import tagging_task  # deferred: TensorFlow loads here, so --help stays fast
    tagging_task.TaggingTask(
        options, flags_common.settings_from_flags(tagging_task.TaggingSettings, FLAGS)).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
