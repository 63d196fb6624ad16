"""Tokenizer throughput: FullTokenizer (the original's pure Python) vs FastTokenizer (in-graph).

A few MB of real text from ../shared/data (Reuters corpus, SQuAD contexts and questions,
GLUE sentences; a generated corpus when that folder is missing), the uncased vocabulary
lower-cased. Both paths must give identical ids on every line, checked here. Where the
Hugging Face venv exists (`make bench-hf-setup`, or $BERT_HF_PYTHON), transformers'
BertTokenizerFast (Rust) batch call is timed on the same lines in that interpreter
(benchmarks/hf_side.py) and its ids are checked against ours; else the `tokenizers`
package's BertWordPieceTokenizer when importable here; else a row says how to enable it.
Neither is ever a dependency of this project.

  python benchmarks/bench_tokenization.py           # about 3.5 MB; ~2 minutes
  python benchmarks/bench_tokenization.py --quick   # about 0.4 MB

`run(quick=False)` returns the rows for benchmarks/run_all.py.
"""

import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import fast_tokenization  # noqa: E402  pylint: disable=g-import-not-at-top
import tokenization  # noqa: E402  pylint: disable=g-import-not-at-top
import hf_bridge  # noqa: E402  pylint: disable=g-import-not-at-top
import tokenization_reference  # noqa: E402  pylint: disable=g-import-not-at-top

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


def _time(function, repeats=1):
  best = None
  for _ in range(repeats):
    start = time.perf_counter()
    result = function()
    elapsed = time.perf_counter() - start
    best = elapsed if best is None else min(best, elapsed)
  return result, best


