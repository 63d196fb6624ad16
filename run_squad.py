"""BERT fine-tuning and prediction on SQuAD v1.1 and v2.0 (the original's run_squad.py).

The command is bert/cli/run_squad.py (`--help` shows its flags; installed, it is also
`bert-run-squad`).
"""

from bert.cli import run_squad

if __name__ == "__main__":
  run_squad.run()
