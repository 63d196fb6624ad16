"""Profile: where a small pretraining step's time goes, per op class.

  python -m benchmarks.studies.profile_small_step                 # Korean shape
  python -m benchmarks.studies.profile_small_step --shape=demo    # quickstart's shape
  python -m benchmarks.studies.profile_small_step --steps=20 --markdown

Builds the pretraining model (heads.build_pretraining_model), the real loss
(heads.pretraining_loss), AdamWeightDecay and bert/training/loop.py's own step and loop
(make_train_step / make_train_loop: forward, loss, gradient, clip to 1.0, apply) on
synthetic batches of the shape, runs a warm-up call (tracing), then records `--steps`
steps with TensorFlow's profiler (tf.profiler.experimental) and reads the trace
(xplane.pb) directly: every TensorFlow op executed on the inter-op threads is put into
one class by its name (the Keras layer path and the op type), and the classes' summed
op time per step is printed next to the step's wall time. Op time is summed over the
threads that run ops (2 on a 2-core machine), so it can exceed the wall time; the
difference between the executor's time and the ops' time is the executor's own
per-op overhead. XLA (--xla) fuses the step into a few clusters: the breakdown is then
per cluster, not per op class, so the default profiles the plain graph.
"""

import argparse
import collections
import glob
import os
import re
import tempfile
import time

from benchmarks.parts import machine
from benchmarks.parts import profiler_trace
from benchmarks.parts import small_step

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# (class, regex on "op/name:OpType"), first match wins.
CLASSES = [
    ("optimizer update (AdamWeightDecay, per variable)", r"AdamWeightDecay|/Lamb/"),
    ("gradient clipping (global norm)", r"clip_by_global_norm|global_norm"),
    ("MLM output over the vocabulary: matmuls (fwd+bwd)",
     r"cls_predictions_1/Tensordot/.*MatMul|cls_predictions_1/MatMul"),
    ("MLM output: bias add, transposes of the tied table",
     r"cls_predictions_1/(add_1|transpose|Tensordot|Cast|MatMul)"),
    ("MLM softmax cross-entropy + accuracy over the vocabulary",
     r"SparseSoftmaxCrossEntropy|ArgMax"),
    ("MLM gather of the predicted positions (fwd+bwd)",
     r"cls_predictions_1/.*(Gather|take_along_axis|UnsortedSegmentSum|ScatterNd)"),
    ("MLM transform (dense + GELU + LayerNorm)", r"cls_predictions_1/"),
    ("embedding gradient: gathered rows to a dense table + adds",
     r"^(while/body/_\d+/)*while/(AddN|UnsortedSegmentSum)"),
    ("dropout: random numbers", r"dropout.*(random|Random)"),
    ("dropout: masks and scaling", r"dropout"),
    ("encoder matmuls (dense layers, fwd+bwd)",
     r"bert_1/layer_\d+_1/(query|key|value|dense|intermediate|output)_1/.*MatMul"),
    ("attention scores and context (batched matmuls)", r"layer_\d+_1/.*BatchMatMul"),
    ("LayerNorm (fwd+bwd)", r"LayerNorm|layer_norm"),
    ("GELU + bias adds (fwd+bwd)", r"intermediate_1/|/(query|key|value|dense|output)_1/"),
    ("attention softmax, scale and mask (fwd+bwd)",
     r"layer_\d+_1/.*(Softmax|softmax|/mul|/add|/Cast|attention_bias|Mul|Add)"),
    ("embedding lookup, sum (fwd+bwd)", r"embeddings_1/"),
    ("encoder reshapes/transposes and other encoder ops", r"bert_1/"),
    ("NSP head (pooler, output, loss)", r"pooler|seq_relationship"),
    ("loss, metrics and the rest", r"."),
]


def classify(name):
  for label, pattern in CLASSES:
    if re.search(pattern, name):
      return label
  return "loss, metrics and the rest"


def read_trace(path, steps):
  """xplane.pb -> (ms per step by class, op count per step, executor ms per step)."""
  by_class = collections.Counter()
  ops = executor = 0
  for name, duration in profiler_trace.compute_events(path):
    if name == "ExecutorState::Process":
      executor += duration
    elif profiler_trace.is_op(name):
      by_class[classify(name)] += duration
      ops += 1
  scale = 1e9 * steps
  return ({k: v / scale for k, v in by_class.items()}, ops / steps, executor / scale)


def profile(shape, steps, xla, repeats=3):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  run = small_step.build(shape, xla=xla)
  run.loop(1)
  rates = [run.rate(steps) for _ in range(repeats)]
  logdir = tempfile.mkdtemp(prefix="profile-small-")
  tf.profiler.experimental.start(logdir)
  started = time.perf_counter()
  run.loop(steps)
  wall = (time.perf_counter() - started) / steps * 1e3
  tf.profiler.experimental.stop()
  path = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0]
  by_class, ops, executor = read_trace(path, steps)
  return rates, wall, by_class, ops, executor


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--shape", default="korean", choices=sorted(small_step.SHAPES))
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--xla", action="store_true")
  parser.add_argument("--markdown", action="store_true", help="print a markdown table")
  args = parser.parse_args()
  rates, wall, by_class, ops, executor = profile(args.shape, args.steps, args.xla)
  total = sum(by_class.values())
  print(f"{small_step.describe(args.shape)}, XLA {'on' if args.xla else 'off'}, "
        f"{machine.cpu_model()}")
  print("unprofiled rates (sequences/s): " + ", ".join(f"{r:.1f}" for r in rates))
  print(f"profiled step: {wall:.1f} ms wall; {total:.1f} ms op time summed over the op "
        f"threads; {ops:.0f} ops a step; executor {executor:.1f} ms "
        f"(of which per-op overhead {executor - total:.1f} ms)")
  rows = sorted(by_class.items(), key=lambda kv: -kv[1])
  if args.markdown:
    print("| op class | ms / step | share of op time |\n|---|---|---|")
    for label, ms in rows:
      print(f"| {label} | {ms:.1f} | {100 * ms / total:.0f}% |")
  else:
    for label, ms in rows:
      print(f"  {label:<62} {ms:7.2f} ms  {100 * ms / total:5.1f}%")


if __name__ == "__main__":
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  main()
