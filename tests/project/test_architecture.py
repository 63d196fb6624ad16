"""What docs/ARCHITECTURE.md says, held here: tests and benchmarks import the library,
never a command (bert/cli/<command>.py, one per name of bert.cli.COMMANDS); a command is
run the way a user runs it, from its command line. Each module is described once, in its
docstring: docs/MODULES.md is what tools/maintainers/gen_module_list.py makes of the
docstrings now, and every file ARCHITECTURE.md names exists.

Why: a test that imports a command's module drives its main() with flags set by hand,
not with what a user types, and ties the test to the module's insides; the library has
the same work as functions of plain arguments.
"""
import ast
import os
import re
import subprocess
import sys
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


def _generated_module_list():
  result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "maintainers",
                                                        "gen_module_list.py")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
  assert result.returncode == 0, result.stderr[-2000:]
  return result.stdout


def test_module_list_is_current_and_names_every_module_once():
  page = _generated_module_list()
  with open(os.path.join(ROOT, "docs", "MODULES.md"), encoding="utf-8") as handle:
    assert page == handle.read(), "docs/MODULES.md is stale: run `make docs`"
  rows = re.findall(r"^\| `(bert/[\w/]+\.py)` \| (.*) \| (.*) \|$", page, re.M)
  paths = [path for path, _, _ in rows]
  on_disk = sorted(os.path.relpath(path, ROOT) for path in python_files("bert"))
  assert sorted(paths) == on_disk
  # Each row carries its docstring's words and its public names, read from the source.
  row = dict((path, (what, names)) for path, what, names in rows)
  assert row["bert/utils/paths.py"][0].startswith("A user's path named")
  assert "`join`" in row["bert/utils/paths.py"][1]
  assert "`_" not in "".join(names for _, _, names in rows)  # no private name
  assert page.index("## Level 0:") < page.index("`bert/utils/paths.py`") < \
      page.index("## Level 1:") < page.index("`bert/tokenization.py`") < page.index("## Level 2:")
  assert "`bert/__main__.py`" in page[page.index("## Level 7:"):]


def test_a_module_without_a_docstring_shows_as_such(tmp_path):
  """The page is made from the source alone: an undescribed module has an empty cell."""
  sys.path.insert(0, os.path.join(ROOT, "tools", "maintainers"))
  try:
    import gen_module_list  # pylint: disable=g-import-not-at-top
  finally:
    sys.path.pop(0)
  (tmp_path / "m.py").write_text('"""First | line\nwraps.\n\nMore."""\ndef f(): pass\n'
                                 'def _g(): pass\nclass C: pass\n', encoding="utf-8")
  (tmp_path / "n.py").write_text("x = 1\n", encoding="utf-8")
  old, gen_module_list.ROOT = gen_module_list.ROOT, str(tmp_path)
  try:
    assert gen_module_list.summary("m.py") == ("First | line wraps.", ["f", "C"])
    assert gen_module_list.summary("n.py") == ("", [])
  finally:
    gen_module_list.ROOT = old
  assert gen_module_list._cell("a | b") == "a \\| b"  # pylint: disable=protected-access


def test_every_file_the_architecture_page_names_exists():
  """A file or folder ARCHITECTURE.md names in backticks is in the tree (under bert/,
  benchmarks/, tests/ or tools/, or at the root): the page names no module that is gone."""
  with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), encoding="utf-8") as handle:
    text = handle.read()
  named = set(re.findall(r"`([\w/.-]+\.py)`", text))
  assert len(named) > 20, named
  everywhere = [os.path.relpath(path, ROOT) for folder in ("bert", "benchmarks", "tests", "tools")
                for path in python_files(folder)] + os.listdir(ROOT)
  missing = [name for name in sorted(named)
             if not any(path == name or path.endswith("/" + name) for path in everywhere)]
  assert missing == []


def test_tools_readme_lists_every_tool_under_its_audience():
  """tools/README.md names each script of tools/ in its users' table and each of
  tools/maintainers/ in the maintainers' one, and nothing that is not there."""
  with open(os.path.join(ROOT, "tools", "README.md"), encoding="utf-8") as handle:
    text = handle.read()
  users, maintainers = text.split("\n## For users\n", 1)[1].split("\n## For maintainers", 1)
  listed = lambda part: sorted(re.findall(r"^\| `(tools/[\w/]+\.py)` \|", part, re.M))
  on_disk = lambda folder: sorted(f"{folder}/{name}" for name in os.listdir(
      os.path.join(ROOT, *folder.split("/"))) if name.endswith(".py"))
  assert listed(users) == on_disk("tools")
  assert listed(maintainers) == on_disk("tools/maintainers")
