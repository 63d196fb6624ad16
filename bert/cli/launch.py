"""How every command starts, however it is typed (the root script, `python -m
bert.cli.<command>`, `python -m bert <command>`, the console script): each calls the
command module's `run = launch.entry_point(main)`.

prepare() sets the process up before TensorFlow loads (the serving install's one-line
refusal, the quiet runtime log, glibc keeping freed memory). absl's `--help` shows the
`__main__` module's docstring and flags, so the root and console scripts take on the
command module's: `--help` shows the command's flags whichever door was used."""

import importlib.util
import os
import sys

from absl import app
from absl import flags

from bert import cli
from bert.utils import cpu_memory
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


def _run(main, command_module):
  """Runs a command's `main` under absl (flag parsing, --help, exit status).

  command_module: the command module's `__name__`.
  """
  module = sys.modules[command_module]
  prepare(command_module)
  main_module = sys.modules["__main__"]
  if main_module is not module and module.__doc__:
    main_module.__doc__ = module.__doc__
  _lend_flags_to_main()
  app.run(main)


def entry_point(main):
  """A command module's `run`, the one entry point of every way to start it (the console
  scripts of pyproject.toml name it): `run = launch.entry_point(main)`."""

  def run_command():
    """The entry point of every way to start this command (launch.py)."""
    _run(main, main.__module__)

  return run_command
