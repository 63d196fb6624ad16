"""The package's layering, read from the import graph: imports only go down.

Levels, bottom to top (docs/ARCHITECTURE.md draws them):
  0 bert.utils     small utilities (files, user errors, atomic output, progress, ...)
  1 bert           the core: modeling, heads, tokenization, optimization, metrics, ...
  2 bert.formats    formats a model leaves in (SavedModel, TF-Hub, Hugging Face)
  3 bert.training  the loop, strategies, checkpoints, the fine-tuning driver
  4 task families  bert.classifier, .squad, .tagging, .swag, .multilabel, .pretraining,
                   .extraction: each imports levels 0-3, never another family
  5 bert.litert    prediction with an export's LiteRT models, without TensorFlow: it reads
                   and writes the classifier's and multi-label's files with their own
                   modules (bert.classifier, bert.multilabel), so it stands above them
  6 bert.cli       the commands
  7 bert.__main__  `python -m bert`: which bert this is, and its commands
A module may import its own package's modules (the graph inside a package has no cycle) and
any package on a lower level; nothing else. A new upward or sideways import fails here
with the two module names.
"""
import ast
import os

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "bert")
LEVELS = {"bert.utils": 0, "bert": 1, "bert.formats": 2, "bert.training": 3,
          "bert.classifier": 4, "bert.squad": 4, "bert.tagging": 4, "bert.swag": 4,
          "bert.multilabel": 4, "bert.pretraining": 4, "bert.extraction": 4,
          "bert.adaptation": 4,
          "bert.litert": 5, "bert.cli": 6}
# Modules that stand on another level than their package's.
MODULE_LEVELS = {"bert.__main__": 7}


def modules():
  """{module name: path} of every module of the package."""
  found = {}
  for directory, dirs, names in os.walk(PACKAGE):
    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
    for name in sorted(names):
      if name.endswith(".py"):
        path = os.path.join(directory, name)
        parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
        if parts[-1] == "__init__":
          parts = parts[:-1]
        found[".".join(parts)] = path
  return found


def package_of(module, known):
  """The package a module belongs to: itself for a package, else its parent."""
  return module if module in LEVELS and module in known and \
      known[module].endswith("__init__.py") else module.rpartition(".")[0]


def imports(path, known):
  """The package modules a file imports (`from bert.x import y` names y when y is a
  module), each with its line."""
  found = []
  for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
    if isinstance(node, ast.Import):
      found += [(alias.name, node.lineno) for alias in node.names
                if alias.name.split(".")[0] == "bert"]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
        node.module.split(".")[0] == "bert":
      for alias in node.names:
        name = f"{node.module}.{alias.name}"
        found.append((name if name in known else node.module, node.lineno))
  return found


def edges():
  known = modules()
  return [(module, target, line) for module, path in known.items()
          for target, line in imports(path, known)]


def level(module, known):
  if module in MODULE_LEVELS:
    return MODULE_LEVELS[module]
  package = package_of(module, known)
  assert package in LEVELS, f"{module}: its package {package} has no level in LEVELS"
  return LEVELS[package]


def problems(edge_list, known):
  found = []
  for module, target, line in edge_list:
    source_package, target_package = package_of(module, known), package_of(target, known)
    if target == "bert" or (source_package == target_package and
                            module not in MODULE_LEVELS and target not in MODULE_LEVELS):
      continue  # the package's own light __init__, or a neighbour in the same package
    if level(target, known) >= level(module, known):
      found.append(f"{module} (line {line}) imports {target}: level "
                   f"{level(target, known)} ({target_package}) is not below level "
                   f"{level(module, known)} ({source_package})")
  return found


def cycles(edge_list, known):
  """Modules that import each other in a loop (Tarjan's strongly connected components)."""
  graph = {m: sorted({t for s, t, _ in edge_list if s == m and t in known and t != m})
           for m in known}
  index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

  def visit(node):
    index[node] = low[node] = counter[0]
    counter[0] += 1
    stack.append(node)
    on_stack.add(node)
    for nxt in graph[node]:
      if nxt not in index:
        visit(nxt)
        low[node] = min(low[node], low[nxt])
      elif nxt in on_stack:
        low[node] = min(low[node], index[nxt])
    if low[node] == index[node]:
      component = []
      while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == node:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for node in sorted(graph):
    if node not in index:
      visit(node)
  return found


