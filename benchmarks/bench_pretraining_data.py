"""Benchmark: create_pretraining_data.py against the original release's generator, in one run.

  python -m benchmarks.bench_pretraining_data           # 1 and 10 MB, 3 rounds; +50 MB
  python -m benchmarks.bench_pretraining_data --quick   # 1 and 2 MB, 1 round
  python -m benchmarks.bench_pretraining_data --sizes=1,10 --rounds=3 --large_mb=0
  python -m benchmarks.bench_pretraining_data --dynamic_masking [--rounds=3]
      # static --dupe_factor=10 against --dynamic_masking --dupe_factor=1 on Reuters:
      # generation time and bytes on disk (run_dynamic_masking)

The peers, each a process of its own, on the same corpus with the README's flags
(uncased vocabulary, --do_lower_case=True, max_seq_length 128, max_predictions_per_seq
20, masked_lm_prob 0.15, dupe_factor 5, random_seed 12345):
  * ours: the command line, with its default workers (one per CPU);
  * the original: bert/create_pretraining_data.py of `bert-tensorflow` 1.0.4 from the
    package index, in a venv of its own (`make bench-original-setup`, or
    $BERT_ORIGINAL_PYTHON), started by benchmarks/parts/original_launcher.py so that it imports
    its own tokenizer, never ours (checked on every run). 1.0.4 has no whole-word
    masking, so ours runs without it (--do_whole_word_mask=False, its default): both
    sides mask single WordPieces.
Rounds interleave the sides (ours, original, ours, original, ...); each ratio is taken
within one round, then their median and range over the rounds are given.

For each side:
  * whole process: wall time from start to exit, start-up included;
  * work alone: ours, the `seconds` its summary prints (from the start of its generate(),
    which imports TensorFlow while the workers start, to the last record written); the
    original, its main() timed inside its process, after its imports;
  * peak memory: the largest sum of resident set sizes over the process and its workers,
    sampled from /proc every 0.1 s (resident includes the ~500 MB of shared-library pages
    that `import tensorflow` maps; the anonymous part is the private heap);
  * instances: the records in its output file, counted the same way for both sides.
The benchmark fails unless the original wrote the same number of instances as ours
within 2%: the two draw different random numbers, and ours takes random next sentences
from chunks of 1,000 documents instead of the whole corpus, so the counts are close, not
equal. Below about 1 MB the two counts can differ by more than 2% by chance (at 0.3 MB
the original's count moved by 4.5% between random seeds), so the sizes start at 1 MB.
Where the original's side is not installed, or fails, its rows say so.

The corpus is real text reachable offline: the shared Reuters and sample corpora,
documents repeated with their sentences rotated and the documents shuffled. Without
../shared/data (no vocabulary) the benchmark is skipped.

`run(quick=False)` returns the figures as a list of {name, value, unit, note} for
benchmarks/run_all.py.
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks.parts import machine
from benchmarks.parts import original_launcher
from bert.utils import tfrecord_framing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
VOCAB = os.path.join(SHARED, "vocab", "uncased_vocab.txt")
DUPE_FACTOR = 5
# The README's flags, given to both sides.
README_FLAGS = ["--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
                "--masked_lm_prob=0.15", "--random_seed=12345", f"--dupe_factor={DUPE_FACTOR}"]
MAX_COUNT_DIFFERENCE = 0.02


def _shared_documents():
  documents = []
  for name in ("reuters_docs.txt", "sample_text.txt"):
    path = os.path.join(SHARED, "corpora", name)
    with open(path, encoding="utf-8") as handle:
      for block in handle.read().split("\n\n"):
        lines = [l.strip() for l in block.splitlines() if l.strip()]
        if len(lines) >= 2:
          documents.append(lines)
  return documents


def build_corpus(path, megabytes, seed=0):
  """Writes >= `megabytes` MB of documents; returns the size in bytes."""
  documents = _shared_documents()
  rng = random.Random(seed)
  target = megabytes * 1_000_000
  size = 0
  with open(path, "w", encoding="utf-8") as out:
    while size < target:
      order = list(range(len(documents)))
      rng.shuffle(order)
      for index in order:
        lines = documents[index]
        cut = rng.randrange(len(lines))
        text = "\n".join(lines[cut:] + lines[:cut]) + "\n\n"
        out.write(text)
        size += len(text.encode("utf-8"))
        if size >= target:
          break
  return size


def _cmdline(pid):
  with open(f"/proc/{pid}/cmdline", "rb") as handle:
    return handle.read()


def _tree_rss_kb(pid):
  """(resident, anonymous resident) memory in kB of a process and all its descendants.

  A child whose command line is still its parent's is a fork not yet exec'd (how
  multiprocessing starts a spawned worker): it shares all of the parent's pages, and
  counting it would count the parent twice.
  """
  total, anon, stack = 0, 0, [(pid, None)]
  while stack:
    current, parent_cmdline = stack.pop()
    try:
      cmdline = _cmdline(current)
      if cmdline == parent_cmdline:
        continue
      with open(f"/proc/{current}/status") as handle:
        for line in handle:
          if line.startswith("VmRSS:"):
            total += int(line.split()[1])
          elif line.startswith("RssAnon:"):
            anon += int(line.split()[1])
      for task in os.listdir(f"/proc/{current}/task"):
        with open(f"/proc/{current}/task/{task}/children") as handle:
          stack.extend((int(c), cmdline) for c in handle.read().split())
    except (FileNotFoundError, ProcessLookupError, PermissionError):
      continue
  return total, anon


def _measure(command, cwd=ROOT, env=None):
  """Runs a command; returns (wall s, (peak resident MB, peak anonymous MB, CPU s), stdout).

  CPU seconds (user + system, all processes) do not depend on what else the machine runs.
  Both memory figures are summed over the process tree. Resident counts every page,
  including the ~470 MB of shared-library pages that `import tensorflow` maps (shared
  between processes, reclaimable); anonymous only the private heap.
  """
  env = env or dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  start = time.time()
  with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
    process = subprocess.Popen(command, stdout=stdout, stderr=stderr, cwd=cwd, env=env)
    peak = peak_anon = 0
    while process.poll() is None:
      rss, anon = _tree_rss_kb(process.pid)
      peak, peak_anon = max(peak, rss), max(peak_anon, anon)
      time.sleep(0.1)
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    stdout.seek(0)
    stderr.seek(0)
    out = stdout.read().decode()
    if process.returncode != 0:
      tail = stderr.read().decode().strip().splitlines() or ["no output"]
      raise RuntimeError(f"exit {process.returncode}: {tail[-1][:300]}")
  return wall, (peak / 1024.0, peak_anon / 1024.0, cpu), out


def check_instance_counts(ours, original, tolerance=MAX_COUNT_DIFFERENCE):
  """The original's instances against ours: returns (original - ours) / ours; raises
  AssertionError when a side wrote nothing or the two differ by more than `tolerance`."""
  if ours <= 0 or original <= 0:
    raise AssertionError(f"instances written: ours {ours:,}, the original {original:,}; "
                         "a side wrote nothing")
  difference = (original - ours) / ours
  if abs(difference) > tolerance:
    raise AssertionError(
        f"instances written: ours {ours:,}, the original {original:,} ({difference:+.2%}), "
        f"beyond {tolerance:.0%}: the two sides did not do the same work")
  return difference


def _flags(corpus, output):
  return [f"--input_file={corpus}", f"--output_file={output}",
          f"--vocab_file={VOCAB}"] + README_FLAGS


def _summary_value(out, key):
  return float(out.split(f"{key} = ")[1].split()[0].replace(",", ""))


def _count_and_remove(output):
  """The records of a TFRecord file (its headers walked), then the file removed."""
  count = tfrecord_framing.check_tfrecord_framing(output, "output_file")
  os.remove(output)
  return count


def _ours(corpus, output):
  """One run of our command line: {instances, work_s, wall_s, peak_mb, anon_mb, cpu_s}."""
  wall, (peak, anon, cpu), out = _measure(
      [sys.executable, os.path.join(ROOT, "create_pretraining_data.py")] +
      _flags(corpus, output) + ["--do_whole_word_mask=False"])
  instances = _count_and_remove(output)
  if instances != int(_summary_value(out, "instances_written")):
    raise AssertionError(f"ours printed instances_written = "
                         f"{_summary_value(out, 'instances_written'):,.0f} but wrote "
                         f"{instances:,} records")
  return {"instances": instances, "work_s": _summary_value(out, "seconds"), "wall_s": wall,
          "peak_mb": peak, "anon_mb": anon, "cpu_s": cpu}


def _original(corpus, output):
  """One run of the original's generator in its venv: the same dict as _ours plus
  `versions`, or a string saying why it did not run."""
  if original_launcher.original_python() is None:
    return original_launcher.ORIGINAL_HINT
  with tempfile.TemporaryDirectory(prefix="bench-original-") as workdir:
    request = os.path.join(workdir, "generate-request.json")
    with open(request, "w", encoding="utf-8") as handle:
      json.dump({"flags": _flags(corpus, output)}, handle)
    try:
      wall, (peak, anon, cpu), out = _measure(original_launcher.command("generate", request),
                                              cwd=workdir, env=original_launcher.environment())
    except RuntimeError as error:
      return f"the original's side failed: {error}"
  result = original_launcher.parse_result(out)  # its modules checked: its own, not ours
  return {"instances": _count_and_remove(output), "work_s": result["seconds"],
          "wall_s": wall, "peak_mb": peak, "anon_mb": anon, "cpu_s": cpu,
          "versions": result["versions"]}


def _side_rows(side, size, runs, note):
  """Rows of one side at one size: rates by work alone and whole process, memory."""
  work = [r["instances"] / r["work_s"] for r in runs]
  whole = [r["instances"] / r["wall_s"] for r in runs]
  spread = lambda values, fmt="{:,.0f}": machine.spread(values, fmt)  # noqa: E731
  instances = sorted({r["instances"] for r in runs})
  return [
      {"name": f"{side}, {size}: instances/s, work alone",
       "value": round(statistics.median(work)), "unit": "instances/s",
       "note": f"{spread(work)}; {', '.join(f'{n:,}' for n in instances)} instances in "
               f"{spread([r['work_s'] for r in runs], '{:.2f}')} s; {note}"},
      {"name": f"{side}, {size}: instances/s, whole process",
       "value": round(statistics.median(whole)), "unit": "instances/s",
       "note": f"{spread(whole)}; {spread([r['wall_s'] for r in runs], '{:.2f}')} s from "
               f"start to exit; {spread([r['cpu_s'] for r in runs], '{:.1f}')} CPU s"},
      {"name": f"{side}, {size}: peak memory",
       "value": round(max(r["peak_mb"] for r in runs)), "unit": "MB",
       "note": f"resident, all processes, the largest of the rounds; "
               f"{max(r['anon_mb'] for r in runs):.0f} MB of it anonymous"},
  ]


def _ratio_rows(size, ours, original):
  """Ours / the original's instances/s, round by round, by work alone and whole process."""
  rows = []
  for key, what in (("work_s", "work alone"), ("wall_s", "whole process")):
    ratios = [(o["instances"] / o[key]) / (p["instances"] / p[key])
              for o, p in zip(ours, original)]
    rows.append({"name": f"{size}: ours / the original, {what}",
                 "value": round(statistics.median(ratios), 2), "unit": "x",
                 "note": "instances/s, the median of the rounds' ratios, " +
                         machine.spread(ratios, "{:.2f}")})
  differences = [check_instance_counts(o["instances"], p["instances"])
                 for o, p in zip(ours, original)]
  rows.append({"name": f"{size}: the original's instances against ours",
               "value": round(100 * max(differences, key=abs), 2), "unit": "%",
               "note": f"the largest difference of the rounds; must be within "
                       f"{MAX_COUNT_DIFFERENCE:.0%} (checked)"})
  return rows


