"""A root script run as a user runs it (its command line's real path, from the repository
root), and the `key = value` results files the scripts write."""
import cli_harness


def run_script(script, *args, expect=0):
  """`python <script> args` from the repository root, answered by the script's warm
  process (cli_harness.run: no TensorFlow start-up per run); asserts its exit status is
  `expect`."""
  proc = cli_harness.run(script, args, timeout=600)
  assert proc.returncode == expect, proc.stderr[-3000:]
  return proc


def read_key_values(path):
  """{key: float(value)} of a results file's `key = value` lines (eval_results.txt)."""
  values = {}
  for line in open(path, encoding="utf-8"):
    key, _, value = line.strip().partition(" = ")
    values[key] = float(value)
  return values
