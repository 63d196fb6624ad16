"""reproduce/: the aggregator's selection rules, the table scripts' argument checks and
(slow) every table script's --smoke mode, run for real on a few rows of the shared data."""
import math
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, shared_path
from tiny import make_tiny_model

sys.path.insert(0, os.path.join(ROOT, "reproduce"))
import aggregate  # noqa: E402  pylint: disable=wrong-import-position


def write_results(path, **values):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as handle:
    for key, value in values.items():
      handle.write(f"{key} = {value}\n")
  return path


def runs_line(*fields):
  return "\t".join(str(f) for f in fields) + "\n"


def test_aggregate_best_and_mean_rules(tmp_path):
  d = str(tmp_path)
  lines = []
  # select=best: the best dev run over learning rates and seeds; its test score with it.
  for lr, seed, dev, test in [("5e-5", 1, 0.80, 0.70), ("5e-5", 2, 0.86, 0.71),
                              ("2e-5", 1, 0.84, 0.90)]:
    path = write_results(f"{d}/glue/{lr}_{seed}/eval_results.txt", eval_accuracy=dev)
    tpath = write_results(f"{d}/glue/{lr}_{seed}/test_results.txt", test_accuracy=test)
    lines.append(runs_line("table1", "BERT", "MRPC", lr, seed, "best", path, "eval_accuracy",
                           tpath, "test_accuracy"))
  # select=mean: mean over seeds per learning rate, then the best learning rate.
  for lr, seed, dev, test in [("5e-5", 1, 0.90, 0.80), ("5e-5", 2, 0.80, 0.84),
                              ("3e-5", 1, 0.86, 0.90), ("3e-5", 2, 0.88, 0.92)]:
    path = write_results(f"{d}/ner/{lr}_{seed}/eval_results.txt", eval_f1=dev)
    tpath = write_results(f"{d}/ner/{lr}_{seed}/test_results.txt", test_f1=test)
    lines.append(runs_line("table7", "Fine-tuning", "CoNLL-2003 F1", lr, seed, "mean", path,
                           "eval_f1", tpath, "test_f1"))
  # SQuAD's official scores are percentages already; perplexity: lower is better.
  squad = write_results(f"{d}/squad/eval_results.txt", f1=88.25, exact_match=80.5)
  lines.append(runs_line("table2", "BERT", "SQuAD 1.1 F1", "3e-5", 1, "best", squad, "f1",
                         "", ""))
  for name, loss in [("a", 1.5), ("b", 1.2)]:
    path = write_results(f"{d}/lm/{name}/eval_results.txt", masked_lm_loss=loss)
    lines.append(runs_line("table6", "L=3 H=768 A=12", "LM (ppl)", "-", name, "best", path,
                           "exp(masked_lm_loss)", "", ""))
  # A run that has not finished counts in the total but not in the selection.
  lines.append(runs_line("table1", "BERT", "MRPC", "4e-5", 1, "best",
                         f"{d}/missing/eval_results.txt", "eval_accuracy", "", ""))
  (tmp_path / "runs.tsv").write_text("".join(lines), encoding="utf-8")

  table = aggregate.markdown(aggregate.read_runs([d])).splitlines()
  assert table[2] == ("| table1 | BERT | MRPC | 86.00 | 71.00 | 88.9 Base / 89.3 Large "
                      "(test F1) | lr 5e-5, seed 2 | 3/4 |")
  # lr 5e-5: dev mean 85, lr 3e-5: dev mean 87 -> test mean (0.90 + 0.92) / 2.
  assert table[3] == ("| table7 | Fine-tuning | CoNLL-2003 F1 | 87.00 | 91.00 | 96.4 Base / "
                      "96.6 Large (test 92.4 / 92.8) | lr 3e-5, mean of 2 seed(s) | 4/4 |")
  assert table[4].startswith("| table2 | BERT | SQuAD 1.1 F1 | 88.25 | – | 88.5 Base")
  assert table[5].startswith(
      f"| table6 | L=3 H=768 A=12 | LM (ppl) | {math.exp(1.2):.2f} | – | 5.84 |")


