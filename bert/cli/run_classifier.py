"""BERT fine-tuning runner for sentence (pair) classification: GLUE, XNLI, your own TSV/CSV.

The original's command line works unchanged. Tasks: the GLUE tasks, xnli
(--xnli_language), and tsv/csv for your own files (--text_a_column, --label_column, ...);
docs/classifier.md shows the commands and the outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_model_flags()
flags_common.define_normalize_flag("before tokenizing, here and in the exported serve_text "
                                   "signature")
flags_common.define_run_flags()
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_finetuning_flags(
    data_dir_help="The input data dir. Should contain the .tsv files (or other data files) "
    "for the task.", train_limit=False, eval_limit=False)
flags.DEFINE_string("task_name", None,
                    "The name of the task to train: cola, sst2, mrpc, stsb, qqp, mnli, qnli, "
                    "rte, wnli, xnli, or tsv/csv for your own files.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language to train and evaluate on.")
flags.DEFINE_bool(
    "fixed_padding", False,
    "Pad every batch to max_seq_length (static shapes, for TPUs). Default: pad each batch "
    "only to its longest row (training batches rounded up to a multiple of 8 with "
    "--enable_xla, which compiles every shape).")
flags_common.define_export_flags(
    "Write a SavedModel here after training/eval: signatures 'serving_default' (token ids) "
    "and 'serve_text' (raw text; load with `import tensorflow_text`), and <export_dir>/ids/: "
    "'serving_default' alone, of stock TensorFlow ops (saved_model_cli, TF Serving).")
# The generic tsv/csv task (users' own data): <data_dir>/{train,dev,test}.{tsv,csv}.
flags_common.define_generic_task_flags()

flags.mark_flag_as_required("task_name")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    options = flags_common.options_from_flags(FLAGS)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.classifier import classifier_examples
    from bert.classifier import classifier_task
    columns = flags_common.settings_from_flags(classifier_examples.GenericColumns, FLAGS)
    processor = classifier_task.make_processor(FLAGS.task_name, FLAGS.data_dir,
                                               FLAGS.xnli_language, columns)
    classifier_task.ClassifierTask(options, processor, FLAGS.data_dir,
                                   fixed_padding=FLAGS.fixed_padding).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
