"""Benchmark: pretraining throughput (examples/s) and achieved FLOP/s vs the machine's peak.

  python -m benchmarks.bench_pretraining           # BERT-Base seq 128 + small
  python -m benchmarks.bench_pretraining --quick   # small config only
  python -m benchmarks.bench_pretraining --base [--rounds=3] [--steps=3] \
      [--batch=8] [--xla=0,1]   # BERT-Base float32, % of each round's peak
  python -m benchmarks.bench_pretraining --packing [--seqs=128,512] [--rounds=3] \
      [--corpus=FILE --vocab=FILE --do_lower_case=false]
      # packed against unpacked records through run_pretraining.py:
      # padding and real tokens/s at each length (run_packing; needs ../shared/data)
  python -m benchmarks.bench_pretraining --small [--rounds=3] [--baseline=DIR]
      # the Korean and demo shapes (benchmarks/parts/small_step.py), XLA off and on,
      # in fresh processes taken in turn (A/B/A/B...), each timing --reps loop calls of
      # --steps steps after a warm-up call; with --baseline=DIR (another checkout, e.g.
      # `git archive <commit> | tar -x -C DIR`) the same workloads also run on that
      # tree's `bert` (its modeling, loop and optimizer), and each round gives a paired
      # ratio; then each shape's matmuls alone (benchmarks/parts/matmul_floor.py).

Each configuration runs in its own process (the Keras dtype policy is global) through
run_pretraining's own step and loop (benchmarks/parts/train_run.py: loop.make_train_step
and loop.make_train_loop, heads.pretraining_loss, AdamWeightDecay, clipping) on synthetic
pretraining batches (seq 128, 20 predictions, vocab 30,522). The timed loop call comes
after a first call that traces and compiles, so tracing is excluded.

Training FLOPs per example are counted as 3x the forward matmul FLOPs:
  layers * seq * 2 * (4 H^2 + 2 H I)  +  layers * 4 * seq^2 * H  +  P * 2 * (H^2 + H V)
(attention projections and FFN, attention scores and context, the masked-LM head over
P predictions). Peak is measured in the same run: the fastest square tf.matmul
(machine.matmul_peak), float32 and bfloat16, best of a few runs. `run(quick=False)`
returns [{name, value, unit, note}].

On a CPU without bfloat16 units only float32 runs (a row says so); elsewhere each
configuration also runs in bfloat16, with its bfloat16/float32 ratio. Then
run_pretraining.py itself on synthetic records of the small config: float32 and bfloat16
alternately, the seconds of 40 steps after the first 10 (the loop's own examples/s) and
of the whole process.

Where the Hugging Face venv exists (`make bench-hf-setup`, or $BERT_HF_PYTHON), each
configuration is also trained with transformers' BertForPreTraining (PyTorch, float32,
as many threads as TF uses, AdamW, clipping) on the same synthetic batches, timed the
same way (the same number of timed steps, after at least as many warm-up steps), by
benchmarks/parts/hugging_face_worker.py in its own process, which reads the batches from a file this
benchmark writes, in float32 and (with bfloat16 units) under torch.autocast bfloat16;
ratio rows compare our XLA-off rate in the same dtype with it. Its masked-LM head
computes logits at every position (the loss only counts the
labelled ones), ours at the 20 predicted positions only, as the original does.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks.parts import command_runs
from benchmarks.parts import hugging_face_launcher
from benchmarks.parts import machine
from benchmarks.parts import small_step
from benchmarks.parts import matmul_floor
from benchmarks.parts import train_run
from bert.utils import cpu_choice

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = train_run.CONFIGS
SEQ, PREDICTIONS, VOCAB = train_run.SEQ, train_run.PREDICTIONS, train_run.VOCAB


def training_flops_per_example(hidden_size, num_hidden_layers, intermediate_size,
                               seq=SEQ, predictions=PREDICTIONS, vocab=VOCAB, **_):
  h, layers, inter = hidden_size, num_hidden_layers, intermediate_size
  forward = (layers * seq * 2 * (4 * h * h + 2 * h * inter) + layers * 4 * seq * seq * h
             + predictions * 2 * (h * h + h * vocab))
  return 3 * forward


def child(name, dtype, xla, batch, steps, seq=SEQ, predictions=PREDICTIONS):
  """Runs in a subprocess (the Keras dtype policy is global): one untimed loop call of
  `steps` steps (tracing), then one timed; prints {"examples_per_second"} as a JSON line."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  run = train_run.build(dict(CONFIGS[name], vocab_size=VOCAB), "pretrain", seq, predictions,
                        batch, dtype, xla)
  run.loop(steps)
  print(json.dumps({"examples_per_second": run.rate(steps)}))


