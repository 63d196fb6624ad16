"""What docs/ARCHITECTURE.md says of the tests, held here: tests and benchmarks import the
library, never a command (bert/cli/<command>.py, one per name of bert.cli.COMMANDS); a
command is run the way a user runs it, from its command line.

Why: a test that imports a command's module drives its main() with flags set by hand,
not with what a user types, and ties the test to the module's insides; the library has
the same work as functions of plain arguments.
"""
import ast
import os
import textwrap

from conftest import ROOT

from bert import cli

COMMANDS = {f"bert.cli.{name}" for name in cli.COMMANDS}


def python_files(folder):
  """Every .py file under ROOT/folder."""
  for parent, dirs, names in os.walk(os.path.join(ROOT, folder)):
    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
    for name in sorted(names):
      if name.endswith(".py"):
        yield os.path.join(parent, name)


def _imported(tree):
  """[(module name, line)] of every import in `tree` (a `from` import also names each
  imported name as a module, since it may be one)."""
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      found += [(alias.name, node.lineno) for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      found += [(node.module, node.lineno)] + [
          (f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
  return found


def _code_strings(tree):
  """(parsed code, line) of each string constant in `tree` that is Python code with an
  import in it: the source of a subprocess the file starts (`python -c`, a driver)."""
  for node in ast.walk(tree):
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        "import " in node.value:
      try:
        yield ast.parse(textwrap.dedent(node.value)), node.lineno
      except SyntaxError:
        continue


def commands_imported(path, commands):
  """[(command module, line)] of every import of a command in the file, in any form
  (`import bert.cli.x`, `from bert.cli import x`, `from bert.cli.x import y`): at the
  top, inside a function, or in the code of a subprocess the file starts."""
  with open(path, encoding="utf-8") as handle:
    tree = ast.parse(handle.read())
  imports = _imported(tree) + [(name, line) for code, line in _code_strings(tree)
                               for name, _ in _imported(code)]
  found = {(command, line) for name, line in imports for command in commands
           if name == command or name.startswith(command + ".")}
  return sorted(found, key=lambda item: (item[1], item[0]))


def test_tests_and_benchmarks_import_no_command():
  found = [f"{os.path.relpath(path, ROOT)}:{line} imports {command}"
           for folder in ("tests", "benchmarks") for path in python_files(folder)
           for command, line in commands_imported(path, COMMANDS)]
  assert found == []


# {cli} keeps this sample from being code that imports a command itself.
_EVERY_FORM = """import {cli}.run_squad
from {cli} import flags_common, run_ner
from bert import cli
def f():
  from {cli}.export_encoder import main
DRIVER = '''
    import sys
    from {cli} import run_classifier
'''
CHECK = 'import sys; from {cli} import flags_common'
"""


def test_every_form_of_importing_a_command_is_found(tmp_path):
  path = tmp_path / "test_x.py"
  path.write_text(_EVERY_FORM.format(cli="bert.cli"), encoding="utf-8")
  assert commands_imported(str(path), COMMANDS) == [
      ("bert.cli.run_squad", 1), ("bert.cli.run_ner", 2), ("bert.cli.export_encoder", 5),
      ("bert.cli.run_classifier", 6)]
