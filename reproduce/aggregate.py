"""Prints our reproduction numbers beside the paper's, as a Markdown table.

  python reproduce/aggregate.py out/reproduce/table1_glue [out/reproduce/table7_ner ...]

Reads the runs.tsv that each reproduce/table*.sh writes (one line per fine-tuning run:
table, row, column, learning rate, seed, selection rule, dev results file and key, test
results file and key) and the results files it names. Per (table, row, column):
  * select=best: the run with the best dev score over learning rates and seeds (the
    paper's Table 1 rule: best learning rate on dev, random restarts for BERT-Large);
  * select=mean: for each learning rate the mean over seeds, then the best learning rate
    (where the paper reports averages over random restarts, e.g. Table 7).
The test score shown is that of the same selection. Scores are percentages; eval_*/test_*
values (fractions in our eval_results.txt files) are multiplied by 100, SQuAD's official
scores already are percentages, and the key `exp(masked_lm_loss)` reports perplexity.
"""

import collections
import math
import os
import sys

# The paper's numbers (arXiv 1810.04805v2), keyed by (table, row, column). Table 1 is
# GLUE test-server scores; the other tables report dev scores unless noted.
PAPER = {
    ("table1", "BERT", "MNLI"): "84.6 Base / 86.7 Large (test, MNLI-m)",
    ("table1", "BERT", "QQP"): "71.2 Base / 72.1 Large (test F1)",
    ("table1", "BERT", "QNLI"): "90.5 Base / 92.7 Large (test)",
    ("table1", "BERT", "SST-2"): "93.5 Base / 94.9 Large (test)",
    ("table1", "BERT", "CoLA"): "52.1 Base / 60.5 Large (test)",
    ("table1", "BERT", "STS-B"): "85.8 Base / 86.5 Large (test)",
    ("table1", "BERT", "MRPC"): "88.9 Base / 89.3 Large (test F1)",
    ("table1", "BERT", "RTE"): "66.4 Base / 70.1 Large (test)",
    ("table2", "BERT", "SQuAD 1.1 F1"): "88.5 Base / 90.9 Large",
    ("table2", "BERT", "SQuAD 1.1 EM"): "80.8 Base / 84.1 Large",
    ("table3", "BERT", "SQuAD 2.0 F1"): "81.9 Large",
    ("table3", "BERT", "SQuAD 2.0 EM"): "78.7 Large",
    ("table4", "BERT", "SWAG dev"): "81.6 Base / 86.6 Large",
    ("table5", "BERT", "MNLI-m"): "84.4", ("table5", "BERT", "QNLI"): "88.4",
    ("table5", "BERT", "MRPC"): "86.7", ("table5", "BERT", "SST-2"): "92.7",
    ("table5", "BERT", "SQuAD 1.1 F1"): "88.5",
    ("table5", "No NSP", "MNLI-m"): "83.9", ("table5", "No NSP", "QNLI"): "84.9",
    ("table5", "No NSP", "MRPC"): "86.5", ("table5", "No NSP", "SST-2"): "92.6",
    ("table5", "No NSP", "SQuAD 1.1 F1"): "87.9",
    ("table5", "LTR & No NSP", "MNLI-m"): "82.1", ("table5", "LTR & No NSP", "QNLI"): "84.3",
    ("table5", "LTR & No NSP", "MRPC"): "77.5", ("table5", "LTR & No NSP", "SST-2"): "92.1",
    ("table5", "LTR & No NSP", "SQuAD 1.1 F1"): "77.8",
    ("table7", "Fine-tuning", "CoNLL-2003 F1"): "96.4 Base / 96.6 Large (test 92.4 / 92.8)",
    ("table7", "Feature: embeddings", "CoNLL-2003 F1"): "91.0",
    ("table7", "Feature: second_to_last", "CoNLL-2003 F1"): "95.6",
    ("table7", "Feature: last", "CoNLL-2003 F1"): "94.9",
    ("table7", "Feature: sum_last_four", "CoNLL-2003 F1"): "95.9 (weighted sum)",
    ("table7", "Feature: concat_last_four", "CoNLL-2003 F1"): "96.1",
    ("table7", "Feature: sum_all", "CoNLL-2003 F1"): "95.5 (weighted sum, all 12)",
}
_TABLE6 = {"L=3 H=768 A=12": ("5.84", "77.9", "79.8", "88.4"),
           "L=6 H=768 A=3": ("5.24", "80.6", "82.2", "90.7"),
           "L=6 H=768 A=12": ("4.68", "81.9", "84.8", "91.3"),
           "L=12 H=768 A=12": ("3.99", "84.4", "86.7", "92.9"),
           "L=12 H=1024 A=16": ("3.54", "85.7", "86.9", "93.3"),
           "L=24 H=1024 A=16": ("3.23", "86.6", "87.8", "93.7")}
for _row, _values in _TABLE6.items():
  for _column, _value in zip(("LM (ppl)", "MNLI-m", "MRPC", "SST-2"), _values):
    PAPER[("table6", _row, _column)] = _value