def _compare(corpus, size, rounds, tmp):
  """Both sides on one corpus, interleaved, `rounds` times; their rows."""
  ours, original, why = [], [], None
  for _ in range(rounds):
    ours.append(_ours(corpus, os.path.join(tmp, "ours.tfrecord")))
    if why is None:
      result = _original(corpus, os.path.join(tmp, "original.tfrecord"))
      if isinstance(result, str):
        why = result
      else:
        original.append(result)
  workers = os.cpu_count()
  rows = _side_rows("ours", size, ours, f"{workers} worker processes (its default, one per "
                                        "CPU), no whole-word masking")
  if why is not None:
    return rows + [{"name": f"the original, {size}", "value": "skipped" if "not installed"
                    in why else "failed", "unit": "", "note": why}]
  rows += _side_rows("the original", size, original,
                     f"{original[0]['versions']}, in its own venv, one process")
  return rows + _ratio_rows(size, ours, original)


# --------------------------------------------------------------------------- dynamic masking

DYNAMIC_CORPORA = {"reuters": os.path.join(SHARED, "corpora", "reuters_docs.txt")}


def _generate_timed(corpus, output, flags):
  """One run of our command line: (whole process s, the summary's seconds, bytes)."""
  wall, _, out = _measure([sys.executable, os.path.join(ROOT, "create_pretraining_data.py"),
                           f"--input_file={corpus}", f"--output_file={output}",
                           f"--vocab_file={VOCAB}", *flags])
  size = os.path.getsize(output)
  os.remove(output)
  return wall, _summary_value(out, "seconds"), size


