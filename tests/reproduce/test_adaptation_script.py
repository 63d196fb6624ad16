"""reproduce/adaptation.sh (docs/pretraining.md's adaptation figures): its refusals, in one
line with exit status 2 and nothing made, before any measurement starts."""
import os
import subprocess

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "reproduce", "adaptation.sh")


def _run(tmp_path, *args, **env):
  return subprocess.run(["bash", SCRIPT, *args], env=dict(os.environ, **env), cwd=str(tmp_path),
                        capture_output=True, text=True, timeout=60, check=False)


def test_an_unknown_part_is_one_line_exit_2(tmp_path):
  result = _run(tmp_path, "vocabulary", str(tmp_path / "out"))
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      "adaptation.sh: error: the first argument is positions, words, ner or all"]
  assert not (tmp_path / "out").exists()


def test_missing_shared_data_is_one_line_exit_2(tmp_path):
  result = _run(tmp_path, "words", str(tmp_path / "out"), SHARED=str(tmp_path / "none"))
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      f"adaptation.sh: error: {tmp_path / 'none'} does not hold the shared data (set SHARED)"]
  assert not (tmp_path / "out").exists()
