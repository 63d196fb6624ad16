"""Accelerator benchmark: run_pretraining's training step on whatever device TensorFlow sees.

  python -m benchmarks.bench_accelerator                        # the whole matrix
  python -m benchmarks.bench_accelerator --quick --json_out=r.json   # CPU smoke test
  python -m benchmarks.bench_accelerator --models=base --workloads=pretrain128 \
      --dtypes=bfloat16 --xla=on --batch=256 --steps=20 --max_batch_search

For each model (BERT-Base, BERT-Large), workload (pretraining at seq 128 with 20 masked
predictions, at seq 512 with 80; SQuAD fine-tuning at seq 384), --dtype (float32,
bfloat16, float16 with the loop's dynamic loss scaling) and XLA setting (off, on) it
reports examples/s, model FLOP utilisation (MFU) against the device's peak (the data
sheet's, and beside it the peak measured here), peak memory, and optionally the largest
batch that fits; one table on stdout, the same rows as JSON with --json_out. `--quick`
runs a tiny model (H64, 2 layers, vocab 512) at short lengths (32/64/48), every dtype x
XLA setting on the first workload and the other two workloads once: a smoke test of
every path, not a figure to quote. run_all.py runs `--quick` on a machine without a GPU
(the full matrix there would take hours; bench_pretraining.py is the CPU benchmark) and
the full matrix on a GPU.

The step is the one run_pretraining.py (and run_squad.py) trains with, built by
benchmarks/parts/train_run.py as finetune.run builds it: in --dtype's precision,
heads.build_pretraining_model / build_squad_model with heads.pretraining_loss /
squad_loss, optimization.create_optimizer's AdamWeightDecay, the RunCheckpoint's loop
state (float16: its dynamic loss scale, which halves on overflow and doubles after 2000
good steps), loop.make_train_step (forward, loss averaged over the global batch,
gradients summed over replicas, clipped to global norm 1.0, applied) inside
loop.make_train_loop, on loop.train's input iterator over synthetic batches held in
memory. `--steps` steps run inside one loop call. The first call traces (and with XLA
compiles) and is not timed; the second is, ended by reading the loss back to the host.
`--strategy=mirrored` is --distribution_strategy=mirrored: the global batch over every
visible GPU.

Model FLOPs per sequence of S tokens (forward + backward = 3 x forward, so the standard
6 x parameters x tokens, plus the attention term):
  6 * N * S + 12 * L * H * S^2 + 6 * N_head * T
N = the encoder's matmul parameters, L * (4H^2 + 2HI + 5H + I) (the embedding tables are
gathered, not multiplied); 12 * L * H * S^2 = the attention scores and the weighted sum
(2 matmuls of 2 * S^2 * H FLOPs a layer, x3); N_head * T = the head's matmul parameters
times the positions it sees: masked LM (H^2 + H + H*V + V, tied embeddings) at the P
predicted positions plus next sentence (H^2 + H pooler + 2H + 2) once; SQuAD (2H + 2) at
all S positions. LayerNorm, softmax, GELU, dropout and the optimizer are not counted.
MFU = model FLOPs/s / (peak x replicas). Two peaks per dtype:
  * data sheet: dense tensor-core figures by device name (KNOWN_PEAKS_TFLOPS; float32 is
    compared with the TF32 figure when TensorFlow's TensorFloat-32 is on, its default on
    Ampere and later); none on a CPU or an unknown device;
  * measured: the fastest square tf.matmul of the dtype on the first device
    (machine.matmul_peak; sizes up to 16384 on a GPU, 1024-4096 on a CPU, 1024 alone
    and shorter timings with --quick), in this run.
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
import re
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402  pylint: disable=g-import-not-at-top
import tensorflow as tf  # noqa: E402  pylint: disable=g-import-not-at-top

from benchmarks.parts import machine  # noqa: E402
from benchmarks.parts import train_run  # noqa: E402
from bert.training import strategies  # noqa: E402  pylint: disable=g-import-not-at-top

MODELS = {
    "base": dict(train_run.CONFIGS["base"], vocab_size=train_run.VOCAB),
    "large": dict(train_run.CONFIGS["large"], vocab_size=train_run.VOCAB),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, vocab_size=512),
}
# name: (task, sequence length, masked predictions)
WORKLOADS = {"pretrain128": ("pretrain", 128, 20), "pretrain512": ("pretrain", 512, 80),
             "squad384": ("squad", 384, 0)}
QUICK_WORKLOADS = {"pretrain128": ("pretrain", 32, 5), "pretrain512": ("pretrain", 64, 10),
                   "squad384": ("squad", 48, 0)}
DTYPES = ("float32", "bfloat16", "float16")  # --dtype's values
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
# Square sizes of the measured peak on a GPU: its tensor cores reach their rate only on
# large matrices.
GPU_PEAK_SIZES = (2048, 4096, 8192, 16384)
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


def measured_peaks(kind, quick=False):
  """{dtype: TFLOP/s} of the fastest square tf.matmul on the first device, and how."""
  sizes = (1024,) if quick else GPU_PEAK_SIZES if kind == "GPU" else machine.PEAK_SIZES
  seconds = 0.05 if quick else 0.2  # each timing's length: a smoke test wants it short
  peaks = {d: machine.matmul_peak(getattr(tf, d), sizes=sizes, seconds=seconds) / 1e12
           for d in DTYPES}
  return peaks, f"measured: {machine.peak_note(sizes)}"


def datasheet_peaks(name, tf32):
  """{dtype: TFLOP/s} of the device's data sheet (dense), and which row; ({}, why) if none."""
  for fragment, table in KNOWN_PEAKS_TFLOPS:
    if fragment.lower() in name.lower():
      peaks = {d: table[d] for d in DTYPES}
      if tf32:
        peaks["float32"] = table["tf32"]
      return peaks, f"data sheet ({fragment}, dense{', float32 as TF32' if tf32 else ''})"
  return {}, f"no data sheet for {name!r}"


