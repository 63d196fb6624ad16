"""One side of benchmarks/bench_peers.py, in a process of its own (timed whole from outside).

  python benchmarks/parts/peer_worker.py REQUEST.json    # by path, in this venv or .venv-hf

REQUEST.json (written by bench_peers.py):
  kind       "litert" (ai-edge-litert, a .tflite of the export's litert/), "tf" (the
             export's token-id SavedModel, `ids/`, float32) or "ort" (an .onnx file);
  model      the file or folder; threads: intra-op threads (every side the same);
  ids_file   the pre-tokenized rows (.npz: `ids` concatenated, `offsets`), the same file
             for every side; plan_file: peer_batches.write_plan's batches (throughput)
             or null (latency: batch 1, every row, one at a time, in file order);
  spinning   ORT only: session.intra_op.allow_spinning ("1" or "0");
  out_file   where the JSON result goes; probs_file: class probabilities (.npy, row order).
The result: load_s (model load and first call), run_s (every batch), digest (the batches
this process ran, recomputed from what it iterated, for the driver's equal-order check),
latency percentiles in latency mode, and versions. Nothing here imports the bert package,
so the ORT side runs in .venv-hf beside torch and transformers.
"""

import json
import os
import sys
import time

import numpy as np

if __package__:  # imported as benchmarks.parts.peer_worker (the driver's tests, a study)
  from . import peer_batches
else:  # run by path in a venv that may not hold this project: this folder is on sys.path
  import peer_batches  # pylint: disable=g-import-not-at-top


def read_rows(ids_file):
  data = np.load(ids_file)
  ids, offsets = data["ids"], data["offsets"]
  return [ids[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def pad(rows):
  """(ids, mask, segments) int32 [batch, longest row]; single sentences, segment 0."""
  length = max(len(r) for r in rows)
  ids = np.zeros((len(rows), length), np.int32)
  mask = np.zeros_like(ids)
  for i, row in enumerate(rows):
    ids[i, :len(row)] = row
    mask[i, :len(row)] = 1
  return ids, mask, np.zeros_like(ids)


def _softmax(logits):
  logits = np.asarray(logits, np.float64)
  e = np.exp(logits - logits.max(-1, keepdims=True))
  return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def _pick_output(outputs):
  """Class probabilities from a dict of named outputs (probabilities, else logits)."""
  for key in sorted(outputs):
    if "prob" in key.lower():
      return np.asarray(outputs[key])
  for key in sorted(outputs):
    if "logit" in key.lower():
      return _softmax(outputs[key])
  if len(outputs) == 1:
    return _softmax(next(iter(outputs.values())))
  raise SystemExit(f"no probabilities or logits among outputs {sorted(outputs)}")


def litert_runner(request):
  from ai_edge_litert.interpreter import Interpreter  # pylint: disable=g-import-not-at-top
  import ai_edge_litert  # pylint: disable=g-import-not-at-top
  interpreter = Interpreter(model_path=request["model"], num_threads=int(request["threads"]))
  runner = interpreter.get_signature_runner("serving_default")

  def run(ids, mask, segments):
    feed = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    return _pick_output(runner(**{k: v for k, v in feed.items()
                                  if k in runner.get_input_details()}))
  return run, f"ai-edge-litert {getattr(ai_edge_litert, '__version__', '?')}"


def tf_runner(request):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  threads = int(request["threads"])
  tf.config.threading.set_intra_op_parallelism_threads(threads)
  tf.config.threading.set_inter_op_parallelism_threads(threads)
  loaded = tf.saved_model.load(request["model"])
  signature = loaded.signatures["serving_default"]
  names = set(signature.structured_input_signature[1])

  def run(ids, mask, segments):
    feed = {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "input_word_ids": ids, "input_type_ids": segments}
    out = signature(**{k: tf.constant(v) for k, v in feed.items() if k in names})
    return _pick_output({k: v.numpy() for k, v in out.items()})
  return run, f"tensorflow {tf.__version__}"


def ort_runner(request):
  import onnxruntime  # pylint: disable=g-import-not-at-top
  threads = int(request["threads"])
  options = onnxruntime.SessionOptions()
  options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
  options.intra_op_num_threads = threads
  options.inter_op_num_threads = 1
  options.add_session_config_entry("session.intra_op.allow_spinning",
                                   str(request.get("spinning", "1")))
  session = onnxruntime.InferenceSession(request["model"], options,
                                         providers=["CPUExecutionProvider"])
  inputs = session.get_inputs()
  output_names = [o.name for o in session.get_outputs()]

  def role(name):
    name = name.lower()
    return "mask" if "mask" in name else "segments" if ("type" in name or "segment" in name) \
        else "ids"

  def run(ids, mask, segments):
    arrays = {"ids": ids, "mask": mask, "segments": segments}
    feed = {i.name: arrays[role(i.name)].astype(
        np.int64 if "int64" in i.type else np.int32) for i in inputs}
    values = session.run(None, feed)
    return _pick_output(dict(zip(output_names, values)))
  return run, f"onnxruntime {onnxruntime.__version__}"


def run_plan(run, rows, batches, probabilities):
  """Runs `batches` (lists of row indices) through `run`, filling `probabilities` by row;
  returns the digest of the batches as they were run (the driver compares it with the
  plan's)."""
  ran = []
  for batch in batches:
    probabilities[batch] = run(*pad([rows[i] for i in batch]))
    ran.append(list(batch))
  return peer_batches.order_digest(ran)


RUNNERS = {"litert": litert_runner, "tf": tf_runner, "ort": ort_runner}


def main():
  with open(sys.argv[1], encoding="utf-8") as handle:
    request = json.load(handle)
  rows = read_rows(request["ids_file"])
  started = time.perf_counter()
  run, versions = RUNNERS[request["kind"]](request)
  run(*pad(rows[:1]))  # the first call builds kernels/delegates: counted as load
  load_s = time.perf_counter() - started
  result = {"load_s": load_s, "versions": versions}
  probabilities = np.zeros((len(rows), 2), np.float32)
  if request.get("plan_file"):
    with open(request["plan_file"], encoding="utf-8") as handle:
      plan = json.load(handle)
    started = time.perf_counter()
    result["digest"] = run_plan(run, rows, plan["batches"], probabilities)
    result["run_s"] = time.perf_counter() - started
  else:  # latency: batch 1, every row in file order, each timed alone
    times = []
    for i, row in enumerate(rows):
      started = time.perf_counter()
      probabilities[i] = run(*pad([row]))[0]
      times.append(time.perf_counter() - started)
    times = np.array(times) * 1000
    result.update({f"p{q}_ms": float(np.percentile(times, q)) for q in (50, 95, 99)})
    result["mean_ms"] = float(times.mean())
    result["digest"] = peer_batches.order_digest([[i] for i in range(len(rows))])
  np.save(request["probs_file"], probabilities)
  with open(request["out_file"], "w", encoding="utf-8") as handle:
    json.dump(result, handle)


if __name__ == "__main__":
  main()
