"""Tokenizer throughput: FastTokenizer (in-graph) vs the original release's FullTokenizer.

A few MB of real text from ../shared/data (Reuters corpus, SQuAD contexts and questions,
GLUE sentences; a generated corpus when that folder is missing), the uncased vocabulary
lower-cased. Our paths must give identical ids on every line, checked here.

The original: `bert-tensorflow` 1.0.4's FullTokenizer from the package index, in a venv
of its own (`make bench-original-setup`, or $BERT_ORIGINAL_PYTHON), started by
benchmarks/parts/original_launcher.py so that it imports its own tokenization.py, never ours
(checked on every call); one pass over all lines a round, timed inside its process
(building the tokenizer outside the timer), its ids compared with ours. Where that venv
is missing, its rows say so. benchmarks/parts/tokenization_reference.py, the same algorithm
restated plainly in this process, is timed too. Where the
Hugging Face venv exists (`make bench-hf-setup`, or $BERT_HF_PYTHON), transformers'
BertTokenizerFast (Rust) batch call is timed on the same lines in that interpreter
(benchmarks/parts/hugging_face_worker.py) and its ids are checked against ours; else the `tokenizers`
package's BertWordPieceTokenizer when importable here; else a row says how to enable it.
Neither is ever a dependency of this project.

  python -m benchmarks.bench_tokenization            # about 3.5 MB, 3 rounds
  python -m benchmarks.bench_tokenization --quick    # about 0.4 MB
  python -m benchmarks.bench_tokenization --rounds=5

The machines these run on are shared: every round times each path once in turn and
the ratios are taken round by round, then reported as the median and the range.

`run(quick=False, rounds=3)` returns the rows for benchmarks/run_all.py.
"""

import json
import os
import random
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.parts import arguments  # noqa: E402
from benchmarks.parts import hugging_face_launcher  # noqa: E402
from benchmarks.parts import machine  # noqa: E402
from benchmarks.parts import original_launcher  # noqa: E402
from benchmarks.parts import tokenization_reference  # noqa: E402
from bert import fast_tokenization  # noqa: E402  pylint: disable=g-import-not-at-top
from bert import tokenization  # noqa: E402  pylint: disable=g-import-not-at-top

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
FAST_BATCH = 8192  # lines per tokenize() call: large batches amortise the op dispatch


def _real_lines():
  lines = []
  corpus = os.path.join(SHARED, "corpora", "reuters_docs.txt")
  with open(corpus, encoding="utf-8") as handle:
    lines += [l.strip() for l in handle if l.strip()]
  with open(os.path.join(SHARED, "squad", "dev-v1.1.json"), encoding="utf-8") as handle:
    for article in json.load(handle)["data"]:
      for paragraph in article["paragraphs"]:
        lines.append(paragraph["context"])
        lines += [qa["question"] for qa in paragraph["qas"]]
  for task, columns in (("SST-2", (0,)), ("MRPC", (3, 4)), ("STS-B", (7, 8)),
                        ("RTE", (1, 2)), ("CoLA", (3,))):
    path = os.path.join(SHARED, "glue", task, "train.tsv")
    if os.path.exists(path):
      with open(path, encoding="utf-8-sig") as handle:
        rows = [l.rstrip("\n").split("\t") for l in handle][1:]
      lines += [r[c] for r in rows for c in columns if c < len(r)]
  return lines


def _generated_lines(num_bytes):
  rng = random.Random(0)
  words = ["the", "model", "token", "naïve", "Straße", "北京", "서울은", "running",
           "unaffable", "1,234", "(e.g.", "U.S.", "don't", "emoji😀", "über"]
  lines, size = [], 0
  while size < num_bytes:
    line = " ".join(rng.choice(words) for _ in range(rng.randint(5, 40))) + "."
    lines.append(line)
    size += len(line.encode("utf-8"))
  return lines


