"""The bad-input catalogue, the tools a doc tells users to run (tools/linear_probe.py,
tools/tagging_baselines.py, tools/conll_entity_types.py, tools/pretraining_curve.py,
tools/litert_accuracy.py): the scripts' rules, through the same harness (their batch-size
flags: test_across_commands.py).

The catalogue's machinery and rules: tests/support/catalogue.py.
"""
import os

import pytest

import catalogue
from catalogue import conll_folder, litert_folder, mrpc_folder

CATALOGUE = catalogue.Catalogue(default_scripts={"tools/linear_probe.py"})
case = CATALOGUE.case


# ---- tools/linear_probe.py: the scripts' rules (run_classifier's column flags)

_PROBE = "tools/linear_probe.py"


def _probe_args(ws, data_dir, *extra):
  return [*ws.model_flags(), f"--data_dir={data_dir}", "--max_seq_length=16", *extra]


def _probe_data(ws, name, train, dev=None, header="text\tlabel"):
  for split, rows in (("train", train), ("dev", dev if dev is not None else train)):
    ws.write(f"{name}/{split}.tsv",
             "".join(f"{row}\n" for row in ([header] if header else []) + rows))
  return ws.path(name)


_PROBE_ROWS = ["good film\tpos", "bad film\tneg", "a good plot\tpos", "the bad actor\tneg"]


@case(_PROBE, default=True)
def one_class(ws):
  """Every row one label: the probe printed 1.0000 for all four features."""
  d = _probe_data(ws, "lp-one", [f"film {i}\tpos" for i in range(19)])
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=text",
                               "--label_column=label"),
              line=f"{d}/train.tsv: every row has the label 'pos'; a probe needs two classes "
                   "or more (with one, every feature scores 1.0 whatever the encoder knows)")


@case(_PROBE, default=True)
def header_read_as_data(ws):
  """Without --has_header the header row was trained on ("label" a class of its own)."""
  d = _probe_data(ws, "lp-header", _PROBE_ROWS)
  return dict(argv=_probe_args(ws, d),
              line=f"{d}/train.tsv:1: the first row looks like a header (its label 'label' "
                   "is a column name and occurs in no other row); pass --has_header if it is "
                   "one, or --has_header=false if the first row really is data")


@case(_PROBE)
def header_given_false_is_data(ws):
  d = _probe_data(ws, "lp-nohead", _PROBE_ROWS, header=None)
  return dict(argv=_probe_args(ws, d, "--has_header=false"), works=True,
              stdout_first="linear probe, dev accuracy (4 rows; trained on 4), encoder random "
                           "weights (seed 1):")


@case(_PROBE, default=True)
def home_in_the_data_dir(ws):
  """--data_dir=~/d: "~/d/train.tsv: no such file" (no shell expands it after `=`)."""
  _probe_data(ws, "lp-home/d", _PROBE_ROWS)
  return dict(argv=_probe_args(ws, "~/d", "--has_header", "--text_a_column=text",
                               "--label_column=label"),
              env={"HOME": ws.path("lp-home")}, works=True,
              stdout_first="linear probe, dev accuracy (4 rows; trained on 4), encoder random "
                           "weights (seed 1):")


@case(_PROBE)
def every_dev_score_the_same(ws):
  """A regression dev set of equal scores: nan four times, exit 0."""
  d = _probe_data(ws, "lp-flat", ["good film\t1.0", "bad film\t3.5", "a plot\t2.0"],
                  dev=["good plot\t2.5", "bad plot\t2.5"], header="text\tscore")
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=text",
                               "--label_column=score", "--regression"),
              line=f"{d}/dev.tsv: Pearson is undefined: every dev score is the same (2.5 on "
                   "all 2 rows); the probe needs scores that differ")


@case(_PROBE)
def every_training_score_the_same(ws):
  d = _probe_data(ws, "lp-flat-train", ["good film\t1.0", "bad film\t1.0"],
                  dev=["good plot\t2.5", "bad plot\t1.5"], header="text\tscore")
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=text",
                               "--label_column=score", "--regression"),
              line=f"{d}/train.tsv: Pearson is undefined: every training score is the same "
                   "(1 on all 2 rows); the probe needs scores that differ")


@case(_PROBE)
def missing_column(ws):
  d = _probe_data(ws, "lp-column", _PROBE_ROWS)
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=review",
                               "--label_column=label"),
              line=f"{d}/train.tsv:1: no column named 'review' in the header (text, label)")


# ---- tools/tagging_baselines.py, tools/conll_entity_types.py, tools/pretraining_curve.py


@case("tools/tagging_baselines.py")
def iob_on_a_column_of_other_tags(ws):
  d = conll_folder(ws, "tb-pos", train="good", valid="good")
  return dict(argv=[f"--data_dir={d}", "--tag_column=2", "--iob"],
              line=f"{d}/train.txt:3: column 2 holds tags that are not IOB chunk tags (B-X, "
                   "I-X or O): 'NNP', 'VBZ', 'JJ', 'NN', '.'; pick the chunk column with "
                   "--tag_column (CoNLL-2003: 3 chunks, 4 entities), or drop --iob to score "
                   "the tags as written")


@case("tools/tagging_baselines.py")
def tag_column_of_the_words(ws):
  d = conll_folder(ws, "tb-words", train="good", valid="good")
  return dict(argv=[f"--data_dir={d}", "--tag_column=1"],
              line="--tag_column=1: the tags are column 2 or later (column 1 holds the words)")


