"""Accelerator benchmark: BERT training steps on whatever device TensorFlow sees.

  python benchmarks/bench_accelerator.py                        # the whole matrix
  python benchmarks/bench_accelerator.py --quick --json_out=r.json   # CPU smoke, < 2 min
  python benchmarks/bench_accelerator.py --models=base --workloads=pretrain128 \
      --dtypes=bfloat16 --xla=on --batch=256 --steps=20 --max_batch_search

For each model (BERT-Base, BERT-Large), workload (pretraining at seq 128 with 20 masked
predictions, at seq 512 with 80; SQuAD fine-tuning at seq 384), dtype (float32, mixed
bfloat16, mixed float16 with dynamic loss scaling) and XLA setting (off, on) it reports
examples/s, model FLOP utilisation (MFU) against the device's peak, peak memory, and
optionally the largest batch that fits; one table on stdout, the same rows as JSON with
--json_out. `--quick` runs a tiny model (H64, 2 layers, vocab 512) at short lengths
(32/64/48), every dtype x XLA setting on the first workload and the other two workloads
once: a smoke test of every path, not a figure to quote. run_all.py runs `--quick` on a
machine without a GPU (the full matrix there would take hours; bench_pretraining.py is
the CPU benchmark) and the full matrix on a GPU.

The step is built from the project's pieces (heads.build_pretraining_model /
build_squad_model with heads.pretraining_loss / squad_loss,
optimization.create_optimizer's AdamWeightDecay and clip_by_global_norm) inside a small
replica step of this file's own that mirrors training.py's (forward, loss averaged over
the global batch, gradients summed over replicas, clipped to global norm 1.0, applied;
float16: loss scaled by a dynamic scale, a non-finite step skipped and the scale
halved). training.py's loop is not called: it was being rewritten when this was written.
`--steps` steps run inside one tf.function call, on synthetic batches from a repeated
tf.data dataset distributed to the device. The first call traces (and with XLA compiles)
and is not timed; the second is, ended by reading the loss back to the host.
`--strategy=mirrored` spreads the global batch over every visible GPU.

Model FLOPs per sequence of S tokens (forward + backward = 3 x forward, so the standard
6 x parameters x tokens, plus the attention term):
  6 * N * S + 12 * L * H * S^2 + 6 * N_head * T
N = the encoder's matmul parameters, L * (4H^2 + 2HI + 5H + I) (the embedding tables are
gathered, not multiplied); 12 * L * H * S^2 = the attention scores and the weighted sum
(2 matmuls of 2 * S^2 * H FLOPs a layer, x3); N_head * T = the head's matmul parameters
times the positions it sees: masked LM (H^2 + H + H*V + V, tied embeddings) at the P
predicted positions plus next sentence (H^2 + H pooler + 2H + 2) once; SQuAD (2H + 2) at
all S positions. LayerNorm, softmax, GELU, dropout and the optimizer are not counted.
MFU = model FLOPs/s / peak. Peaks: a table of dense tensor-core figures by device name
(KNOWN_PEAKS_TFLOPS; float32 uses the TF32 figure when TensorFlow's TensorFloat-32 is on,
its default on Ampere and later); on a CPU the measured 4096x4096 tf.matmul peak of each
dtype (bench_pretraining's measurement, 1024x1024 with --quick).
Memory: on a GPU the allocator's peak bytes in use during the timed steps
(tf.config.experimental.get_memory_info after reset_memory_stats); on a CPU the process's
peak resident set during the configuration (/proc/self/status VmHWM after resetting it
through /proc/self/clear_refs), which includes TensorFlow itself and what earlier
configurations left allocated. Largest batch: doubling from --batch until an
out-of-memory error or --max_batch (GPU by default; on a CPU only with
--max_batch_search).
"""

import argparse
import json
import math
import os
import platform
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, os.path.join(HERE, "parts"), ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402  pylint: disable=g-import-not-at-top
import numpy as np  # noqa: E402  pylint: disable=g-import-not-at-top
import tensorflow as tf  # noqa: E402  pylint: disable=g-import-not-at-top

