"""Each default is written once: no keyword default in bert/ repeats, as a literal, the
default of an options field of the same name, and no two options fields of one name
write the same default as a literal. The lowest layer that needs such a default declares
it as a named constant (modeling_config.DEFAULT_MAX_SEQ_LENGTH, tokenization.DO_LOWER_CASE,
...), and the options field and the keyword both read it. Read from the source alone (no
import): a default written as `module.NAME` is followed to that module's `NAME = value`.
"""
import ast
import os

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "bert")
# Keyword defaults that share a name and a value with an options field but are another
# setting, each with why.
OTHER_SETTINGS = {
    ("bert/modeling_ops.py", "attention_mask_bias", "dtype"):
        "the tensor dtype of an op's output, not --dtype's precision",
    ("bert/modeling_ops.py", "packed_attention_bias", "dtype"):
        "the tensor dtype of an op's output, not --dtype's precision",
}


def _sources():
  """{path relative to ROOT: parsed module} of every module of the package."""
  found = {}
  for directory, dirs, names in os.walk(PACKAGE):
    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
    for name in sorted(names):
      if name.endswith(".py"):
        path = os.path.join(directory, name)
        with open(path, encoding="utf-8") as handle:
          found[os.path.relpath(path, ROOT)] = ast.parse(handle.read())
  return found


def _module_file(module, sources):
  path = module.replace(".", "/")
  for candidate in (path + ".py", path + "/__init__.py"):
    if candidate in sources:
      return candidate
  return None


def _imports(tree, sources):
  """{local name: module file} of the package's modules a module imports."""
  found = {}
  for node in tree.body:
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bert"):
      for alias in node.names:
        path = _module_file(f"{node.module}.{alias.name}", sources)
        if path:
          found[alias.asname or alias.name] = path
    elif isinstance(node, ast.Import):
      for alias in node.names:
        path = _module_file(alias.name, sources)
        if path and alias.asname:
          found[alias.asname] = path
  return found


_NOT_KNOWN = object()


class _Resolver:
  """The value of a default as written: a literal, or a module constant (NAME, or
  module.NAME of an imported module of the package) whose value is one."""

  def __init__(self, sources):
    self.sources = sources
    self.imports = {path: _imports(tree, sources) for path, tree in sources.items()}
    self.constants = {}
    for path, tree in sources.items():
      for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
            node.targets[0], ast.Name):
          self.constants[(path, node.targets[0].id)] = node.value

  def value(self, node, path, depth=0):
    if depth > 5:
      return _NOT_KNOWN
    try:
      return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
      pass
    if isinstance(node, ast.Name) and (path, node.id) in self.constants:
      return self.value(self.constants[(path, node.id)], path, depth + 1)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
      module = self.imports[path].get(node.value.id)
      if module and (module, node.attr) in self.constants:
        return self.value(self.constants[(module, node.attr)], module, depth + 1)
    return _NOT_KNOWN


def _is_literal(node):
  try:
    ast.literal_eval(node)
  except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
    return False
  return True


def _is_dataclass(node):
  return any((isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "dataclass")
             or getattr(d, "attr", "") == "dataclass" for d in node.decorator_list)


def options_fields(sources, resolver):
  """[(field name, value, written as a literal, where)] of every options class's field
  with a default other than None (an options class: a dataclass named *Options)."""
  fields = []
  for path, tree in sources.items():
    for node in ast.walk(tree):
      if not (isinstance(node, ast.ClassDef) and node.name.endswith("Options")
              and _is_dataclass(node)):
        continue
      for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and statement.value is not None):
          continue
        default = statement.value
        if isinstance(default, ast.Call) and getattr(default.func, "attr", "") == "setting":
          if not default.args:
            continue
          default = default.args[0]
        value = resolver.value(default, path)
        if value is not _NOT_KNOWN and value is not None:
          fields.append((statement.target.id, value, _is_literal(default),
                         f"{path}:{node.name}.{statement.target.id}"))
  return fields


def keyword_defaults(sources):
  """[(path:line, function, parameter, default node)] of every function of the
  package."""
  found = []
  for path, tree in sources.items():
    for node in ast.walk(tree):
      if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        continue
      args = node.args
      positional = args.posonlyargs + args.args
      pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
      pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
      found += [(f"{path}:{node.lineno}", node.name, arg.arg, default)
                for arg, default in pairs]
  return found


def _same(a, b):
  return type(a) is type(b) and a == b


def repeated_defaults(sources):
  """Each keyword default written as a literal that equals an options field's default of
  the same name, and each options field whose literal default another field of that
  name has too; as lines naming both places."""
  resolver = _Resolver(sources)
  fields = options_fields(sources, resolver)
  by_name = {}
  for name, value, literal, where in fields:
    by_name.setdefault(name, []).append((value, literal, where))
  problems = []
  for path, function, name, default in keyword_defaults(sources):
    if (path.split(":")[0], function, name) in OTHER_SETTINGS or not _is_literal(default):
      continue
    value = ast.literal_eval(default)
    if value is None:
      continue
    for field_value, _, where in by_name.get(name, ()):
      if _same(value, field_value):
        problems.append(f"{path}: {function}({name}={value!r}) repeats {where}'s default")
        break
  for name, declared in sorted(by_name.items()):
    for value, literal, where in declared:
      others = [w for v, _, w in declared if w != where and _same(v, value)]
      if literal and others:
        problems.append(f"{where} writes {value!r}, the default of {', '.join(others)}")
  return sorted(set(problems))


def test_no_default_is_written_twice():
  sources = _sources()
  assert repeated_defaults(sources) == []
  # The rule reads what it means to: the options classes, their constants followed.
  names = {where.split(":")[1].split(".")[0] for _, _, _, where in
           options_fields(sources, _Resolver(sources))}
  assert {"RunOptions", "GeneratorOptions", "MaskingOptions", "SquadOptions",
          "TaggingOptions", "FillMaskOptions", "PretrainingOptions"} <= names


def test_a_repeated_default_is_named_with_both_places():
  sources = {
      "bert/a.py": ast.parse(
          "import dataclasses\nfrom bert.utils import settings\nLIMIT = 7\n"
          "@dataclasses.dataclass(frozen=True)\nclass AOptions:\n"
          "  size: int = settings.setting(LIMIT, 'h')\n  rate: float = 0.5\n"),
      "bert/b.py": ast.parse(
          "from bert import a\n"
          "@dataclasses.dataclass(frozen=True)\nclass BOptions:\n  rate: float = 0.5\n"
          "def f(size=7, rate=a.LIMIT, other=7):\n  pass\n"),
  }
  assert repeated_defaults(sources) == [
      "bert/a.py:AOptions.rate writes 0.5, the default of bert/b.py:BOptions.rate",
      "bert/b.py:5: f(size=7) repeats bert/a.py:AOptions.size's default",
      "bert/b.py:BOptions.rate writes 0.5, the default of bert/a.py:AOptions.rate"]
