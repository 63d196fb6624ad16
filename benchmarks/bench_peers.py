"""LiteRT against ONNX Runtime and TensorFlow with the same batches: equal comparisons only.

Every side is a whole process (benchmarks/parts/peer_worker.py, timed from spawn to exit, and its
own model-only time), reads the same pre-tokenized rows (the export's vocabulary and
tokenization, done once here) and runs the same batches: a plan file from
peer_batches.make_batches that the driver writes once per order. Each side reports a
digest of the batches it ran; a side that ran anything else stops the benchmark before a
ratio is printed (peer_batches.check_same_order). Orders:
  file    batches of 32 in file order (what run_classifier.py --do_predict does);
  sorted  rows stably sorted by length, then batches of 32 (what predict_litert.py does).
The sorting gain is reported per side as a row of its own (file s / sorted s), never folded
into a runtime ratio.

Sides, all from one fine-tuned SST-2 run (--finetuned_dir, its export --export_dir):
  litert_int8  the export's litert/model_int8.tflite (dynamic-range int8), ai-edge-litert
  litert_f32   litert/model_float32.tflite
  tf_f32       the export's token-id SavedModel (ids/), float32, TensorFlow
  ort_int8     the fastest ONNX Runtime int8 setup of the search below
  ort_f32      the fastest ONNX Runtime float32 setup
ONNX Runtime setup search (benchmarks/parts/ort_setups.py; each timed on the first --screen rows,
sorted, one process each, the winner named in the output): source "hf" (transformers'
model of our Hugging Face export, torch.onnx.export opset 17) or "tf2onnx" (tf2onnx opset
17 of our ids/ SavedModel); ORT's transformer optimizer or not; spinning on or off;
quantize_dynamic QInt8 or QUInt8 weights, per-tensor or per-channel.
Online latency (--latency=N): batch 1, one warm process per side, N rows one at a time in
file order; p50/p95/p99 of each request (model call on the pre-tokenized row) and the
model's load time (load plus first call).
Rounds are interleaved (the side order rotates each round). Every side's threads:
machine.threads() (the CPUs this process may use).

  python -m benchmarks.bench_peers --finetuned_dir=RUN --export_dir=EXPORT
      [--sentences=5000] [--rounds=3] [--orders=file,sorted] [--data=train|dev]
      [--screen=1000] [--latency=1000] [--prepare] [--json_out=FILE]

--prepare: where EXPORT holds no LiteRT model yet, first make RUN and EXPORT as
docs/benchmarks.md's command does (run_classifier.py fine-tunes the shared MiniLM on
SST-2 for 0.05 epochs, --export_dir with --litert=both; sst2.finetune_and_export). `make
bench-peers` is the whole quiet run in one command: --prepare, 5,000 sentences, 3 rounds.
Needs ../shared/data, `make bench-hf-setup` (.venv-hf: torch, transformers, onnxruntime)
and `make bench-tf2onnx-setup` (.venv-tf2onnx); without the last two the ORT sides (or
their tf2onnx setups) are left out, saying so. `run(quick)` is run_all.py's entry: the
same with --prepare into out/sst2_bench, fewer sentences with --quick.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.parts import arguments
from benchmarks.parts import peer_batches
from benchmarks.parts import hugging_face_launcher
from benchmarks.parts import machine
from benchmarks.parts import sst2

ROOT = sst2.ROOT
PARTS = os.path.dirname(os.path.abspath(peer_batches.__file__))
BATCH = sst2.BATCH
TF2ONNX_PYTHON = os.path.join(ROOT, ".venv-tf2onnx", "bin", "python")
SIDES = ("litert_int8", "ort_int8", "litert_f32", "ort_f32", "tf_f32")
# The equal comparisons: (faster candidate, peer) -> peer s / candidate s per round.
PAIRS = (("litert_int8", "ort_int8"), ("litert_int8", "tf_f32"),
         ("litert_f32", "ort_f32"), ("litert_f32", "tf_f32"))
LATENCY_SIDES = ("litert_int8", "ort_int8", "tf_f32", "litert_f32")
# make bench's run (run_all.py): the model docs/benchmarks.md's command makes, in out/.
DEFAULT_FINETUNED_DIR = os.path.join(ROOT, "out", "sst2_bench")
DEFAULT_EXPORT_DIR = os.path.join(ROOT, "out", "sst2_bench_export")


def _check(proc, what):
  if proc.returncode != 0:
    raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n"
                       + (proc.stderr.strip() or proc.stdout.strip())[-2000:])
  return proc


def build_ort_setups(finetuned_dir, export_dir, work, threads):
  """[setup dicts] (ort_setups.py) from both ONNX sources, and {name: why} of failures."""
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  failed, sources = {}, {}
  head_file = os.path.join(work, "head.npz")
  sst2.prepare_finetuned(finetuned_dir, os.path.join(work, "ours_copy"), head_file)
  hf_dir = os.path.join(work, "hf_export")
  sst2.prepare_hf_export(finetuned_dir, hf_dir)
  prepared, why = hugging_face_launcher.run_hf("prepare_predict", {
      "model_dir": hf_dir, "threads": threads, "head_file": head_file,
      "hf_model_dir": os.path.join(work, "hf_model"),
      "onnx_file": os.path.join(work, "hf.onnx"),
      "onnx_optimized_file": os.path.join(work, "hf_prepared_fused.onnx")}, work)
  if prepared is None:
    failed["hf"] = why
  else:
    sources["hf"] = os.path.join(work, "hf.onnx")
  if os.path.exists(TF2ONNX_PYTHON):
    proc = subprocess.run(
        [TF2ONNX_PYTHON, "-m", "tf2onnx.convert", "--saved-model",
         os.path.join(export_dir, "ids"), "--signature_def", "serving_default",
         "--opset", "17", "--output", os.path.join(work, "tf2onnx.onnx")],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if proc.returncode == 0:
      sources["tf2onnx"] = os.path.join(work, "tf2onnx.onnx")
    else:
      failed["tf2onnx"] = (proc.stderr.strip().splitlines() or ["?"])[-1][:300]
  else:
    failed["tf2onnx"] = "no .venv-tf2onnx: `make bench-tf2onnx-setup`"
  config = model_config.load_bert_config(os.path.join(sst2.MODEL_DIR, "bert_config.json"))
  request = os.path.join(work, "ort-setups.json")
  with open(request, "w", encoding="utf-8") as handle:
    json.dump({"sources": sources, "out_dir": os.path.join(work, "ort"),
               "num_heads": config.num_attention_heads,
               "hidden_size": config.hidden_size}, handle)
  proc = _check(subprocess.run([hugging_face_launcher.hf_python(), os.path.join(PARTS, "ort_setups.py"),
                                request], capture_output=True, text=True), "ort_setups.py")
  built = json.loads(proc.stdout.strip().splitlines()[-1])
  failed.update(built["failed"])
  return built["setups"], failed


class Runner:
  """Runs peer_worker.py processes on one ids file; remembers every result."""

  def __init__(self, work, ids_file, threads):
    self.work, self.ids_file, self.threads = work, ids_file, threads
    self.count = 0
    self.loads = []

  def run(self, kind, model, plan_file, spinning="1"):
    self.count += 1
    base = os.path.join(self.work, f"side-{self.count}")
    request = {"kind": kind, "model": model, "threads": self.threads,
               "ids_file": self.ids_file, "plan_file": plan_file, "spinning": spinning,
               "out_file": base + ".json", "probs_file": base + ".npy"}
    with open(base + "-request.json", "w", encoding="utf-8") as handle:
      json.dump(request, handle)
    python = hugging_face_launcher.hf_python() if kind == "ort" else sys.executable
    self.loads.append(os.getloadavg()[0])
    started = time.perf_counter()
    _check(subprocess.run([python, os.path.join(PARTS, "peer_worker.py"), base + "-request.json"],
                          capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")),
           f"peer_worker.py {kind} {os.path.basename(model)}")
    whole = time.perf_counter() - started
    with open(base + ".json", encoding="utf-8") as handle:
      result = json.load(handle)
    import numpy as np  # pylint: disable=g-import-not-at-top
    result["whole_s"] = whole
    result["probs"] = np.load(base + ".npy")
    return result


def screen(runner, setups, plan_file):
  """{precision: (winner setup, spinning, [(name, spinning, run_s)])}: each ORT setup timed
  once per spinning setting on the screening plan; the fastest model time wins."""
  timed = []
  for setup in setups:
    for spinning in ("1", "0"):
      result = runner.run("ort", setup["file"], plan_file, spinning)
      timed.append((setup, spinning, result["run_s"]))
      print(f"[screen] {setup['name']} spinning={spinning}: {result['run_s']:.2f} s",
            file=sys.stderr, flush=True)
  winners = {}
  for precision in ("int8", "float32"):
    mine = [t for t in timed if t[0]["precision"] == precision]
    if mine:
      best = min(mine, key=lambda t: t[2])
      winners[precision] = (best[0], best[1], [(s["name"], sp, t) for s, sp, t in mine])
  return winners


def checked_round(plan, sides, run_side):
  """{side: result} of one round, each side run once in the given order; raises
  peer_batches.OrderMismatch (and no figure of the round is kept) unless every side
  reports the plan's digest."""
  results = {side: run_side(side) for side in sides}
  peer_batches.check_same_order(plan["digest"],
                                  {side: r.get("digest") for side, r in results.items()})
  return results