def _child_command(*args):
  return [sys.executable, "-m", "benchmarks.bench_pretraining", "--child", *map(str, args)]


def run(quick=False):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  on_gpu = bool(tf.config.list_physical_devices("GPU"))
  device = "GPU" if on_gpu else "CPU"
  results = []
  peaks = {d: machine.matmul_peak(getattr(tf, d)) for d in ("float32", "bfloat16")}
  for d, value in peaks.items():
    results.append(dict(name=f"matmul peak {d} ({device})", value=round(value / 1e9, 1),
                        unit="GFLOP/s", note=machine.peak_note()))
  names = ["small"] if quick else ["small", "base"]
  # bfloat16 beside float32 where the CPU has its units (or on a GPU); elsewhere a row
  # says it is left out.
  dtypes = ("float32", "bfloat16") if (on_gpu or cpu_choice.this_cpu().has_bfloat16) else (
      "float32",)
  if len(dtypes) == 1:
    results.append(dict(name="pretraining bfloat16", value="skipped", unit="",
                        note=f"{machine.cpu_model()} has no bfloat16 units (AVX512-BF16 or "
                             "AMX): bfloat16 would run emulated; the float32 rows stand"))
  ours = {}
  for name in names:
    batch = (32 if on_gpu else 8) if name == "base" else 16
    steps = 2 if (name == "base" and not on_gpu) else (4 if quick else 10)
    for dtype in dtypes:
      for xla in (False, True):
        proc = subprocess.run(_child_command(name, dtype, int(xla), batch, steps),
                              capture_output=True, text=True, timeout=1800, cwd=ROOT,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        label = f"pretraining {name} seq{SEQ} b{batch} {dtype} xla={'on' if xla else 'off'}"
        if proc.returncode != 0:
          results.append(dict(name=label, value=float("nan"), unit="examples/s",
                              note="failed: " + proc.stderr.strip().splitlines()[-1][:200]))
          continue
        rate = json.loads(proc.stdout.strip().splitlines()[-1])["examples_per_second"]
        flops = rate * training_flops_per_example(**CONFIGS[name])
        peak = peaks["bfloat16" if dtype == "bfloat16" else "float32"]
        results.append(dict(name=label, value=round(rate, 2), unit="examples/s",
                            note=f"{device}, {steps} timed steps after tracing"))
        results.append(dict(name=label + " achieved", value=round(flops / 1e9, 1),
                            unit="GFLOP/s",
                            note=f"{100 * flops / peak:.1f}% of the measured {dtype} "
                                 "matmul peak"))
        if not xla:
          ours[(name, dtype)] = rate
    if ("bfloat16" in dtypes and (name, "float32") in ours
        and (name, "bfloat16") in ours):
      results.append(dict(name=f"pretraining {name} bfloat16 / float32 (xla off)",
                          value=round(ours[(name, "bfloat16")] / ours[(name, "float32")], 2),
                          unit="x", note="our step, the same run"))
    hf_rates = {}
    for dtype in dtypes:
      rows, hf_rates[dtype] = _hf_rows(name, batch, steps, ours.get((name, dtype)), dtype)
      results += rows
    if hf_rates.get("float32") and hf_rates.get("bfloat16"):
      results.append(dict(name=f"HF BertForPreTraining {name} bfloat16 / float32",
                          value=round(hf_rates["bfloat16"] / hf_rates["float32"], 2),
                          unit="x", note="torch.autocast bfloat16 against float32"))
  if not on_gpu:
    results += _command_rows("small", 1 if quick else 3, dtypes)
  # The small shapes (Korean, demo): XLA off and on, alternating processes.
  small = run_small(rounds=1 if quick else 3, steps=5 if quick else 20,
                    reps=2 if quick else 3, peak=peaks["float32"])
  # Packed records against the original's, through run_pretraining.py.
  packing = run_packing(seqs=(128,) if quick else (128, 512), rounds=1 if quick else 3)
  return results + small[1:] + packing


# --------------------------------------------------------------------------- the command

# run_pretraining.py itself: these many steps timed after these many (tracing, warm-up),
# each loop call COMMAND_LOOP steps, on the small config at seq 128.
COMMAND_TIMED_STEPS, COMMAND_WARMUP_STEPS, COMMAND_LOOP, COMMAND_BATCH = 40, 10, 10, 16


def _command_rows(name, rounds, dtypes):
  """run_pretraining.py --do_train on synthetic records of config `name`, as a user runs
  it, in each dtype alternately: the seconds of COMMAND_TIMED_STEPS steps after the first
  COMMAND_WARMUP_STEPS (the loop's own examples/s) and of the whole process."""
  from bert import input_pipeline  # pylint: disable=g-import-not-at-top
  steps = COMMAND_WARMUP_STEPS + COMMAND_TIMED_STEPS
  with tempfile.TemporaryDirectory(prefix="bench-pretrain-command-") as work:
    data = train_run.synthetic_features("pretrain", 8 * COMMAND_BATCH, SEQ, PREDICTIONS,
                                        VOCAB)
    records = os.path.join(work, "data.tfrecord")
    input_pipeline.write_examples(records, ({k: v[i].tolist() for k, v in data.items()}
                                            for i in range(8 * COMMAND_BATCH)))
    config_file = os.path.join(work, "bert_config.json")
    with open(config_file, "w", encoding="utf-8") as handle:
      json.dump({"vocab_size": VOCAB, "max_position_embeddings": 512, "type_vocab_size": 2,
                 **CONFIGS[name]}, handle)

    def command_of(dtype, output_dir):
      return [sys.executable, os.path.join(ROOT, "run_pretraining.py"),
              f"--input_file={records}", f"--bert_config_file={config_file}",
              f"--output_dir={output_dir}", "--do_train", f"--max_seq_length={SEQ}",
              f"--max_predictions_per_seq={PREDICTIONS}",
              f"--train_batch_size={COMMAND_BATCH}", f"--num_train_steps={steps}",
              "--num_warmup_steps=10", f"--steps_per_loop={COMMAND_LOOP}",
              f"--log_every_steps={COMMAND_LOOP}",
              f"--save_checkpoints_steps={10 * steps}", f"--dtype={dtype}"]

    timed, wall = command_runs.alternate(command_of, dtypes, rounds, work,
                                         COMMAND_WARMUP_STEPS, steps, COMMAND_LOOP,
                                         COMMAND_BATCH)
  scope = (f"run_pretraining.py --do_train, config {name}, batch {COMMAND_BATCH}, seq {SEQ}, "
           f"{steps} steps (--steps_per_loop={COMMAND_LOOP}); {machine.cpu_model()}; "
           f"{machine.load_average()}")
  rows = []
  for dtype in dtypes:
    rows += [
        dict(name=f"run_pretraining {name} {dtype}: {COMMAND_TIMED_STEPS} steps",
             value=round(statistics.median(timed[dtype]), 2), unit="s (median)",
             note=f"after the first {COMMAND_WARMUP_STEPS}, per round " + ", ".join(
                 f"{s:.2f}" for s in timed[dtype]) + f"; {scope}"),
        dict(name=f"run_pretraining {name} {dtype}: whole process",
             value=round(statistics.median(wall[dtype]), 1), unit="s (median)",
             note="per round " + ", ".join(f"{s:.1f}" for s in wall[dtype]))]
  if len(dtypes) == 2:
    for what, seconds in (("steps", timed), ("whole process", wall)):
      ratios = [a / b for a, b in zip(seconds["float32"], seconds["bfloat16"])]
      rows.append(dict(name=f"run_pretraining {name} bfloat16 speed-up, {what}",
                       value=round(statistics.median(ratios), 2), unit="x",
                       note=f"float32 s / bfloat16 s per round: median "
                            f"{machine.spread(ratios, '{:.2f}')}"))
  return rows


# --------------------------------------------------------------------------- packing

SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
PACKING_CORPUS = os.path.join(SHARED, "corpora", "reuters_docs.txt")
PACKING_VOCAB = os.path.join(SHARED, "vocab", "uncased_vocab.txt")
# The small config of the packing rows (L=2, H=128), and per sequence length the
# original README's --max_predictions_per_seq (about max_seq_length x masked_lm_prob) and
# the batch in rows, the same for both layouts.
PACKING_CONFIG = {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                  "intermediate_size": 512}
PACKING_PREDICTIONS = {128: 20, 512: 80}
PACKING_BATCH = {128: 32, 512: 8}
# Steps timed per length (after PACKING_WARMUP_STEPS): at 128 a step is short, and 30
# of them left the rounds' spread wider than the effect.
PACKING_WARMUP_STEPS, PACKING_LOOP = 10, 10
PACKING_TIMED_STEPS = {128: 100, 512: 30}


def _summary_value(text, key):
  for line in text.splitlines():
    if line.startswith(f"{key} = "):
      return float(line.split(" = ")[1].replace(",", ""))
  raise AssertionError(f"no {key} in the summary:\n{text[-1500:]}")


def run_packing(corpus=PACKING_CORPUS, seqs=(128, 512), rounds=3, vocab=PACKING_VOCAB,
                do_lower_case=True):
  """run_pretraining.py on the original's records and on packed records of the same
  instances (create_pretraining_data.py without and with --pack_sequences, the README's
  flags otherwise, --dupe_factor=1), the same batch in rows, in turn (A/B, B/A, ...):
  each layout's padding, and its real (non-padding) tokens per second, the loop's own
  rows per second after the first PACKING_WARMUP_STEPS steps times the file's mean real
  tokens per row; the ratio packed / unpacked is taken within each round."""
  if not (os.path.exists(corpus) and os.path.exists(vocab)):
    return [dict(name="packing", value="skipped", unit="",
                 note=f"{corpus} or {vocab} not found (needs ../shared/data)")]
  rows = []
  with tempfile.TemporaryDirectory(prefix="bench-packing-") as work:
    config_file = os.path.join(work, "bert_config.json")
    with open(config_file, "w", encoding="utf-8") as handle:
      json.dump({"vocab_size": VOCAB, "max_position_embeddings": 512, "type_vocab_size": 2,
                 **PACKING_CONFIG}, handle)
    for seq in seqs:
      predictions, batch = PACKING_PREDICTIONS[seq], PACKING_BATCH[seq]
      timed_steps = PACKING_TIMED_STEPS[seq]
      steps = PACKING_WARMUP_STEPS + timed_steps
      records, real_per_row = {}, {}
      for layout, extra in (("unpacked", []), ("packed", ["--pack_sequences"])):
        records[layout] = os.path.join(work, f"{layout}-{seq}.tfrecord")
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "create_pretraining_data.py"),
             f"--input_file={corpus}", f"--output_file={records[layout]}",
             f"--vocab_file={vocab}", f"--do_lower_case={do_lower_case}",
             f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}",
             "--masked_lm_prob=0.15", "--random_seed=12345", "--dupe_factor=1", *extra],
            capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        if proc.returncode:
          raise RuntimeError(f"create_pretraining_data.py failed:\n{proc.stderr[-1500:]}")
        padding = _summary_value(proc.stdout, "padding_fraction")
        real_per_row[layout] = (1 - padding) * seq
        records_written = _summary_value(
            proc.stdout, "rows_written" if extra else "instances_written")
        rows.append(dict(name=f"packing seq {seq}: padding, {layout}",
                         value=round(100 * padding, 1), unit="% of positions",
                         note=f"{records_written:,.0f} rows of {os.path.basename(corpus)}"))

      def command_of(layout, output_dir, seq=seq, predictions=predictions, batch=batch,
                     steps=steps):
        return [sys.executable, os.path.join(ROOT, "run_pretraining.py"),
                f"--input_file={records[layout]}", f"--bert_config_file={config_file}",
                f"--output_dir={output_dir}", "--do_train", f"--max_seq_length={seq}",
                f"--max_predictions_per_seq={predictions}", f"--train_batch_size={batch}",
                f"--num_train_steps={steps}", "--num_warmup_steps=10",
                f"--steps_per_loop={PACKING_LOOP}", f"--log_every_steps={PACKING_LOOP}",
                f"--save_checkpoints_steps={10 * steps}"]

      timed, _ = command_runs.alternate(command_of, ["unpacked", "packed"], rounds,
                                        os.path.join(work, f"runs-{seq}"),
                                        PACKING_WARMUP_STEPS, steps, PACKING_LOOP, batch)
      rate = {layout: [timed_steps * batch * real_per_row[layout] / s
                       for s in timed[layout]] for layout in timed}
      scope = (f"run_pretraining.py, L=2 H=128, batch {batch} rows, seq {seq}, "
               f"--max_predictions_per_seq={predictions}, {timed_steps} steps after "
               f"{PACKING_WARMUP_STEPS}; {machine.cpu_model()}; {machine.load_average()}")
      for layout in ("unpacked", "packed"):
        rows.append(dict(name=f"packing seq {seq}: real tokens/s, {layout}",
                         value=round(statistics.median(rate[layout])), unit="tokens/s",
                         note=f"per round {machine.spread(rate[layout], '{:,.0f}')}; "
                              f"{scope}"))
      ratios = [p / u for p, u in zip(rate["packed"], rate["unpacked"])]
      rows.append(dict(name=f"packing seq {seq}: real tokens/s, packed / unpacked",
                       value=round(statistics.median(ratios), 2), unit="x",
                       note=f"within each round: median {machine.spread(ratios, '{:.2f}')}"))
  return rows


