"""Every command keeps its flags: the live list (tests/support/command_flags.py: each flag's
name, kind, type, default, help, choices, required-ness, path and output kind) equals the
golden file tests/support/golden/command_flags.json, which changes only on purpose
(`python tests/support/command_flags.py --write`, its diff explained)."""
import ast
import json
import os
import subprocess
import sys

from conftest import ROOT

TOOL = os.path.join(ROOT, "tests", "support", "command_flags.py")
GOLDEN = os.path.join(ROOT, "tests", "support", "golden", "command_flags.json")


def test_every_command_keeps_its_flags_names_types_defaults_and_help():
  result = subprocess.run([sys.executable, TOOL], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert result.returncode == 0, result.stderr[-2000:]
  live = json.loads(result.stdout)
  with open(GOLDEN, encoding="utf-8") as handle:
    golden = json.load(handle)
  assert sorted(live) == sorted(golden)
  for command in golden:
    assert sorted(live[command]) == sorted(golden[command]), command
    for name, described in golden[command].items():
      assert live[command][name] == described, f"{command} --{name}"
  # The list is real: the commands' best-known flags are in it as the original has them.
  assert golden["run_squad"]["max_seq_length"]["default"] == 384
  assert golden["run_pretraining"]["num_train_steps"]["default"] == 100000
  assert golden["run_classifier"]["task_name"]["required"] is True
  assert golden["run_classifier"]["output_dir"]["output"] == "folder"


def _declared_flags(cls):
  from bert.utils import settings  # pylint: disable=g-import-not-at-top
  return {meta["flag_name"] or name for name, (_, _, meta) in settings.declared(cls).items()}


def _options_classes():
  """{class name: its flags' names} of every options class whose fields make flags."""
  from bert import masking  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data
  from bert.classifier import classifier_examples
  from bert.extraction import extraction_options
  from bert.pretraining import pretraining_generator
  from bert.pretraining import pretraining_options
  from bert.pretraining import pretraining_vocab
  from bert.squad import squad_options
  from bert.tagging import tagging_options
  from bert.training import run_options
  classes = [run_options.RunOptions, masking.MaskingOptions, classifier_data.ClassifierOptions,
             classifier_examples.DelimitedFileOptions, squad_options.SquadOptions,
             tagging_options.TaggingOptions, tagging_options.NerOptions,
             pretraining_generator.GeneratorOptions, pretraining_vocab.LearnOptions,
             extraction_options.ExtractionOptions, extraction_options.FillMaskOptions,
             pretraining_options.PretrainingOptions]
  return {cls.__name__: _declared_flags(cls) for cls in classes}


def _hand_defined_and_read(path):
  """(the flags a module defines by hand, the options classes it reads flags into)."""
  with open(path, encoding="utf-8") as handle:
    tree = ast.parse(handle.read())
  defined, read = set(), set()
  for node in ast.walk(tree):
    if not isinstance(node, ast.Call):
      continue
    name = getattr(node.func, "attr", getattr(node.func, "id", ""))
    first = node.args[0] if node.args else None
    if (name.startswith("DEFINE") or name == "define_path") and isinstance(
        first, ast.Constant) and isinstance(first.value, str):
      defined.add(first.value)
    elif name == "options_from_flags":
      read.add("RunOptions")
    elif name == "masking_options":
      read.add("MaskingOptions")
    elif name in ("settings_from_flags", "define_flags") and first is not None:
      read.add(getattr(first, "attr", getattr(first, "id", "")))
  return defined, read


def test_no_setting_has_its_default_written_twice():
  """A flag made from an options field must not also be defined by hand (with a default
  and help of its own) where the command reads that options object: each setting is
  declared once, in its field (bert/utils/settings.py)."""
  classes = _options_classes()
  files = [os.path.join(ROOT, "bert", "cli", name)
           for name in sorted(os.listdir(os.path.join(ROOT, "bert", "cli")))
           if name.endswith(".py")]
  files += [os.path.join(ROOT, "tools", name)
            for name in sorted(os.listdir(os.path.join(ROOT, "tools")))
            if name.endswith(".py")]
  checked = 0
  for path in files:
    defined, read = _hand_defined_and_read(path)
    if os.path.basename(path) == "flags_common.py":
      read = set(classes)  # it makes the flags of every one of them
    for cls in read & set(classes):
      twice = defined & classes[cls]
      assert not twice, f"{os.path.relpath(path, ROOT)} defines {sorted(twice)} by hand; " \
                        f"they are {cls}'s fields: make them with flags_common.define_flags"
      checked += 1
  assert checked >= 10  # the commands that read options objects were looked at


# Flags of the same name as an options field that are another setting, each with why: a
# hand-defined flag of any other field's name is that field's default written twice.
SAME_NAME_OTHER_SETTING = {
    ("export_encoder.py", "export_dir"): "where the converted checkpoint goes, no training run's export",
    ("quickstart.py", "vocab_size"): "the demo vocabulary's size, not a field of its options",
    ("predict_litert.py", "task_name"): "the files' task, by default the model's own (None)",
    ("predict_litert.py", "xnli_language"): "XNLI's language, by default the model's (None)",
    ("litert_accuracy.py", "task_name"): "the files' task of a tool's LiteRT model",
    ("linear_probe.py", "batch_size"): "the probe's rows per encoder pass (64), not the "
                                       "extraction commands' batch",
    ("litert_accuracy.py", "batch_size"): "rows per call of a LiteRT model, as "
                                          "predict_litert's, not the extraction commands'",
}


def test_no_command_writes_an_options_fields_default_by_hand():
  """No command or tool defines by hand a flag named as an options field (the same setting
  with its default and help written a second time), whichever options it reads, except the
  settings above that only share the name."""
  names = set().union(*_options_classes().values())
  found = set()
  for folder in (("bert", "cli"), ("tools",), ("tools", "maintainers")):
    for name in sorted(os.listdir(os.path.join(ROOT, *folder))):
      if name.endswith(".py"):
        defined, _ = _hand_defined_and_read(os.path.join(ROOT, *folder, name))
        found |= {(name, flag) for flag in defined & names}
  assert found == set(SAME_NAME_OTHER_SETTING)
