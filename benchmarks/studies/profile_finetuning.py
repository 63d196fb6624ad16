"""Profile: where a fine-tuning step's time goes in float32 and bfloat16, per op type.

  python -m benchmarks.studies.profile_finetuning [--steps=10] [--seq=128] [--batch=32]

For each --dtype (bfloat16 only on a CPU with its units) builds what finetune.run builds
for run_classifier.py at the shared MiniLM's shape (benchmarks/parts/train_run.py: the
classifier model, AdamWeightDecay, loop.make_train_step and make_train_loop) on
synthetic batches, traces with a first loop call, times the best of two more, then
records one loop call of --steps steps with TensorFlow's profiler and prints the op
types by op time per step, summed over the threads that run ops.
"""

import argparse
import time

from benchmarks.parts import machine
from benchmarks.parts import profiler_trace
from benchmarks.parts import train_run
from bert.utils import cpu_choice

# The shared MiniLM (uncased_L-6_H-384_A-12) and BERT's English vocabulary.
MINILM = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
              intermediate_size=1536, vocab_size=train_run.VOCAB)


def profile(dtype, steps, seq, batch):
  run = train_run.build(MINILM, task="classifier", seq=seq, batch=batch, dtype=dtype)
  run.loop(steps)  # traces
  best = float("inf")
  for _ in range(2):
    started = time.perf_counter()
    run.loop(steps)
    best = min(best, time.perf_counter() - started)
  print(f"--dtype={dtype}: {best / steps * 1000:.0f} ms a step of {batch} at seq {seq} "
        f"(best of 2 loop calls of {steps} steps after a traced one)")
  profiler_trace.print_op_times(profiler_trace.op_times(lambda: run.loop(steps)), top=16,
                                per=steps)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--seq", type=int, default=128)
  parser.add_argument("--batch", type=int, default=32)
  args = parser.parse_args()
  print(f"{machine.cpu_model()}; {machine.load_average()}")
  dtypes = ["float32"] + (["bfloat16"] if cpu_choice.this_cpu().has_bfloat16 else [])
  for dtype in dtypes:
    profile(dtype, args.steps, args.seq, args.batch)


if __name__ == "__main__":
  main()
