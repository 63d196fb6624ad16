"""Scores SQuAD predictions with the official v1.1 / v2.0 definitions; prints their JSON.

The command line is the official scripts' (positional data and prediction files,
hyphenated options), so commands written for them run unchanged; the version comes from
the data file's "version" field (--squad-version forces one). --out-image-dir
(precision-recall plots) is not provided."""

import json
import math
import sys

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.squad import squad_metrics
from bert.utils import atomic_output
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks

flags_common.define_runtime_flags()
flags_common.define_path("out-file", None,
                         "Write the accuracy metrics to this file (default: print to stdout).",
                         short_name="o", output="file")
flags_common.define_path("na-prob-file", None,
                         "Model estimates of the probability of no answer (run_squad's "
                         "null_odds.json); adds best_exact/best_f1 and their thresholds.",
                         short_name="n")
flags.DEFINE_float("na-prob-thresh", 1.0,
                   "Predict \"\" if the no-answer probability exceeds this (v2.0).",
                   short_name="t")
flags.DEFINE_enum("squad-version", "auto", ["auto", "1.1", "2.0"],
                  "Which official script to reproduce; auto reads the data file's "
                  "\"version\" field.")

FLAGS = flags.FLAGS


def _warn(message):
  print(message, file=sys.stderr)


def evaluate_files(data_file, pred_file, na_prob_file=None, na_prob_thresh=1.0,
                   version="auto", warn=_warn):
  """Scores a predictions file against a SQuAD data file; returns (version, results)."""
  dataset_json = squad_metrics.load_json(data_file, "SQuAD data file")
  dataset = squad_metrics.check_dataset(dataset_json, data_file)
  preds = squad_metrics.check_answer_map(
      squad_metrics.load_json(pred_file, "predictions file"), pred_file, "predictions file")
  if version == "auto":
    version = squad_metrics.dataset_version(dataset_json)
  if version == "1.1":
    if dataset_json.get("version") != "1.1":
      warn(f"Evaluation expects v-1.1, but got dataset with v-{dataset_json.get('version')}")
    if na_prob_file:
      warn("--na-prob-file is ignored for SQuAD v1.1 scoring")
    return version, squad_metrics.evaluate_v1(dataset, preds, warn=warn)
  na_probs = None
  if na_prob_file:
    na_probs = squad_metrics.check_answer_map(
        squad_metrics.load_json(na_prob_file, "no-answer probability file"),
        na_prob_file, "no-answer probability file")
  return version, squad_metrics.evaluate_v2(dataset, preds, na_probs=na_probs,
                                            na_prob_thresh=na_prob_thresh, warn=warn)


def main(argv):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    args = argv[1:]
    if len(args) != 2:
      raise errors.UserError(
          "usage: squad_evaluate.py DATA.json PREDICTIONS.json [--na-prob-file "
          f"null_odds.json] [--out-file eval.json] (got {len(args)} positional arguments)")
    # A quoted "~/dev.json" reaches us unexpanded, as every path flag's `~` does.
    data_file, pred_file = (paths.expand(arg) for arg in args)
    input_checks.check_input_file(data_file, "data_file")
    input_checks.check_input_file(pred_file, "pred_file")
    threshold = FLAGS["na-prob-thresh"].value
    if not math.isfinite(threshold):  # every comparison with NaN is false
      raise errors.UserError(f"--na-prob-thresh={threshold}: must be a finite number")
    if FLAGS["na-prob-file"].value:
      input_checks.check_input_file(FLAGS["na-prob-file"].value, "na-prob-file")
    version, results = evaluate_files(
        data_file, pred_file, na_prob_file=FLAGS["na-prob-file"].value,
        na_prob_thresh=FLAGS["na-prob-thresh"].value, version=FLAGS["squad-version"].value)
    out_file = FLAGS["out-file"].value
    if out_file:
      with atomic_output.atomic_open(out_file) as handle:
        json.dump(results, handle)
    elif version == "1.1":
      print(json.dumps(results))
    else:
      print(json.dumps(results, indent=2))


run = launch.entry_point(main, arguments=True)

if __name__ == "__main__":
  run()