def run_dynamic_masking(corpus=DYNAMIC_CORPORA["reuters"], rounds=3, tmp=None):
  """Static masks written ten times (the README's --dupe_factor=10) against each instance
  written once without masks (--dynamic_masking --dupe_factor=1), the README's flags
  otherwise, in turn: generation time (whole process and the work the summary counts) and
  the bytes on disk."""
  if not (os.path.exists(corpus) and os.path.exists(VOCAB)):
    return [{"name": "dynamic masking", "value": "skipped", "unit": "",
             "note": f"{corpus} or {VOCAB} not found (needs ../shared/data)"}]
  common = ["--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
            "--masked_lm_prob=0.15", "--random_seed=12345"]
  sides = {"static, --dupe_factor=10": common + ["--dupe_factor=10"],
           "dynamic, --dupe_factor=1": common + ["--dupe_factor=1", "--dynamic_masking"]}
  runs = {side: [] for side in sides}
  with tempfile.TemporaryDirectory(prefix="bench-dynamic-", dir=tmp) as work:
    for round_index in range(rounds):
      order = list(sides) if round_index % 2 == 0 else list(sides)[::-1]
      for side in order:
        runs[side].append(_generate_timed(corpus, os.path.join(work, "out.tfrecord"),
                                          sides[side]))
  name = os.path.basename(corpus)
  rows = []
  for side, results in runs.items():
    rows += [
        {"name": f"dynamic masking, {name}: {side}, bytes", "value": results[0][2],
         "unit": "bytes", "note": "the TFRecord file written"},
        {"name": f"dynamic masking, {name}: {side}, whole process", "unit": "s (median)",
         "value": round(statistics.median(r[0] for r in results), 2),
         "note": f"{machine.spread([r[0] for r in results], '{:.2f}')}; the work alone "
                 f"{machine.spread([r[1] for r in results], '{:.2f}')} s; "
                 f"{machine.cpu_model()}; {machine.load_average()}"}]
  static, dynamic = (runs[side] for side in sides)
  rows.append({"name": f"dynamic masking, {name}: bytes, dynamic / static",
               "value": round(dynamic[0][2] / static[0][2], 4), "unit": "",
               "note": "at most 1/8 (0.125) is the target"})
  return rows


