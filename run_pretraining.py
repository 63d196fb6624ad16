"""Pretrains BERT: masked LM + next sentence prediction, on any tf.distribute strategy.

The command is bert/cli/run_pretraining.py (`--help` shows its flags; installed, it is also
`bert-run-pretraining`).
"""

from bert.cli import run_pretraining

if __name__ == "__main__":
  run_pretraining.run()