def _fmt_ratio(values):
  return machine.spread(values, "{:.2f}x")


def parse_args(argv=None):
  parser = arguments.Parser(description=__doc__.splitlines()[0])
  parser.add_argument("--finetuned_dir", required=True)
  parser.add_argument("--export_dir", required=True)
  parser.add_argument("--sentences", type=arguments.positive_int, default=5000)
  parser.add_argument("--rounds", type=arguments.positive_int, default=3)
  parser.add_argument("--orders", default="file,sorted")
  parser.add_argument("--data", default="train", choices=("train", "dev"))
  parser.add_argument("--screen", type=int, default=1000,
                      help="rows of the ORT setup search (0: no search, hf_fused_qint8_tensor"
                           " / hf_fused with spinning, bench_predict's setup)")
  parser.add_argument("--latency", type=int, default=1000, help="0: no latency run")
  parser.add_argument("--sides", default=",".join(SIDES))
  parser.add_argument("--json_out", default=None, help="also write every figure here")
  parser.add_argument("--prepare", action="store_true",
                      help="make --finetuned_dir and --export_dir first where the export "
                           "holds no LiteRT model (docs/benchmarks.md's command)")
  return parser.parse_args(argv)


def measure(args):
  """Every side's rounds, the ORT setup search and the latency run: a dict of figures
  (seconds[(order, side)] = [(whole s, model s)] per round)."""
  threads = machine.threads()
  sides = [s for s in args.sides.split(",") if s]
  orders = [o for o in args.orders.split(",") if o]
  litert = os.path.join(args.export_dir, "litert")
  models = {"litert_int8": ("litert", os.path.join(litert, "model_int8.tflite")),
            "litert_f32": ("litert", os.path.join(litert, "model_float32.tflite")),
            "tf_f32": ("tf", os.path.join(args.export_dir, "ids"))}
  report = {"cpu": machine.cpu_model(), "threads": threads, "data": args.data}
  with tempfile.TemporaryDirectory(prefix="bench-peers-") as work:
    texts, labels = sst2.read_sentences(args.data, args.sentences)
    ids_file = os.path.join(work, "ids.npz")
    lengths = sst2.tokenize(models["litert_int8"][1], texts, ids_file)
    runner = Runner(work, ids_file, threads)
    ort_wanted = [s for s in sides if s.startswith("ort")]
    if ort_wanted and hugging_face_launcher.hf_python() is None:
      print(f"ORT sides left out: {hugging_face_launcher.HF_HINT}")
      sides = [s for s in sides if not s.startswith("ort")]
    elif ort_wanted:
      setups, failed = build_ort_setups(args.finetuned_dir, args.export_dir, work, threads)
      report["ort_failed"] = failed
      if args.screen:
        screen_runner = Runner(work, os.path.join(work, "screen.npz"), threads)
        screen_lengths = sst2.tokenize(models["litert_int8"][1], texts[:args.screen],
                                  screen_runner.ids_file)
        plan = os.path.join(work, "screen-plan.json")
        peer_batches.write_plan(plan, screen_lengths, BATCH, "sorted")
        winners = screen(screen_runner, setups, plan)
      else:
        named = {s["name"]: s for s in setups}
        winners = {p: (named[n], "1", []) for p, n in (("int8", "hf_fused_qint8_tensor"),
                                                       ("float32", "hf_fused")) if n in named}
      for side, precision in (("ort_int8", "int8"), ("ort_f32", "float32")):
        if precision not in winners:  # no setup of this precision could be built
          print(f"{side} left out: no ONNX Runtime {precision} setup was built "
                f"({report['ort_failed']})")
          sides = [s for s in sides if s != side]
          continue
        setup, spinning, _ = winners[precision]
        models[side] = ("ort", setup["file"], spinning)
      report["screen"] = {p: {"winner": w[0]["name"], "spinning": w[1],
                              "timed": w[2]} for p, w in winners.items()}
    seconds = {}  # (order, side) -> [(whole_s, run_s)]
    probs = {}
    for order in orders:
      plan_file = os.path.join(work, f"plan-{order}.json")
      plan = peer_batches.write_plan(plan_file, lengths, BATCH, order)
      for round_index in range(args.rounds):
        k = round_index % len(sides)

        def run_side(side):
          kind, model, *spin = models[side]
          return runner.run(kind, model, plan_file, *(spin or ["1"]))
        results = checked_round(plan, sides[k:] + sides[:k], run_side)
        for side, result in results.items():
          seconds.setdefault((order, side), []).append((result["whole_s"], result["run_s"]))
          probs[side] = result["probs"]
        print(f"[{order}] round {round_index + 1}: " + ", ".join(
            f"{s} {seconds[(order, s)][-1][0]:.1f}/{seconds[(order, s)][-1][1]:.1f} s"
            for s in sides), file=sys.stderr, flush=True)
    latency = {}
    if args.latency:
      lat_runner = Runner(work, os.path.join(work, "latency.npz"), threads)
      sst2.tokenize(models["litert_int8"][1], texts[:args.latency], lat_runner.ids_file)
      for side in [s for s in LATENCY_SIDES if s in sides]:
        kind, model, *spin = models[side]
        latency[side] = lat_runner.run(kind, model, None, *(spin or ["1"]))
      runner.loads += lat_runner.loads
      singles = peer_batches.order_digest([[i] for i in range(len(texts[:args.latency]))])
      peer_batches.check_same_order(singles, {s: r["digest"] for s, r in latency.items()})
  return {"report": report, "threads": threads, "sides": sides, "orders": orders,
          "texts": len(texts), "labels": labels, "loads": runner.loads,
          "seconds": seconds, "probs": probs, "latency": latency}