_TABLE8 = {"MASK 80 SAME 10 RND 10": ("84.2", "95.4", "94.9"),
           "MASK 100 SAME 0 RND 0": ("84.3", "94.9", "94.0"),
           "MASK 80 SAME 0 RND 20": ("84.1", "95.2", "94.6"),
           "MASK 80 SAME 20 RND 0": ("84.4", "95.2", "94.7"),
           "MASK 0 SAME 20 RND 80": ("83.7", "94.8", "94.6"),
           "MASK 0 SAME 0 RND 100": ("83.6", "94.9", "94.6")}
for _row, _values in _TABLE8.items():
  for _column, _value in zip(("MNLI-m", "NER fine-tune", "NER feature-based"), _values):
    PAPER[("table8", _row, _column)] = _value

Run = collections.namedtuple(
    "Run", "table row column lr seed select dev_file dev_key test_file test_key")


def read_key_values(path):
  """eval_results.txt -> {key: float}; missing file -> None."""
  if not os.path.isfile(path):
    return None
  values = {}
  with open(path, encoding="utf-8") as handle:
    for line in handle:
      key, sep, value = line.strip().partition(" = ")
      if sep:
        try:
          values[key] = float(value)
        except ValueError:
          pass
  return values


def score(path, key):
  """A results file's value as a percentage (or a perplexity); None when absent."""
  if not path or not key:
    return None
  values = read_key_values(path)
  if values is None:
    return None
  if key.startswith("exp(") and key.endswith(")"):
    inner = values.get(key[4:-1])
    return None if inner is None else math.exp(inner)
  value = values.get(key)
  if value is None:
    return None
  return 100.0 * value if key.startswith(("eval_", "test_")) else value


def read_runs(folders):
  runs = []
  for folder in folders:
    path = os.path.join(folder, "runs.tsv") if os.path.isdir(folder) else folder
    if not os.path.isfile(path):
      raise FileNotFoundError(f"{path}: no runs.tsv (run a reproduce/table*.sh first)")
    with open(path, encoding="utf-8") as handle:
      for number, line in enumerate(handle, start=1):
        fields = line.rstrip("\n").split("\t")
        if not line.strip():
          continue
        if len(fields) != len(Run._fields):
          raise ValueError(f"{path}:{number}: expected {len(Run._fields)} tab-separated "
                           f"fields, found {len(fields)}")
        runs.append(Run(*fields))
  return runs


def select(runs):
  """(dev, test, description, finished runs) of one cell under its selection rule."""
  # Perplexity is better when lower; every other score when higher.
  lower_is_better = runs[0].dev_key.startswith("exp(")
  scored = [(run, score(run.dev_file, run.dev_key), score(run.test_file, run.test_key))
            for run in runs]
  scored = [s for s in scored if s[1] is not None]
  if not scored:
    return None, None, "no finished run", 0
  rule = runs[0].select
  if rule == "mean":
    by_lr = collections.defaultdict(list)
    for run, dev, test in scored:
      by_lr[run.lr].append((dev, test))
    candidates = []
    for lr, values in by_lr.items():
      devs = [d for d, _ in values]
      tests = [t for _, t in values if t is not None]
      candidates.append((sum(devs) / len(devs), sum(tests) / len(tests) if tests else None,
                         f"lr {lr}, mean of {len(devs)} seed(s)"))
  else:
    candidates = [(dev, test, f"lr {run.lr}, seed {run.seed}") for run, dev, test in scored]
  best = (min if lower_is_better else max)(candidates, key=lambda c: c[0])
  return best[0], best[1], best[2], len(scored)


def markdown(runs):
  cells = collections.OrderedDict()
  for run in runs:
    cells.setdefault((run.table, run.row, run.column), []).append(run)
  lines = ["| table | model / variant | metric | ours (dev) | ours (test) | paper | "
           "selected | runs |",
           "|---|---|---|---|---|---|---|---|"]
  for (table, row, column), cell_runs in cells.items():
    # The same run may be recorded twice (a rerun of the same sweep): count it once.
    unique = list(collections.OrderedDict(
        ((r.lr, r.seed, r.dev_file, r.dev_key), r) for r in cell_runs).values())
    dev, test, description, finished = select(unique)
    fmt = (lambda v: "–" if v is None else f"{v:.2f}")
    lines.append(f"| {table} | {row} | {column} | {fmt(dev)} | {fmt(test)} | "
                 f"{PAPER.get((table, row, column), '–')} | {description} | "
                 f"{finished}/{len(unique)} |")
  return "\n".join(lines) + "\n"


def main(argv):
  if len(argv) >= 2 and argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    return 0
  odd = "no run folder given" if len(argv) < 2 else next(
      (f"{arg}: no such option" for arg in argv[1:] if arg.startswith("-")), None)
  if odd:
    print(f"aggregate.py: error: {odd}; usage: python reproduce/aggregate.py RUN_DIR "
          "[RUN_DIR ...] (--help says more)", file=sys.stderr)
    return 2
  try:
    runs = read_runs(argv[1:])
  except (OSError, ValueError) as exc:
    print(f"aggregate.py: error: {exc}", file=sys.stderr)
    return 2
  sys.stdout.write(markdown(runs))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
