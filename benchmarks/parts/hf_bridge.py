"""This project's side of benchmarks/parts/hf_side.py: find the Hugging Face interpreter, run a
mode there, read its one JSON line; and the machine facts every benchmark row names (CPU
model, load, threads). Shared by the benchmarks."""

import json
import os
import platform
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HF_SIDE = os.path.join(HERE, "hf_side.py")
HF_HINT = ("Hugging Face side not installed: `make bench-hf-setup` (or set BERT_HF_PYTHON "
           "to a Python with torch + transformers)")


def hf_python():
  """The interpreter with torch + transformers ($BERT_HF_PYTHON, else .venv-hf's), or None."""
  path = os.environ.get("BERT_HF_PYTHON") or os.path.join(ROOT, ".venv-hf", "bin", "python")
  return path if os.path.exists(path) else None


def run_hf(mode, request, workdir, timeout=3600):
  """Runs hf_side.py MODE in its own process; (result dict, None) or (None, why)."""
  path = os.path.join(workdir, f"{mode}-request.json")
  with open(path, "w", encoding="utf-8") as handle:
    json.dump(request, handle)
  proc = subprocess.run([hf_python(), HF_SIDE, mode, path], capture_output=True, text=True,
                        timeout=timeout)
  if proc.returncode != 0:
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return None, f"Hugging Face side failed (exit {proc.returncode}): {last[:200]}"
  return json.loads(proc.stdout.strip().splitlines()[-1]), None


def cpu_model():
  """'AMD EPYC (family 25 model 1; AVX2, no AVX-512), 2 logical CPUs': /proc/cpuinfo's
  model name, which alone does not tell two CPUs of one brand apart, with its family,
  model and widest vector instructions (what decides a matmul peak)."""
  fields = {}
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
      for line in handle:
        key, _, value = line.partition(":")
        if not line.strip():
          break  # the first processor's block is enough
        fields.setdefault(key.strip(), value.strip())
  except OSError:
    return f"{platform.processor() or 'unknown CPU'}, {os.cpu_count()} logical CPUs"
  flags = set(fields.get("flags", "").split())
  vector = ["AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"]
  vector += [name for flag, name in (("avx512_bf16", "AVX512-BF16"), ("amx_tile", "AMX"))
             if flag in flags]
  if "avx2" in flags and "avx512f" not in flags:
    vector.append("no AVX-512")
  return (f"{fields.get('model name', 'unknown CPU')} (family {fields.get('cpu family', '?')}"
          f" model {fields.get('model', '?')}; {', '.join(vector)}), "
          f"{os.cpu_count()} logical CPUs")


def spread(values, fmt="{:,.1f}"):
  """'median (min-max over N rounds)' of a list of numbers."""
  ordered = sorted(values)
  median = statistics.median(ordered)
  if len(ordered) == 1:
    return fmt.format(median) + " (one round)"
  return (fmt.format(median) + " (" + fmt.format(ordered[0]) + "-" + fmt.format(ordered[-1]) +
          f" over {len(ordered)} rounds)")


def load_average():
  return "load avg " + "/".join(f"{x:.2f}" for x in os.getloadavg())


def threads():
  """CPU threads this process may use: what both sides are given."""
  return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
