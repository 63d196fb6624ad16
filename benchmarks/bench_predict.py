"""Whole-process prediction: ours vs ONNX Runtime vs Hugging Face transformers.

Three whole processes, each timed from spawn to exit (start-up, imports, reading the
file, tokenizing, the model, writing the results), on the same sentences (the first N of
SST-2 train.tsv written as a GLUE test.tsv), with the same weights (the shared MiniLM,
L6 H384 A12, and one classifier head), batch 32, max_seq_length 128:
  ours  the user's command: `run_classifier.py --task_name=sst2 --do_predict` on an
        output_dir that holds the run's checkpoint (prepared, untimed);
  hf    transformers' BertForSequenceClassification (saved with save_pretrained,
        untimed), BertTokenizerFast, batches in file order padded to their longest row
        (DataCollatorWithPadding), torch.inference_mode (benchmarks/parts/hugging_face_worker.py
        predict_file);
  ort   the same model exported to ONNX and fused by ONNX Runtime's transformer optimizer
        (untimed), ORT_ENABLE_ALL, the `tokenizers` package's WordPiece, batches as HF's
        (hugging_face_worker.py ort_predict_file).
Opt-in sides (--sides=...,ours_bf16,hf_bf16,ort_int8), each CPU's best precision:
  ours_bf16  the same command with --dtype=bfloat16 (its speed-up over ours is printed);
  hf_bf16    transformers' side under torch.autocast bfloat16 (its speed-up over hf, and
             ours_bf16 against it);
  ort_int8   the fused ONNX model with ORT's dynamic int8 quantization (int8 weights,
             activations quantized per call), timed against the faster of our sides.
  On a CPU without bfloat16 units the bfloat16 sides are left out, and a row says so.
LiteRT sides (--sides=...,litert_f32,litert_int8), the export's TensorFlow Lite models:
  litert_f32   `predict_litert.py --model=<export>/litert/model_float32.tflite
               --task_name=sst2 --do_predict`'s files, without TensorFlow (the pure-Python
               tokenizer, ai-edge-litert's interpreter with --num_threads = the threads
               every side gets); the export is `run_classifier.py --export_dir` of our
               side's checkpoint (prepared, untimed);
  litert_int8  the same with model_int8.tflite (dynamic-range int8), timed against ORT's
               dynamic int8 and against our float32 side.
               These are whole user commands, not equal comparisons: predict_litert.py
               batches rows sorted by length, the other sides in file order, and ORT
               here is one setup. benchmarks/bench_peers.py gives every side the same
               batches and ORT its best setup; its ratios are the ones the docs quote.
--finetuned_dir=DIR: every side predicts with the weights of a run_classifier.py SST-2
fine-tuning run (DIR is its --output_dir: its checkpoint is copied for our side, exported
with export_encoder.py --format=huggingface for the HF and ORT sides and with
run_classifier.py --export_dir for the LiteRT sides) instead of the pretrained MiniLM
with a random head; int8's label agreement is then that of a real model.
Rounds are interleaved (the order rotates each round), so load from other work on the
machine falls on every side alike; per round the ratios hf/ours and ort/ours, then their
median and min-max. The results files are checked against each other: the same class on
every row, probabilities within PROBABILITY_TOLERANCE.

  python -m benchmarks.bench_predict [--quick] [--rounds=3] [--sentences=10000]
      [--sides=ours,ort,hf[,ours_bf16,hf_bf16,ort_int8,litert_f32,litert_int8]]
      [--finetuned_dir=DIR] [--ours_flags=...] [--baseline_tree=DIR]
      [--small_sentences=N]

--small_sentences=N: every side also predicts the first N sentences, in the same rounds,
and the rows give each side's model share (the whole process on all the sentences minus
the one on N) with the bfloat16/float32 and ours/HF ratios of it, round by round.

With an ORT side, the run ends with the matmul floor of the same sentences
(benchmarks/parts/matmul_floor.py, in this process): the forward matmuls alone at the sentences'
unpadded mean length, and ORT's median time over it, the most any process built on this
machine's matmul kernels could reach against ORT (--no_floor skips it).
--quick: 1,000 sentences, 1 round. The HF and ORT sides need `make bench-hf-setup`
(.venv-hf, or $BERT_HF_PYTHON); without it only our side is timed.
"""