# --------------------------------------------------------------------------- Hugging Face

def _hf_rows(name, batch, steps, ours, dtype="float32"):
  """transformers' BertForPreTraining on the same config, batch and synthetic data, run by
  hugging_face_worker.py in the Hugging Face venv (bfloat16: under torch.autocast); `ours` is our
  XLA-off rate in the same dtype."""
  label = f"HF BertForPreTraining {name} seq{SEQ} b{batch} {dtype}"
  if hugging_face_launcher.hf_python() is None:
    return [dict(name=label, value="skipped", unit="", note=hugging_face_launcher.HF_HINT)], None
  import numpy as np  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory(prefix="bench-pretrain-hf-") as workdir:
    # The batches ours trains on (train_run.build draws them the same way), in a file.
    data_file = os.path.join(workdir, "batches.npz")
    np.savez(data_file, **train_run.synthetic_features("pretrain", 4 * batch, SEQ,
                                                       PREDICTIONS, VOCAB))
    hf, why = hugging_face_launcher.run_hf("pretrain", {
        "threads": machine.threads(), "config": CONFIGS[name], "vocab_size": VOCAB,
        "data_file": data_file, "batch_size": batch, "steps": steps,
        "precision": dtype}, workdir, timeout=1800)
  if hf is None:
    return [dict(name=label, value=float("nan"), unit="examples/s", note=why)], None
  rows = [dict(name=label, value=round(hf["examples_per_second"], 2), unit="examples/s",
               note=f"masked LM (logits at all {SEQ} positions, loss at the {PREDICTIONS} "
                    f"labelled) + NSP, torch AdamW, clip 1.0, {hf['threads']} threads, "
                    f"{steps} timed steps after {hf['warmup_steps']} warm-up steps; {hf['versions']}; "
                    f"{machine.load_average()}")]
  if ours:
    rows.append(dict(name=f"pretraining {name} ours ({dtype}, xla off) / HF {dtype}",
                     value=round(ours / hf["examples_per_second"], 2), unit="x",
                     note="same config, batch and data, same run"
                          + ("; target >= 1x for base" if dtype == "float32" else "")))
  return rows, hf["examples_per_second"]


