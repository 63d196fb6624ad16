"""This project's side of benchmarks/parts/hugging_face_worker.py: find the Hugging Face interpreter,
run a mode there, read its one JSON line. Shared by the benchmarks."""

import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HF_SIDE = os.path.join(HERE, "hugging_face_worker.py")
HF_HINT = ("Hugging Face side not installed: `make bench-hf-setup` (or set BERT_HF_PYTHON "
           "to a Python with torch + transformers)")


def hf_python():
  """The interpreter with torch + transformers ($BERT_HF_PYTHON, else .venv-hf's), or None."""
  path = os.environ.get("BERT_HF_PYTHON") or os.path.join(ROOT, ".venv-hf", "bin", "python")
  return path if os.path.exists(path) else None


def run_hf(mode, request, workdir, timeout=3600):
  """Runs hugging_face_worker.py MODE in its own process; (result dict, None) or (None, why)."""
  path = os.path.join(workdir, f"{mode}-request.json")
  with open(path, "w", encoding="utf-8") as handle:
    json.dump(request, handle)
  proc = subprocess.run([hf_python(), HF_SIDE, mode, path], capture_output=True, text=True,
                        timeout=timeout)
  if proc.returncode != 0:
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return None, f"Hugging Face side failed (exit {proc.returncode}): {last[:200]}"
  return json.loads(proc.stdout.strip().splitlines()[-1]), None
