"""Study: what the portable LayerNorm costs a CPU when predicting, in process and served.

  python -m benchmarks.studies.portable_layer_norm --baseline=DIR [--rounds=3] [--calls=10]

DIR is another checkout (e.g. `git archive <commit> | tar -x -C DIR`, with the one-op
fused-batch-norm LayerNorm). Each round runs one fresh process per tree, in turn (A/B, then
B/A), each importing its own tree's `bert`: a classifier of the shared MiniLM's size
(L=6 H=384 A=12 I=1536, vocabulary 30,522, random weights), float32, batch 32, sequence
128, and times
  predict  the model's forward pass in a tf.function (what run_classifier's prediction runs);
  served   its token-id SavedModel, written as run_classifier.py --export_dir writes it
           (serving.write_serving_models) and loaded back with tf.saved_model.load, through
           its serving_default signature;
each the median of --calls calls after two warm-up calls, in sequences/s. Prints each
tree's median (min, max over rounds), the per-round ratio ours / baseline, and the load.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH, SEQ = 32, 128
CONFIG = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
          "num_attention_heads": 12, "intermediate_size": 1536, "type_vocab_size": 2,
          "max_position_embeddings": 512}


def _rate(call, inputs, calls):
  for _ in range(2):
    call(inputs)
  times = []
  for _ in range(calls):
    start = time.perf_counter()
    call(inputs)
    times.append(time.perf_counter() - start)
  return BATCH / statistics.median(times)


def child(calls):
  """Runs with the tree to time as its PYTHONPATH (its `bert`); prints one JSON line."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import keras  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import heads, modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(1)
  model, _ = heads.build_classifier_model(modeling.BertConfig(**CONFIG), 2)
  rng = np.random.default_rng(2)
  inputs = {"input_ids": tf.constant(rng.integers(5, 30000, (BATCH, SEQ)), tf.int32),
            "input_mask": tf.ones((BATCH, SEQ), tf.int32),
            "segment_ids": tf.zeros((BATCH, SEQ), tf.int32)}
  forward = tf.function(lambda x: model(x, training=False)["logits"])
  result = {"root": os.path.realpath(modeling.__file__),
            "predict": _rate(forward, inputs, calls)}
  with tempfile.TemporaryDirectory() as tmp:
    export_dir = os.path.join(tmp, "export")
    serving.write_serving_models(export_dir, serving.classifier_endpoints(model, ["0", "1"]),
                                 track=[model])
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    result["served"] = _rate(lambda x: signature(**x), inputs, calls)
  print(json.dumps(result))


def main():
  args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
  if "--child" in sys.argv:
    child(int(args.get("calls", 10)))
    return
  trees = [("ours", ROOT), ("baseline", os.path.abspath(args["baseline"]))]
  rounds, calls = int(args.get("rounds", 3)), int(args.get("calls", 10))
  found = {}
  for r in range(rounds):
    for name, root in (trees if r % 2 == 0 else trees[::-1]):
      proc = subprocess.run(
          [sys.executable, os.path.abspath(__file__), "--child", f"--calls={calls}"],
          cwd=root, capture_output=True, text=True, timeout=1800,
          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": root})
      if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
      result = json.loads(proc.stdout.strip().splitlines()[-1])
      if not result["root"].startswith(os.path.realpath(root)):
        raise RuntimeError(f"{name} ran {result['root']}")
      for key in ("predict", "served"):
        found.setdefault((name, key), []).append(result[key])
  with open("/proc/loadavg", encoding="utf-8") as handle:
    load = " ".join(handle.read().split()[:3])
  for key in ("predict", "served"):
    for name, _ in trees:
      values = found[(name, key)]
      print(f"{key:8} {name:9} {statistics.median(values):8.1f} sequences/s "
            f"(min {min(values):.1f} max {max(values):.1f}, {rounds} rounds)")
    ratios = [a / b for a, b in zip(found[("ours", key)], found[("baseline", key)])]
    print(f"{key:8} ours / baseline {statistics.median(ratios):.3f} "
          f"(per round: {', '.join(f'{x:.3f}' for x in ratios)})")
  print(f"load average {load}")


if __name__ == "__main__":
  main()