@case("tools/tagging_baselines.py")
def home_in_the_data_dir(ws):
  conll_folder(ws, "tb-home/d", train="good", valid="good")
  return dict(argv=["--data_dir=~/d", "--tag_column=4", "--iob"],
              env={"HOME": ws.path("tb-home")}, works=True,
              stdout_first="majority accuracy 0.4286  precision 0.0000  recall 0.0000  "
                           "f1 0.0000")


@case("tools/conll_entity_types.py")
def no_entity_tag(ws):
  plain = "EU NNP B-NP O\nrejects VBZ B-VP O\n\n"
  d = conll_folder(ws, "cet-none", train=plain, valid=plain)
  ws.write("cet-none/test.txt", plain)
  out = ws.path("cet-none-out")
  return dict(argv=[d, out], absent=[out],
              line=f"{d}/train.txt: no entity tag (every tag is O); a multi-label set needs "
                   "entity types to learn")


@case("tools/conll_entity_types.py")
def one_argument(ws):
  return dict(argv=[ws.path("cet-one")],
              line="expected two arguments, CONLL_DIR OUTPUT_DIR (got 1); usage: python "
                   "tools/conll_entity_types.py ../shared/data/conll2003 /tmp/conll_types")


@case("tools/conll_entity_types.py")
def home_in_both_folders(ws):
  d = conll_folder(ws, "cet-home/d", train="good", valid="good")
  ws.write("cet-home/d/test.txt", "Peter NNP B-NP B-PER\n\n")
  return dict(argv=["~/d", "~/out"], env={"HOME": ws.path("cet-home")}, works=True,
              contains={ws.path("cet-home/out/labels.txt"): "MISC\nORG\nPER\n"})


@case("tools/pretraining_curve.py")
def run_without_curves(ws):
  run = ws.mkdir("pc-none/run")
  out = ws.path("pc-none/curve.svg")
  return dict(argv=[f"--output={out}", f"mine={run}"], absent=[out],
              line=f"{run}: no train/ folder of TensorBoard events (is it a "
                   "run_pretraining.py --output_dir?)")


@case("tools/pretraining_curve.py")
def zero_seconds_a_step(ws):
  run = ws.mkdir("pc-zero/run")
  out = ws.path("pc-zero/curve.svg")
  return dict(argv=[f"--output={out}", f"mine={run}:0"], absent=[out],
              line=f"'mine={run}:0': '0' seconds a step: must be a positive number")


@case("tools/pretraining_curve.py")
def home_in_the_paths(ws):
  home = ws.mkdir("pc-home")
  return dict(argv=["--output=~/curve.svg", "mine=~/run"], env={"HOME": home}, works=True,
              setup=[{"scalars": os.path.join(home, "run", "train"),
                      "tag": "masked_lm_accuracy", "values": [0.1, 0.2, 0.3]}],
              exists=[os.path.join(home, "curve.svg")])


# ---- tools/litert_accuracy.py (docs/serving.md's accuracy table)

_LITERT_ACCURACY = "tools/litert_accuracy.py"


@case(_LITERT_ACCURACY)
def missing_litert_dir(ws):
  folder = ws.path("la-nowhere")
  data = mrpc_folder(ws, "la-data1", dev="good")
  return dict(argv=[f"--litert_dir={folder}", f"--data_dir={data}",
                    "--task_name=mrpc"], line=f"--litert_dir={folder}: no such folder")


@case(_LITERT_ACCURACY)
def litert_model_of_another_task(ws):
  model = litert_folder(ws, "la-mrpc")
  return dict(argv=[f"--litert_dir={os.path.dirname(model)}",
                    f"--data_dir={mrpc_folder(ws, 'la-data2', dev='good')}", "--task_name=sst2"],
              line=f"{model} is Mrpc's classifier (labels 0, 1), not --task_name=sst2's Sst2 "
                   "(labels 0, 1); use that task's model")


# --------------------------------------------------------------------------- running


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
  return catalogue.Workspace(tmp_path_factory.mktemp("catalogue"))


@pytest.mark.parametrize("case_id", CATALOGUE.ids(default=True))
def test_bad_input_default(ws, case_id):
  CATALOGUE.check(ws, case_id)


@pytest.mark.slow
@pytest.mark.parametrize("case_id", CATALOGUE.ids(default=False))
def test_bad_input_catalogue(ws, case_id):
  CATALOGUE.check(ws, case_id)


# Tools the docs tell users to run that read no user input: gen_flag_docs.py writes
# docs/FLAGS.md from the scripts' own flag definitions, gen_test_suites.py docs/TESTS.md
# from the tests' markers, gen_module_list.py docs/MODULES.md from the modules'
# docstrings, gen_commands.py the root scripts and console scripts from bert.cli.COMMANDS.
TOOLS_WITHOUT_INPUT = {"tools/maintainers/gen_flag_docs.py", "tools/maintainers/gen_test_suites.py",
                       "tools/maintainers/gen_module_list.py", "tools/maintainers/gen_commands.py"}


def test_every_tool_a_doc_names_has_its_cases_here():
  """Every tools/<name>.py that README.md, docs/ or reproduce/ names for users to run has
  cases here, but those that read no user input; and no other tool."""
  tools = catalogue.tools_users_run()
  assert {"tools/linear_probe.py", "tools/maintainers/gen_flag_docs.py"} <= tools  # the docs were read
  assert {script for script, _, _ in CATALOGUE.cases.values()} == tools - TOOLS_WITHOUT_INPUT