import bench_pretraining  # noqa: E402  pylint: disable=g-import-not-at-top
from bert import heads
from bert import modeling  # noqa: E402  pylint: disable=g-import-not-at-top
from bert import optimization  # noqa: E402  pylint: disable=g-import-not-at-top

MODELS = {
    "base": dict(bench_pretraining.CONFIGS["base"], vocab_size=30522),
    "large": dict(bench_pretraining.CONFIGS["large"], vocab_size=30522),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, vocab_size=512),
}
# name: (task, sequence length, masked predictions)
WORKLOADS = {"pretrain128": ("pretrain", 128, 20), "pretrain512": ("pretrain", 512, 80),
             "squad384": ("squad", 384, 0)}
QUICK_WORKLOADS = {"pretrain128": ("pretrain", 32, 5), "pretrain512": ("pretrain", 64, 10),
                   "squad384": ("squad", 48, 0)}
DTYPES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
# Examples per device and step by default (GPU; CPU runs use 2).
GPU_BATCH = {("base", "pretrain128"): 64, ("base", "pretrain512"): 16,
             ("base", "squad384"): 32, ("large", "pretrain128"): 32,
             ("large", "pretrain512"): 8, ("large", "squad384"): 16}
# Dense (no sparsity) tensor-core peaks in TFLOP/s from NVIDIA's data sheets, matched by
# the first name fragment found in the device name.
KNOWN_PEAKS_TFLOPS = (
    ("H100 PCIe", {"bfloat16": 756.0, "float16": 756.0, "float32": 51.0, "tf32": 378.0}),
    ("H100", {"bfloat16": 989.0, "float16": 989.0, "float32": 67.0, "tf32": 495.0}),
    ("H200", {"bfloat16": 989.0, "float16": 989.0, "float32": 67.0, "tf32": 495.0}),
    ("A100", {"bfloat16": 312.0, "float16": 312.0, "float32": 19.5, "tf32": 156.0}),
)
INITIAL_LOSS_SCALE = 2.0 ** 15
FLOPS_FORMULA = ("6*N*S + 12*L*H*S^2 + 6*N_head*T per sequence; N = encoder matmul "
                 "parameters L*(4H^2+2HI+5H+I); N_head*T = masked LM (H^2+H+HV+V) x P "
                 "predictions + NSP (H^2+3H+2), or SQuAD (2H+2) x S")


# --------------------------------------------------------------------------- FLOPs


def encoder_matmul_params(hidden_size, num_hidden_layers, intermediate_size, **_):
  """Kernels and biases of the q/k/v/output, intermediate and output dense layers."""
  h, i = hidden_size, intermediate_size
  return num_hidden_layers * (4 * h * h + 2 * h * i + 5 * h + i)


def model_flops_per_example(model_config, task, seq, predictions):
  """Training FLOPs of one sequence by the formula in the module docstring."""
  h, layers = model_config["hidden_size"], model_config["num_hidden_layers"]
  flops = 6 * encoder_matmul_params(**model_config) * seq + 12 * layers * h * seq * seq
  if task == "pretrain":
    vocab = model_config["vocab_size"]
    flops += 6 * (h * h + h + h * vocab + vocab) * predictions + 6 * (h * h + 3 * h + 2)
  else:
    flops += 6 * (2 * h + 2) * seq
  return flops


# --------------------------------------------------------------------------- device