def test_aggregate_reports_a_bad_runs_file(tmp_path, capsys):
  (tmp_path / "runs.tsv").write_text("table1\tBERT\n", encoding="utf-8")
  assert aggregate.main(["aggregate.py", str(tmp_path)]) == 2
  assert "runs.tsv:1: expected 10 tab-separated fields, found 2" in capsys.readouterr().err


def run_table(script, *args, env=None, expect=0):
  proc = subprocess.run(["bash", os.path.join(ROOT, "reproduce", script), *args],
                        capture_output=True, text=True, cwd=ROOT, timeout=1800,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env or {})))
  assert proc.returncode == expect, proc.stdout[-2000:] + proc.stderr[-2000:]
  return proc


@pytest.mark.parametrize("script,args,message", [
    ("table7_ner.sh", ["--smoke"], "usage: "),
    ("table4_swag.sh", ["/nonexistent/bert", "/tmp"], "BERT folder '/nonexistent/bert' "
                                                       "does not exist"),
    ("table1_glue.sh", ["{tmp}", "{tmp}"], "has no bert_config.json"),
    ("table5_ablations.sh", ["{bert}", "{bert}/bert_config.json", "{tmp}", "{tmp}/out"],
     "SQUAD_DIR '{tmp}/out' has no train-v1.1.json (without SQuAD, pass '' as SQUAD_DIR"),
])
def test_table_scripts_check_their_arguments(tmp_path, script, args, message):
  bert = tmp_path / "bert"
  os.makedirs(bert)
  (bert / "bert_config.json").write_text("{}", encoding="utf-8")
  (bert / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
  args = [a.format(tmp=tmp_path, bert=bert) for a in args]
  message = message.format(tmp=tmp_path)
  proc = run_table(script, *args, "--smoke", str(tmp_path / "out"), expect=2)
  assert message in proc.stderr


def test_has_flag_asks_the_script_itself():
  """has_flag must see flags defined in flags_common (--ltr is defined there: the
  old grep of the script's source found no DEFINE_ line and Table 5 lost its LTR row)."""
  common = os.path.join(ROOT, "reproduce", "common.sh")
  program = (f'source "{common}"; for f in "$@"; do '
             'if has_flag "${f%%:*}" "${f#*:}"; then echo "$f yes"; else echo "$f no"; fi; done')
  asked = ["run_classifier.py:ltr", "run_squad.py:ltr", "run_pretraining.py:no_nsp",
           "run_classifier.py:do_train", "run_classifier.py:output_dir",
           "run_classifier.py:lt", "run_squad.py:no_such_flag", "run_ner.py:ltr"]
  proc = subprocess.run(["bash", "-c", program, "has_flag", *asked], capture_output=True,
                        text=True, cwd=ROOT, timeout=120)
  assert proc.returncode == 0, proc.stderr
  got = dict(line.rsplit(" ", 1) for line in proc.stdout.splitlines())
  assert got == {"run_classifier.py:ltr": "yes", "run_squad.py:ltr": "yes",
                 "run_pretraining.py:no_nsp": "yes", "run_classifier.py:do_train": "yes",
                 "run_classifier.py:output_dir": "yes", "run_classifier.py:lt": "no",
                 "run_squad.py:no_such_flag": "no",
                 "run_ner.py:ltr": "yes" if _helpfull_lists("run_ner.py", "ltr") else "no"}


def _helpfull_lists(script, flag):
  proc = subprocess.run([sys.executable, os.path.join(ROOT, script), "--helpfull"],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
  return any(line.strip().startswith((f"--{flag}:", f"--[no]{flag}:"))
             for line in (proc.stdout + proc.stderr).splitlines())


# --------------------------------------------------------------------------- smoke runs


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
  return make_tiny_model(str(tmp_path_factory.mktemp("tiny_bert")))


def smoke(script, tiny_bert, tmp_path, *data, env=None):
  out = str(tmp_path / "out")
  proc = run_table(script, "--smoke", tiny_bert, *data, out, env=env)
  # The table's rows ("| table4 | ..."), not its header ("| table | model / variant |").
  rows = [line for line in proc.stdout.splitlines() if re.match(r"\| table\d", line)]
  return out, rows


@pytest.mark.slow
def test_table4_swag_smoke(tiny_bert, tmp_path):
  out, rows = smoke("table4_swag.sh", tiny_bert, tmp_path,
                    os.path.dirname(shared_path("glue_format_samples", "SWAG", "val.csv")))
  assert len(rows) == 1 and rows[0].startswith("| table4 | BERT | SWAG dev |")
  assert rows[0].endswith("| 1/1 |")
  assert os.path.isfile(os.path.join(out, "swag", "lr2e-5_seed1", "test_predictions.csv"))


@pytest.mark.slow
def test_table7_ner_smoke(tiny_bert, tmp_path):
  out, rows = smoke("table7_ner.sh", tiny_bert, tmp_path, shared_path("conll2003"))
  assert [r.split(" | ")[1] for r in rows] == ["Fine-tuning", "Feature: last",
                                               "Feature: sum_all"]
  assert all(r.endswith("| 1/1 |") for r in rows)
  assert sorted(os.listdir(os.path.join(out, "feature_cache"))) == ["last", "sum_all"]


@pytest.mark.slow
def test_table1_glue_smoke(tiny_bert, tmp_path):
  _, rows = smoke("table1_glue.sh", tiny_bert, tmp_path, shared_path("glue"),
                  env={"TASKS": "MRPC RTE"})
  assert [r.split(" | ")[2] for r in rows] == ["MRPC", "RTE"]
  assert all(r.endswith("| 1/1 |") for r in rows)


@pytest.mark.slow
def test_table2_squad11_smoke(tiny_bert, tmp_path):
  _, rows = smoke("table2_squad11.sh", tiny_bert, tmp_path, shared_path("squad"))
  assert [r.split(" | ")[2] for r in rows] == ["SQuAD 1.1 F1", "SQuAD 1.1 EM"]
  assert all(r.endswith("| 1/1 |") for r in rows)


@pytest.mark.slow
def test_table3_squad20_smoke(tiny_bert, tmp_path):
  _, rows = smoke("table3_squad20.sh", tiny_bert, tmp_path, shared_path("squad"))
  assert [r.split(" | ")[2] for r in rows] == ["SQuAD 2.0 F1", "SQuAD 2.0 EM"]
  assert all(r.endswith("| 1/1 |") for r in rows)


@pytest.mark.slow
def test_table5_ablations_smoke(tiny_bert, tmp_path):
  out, rows = smoke("table5_ablations.sh", tiny_bert, tmp_path,
                    shared_path("corpora", "sample_text.txt"), shared_path("glue"), "")
  # Every row the paper has (its "+ BiLSTM" row aside, as the header says) is in the table:
  # a row skipped for a flag the script is thought not to have would go missing here.
  rows = [r for r in rows if r.startswith("| table5 |")]  # not the table's header
  assert [tuple(r.split(" | ")[1:3]) for r in rows] == [
      ("BERT", "MRPC"), ("No NSP", "MRPC"), ("LTR & No NSP", "MRPC")]
  assert all(r.endswith("| 1/1 |") for r in rows)
  for name in ("BERT", "No_NSP", "LTR___No_NSP"):
    assert os.path.isfile(os.path.join(out, "pretrain", name, "pretrained",
                                       "bert_model.ckpt.index"))


@pytest.mark.slow
def test_table6_model_sizes_smoke(tiny_bert, tmp_path):
  _, rows = smoke("table6_model_sizes.sh", tiny_bert, tmp_path,
                  shared_path("corpora", "sample_text.txt"), shared_path("glue"))
  assert [tuple(r.split(" | ")[1:3]) for r in rows] == [
      ("L=1 H=32 A=4", "LM (ppl)"), ("L=1 H=32 A=4", "MRPC"),
      ("L=2 H=32 A=4", "LM (ppl)"), ("L=2 H=32 A=4", "MRPC")]
  assert all(r.endswith("| 1/1 |") for r in rows)


@pytest.mark.slow
def test_table8_masking_smoke(tiny_bert, tmp_path):
  _, rows = smoke("table8_masking.sh", tiny_bert, tmp_path,
                  shared_path("corpora", "sample_text.txt"), shared_path("glue"),
                  shared_path("conll2003"))
  assert [r.split(" | ")[2] for r in rows] == ["MNLI-m", "NER fine-tune", "NER feature-based"]
  assert all(r.endswith("| 1/1 |") for r in rows)
