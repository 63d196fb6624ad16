"""BERT fine-tuning runner for sentence (pair) classification: GLUE, XNLI, your own TSV/CSV.

The command is bert/cli/run_classifier.py (`--help` shows its flags; installed, it is also
`bert-run-classifier`).
"""

from bert.cli import run_classifier

if __name__ == "__main__":
  run_classifier.run()
