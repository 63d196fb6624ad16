"""Dev-set scores of an export's LiteRT models, float32 against int8, without TensorFlow.

For a classifier or regression export (run_classifier.py --export_dir), runs the dev
set (read as --do_eval reads it) through each .tflite model of the export's litert/
folder with the predictor of predict_litert.py, and prints one JSON line per model: the
task's GLUE metrics (accuracy, F1, Pearson/Spearman, Matthews) and, against the first
model (float32 when present), how many predicted labels moved and the largest and mean
difference of a probability (or score). With --eval_results (the run's
eval_results.txt), the SavedModel's --do_eval figures come first, to set beside them.

  python tools/litert_accuracy.py --litert_dir=/tmp/mrpc_export/litert \\
    --task_name=mrpc --data_dir=$GLUE_DIR/MRPC [--eval_results=/tmp/mrpc/eval_results.txt]
    [--models=model_float32.tflite,model_int8.tflite] [--num_threads=N]

Bad input (a missing folder, a model of another task, a dev file in the wrong format)
is one line naming it, exit status 2.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=wrong-import-position
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402

from bert import metrics  # noqa: E402
from bert.classifier import classifier_examples  # noqa: E402
from bert.cli import flags_common  # noqa: E402
from bert.cli import launch  # noqa: E402
from bert.formats import litert_metadata  # noqa: E402
from bert.litert import export_check  # noqa: E402
from bert.litert import predictor  # noqa: E402
from bert.utils import errors  # noqa: E402
from bert.utils import input_checks  # noqa: E402


def define_flags():
  flags_common.define_path("litert_dir", None,
                           "An export's litert/ folder (model.json and the .tflite files).")
  flags_common.define_path("data_dir", None, "The task's data folder (its dev file(s)).")
  flags.DEFINE_string("task_name", None, "The task of the files (run_classifier.py's).")
  flags_common.define_path("eval_results", None,
                           "The run's eval_results.txt: its --do_eval figures first.")
  flags.DEFINE_list("models", None,
                    "The .tflite files of --litert_dir to score (default: every model "
                    "model.json lists, float32 first).")
  flags.DEFINE_integer("num_threads", None, "LiteRT's threads (default: every CPU).")
  flags.DEFINE_integer("batch_size", 32, "Rows per call of the model.")
  flags_common.define_generic_task_flags()  # the tsv/csv task's columns, as at training
  flags_common.define_runtime_flags()
  for name in ("litert_dir", "data_dir", "task_name"):
    flags.mark_flag_as_required(name)


def read_key_values(path):
  values = {}
  for _, line in input_checks.read_text_lines(path):
    key, _, value = line.strip().partition(" = ")
    try:
      values[key] = float(value)
    except ValueError:
      pass
  return values


def scores(processor, outputs, examples):
  """The task's metrics of outputs (probabilities [N, K] or scores [N])."""
  if processor.is_regression:
    labels = np.array([float(e.label) for e in examples])
    return metrics.compute_metrics(processor.metric, outputs.astype(np.float64), labels)
  names = processor.get_labels()
  labels = np.array([names.index(e.label) for e in examples])
  return metrics.compute_metrics(processor.metric, outputs.argmax(axis=1), labels)


def rows(litert_dir, task_name, data_dir, models=None, eval_results=None, num_threads=None,
         batch_size=32, columns=None):
  """The JSON rows main() prints (the SavedModel's first, given eval_results)."""
  export_check.refuse_urls(
      {"litert_dir": litert_dir, "data_dir": data_dir, "eval_results": eval_results},
      "litert_accuracy.py", "run_classifier.py --do_eval")
  if not os.path.isdir(litert_dir):
    raise errors.UserError(f"--litert_dir={litert_dir}: no such folder")
  if not os.path.isfile(os.path.join(litert_dir, litert_metadata.METADATA_FILE)):
    raise errors.UserError(f"--litert_dir={litert_dir}: no {litert_metadata.METADATA_FILE}"
                                 "; an export's litert/ folder has one")
  listed = litert_metadata.read_metadata(
      os.path.join(litert_dir, litert_metadata.MODEL_FILES["float32"]))["models"]
  names = models or [listed[p]["file"] for p in litert_metadata.PRECISIONS if p in listed]
  files = sorted(entry["file"] for entry in listed.values())
  for name in names:
    if name not in files:
      raise errors.UserError(
          f"--models={','.join(names)}: {name} is not a model of --litert_dir={litert_dir} "
          f"(its model.json lists {', '.join(files)})")
  found, reference, encoded = [], None, None
  for name in names:
    # flag=None: this tool names the model by --litert_dir and --models, not --model.
    model = predictor.load_model(os.path.join(litert_dir, name), num_threads, flag=None)
    if encoded is None:  # the models of one folder share model.json and vocab.txt
      processor = predictor.classifier_processor(model, task_name, columns=columns)
      examples = processor.get_dev_examples(data_dir)
      encoded = [model.encode(e.text_a, e.text_b) for e in examples]
    outputs = model.predict(encoded, batch_size,
                            "score" if processor.is_regression else "probabilities")
    row = {"model": name, "rows": len(examples), **scores(processor, outputs, examples)}
    if reference is None:
      reference = outputs
    else:
      row["max_abs_diff_vs_first"] = float(np.max(np.abs(outputs - reference)))
      row["mean_abs_diff_vs_first"] = float(np.mean(np.abs(outputs - reference)))
      if not processor.is_regression:
        row["labels_moved_vs_first"] = int(np.sum(outputs.argmax(1) != reference.argmax(1)))
    found.append(row)
  if eval_results:
    input_checks.check_input_file(eval_results, "eval_results")
    evaluated = read_key_values(eval_results)
    found.insert(0, {"model": "SavedModel (--do_eval)", **{
        k[len("eval_"):]: v for k, v in evaluated.items()
        if k.startswith("eval_") and k != "eval_loss"}})
  return found


def main(_):
  with errors.report_user_errors(FLAGS.verbose, "litert_accuracy.py"):
    flags_common.check_positive(FLAGS, ("batch_size", "num_threads"))
    # Not given: the model's labels and regression (a different one is refused).
    columns = flags_common.settings_from_flags(classifier_examples.DelimitedFileOptions, FLAGS)
    for row in rows(FLAGS.litert_dir, FLAGS.task_name, FLAGS.data_dir, FLAGS.models,
                    FLAGS.eval_results, FLAGS.num_threads, FLAGS.batch_size, columns):
      print(json.dumps(row, sort_keys=True))


FLAGS = flags.FLAGS

if __name__ == "__main__":
  define_flags()
  launch.entry_point(main)()
