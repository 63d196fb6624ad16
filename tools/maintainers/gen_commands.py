"""Writes what follows from the one list of commands, bert.cli.COMMANDS: the root script
each command has (`python run_classifier.py`) and pyproject.toml's [project.scripts]
(`bert-run-classifier`).

  python tools/maintainers/gen_commands.py           # write them (make commands)
  python tools/maintainers/gen_commands.py --check   # exit 1 naming what is stale

A root script is a few lines: its docstring is the first paragraph of its command
module's (bert/cli/<name>.py, read, not imported), so the two cannot drift. pyproject.toml
cannot import the package when it is built, so its table is written here and
tests/project/test_package.py checks it is current. Loads no TensorFlow.
"""

import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from bert import cli  # noqa: E402  pylint: disable=g-import-not-at-top

PYPROJECT = "pyproject.toml"
# pyproject.toml's table: its header, its lines and the blank lines after them (a comment
# or the next table ends it).
_SCRIPTS_TABLE = re.compile(r"^\[project\.scripts\]\n(?:[^\[#\n].*\n|\n)*", re.M)


def _read(path):
  with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
    return handle.read()


def summary(command):
  """The first paragraph of bert/cli/<command>.py's docstring, as written there."""
  doc = ast.get_docstring(ast.parse(_read(os.path.join("bert", "cli", f"{command}.py"))))
  if not doc:
    raise SystemExit(f"gen_commands.py: bert/cli/{command}.py has no docstring")
  return doc.split("\n\n")[0]


def root_script(command):
  """The text of the root script <command>.py."""
  return (f'"""{summary(command)}\n\n'
          f"The command is bert/cli/{command}.py (`--help` shows its flags; installed, it is also\n"
          f"`{cli.console_name(command)}`).\n"
          f'"""\n\n'
          f"from bert.cli import {command}\n\n"
          f'if __name__ == "__main__":\n'
          f"  {command}.run()\n")


def scripts_table():
  """pyproject.toml's [project.scripts] table, with the blank line after it."""
  return "[project.scripts]\n" + "".join(
      f'{cli.console_name(c)} = "bert.cli.{c}:run"\n' for c in cli.COMMANDS) + "\n"


def pyproject(text):
  """`text` (pyproject.toml) with its [project.scripts] table made from COMMANDS."""
  found = _SCRIPTS_TABLE.search(text)
  if not found:
    raise SystemExit(f"gen_commands.py: {PYPROJECT} has no [project.scripts] table")
  return text[:found.start()] + scripts_table() + text[found.end():].lstrip("\n")


def wanted():
  """{path relative to ROOT: the text it should hold}."""
  files = {f"{c}.py": root_script(c) for c in cli.COMMANDS}
  files[PYPROJECT] = pyproject(_read(PYPROJECT))
  return files


def stale():
  """The paths whose text differs from what COMMANDS makes (a missing file too)."""
  return [path for path, text in wanted().items()
          if not os.path.exists(os.path.join(ROOT, path)) or _read(path) != text]


def main():
  if sys.argv[1:] not in ([], ["--check"]):
    sys.stderr.write("gen_commands.py: error: the one flag is --check\n")
    return 2
  if sys.argv[1:] == ["--check"]:
    found = stale()
    if found:
      sys.stderr.write("stale (run `make commands`): " + ", ".join(found) + "\n")
    return 1 if found else 0
  for path, text in wanted().items():
    with open(os.path.join(ROOT, path), "w", encoding="utf-8") as handle:
      handle.write(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
