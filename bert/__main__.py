"""`python -m bert`: which `bert` this is, where it is installed, and its commands.

The import name `bert` is also taken by other distributions (the original's TF1
`bert-tensorflow`, `bert-for-tf2`); this tells them apart without importing TensorFlow.
"""

import os
import sys

import bert
from bert import cli


def describe():
  return "\n".join([
      f"{bert.DISTRIBUTION} {bert.__version__}: Google's original BERT on TensorFlow 2 / Keras 3",
      f"imported from {os.path.dirname(os.path.abspath(bert.__file__))}",
      "commands (each also `python -m bert.cli.<command>`, or the root script in a clone):",
      *(f"  {cli.console_name(command)}" for command in cli.COMMANDS)])


if __name__ == "__main__":
  sys.stdout.write(describe() + "\n")
