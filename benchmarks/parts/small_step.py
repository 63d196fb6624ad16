"""The small pretraining step (the Korean and demo shapes): bench_pretraining.py's `small`
workload and profile_small_step.py's.

Shapes: "korean" is reproduce/korean.sh's model (L=4 H=128 A=4 I=512, sequence 64,
batch 32, vocabulary 15,742, 10 predictions), "korean64" the same at batch 64 (the
short-budget recipe's batch, docs/new_language.md); "demo" is quickstart.py's (L=2 H=128 A=2
I=512, sequence 64, batch 32, 10 predictions, its 4,000-piece vocabulary).

`build(shape, xla)` is train_run.build at the shape: run_pretraining's one_device
strategy, step and loop on synthetic batches held in memory; `Run.rate(steps)` times one
loop call of `steps` steps after the caller made a warm-up call.

`python -m benchmarks.parts.small_step SHAPE XLA STEPS REPS` (what bench_pretraining.py
--small starts, one process per measurement) prints one JSON line: `reps` rates after a
warm-up call, and the tree whose `bert` ran them. Started with another checkout as its
working folder (bench_pretraining.py --baseline=DIR), that tree's `bert` is the one
imported, so one run times both trees.

Model FLOPs a sequence (`flops_per_sequence`), forward + backward = 3x forward:
  6 x the encoder's matmul parameters (4 H^2 + 2 H I a layer) x tokens
  + 12 x layers x seq^2 x H                      (attention scores and context)
  + 6 x P x (H^2 + H V)                           (masked-LM transform and output)
  + 6 x (H^2 + 2 H)                               (pooler and next-sentence output)
"""

import json
import os
import sys

from benchmarks.parts import train_run

SHAPES = {
    "korean": dict(layers=4, hidden=128, heads=4, intermediate=512, seq=64, batch=32,
                   vocab=15742, predictions=10),
    # The same model at the short-budget recipe's batch (docs/new_language.md).
    "korean64": dict(layers=4, hidden=128, heads=4, intermediate=512, seq=64, batch=64,
                     vocab=15742, predictions=10),
    "demo": dict(layers=2, hidden=128, heads=2, intermediate=512, seq=64, batch=32,
                 vocab=4000, predictions=10),
}


def describe(shape):
  s = SHAPES[shape]
  return (f"{shape}: L={s['layers']} H={s['hidden']} A={s['heads']} I={s['intermediate']} "
          f"seq {s['seq']} batch {s['batch']} vocab {s['vocab']:,} {s['predictions']} "
          "predictions")


def flops_per_sequence(shape):
  s = SHAPES[shape]
  h, layers, inter, seq = s["hidden"], s["layers"], s["intermediate"], s["seq"]
  matmul_params = layers * (4 * h * h + 2 * h * inter)
  return (6 * matmul_params * seq + 12 * layers * seq * seq * h
          + 6 * s["predictions"] * (h * h + h * s["vocab"]) + 6 * (h * h + 2 * h))


def build(shape, xla=False, seed=0):
  s = SHAPES[shape]
  config = dict(vocab_size=s["vocab"], hidden_size=s["hidden"],
                num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                intermediate_size=s["intermediate"],
                max_position_embeddings=max(128, s["seq"]))
  return train_run.build(config, "pretrain", s["seq"], s["predictions"], s["batch"],
                         xla=xla, seed=seed)


def child(shape, xla, steps, reps):
  """`reps` rates (sequences/s) of `steps`-step loop calls after a warm-up call, and the
  tree whose `bert` ran them."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import bert  # pylint: disable=g-import-not-at-top
  try:  # the tree being timed (a baseline from before cpu_memory.py has none)
    from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  except ImportError:
    cpu_memory = None
  if cpu_memory is not None:
    cpu_memory.keep_freed_memory()  # as that tree's scripts do
  run = build(shape, xla=xla)
  run.loop(2)
  return {"rates": [run.rate(steps) for _ in range(reps)],
          "code_root": os.path.dirname(os.path.dirname(os.path.abspath(bert.__file__)))}


if __name__ == "__main__":
  print(json.dumps(child(sys.argv[1], bool(int(sys.argv[2])), int(sys.argv[3]),
                         int(sys.argv[4]))))
