"""How every command starts, however it is typed (the root script, `python -m
bert.cli.<command>`, `python -m bert <command>`, the console script): each calls the
command module's `run = launch.entry_point(main)`.

prepare() sets the process up before TensorFlow loads (the serving install's one-line
refusal, the quiet runtime log, glibc keeping freed memory). absl's `--help` shows the
`__main__` module's docstring and flags, so the root and console scripts take on the
command module's: `--help` shows the command's flags whichever door was used."""

import argparse
import importlib.util
import os
import re
import sys

from absl import app
from absl import flags

from bert import cli
from bert.utils import cpu_memory
from bert.utils import errors
from bert.utils import runtime_log

# What the training install adds; a command of TensorFlow needs all three.
TRAINING_MODULES = ("tensorflow", "tensorflow_text", "keras")


def missing_training_module():
  """The first of TRAINING_MODULES this environment lacks, or None (nothing imported)."""
  for name in TRAINING_MODULES:
    if importlib.util.find_spec(name) is None:
      return name
  return None


def command_of(command_module):
  """The command a module name stands for: bert.cli.run_classifier -> run_classifier;
  `__main__` (python -m bert.cli.<command>) is the module its spec names."""
  if command_module == "__main__":
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    command_module = spec.name if spec else command_module
  return command_module.rsplit(".", 1)[-1]


def require_training_install(command_module):
  """In the serving install (no TensorFlow), a command that needs it ends here: one line
  naming the training install, exit status 2, no traceback.

  command_module: the command module's `__name__` (or its bert.cli name).
  """
  command = command_of(command_module)
  if command in cli.WITHOUT_TENSORFLOW:
    return
  missing = missing_training_module()
  if missing is None:
    return
  program = os.path.basename(sys.argv[0] or "") or cli.console_name(command)
  if program in ("-m", "-c", "__main__.py"):
    program = cli.console_name(command)
  sys.stderr.write(f"{program}: error: this command needs TensorFlow (no module named "
                   f"{missing!r} here; this is the serving install): "
                   f"{cli.TRAINING_INSTALL}\n")
  sys.exit(2)


def prepare(command_module):
  """Sets up the command's process before TensorFlow loads (the module docstring says
  what); calling it again changes nothing.

  command_module: the command module's `__name__`.
  """
  require_training_install(command_module)
  command = command_of(command_module)
  if command in cli.QUIET_RUNTIME_LOG:
    runtime_log.quiet()
  if command in cli.KEEP_FREED_MEMORY:
    cpu_memory.keep_freed_memory()


def _lend_flags_to_main():
  main_name = sys.argv[0]  # the name absl files __main__'s flags under
  for module_name, module_flags in flags.FLAGS.flags_by_module_dict().items():
    if module_name.startswith("bert.cli."):
      for flag in module_flags:
        flags.FLAGS.register_key_flag_for_module(main_name, flag)


# --------------------------------------------------------------------------- absl's flag errors

_VALUE_ERROR = re.compile(r"^flag --([^=\s]+)=(.*?): (.*)$")
_REQUIRED = re.compile(r"^Flag --\S+ must have a value other than None\.$")
_SUGGESTIONS = re.compile(r"Did you mean: (.+?) \?$")
_NOT_A_NUMBER = {"int": ("invalid literal for int()", "not an integer"),
                 "float": ("could not convert string to float", "not a number")}
HELP_POINTER = "--helpshort lists the flags"


def _value_error(name, value, detail, flag_values):
  """One bad value of one flag, said as our other messages say it: `--name=value: why`."""
  flag = flag_values[name] if name in flag_values else None
  kind = flag.parser.flag_type() if flag is not None else None
  if kind in _NOT_A_NUMBER and detail.startswith(_NOT_A_NUMBER[kind][0]):
    detail = _NOT_A_NUMBER[kind][1]
  elif kind == "bool" and "Non-boolean argument" in detail:
    detail = (f"not true or false (a boolean flag: --{name}, --{name}=false or "
              f"--no{name})")
  return f"--{name}={value}: {detail}"