def load_text(num_bytes):
  """(lines, source) of about num_bytes of UTF-8 text."""
  vocab = os.path.join(SHARED, "vocab", "uncased_vocab.txt")
  if os.path.exists(os.path.join(SHARED, "corpora", "reuters_docs.txt")):
    lines, source = _real_lines(), "shared real text"
  else:
    lines, source = _generated_lines(num_bytes), "generated text"
  out, size = [], 0
  for line in lines:
    if size >= num_bytes:
      break
    out.append(line)
    size += len(line.encode("utf-8"))
  return out, source, size, vocab if os.path.exists(vocab) else None


def _tiny_vocab():
  import tempfile  # pylint: disable=g-import-not-at-top
  path = os.path.join(tempfile.mkdtemp(prefix="bench-tok-"), "vocab.txt")
  chars = sorted({c for line in _generated_lines(10000) for c in line.lower() if c != " "})
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("\n".join(tokens) + "\n")
  return path


def _time(function, repeats=1, cpu=None):
  """(result, best wall-clock seconds of `repeats` calls); with a list `cpu`, the
  process CPU seconds of that fastest call are appended to it."""
  best = best_cpu = None
  for _ in range(repeats):
    start, start_cpu = time.perf_counter(), time.process_time()
    result = function()
    elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    if best is None or elapsed < best:
      best, best_cpu = elapsed, elapsed_cpu
  if cpu is not None:
    cpu.append(best_cpu)
  return result, best


def _transformers_batch(lines, vocab_file):
  """(ids per line, seconds, versions) of transformers' BertTokenizerFast batch call, run
  by hugging_face_worker.py in the Hugging Face venv; (None, why, None) when that fails."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tempfile  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory(prefix="bench-tok-hf-") as workdir:
    request = {"vocab_file": vocab_file, "repeats": 2,
               "lines_file": os.path.join(workdir, "lines.json"),
               "ids_file": os.path.join(workdir, "ids.npz")}
    with open(request["lines_file"], "w", encoding="utf-8") as handle:
      json.dump(lines, handle)
    result, why = hugging_face_launcher.run_hf("tokenize", request, workdir, timeout=1800)
    if result is None:
      return None, why, None
    ids = _read_ids(request["ids_file"])
  return ids, result["seconds"], result["versions"]


def _read_ids(path):
  """Ids per line from the .npz a side wrote (`flat` ids, `lengths` per line)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  arrays = np.load(path)
  flat = arrays["flat"].tolist()
  ends = np.cumsum(arrays["lengths"]).tolist()
  return [flat[start:end] for start, end in zip([0] + ends[:-1], ends)]


def _original_timer(vocab_file):
  """time_lines(lines) -> (ids per line, the side's result: seconds, cpu_seconds,
  versions) or (None, why) for the original release's FullTokenizer, run in its own venv
  (a new process each call, one pass timed inside it); None where that venv is missing."""
  if original_launcher.original_python() is None:
    return None

  def time_lines(lines):
    import tempfile  # pylint: disable=g-import-not-at-top
    with tempfile.TemporaryDirectory(prefix="bench-tok-original-") as workdir:
      request = {"vocab_file": vocab_file, "do_lower_case": True,
                 "lines_file": os.path.join(workdir, "lines.json"),
                 "ids_file": os.path.join(workdir, "ids.npz")}
      with open(request["lines_file"], "w", encoding="utf-8") as handle:
        json.dump(lines, handle)
      result, why = original_launcher.run_original("tokenize", request)
      if result is None:
        return None, why
      return _read_ids(request["ids_file"]), result

  return time_lines


