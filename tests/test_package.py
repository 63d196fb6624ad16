"""The installable package: pyproject.toml against the code, and a wheel built from this
tree, installed into a new virtual environment and used from a folder outside the clone.

The new environment reuses this one's installed dependencies (a .pth file points at its
site-packages), so nothing is downloaded: the wheel is installed with --no-deps --no-index.
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib

import pytest

from bert import cli
from conftest import ROOT
import tiny


def _pyproject():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
    return tomllib.load(handle)


def _requirements(name):
  with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
    return [line.strip() for line in handle
            if line.strip() and not line.lstrip().startswith(("#", "-r"))]


def test_every_command_is_a_console_script_and_nothing_else():
  scripts = _pyproject()["project"]["scripts"]
  assert scripts == {cli.console_name(c): f"bert.cli.{c}:run" for c in cli.COMMANDS}
  for command in cli.COMMANDS:  # the root script a clone's user types, for each
    assert os.path.isfile(os.path.join(ROOT, f"{command}.py")), command


def test_the_test_extra_is_what_make_test_installs():
  assert _pyproject()["project"]["optional-dependencies"]["test"] == \
      _requirements("requirements-test.txt")


def test_the_version_has_one_home():
  import bert  # pylint: disable=g-import-not-at-top
  assert _pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {
      "attr": "bert.__version__"}
  assert re.fullmatch(r"\d+\.\d+\.\d+", bert.__version__)
  assert _pyproject()["project"]["name"] == bert.DISTRIBUTION


def test_the_root_holds_commands_the_three_names_and_project_files():
  python_files = sorted(n for n in os.listdir(ROOT) if n.endswith(".py"))
  assert python_files == sorted([f"{c}.py" for c in cli.COMMANDS] +
                                ["modeling.py", "tokenization.py", "optimization.py"])


def test_the_original_names_import_from_a_clone_as_the_package_modules():
  code = ("import modeling, tokenization, optimization; "
          "from bert import modeling as m, tokenization as t, optimization as o; "
          "print(modeling is m, tokenization is t, optimization is o, "
          "modeling.BertConfig.__module__)")
  result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
  assert result.stdout.split() == ["True", "True", "True", "bert.modeling"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
  """(python of a new environment with the wheel installed, a folder outside the clone)."""
  work = tmp_path_factory.mktemp("package")
  source = work / "source"  # a copy, so that building writes nothing into the clone
  shutil.copytree(os.path.join(ROOT, "bert"), source / "bert",
                  ignore=shutil.ignore_patterns("__pycache__"))
  for name in ("pyproject.toml", "README.md", "requirements.txt"):
    shutil.copy(os.path.join(ROOT, name), source / name)
  wheels = work / "wheels"
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--no-index", "-q", "-w", str(wheels), str(source)],
                 check=True, capture_output=True, text=True)
  (wheel,) = os.listdir(wheels)
  env = work / "env"
  subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
  python = str(env / "bin" / "python")
  site = subprocess.run(
      [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
      check=True, capture_output=True, text=True).stdout.strip()
  with open(os.path.join(site, "reuse_dependencies.pth"), "w", encoding="utf-8") as handle:
    handle.write(sysconfig.get_paths()["purelib"] + "\n")
  subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                  str(wheels / wheel)], check=True, capture_output=True, text=True)
  outside = work / "elsewhere"
  outside.mkdir()
  return python, str(outside), wheel


def test_the_wheel_holds_the_package_and_its_data(installed):
  python, outside, wheel = installed
  assert wheel.startswith("bert_tensorflow2-")
  code = ("import os, bert, bert.cli; "
          "print(os.path.dirname(bert.__file__)); "
          "print(sorted(os.listdir(os.path.join(os.path.dirname(bert.cli.__file__), "
          "'quickstart_data'))))")
  result = subprocess.run([python, "-c", code], cwd=outside, capture_output=True, text=True,
                          check=True)
  location, data = result.stdout.splitlines()
  assert not location.startswith(ROOT) and "site-packages" in location
  assert data == "['dev.tsv', 'train.tsv']"


def test_from_outside_the_clone_the_original_imports_work_without_tensorflow(installed):
  python, outside, _ = installed
  code = ("import sys; from bert import tokenization; import bert; "
          "t = tokenization.BasicTokenizer(); print(t.tokenize('Héllo, World!')); "
          "print('tensorflow' in sys.modules); "
          "from bert import modeling, optimization; "
          "print(modeling.__file__.startswith(sys.prefix))")
  result = subprocess.run([python, "-c", code], cwd=outside, capture_output=True, text=True,
                          check=True, env=dict(os.environ, PYTHONPATH=""))
  assert result.stdout.splitlines() == ["['hello', ',', 'world', '!']", "False", "True"]


def test_python_m_bert_names_this_distribution(installed):
  python, outside, _ = installed
  result = subprocess.run([python, "-m", "bert"], cwd=outside, capture_output=True,
                          text=True, check=True)
  lines = result.stdout.splitlines()
  import bert  # pylint: disable=g-import-not-at-top
  assert lines[0].startswith(f"bert-tensorflow2 {bert.__version__}: ")
  assert [line.strip() for line in lines[3:]] == [cli.console_name(c) for c in cli.COMMANDS]


def test_a_console_command_answers_helpfull_and_its_flag_errors(installed):
  python, outside, _ = installed
  command = os.path.join(os.path.dirname(python), "bert-run-classifier")
  helpfull = subprocess.run([command, "--helpfull"], cwd=outside, capture_output=True,
                            text=True, timeout=300)
  assert helpfull.returncode == 1  # absl's help exits with 1, as the root script's does
  for flag in ("--task_name", "--bert_config_file", "--export_dir", "--[no]do_lower_case"):
    assert flag in helpfull.stdout, flag
  short = subprocess.run([command, "--help"], cwd=outside, capture_output=True, text=True,
                         timeout=300)
  # --help: the command's own docstring and flags, as the root script shows them.
  assert short.stdout.startswith("BERT fine-tuning runner for sentence (pair) classification")
  assert "--task_name" in short.stdout and "--xnli_language" in short.stdout
  wrong = subprocess.run([command, "--task_name=nope", "--output_dir=o", "--vocab_file=v",
                          "--data_dir=d", "--bert_config_file=c", "--do_eval"], cwd=outside,
                         capture_output=True, text=True, timeout=300)
  assert wrong.returncode == 2
  assert wrong.stderr.strip().splitlines()[-1].startswith("bert-run-classifier: error: ")


def test_an_installed_command_predicts_as_the_clones_script(installed, tmp_path):
  """extract_features from the wheel and from the clone's root script, on one tiny
  checkpoint: byte-identical JSON."""
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoint_formats  # pylint: disable=g-import-not-at-top
  python, outside, _ = installed
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "was", "jim", "henson",
           "?", "a", "puppet", "##eer"]
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
  config = tiny.write_tiny_config(tmp_path / "bert_config.json", len(vocab))
  encoder = modeling.BertModel(modeling.BertConfig.from_json_file(config))
  checkpoint_formats.save_google_checkpoint(encoder, str(tmp_path / "bert_model.ckpt"))
  (tmp_path / "input.txt").write_text("Who was Jim Henson ? ||| Jim Henson was a puppeteer\n",
                                      encoding="utf-8")
  args = [f"--input_file={tmp_path}/input.txt", f"--vocab_file={tmp_path}/vocab.txt",
          f"--bert_config_file={config}", f"--init_checkpoint={tmp_path}/bert_model.ckpt",
          "--layers=-1,-2", "--max_seq_length=32", "--batch_size=2"]
  command = os.path.join(os.path.dirname(python), "bert-extract-features")
  subprocess.run([command, f"--output_file={tmp_path}/installed.jsonl", *args],
                 cwd=outside, check=True, capture_output=True, timeout=300)
  subprocess.run([sys.executable, os.path.join(ROOT, "extract_features.py"),
                  f"--output_file={tmp_path}/clone.jsonl", *args], cwd=ROOT, check=True,
                 capture_output=True, timeout=300)
  installed_bytes = (tmp_path / "installed.jsonl").read_bytes()
  assert installed_bytes == (tmp_path / "clone.jsonl").read_bytes()
  assert installed_bytes.count(b'"token": "puppet"') == 1