def ratios(figures):
  """{"ORDER:MINE_vs_PEER": (whole-process ratios, model-only ratios)}: peer s / mine s,
  one a round."""
  seconds, out = figures["seconds"], {}
  for order in figures["orders"]:
    for mine, peer in PAIRS:
      if (order, mine) in seconds and (order, peer) in seconds:
        whole = [p[0] / m[0] for m, p in zip(seconds[(order, mine)], seconds[(order, peer)])]
        model = [p[1] / m[1] for m, p in zip(seconds[(order, mine)], seconds[(order, peer)])]
        out[f"{order}:{mine}_vs_{peer}"] = (whole, model)
  return out


def sorting_gains(figures):
  """{side: (whole-process gains, model-only gains)}: file s / sorted s, one a round."""
  seconds = figures["seconds"]
  return {side: tuple([f[i] / t[i] for f, t in zip(seconds[("file", side)],
                                                  seconds[("sorted", side)])]
                      for i in (0, 1))
          for side in figures["sides"]
          if ("file", side) in seconds and ("sorted", side) in seconds}


def print_report(figures, args):
  import numpy as np  # pylint: disable=g-import-not-at-top
  report, threads, loads = figures["report"], figures["threads"], figures["loads"]
  seconds, probs, latency = figures["seconds"], figures["probs"], figures["latency"]
  sides, labels, count = figures["sides"], figures["labels"], figures["texts"]
  print(f"\nCPU: {report['cpu']}; {threads} threads per side; {count:,} SST-2 "
        f"{args.data} sentences, batch {BATCH}; {args.rounds} interleaved rounds; load avg "
        f"(1 min) at each start {min(loads):.2f}-{max(loads):.2f}; {time.strftime('%Y-%m-%d')}")
  if "screen" in report:
    print("\nONNX Runtime setup search (model time on the first "
          f"{args.screen:,} rows, sorted, one process each):" if args.screen else
          "\nONNX Runtime setups (--screen=0: no search, bench_predict's setups):")
    for precision, entry in report["screen"].items():
      print(f"  {precision} winner: {entry['winner']} spinning={entry['spinning']}; "
            + ", ".join(f"{n}/{'spin' if sp == '1' else 'nospin'} {t:.2f}s"
                        for n, sp, t in sorted(entry["timed"], key=lambda x: x[2])))
    if report.get("ort_failed"):
      print("  not built: " + "; ".join(f"{k}: {v}" for k, v in report["ort_failed"].items()))
  print("\n| order | side | whole process s (median) | model s (median) |")
  print("|---|---|---|---|")
  for (order, side), values in seconds.items():
    print(f"| {order} | {side} | {statistics.median(v[0] for v in values):.2f} | "
          f"{statistics.median(v[1] for v in values):.2f} |")
  print("\n| order | comparison | whole process | model only |")
  print("|---|---|---|---|")
  pairs = ratios(figures)
  for name, (whole, model) in pairs.items():
    order, pair = name.split(":")
    print(f"| {order} | {pair.replace('_vs_', ' vs ')} | {_fmt_ratio(whole)} | "
          f"{_fmt_ratio(model)} |")
  gains = sorting_gains(figures)
  if gains:
    print("\n| side | sorting gain, whole process (file s / sorted s) | model only |")
    print("|---|---|---|")
    for side, (whole, model) in gains.items():
      print(f"| {side} | {_fmt_ratio(whole)} | {_fmt_ratio(model)} |")
  reference = probs.get("tf_f32")
  print("\n| side | same class as tf_f32 | max abs p diff |"
        + (" accuracy |" if args.data == "dev" else ""))
  print("|---|---|---|" + ("---|" if args.data == "dev" else ""))
  for side in sides:
    same = (f"{int((probs[side].argmax(1) == reference.argmax(1)).sum()):,} of {count:,}"
            if reference is not None else "-")
    diff = (f"{float(np.abs(probs[side] - reference).max()):.1e}"
            if reference is not None else "-")
    acc = (f" {100 * float((probs[side].argmax(1) == np.array(labels)).mean()):.2f} |"
           if args.data == "dev" else "")
    print(f"| {side} | {same} | {diff} |{acc}")
  if latency:
    print(f"\nOnline latency, batch 1, {args.latency:,} rows one at a time, one warm process "
          "per side:\n\n| side | load s | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|")
    for side, result in latency.items():
      print(f"| {side} | {result['load_s']:.2f} | {result['p50_ms']:.2f} | "
            f"{result['p95_ms']:.2f} | {result['p99_ms']:.2f} |")
  if args.json_out:
    with open(args.json_out, "w", encoding="utf-8") as handle:
      json.dump({**report, "loads": [min(loads), max(loads)],
                 "seconds": {f"{o}:{s}": v for (o, s), v in seconds.items()},
                 "ratios": {k: (statistics.median(w), statistics.median(m))
                            for k, (w, m) in pairs.items()},
                 "latency": {s: {k: v for k, v in r.items() if k != "probs"}
                             for s, r in latency.items()}}, handle, indent=1)