def flag_error_line(exc, flag_values=None):
  """absl's flag error (absl.flags.Error) in one line naming the flag(s): an unknown flag
  with absl's suggestions, a value of the wrong type, the required flags not given (all
  of them, in one line), and what else absl says, its lines joined."""
  flag_values = flags.FLAGS if flag_values is None else flag_values
  if isinstance(exc, flags.UnrecognizedFlagError):
    name = exc.flagname
    line = f"--{name}: no such flag"
    suggestions = _SUGGESTIONS.search(str(exc))
    if suggestions:
      names = [n.strip() for n in suggestions.group(1).split(",") if n.strip()]
      line += f" (did you mean {' or '.join('--' + n for n in names)}?)"
    return f"{line}; {HELP_POINTER}"
  missing, said = [], []
  for text in str(exc).splitlines():
    text = text.strip()
    match = _VALUE_ERROR.match(text)
    if match and _REQUIRED.match(match.group(3)):
      missing.append(f"--{match.group(1)}")
    elif match:
      said.append(_value_error(*match.groups(), flag_values))
    elif text:
      said.append(text.replace("ERROR:: ", ""))
  if missing:
    plural = "s" if len(missing) > 1 else ""
    said.insert(0, f"missing the required flag{plural} {', '.join(missing)}")
  return f"{'; '.join(said)}; {HELP_POINTER}"


def _program():
  return os.path.basename(sys.argv[0] or "") or "bert"


def parse_flags(argv, arguments=False):
  """absl's parse, with its errors in our form: one line naming the flag, exit status 2
  (absl writes two lines and exits 1); `app.run(main, flags_parser=...)` calls it.

  arguments: whether the command takes words that are not flags (squad_evaluate's two
    files); where it does not, a leftover word is refused, since absl would drop it
    silently: `--do_lower_case False` sets the flag and drops "False".
  The help flags (--help, --helpshort, --helpfull, --helpxml) show the help and exit 0:
  help that was asked for is no failure (absl exits 1).
  """
  try:
    try:
      remaining = flags.FLAGS(argv)
    except ValueError as exc:
      # absl's own slip: `--nodo_train=1` raises a bare ValueError, not its flags.Error.
      if not str(exc).endswith("does not take an argument"):
        raise
      raise flags.Error(f"{str(exc).split()[0]}: a boolean flag's --no form takes no "
                        "value") from None
  except flags.Error as exc:
    sys.stderr.write(f"{_program()}: error: {flag_error_line(exc)}\n")
    sys.exit(errors.USER_ERROR_EXIT_CODE)
  except SystemExit as exc:
    # Only absl's help flags end the parse by exiting, with status 1.
    raise SystemExit(0 if exc.code == 1 else exc.code) from None
  if not arguments and len(remaining) > 1:
    word = remaining[1]
    at = len(argv) - 1 - argv[::-1].index(word)  # a flag's value may be the same word
    before = argv[at - 1] if at > 1 else None
    after = (f" after {before}" if before and before.startswith("-") else "")
    sys.stderr.write(
        f"{_program()}: error: {word!r}{after}: this command takes flags only, each "
        "--name=value (a boolean flag: --name, --name=false or --noname); "
        f"{HELP_POINTER}\n")
    sys.exit(errors.USER_ERROR_EXIT_CODE)
  return remaining


class ArgumentParser(argparse.ArgumentParser):
  """argparse's parser for the tools that read argparse, with its errors in our form:
  one line, `prog: error: message`, exit status 2 (argparse writes the usage first)."""

  def error(self, message):
    message = " ".join(message.split())
    sys.stderr.write(f"{self.prog}: error: {message}; --help shows the usage\n")
    sys.exit(errors.USER_ERROR_EXIT_CODE)


# --------------------------------------------------------------------------- the start


def _run(main, command_module, arguments=False):
  """Runs a command's `main` under absl (flag parsing, --help, exit status).

  command_module: the command module's `__name__`.
  arguments: whether the command takes words that are not flags (parse_flags).
  """
  module = sys.modules[command_module]
  prepare(command_module)
  main_module = sys.modules["__main__"]
  if main_module is not module and module.__doc__:
    main_module.__doc__ = module.__doc__
  _lend_flags_to_main()
  app.run(main, flags_parser=lambda argv: parse_flags(argv, arguments))


def entry_point(main, arguments=False):
  """A command module's `run`, the one entry point of every way to start it (the console
  scripts of pyproject.toml name it): `run = launch.entry_point(main)`.

  arguments: True for a command that takes words that are not flags (squad_evaluate's
    files); any other refuses them (parse_flags).
  """

  def run_command():
    """The entry point of every way to start this command (launch.py)."""
    _run(main, main.__module__, arguments)

  return run_command
