"""Scores SQuAD predictions with the official v1.1 / v2.0 definitions; prints their JSON.

The command is bert/cli/squad_evaluate.py (`--help` shows its flags; installed, it is also
`bert-squad-evaluate`).
"""

from bert.cli import squad_evaluate

if __name__ == "__main__":
  squad_evaluate.run()
