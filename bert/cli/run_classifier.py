"""BERT fine-tuning runner for sentence (pair) classification: GLUE, XNLI, your own TSV/CSV.

The original's command line works unchanged. Tasks: the GLUE tasks, xnli
(--xnli_language), and tsv/csv for your own files (--text_a_column, --label_column, ...);
docs/classifier.md shows the commands and the outputs."""

from absl import flags

from bert.classifier import classifier_data
from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_training_flags()
flags_common.define_normalize_flag("before tokenizing, here and in the exported serve_text "
                                   "signature")

flags_common.define_finetuning_flags(
    data_dir_help="The input data dir. Should contain the .tsv files (or other data files) "
    "for the task.", train_limit=False, eval_limit=False)
flags_common.define_flags(classifier_data.ClassifierOptions)
flags_common.define_export_flags(
    "Write a SavedModel here after training/eval: signatures 'serving_default' (token ids) "
    "and 'serve_text' (raw text; load with `import tensorflow_text`), and <export_dir>/ids/: "
    "'serving_default' alone, of stock TensorFlow ops (saved_model_cli, TF Serving).")
# The generic tsv/csv task (users' own data): <data_dir>/{train,dev,test}.{tsv,csv}.
flags_common.define_generic_task_flags()


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    options = flags_common.options_from_flags(FLAGS)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.classifier import classifier_examples
    from bert.classifier import classifier_task
    columns = flags_common.settings_from_flags(classifier_examples.DelimitedFileOptions, FLAGS)
    task = flags_common.settings_from_flags(classifier_data.ClassifierOptions, FLAGS)
    processor = classifier_task.make_processor(task.task_name, FLAGS.data_dir,
                                               task.xnli_language, columns)
    classifier_task.ClassifierTask(options, processor, FLAGS.data_dir,
                                   fixed_padding=task.fixed_padding).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
