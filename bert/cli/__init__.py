"""The commands: each module here is one command's absl flags, a short main() and
`run = launch.entry_point(main)`.

A command starts the same way from the root script (`python run_classifier.py`), as a
module (`python -m bert.cli.run_classifier`) and as the installed console script
(`bert-run-classifier`): see launch.py.
"""

# Every command, declared here once, in the order docs/FLAGS.md lists them. What follows from
# it is made from it: the root scripts and pyproject.toml's [project.scripts] (bert-<name with
# dashes>) by tools/maintainers/gen_commands.py (`make commands`; tests/project/test_package.py
# checks they are current), docs/FLAGS.md by gen_flag_docs.py, `python -m bert`'s list here.
COMMANDS = ("create_vocab", "extend_vocab", "extend_positions", "create_pretraining_data",
            "run_pretraining", "run_classifier", "run_squad", "squad_evaluate", "run_ner",
            "run_tagger", "run_swag", "run_multilabel", "extract_features", "fill_mask",
            "export_encoder", "predict_litert", "quickstart")

# The commands that run without TensorFlow, in the serving install (`pip install
# bert-tensorflow2`: NumPy and the LiteRT runtime); every other one needs the training
# install and says so in one line where TensorFlow is missing (launch.py).
WITHOUT_TENSORFLOW = ("squad_evaluate", "predict_litert")

# What a command's process sets up before TensorFlow loads (launch.prepare). The
# commands that load TensorFlow themselves quiet its runtime log (bert/utils/runtime_log.py);
# quickstart does not: each of its steps is a command of its own, in a process of its own.
QUIET_RUNTIME_LOG = tuple(command for command in COMMANDS
                          if command not in WITHOUT_TENSORFLOW + ("quickstart",))
# Those that run a TensorFlow model also keep the memory they free, so that big tensors
# reuse warm pages (bert/utils/cpu_memory.py); the data tools, which make no model's
# tensors, leave glibc's default (and so do the worker processes they start).
DATA_TOOLS = ("create_vocab", "extend_vocab", "create_pretraining_data")
KEEP_FREED_MEMORY = tuple(command for command in QUIET_RUNTIME_LOG
                          if command not in DATA_TOOLS)

# The install that brings TensorFlow, tensorflow-text and Keras (pyproject.toml's extra).
TRAINING_INSTALL = 'pip install "bert-tensorflow2[tensorflow]"'


def console_name(command):
  """The installed console script of a command: run_classifier -> bert-run-classifier."""
  return "bert-" + command.replace("_", "-")
