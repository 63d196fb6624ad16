"""The docs hold to what they describe: docs/FLAGS.md is what tools/maintainers/gen_flag_docs.py makes
from the flag definitions now, docs/TESTS.md what tools/maintainers/gen_test_suites.py makes from the
tests' markers, and docs/pretraining.md's what-runs-where table names real tests of the
suites it says; every figure of docs/benchmarks.md's table (and each ratio the README
quotes from it) names the command that measures it, the CPU and the date; every ratio and
time in README.md and docs/ names its command and CPU or links to where they are; and
`make bench` runs every benchmark the docs quote."""
import json
import os
import re
import subprocess
import sys

from conftest import ROOT


def test_flag_reference_is_current_and_lists_only_our_flags():
  result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "maintainers", "gen_flag_docs.py")],
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


def _collected(request, key, *tool_args):
  """What conftest.py kept of this run's collection under `key`; in a run of some files
  only, what tools/maintainers/gen_test_suites.py collects of the whole tree (its stdout)."""
  import conftest  # pylint: disable=g-import-not-at-top
  kept = request.config.stash.get(getattr(conftest, key), None)
  if kept is not None:
    return kept
  result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "maintainers", "gen_test_suites.py"),
                           *tool_args], capture_output=True, text=True, timeout=900,
                          cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout) if tool_args else result.stdout


def test_suites_list_is_current(request):
  """docs/TESTS.md is what tools/maintainers/gen_test_suites.py makes from the tests' markers now."""
  with open(os.path.join(ROOT, "docs", "TESTS.md"), encoding="utf-8") as handle:
    written = handle.read()
  assert _collected(request, "SUITES_LIST") == written, "docs/TESTS.md is stale: run `make docs`"
  assert "| tests/project/test_docs.py |" in written


# What docs/pretraining.md's what-runs-where table may say of a test's suite.
_SUITE_WORDS = {"default": "default", "gs://": "gcs_pipeline", "slow": "slow"}


