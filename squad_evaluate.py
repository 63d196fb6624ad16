"""Scores SQuAD predictions with the official v1.1 / v2.0 definitions; prints their JSON.

  python squad_evaluate.py dev-v1.1.json out/predictions.json
  python squad_evaluate.py dev-v2.0.json out/predictions.json --na-prob-file out/null_odds.json

The version comes from the data file's "version" field ("1.1" → evaluate-v1.1.py's
output, "v2.0" → evaluate-v2.0.py's); --squad-version forces one. The command line is
the official scripts' (positional data and prediction files, hyphenated options,
-o/-n/-t), so commands written for them run unchanged; --out-image-dir (precision-recall
plots, which need matplotlib) is not provided.

The command is bert/cli/squad_evaluate.py.
"""

from absl import app

from bert.cli import squad_evaluate

if __name__ == "__main__":
  app.run(squad_evaluate.main)