def test_every_package_has_a_level():
  known = modules()
  assert sorted({package_of(m, known) for m in known}) == sorted(LEVELS)


def test_imports_only_go_down():
  assert problems(edges(), modules()) == []


def test_no_module_cycle():
  assert cycles(edges(), modules()) == []


def test_an_upward_import_is_named_with_both_modules():
  known = modules()
  upward = [("bert.modeling", "bert.training.checkpoints", 7),
            ("bert.squad.squad_task", "bert.classifier.classifier_examples", 9)]
  assert problems(upward, known) == [
      "bert.modeling (line 7) imports bert.training.checkpoints: level 3 (bert.training) "
      "is not below level 1 (bert)",
      "bert.squad.squad_task (line 9) imports bert.classifier.classifier_examples: level 4 "
      "(bert.classifier) is not below level 4 (bert.squad)"]
  assert cycles([("bert.metrics", "bert.modeling", 1), ("bert.modeling", "bert.metrics", 2)],
                known) == [["bert.metrics", "bert.modeling"]]


@pytest.mark.parametrize("name", ["bert", "bert.cli", "bert.utils", "bert.__main__"])
def test_light_modules_import_no_tensorflow(name):
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  code = (f"import sys, importlib; importlib.import_module({name!r}); "
          "print(sorted(m for m in ('tensorflow', 'keras', 'numpy') if m in sys.modules))")
  result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
  assert result.stdout == "[]\n"


def test_only_one_command_module_imports_tensorflow_at_import_time():
  """A command's --help and flag checks run before TensorFlow loads: a bert.cli module
  imports it inside main(). One cannot: export_encoder's TF-Hub modules are tf.Module
  classes. (create_vocab loads none at all: its learners and counting workers need no
  TensorFlow.)"""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  from bert import cli  # pylint: disable=g-import-not-at-top
  # One fresh interpreter (nothing of ours imported) forks a child per command; a child
  # that starts to load tensorflow or keras says so and ends there, so no process pays
  # TensorFlow's start-up to show that it would. Only loading counts: a command may ask
  # whether the package is installed (importlib.util.find_spec) without importing it.
  code = (
      "import importlib, os, sys\n"
      "class Stop:\n"
      "  def create_module(self, spec):\n"
      "    os.write(1, b'True\\n')\n"
      "    os._exit(0)\n"
      "  def exec_module(self, module):\n"
      "    pass\n"
      "class Heavy:\n"
      "  def find_spec(self, name, path=None, target=None):\n"
      "    if name.partition('.')[0] not in ('tensorflow', 'keras'):\n"
      "      return None\n"
      "    for finder in sys.meta_path[1:]:\n"
      "      spec = getattr(finder, 'find_spec', lambda *a: None)(name, path, target)\n"
      "      if spec is not None:\n"
      "        spec.loader = Stop()\n"
      "        return spec\n"
      "    return None\n"
      "for name in sys.argv[1:]:\n"
      "  pid = os.fork()\n"
      "  if pid == 0:\n"
      "    sys.meta_path.insert(0, Heavy())\n"
      "    importlib.import_module('bert.cli.' + name)\n"
      "    os.write(1, b'False\\n')\n"
      "    os._exit(0)\n"
      "  _, status = os.waitpid(pid, 0)\n"
      "  assert status == 0, (name, status)\n")
  result = subprocess.run([sys.executable, "-c", code, *cli.COMMANDS], cwd=ROOT,
                          capture_output=True, text=True, check=True)
  answers = result.stdout.split()
  assert len(answers) == len(cli.COMMANDS), result.stdout
  heavy = [name for name, answer in zip(cli.COMMANDS, answers) if answer == "True"]
  assert heavy == ["export_encoder"]
