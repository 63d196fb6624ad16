"""`python -m bert`: which `bert` this is, where it is installed, and its commands;
`python -m bert <command> [flags]` runs one of them (as `bert-<command>` does).

The import name `bert` is also taken by other distributions (the original's TF1
`bert-tensorflow`, `bert-for-tf2`); this tells them apart without importing TensorFlow.
"""

import importlib
import os
import sys

import bert
from bert import cli

USAGE = "python -m bert <command> [flags]"


def describe():
  return "\n".join([
      f"{bert.DISTRIBUTION} {bert.__version__}: Google's original BERT on TensorFlow 2 / Keras 3",
      f"imported from {os.path.dirname(os.path.abspath(bert.__file__))}",
      f"commands (run one: `{USAGE}`; each also `python -m bert.cli.<command>`, its "
      "console script below, or the root script in a clone):",
      *(f"  {cli.console_name(command)}" for command in cli.COMMANDS)])


def command_of(word):
  """The command a word names: run_classifier, run-classifier, bert-run-classifier and
  run_classifier.py all name run_classifier; None for none."""
  name = word[:-3] if word.endswith(".py") else word
  name = name[len("bert-"):] if name.startswith("bert-") else name
  name = name.replace("-", "_")
  return name if name in cli.COMMANDS else None


def main(argv):
  """Exit status: 0 for the description, 2 for a word that is not a command; a command
  exits as it does."""
  if len(argv) < 2 or argv[1] in ("-h", "--help", "-help", "help"):
    sys.stdout.write(describe() + "\n")
    return 0
  command = command_of(argv[1])
  if command is None:
    what = ("flags come after the command" if argv[1].startswith("-")
            else f"{argv[1]!r} is not a command")
    sys.stderr.write(f"python -m bert: error: {what}: {USAGE}, the command one of "
                     f"{', '.join(cli.COMMANDS)}\n")
    return 2
  # The command sees itself as its console script: its messages and --help name it so.
  sys.argv = [cli.console_name(command), *argv[2:]]
  importlib.import_module(f"bert.cli.{command}").run()
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
