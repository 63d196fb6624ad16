"""Runs every benchmark of the project and prints one table of figures and ratios.

Every ratio is measured within this one invocation (same machine, same load), never
against a figure remembered from elsewhere. Each benchmark module exposes
`run(quick=False) -> list of {name, value, unit, note}`.

  python -m benchmarks.run_all            # everything (make bench)
  python -m benchmarks.run_all --quick    # smaller inputs
  python -m benchmarks.run_all --only tokenization,classifier

Side environments: the Hugging Face rows need .venv-hf (`make bench-hf-setup`), the
original release's .venv-original (`make bench-original-setup`), bench_peers's ONNX
Runtime sides .venv-hf and, for its tf2onnx setups, .venv-tf2onnx (`make
bench-tf2onnx-setup`); without one, its rows say "skipped" and how to build it. The
benchmarks of real data (tokenization, pretraining_data, classifier, predict, squad,
peers) need ../shared/data.
"""

import importlib
import json
import os
import sys
import time
import traceback

from benchmarks.parts import arguments

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Every benchmark a doc quotes (tests/project/test_docs.py checks the list against the
# benchmarks docs/benchmarks.md's table names).
BENCHMARKS = ["tokenization", "pretraining_data", "pretraining", "classifier", "predict",
              "peers", "squad", "serving", "memory", "startup", "accelerator", "vocab"]


def _format(value):
  if isinstance(value, float):
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
  return str(value)


def main():
  parser = arguments.Parser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="smaller inputs")
  parser.add_argument("--only", default=[], type=arguments.names_in(BENCHMARKS, "--only"),
                      help="comma-separated benchmark names, of " + ", ".join(BENCHMARKS))
  parser.add_argument("--json", default="", help="also write the rows to this JSON file")
  args = parser.parse_args()
  names = args.only or BENCHMARKS
  rows, failed = [], []
  for name in names:
    module_name = f"bench_{name}"
    if not os.path.exists(os.path.join(HERE, module_name + ".py")):
      print(f"[{name}] not available in this checkout", file=sys.stderr)
      continue
    print(f"[{name}] running ...", file=sys.stderr, flush=True)
    start = time.time()
    try:
      module = importlib.import_module(f"benchmarks.{module_name}")
      for row in module.run(quick=args.quick):
        rows.append({"benchmark": name, **row})
    except Exception:  # a broken benchmark must not hide the others' figures
      traceback.print_exc()
      failed.append(name)
    print(f"[{name}] done in {time.time() - start:.0f} s", file=sys.stderr, flush=True)
  width = max([len(r["name"]) for r in rows] + [10])
  print(f"\n| benchmark | {'measure'.ljust(width)} | value | unit | note |")
  print(f"|---|{'-' * (width + 2)}|---:|---|---|")
  for r in rows:
    print(f"| {r['benchmark']} | {r['name'].ljust(width)} | {_format(r['value'])} | "
          f"{r.get('unit', '')} | {r.get('note', '')} |")
  if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
      json.dump(rows, f, indent=2)
  if failed:
    print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  sys.exit(main())
