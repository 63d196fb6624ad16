"""BERT fine-tuning on SWAG (multiple choice), as in the paper's Section 4.4 / Table 4.

Each example is four (context, ending) pairs; one learned vector scores each pair's
[CLS] vector and a softmax over the four is trained with cross-entropy. Reads SWAG's own
CSV files (train.csv, val.csv, test.csv); docs/ner_swag.md shows the command and the
outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

# The paper's SWAG setting: 3 epochs, learning rate 2e-5, batch size 16.
flags_common.define_training_flags(train_batch_size=16, learning_rate=2e-5)

flags_common.define_finetuning_flags(
    data_dir_help="Folder with SWAG's train.csv, val.csv and test.csv.")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    options = flags_common.options_from_flags(FLAGS)
    from bert.swag import swag_task  # deferred: TensorFlow loads here, so --help stays fast
    swag_task.SwagTask(options, FLAGS.data_dir).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