import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.parts import arguments
from benchmarks.parts import hugging_face_launcher
from benchmarks.parts import machine
from benchmarks.parts import sst2
from benchmarks.parts import matmul_floor
from bert.utils import cpu_choice

ROOT = sst2.ROOT
# The classifier benchmark's data, model and shapes: SST-2, the shared MiniLM, 32 x 128.
MODEL_DIR, BATCH, SEQ = sst2.MODEL_DIR, sst2.BATCH, sst2.SEQ
VOCAB = sst2.MODEL_VOCAB  # the model's own, as a user passes it
# |p_ours - p_other| allowed on every probability: the three runtimes sum in different
# orders (and ORT fuses attention and GELU), so equal to rounding, not bit for bit.
PROBABILITY_TOLERANCE = 1e-4
SIDES = ("ours", "ort", "hf")  # the default sides
# Opt-in sides (--sides): each CPU's best precision on both runtimes, for the comparison
# "where both sides use the best precision the CPU allows".
BEST_PRECISION_SIDES = ("ours_bf16", "hf_bf16", "ort_int8")  # and "before": --baseline_tree's
# The sides that compute in bfloat16: only on a CPU with bfloat16 units.
BFLOAT16_SIDES = ("ours_bf16", "hf_bf16")
# The export's LiteRT models run by predict_litert.py, in a process without TensorFlow.
LITERT_SIDES = ("litert_f32", "litert_int8")
LITERT_FILES = {"litert_f32": "model_float32.tflite", "litert_int8": "model_int8.tflite"}
# |p - p_ours| allowed for a side that computes in another precision: bfloat16 as
# docs/classifier.md documents it for prediction; ORT's dynamic int8 has no documented
# bound, so its difference and label agreement are reported, never judged.
OTHER_PRECISION_TOLERANCE = {"ours_bf16": 0.03, "hf_bf16": 0.03, "ort_int8": None,
                             "litert_int8": None}
# What each LiteRT side is compared with, whole process, and the speed-up it must reach
# (None: reported only). int8 against ORT's dynamic int8 (the usual CPU speed path) and
# our float32 SavedModel prediction it replaces; float32 against the float32 runtimes.
LITERT_TARGETS = {"litert_int8": {"ort_int8": 1.5, "ours": 2.5},
                  "litert_f32": {"ort": None, "ours": None}}


def prepare_litert(data_dir, output_dir, export_dir):
  """The LiteRT models of our side's checkpoint, as a user makes them: run_classifier.py
  --export_dir (both precisions, each checked against the SavedModel), untimed."""
  command = [a for a in our_command(data_dir, output_dir) if a != "--do_predict"]
  sst2.run_prepared(command + [f"--export_dir={export_dir}", "--litert=both"],
                "run_classifier.py --export_dir (the LiteRT models)")
  return os.path.join(export_dir, "litert")


def litert_command(model_file, data_dir, output_dir):
  return [sys.executable, os.path.join(ROOT, "predict_litert.py"), f"--model={model_file}",
          "--task_name=sst2", f"--data_dir={data_dir}", f"--output_dir={output_dir}",
          f"--predict_batch_size={BATCH}", f"--num_threads={machine.threads()}"]


def our_command(data_dir, output_dir, extra_flags=(), tree=ROOT):
  return [sys.executable, os.path.join(tree, "run_classifier.py"), "--task_name=sst2",
          "--do_predict", f"--data_dir={data_dir}", f"--vocab_file={VOCAB}",
          f"--bert_config_file={os.path.join(MODEL_DIR, 'bert_config.json')}",
          f"--output_dir={output_dir}", f"--max_seq_length={SEQ}",
          f"--predict_batch_size={BATCH}", *extra_flags]


