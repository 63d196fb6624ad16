"""docs/adding_a_task.md against the repository: its list of every place a new script
touches (each place checked for every script there is, and shown to catch a fake
script's missing row), and its eval_loss definitions word for word as
finetune.Task.evaluate's."""
import ast
import os
import re
import shutil

import pytest

from conftest import ROOT

RECIPE = os.path.join("docs", "adding_a_task.md")


def _read(root, path):
  with open(os.path.join(root, path), encoding="utf-8") as handle:
    return handle.read()


def _literal(root, path, name):
  """The value of the module-level literal `name = ...` in a Python file (not imported)."""
  for node in ast.parse(_read(root, path)).body:
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
      return ast.literal_eval(node.value)
  raise AssertionError(f"{path} has no {name}")


def _catalogue_files(root):
  """The bad-input catalogue's files: tests/reliability/test_*.py (a script's cases may be
  in its own section of test_each_command.py or in a table row of another file)."""
  folder = os.path.join(root, "tests", "reliability")
  return [os.path.join("tests", "reliability", name) for name in sorted(os.listdir(folder))
          if name.startswith("test_") and name.endswith(".py")]


# Each place of the recipe's table: is `script` (run_x.py) named there, as the recipe says?
PLACES = {
    "README.md": lambda root, script: any(
        line.startswith("|") and f"`{script}`" in line
        for line in _read(root, "README.md").splitlines()),
    "bert/cli/__init__.py": lambda root, script: script[:-3] in _literal(
        root, "bert/cli/__init__.py", "COMMANDS"),
    "pyproject.toml": lambda root, script: re.search(
        rf'^bert-{script[:-3].replace("_", "-")} = "bert\.cli\.{script[:-3]}:run"$',
        _read(root, "pyproject.toml"), re.M) is not None,
    "docs/FLAGS.md": lambda root, script: f"\n## {script}\n" in _read(root, "docs/FLAGS.md"),
    "tests/reliability/test_each_command.py": lambda root, script: (
        any(re.search(rf'(@case|row)\("{re.escape(script)}"', _read(root, path))
            for path in _catalogue_files(root))
        or script in _literal(root, "tests/reliability/test_each_command.py",
                              "TESTED_ELSEWHERE")),
}


def _recipe_places(root):
  """The first column of the recipe's table under "Every place a new script touches"."""
  text = _read(root, RECIPE)
  section = text[text.index("\n## Every place a new script touches"):]
  section = section[:section.index("\n## ", 1)]
  return [re.match(r"\| `([^`]+)` \|", line).group(1) for line in section.splitlines()
          if line.startswith("| `")]


def _scripts(root):
  return sorted(name for name in os.listdir(root) if name.endswith(".py") and
                'if __name__ == "__main__":' in _read(root, name))


def test_the_recipe_lists_exactly_the_places_checked_here():
  assert _recipe_places(ROOT) == list(PLACES)


def test_every_script_is_in_every_place():
  scripts = _scripts(ROOT)
  assert "run_tagger.py" in scripts and len(scripts) == 17
  missing = [(script, place) for script in scripts for place, named in PLACES.items()
             if not named(ROOT, script)]
  assert missing == []


def _add_fake_rows(root, skip=None):
  """Writes run_fake.py (with its fake_task) and its rows in every place but `skip`."""
  with open(os.path.join(root, "run_fake.py"), "w", encoding="utf-8") as handle:
    handle.write('"""A fake task."""\n\nfrom bert.cli import run_fake\n\n'
                 'if __name__ == "__main__":\n  run_fake.main(None)\n')
  os.makedirs(os.path.join(root, "bert", "cli"), exist_ok=True)
  with open(os.path.join(root, "bert", "cli", "run_fake.py"), "w", encoding="utf-8") as handle:
    handle.write('"""A fake task."""\n\n\ndef main(_):\n  from bert.fake import fake_task\n')

  def edit(path, old, new):
    text = _read(root, path)
    assert old in text, (path, old)
    with open(os.path.join(root, path), "w", encoding="utf-8") as handle:
      handle.write(text.replace(old, new, 1))

  rows = {
      "README.md": ("| `run_tagger.py` |", "| `run_fake.py` | a fake | - |\n| `run_tagger.py` |"),
      "bert/cli/__init__.py": ('"run_tagger",', '"run_tagger", "run_fake",'),
      "pyproject.toml": ('bert-run-tagger = "bert.cli.run_tagger:run"\n',
                         'bert-run-tagger = "bert.cli.run_tagger:run"\n'
                         'bert-run-fake = "bert.cli.run_fake:run"\n'),
      "docs/FLAGS.md": ("\n## run_tagger.py\n", "\n## run_fake.py\n\n## run_tagger.py\n"),
      "tests/reliability/test_each_command.py": ("# ---- run_tagger.py\n",
                                                 '@case("run_fake.py")\n# ---- run_tagger.py\n'),
  }
  assert list(rows) == list(PLACES)
  for place, (old, new) in rows.items():
    if place != skip:
      path = place.split()[0]
      edit(path, old, new)


@pytest.fixture
def copy(tmp_path):
  """The files the places live in, copied to tmp_path with their folders."""
  for path in ("README.md", "bert/cli/__init__.py", "pyproject.toml",
               "docs/FLAGS.md", "tests/reliability/test_each_command.py", RECIPE):
    os.makedirs(tmp_path / os.path.dirname(path), exist_ok=True)
    shutil.copy(os.path.join(ROOT, path), tmp_path / path)
  return str(tmp_path)


def test_a_fake_scripts_rows_satisfy_every_place(copy):
  _add_fake_rows(copy)
  assert [place for place, named in PLACES.items() if not named(copy, "run_fake.py")] == []


@pytest.mark.parametrize("left_out", list(PLACES))
def test_each_place_catches_a_fake_script_left_out_of_it(copy, left_out):
  _add_fake_rows(copy, skip=left_out)
  assert [place for place, named in PLACES.items()
          if not named(copy, "run_fake.py")] == [left_out]


def _eval_loss_definitions(text):
  start = text.index("eval_loss is the training loss's twin")
  end = text.index("no eval_loss.", start) + len("no eval_loss.")
  return " ".join(text[start:end].split())


def _task_evaluate_docstring(root):
  """finetune.Task.evaluate's docstring (read from the source, not imported)."""
  tree = ast.parse(_read(root, os.path.join("bert", "training", "finetune.py")))
  (task,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Task"]
  (evaluate,) = [node for node in task.body
                 if isinstance(node, ast.FunctionDef) and node.name == "evaluate"]
  return ast.get_docstring(evaluate)


def test_the_recipe_and_finetune_define_eval_loss_word_for_word():
  docstring = _task_evaluate_docstring(ROOT)
  recipe = _eval_loss_definitions(_read(ROOT, RECIPE))
  assert recipe == _eval_loss_definitions(docstring)
  assert "one label per word (NER, tagging_task)" in recipe
