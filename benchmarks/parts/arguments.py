"""The benchmarks' argument parser, under the commands' rules: a bad value or a misspelt
flag is one line naming it (with the valid values where they are few), exit status 2,
no usage block and no traceback."""

import argparse
import sys


class Parser(argparse.ArgumentParser):
  """argparse.ArgumentParser whose errors are one line and exit status 2; a flag is taken
  only as spelt whole (argparse would take --round for --rounds)."""

  def __init__(self, *args, **kwargs):
    kwargs.setdefault("allow_abbrev", False)
    super().__init__(*args, **kwargs)

  def error(self, message):
    sys.stderr.write(f"{self.prog}: error: {message}\n")
    sys.exit(2)


def positive_int(text):
  """argparse type: a whole number of at least 1 (a count of rounds or sentences)."""
  try:
    value = int(text)
  except ValueError:
    value = None
  if value is None or value < 1:
    raise argparse.ArgumentTypeError(f"{text!r}: a whole number of at least 1")
  return value


def names_in(valid, flag):
  """argparse type: a comma-separated list of names from `valid` (empty: none)."""
  def parse(text):
    names = [name for name in text.split(",") if name]
    unknown = [name for name in names if name not in valid]
    if unknown:
      raise argparse.ArgumentTypeError(
          f"unknown {', '.join(unknown)}; choose from {', '.join(valid)}")
    return names
  parse.__name__ = flag
  return parse