def time_process(command, env=None):
  """Wall seconds from spawn to exit; raises with the output's tail on failure."""
  started = time.perf_counter()
  proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                        env=dict(os.environ, **(env or {})))
  seconds = time.perf_counter() - started
  if proc.returncode != 0:
    tail = (proc.stderr.strip() or proc.stdout.strip() or "no output")[-1500:]
    raise RuntimeError(f"{shlex.join(command[:3])} ... failed (exit {proc.returncode}):\n"
                       f"{tail}")
  return seconds


def read_probabilities(path):
  import numpy as np  # pylint: disable=g-import-not-at-top
  with open(path, encoding="utf-8") as handle:
    return np.array([[float(v) for v in line.split("\t")] for line in handle if line.strip()])


def _same_bytes(path, other):
  with open(path, "rb") as one, open(other, "rb") as two:
    return one.read() == two.read()


def run(quick=False, rounds=None, sentences=None, sides=SIDES, ours_flags=(),
        baseline_tree=None, floor=True, finetuned_dir=None, small_sentences=None):
  """Returns [{name, value, unit, note}]. floor: with an ORT side, also the matmul floor
  (matmul_floor.py) of the same sentences, in this process after the rounds.
  finetuned_dir: a run_classifier.py SST-2 run's output_dir whose weights every side uses
  (None: the pretrained MiniLM with a seeded random head). small_sentences: every side
  also predicts the first this many sentences, in the same rounds, and the rows give each
  side's model share (the whole process on `sentences` minus the one on these: start-up,
  imports and loading cancel out)."""
  import json  # pylint: disable=g-import-not-at-top

  import numpy as np  # pylint: disable=g-import-not-at-top
  rounds = (1 if quick else 3) if rounds is None else rounds
  sentences = (1000 if quick else 10000) if sentences is None else sentences
  if rounds < 1 or sentences < 1:
    raise ValueError(f"rounds={rounds}, sentences={sentences}: each at least 1")
  if not os.path.isdir(sst2.SST2) or not os.path.isdir(sst2.MODEL_DIR):
    missing = sst2.SST2 if not os.path.isdir(sst2.SST2) else sst2.MODEL_DIR
    return [{"name": "predict_whole_process", "value": "skipped", "unit": "",
             "note": f"{missing} not found (needs ../shared/data)"}]
  sides = list(sides)
  hf_python = hugging_face_launcher.hf_python()
  rows = []
  if not cpu_choice.this_cpu().has_bfloat16 and any(s in BFLOAT16_SIDES for s in sides):
    rows.append({"name": "predict_whole_process_bfloat16", "value": "skipped", "unit": "",
                 "note": f"{machine.cpu_model()} has no bfloat16 units (AVX512-BF16 or "
                         "AMX): bfloat16 would run emulated; the float32 rows stand"})
    sides = [s for s in sides if s not in BFLOAT16_SIDES]
  external = ("hf", "hf_bf16", "ort", "ort_int8")  # the sides of the Hugging Face venv
  if hf_python is None and any(s in external for s in sides):
    rows.append({"name": "predict_whole_process_hf_ort", "value": "skipped", "unit": "",
                 "note": hugging_face_launcher.HF_HINT})
    sides = [s for s in sides if s not in external]
  if baseline_tree:
    sides = [s for s in sides if s != "before"] + ["before"]
  else:
    sides = [s for s in sides if s != "before"]
  if not sides:  # every side asked for is skipped: the rows above say why
    return rows
  if "ours" not in sides:  # every other side is compared with ours
    sides.insert(0, "ours")
  sizes = {"": sentences}
  if small_sentences:
    sizes["_small"] = small_sentences
  with tempfile.TemporaryDirectory(prefix="bench-predict-") as work:
    texts = None
    test_files, data_dirs = {}, {}
    for size, count in sizes.items():
      data_dirs[size] = os.path.join(work, "data" + size)
      os.makedirs(data_dirs[size])
      test_files[size] = os.path.join(data_dirs[size], "test.tsv")
      written = sst2.write_test_file(test_files[size], count)
      texts = texts if size else written
    output_dir = os.path.join(work, "prepared")  # each of our sides runs on a copy
    head_file = os.path.join(work, "head.npz")
    if finetuned_dir:
      sst2.prepare_finetuned(finetuned_dir, output_dir, head_file)
    else:
      sst2.prepare_ours(output_dir, head_file)
    litert_dir = None
    if any(s in LITERT_SIDES for s in sides):  # exported from a copy of our checkpoint
      export_from = os.path.join(work, "export_from")
      shutil.copytree(output_dir, export_from)
      litert_dir = prepare_litert(data_dirs[""], export_from, os.path.join(work, "export"))
    versions = {}
    hf_model = {}
    if finetuned_dir and any(s in external for s in sides):
      hf_model["model_dir"] = os.path.join(work, "hf_finetuned")
      sst2.prepare_hf_export(finetuned_dir, hf_model["model_dir"])
    if any(s in external for s in sides):
      prepared, why = hugging_face_launcher.run_hf("prepare_predict", {**hf_model,
          "threads": machine.threads(), "head_file": head_file,
          "hf_model_dir": os.path.join(work, "hf_model"),
          "onnx_file": os.path.join(work, "model.onnx"),
          "onnx_optimized_file": os.path.join(work, "model.opt.onnx"),
          "onnx_int8_file": (os.path.join(work, "model.int8.onnx")
                             if "ort_int8" in sides else None)}, work)
      if prepared is None:
        rows.append({"name": "predict_whole_process_hf_ort", "value": "failed", "unit": "",
                     "note": why})
        sides = [s for s in sides if s not in external]
      else:
        versions["prepared"] = prepared
    external_modes = {
        "hf": ("predict_file", {"hf_model_dir": os.path.join(work, "hf_model")}),
        "hf_bf16": ("predict_file", {"hf_model_dir": os.path.join(work, "hf_model"),
                                     "precision": "bfloat16"}),
        "ort": ("ort_predict_file", {"onnx_file": os.path.join(work, "model.opt.onnx")}),
        "ort_int8": ("ort_predict_file",
                     {"onnx_file": os.path.join(work, "model.int8.onnx")})}
    # Every side and size: its command, and the results file it writes. Each of our
    # commands runs on its own copy of the checkpoint's output_dir (a run holds its lock
    # and writes its results there).
    commands, results = {}, {}
    for size in sizes:
      data_dir = data_dirs[size]
      for side in sides:
        key = side + size
        side_dir = os.path.join(work, key)
        if side in ("ours", "ours_bf16", "before"):
          shutil.copytree(output_dir, side_dir)
          flags = {"ours": list(ours_flags), "ours_bf16": [*ours_flags, "--dtype=bfloat16"],
                   "before": []}[side]
          tree = baseline_tree if side == "before" else ROOT
          commands[key] = our_command(data_dir, side_dir, flags, tree)
          results[key] = os.path.join(side_dir, "test_results.tsv")
        elif side in LITERT_SIDES:
          commands[key] = litert_command(os.path.join(litert_dir, LITERT_FILES[side]),
                                         data_dir, side_dir)
          results[key] = os.path.join(side_dir, "test_results.tsv")
        else:
          mode, extra = external_modes[side]
          results[key] = os.path.join(work, f"{key}_results.tsv")
          request = os.path.join(work, f"{key}-request.json")
          with open(request, "w", encoding="utf-8") as handle:
            json.dump({"threads": machine.threads(), "vocab_file": VOCAB,
                       "test_file": test_files[size], "results_file": results[key],
                       "batch_size": BATCH, "max_seq_length": SEQ, **extra}, handle)
          commands[key] = [hf_python, hugging_face_launcher.HF_SIDE, mode, request]
    seconds = {key: [] for key in commands}
    loads = []
    for round_index in range(rounds):
      order = sides[round_index % len(sides):] + sides[:round_index % len(sides)]
      for side in order:
        for size in sizes:
          loads.append(os.getloadavg()[0])
          seconds[side + size].append(time_process(commands[side + size]))
      print(f"[predict] round {round_index + 1}: " + ", ".join(
          f"{k} {seconds[k][-1]:.1f} s" for k in commands), file=sys.stderr, flush=True)
    probabilities = {side: read_probabilities(results[side]) for side in sides}
    identical = {side: _same_bytes(results[side], results["ours"]) for side in sides}

  weights = (f"the weights of {finetuned_dir}" if finetuned_dir else
             "the pretrained MiniLM with a seeded random head")
  scope = (f"{sentences:,} SST-2 train sentences, MiniLM L6 H384 ({weights}), batch {BATCH}, "
           f"max_seq_length {SEQ}; {machine.cpu_model()}, {machine.threads()} threads; load avg "
           f"(1 min) at each start {min(loads):.2f}-{max(loads):.2f}")
  notes = {"ours": "run_classifier.py --do_predict, whole process"
                   + (f" ({' '.join(ours_flags)})" if ours_flags else ""),
           "hf": "transformers BertForSequenceClassification, dynamic padding, whole "
                 "process",
           "hf_bf16": "transformers BertForSequenceClassification under torch.autocast "
                      "bfloat16, dynamic padding, whole process",
           "ours_bf16": "run_classifier.py --do_predict --dtype=bfloat16, whole process",
           "ort": "ONNX Runtime, transformers' export fused by its BERT optimizer, "
                  "ORT_ENABLE_ALL, whole process",
           "ort_int8": "ONNX Runtime, the fused model with dynamic int8 quantization "
                       "(onnxruntime.quantization.quantize_dynamic, QInt8 weights), "
                       "whole process",
           "before": f"run_classifier.py --do_predict in {baseline_tree}, whole process",
           "litert_f32": "predict_litert.py, the export's model_float32.tflite "
                         "(ai-edge-litert, no TensorFlow), whole process",
           "litert_int8": "predict_litert.py, the export's model_int8.tflite (dynamic-range "
                          "int8; ai-edge-litert, no TensorFlow), whole process"}
  for side in sides:
    per_round = ", ".join(f"{s:.1f}" for s in seconds[side])
    rows.append({"name": f"predict_whole_process_{side}",
                 "value": round(statistics.median(seconds[side]), 1), "unit": "s (median)",
                 "note": f"{notes[side]}; rounds: {per_round} s; {scope}"})
  if small_sentences:
    rows += _model_share_rows(sides, seconds, sentences, small_sentences)
  if "prepared" in versions:
    fused = versions["prepared"].get("fused", {})
    rows.append({"name": "predict_whole_process_versions", "value": "", "unit": "",
                 "note": f"{versions['prepared']['versions']}; ORT fused ops "
                         + ", ".join(f"{k} {v}" for k, v in sorted(fused.items()) if v)})
  ours = probabilities["ours"]
  ours_best = min(statistics.median(seconds[s]) for s in ("ours", "ours_bf16") if s in sides)
  for side in sides:
    if side == "ours":
      continue
    diff = float(np.max(np.abs(probabilities[side] - ours)))
    same = int(np.sum(probabilities[side].argmax(1) == ours.argmax(1)))
    if side in OTHER_PRECISION_TOLERANCE:
      tolerance = OTHER_PRECISION_TOLERANCE[side]
      verdict = ("reported" if tolerance is None else
                 "within {:g}".format(tolerance) if diff <= tolerance else
                 "BEYOND {:g}".format(tolerance))
    else:
      tolerance = PROBABILITY_TOLERANCE
      verdict = ("agree" if same == len(ours) and diff <= tolerance else "DISAGREE")
    agreement = (f"predictions against ours (float32) {verdict}: same class on {same:,} of "
                 f"{len(ours):,}, max |p diff| {diff:.1e}")
    if side in ("ours_bf16", "hf_bf16"):  # a runtime's own speed-up from bfloat16
      own = side[:-len("_bf16")]
      if own in sides:
        ratios = [f32 / bf16 for f32, bf16 in zip(seconds[own], seconds[side])]
        rows.append({"name": f"predict_whole_process_{own}_bf16_speedup",
                     "value": round(statistics.median(ratios), 2), "unit": "x",
                     "note": f"{own} s / {side} s per round: median "
                             f"{machine.spread(ratios, '{:.2f}')}; {agreement}"})
      if side == "hf_bf16" and "ours_bf16" in sides:
        ratios = [hf / mine for hf, mine in zip(seconds[side], seconds["ours_bf16"])]
        rows.append({"name": "predict_whole_process_ours_bf16_vs_hf_bf16",
                     "value": round(statistics.median(ratios), 2), "unit": "x",
                     "note": f"hf_bf16 s / ours_bf16 s per round: median "
                             f"{machine.spread(ratios, '{:.2f}')}; both bfloat16, each "
                             "batch in file order padded to its longest row"})
      continue
    if side in LITERT_TARGETS:
      for other, target in LITERT_TARGETS[side].items():
        if other not in sides:
          continue
        ratios = [theirs / mine for theirs, mine in zip(seconds[other], seconds[side])]
        goal = f"target >= {target:g}x; " if target else ""
        rows.append({"name": f"predict_whole_process_{side}_vs_{other}",
                     "value": round(statistics.median(ratios), 2), "unit": "x",
                     "note": f"{other} s / {side} s per round: median "
                             f"{machine.spread(ratios, '{:.2f}')}; {goal}{agreement}; "
                             "NOT equal batching (predict_litert.py sorts rows by "
                             "length, the other sides run file order): the equal "
                             "comparisons are benchmarks/bench_peers.py's"})
      continue
    if side == "ort_int8":  # best precision against best precision
      ratio = statistics.median(seconds[side]) / ours_best
      rows.append({"name": "predict_whole_process_best_vs_ort_int8",
                   "value": round(ratio, 2), "unit": "x",
                   "note": f"ort_int8 median s / the faster of our sides' medians "
                           f"({ours_best:.1f} s); target >= 1.5x; {agreement}"})
      continue
    ratios = [theirs / mine for theirs, mine in zip(seconds[side], seconds["ours"])]
    target = {"ort": 2.0, "hf": 3.0}.get(side)
    rows.append({"name": f"predict_whole_process_ours_vs_{side}",
                 "value": round(statistics.median(ratios), 2), "unit": "x",
                 "note": f"{side} s / ours s per round: median {machine.spread(ratios, '{:.2f}')}; "
                         + (f"target >= {target:g}x" if target else
                            "before/after")
                         + f"; {agreement}"
                         + (f"; byte-identical files: {identical[side]}"
                            if side == "before" else "")})
  if floor and "ort" in sides:
    rows += _floor_rows(texts, {side: statistics.median(seconds[side])
                                for side in ("ort", "hf") if side in sides})
  return rows


