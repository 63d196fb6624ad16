"""This project's side of benchmarks/parts/original_worker.py: find the original release's
interpreter, start that script so that it cannot see this project, and check that what it
ran was the original's own code. Shared by the benchmarks that time the original."""

import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORIGINAL_SIDE = os.path.join(HERE, "original_worker.py")
ORIGINAL_HINT = ("the original release's side not installed: `make bench-original-setup` "
                 "(or set BERT_ORIGINAL_PYTHON to a Python with bert-tensorflow 1.0.4 and "
                 "TensorFlow)")


def original_python():
  """The interpreter of the original's venv ($BERT_ORIGINAL_PYTHON, else
  .venv-original's), or None."""
  path = (os.environ.get("BERT_ORIGINAL_PYTHON") or
          os.path.join(ROOT, ".venv-original", "bin", "python"))
  return path if os.path.exists(path) else None


def command(mode, request_path):
  """The side's command line. -E -s: neither PYTHONPATH nor the user's site-packages is
  on sys.path, only the script's folder (benchmarks/parts, which holds no `bert`, so the
  side can import worker_protocol) and the venv's own, so `import bert` finds only the
  venv's bert-tensorflow."""
  return [original_python(), "-E", "-s", ORIGINAL_SIDE, mode, request_path]


def environment():
  """os.environ without the variables that would point the side's imports elsewhere."""
  env = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
  env["TF_CPP_MIN_LOG_LEVEL"] = "3"
  return env


def check_own_modules(result, root=ROOT):
  """Raises AssertionError unless every `bert` module the side imported is a file of its
  interpreter's site-packages, and none is this project's (under root/bert)."""
  purelib = os.path.realpath(result["purelib"])
  ours = os.path.realpath(os.path.join(root, "bert"))
  for name, path in result["module_files"].items():
    path = os.path.realpath(path)
    if os.path.commonpath([path, purelib]) != purelib or \
        os.path.commonpath([path, ours]) == ours:
      raise AssertionError(f"the original's side imported {name} from {path}, not from "
                           f"its own site-packages {purelib}")
  return result


def parse_result(stdout):
  """The side's one JSON line (its last line of stdout), its modules checked."""
  return check_own_modules(json.loads(stdout.strip().splitlines()[-1]))


def run_original(mode, request, timeout=3600):
  """Runs original_worker.py MODE from a temporary folder outside this project;
  (result dict, None) or (None, why)."""
  with tempfile.TemporaryDirectory(prefix="bench-original-") as workdir:
    path = os.path.join(workdir, f"{mode}-request.json")
    with open(path, "w", encoding="utf-8") as handle:
      json.dump(request, handle)
    proc = subprocess.run(command(mode, path), capture_output=True, text=True,
                          timeout=timeout, cwd=workdir, env=environment())
  if proc.returncode != 0:
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return None, f"the original's side failed (exit {proc.returncode}): {last[:300]}"
  return parse_result(proc.stdout), None
