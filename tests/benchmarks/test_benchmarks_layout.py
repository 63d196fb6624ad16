"""What docs/ARCHITECTURE.md says of benchmarks/, held here: one package run as
`python -m benchmarks.NAME` (no file puts a folder on sys.path), its parts never import
an entry point, entry points never import each other, and the side scripts that run in
other virtual environments import nothing of this project (a sibling by its bare name,
their folder being on sys.path there)."""
import ast
import os

from conftest import ROOT

BENCHMARKS = os.path.join(ROOT, "benchmarks")
# Run by path in .venv-hf / .venv-original, which do not hold this project.
SIDES = ("hugging_face_worker", "original_worker", "peer_worker", "ort_setups", "peer_batches",
         "worker_protocol")


def _modules():
  """{dotted name below benchmarks: parsed file} of every benchmarks/ module."""
  found = {}
  for parent, dirs, names in os.walk(BENCHMARKS):
    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
    for name in sorted(names):
      if name.endswith(".py") and name != "__init__.py":
        path = os.path.join(parent, name)
        rel = os.path.relpath(path, BENCHMARKS)[:-3].replace(os.sep, ".")
        with open(path, encoding="utf-8") as handle:
          found[rel] = ast.parse(handle.read())
  return found


def _imports(tree):
  """The modules a file imports (a `from X import y` names X.y too)."""
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names |= {alias.name for alias in node.names}
    elif isinstance(node, ast.ImportFrom) and node.module:
      names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
  return names


def test_the_layout_is_entry_points_parts_and_studies():
  modules = _modules()
  top = sorted(m for m in modules if "." not in m)
  assert top == sorted(["run_all"] + [m for m in top if m.startswith("bench_")])
  assert {m.split(".")[0] for m in modules if "." in m} == {"parts", "studies"}
  for folder in ("", "parts", "studies"):
    assert os.path.exists(os.path.join(BENCHMARKS, folder, "__init__.py")), folder


def test_no_benchmark_puts_a_folder_on_sys_path():
  found = []
  for name, tree in _modules().items():
    for node in ast.walk(tree):
      if (isinstance(node, ast.Attribute) and node.attr == "path" and
          isinstance(node.value, ast.Name) and node.value.id == "sys"):
        found.append(f"{name}:{node.lineno}")
  assert found == []


def test_parts_import_no_entry_point_and_entry_points_no_other():
  modules = _modules()
  entry_points = {m for m in modules if "." not in m}
  found = []
  for name, tree in modules.items():
    imported = _imports(tree)
    for entry in entry_points - {name}:
      if f"benchmarks.{entry}" in imported or entry in imported:
        found.append(f"{name} imports {entry}")
  assert found == []  # run_all starts them through importlib, by name


def test_the_side_scripts_import_nothing_of_this_project():
  # original_worker imports `bert`, but the original release's (its venv's; it checks).
  modules = _modules()
  for side in SIDES:
    ours = {m for m in _imports(modules[f"parts.{side}"])
            if m.split(".")[0] == "benchmarks" or
            (m.split(".")[0] == "bert" and side != "original_worker")}
    assert ours == set(), side
