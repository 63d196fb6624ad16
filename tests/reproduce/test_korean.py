"""reproduce/korean.sh: the Korean road from raw text to an exported classifier.

The default tests check the script's syntax, its two modes' settings and its one-line
error without data; the slow test runs the whole QUICK road on the shared Korean data.
"""
import csv
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, shared_path

SCRIPT = os.path.join(ROOT, "reproduce", "korean.sh")


def _settings(quick):
  env = dict(os.environ, KOREAN_SETTINGS_ONLY="1", QUICK="1" if quick else "0")
  result = subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
  assert result.returncode == 0, result.stderr
  return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


def test_script_parses_and_both_modes_are_the_same_road():
  assert subprocess.run(["bash", "-n", SCRIPT], check=False).returncode == 0
  quick, full = _settings(True), _settings(False)
  assert quick["MODE"] == "QUICK" and full["MODE"] == "full"
  assert set(quick) == set(full)
  for key in ("PRETRAIN_STEPS", "LAYERS", "VOCAB_SIZE", "VOCAB_WORDS", "FT_EPOCHS"):
    assert 0 < int(quick[key]) < int(full[key]), key
  for mode in (quick, full):
    assert int(mode["HIDDEN"]) % int(mode["HEADS"]) == 0
    assert int(mode["MAX_PRED"]) < int(mode["SEQ"]) <= 512
  # The QUICK corpus is a subset (0 = the whole corpus).
  assert int(quick["CORPUS_DOCS"]) > 0 and full["CORPUS_DOCS"] == "0"
  # Each mode says how long a user waits (its first line of output).
  assert quick["EXPECTED"].startswith("about 7 minutes on an idle")
  assert full["EXPECTED"].startswith("about 46 minutes on an idle")


def test_missing_data_is_one_line_exit_2(tmp_path):
  env = dict(os.environ, KOREAN_DATA=str(tmp_path / "none"), QUICK="1")
  result = subprocess.run(["bash", SCRIPT, str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      f"korean.sh: error: {tmp_path / 'none'}/corpus/nsmc_reviews.txt does not exist (set "
      "KOREAN_DATA to the folder of ../shared/data/korean)"]
  assert not (tmp_path / "out").exists()


def _rows(path):
  with open(path, encoding="utf-8", newline="") as handle:
    return list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.mark.slow
def test_quick_road_end_to_end(tmp_path):
  data = shared_path("korean")
  out = tmp_path / "korean"
  env = dict(os.environ, QUICK="1", KOREAN_DATA=data)
  result = subprocess.run(["bash", SCRIPT, str(out)], env=env, capture_output=True,
                          text=True, timeout=3600, check=False)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  # The first line says the mode and how long it takes.
  assert result.stdout.splitlines()[0] == (
      f"korean.sh: QUICK mode, expected to take {_settings(True)['EXPECTED']}; outputs in "
      f"{out}")
  # Each step printed the command it ran.
  for script in ("create_vocab.py", "create_pretraining_data.py", "run_pretraining.py",
                 "run_classifier.py"):
    assert re.search(rf"^\$ .*{script}", result.stdout, re.M), script
  # The corpus check is quiet on the clean, cased Korean corpus.
  log = (out / "logs" / "create_pretraining_data.log").read_text(encoding="utf-8")
  assert re.search(r"\]   no warnings$", log, re.M) and "] WARNING: " not in log
  # The Korean XNLI file, split every 5th row to dev: disjoint, together the whole file.
  source = _rows(os.path.join(data, "kornli", "xnli.dev.ko.tsv"))
  train, dev = _rows(out / "data" / "xnli" / "train.tsv"), _rows(out / "data" / "xnli" / "dev.tsv")
  assert train[0] == dev[0] == source[0]
  assert dev[1:] == source[1::5] and len(train) - 1 + len(dev) - 1 == len(source) - 1
  # Scores for the three tasks, from both starting points.
  for task in ("nsmc", "korsts", "xnli"):
    for init in ("pretrained", "random"):
      assert (out / task / init / "eval_results.txt").exists(), (task, init)
  results = (out / "results.md").read_text(encoding="utf-8")
  assert results.startswith("# Korean end to end (QUICK mode)")
  assert re.search(r"^\| NSMC \(sentiment\) \| accuracy \| 0\.\d{4} \| 0\.\d{4} \|", results, re.M)
  assert re.search(r"^\| KorSTS \(similarity\) \| Pearson / Spearman \| -?0\.\d{4} / -?0\.\d{4} \|",
                   results, re.M)
  assert re.search(r"masked_lm_accuracy 0\.\d+, loss \d", results)  # NSP off (the recipe)
  # The exported model answered raw Korean text in a fresh process.
  assert (out / "nsmc" / "export" / "saved_model.pb").exists()
  answers = json.loads((out / "nsmc" / "export_answers.json").read_text(encoding="utf-8"))
  assert len(answers) == 4 and {a["label"] for a in answers} <= {"0", "1"}
  assert all(0.5 <= a["probability"] <= 1.0 for a in answers)
