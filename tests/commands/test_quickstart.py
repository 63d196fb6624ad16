"""quickstart.py (`make demo`): the corpus it builds, its output filter, a short whole run."""
import os
import subprocess
import sys

import pytest

from bert.cli import demo_pipeline
from bert.utils import errors
from conftest import ROOT


def test_corpus_from_the_standard_library(tmp_path):
  path = tmp_path / "corpus.txt"
  documents = demo_pipeline.write_corpus(str(path))
  text = path.read_text(encoding="utf-8")
  blocks = [b for b in text.split("\n\n") if b.strip()]
  assert documents == len(blocks) >= 50 and len(text) > 200_000
  # One sentence a line, at least two a document (the pairs need them).
  assert all(len(b.strip().split("\n")) >= 2 for b in blocks)
  assert all(len(line.split()) >= 3 for b in blocks for line in b.strip().split("\n"))


def test_run_filtered_drops_only_tensorflows_runtime_lines(capfd):
  noise = ("I0000 00:00:1795362882.983267   12251 port.cc:153] oneDNN custom operations "
           "are on.\\nWARNING: All log messages before absl::InitializeLog() is called "
           "are written to STDERR\\nI0000 00:00:1795362882.983847   12251 "
           "cudart_stub.cc:31] Could not find cuda drivers on your machine\\n"
           "E0000 00:00:1795382930.458092    5192 cuda_platform.cc:52] failed call to "
           "cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\\n")
  code = (f"import sys; sys.stderr.write('{noise}'); "
          "sys.stderr.write('I1122 15:54:54.123 140 training.py:423] step 50/500 loss 6.9\\n'); "
          "sys.stderr.write('E0000 00:00:17.5 12 other.cc:1] a real error\\n'); sys.exit(3)")
  assert demo_pipeline.run_filtered([sys.executable, "-c", code]) == 3
  err = capfd.readouterr().err
  assert err.splitlines() == ["I1122 15:54:54.123 140 training.py:423] step 50/500 loss 6.9",
                              "E0000 00:00:17.5 12 other.cc:1] a real error"]


@pytest.mark.slow
def test_the_whole_pipeline_runs_and_answers_queries(tmp_path):
  out = tmp_path / "qs"
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, "quickstart.py"), f"--output_dir={out}",
       "--pretrain_steps=60", "--finetune_epochs=1", "--vocab_size=2000"],
      capture_output=True, text=True, timeout=900,
      env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert result.returncode == 0, result.stderr[-3000:]
  for query in demo_pipeline.QUERIES:
    assert query in result.stdout
  assert "I0000 00:00:" not in result.stderr
  for name in ("vocab.txt", "pretrain/pretrained/bert_model.ckpt.index",
               "pretrain/eval_results.txt", "classifier/eval_results.txt",
               "export/saved_model.pb"):
    assert (out / name).exists(), name


def test_a_failing_step_is_one_user_error_naming_it():
  log = []
  with pytest.raises(errors.UserError, match=r"step 'Missing' failed \(exit 2\)"):
    demo_pipeline.run_step("Missing", "squad_evaluate.py", [], log)  # no files given
  assert [title for title, _ in log] == ["Missing"]


def test_a_step_runs_the_root_script_in_a_clone_and_the_module_when_installed(tmp_path,
                                                                              monkeypatch):
  assert demo_pipeline.step_command("run_classifier.py") == [
      sys.executable, os.path.join(ROOT, "run_classifier.py")]
  monkeypatch.setattr(demo_pipeline, "CLONE_ROOT", str(tmp_path))  # no scripts there
  assert demo_pipeline.step_command("run_classifier.py") == [
      sys.executable, "-m", "bert.cli.run_classifier"]
