"""Benchmark: training memory per sequence length, against the original's out-of-memory table.

  python -m benchmarks.bench_memory           # BERT-Base and BERT-Large, seq 128/512
  python -m benchmarks.bench_memory --quick   # BERT-Base only
  python -m benchmarks.bench_memory --model=large

The original README lists the largest batch that fits a 12 GB GPU when fine-tuning
(BERT-Base: 32 at seq 128, 6 at seq 512; BERT-Large: 6 at 128, none at 512). Here each
(model, seq, batch) trains two steps of run_pretraining's own step and loop
(benchmarks/parts/train_run.py: loop.make_train_step, AdamWeightDecay, the masked-LM + NSP
heads, float32) in its own process, and its peak resident memory is read from the kernel (wait4's ru_maxrss).
Two batch sizes per sequence length give, by difference, the memory one more sequence
costs (activations kept for the backward pass) and the fixed part (weights, gradients,
two Adam slots, the runtime). The runtime's own share (TensorFlow's libraries and heap
before the model exists) is measured in the same process and left out of the estimate
for an accelerator, where it is host memory.

Measured on CPU: TensorFlow's CPU and GPU allocators keep different scratch, so read the
estimate as the size of the live tensors, not a promise for one GPU. With
--gradient_accumulation_steps=K, a batch of B needs only the memory of B/K sequences.
`run(quick=False)` returns [{name, value, unit, note}] for benchmarks/run_all.py.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile

from benchmarks.parts import train_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GPU_MB = 12 * 1024  # the original README's 12 GB GPU
# The original README's table (fine-tuning, 12 GB GPU): model -> {seq: max batch}.
ORIGINAL_MAX_BATCH = {"base": {128: 32, 512: 6}, "large": {128: 6, 512: 0}}
# Two batch sizes per sequence length, far enough apart that the activations they add
# stand out of the allocator's slack.
# BERT-Large at seq 512 stays at 1 and 2: batch 4 outgrows a 24 GB machine.
BATCHES = {"base": {128: (8, 16), 512: (2, 4)}, "large": {128: (8, 16), 512: (1, 2)}}


def parameter_count(hidden_size, num_hidden_layers, intermediate_size, vocab_size=30522,
                    max_position_embeddings=512, type_vocab_size=2, **_):
  """Trainable parameters of the pretraining model (encoder, pooler, masked-LM and NSP
  heads; the masked-LM output layer shares the word embeddings)."""
  h, i = hidden_size, intermediate_size
  embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * h + 2 * h
  layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
  pooler = h * h + h
  heads = (h * h + h) + 2 * h + vocab_size + (2 * h + 2)
  return embeddings + num_hidden_layers * layer + pooler + heads


def _child(name, seq, batch):
  """Runs in a subprocess: the runtime's memory, then two training steps."""
  import tensorflow  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  print(json.dumps({"baseline_mb": baseline_mb}), flush=True)
  run = train_run.build(dict(train_run.CONFIGS[name], vocab_size=train_run.VOCAB),
                        "pretrain", seq, max(20, seq * 20 // 128), batch)
  run.loop(1)
  run.loop(1)


def run(quick=False, names=None):
  names = names or (["base"] if quick else ["base", "large"])
  rows = []
  for name in names:
    params = parameter_count(**train_run.CONFIGS[name])
    state_mb = 16 * params / 2 ** 20  # weights, gradients and two Adam slots, float32
    for seq in (128, 512):
      peaks = {}
      batches = BATCHES[name][seq]
      try:
        for batch in batches:
          peaks[batch] = _measure(name, seq, batch)
          print(f"[memory] {name} seq {seq} batch {batch}: peak {peaks[batch][0]:.0f} MB, "
                f"runtime {peaks[batch][1]:.0f} MB", file=sys.stderr, flush=True)
      except RuntimeError as error:  # out of memory, most likely: the other rows still count
        rows.append({"name": f"memory {name} seq{seq}", "value": "failed", "unit": "",
                     "note": str(error)[:200]})
        continue
      (low, base_low), (high, _) = peaks[batches[0]], peaks[batches[-1]]
      per_sequence = (high - low) / (batches[-1] - batches[0])
      if per_sequence <= 0:  # the activations drowned in the allocator's slack
        rows.append({"name": f"memory {name} seq{seq}", "value": "unresolved", "unit": "",
                     "note": f"peak {low:.0f} MB at batch {batches[0]}, {high:.0f} MB at "
                             f"{batches[-1]}: use batches further apart"})
        continue
      fixed = low - batches[0] * per_sequence - base_low
      fits = int((GPU_MB - fixed) // per_sequence) if fixed < GPU_MB else 0
      original = ORIGINAL_MAX_BATCH[name][seq]
      rows.append({"name": f"memory {name} seq{seq} per sequence", "value": round(per_sequence),
                   "unit": "MB", "note": f"peak resident at batch {batches[0]} and "
                                         f"{batches[-1]}: {low:.0f} and {high:.0f} MB"})
      rows.append({"name": f"memory {name} seq{seq} fixed", "value": round(fixed),
                   "unit": "MB", "note": f"model state 16 B x {params / 1e6:.0f}M parameters "
                                         f"= {state_mb:.0f} MB of it; runtime's "
                                         f"{base_low:.0f} MB left out"})
      rows.append({"name": f"memory {name} seq{seq} max batch in 12 GB (estimate)",
                   "value": fits, "unit": "sequences",
                   "note": f"original README: {original}; with gradient accumulation any "
                           f"batch trains {'(one sequence fits)' if fits >= 1 else '(not even one sequence fits)'}"})
  return rows


def _measure(name, seq, batch):
  """(peak resident MB, runtime baseline MB) of one child process."""
  with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_memory", "--child", name, str(seq),
         str(batch)],
        stdout=out, stderr=err, cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    # wait4 reports this child's own peak resident set, not the largest of all children.
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    if process.returncode != 0:
      last = (err.read().strip().splitlines() or [""])[-1]
      raise RuntimeError(f"{name} seq {seq} batch {batch}: exit {process.returncode} "
                         f"(-9: killed, out of memory?) {last[-200:]}")
    baseline = json.loads(out.read().splitlines()[0])["baseline_mb"]
  return usage.ru_maxrss / 1024, baseline


def main():
  if len(sys.argv) > 1 and sys.argv[1] == "--child":
    _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    return
  models = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--model=")]
  for row in run(quick="--quick" in sys.argv, names=models or None):
    print(f"{row['name']:<48} {row['value']!s:>8} {row['unit']:<10} {row['note']}")


if __name__ == "__main__":
  main()