def _original_rows(num_tokens, times, cpu, versions, different, failed, graph_s, graph_cpu):
  """The original's rows: its rate, FastTokenizer's ratio to it round by round, and the
  lines where its ids differ from ours; or one row saying why it is missing."""
  name = "the original's FullTokenizer (bert-tensorflow 1.0.4)"
  if failed is not None:
    return [{"name": name, "value": "skipped" if "not installed" in failed else "failed",
             "unit": "", "note": failed}]
  rates = [num_tokens / t for t in times]
  graph_x = [o / g for o, g in zip(times, graph_s)]
  cpu_x = [o / g for o, g in zip(cpu, graph_cpu)]
  return [
      {"name": f"{name} tokens/s", "value": statistics.median(rates), "unit": "tokens/s",
       "note": f"in its own venv, one pass a round, timed inside its process: "
               f"{machine.spread(rates, '{:,.0f}')}; {versions}"},
      {"name": "FastTokenizer (in-graph) / the original's FullTokenizer",
       "value": statistics.median(graph_x), "unit": "x",
       "note": "median of the rounds' ratios, " + machine.spread(graph_x) +
               "; target >= 40x"},
      {"name": "FastTokenizer / the original's FullTokenizer, CPU seconds",
       "value": statistics.median(cpu_x),
       "unit": "x", "note": "CPU time of the same passes, each side's own process: " +
                           machine.spread(cpu_x)},
      {"name": "lines where the original's ids differ from ours", "value": different,
       "unit": "lines", "note": "the most of any round"},
  ]


def _hf_timer(vocab_file):
  """(label, note, time_lines) for Hugging Face's tokenizer, time_lines(lines) -> (ids per
  line, seconds) or (None, why); or (None, row, None) with a row saying it is skipped.

  transformers' BertTokenizerFast (Rust) batch call in the Hugging Face venv where it
  exists (a new process each call, timed inside it: best of 2 after a warm-up); else the
  `tokenizers` package's BertWordPieceTokenizer in this process, if importable.
  """
  if hugging_face_launcher.hf_python() is not None:
    versions = {}

    def time_lines(lines):
      ids, seconds, found = _transformers_batch(lines, vocab_file)
      versions["found"] = found
      return ids, seconds

    label = "HF transformers BertTokenizerFast batch call"
    note = lambda: (f"tokenizer(lines, add_special_tokens=False), best of 2, its own threads; "
                    f"{versions.get('found')}")
    return label, note, time_lines
  try:
    from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None, {"name": "HF tokenizer comparison", "value": "skipped", "unit": "",
                  "note": hugging_face_launcher.HF_HINT}, None
  hf = BertWordPieceTokenizer(vocab_file, lowercase=True, strip_accents=True,
                              clean_text=True, handle_chinese_chars=True)

  def time_lines(lines):
    hf.encode_batch(lines[:100], add_special_tokens=False)
    encodings, seconds = _time(lambda: hf.encode_batch(lines, add_special_tokens=False),
                               repeats=2)
    return [e.ids for e in encodings], seconds

  return ("HF tokenizers BertWordPieceTokenizer.encode_batch",
          lambda: "best of 2, its own threads", time_lines)


def _hf_rows(lines, vocab_file, slow_ids, num_tokens, graph_s, lists_s):
  """Hugging Face's rows against FastTokenizer's seconds: each of hf_s, graph_s, lists_s a
  number or a list with one per round (the ratios are taken round by round)."""
  label, note, time_lines = _hf_timer(vocab_file)
  if label is None:
    return [note]
  graph_s = graph_s if isinstance(graph_s, list) else [graph_s]
  lists_s = lists_s if isinstance(lists_s, list) else [lists_s]
  hf_s, same = [], []
  for _ in graph_s:
    ids, seconds = time_lines(lines)
    if ids is None:
      return [{"name": "HF BertTokenizerFast batch", "value": "failed", "unit": "",
               "note": seconds}]
    hf_s.append(seconds)
    same.append(sum(a == b for a, b in zip(ids, slow_ids)) / len(lines))
  return _hf_result_rows(label, note(), num_tokens, hf_s, min(same), graph_s, lists_s)


def _hf_result_rows(label, note, num_tokens, hf_s, same, graph_s, lists_s):
  graph_x = [h / g for h, g in zip(hf_s, graph_s)]
  lists_x = [h / l for h, l in zip(hf_s, lists_s)]
  return [
      {"name": f"{label} tokens/s",
       "value": statistics.median([num_tokens / h for h in hf_s]),
       "unit": "tokens/s",
       "note": f"{note}; {machine.spread([num_tokens / h for h in hf_s], '{:,.0f}')}; "
               f"identical ids on {same:.2%} of lines; {machine.load_average()}"},
      {"name": "FastTokenizer (in-graph) / HF batch", "value": statistics.median(graph_x),
       "unit": "x", "note": "median of the rounds' ratios, " + machine.spread(graph_x) +
                           "; target >= 10x"},
      {"name": "FastTokenizer (lists) / HF batch", "value": statistics.median(lists_x),
       "unit": "x", "note": "both give Python lists of ids; " + machine.spread(lists_x)},
  ]


