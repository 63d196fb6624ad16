"""Tiny models' --do_predict and --export_dir runs (LiteRT models on by default) on the
synthetic task folders of litert_data.py: MRPC pairs (classification, GLUE submission
file), a csv regression task read through the column flags (exported as version 3) and
multi-label lines. The session fixtures litert_mrpc_run and litert_runs (tests/conftest.py)
run them once for the converter's tests (tests/formats/test_litert_convert.py) and the
predictor's (tests/litert/test_predictor.py)."""
import os
import subprocess
import sys

import numpy as np

from conftest import ROOT
import litert_data
import tiny

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
# One layer: the predictor answers as --do_predict for any depth, and exporting and
# converting (most of these runs' time) grows with the layers.
LAYERS = 1

TASKS = {
    "mrpc": dict(script="run_classifier.py", folder="mrpc", export="litert",
                 flags=["--task_name=mrpc"], results=["test_results.tsv", "MRPC.tsv"]),
    "regression": dict(script="run_classifier.py", folder="reg", export="litert/3",
                       flags=["--task_name=csv", "--regression", "--has_header",
                              "--text_a_column=s1", "--text_b_column=s2",
                              "--label_column=score", "--export_version=3"],
                       results=["test_results.tsv"]),
    "multilabel": dict(script="run_multilabel.py", folder="ml", export="litert",
                       flags=[], results=["test_results.tsv"]),
}

# What each task's checkpoint records (finetune.Task.head_info), and its outputs.
HEADS = {"mrpc": ({"task": "Mrpc", "head": "classifier", "labels": ["0", "1"]}, 2),
         "regression": ({"task": "DelimitedFile", "head": "regression"}, 1),
         "multilabel": ({"task": "multi_label", "head": "multi_label",
                         "labels": litert_data.ML_LABELS, "threshold": 0.5}, 3)}


def _checkpoint(output_dir, task, seed):
  """output_dir holding a classifier checkpoint as a training run leaves it, with weights
  drawn from N(0, 0.25): a tiny model trained from scratch for seconds predicts the same
  probabilities for every row, these differ from row to row (and by class)."""
  from bert import heads  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  head_info, outputs = HEADS[task]
  model, _ = heads.build_classifier_model(
      tiny.tiny_config(len(litert_data.VOCAB), num_hidden_layers=LAYERS), outputs)
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    if len(variable.shape) >= 2:
      variable.assign(rng.normal(0, 0.25, variable.shape).astype("float32"))
  checkpoints.RunCheckpoint(str(output_dir), model, head_info=head_info).save()


def task_folders(root):
  """Writes the tasks' folders, vocabulary and tiny config under `root`; returns it."""
  litert_data.write_vocab(root / "vocab.txt")
  tiny.write_tiny_config(root / "bert_config.json", len(litert_data.VOCAB),
                         num_hidden_layers=LAYERS)
  litert_data.mrpc_folder(root / "mrpc")
  litert_data.regression_folder(root / "reg")
  litert_data.multilabel_folder(root / "ml")
  return root


def predict_and_export(root, tasks):
  """{task: (data folder, output_dir, litert folder)}: each task's --do_predict and
  --export_dir (LiteRT models by default) in one process, the tasks at once."""
  processes = {}
  for task in tasks:
    spec, out = TASKS[task], root / f"out-{task}"
    _checkpoint(out, task, list(TASKS).index(task))
    command = [sys.executable, os.path.join(ROOT, spec["script"]), *spec["flags"],
               f"--data_dir={root / spec['folder']}", f"--vocab_file={root / 'vocab.txt'}",
               f"--bert_config_file={root / 'bert_config.json'}", "--do_predict",
               "--max_seq_length=32", "--predict_batch_size=5", f"--output_dir={out}",
               f"--export_dir={out}/export"]
    processes[task] = (subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, env=ENV,
                                        cwd=ROOT), out)
  found = {}
  for task, (process, out) in processes.items():
    _, stderr = process.communicate(timeout=900)
    assert process.returncode == 0, stderr[-3000:]
    found[task] = (root / TASKS[task]["folder"], out,
                   out / "export" / TASKS[task]["export"])
  return found