def rows(figures, command):
  """run_all.py's rows: each equal comparison (whole process, model time in the note),
  the sorting gains and the batch-1 p50s."""
  cpu, loads = figures["report"]["cpu"], figures["loads"]
  scope = (f"{figures['texts']:,} SST-2 sentences, batch {BATCH}, "
           f"{len(figures['seconds'][next(iter(figures['seconds']))])} rounds; {cpu}; load "
           f"avg (1 min) at each start {min(loads):.2f}-{max(loads):.2f}; {command}")
  out = []
  for name, (whole, model) in ratios(figures).items():
    out.append({"name": f"equal {name.replace(':', ' ')}", "value":
                round(machine.median_range(whole)[0], 2), "unit": "x",
                "note": f"whole process {_fmt_ratio(whole)}, model only "
                        f"{_fmt_ratio(model)}; {scope}"})
  for side, (whole, _) in sorting_gains(figures).items():
    out.append({"name": f"equal sorting gain {side}", "value":
                round(machine.median_range(whole)[0], 2), "unit": "x",
                "note": f"file s / sorted s, whole process, {_fmt_ratio(whole)}"})
  for side, result in figures["latency"].items():
    out.append({"name": f"equal latency {side} p50", "value": round(result["p50_ms"], 2),
                "unit": "ms", "note": f"batch 1, p95 {result['p95_ms']:.2f}, p99 "
                                      f"{result['p99_ms']:.2f} ms, load {result['load_s']:.2f} s"})
  return out


def run(quick=False):
  """run_all.py's entry: the model of docs/benchmarks.md's command (made first in out/ if
  missing), every side; --quick: 500 sentences, one round, a 200-row setup search."""
  if not os.path.isdir(sst2.SST2):
    return [{"name": "equal batches", "value": "skipped", "unit": "",
             "note": f"{sst2.SST2} not found (needs ../shared/data)"}]
  argv = [f"--finetuned_dir={DEFAULT_FINETUNED_DIR}", f"--export_dir={DEFAULT_EXPORT_DIR}",
          "--prepare"]
  if quick:
    argv += ["--sentences=500", "--rounds=1", "--screen=200", "--latency=100"]
  args = parse_args(argv)
  sst2.finetune_and_export(args.finetuned_dir, args.export_dir)
  figures = measure(args)
  return rows(figures, "python -m benchmarks.bench_peers " + " ".join(argv))


def main(argv=None):
  args = parse_args(argv)
  if args.prepare:
    sst2.finetune_and_export(args.finetuned_dir, args.export_dir)
  figures = measure(args)
  print_report(figures, args)


if __name__ == "__main__":
  main()
