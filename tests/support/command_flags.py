"""Every command's flags as JSON: name, kind, default, help, choices, required, path/output.

  python tests/support/command_flags.py                 # prints the list
  python tests/support/command_flags.py --write         # rewrites the golden file, on purpose

tests/project/test_command_flags.py compares the live list with the golden file
(tests/support/golden/command_flags.json): the proof that a change to how flags are
declared kept every flag's name, type, default and help. Each command module is imported
into the process's FlagValues in turn and its flags removed again before the next, as
tools/maintainers/gen_flag_docs.py does (several commands define the same names); only
flags defined by this project's command modules are listed.
"""

import importlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "support", "golden", "command_flags.json")
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # noqa: E402,F401  (its flags are absl's, defined before ours)
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402,F401

from bert.cli import COMMANDS  # noqa: E402


def _ours(module_name):
  module = sys.modules.get(module_name or "")
  path = getattr(module, "__file__", None) or ""
  return bool(path) and os.path.dirname(os.path.abspath(path)) == os.path.join(
      ROOT, "bert", "cli")


def _json_value(value):
  if isinstance(value, (list, tuple)):
    return [_json_value(v) for v in value]
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  return repr(value)


def describe_flag(flag, flags_common):
  parser = flag.parser
  entry = {
      "kind": type(parser).__name__,
      "type": parser.flag_type(),
      "default": _json_value(flag.default),
      "help": flag.help,
      "short_name": flag.short_name,
      "required": any("required" in str(getattr(v, "message", "")).lower()
                      or "must have a value" in str(getattr(v, "message", ""))
                      for v in flag.validators),
      "validators": len(flag.validators),
      "path": isinstance(parser, flags_common.PathParser),
      "output": flags_common.OUTPUTS.get(flag.name) if isinstance(
          parser, flags_common.PathParser) else None,
  }
  choices = getattr(parser, "enum_values", None)
  if choices is not None:
    entry["choices"] = list(choices)
  if hasattr(parser, "lower_bound") and (parser.lower_bound is not None
                                         or parser.upper_bound is not None):
    entry["bounds"] = [_json_value(parser.lower_bound), _json_value(parser.upper_bound)]
  return entry


def command_flags(command):
  """{flag name: description} of one command's own flags."""
  from bert.cli import flags_common  # pylint: disable=g-import-not-at-top
  before = set(flags.FLAGS)
  importlib.import_module("bert.cli." + command)
  new = [name for name in flags.FLAGS if name not in before]
  found = {}
  for name in new:
    flag = flags.FLAGS[name]
    if flag.name == name and _ours(flags.FLAGS.find_module_defining_flag(name)):
      found[name] = describe_flag(flag, flags_common)
  for name in new:
    delattr(flags.FLAGS, name)
  flags_common._DEFINED.clear()  # pylint: disable=protected-access
  sys.modules.pop("bert.cli." + command, None)
  return dict(sorted(found.items()))


def all_flags():
  return {command: command_flags(command) for command in COMMANDS}


def main():
  text = json.dumps(all_flags(), indent=1, sort_keys=True) + "\n"
  if sys.argv[1:] == ["--write"]:
    with open(GOLDEN, "w", encoding="utf-8") as handle:
      handle.write(text)
  elif sys.argv[1:]:
    sys.stderr.write("command_flags.py: the one flag is --write\n")
    return 2
  else:
    sys.stdout.write(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
