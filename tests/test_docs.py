"""docs/FLAGS.md is what tools/gen_flag_docs.py makes from the flag definitions now."""
import os
import subprocess
import sys

from conftest import ROOT


def test_flag_reference_is_current_and_lists_only_our_flags():
  result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_flag_docs.py")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert result.returncode == 0, result.stderr[-2000:]
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    assert result.stdout == handle.read(), "docs/FLAGS.md is stale: run `make docs`"
  # TensorFlow's and absl's own flags are not documented as ours.
  for foreign in ("--hbm_oom_exit", "--tt_check_filter", "--test_srcdir", "--logtostderr"):
    assert f"`{foreign}`" not in result.stdout
  for ours in ("--num_train_steps", "--runtime_log", "--init_checkpoint", "--task_name"):
    assert f"`{ours}`" in result.stdout