def _sizes(text):
  return [float(s) for s in text.split(",") if s]


def run(quick=False, sizes=None, rounds=None, large_mb=None):
  """Returns [{name, value, unit, note}] for benchmarks/run_all.py."""
  if not os.path.exists(VOCAB):
    return [{"name": "pretraining_data", "value": "skipped", "unit": "",
             "note": f"{VOCAB} not found (needs ../shared/data)"}]
  sizes = sizes or ([1, 2] if quick else [1, 10])
  rounds = rounds or (1 if quick else 3)
  large_mb = (0 if quick else 50) if large_mb is None else large_mb
  rows = [{"name": "pretraining_data: machine", "value": time.strftime("%Y-%m-%d"),
           "unit": "", "note": f"{machine.cpu_model()}; {machine.load_average()} "
                               "before the runs"}]
  with tempfile.TemporaryDirectory(prefix="bench-pretraining-") as tmp:
    for seed, megabytes in enumerate(sizes):
      corpus = os.path.join(tmp, f"corpus-{megabytes}.txt")
      size = f"{build_corpus(corpus, megabytes, seed=seed) / 1e6:.1f} MB"
      rows += _compare(corpus, size, rounds, tmp)
    if large_mb:
      corpus = os.path.join(tmp, "corpus-large.txt")
      size = f"{build_corpus(corpus, large_mb, seed=len(sizes)) / 1e6:.1f} MB"
      rows += _side_rows("ours alone", size, [_ours(corpus, os.path.join(tmp, "ours.tfrecord"))],
                         "one run, for memory against the corpus size")
    rows += run_dynamic_masking(rounds=rounds, tmp=tmp)
  rows.append({"name": "pretraining_data: load average after the runs",
               "value": round(os.getloadavg()[0], 2), "unit": "",
               "note": machine.load_average()})
  return rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="1 and 2 MB, one round, no large corpus")
  parser.add_argument("--sizes", default="",
                      help="corpus sizes in MB, comma-separated (from 1 MB: below it the "
                           "instance counts can differ by more than 2%% by chance)")
  parser.add_argument("--rounds", type=int, default=0, help="rounds of both sides in turn")
  parser.add_argument("--large_mb", type=float, default=None,
                      help="ours alone on a corpus this large, for memory (0: none)")
  parser.add_argument("--dynamic_masking", action="store_true",
                      help="only static --dupe_factor=10 against --dynamic_masking, on "
                           "the Reuters corpus")
  args = parser.parse_args()
  if args.dynamic_masking:
    for row in run_dynamic_masking(rounds=args.rounds or 3):
      print(f"{row['name']:<58} {row['value']:>10} {row['unit']:<12} {row['note']}")
    return
  for row in run(quick=args.quick, sizes=_sizes(args.sizes), rounds=args.rounds,
                 large_mb=args.large_mb):
    print(f"{row['name']:<58} {row['value']:>10} {row['unit']:<12} {row['note']}")


if __name__ == "__main__":
  main()
