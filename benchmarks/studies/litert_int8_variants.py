"""Candidate faster paths for the LiteRT int8 predictor, timed on the same rows (no TF).

  python -m benchmarks.studies.litert_int8_variants --export_dir=EXPORT [--sentences=1000]
      [--rounds=3] [--data=train|dev]

Each variant runs the same pre-tokenized SST-2 rows (sst2.tokenize, as bench_peers.py) in the same
sorted batches of 32 (peer_batches.make_batches), in this one process, rounds
interleaved; the model time (median) and, on --data=dev, the accuracy:
  baseline        the export's model_int8.tflite as predict_litert.py runs it
  bucket16/32     each batch padded up to a multiple of 16/32 tokens: fewer distinct input
                  shapes, so fewer re-preparations of XNNPACK's kernels on resize
  latest          Interpreter(experimental_default_delegate_latest_features=True)
  no_xnnpack      the built-in kernels without the default XNNPACK delegate
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarks.parts import peer_batches
from benchmarks.parts import peer_worker
from benchmarks.parts import machine
from benchmarks.parts import sst2


def make_runner(model_file, threads, bucket=0, **kwargs):
  from ai_edge_litert.interpreter import Interpreter  # pylint: disable=g-import-not-at-top
  interpreter = Interpreter(model_path=model_file, num_threads=threads, **kwargs)
  runner = interpreter.get_signature_runner("serving_default")

  def run(ids, mask, segments):
    if bucket:
      width = -(-ids.shape[1] // bucket) * bucket
      grow = ((0, 0), (0, width - ids.shape[1]))
      ids, mask, segments = (np.pad(a, grow) for a in (ids, mask, segments))
    out = runner(input_ids=ids, input_mask=mask, segment_ids=segments)
    return peer_worker._pick_output(out)  # pylint: disable=protected-access
  return run


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--export_dir", required=True)
  parser.add_argument("--sentences", type=int, default=1000)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--data", default="train", choices=("train", "dev"))
  parser.add_argument("--order", default="sorted", choices=peer_batches.ORDERS)
  args = parser.parse_args()
  from ai_edge_litert.interpreter import OpResolverType  # pylint: disable=g-import-not-at-top
  model = os.path.join(args.export_dir, "litert", "model_int8.tflite")
  threads = machine.threads()
  texts, labels = sst2.read_sentences(args.data, args.sentences)
  with tempfile.TemporaryDirectory() as work:
    ids_file = os.path.join(work, "ids.npz")
    lengths = sst2.tokenize(model, texts, ids_file)
    rows = peer_worker.read_rows(ids_file)
  batches = peer_batches.make_batches(lengths, 32, args.order)
  variants = {
      "baseline": make_runner(model, threads),
      "bucket16": make_runner(model, threads, 16),
      "bucket32": make_runner(model, threads, 32),
      "latest": make_runner(model, threads,
                            experimental_default_delegate_latest_features=True),
      "no_xnnpack": make_runner(
          model, threads,
          experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)}
  seconds = {name: [] for name in variants}
  probs = {}
  loads = []
  for name, run in variants.items():  # warm-up: first calls build kernels
    run(*peer_worker.pad(rows[:1]))
  for round_index in range(args.rounds):
    names = list(variants)
    names = names[round_index % len(names):] + names[:round_index % len(names)]
    for name in names:
      loads.append(os.getloadavg()[0])
      probabilities = np.zeros((len(rows), 2), np.float32)
      started = time.perf_counter()
      peer_worker.run_plan(variants[name], rows, batches, probabilities)
      seconds[name].append(time.perf_counter() - started)
      probs[name] = probabilities
  base = statistics.median(seconds["baseline"])
  print(f"{machine.cpu_model()}; {threads} threads; {len(rows):,} SST-2 {args.data} rows, "
        f"{args.order} batches of 32; {args.rounds} rounds; load avg (1 min) "
        f"{min(loads):.2f}-{max(loads):.2f}; {time.strftime('%Y-%m-%d')}")
  print("| variant | model s (median) | speed-up over baseline | same class as baseline |"
        + (" accuracy |" if args.data == "dev" else ""))
  print("|---|---|---|---|" + ("---|" if args.data == "dev" else ""))
  for name, values in seconds.items():
    same = int((probs[name].argmax(1) == probs["baseline"].argmax(1)).sum())
    acc = (f" {100 * float((probs[name].argmax(1) == np.array(labels)).mean()):.2f} |"
           if args.data == "dev" else "")
    print(f"| {name} | {statistics.median(values):.2f} | {base / statistics.median(values):.2f}x"
          f" | {same:,} of {len(rows):,} |{acc}")


if __name__ == "__main__":
  main()