def device_info(quick=False):
  """{kind, name, count, peaks (TFLOP/s by dtype), peak_source, tf32}."""
  gpus = tf.config.list_physical_devices("GPU")
  tf32 = bool(tf.config.experimental.tensor_float_32_execution_enabled())
  if not gpus:
    size = 1024 if quick else 4096
    peaks = {d: bench_pretraining.matmul_peak(getattr(tf, d), size=size) / 1e12
             for d in DTYPES}
    return {"kind": "CPU", "name": platform.processor() or platform.machine(),
            "count": 1, "peaks": peaks, "tf32": False,
            "peak_source": f"measured {size}x{size} tf.matmul, best of 3"}
  details = tf.config.experimental.get_device_details(gpus[0])
  name = details.get("device_name", "GPU")
  for fragment, table in KNOWN_PEAKS_TFLOPS:
    if fragment.lower() in name.lower():
      peaks = dict(table)
      if tf32:
        peaks["float32"] = table["tf32"]
      source = (f"data sheet ({fragment}, dense{', float32 as TF32' if tf32 else ''})")
      break
  else:
    peaks, source = {}, f"unknown device {name!r}: no MFU"
  return {"kind": "GPU", "name": name, "count": len(gpus), "peaks": peaks, "tf32": tf32,
          "peak_source": source, "compute_capability": details.get("compute_capability")}


def _reset_memory_peak(kind):
  if kind == "GPU":
    tf.config.experimental.reset_memory_stats("GPU:0")
    return
  try:  # "5" resets the peak resident set size (Linux 4.0+)
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
      handle.write("5")
  except OSError:
    pass


def _memory_peak(kind):
  """Peak bytes: GPU allocator peak (first GPU), or the CPU process's VmHWM; None if n/a."""
  if kind == "GPU":
    return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
  try:
    with open("/proc/self/status", encoding="ascii") as handle:
      match = re.search(r"^VmHWM:\s+(\d+) kB", handle.read(), re.M)
    return int(match.group(1)) * 1024 if match else None
  except OSError:
    return None


# --------------------------------------------------------------------------- step


def synthetic_batch(task, batch, seq, predictions, vocab, seed=0):
  """One batch of int32/float32 numpy features for `task` (all tokens real)."""
  rng = np.random.default_rng(seed)
  features = {"input_ids": rng.integers(1, vocab, (batch, seq)).astype("int32"),
              "input_mask": np.ones((batch, seq), "int32"),
              "segment_ids": (np.arange(seq)[None] >= seq // 2).repeat(batch, 0).astype(
                  "int32")}
  if task == "pretrain":
    features.update(
        masked_lm_positions=rng.integers(1, seq, (batch, predictions)).astype("int32"),
        masked_lm_ids=rng.integers(1, vocab, (batch, predictions)).astype("int32"),
        masked_lm_weights=np.ones((batch, predictions), "float32"),
        next_sentence_labels=rng.integers(0, 2, (batch, 1)).astype("int32"))
  else:
    features.update(start_positions=rng.integers(0, seq, (batch,)).astype("int32"),
                    end_positions=rng.integers(0, seq, (batch,)).astype("int32"))
  return features


def build(task, model_config, dtype, seq):
  """(model, loss_fn) under the dtype's Keras policy (reset to float32 afterwards)."""
  config = modeling.BertConfig(max_position_embeddings=max(512, seq), type_vocab_size=2,
                               **model_config)
  keras.mixed_precision.set_global_policy(DTYPES[dtype])
  try:
    if task == "pretrain":
      model, _ = heads.build_pretraining_model(config)
      return model, heads.pretraining_loss
    model, _ = heads.build_squad_model(config)
    return model, heads.squad_loss
  finally:
    keras.mixed_precision.set_global_policy("float32")


def make_replica_step(model, optimizer, loss_fn, global_batch, loss_scale, xla):
  """training.py's step in small: forward, loss, gradient, (unscale,) clip, apply.

  loss_scale: a float32 variable for float16's dynamic loss scaling, else None.
  Returns step(features) -> the replica's share of the mean loss.
  """
  variables = model.trainable_variables
  names = [t.name for t in model.inputs]
  optimizer.gradients_are_reduced = True  # the step sums over replicas itself

  def step(features):
    with tf.GradientTape() as tape:
      outputs = model({k: features[k] for k in names}, training=True)
      per_example, _ = loss_fn(features, outputs)
      loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
      scaled = loss * loss_scale if loss_scale is not None else loss
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
             for g, v in zip(tape.gradient(scaled, variables), variables)]
    context = tf.distribute.get_replica_context()
    if context.num_replicas_in_sync > 1:
      grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    if loss_scale is not None:
      grads = [g / loss_scale for g in grads]
    grads, norm = optimization.clip_by_global_norm(grads, optimization.DEFAULT_CLIP_NORM)
    if loss_scale is None:
      optimizer.apply_gradients(zip(grads, variables))
      return loss
    finite = tf.math.is_finite(norm)

    def apply():
      optimizer.apply_gradients(zip(grads, variables))
      return tf.constant(True)

    tf.cond(finite, apply, lambda: tf.constant(False))
    loss_scale.assign(tf.where(finite, loss_scale, tf.maximum(loss_scale / 2.0, 1.0)))
    return loss

  return tf.function(step, jit_compile=True) if xla else step


