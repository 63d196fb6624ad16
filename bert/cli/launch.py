"""How every command starts, however it is typed: the root script (`python
run_classifier.py`), `python -m bert.cli.run_classifier` and the installed console script
(`bert-run-classifier`) all end in `launch.run(main, __name__)`.

absl's `--help` prints the `__main__` module's docstring and the flags that module owns.
The root script and the console script are only doors into a module of this package, so
here they take on that module's docstring, and every flag the command's modules define
(the command's own and flags_common's) becomes one of theirs: `--help` shows the command's
flags, `--helpfull` everything, whichever door was used.
"""

import sys

from absl import app
from absl import flags


def _lend_flags_to_main():
  main_name = sys.argv[0]  # the name absl files __main__'s flags under
  for module_name, module_flags in flags.FLAGS.flags_by_module_dict().items():
    if module_name.startswith("bert.cli."):
      for flag in module_flags:
        flags.FLAGS.register_key_flag_for_module(main_name, flag)


def run(main, command_module):
  """Runs a command's `main` under absl (flag parsing, --help, exit status).

  command_module: the command module's `__name__`.
  """
  module = sys.modules[command_module]
  main_module = sys.modules["__main__"]
  if main_module is not module and module.__doc__:
    main_module.__doc__ = module.__doc__
  _lend_flags_to_main()
  app.run(main)
