"""BERT fine-tuning for multi-label classification: any number of labels per text.

One sigmoid per label on the pooled [CLS] vector, trained with sigmoid cross-entropy; a
label is predicted where its probability reaches --threshold. --data_dir holds
labels.txt and train/dev/test.tsv (`text<TAB>labels`); docs/multilabel.md shows the
format, the command and the outputs."""

from absl import flags

from bert.cli import flags_common
from bert.multilabel import multilabel_data
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_training_flags()

flags_common.define_finetuning_flags(
    data_dir_help="Folder with labels.txt, train.tsv, dev.tsv and test.tsv "
    "(text<TAB>comma-separated labels).")
flags_common.define_path("labels_file", None,
                         "The labels, one per line, in output order (default: "
                         "<data_dir>/labels.txt).")
flags.DEFINE_float("threshold", multilabel_data.THRESHOLD,
                   "A label is predicted where its probability is at least this.")
flags_common.define_export_flags(
    "Write a SavedModel here after training/eval: signatures 'serving_default' (token ids) "
    "and 'serve_text' (raw text; load with `import tensorflow_text`), and <export_dir>/ids/: "
    "the token-id signature alone, stock TensorFlow ops (tensorflow_model_server).")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    options = flags_common.options_from_flags(FLAGS)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.multilabel import multilabel_task
    multilabel_task.MultiLabelTask(options, FLAGS.data_dir, FLAGS.labels_file,
                                   FLAGS.threshold).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