# Model-share ratios: (name, numerator side, denominator side, what it says).
_SHARE_RATIOS = (
    ("ours_bf16_speedup", "ours", "ours_bf16", "our float32 / our bfloat16"),
    ("hf_bf16_speedup", "hf", "hf_bf16", "HF float32 / HF bfloat16"),
    ("ours_vs_hf", "hf", "ours", "HF float32 / ours float32"),
    ("ours_bf16_vs_hf_bf16", "hf_bf16", "ours_bf16", "HF bfloat16 / ours bfloat16"),
    ("after_vs_before", "before", "ours", "the baseline tree's float32 / ours float32"),
)


def _model_share_rows(sides, seconds, sentences, small):
  """Each side's model share per round (its process on `sentences` minus the one on the
  first `small`), and the ratios between sides of it, round by round."""
  share = {side: [big - little for big, little in zip(seconds[side], seconds[side + "_small"])]
           for side in sides}
  rows = [{"name": f"predict_model_share_{side}",
           "value": round(statistics.median(share[side]), 1), "unit": "s (median)",
           "note": f"whole process on {sentences:,} sentences minus on the first {small:,}, "
                   f"per round: " + ", ".join(f"{s:.1f}" for s in share[side])}
          for side in sides]
  for name, top, bottom, what in _SHARE_RATIOS:
    if top in sides and bottom in sides:
      ratios = [a / b for a, b in zip(share[top], share[bottom])]
      rows.append({"name": f"predict_model_share_{name}",
                   "value": round(statistics.median(ratios), 2), "unit": "x",
                   "note": f"{what}, model share per round: median "
                           f"{machine.spread(ratios, '{:.2f}')}"})
  return rows


