"""Dev-set scores of an export's LiteRT models, float32 against int8, without TensorFlow.

For a classifier or regression export (run_classifier.py --export_dir), runs the dev
set (read as --do_eval reads it) through each .tflite model of the export's litert/
folder with the predictor of predict_litert.py, and prints per model the task's GLUE
metrics (accuracy, F1, Pearson/Spearman, Matthews) and, against the first model
(float32 when present), how many predicted labels moved and the largest difference of a
probability (or score). Optionally a SavedModel's --do_eval figures to set beside them:
pass the run's eval_results.txt.

  python tools/litert_accuracy.py --litert_dir=/tmp/mrpc_export/litert \
    --task_name=mrpc --data_dir=$GLUE_DIR/MRPC [--eval_results=/tmp/mrpc/eval_results.txt]
    [--models=model_float32.tflite,model_int8.tflite,...] [--num_threads=N]

--models may name other .tflite files in the same folder (variants of the int8 model,
for example), each listed in model.json.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=wrong-import-position
import numpy as np  # noqa: E402

from bert import metrics  # noqa: E402
from bert.export import litert as litert_models  # noqa: E402
from bert.litert import predictor  # noqa: E402


def read_key_values(path):
  values = {}
  with open(path, encoding="utf-8") as handle:
    for line in handle:
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


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--litert_dir", required=True)
  parser.add_argument("--task_name", required=True)
  parser.add_argument("--data_dir", required=True)
  parser.add_argument("--eval_results", default=None)
  parser.add_argument("--models", default=None)
  parser.add_argument("--num_threads", type=int, default=None)
  parser.add_argument("--batch_size", type=int, default=32)
  args = parser.parse_args()
  with open(os.path.join(args.litert_dir, litert_models.METADATA_FILE),
            encoding="utf-8") as handle:
    listed = json.load(handle)["models"]
  names = (args.models.split(",") if args.models else
           [listed[p]["file"] for p in litert_models.PRECISIONS if p in listed])
  results, reference = [], None
  for name in names:
    model = predictor.load_model(os.path.join(args.litert_dir, name), args.num_threads)
    processor = predictor.classifier_processor(model, args.task_name)
    examples = processor.get_dev_examples(args.data_dir)
    outputs = predictor.predict_classifier(model, examples, args.batch_size)
    row = {"model": name, "rows": len(examples), **scores(processor, outputs, examples)}
    if reference is None:
      reference = outputs
    else:
      row["max_abs_diff_vs_first"] = float(np.max(np.abs(outputs - reference)))
      row["mean_abs_diff_vs_first"] = float(np.mean(np.abs(outputs - reference)))
      if not processor.is_regression:
        row["labels_moved_vs_first"] = int(np.sum(outputs.argmax(1) != reference.argmax(1)))
    results.append(row)
  if args.eval_results:
    evaluated = read_key_values(args.eval_results)
    results.insert(0, {"model": "SavedModel (--do_eval)", **{
        k[len("eval_"):]: v for k, v in evaluated.items()
        if k.startswith("eval_") and k != "eval_loss"}})
  for row in results:
    print(json.dumps(row, sort_keys=True))


if __name__ == "__main__":
  main()
