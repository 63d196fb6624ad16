"""The whole BERT pipeline, end to end, on data any Python has offline (`make demo`).

The command is bert/cli/quickstart.py (`--help` shows its flags; installed, it is also
`bert-quickstart`).
"""

from bert.cli import quickstart

if __name__ == "__main__":
  quickstart.run()
