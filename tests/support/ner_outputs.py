"""run_ner.py's output files checked against their input and against conlleval: every
input word and column kept in the predictions, the scores conlleval's on them."""
import os

import pytest

from bert.tagging import tagging_conlleval
from bert.tagging import tagging_data
from script_runs import read_key_values


def read_predictions(path):
  """Sentences of (fields) from a conlleval-format predictions file."""
  sentences, current = [], []
  for line in open(path, encoding="utf-8"):
    if not line.strip():
      if current:
        sentences.append(current)
      current = []
    else:
      current.append(line.split())
  return sentences


def check_ner_outputs(out, conll_dir, prefix, results_file, key):
  """Predictions keep every input word and column; scores equal conlleval's on the file."""
  gold = tagging_data.read_conll(os.path.join(conll_dir, "valid.txt" if prefix == "dev"
                                          else "test.txt"))
  written = read_predictions(os.path.join(out, f"{prefix}_predictions.txt"))
  assert [[f[:-1] for f in s] for s in written] == [
      [[w] + c + [t] for w, c, t in zip(e.words, e.columns, e.labels)] for e in gold]
  metrics = tagging_conlleval.conll_evaluate([[f[-2] for f in s] for s in written],
                                    [[f[-1] for f in s] for s in written])
  results = read_key_values(os.path.join(out, results_file))
  assert results[f"{key}_f1"] == pytest.approx(metrics["f1"])
  assert results[f"{key}_accuracy"] == pytest.approx(metrics["accuracy"])
  report = open(os.path.join(out, f"{prefix}_conlleval.txt"), encoding="utf-8").read()
  assert report == tagging_conlleval.conlleval_report(metrics)
  return results
