"""benchmarks/bench_vocab.py on a small corpus (no timing asserted: its rows' shape, the
learners' checks it makes, and its refusals)."""
import os
import subprocess
import sys

import pytest

from benchmarks import bench_vocab
from conftest import ROOT


def test_a_small_corpus_gives_every_learners_rows(tmp_path):
  corpus = tmp_path / "corpus.txt"
  words = ["the", "cat", "sat", "on", "mat", "cats", "sitting", "matter", "catalog", "onset"]
  with open(corpus, "w", encoding="utf-8") as handle:
    for i in range(600):
      handle.write(" ".join(words[(i * k) % len(words)] for k in range(1, 9)) + " .\n")
  rows = bench_vocab.bench_corpus("reuters", str(corpus), rounds=2, own_rounds=1,
                                  log=lambda _: None)
  names = [row["name"] for row in rows]
  assert names[:4] == ["reuters: counting, one process", "reuters: counting, a worker per CPU",
                       "reuters: tensorflow_text_own learn seconds",
                       "reuters: tensorflow_text learn seconds"]
  assert "reuters: tensorflow_text vs tensorflow-text's own" in names
  ours = rows[3]
  assert ours["note"].endswith("; token for token tensorflow-text's own")
  assert "over 2 rounds" in ours["note"] and "(one round)" in rows[2]["note"]
  assert "held-out [UNK] rate 0.000000" in ours["note"]
  tokenizers = [row for row in rows if row["name"].startswith("reuters: tokenizers")]
  assert tokenizers and (tokenizers[0]["value"] == "skipped") == (
      tokenizers[0]["name"] == "reuters: tokenizers")


def test_without_shared_data_it_is_a_row_that_says_so(monkeypatch, tmp_path):
  monkeypatch.setattr(bench_vocab, "REUTERS", str(tmp_path / "none.txt"))
  rows = bench_vocab.run(quick=True)
  assert [row["value"] for row in rows] == ["skipped"]


def test_a_bad_flag_is_one_line():
  result = subprocess.run([sys.executable, "-m", "benchmarks.bench_vocab", "--own_rounds=-1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 2 and result.stdout == ""
  assert result.stderr.splitlines()[-1] == (
      "bench_vocab.py: error: --korean_lines and --own_rounds must be 0 or more")