def _floor_rows(texts, their_seconds):
  """What stands in the way of 2x ONNX Runtime (the target): the forward matmuls alone of
  every sentence at its own length (no padding, no start-up, no tokenizing, no softmax,
  LayerNorm or GELU), at the rate benchmarks/parts/matmul_floor.py measures in this process."""
  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  tokenizer = fast_tokenization.FastTokenizer(VOCAB, True)
  lengths = [min(len(ids) + 2, SEQ) for ids in tokenizer.tokenize_batch(texts)]
  mean = sum(lengths) / len(lengths)
  out = matmul_floor.ceiling_at(mean, BATCH, update=False)
  floor_seconds = len(texts) / out["predict_ceiling"]
  rate = out["forward_flops"] / (BATCH / out["predict_ceiling"])
  return [
      {"name": "predict_floor_forward_matmuls", "value": round(floor_seconds, 1),
       "unit": "s", "note": f"{len(texts):,} sentences at {mean:.2f} tokens, batch {BATCH}: "
                            f"{rate / 1e9:.1f} GFLOP/s, {100 * rate / out['peak']:.0f}% of "
                            f"this process's matmul peak {out['peak'] / 1e9:.1f} GFLOP/s; "
                            f"{machine.load_average()}"},
  ] + [
      {"name": f"predict_floor_{side}_vs_floor",
       "value": round(their_seconds[side] / floor_seconds, 2), "unit": "x",
       "note": f"{side}'s whole process (median) / the forward matmuls alone: the most any "
               f"process on this machine's matmul kernels could reach against {side} in "
               f"this run; below {target:g} the target cannot be met"}
      for side, target in (("ort", 2), ("hf", 3)) if side in their_seconds]