def make_loop(strategy, step):
  """A tf.function running `num_steps` steps; returns the last step's mean loss."""

  @tf.function
  def loop(iterator, num_steps):
    loss = tf.constant(0.0)
    for _ in tf.range(num_steps):
      loss = strategy.reduce(tf.distribute.ReduceOp.SUM,
                             strategy.run(step, args=(next(iterator),)), axis=None)
    return loss

  return loop


# --------------------------------------------------------------------------- measure


def measure(strategy, spec, batch, steps, kind):
  """Trains `steps` timed steps of `spec` at global batch `batch` after one untimed call.

  spec: dict(model, model_config, task, seq, predictions, dtype, xla). Returns
  {examples_per_second, seconds, loss, peak_memory_bytes}.
  """
  keras.backend.clear_session()  # the previous configuration's model and slots go first
  _reset_memory_peak(kind)
  with strategy.scope():
    model, loss_fn = build(spec["task"], spec["model_config"], spec["dtype"], spec["seq"])
    optimizer = optimization.create_optimizer(1e-4, 10000, 100)
    optimizer.build(model.trainable_variables)
    loss_scale = (tf.Variable(INITIAL_LOSS_SCALE, trainable=False, dtype=tf.float32,
                              aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
                  if spec["dtype"] == "float16" else None)
  data = synthetic_batch(spec["task"], batch, spec["seq"], spec["predictions"],
                         spec["model_config"]["vocab_size"])
  dataset = tf.data.Dataset.from_tensor_slices(data).repeat().batch(
      batch, drop_remainder=True).prefetch(2)
  iterator = iter(strategy.experimental_distribute_dataset(dataset))
  step = make_replica_step(model, optimizer, loss_fn, batch, loss_scale, spec["xla"])
  loop = make_loop(strategy, step)
  num_steps = tf.constant(steps, tf.int32)
  float(loop(iterator, num_steps))  # traces, compiles, warms up
  if kind == "GPU":
    tf.config.experimental.reset_memory_stats("GPU:0")
  start = time.perf_counter()
  loss = float(loop(iterator, num_steps))
  seconds = time.perf_counter() - start
  memory = _memory_peak(kind)
  if not math.isfinite(loss):
    raise FloatingPointError(f"loss is {loss}")
  return {"examples_per_second": steps * batch / seconds, "seconds": seconds,
          "loss": loss, "peak_memory_bytes": memory}


def largest_batch(strategy, spec, start, limit, kind):
  """Doubles the global batch from `start` (known to fit) while one step still runs;
  returns (largest batch that ran, why the search stopped)."""
  fits, batch = start, start * 2
  while batch <= limit:
    try:
      measure(strategy, spec, batch, 1, kind)
    except (tf.errors.OpError, MemoryError) as exc:
      # Out of memory shows as ResourceExhaustedError, or from XLA as an internal error
      # saying RESOURCE_EXHAUSTED: the note keeps the error's type to tell them apart.
      return fits, f"batch {batch} failed: {type(exc).__name__}"
    fits, batch = batch, batch * 2
  return fits, f"batch {fits} ran; stopped at the bound --max_batch"


# --------------------------------------------------------------------------- matrix


def configurations(args):
  """The (model, workload, dtype, xla) specs the arguments select, in table order.

  --quick: the tiny model; every dtype and XLA setting on the first workload, the other
  workloads with the first dtype and XLA setting only (each configuration costs a trace
  and a compilation, seconds on a CPU).
  """
  workloads = QUICK_WORKLOADS if args.quick else WORKLOADS
  models = ["tiny"] if args.quick else args.models.split(",")
  dtypes, xlas = args.dtypes.split(","), args.xla.split(",")
  specs = []
  for model in models:
    for index, workload in enumerate(args.workloads.split(",")):
      task, seq, predictions = workloads[workload]
      for dtype in dtypes:
        for xla in xlas:
          if args.quick and index and (dtype, xla) != (dtypes[0], xlas[0]):
            continue
          specs.append(dict(model=model, model_config=MODELS[model], workload=workload,
                            task=task, seq=seq, predictions=predictions, dtype=dtype,
                            xla=xla == "on"))
  return specs


def run_row(strategy, spec, args, device):
  """Measures one configuration; a failure is a row with its reason, not a crash."""
  replicas = strategy.num_replicas_in_sync
  per_device = args.batch or (GPU_BATCH.get((spec["model"], spec["workload"]), 8)
                              if device["kind"] == "GPU" else 2)
  batch = per_device * replicas
  row = {k: spec[k] for k in ("model", "workload", "seq", "predictions", "dtype", "xla")}
  row.update(batch=batch, replicas=replicas, steps=args.steps)
  try:
    row.update(measure(strategy, spec, batch, args.steps, device["kind"]))
  except (tf.errors.OpError, FloatingPointError, ValueError) as exc:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    row.update(status=f"failed: {type(exc).__name__}: {reason[:200]}")
    return row
  flops = model_flops_per_example(spec["model_config"], spec["task"], spec["seq"],
                                  spec["predictions"])
  row["model_tflops_per_example"] = flops / 1e12
  row["achieved_tflops"] = row["examples_per_second"] * flops / 1e12
  peak = device["peaks"].get(spec["dtype"])
  row["peak_tflops"] = peak
  row["mfu"] = row["achieved_tflops"] / (peak * replicas) if peak else None
  search = args.max_batch_search or (device["kind"] == "GPU" and not args.no_batch_search)
  row["max_batch"], row["max_batch_note"] = (
      largest_batch(strategy, spec, batch, args.max_batch * replicas, device["kind"])
      if search else (None, "not searched"))
  row["status"] = "ok"
  return row


def _cell(value, digits=3):
  if value is None:
    return "-"
  if isinstance(value, bool):
    return "on" if value else "off"
  if isinstance(value, float):
    return f"{value:.{digits}g}"
  return str(value)


def _percent(fraction):
  return "-" if fraction is None else f"{100 * fraction:.1f}%"


def _gib(num_bytes):
  return "-" if num_bytes is None else f"{num_bytes / 2**30:.2f} GiB"


def format_table(device, rows):
  """The rows as one Markdown table, the device and peak source above it."""
  lines = [f"device: {device['count']} x {device['kind']} {device['name']}; peaks "
           f"{', '.join(f'{k} {v:.4g}' for k, v in device['peaks'].items()) or 'unknown'}"
           f" TFLOP/s ({device['peak_source']})", "",
           "| model | workload | seq | dtype | XLA | batch | examples/s | model TFLOP/s "
           "| MFU | peak memory | largest batch | status |",
           "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|"]
  for r in rows:
    memory = r.get("peak_memory_bytes")
    lines.append(
        f"| {r['model']} | {r['workload']} | {r['seq']} | {r['dtype']} | {_cell(r['xla'])} "
        f"| {r['batch']} | {_cell(r.get('examples_per_second'))} "
        f"| {_cell(r.get('achieved_tflops'))} "
        f"| {_percent(r.get('mfu'))} | {_gib(memory)} "
        f"| {_cell(r.get('max_batch'))} | {r['status']} |")
  return "\n".join(lines)


def benchmark(args):
  """Runs the selected matrix; returns the JSON-ready report."""
  device = device_info(quick=args.quick)
  gpus = tf.config.list_logical_devices("GPU")
  if args.strategy == "mirrored" and gpus:
    strategy = tf.distribute.MirroredStrategy([d.name for d in gpus])
  else:
    strategy = tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
  rows = []
  for spec in configurations(args):
    rows.append(run_row(strategy, spec, args, device))
    print(f"[bench_accelerator] {spec['model']} {spec['workload']} {spec['dtype']} "
          f"xla={'on' if spec['xla'] else 'off'}: {rows[-1]['status']}", file=sys.stderr,
          flush=True)
  return {"device": device, "flops_formula": FLOPS_FORMULA, "quick": args.quick,
          "steps": args.steps, "tensorflow": tf.__version__, "keras": keras.__version__,
          "command": sys.argv, "rows": rows}


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="tiny model, short sequences, 2 steps: a CPU smoke test")
  parser.add_argument("--models", default="base,large", help="comma-separated: base,large")
  parser.add_argument("--workloads", default=",".join(WORKLOADS),
                      help="comma-separated: " + ",".join(WORKLOADS))
  parser.add_argument("--dtypes", default=",".join(DTYPES),
                      help="comma-separated: " + ",".join(DTYPES))
  parser.add_argument("--xla", default="off,on", help="comma-separated: off,on")
  parser.add_argument("--batch", type=int, default=0,
                      help="examples per device and step (default: per model/workload on "
                           "a GPU, 2 on a CPU)")
  parser.add_argument("--steps", type=int, default=0,
                      help="timed steps (default 20 on a GPU, 2 on a CPU)")
  parser.add_argument("--strategy", default="one_device", choices=("one_device", "mirrored"))
  parser.add_argument("--max_batch_search", action="store_true",
                      help="search the largest batch also on a CPU")
  parser.add_argument("--no_batch_search", action="store_true",
                      help="skip the largest-batch search on a GPU")
  parser.add_argument("--max_batch", type=int, default=4096,
                      help="bound of the largest-batch search, per device")
  parser.add_argument("--json_out", default="", help="also write the report here")
  args = parser.parse_args(argv)
  for name, allowed in (("workloads", WORKLOADS), ("dtypes", DTYPES),
                        ("models", ("base", "large")), ("xla", ("off", "on"))):
    bad = [v for v in getattr(args, name).split(",") if v not in allowed]
    if bad:
      parser.error(f"--{name}: unknown {', '.join(bad)}; use {', '.join(allowed)}")
  if not args.steps:
    args.steps = 20 if tf.config.list_physical_devices("GPU") and not args.quick else 2
  if args.batch < 0 or args.steps < 1 or args.max_batch < 1:
    parser.error("--batch, --steps and --max_batch must be positive")
  return args