def run(quick=False, rounds=3):
  """Rows of the benchmark. Each round times every path once on all lines, one after
  the other (the original's algorithm restated plainly, FullTokenizer, the original's
  FullTokenizer in its venv, FastTokenizer in-graph and as lists, Hugging Face), so that
  each round's ratios compare runs taken under the same load; the rows give the median
  over the rounds and the range."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  num_bytes = 400_000 if quick else 3_500_000
  lines, source, size, vocab_file = load_text(num_bytes)
  vocab_file = vocab_file or _tiny_vocab()
  mb = size / 1e6
  rows = [{"name": "machine", "value": time.strftime("%Y-%m-%d"), "unit": "",
           "note": f"{machine.cpu_model()}; {machine.load_average()} before the rounds"}]

  full = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  full_pass = lambda: [full.convert_tokens_to_ids(full.tokenize(l)) for l in lines]
  # The original's algorithm as it wrote it (no memoised character classes): the yardstick
  # the 40x target is measured against.
  plain = tokenization_reference.Tokenizer(tokenization.load_vocab(vocab_file))
  plain_pass = lambda: [plain.ids(l) for l in lines]
  fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case=True)
  batches = [tf.constant(lines[i:i + FAST_BATCH]) for i in range(0, len(lines), FAST_BATCH)]
  fast.tokenize(batches[0])  # trace once, outside the timing
  graph_pass = lambda: [fast.tokenize(b).flat_values.numpy() for b in batches]
  lists_pass = lambda: fast.tokenize_batch(lines, batch_size=FAST_BATCH)
  label, hf_note, hf_time = _hf_timer(vocab_file)
  original_time = _original_timer(vocab_file)

  times = {"plain": [], "full": [], "graph": [], "lists": [], "hf": [], "original": []}
  cpu = {"plain": [], "graph": [], "original": []}
  hf_same, hf_failed = 1.0, None
  original_failed = None if original_time else original_launcher.ORIGINAL_HINT
  original_versions, original_different = None, 0
  for round_index in range(rounds):
    plain_ids, seconds = _time(plain_pass, cpu=cpu["plain"])
    times["plain"].append(seconds)
    slow_ids, seconds = _time(full_pass)
    times["full"].append(seconds)
    if original_failed is None:
      original_ids, result = original_time(lines)
      if original_ids is None:
        original_failed = result
      else:
        times["original"].append(result["seconds"])
        cpu["original"].append(result["cpu_seconds"])
        original_versions = result["versions"]
        original_different = max(original_different, sum(
            a != b for a, b in zip(original_ids, slow_ids, strict=True)))
    _, seconds = _time(graph_pass, repeats=3, cpu=cpu["graph"])
    times["graph"].append(seconds)
    fast_ids, seconds = _time(lists_pass, repeats=2)
    times["lists"].append(seconds)
    if round_index == 0:
      num_tokens = sum(map(len, slow_ids))
      mismatches = sum(a != b or a != c
                       for a, b, c in zip(slow_ids, fast_ids, plain_ids, strict=True))
      if mismatches:
        raise AssertionError(f"FastTokenizer differs from FullTokenizer on {mismatches} lines")
    if hf_time is not None and hf_failed is None:
      hf_ids, seconds = hf_time(lines)
      if hf_ids is None:
        hf_failed = seconds
      else:
        times["hf"].append(seconds)
        hf_same = min(hf_same, sum(a == b for a, b in zip(hf_ids, slow_ids)) / len(lines))

  rates = {k: [num_tokens / t for t in v] for k, v in times.items()}
  plain_x = [p / g for p, g in zip(times["plain"], times["graph"])]
  plain_cpu_x = [p / g for p, g in zip(cpu["plain"], cpu["graph"])]
  full_x = [f / g for f, g in zip(times["full"], times["graph"])]
  full_lists_x = [f / l for f, l in zip(times["full"], times["lists"])]
  rate = lambda key: machine.spread(rates[key], "{:,.0f}")
  note = (f"{len(lines):,} lines, {mb:.2f} MB {source}, {num_tokens:,} tokens; "
          f"median of {rounds} rounds (min-max)")
  rows += [
      {"name": "the original's algorithm restated plainly, tokens/s",
       "value": statistics.median(rates["plain"]), "unit": "tokens/s",
       "note": f"benchmarks/parts/tokenization_reference.py, one pass a round: {rate('plain')}; "
               + note},
      {"name": "FullTokenizer (pure Python, memoised) tokens/s",
       "value": statistics.median(rates["full"]), "unit": "tokens/s",
       "note": f"this project's Python path, one pass a round: {rate('full')}"},
      {"name": "FastTokenizer tokens/s (in-graph, ids as tensors)",
       "value": statistics.median(rates["graph"]), "unit": "tokens/s",
       "note": f"batches of {FAST_BATCH} lines, best of 3 a round: {rate('graph')}"},
      {"name": "FastTokenizer tokens/s (tokenize_batch, Python lists)",
       "value": statistics.median(rates["lists"]), "unit": "tokens/s",
       "note": f"best of 2 a round: {rate('lists')}"},
      {"name": "FastTokenizer (in-graph) / the plain restatement",
       "value": statistics.median(plain_x), "unit": "x",
       "note": "median of the rounds' ratios, " + machine.spread(plain_x)},
      {"name": "the same in process CPU seconds", "value": statistics.median(plain_cpu_x),
       "unit": "x", "note": "CPU time of the same passes (every thread of this process), "
                           "less sensitive to other load: " + machine.spread(plain_cpu_x)},
      {"name": "FastTokenizer / FullTokenizer (in-graph)", "value": statistics.median(full_x),
       "unit": "x", "note": "against this project's faster Python path; " + machine.spread(full_x)},
      {"name": "FastTokenizer / FullTokenizer (lists)",
       "value": statistics.median(full_lists_x), "unit": "x", "note": machine.spread(full_lists_x)},
      {"name": "lines with different ids, fast vs slow vs plain", "value": mismatches,
       "unit": "lines", "note": "must be 0"},
  ]
  rows += _original_rows(num_tokens, times["original"], cpu["original"], original_versions,
                         original_different, original_failed, times["graph"], cpu["graph"])
  if hf_time is None:
    rows.append(hf_note)
  elif hf_failed is not None:
    rows.append({"name": "HF BertTokenizerFast batch", "value": "failed", "unit": "",
                 "note": hf_failed})
  else:
    rows += _hf_result_rows(label, hf_note(), num_tokens, times["hf"], hf_same,
                            times["graph"], times["lists"])
  rows.append({"name": "load average after the rounds", "value": os.getloadavg()[0],
               "unit": "", "note": machine.load_average()})
  return rows


def main():
  parser = arguments.Parser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="about 0.4 MB instead of 3.5")
  parser.add_argument("--rounds", type=arguments.positive_int, default=3,
                      help="rounds of every path in turn; ratios are medians over them")
  args = parser.parse_args()
  rows = run(quick=args.quick, rounds=args.rounds)
  width = max(len(r["name"]) for r in rows)
  print(f"| {'measure'.ljust(width)} | value | unit | note |")
  print(f"|{'-' * (width + 2)}|---:|---|---|")
  for r in rows:
    value = r["value"]
    if not isinstance(value, (int, float)):
      text = str(value)
    else:
      text = f"{value:,.1f}" if isinstance(value, float) and value < 100 else f"{value:,.0f}"
    print(f"| {r['name'].ljust(width)} | {text} | {r['unit']} | {r['note']} |")


if __name__ == "__main__":
  main()