# --------------------------------------------------------------------------- small

def run_small(shapes=("korean", "demo"), rounds=3, steps=20, reps=3, baseline=None,
              xla_settings=(False, True), peak=None, floor=True):
  """Rows for the small workload; variants alternate within each round. floor: each
  shape's matmuls alone too (matmul_floor.py)."""
  if peak is None:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    peak = machine.matmul_peak(tf.float32)
  trees = [("ours", None)] + ([("baseline", os.path.abspath(baseline))] if baseline else [])
  rows = [dict(name="matmul peak float32 (CPU)", value=round(peak / 1e9, 1), unit="GFLOP/s",
               note=f"{machine.peak_note()}; {machine.cpu_model()}")]
  for shape in shapes:
    flops = small_step.flops_per_sequence(shape)
    rates = {}       # (tree, xla) -> [rates]
    per_round = {}   # (tree, xla) -> [median of the round]
    for r in range(rounds):
      order = [(t, x) for t in trees for x in xla_settings]
      if r % 2:
        order.reverse()
      for (tree, root), xla in order:
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        if root:  # that tree's `bert` (its folder comes first), this tree's benchmarks
          env["PYTHONPATH"] = os.pathsep.join(
              [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.parts.small_step", shape, str(int(xla)),
             str(steps), str(reps)],
            capture_output=True, text=True, timeout=1800, env=env, cwd=root or ROOT)
        key = (tree, xla)
        if proc.returncode != 0:
          rows.append(dict(name=f"small {shape} {tree} xla={'on' if xla else 'off'}",
                           value=float("nan"), unit="sequences/s",
                           note="failed: " + proc.stderr.strip().splitlines()[-1][:200]))
          continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        if os.path.realpath(result["code_root"]) != os.path.realpath(root or ROOT):
          raise RuntimeError(f"the {tree} process ran the bert of {result['code_root']}, "
                             f"not of {root or ROOT}")
        got = result["rates"]
        rates.setdefault(key, []).extend(got)
        per_round.setdefault(key, []).append(machine.median_range(got)[0])
    load = machine.load_average()
    for (tree, xla), values in rates.items():
      median, low, high = machine.median_range(values)
      label = f"small {shape} {tree} xla={'on' if xla else 'off'}"
      rows.append(dict(name=label, value=round(median, 1), unit="sequences/s",
                       note=f"median of {len(values)} calls of {steps} steps in {rounds} "
                            f"processes, min {low:.1f} max {high:.1f}; "
                            f"{small_step.describe(shape)}; {load}"))
      rows.append(dict(name=label + " model FLOP/s", value=round(median * flops / 1e9, 1),
                       unit="GFLOP/s",
                       note=f"{flops / 1e6:.0f} MFLOP a sequence: {100 * median * flops / peak:.1f}% "
                            f"of the measured float32 matmul peak (min {100 * low * flops / peak:.1f}%, "
                            f"max {100 * high * flops / peak:.1f}%)"))
    pairs = [(("ours", True), ("ours", False), "XLA on / off")]
    if baseline:
      pairs += [(("ours", x), ("baseline", x), f"ours / baseline, xla={'on' if x else 'off'}")
                for x in xla_settings]
    for a, b, what in pairs:
      if a in per_round and b in per_round:
        ratios = [p / q for p, q in zip(per_round[a], per_round[b])]
        median, low, high = machine.median_range(ratios)
        rows.append(dict(name=f"small {shape} {what}", value=round(median, 3), unit="x",
                         note=f"per-round ratios of medians, {len(ratios)} rounds: min "
                              f"{low:.3f} max {high:.3f}"))
    if floor:
      rows.append(_floor_row(shape))
  return rows