def device_info(quick=False):
  """{kind, name, count, tf32, peaks (measured), peak_source, datasheet, datasheet_source}:
  peaks in TFLOP/s by dtype."""
  gpus = tf.config.list_physical_devices("GPU")
  tf32 = bool(gpus) and bool(tf.config.experimental.tensor_float_32_execution_enabled())
  if gpus:
    details = tf.config.experimental.get_device_details(gpus[0])
    kind, name = "GPU", details.get("device_name", "GPU")
  else:
    details, kind, name = {}, "CPU", machine.cpu_model()
  peaks, peak_source = measured_peaks(kind, quick)
  datasheet, datasheet_source = (datasheet_peaks(name, tf32) if gpus else
                                 ({}, "no data sheet: a CPU"))
  return {"kind": kind, "name": name, "count": max(len(gpus), 1), "tf32": tf32,
          "peaks": peaks, "peak_source": peak_source, "datasheet": datasheet,
          "datasheet_source": datasheet_source,
          "compute_capability": details.get("compute_capability")}


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


# --------------------------------------------------------------------------- measure


def measure(strategy, spec, batch, steps, kind):
  """Trains `steps` timed steps of `spec` at global batch `batch` after one untimed call.

  spec: dict(model, model_config, task, seq, predictions, dtype, xla). Returns
  {examples_per_second, seconds, loss, loss_scale, peak_memory_bytes}.
  """
  keras.backend.clear_session()  # the previous configuration's model and slots go first
  _reset_memory_peak(kind)
  run = train_run.build(spec["model_config"], spec["task"], spec["seq"],
                        spec["predictions"], batch, spec["dtype"], spec["xla"], strategy)
  run.loop(steps)  # traces, compiles, warms up
  if kind == "GPU":
    tf.config.experimental.reset_memory_stats("GPU:0")
  start = time.perf_counter()
  loss = run.loop(steps)
  seconds = time.perf_counter() - start
  memory = _memory_peak(kind)
  if not math.isfinite(loss):
    raise FloatingPointError(f"loss is {loss}")
  return {"examples_per_second": steps * batch / seconds, "seconds": seconds,
          "loss": loss, "loss_scale": run.loss_scale if spec["dtype"] == "float16" else None,
          "peak_memory_bytes": memory}


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
  for key, peaks in (("", device["datasheet"]), ("_measured", device["peaks"])):
    peak = peaks.get(spec["dtype"])
    row[f"peak_tflops{key}"] = peak
    row[f"mfu{key}"] = row["achieved_tflops"] / (peak * replicas) if peak else None
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


def _peaks(peaks):
  return ", ".join(f"{k} {v:.4g}" for k, v in peaks.items()) or "none"


def format_table(device, rows):
  """The rows as one Markdown table, the device and both peaks above it."""
  lines = [f"device: {device['count']} x {device['kind']} {device['name']}",
           f"peaks, TFLOP/s: {_peaks(device['datasheet'])} ({device['datasheet_source']}); "
           f"{_peaks(device['peaks'])} ({device['peak_source']})", "",
           "| model | workload | seq | dtype | XLA | batch | examples/s | model TFLOP/s "
           "| MFU (data sheet) | MFU (measured peak) | peak memory | largest batch | status |",
           "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
  for r in rows:
    memory = r.get("peak_memory_bytes")
    lines.append(
        f"| {r['model']} | {r['workload']} | {r['seq']} | {r['dtype']} | {_cell(r['xla'])} "
        f"| {r['batch']} | {_cell(r.get('examples_per_second'))} "
        f"| {_cell(r.get('achieved_tflops'))} "
        f"| {_percent(r.get('mfu'))} | {_percent(r.get('mfu_measured'))} | {_gib(memory)} "
        f"| {_cell(r.get('max_batch'))} | {r['status']} |")
  return "\n".join(lines)


def benchmark(args):
  """Runs the selected matrix; returns the JSON-ready report."""
  # run_pretraining's --distribution_strategy, before any op runs.
  strategy = strategies.create_strategy(args.strategy)
  device = device_info(quick=args.quick)
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
  parser.add_argument("--strategy", default="one_device", choices=("one_device", "mirrored"),
                      help="run_pretraining's --distribution_strategy")
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
             f"({device['datasheet_source']}), {_percent(r['mfu_measured'])} "
             f"({device['peak_source']}); peak memory {_gib(r['peak_memory_bytes'])}"
             + ("" if device["kind"] == "GPU" else
                "; a CPU smoke test of the GPU benchmark's paths, no GPU figure")))
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
