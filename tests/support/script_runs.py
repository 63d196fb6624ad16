"""A root script run as a user runs it (a subprocess from the repository root), and the
`key = value` results files the scripts write."""
import os
import subprocess
import sys

from conftest import ROOT


def run_script(script, *args, expect=0):
  """`python <script> args` from the repository root; asserts its exit status is `expect`."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run([sys.executable, os.path.join(ROOT, script), *args],
                        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
  assert proc.returncode == expect, proc.stderr[-3000:]
  return proc


def read_key_values(path):
  """{key: float(value)} of a results file's `key = value` lines (eval_results.txt)."""
  values = {}
  for line in open(path, encoding="utf-8"):
    key, _, value = line.strip().partition(" = ")
    values[key] = float(value)
  return values
