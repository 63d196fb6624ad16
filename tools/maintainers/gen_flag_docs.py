"""Prints docs/FLAGS.md: every script's flags, generated from its absl definitions.

  python tools/maintainers/gen_flag_docs.py > docs/FLAGS.md
  python tools/maintainers/gen_flag_docs.py --path_flags   # JSON: every script's path flags

The docs never drift from the code: tests/project/test_docs.py runs this and compares. Scripts
are imported (not run) one after another in this process; each one's flags are removed
again before the next is imported, since several scripts define the same name. Only flags
defined by this project's own modules are listed (a script that imports TensorFlow at the
top also brings TensorFlow's and absl's flags, which are not ours to document).
"""

import importlib
import io
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # noqa: E402,F401  (its own flags are not ours to document)
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402,F401

from bert.cli import COMMANDS  # noqa: E402

# Every command, from the one list of them (bert.cli.COMMANDS): docs/FLAGS.md's sections.
SCRIPTS = list(COMMANDS)


def _cell(text):
  return str(text).replace("|", "\\|").replace("\n", " ")


def _ours(module_name):
  """True for a flag defined by a module of this repository (a script or flags_common)."""
  module = sys.modules.get(module_name or "")
  path = getattr(module, "__file__", None) or ""
  return (os.path.dirname(os.path.abspath(path)) == os.path.join(ROOT, "bert", "cli")
          if path else module_name in SCRIPTS)


# A flag whose name says it is a path, even if (wrongly) not defined through define_path.
PATH_SUFFIXES = ("_file", "_dir", "_checkpoint", "-file", "-dir")


def _is_path_flag(flag):
  """Defined through flags_common.define_path, or named like a path and taking a value
  (--use_best_checkpoint is a switch, not a path)."""
  from bert.cli import flags_common  # pylint: disable=g-import-not-at-top
  return isinstance(flag.parser, flags_common.PathParser) or (
      flag.name.endswith(PATH_SUFFIXES) and not isinstance(flag, flags.BooleanFlag))


def describe(script, path_flags=None):
  """The script's section of docs/FLAGS.md; its path flags (defined through
  flags_common.define_path, or named *_file, *_dir, *_checkpoint) appended to
  `path_flags` when given."""
  from bert.cli import flags_common  # pylint: disable=g-import-not-at-top
  before = set(flags.FLAGS)
  module = importlib.import_module("bert.cli." + script)
  new = [name for name in flags.FLAGS if name not in before]
  defined = [name for name in new if _ours(flags.FLAGS.find_module_defining_flag(name))]
  if path_flags is not None:
    path_flags.extend(sorted({
        flags.FLAGS[name].name for name in defined  # a short alias counted once
        if _is_path_flag(flags.FLAGS[name])}))
  out = io.StringIO()
  doc = (module.__doc__ or "").strip().splitlines()
  out.write(f"## {script}.py\n\n{doc[0] if doc else ''}\n\n")
  if not defined:
    out.write("(no absl flags; run with `--help` for its arguments)\n\n")
  else:
    out.write("| flag | default | required | meaning |\n|---|---|---|---|\n")
    required = {name for name, validators in
                ((n, flags.FLAGS[n].validators) for n in defined) if validators}
    for name in sorted(defined):
      flag = flags.FLAGS[name]
      default = "" if flag.default is None else f"`{flag.default}`"
      out.write(f"| `--{name}` | {default} | {'yes' if name in required else ''} | "
                f"{_cell(flag.help)} |\n")
    out.write("\n")
  for name in new:
    delattr(flags.FLAGS, name)
  flags_common._DEFINED.clear()  # pylint: disable=protected-access
  sys.modules.pop("bert.cli." + script, None)
  return out.getvalue()


def path_flags(script):
  """The path flags of `script`: every flag of ours defined through
  flags_common.define_path, and every flag whose name says it is one (ends in _file,
  _dir or _checkpoint), by its full name (a short alias counted once)."""
  from bert.cli import flags_common  # pylint: disable=g-import-not-at-top
  before = set(flags.FLAGS)
  importlib.import_module("bert.cli." + script)
  new = [name for name in flags.FLAGS if name not in before]
  found = sorted({flags.FLAGS[name].name for name in new
                  if _ours(flags.FLAGS.find_module_defining_flag(name))
                  and _is_path_flag(flags.FLAGS[name])})
  for name in new:
    delattr(flags.FLAGS, name)
  flags_common._DEFINED.clear()  # pylint: disable=protected-access
  sys.modules.pop("bert.cli." + script, None)
  return found


def main():
  if sys.argv[1:] not in ([], ["--path_flags"]):
    # A misspelt flag must not print the page as if it had been understood.
    sys.stderr.write(f"gen_flag_docs.py: error: unknown argument(s) "
                     f"{' '.join(sys.argv[1:])}; the one flag is --path_flags\n")
    return 2
  if sys.argv[1:] == ["--path_flags"]:
    import json  # pylint: disable=g-import-not-at-top
    sys.stdout.write(json.dumps({script: path_flags(script) for script in SCRIPTS
                                 if os.path.exists(os.path.join(ROOT, script + ".py"))}))
    return
  parts = ["# Flags of every script\n\n",
           "Generated from the absl definitions by `make docs` "
           "(`python tools/maintainers/gen_flag_docs.py > docs/FLAGS.md`); do not edit by hand.\n\n"]
  paths = {}
  for script in SCRIPTS:
    if os.path.exists(os.path.join(ROOT, script + ".py")):
      paths[script] = []
      parts.append(describe(script, paths[script]))
  parts.append(
      "## Path flags\n\nEach of these takes a path as people type it, with the same result "
      "as the absolute path: relative to the current folder, `./` and `../`, a trailing "
      "slash, `~` (expanded by the script: no shell expands it after `=`), spaces and "
      "non-ASCII names, a symlinked folder; a list's items (and globs, where the flag "
      "takes them) each the same way. tests/reliability/test_across_commands.py runs every "
      "form for every flag listed here.\n\n| script | path flags |\n|---|---|\n")
  parts.extend(f"| {script}.py | {', '.join(f'`--{name}`' for name in names)} |\n"
               for script, names in paths.items() if names)
  sys.stdout.write("".join(parts))


if __name__ == "__main__":
  sys.exit(main())