def _floor_row(shape):
  """The shape's step as its matmuls alone (matmul_floor.py, in this process): the bound
  of what the whole step can reach on this machine's matmul kernels."""
  s = small_step.SHAPES[shape]
  out = matmul_floor.ceiling_at(s["seq"], s["batch"], s, update=False)
  rate = out["train_flops"] / out["train_seconds"]
  return dict(name=f"small {shape} matmuls alone, forward + backward",
              value=round(out["train_seconds"] * 1e3, 1), unit="ms",
              note=f"benchmarks/parts/matmul_floor.py --shape={shape}: {rate / 1e9:.1f} GFLOP/s"
                   f" = {100 * rate / out['peak']:.0f}% of this process's float32 matmul "
                   f"peak {out['peak'] / 1e9:.1f} GFLOP/s; {machine.load_average()}")


def run_base(rounds=3, steps=3, batch=8, xla_settings=(False, True)):
  """The BERT-Base target (65% of the float32 matmul peak): the seq-128 float32
  step (child()) in fresh processes, each round measuring the matmul peak just before
  its processes, so every fraction has a peak from the same minute."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  flops = training_flops_per_example(**CONFIGS["base"])
  fractions = {xla: [] for xla in xla_settings}
  rates = {xla: [] for xla in xla_settings}
  peaks = []
  for round_index in range(rounds):
    peaks.append(machine.matmul_peak(tf.float32))
    for xla in xla_settings:
      proc = subprocess.run(_child_command("base", "float32", int(xla), batch, steps),
                            capture_output=True, text=True, timeout=3600, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
      if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-1500:])
      rate = json.loads(proc.stdout.strip().splitlines()[-1])["examples_per_second"]
      rates[xla].append(rate)
      fractions[xla].append(rate * flops / peaks[-1])
      print(f"[base] round {round_index + 1} xla={int(xla)}: {rate:.2f} examples/s, "
            f"{100 * fractions[xla][-1]:.1f}% of {peaks[-1] / 1e9:.1f} GFLOP/s; "
            f"{machine.load_average()}", file=sys.stderr, flush=True)
  rows = [dict(name="matmul peak float32 (CPU), per round", value=round(max(peaks) / 1e9, 1),
               unit="GFLOP/s", note="max; " + machine.spread([p / 1e9 for p in peaks])
               + f"; {machine.cpu_model()}")]
  for xla in xla_settings:
    label = f"pretraining base seq{SEQ} b{batch} float32 xla={'on' if xla else 'off'}"
    rows.append(dict(name=label, value=round(sorted(rates[xla])[len(rates[xla]) // 2], 2),
                     unit="examples/s", note=machine.spread(rates[xla], "{:.2f}")
                     + f"; {steps} timed steps after tracing; {flops / 1e9:.0f} GFLOP an example"))
    rows.append(dict(name=label + " % of peak",
                     value=round(100 * sorted(fractions[xla])[len(fractions[xla]) // 2], 1),
                     unit="%", note=machine.spread([100 * f for f in fractions[xla]])
                     + " (each round's rate over that round's peak); target 65%"))
  return rows


def _arg(name, default):
  for a in sys.argv:
    if a.startswith(f"--{name}="):
      return a.split("=", 1)[1]
  return default


def main():
  if "--small" in sys.argv:
    shapes = tuple(_arg("shapes", "korean,demo").split(","))
    xla = tuple(bool(int(x)) for x in _arg("xla", "0,1").split(","))
    for row in run_small(shapes, int(_arg("rounds", 3)), int(_arg("steps", 20)),
                         int(_arg("reps", 3)), _arg("baseline", None), xla):
      print(f"{row['name']:<58} {row['value']:>10} {row['unit']:<12} {row['note']}")
    return
  if "--base" in sys.argv:
    xla = tuple(bool(int(x)) for x in _arg("xla", "0,1").split(","))
    for row in run_base(int(_arg("rounds", 3)), int(_arg("steps", 3)), int(_arg("batch", 8)),
                        xla):
      print(f"{row['name']:<58} {row['value']:>10} {row['unit']:<12} {row['note']}")
    return
  if "--packing" in sys.argv:
    seqs = tuple(int(x) for x in _arg("seqs", "128,512").split(","))
    for row in run_packing(_arg("corpus", PACKING_CORPUS), seqs, int(_arg("rounds", 3)),
                           _arg("vocab", PACKING_VOCAB),
                           _arg("do_lower_case", "true").lower() in ("1", "true")):
      print(f"{row['name']:<58} {row['value']:>10} {row['unit']:<12} {row['note']}")
    return
  if len(sys.argv) > 1 and sys.argv[1] == "--child":
    child(sys.argv[2], sys.argv[3], bool(int(sys.argv[4])), int(sys.argv[5]),
          int(sys.argv[6]))
    return
  for row in run(quick="--quick" in sys.argv):
    print(f"{row['name']:<58} {row['value']:>10} {row['unit']:<12} {row['note']}")


if __name__ == "__main__":
  main()
