"""The benchmarks' Hugging Face comparisons skip or report, never fail, without that side.

torch and transformers are not this project's dependencies: the comparisons run them in
another interpreter ($BERT_HF_PYTHON, else .venv-hf from `make bench-hf-setup`). Where
it is missing, or is a Python without them, each benchmark gives a row that says so and
the benchmark goes on. Nothing here times anything or builds a model.
"""
import os
import sys

import pytest

from conftest import ROOT, shared_path

from benchmarks import bench_classifier
from benchmarks import bench_predict
from benchmarks import bench_pretraining
from benchmarks import bench_tokenization
from benchmarks.parts import hugging_face_launcher
from benchmarks.parts import hugging_face_worker
from benchmarks.parts import sst2


def test_missing_interpreter_gives_skip_rows_with_the_setup_hint(monkeypatch):
  monkeypatch.setenv("BERT_HF_PYTHON", os.path.join(ROOT, "no-such-python"))
  rows = bench_classifier._hf_rows(None, None, None, [], quick=True)  # pylint: disable=protected-access
  assert [r["value"] for r in rows] == ["skipped"]
  rows += bench_pretraining._hf_rows("small", 16, 2, 10.0)[0]  # pylint: disable=protected-access
  try:
    import tokenizers  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    rows += bench_tokenization._hf_rows(["a b"], None, [[1, 2]], 2, 1.0, 1.0)  # pylint: disable=protected-access
  assert all(r["value"] == "skipped" and "make bench-hf-setup" in r["note"] for r in rows)


def test_interpreter_without_torch_gives_a_failed_row(monkeypatch, tmp_path):
  # This project's own Python has neither torch nor transformers.
  try:
    import torch  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    pytest.skip("torch is importable here")
  except ImportError:
    pass
  monkeypatch.setenv("BERT_HF_PYTHON", sys.executable)
  rows, rate = bench_pretraining._hf_rows("small", 16, 2, 10.0)  # pylint: disable=protected-access
  assert len(rows) == 1 and "failed" in rows[0]["note"] and rate is None
  assert "torch" in rows[0]["note"]
  result, why = hugging_face_launcher.run_hf("predict", {"threads": 1}, str(tmp_path))
  assert result is None and "failed" in why


def test_predict_sides_read_the_same_sentences_and_write_the_same_format(tmp_path):
  # bench_predict compares three whole processes' results files: the HF and ORT sides
  # must read the test.tsv it writes as run_classifier's SST-2 reader does, and write
  # probabilities as classifier_examples.write_probabilities does.
  from bert.classifier import classifier_examples  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  shared_path("glue", "SST-2", "train.tsv")
  data_dir = tmp_path / "data"
  data_dir.mkdir()
  texts = sst2.write_test_file(str(data_dir / "test.tsv"), 40)
  ours = [e.text_a for e in classifier_data.Sst2Processor().get_test_examples(str(data_dir))]
  assert hugging_face_worker._read_test_texts(str(data_dir / "test.tsv")) == ours == texts  # pylint: disable=protected-access
  assert len(set(texts)) > 30
  probabilities = hugging_face_worker._softmax(np.array([[0.25, -1.5], [3.0, 2.0]], np.float32))  # pylint: disable=protected-access
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
  hugging_face_worker._write_probabilities(str(tmp_path / "theirs.tsv"), probabilities)  # pylint: disable=protected-access
  classifier_examples.write_probabilities(str(tmp_path / "ours.tsv"), probabilities)
  assert (tmp_path / "theirs.tsv").read_bytes() == (tmp_path / "ours.tsv").read_bytes()
  np.testing.assert_array_equal(
      bench_predict.read_probabilities(str(tmp_path / "ours.tsv")), probabilities)