def run(quick=False):
  """run_all.py's entry: [{name, value, unit, note}], one row a configuration."""
  on_gpu = bool(tf.config.list_physical_devices("GPU"))
  report = benchmark(parse_args([] if on_gpu and not quick else ["--quick"]))
  device = report["device"]
  results = []
  for r in report["rows"]:
    name = (f"{r['model']} {r['workload']} seq{r['seq']} b{r['batch']} {r['dtype']} "
            f"xla={'on' if r['xla'] else 'off'} ({device['kind']})")
    if r["status"] != "ok":
      results.append(dict(name=name, value=float("nan"), unit="examples/s",
                          note=r["status"]))
      continue
    results.append(dict(
        name=name, value=round(r["examples_per_second"], 2), unit="examples/s",
        note=f"{r['achieved_tflops']:.3g} model TFLOP/s, MFU {_percent(r['mfu'])} "
             f"({device['peak_source']}); peak memory {_gib(r['peak_memory_bytes'])}"))
  return results


def main(argv=None):
  args = parse_args(argv)
  report = benchmark(args)
  print(format_table(report["device"], report["rows"]))
  if args.json_out:
    with open(args.json_out, "w", encoding="utf-8") as handle:
      json.dump(report, handle, indent=1)
  return 0 if all(r["status"] == "ok" for r in report["rows"]) else 1


if __name__ == "__main__":
  sys.exit(main())