def _transformers_batch(lines, vocab_file):
  """(ids per line, seconds, versions) of transformers' BertTokenizerFast batch call, run
  by hf_side.py in the Hugging Face venv; (None, why, None) when that fails."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tempfile  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory(prefix="bench-tok-hf-") as workdir:
    request = {"vocab_file": vocab_file, "repeats": 2,
               "lines_file": os.path.join(workdir, "lines.json"),
               "ids_file": os.path.join(workdir, "ids.npz")}
    with open(request["lines_file"], "w", encoding="utf-8") as handle:
      json.dump(lines, handle)
    result, why = hf_bridge.run_hf("tokenize", request, workdir, timeout=1800)
    if result is None:
      return None, why, None
    arrays = np.load(request["ids_file"])
    flat = arrays["flat"].tolist()
    ends = np.cumsum(arrays["lengths"]).tolist()
    ids = [flat[start:end] for start, end in zip([0] + ends[:-1], ends)]
  return ids, result["seconds"], result["versions"]


def _hf_rows(lines, vocab_file, slow_ids, num_tokens, graph_s, lists_s):
  """transformers' BertTokenizerFast (Rust) in batch mode on the same lines, where the
  Hugging Face venv exists; else the `tokenizers` package in this process, if any."""
  if hf_bridge.hf_python() is not None:
    ids, seconds, versions = _transformers_batch(lines, vocab_file)
    if ids is None:
      return [{"name": "HF BertTokenizerFast batch", "value": "failed", "unit": "",
               "note": seconds}]
    label, note = "HF transformers BertTokenizerFast batch call", (
        f"tokenizer(lines, add_special_tokens=False), best of 2, its own threads; "
        f"{versions}")
  else:
    try:
      from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
    except ImportError:
      return [{"name": "HF tokenizer comparison", "value": "skipped", "unit": "",
               "note": hf_bridge.HF_HINT}]
    hf = BertWordPieceTokenizer(vocab_file, lowercase=True, strip_accents=True,
                                clean_text=True, handle_chinese_chars=True)
    hf.encode_batch(lines[:100], add_special_tokens=False)
    encodings, seconds = _time(lambda: hf.encode_batch(lines, add_special_tokens=False),
                               repeats=2)
    ids = [e.ids for e in encodings]
    label, note = ("HF tokenizers BertWordPieceTokenizer.encode_batch",
                   "best of 2, its own threads")
  same = sum(a == b for a, b in zip(ids, slow_ids)) / len(lines)
  return [
      {"name": f"{label} tokens/s", "value": num_tokens / seconds, "unit": "tokens/s",
       "note": f"{note}; identical ids on {same:.2%} of lines; {hf_bridge.load_average()}"},
      {"name": "FastTokenizer (in-graph) / HF batch", "value": seconds / graph_s,
       "unit": "x", "note": "target >= 5x (issue 8)"},
      {"name": "FastTokenizer (lists) / HF batch", "value": seconds / lists_s,
       "unit": "x", "note": "both give Python lists of ids"},
  ]


def run(quick=False):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  num_bytes = 400_000 if quick else 3_500_000
  lines, source, size, vocab_file = load_text(num_bytes)
  vocab_file = vocab_file or _tiny_vocab()
  mb = size / 1e6
  rows = []

  full = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  slow_ids, slow_s = _time(lambda: [full.convert_tokens_to_ids(full.tokenize(l))
                                    for l in lines])
  num_tokens = sum(map(len, slow_ids))

  # The original's algorithm as it wrote it (no memoised character classes): the yardstick
  # issue 8's 40x is measured against.
  plain = tokenization_reference.Tokenizer(tokenization.load_vocab(vocab_file))
  plain_ids, plain_s = _time(lambda: [plain.ids(l) for l in lines])

  fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case=True)
  batches = [tf.constant(lines[i:i + FAST_BATCH]) for i in range(0, len(lines), FAST_BATCH)]
  fast.tokenize(batches[0])  # trace once, outside the timing
  _, graph_s = _time(lambda: [fast.tokenize(b).flat_values.numpy() for b in batches],
                     repeats=3)
  fast_ids, lists_s = _time(lambda: fast.tokenize_batch(lines, batch_size=FAST_BATCH),
                            repeats=2)
  mismatches = sum(a != b or a != c for a, b, c in zip(slow_ids, fast_ids, plain_ids, strict=True))
  if mismatches:
    raise AssertionError(f"FastTokenizer differs from FullTokenizer on {mismatches} lines")

  note = f"{len(lines):,} lines, {mb:.2f} MB {source}, {num_tokens:,} tokens"
  slow_rate = num_tokens / slow_s
  rows += [
      {"name": "original algorithm, plain Python tokens/s", "value": num_tokens / plain_s,
       "unit": "tokens/s", "note": "benchmarks/tokenization_reference.py; " + note},
      {"name": "FullTokenizer (pure Python, memoised) tokens/s", "value": slow_rate,
       "unit": "tokens/s", "note": "this project's Python path"},
      {"name": "FastTokenizer tokens/s (in-graph, ids as tensors)",
       "value": num_tokens / graph_s, "unit": "tokens/s",
       "note": f"batches of {FAST_BATCH} lines, best of 3"},
      {"name": "FastTokenizer tokens/s (tokenize_batch, Python lists)",
       "value": num_tokens / lists_s, "unit": "tokens/s", "note": "best of 2"},
      {"name": "FastTokenizer (in-graph) / original algorithm", "value": plain_s / graph_s,
       "unit": "x", "note": "target >= 40x (issue 8)"},
      {"name": "FastTokenizer / FullTokenizer (in-graph)", "value": slow_s / graph_s,
       "unit": "x", "note": "against this project's faster Python path"},
      {"name": "FastTokenizer / FullTokenizer (lists)", "value": slow_s / lists_s,
       "unit": "x", "note": ""},
      {"name": "lines with different ids, fast vs slow vs plain", "value": mismatches,
       "unit": "lines", "note": "must be 0"},
  ]

  rows += _hf_rows(lines, vocab_file, slow_ids, num_tokens, graph_s, lists_s)
  return rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="about 0.4 MB instead of 3.5")
  args = parser.parse_args()
  rows = run(quick=args.quick)
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
