"""Every command keeps its flags: the live list (tests/support/command_flags.py: each flag's
name, kind, type, default, help, choices, required-ness, path and output kind) equals the
golden file tests/support/golden/command_flags.json, which changes only on purpose
(`python tests/support/command_flags.py --write`, its diff explained)."""
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
