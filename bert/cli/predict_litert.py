"""Prediction files from a LiteRT model of an export, without TensorFlow.

Reads --data_dir's test file(s) as `run_classifier.py --do_predict` or
`run_multilabel.py --do_predict` does and writes the same files, with the pure-Python
tokenizer and the ai-edge-litert runtime (bert/litert/predictor.py). The model's task,
labels and tokenization come from model.json beside it, so a model of another task than
--task_name is refused. docs/serving.md shows the command."""

import time

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.cli import launch
from bert.training import run_options
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_path(
    "model", None,
    "The LiteRT model: a .tflite file of an export's litert/ folder (model_int8.tflite or "
    "model_float32.tflite), with model.json and vocab.txt beside it.")
flags_common.define_path(
    "data_dir", None,
    "The task's data folder: its test file(s) are read as --do_predict reads them "
    "(test.tsv of a GLUE task, test.tsv/test.csv of the tsv/csv task, a multi-label "
    "test.tsv).")
flags_common.define_flags(run_options.RunOptions, ("output_dir",), helps={
    "output_dir": "Where test_results.tsv (and the GLUE submission file) go."})
flags.DEFINE_string(
    "task_name", None,
    "The task of the files: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, xnli, "
    "tsv/csv, or multilabel. Default: the model's own (model.json). A model of another "
    "task is refused.")
flags.DEFINE_string("xnli_language", None,
                    "XNLI: the language to predict (default: the model's).")
# Declared with the other batch sizes (RunOptions); LiteRT's calls take more rows.
flags_common.define_flags(run_options.RunOptions, ("predict_batch_size",),
                          defaults={"predict_batch_size": 32}, helps={
    "predict_batch_size": "Rows per call of the model; each batch holds rows of similar "
                          "length and is padded only to its longest row."})
flags.DEFINE_integer("num_threads", None,
                     "CPU threads of the LiteRT interpreter (default: the CPUs this "
                     "process may use).")
flags_common.define_generic_task_flags()
flags_common.define_runtime_flags()
flags.mark_flag_as_required("model")
flags.mark_flag_as_required("data_dir")


# Every path this command reads or writes (all local: the LiteRT runtime opens files).
PATH_FLAGS = ("model", "data_dir", "output_dir")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_positive(FLAGS, ("predict_batch_size", "num_threads"))
    from bert.litert import export_check  # pylint: disable=g-import-not-at-top
    export_check.refuse_urls({name: FLAGS[name].value for name in PATH_FLAGS},
                             "predict_litert.py", "run_classifier.py --do_predict")
    flags_common.check_paths(FLAGS)  # every output path, before any work
    from bert.classifier import classifier_examples  # deferred: --help stays fast
    from bert.litert import predictor
    started = time.perf_counter()
    # Not given: the model's labels and regression (a different one is refused).
    columns = flags_common.settings_from_flags(classifier_examples.DelimitedFileOptions, FLAGS)
    written = predictor.predict_files(
        FLAGS.model, FLAGS.data_dir, FLAGS.output_dir, task_name=FLAGS.task_name,
        batch_size=FLAGS.predict_batch_size, num_threads=FLAGS.num_threads,
        xnli_language=FLAGS.xnli_language, columns=columns, log=logging.info)
    for path in written:
      logging.info("Wrote %s", path)
    logging.info("Predicted in %.1f s", time.perf_counter() - started)


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