def test_what_runs_where_names_real_tests_in_their_suites(request):
  """Every test docs/pretraining.md's what-runs-where table names is a collected test of
  the suite written beside it; the GPU and TPU rows say what is not run on this hardware."""
  with open(os.path.join(ROOT, "docs", "pretraining.md"), encoding="utf-8") as handle:
    text = handle.read()
  section = text.split("## What runs where, and how it is tested", 1)[1].split("\n## ", 1)[0]
  rows = [l for l in section.splitlines() if l.startswith("| ") and "---" not in l][1:]
  paths = {r.split(" | ")[0][2:] for r in rows}
  assert {"one device, GPU", "Mirrored", "MultiWorkerMirrored", "TPU", "bfloat16 on a CPU",
          "float16, dynamic loss scaling", "XLA"} <= paths, paths
  for row in rows:
    if any(word in row.split(" | ")[0] for word in ("GPU", "TPU", "Mirrored", "speed")):
      assert row.rstrip(" |").split(" | ")[-1] not in ("", "-"), f"{row[:60]}: not-run cell"
  named = re.findall(r"`(tests/[\w/]+\.py::[^`]+)` \((default|gs://|slow)\)", section)
  assert len(named) >= 20, named
  suites = _collected(request, "SUITE_BY_TEST", "--by_test")
  wrong = [(test, suite, suites.get(test)) for test, suite in named
           if suites.get(test) != _SUITE_WORDS[suite]]
  assert not wrong, f"(test, suite written, suite collected): {wrong}"


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
  against ONNX Runtime or our SavedModel comes from bench_peers.py (the same batches on
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
      assert command == "bench_peers", f"{what!r}: a LiteRT ratio from {command}"
  assert litert_rows or AWAITING in figures, "no LiteRT row, measured or awaiting"


# ---- every figure beside its evidence

# A measured ratio (1.46x) or time (6.75 ms, 4 min, 2 minutes) in prose.
_FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?:x|\s(?:ms|µs|s|min|minutes?|h|hours?|"
                     r"seconds?))(?![\w-])")
# What names the command that measured it: a command in backticks (or a line of a code
# block), or words saying there is none (a history entry's scripts kept outside the tree,
# a developer's clock).
_COMMAND = re.compile(r"`[^`\n]*(?:python|make |pytest|bash |\.sh\b|\.py\b)[^`\n]*`|"
                      r"^\s*(?:[A-Z_]+=\S*\s+)*(?:\S*/)?(?:python3?|make|pytest|bash)\s|"
                      r"outside the tree|no command reruns", re.M)
# What names the CPU it ran on (or says the model was not recorded).
_CPU = re.compile(r"AMD\s+EPYC|Intel|Xeon|\bZen ?\d|family\s+\d+\s+model\s+\d+|model\s+not\s+recorded",
                  re.I)
# A link to a part of a page: a figure beside it is labelled when that part names both.
_LINK = re.compile(r"\]\((?:docs/)?([\w]+\.md)(?:#([\w-]+))?\)")
# Durations that are settings or limits, not measurements (a file, then the phrase).
_SETTINGS = {
    "docs/cloud.md": ("every 10 s", "60 s old", "for 60 s", "5 s by default",
                      "heartbeat is 75 s"),  # the last: an example of a log line
    "docs/gcs_emulator.md": ("(30 s at most)", "after 3 s"),
    "docs/pretraining.md": ("after 10 minutes",),
    "docs/pretraining_data.md": ("every 10 s",),
    "docs/new_language.md": ("within 12 minutes", "38 of its 60 minutes"),
}


def _anchor(heading):
  """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
  text = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower())
  return text.replace(" ", "-")


def _sections(text):
  """[(heading, the section's own text with its parents' lead text)] of a page: a
  subsection is read with the text its parent headings say before their first
  subsection (a dated entry's CPU and commands, say)."""
  parts, fenced = [[]], False  # [lead text, heading, body, heading, body, ...]
  for line in text.splitlines(keepends=True):
    fenced ^= line.startswith("```")
    if not fenced and re.match(r"#{1,6} ", line):  # a heading, not a comment in code
      parts += [line.rstrip("\n"), []]
    else:
      parts[-1].append(line)
  parts = ["".join(p) if isinstance(p, list) else p for p in parts]
  sections, parents = [("", parts[0], parts[0])], []
  for heading, body in zip(parts[1::2], parts[2::2]):
    level = len(heading) - len(heading.lstrip("#"))
    parents = [(l, t) for l, t in parents if l < level]
    context = "".join(t for _, t in parents) + heading + body
    sections.append((heading, body, context))
    parents.append((level, heading + body))
  return sections


def _units(body):
  """The paragraphs, list items and table rows of a section's body."""
  units = []
  for block in re.split(r"\n\s*\n", body):
    current = []
    for line in block.splitlines():
      starts = line.startswith("|") or re.match(r"\s*(?:[-*]|\d+\.) ", line)
      if starts and current:
        units.append("\n".join(current))
        current = []
      current.append(line)
      if line.startswith("|"):
        units.append("\n".join(current))
        current = []
    if current:
      units.append("\n".join(current))
  return units


def _labelled(context):
  return bool(_COMMAND.search(context) and _CPU.search(context))


def _labelled_sections(page):
  """{anchor: whether that section of the page names a command and a CPU}."""
  with open(os.path.join(ROOT, page), encoding="utf-8") as handle:
    return {_anchor(h): _labelled(c) for h, _, c in _sections(handle.read())}


def _links_to_evidence(unit, pages):
  for page, anchor in _LINK.findall(unit):
    path = page if page == "README.md" else f"docs/{page}"
    if not os.path.exists(os.path.join(ROOT, path)):
      continue
    sections = pages.setdefault(path, _labelled_sections(path))
    if sections.get(anchor, False) if anchor else page in ("benchmarks.md", "cpu.md"):
      return True
  return False


def _unlabelled_figures(path, pages, text=None):
  """Where a figure of the page (or of `text`, read as that page) lacks its evidence."""
  if text is None:
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
      text = handle.read()
  settings = _SETTINGS.get(path, ())
  found = []
  for heading, body, context in _sections(text):
    for unit in _units(body):
      figures = [m.group(0) for m in _FIGURE.finditer(unit)
                 if not any(m.group(0) in s and s in unit for s in settings)]
      if figures and not (_labelled(context) or _links_to_evidence(unit, pages)):
        found.append(f"{path}, {heading.strip() or 'top'}: {figures[:3]} in "
                     f"{unit.strip()[:90]!r}")
  return found


def test_every_figure_names_its_command_and_cpu_or_links_to_them():
  """Every ratio and time in README.md and docs/ stands in a section that names the
  command that measured it and the CPU (or a parent section's lead text does), or beside
  a link to the benchmarks or CPU table or to a section that names both; a duration that
  is a setting, not a measurement, is listed above."""
  pages = {}
  names = ["README.md"] + sorted(f"docs/{name}" for name in os.listdir(os.path.join(ROOT, "docs"))
                                 if name.endswith(".md") and name != "TESTS.md")
  found = [line for name in names for line in _unlabelled_figures(name, pages)]
  assert not found, "figures without their command and CPU:\n" + "\n".join(found)
  for page, phrases in _SETTINGS.items():  # no setting listed that its page lost
    with open(os.path.join(ROOT, page), encoding="utf-8") as handle:
      text = " ".join(handle.read().split())
    assert [p for p in phrases if p not in text] == [], page


def test_the_figure_check_sees_an_unlabelled_figure():
  """The check above fails on a new figure without its evidence, and passes it once its
  section (or a parent's lead text) names a command and a CPU, or it links to the
  benchmarks table."""
  for text, bad in (("## Speed\n\nIt runs 3.2x faster, in 4 s.\n", True),
                    ("## Speed\n\nIt runs 3.2x faster (`python -m benchmarks.bench_x`, "
                     "AMD EPYC family 25 model 1).\n", False),
                    ("## Speed\n\nIt runs 3.2x faster ([figures](benchmarks.md)).\n", False),
                    ("# A\n\nAMD EPYC:\n```\npython x.py\n```\n\n## B\n\nIn 4 s.\n", False),
                    ("# A\n\nAMD EPYC.\n\n## B\n\n`python x.py`\n\n## C\n\nIn 4 s.\n", True),
                    ("## Timeout\n\nIt waits 30 s, `python x.py`.\n", True)):
    assert bool(_unlabelled_figures("docs/probe.md", {}, text)) == bad, text


def test_make_bench_runs_every_benchmark_the_docs_quote():
  """`make bench` (benchmarks/run_all.py) runs every benchmark a doc quotes: each entry
  point, and each part quoted on its own (matmul_floor) through an entry point it runs.
  The studies (benchmarks/studies) are one-off measurements, not benchmarks."""
  from benchmarks import run_all  # pylint: disable=g-import-not-at-top
  with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
    assert "\n\t$(PY) -m benchmarks.run_all\n" in handle.read()
  text = ""
  for name in ["README.md"] + [f"docs/{n}" for n in os.listdir(os.path.join(ROOT, "docs"))
                               if n.endswith(".md")]:
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
      text += handle.read()
  quoted = set(re.findall(r"python -m benchmarks\.((?:parts\.|studies\.)?\w+)", text)) - {
      "NAME", "bench_NAME"}  # the pattern itself, as docs/benchmarks.md spells it
  assert {"bench_peers", "bench_accelerator", "parts.matmul_floor"} <= quoted, quoted
  run = {f"bench_{name}" for name in run_all.BENCHMARKS}
  assert {q for q in quoted if "." not in q} - {"run_all"} <= run
  for part in (q.split(".")[1] for q in quoted if q.startswith("parts.")):
    runners = []
    for bench in sorted(run):
      with open(_module_file(bench), encoding="utf-8") as handle:
        if f"from benchmarks.parts import {part}\n" in handle.read():
          runners.append(bench)
    assert runners, f"benchmarks/parts/{part}.py is quoted but no benchmark of make bench runs it"
  assert all(os.path.exists(_module_file(q)) for q in quoted), quoted
