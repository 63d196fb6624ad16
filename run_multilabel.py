"""BERT fine-tuning for multi-label classification: any number of labels per text.

The command is bert/cli/run_multilabel.py (`--help` shows its flags; installed, it is also
`bert-run-multilabel`).
"""

from bert.cli import run_multilabel

if __name__ == "__main__":
  run_multilabel.run()