def main():
  parser = arguments.Parser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--rounds", type=arguments.positive_int, default=None)
  parser.add_argument("--sentences", type=arguments.positive_int, default=None)
  parser.add_argument("--sides", default=",".join(SIDES),
                      help="of " + ", ".join(SIDES + BEST_PRECISION_SIDES + LITERT_SIDES))
  parser.add_argument("--finetuned_dir", default=None,
                      help="a run_classifier.py SST-2 run's --output_dir: every side "
                           "predicts with its weights")
  parser.add_argument("--ours_flags", default="",
                      help="extra run_classifier flags for our side, e.g. an opt-in")
  parser.add_argument("--no_floor", action="store_true",
                      help="skip the matmul floor rows (benchmarks/parts/matmul_floor.py)")
  parser.add_argument("--small_sentences", type=arguments.positive_int, default=None,
                      help="also predict the first N sentences in the same rounds and give "
                           "each side's model share (the whole process minus the small one)")
  parser.add_argument("--baseline_tree", default=None,
                      help="another checkout (e.g. `git archive COMMIT | tar -x -C DIR`): "
                           "its run_classifier.py is timed too, as side 'before'")
  args = parser.parse_args()
  known = SIDES + BEST_PRECISION_SIDES + LITERT_SIDES
  unknown = sorted(set(args.sides.split(",")) - set(known) - {""})
  if unknown:
    parser.error(f"--sides: unknown {', '.join(unknown)}; choose from " + ", ".join(known))
  if args.finetuned_dir and not os.path.isdir(args.finetuned_dir):
    parser.error(f"--finetuned_dir={args.finetuned_dir}: no such folder")
  rows = run(args.quick, args.rounds, args.sentences,
             [s for s in args.sides.split(",") if s], shlex.split(args.ours_flags),
             args.baseline_tree, not args.no_floor, args.finetuned_dir,
             args.small_sentences)
  for row in rows:
    print(f"{row['name']:48s} {row['value']!s:>8} {row['unit']:11s} {row['note']}")


if __name__ == "__main__":
  main()
