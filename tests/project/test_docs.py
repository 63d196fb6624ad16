"""docs/FLAGS.md is what tools/gen_flag_docs.py makes from the flag definitions now, and
every figure of docs/benchmarks.md's table (and each ratio the README quotes from it) names
the command that measures it, the CPU and the date."""
import os
import re
import subprocess
import sys

from conftest import ROOT


def test_flag_reference_is_current_and_lists_only_our_flags():
  result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_flag_docs.py")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert result.returncode == 0, result.stderr[-2000:]
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    assert result.stdout == handle.read(), "docs/FLAGS.md is stale: run `make docs`"
  # TensorFlow's and absl's own flags are not documented as ours.
  for foreign in ("--hbm_oom_exit", "--tt_check_filter", "--test_srcdir", "--logtostderr"):
    assert f"`{foreign}`" not in result.stdout
  for ours in ("--num_train_steps", "--runtime_log", "--init_checkpoint", "--task_name"):
    assert f"`{ours}`" in result.stdout


# A benchmark's command in a doc: `python -m benchmarks.NAME ...` (or benchmarks.parts.NAME,
# benchmarks.studies.NAME); group 1 is the module below benchmarks.
BENCH_COMMAND = r"`[^`]*python -m benchmarks\.((?:\w+\.)?\w+)[^`]*`"


def _module_file(module):
  return os.path.join(ROOT, "benchmarks", *module.split(".")) + ".py"


def test_suites_list_is_current(request):
  """docs/TESTS.md is what tools/gen_test_suites.py makes from the tests' markers now.
  A run of the whole suite compares it with what this run collected (conftest.py); a run
  of some files only collects every test again through the tool."""
  import conftest  # pylint: disable=g-import-not-at-top
  with open(os.path.join(ROOT, "docs", "TESTS.md"), encoding="utf-8") as handle:
    written = handle.read()
  current = request.config.stash.get(conftest.SUITES_LIST, None)
  if current is None:
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_test_suites.py")],
                            capture_output=True, text=True, timeout=900, cwd=ROOT,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    current = result.stdout
  assert current == written, "docs/TESTS.md is stale: run `make docs`"
  assert "| tests/project/test_docs.py |" in written


def _todays_figures():
  """The rows of docs/benchmarks.md's "Today's figures" table as lists of five cells
  (what, figure, CPU, command, date); escaped pipes (\\|) stay inside their cell."""
  with open(os.path.join(ROOT, "docs", "benchmarks.md"), encoding="utf-8") as handle:
    text = handle.read()
  section = text.split("## Today's figures", 1)[1].split("\n## ", 1)[0]
  lines = [l for l in section.splitlines() if l.startswith("|")]
  assert lines[0].replace(" ", "") == "|what|figure|CPU|command|date|", lines[0]
  rows = [[c.strip() for c in re.split(r"(?<!\\)\|", l)[1:-1]] for l in lines[2:]]
  assert all(len(r) == 5 for r in rows), [r for r in rows if len(r) != 5]
  return rows


def test_every_figure_in_the_benchmarks_table_names_its_command_cpu_and_date():
  rows = _todays_figures()
  assert len(rows) >= 10
  command = cpu_above = None
  for what, figure, cpu, cell, date in rows:
    if cell != "the same":  # "the same": the row above's command, run once for both
      found = re.findall(BENCH_COMMAND, cell)
      assert found, f"{what!r}: no `python -m benchmarks....` command in {cell!r}"
      command = found[0]
    assert command and os.path.exists(_module_file(command)), what
    if cpu != "the same":
      cpu_above = cpu
    if re.search(r"\d", figure):  # a measured figure, not a row awaiting its first run
      assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), f"{what!r}: date {date!r}"
      assert cpu_above not in (None, "", "-"), f"{what!r}: no CPU"


def test_every_ratio_in_the_readme_is_a_figure_of_the_benchmarks_table():
  figures = " ".join(r[1] for r in _todays_figures())
  with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
    readme = handle.read()
  _assert_ratios_in_table(readme, figures, "README")


AWAITING = "awaiting a quiet run"


def _assert_ratios_in_table(text, figures, where):
  """Every ratio (1.25x) of `text` is a figure of the table; a page that quotes none must
  say it awaits a run, and the table must hold a row that awaits it."""
  ratios = re.findall(r"\b\d+(?:\.\d+)?x\b", text)
  if not ratios:
    assert AWAITING in text and AWAITING in figures, (
        f"{where} names no ratio and does not say it is {AWAITING!r}")
  missing = [r for r in ratios if not re.search(rf"\b{re.escape(r)}\b", figures)]
  assert not missing, f"{where} ratios not in docs/benchmarks.md's table: {missing}"


def _section(text, start, end):
  return text.split(start, 1)[1].split(end, 1)[0]


def test_litert_ratios_are_equal_batching_figures_of_the_table():
  """The serving page's LiteRT ratios are the table's, and every table row that sets LiteRT
  against ONNX Runtime or our SavedModel comes from bench_equal.py (the same batches on
  every side, ORT's best setup), never from bench_predict.py's whole user commands, which
  batch LiteRT sorted and the others in file order."""
  rows = _todays_figures()
  figures = " ".join(r[1] for r in rows)
  with open(os.path.join(ROOT, "docs", "serving.md"), encoding="utf-8") as handle:
    serving = handle.read()
  _assert_ratios_in_table(_section(serving, "## Which path to pick", "\n## "), figures,
                          "docs/serving.md's 'Which path to pick'")
  command = None
  litert_rows = 0
  for what, figure, _, cell, _ in rows:
    if cell != "the same":
      command = re.findall(BENCH_COMMAND, cell)[0]
    if "LiteRT" in what and re.search(r"\d+(?:\.\d+)?x", figure):
      litert_rows += 1
      assert command == "bench_equal", f"{what!r}: a LiteRT ratio from {command}"
  assert litert_rows or AWAITING in figures, "no LiteRT row, measured or awaiting"
