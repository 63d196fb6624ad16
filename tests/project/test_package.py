"""The installable package: pyproject.toml against the code and the lock files, and a
wheel built from this tree, installed into new virtual environments and used from a folder
outside the clone.

The training environment reuses this one's installed dependencies (a .pth file points at
its site-packages), so nothing is downloaded: the wheel is installed with --no-deps
--no-index. The serving environment (the plain install, no extra) sees only what the
wheel's core requirements reach (tests/support/serving_install.py).
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
import serving_install
from serving_install import Requirement, canonicalize_name
import tiny

try:
  from packaging.version import Version
except ImportError:
  from pip._vendor.packaging.version import Version  # pylint: disable=ungrouped-imports

# No exact pin on these in the wheel: a user's environment decides them within the ranges.
NEVER_PINNED = ("tensorflow", "tensorflow-text", "keras", "numpy")
# The training extra brings them; the plain (serving) install none of them.
TRAINING_ONLY = ("tensorflow", "tensorflow-text", "keras")


def _pyproject():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
    return tomllib.load(handle)


def _requirements(name):
  with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
    return [line.strip() for line in handle
            if line.strip() and not line.lstrip().startswith(("#", "-r"))]


def _pins(name):
  """{canonical name: Version} of a requirements file of exact pins."""
  pins = {}
  for line in _requirements(name):
    requirement = Requirement(line)
    (spec,) = requirement.specifier
    assert spec.operator == "==", line
    pins[canonicalize_name(requirement.name)] = Version(spec.version)
  return pins


def _ranges():
  """{canonical name: SpecifierSet} of the runtime dependencies: the core and the
  training extra."""
  project = _pyproject()["project"]
  ranges = {}
  for line in project["dependencies"] + project["optional-dependencies"]["tensorflow"]:
    requirement = Requirement(line)
    ranges[canonicalize_name(requirement.name)] = requirement.specifier
  return ranges


def test_every_pin_of_the_lock_lies_inside_its_range():
  pins, ranges = _pins("requirements.txt"), _ranges()
  assert sorted(pins) == sorted(ranges)  # the lock pins each dependency, and only those
  for name, version in pins.items():
    assert ranges[name].contains(version, prereleases=True), (name, version, ranges[name])


def test_the_floor_is_each_ranges_lowest_version():
  floor, ranges = _pins("requirements-floor.txt"), _ranges()
  assert sorted(floor) == sorted(ranges)
  for name, specifier in ranges.items():
    (lowest,) = [Version(s.version) for s in specifier if s.operator == ">="]
    assert floor[name] == lowest, (name, floor[name], lowest)
    assert specifier.contains(floor[name])


def test_tensorflow_text_follows_tensorflows_range():
  ranges = _ranges()
  assert str(ranges["tensorflow-text"]) == str(ranges["tensorflow"])


def test_the_core_is_the_serving_install_and_the_extra_the_training_one():
  project = _pyproject()["project"]
  core = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
  assert core == {"numpy", "absl-py", "ai-edge-litert"}
  extras = project["optional-dependencies"]
  training = {canonicalize_name(Requirement(r).name) for r in extras["tensorflow"]}
  assert set(TRAINING_ONLY) <= training
  # `[litert]`, the serving command of older docs, still installs (and adds nothing).
  assert {canonicalize_name(Requirement(r).name) for r in extras["litert"]} <= core


def test_every_command_is_a_console_script_and_nothing_else():
  scripts = _pyproject()["project"]["scripts"]
  assert scripts == {cli.console_name(c): f"bert.cli.{c}:run" for c in cli.COMMANDS}
  for command in cli.COMMANDS:  # the root script a clone's user types, for each
    assert os.path.isfile(os.path.join(ROOT, f"{command}.py")), command


def test_root_scripts_and_console_scripts_are_made_from_the_commands_list():
  """Each root script and pyproject.toml's [project.scripts] are what
  tools/maintainers/gen_commands.py makes of bert.cli.COMMANDS now (`make commands`)."""
  result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "maintainers",
                                                        "gen_commands.py"), "--check"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
  assert result.returncode == 0, result.stderr
  name = "run_swag"  # its import line is built, so that this file imports no command
  with open(os.path.join(ROOT, f"{name}.py"), encoding="utf-8") as handle:
    assert handle.read() == (
        '"""BERT fine-tuning on SWAG (multiple choice), as in the paper\'s Section 4.4 / Table 4.\n\n'
        f"The command is bert/cli/{name}.py (`--help` shows its flags; installed, it is also\n"
        f'`bert-run-swag`).\n"""\n\nfrom bert.cli {"import"} {name}\n\n'
        f'if __name__ == "__main__":\n  {name}.run()\n')


def test_the_table_writer_keeps_the_rest_of_pyproject():
  """The [project.scripts] table is replaced whole, whatever it held, and nothing around it."""
  sys.path.insert(0, os.path.join(ROOT, "tools", "maintainers"))
  try:
    import gen_commands  # pylint: disable=g-import-not-at-top
  finally:
    sys.path.pop(0)
  text = ('[project]\nname = "x"\n\n# the scripts\n[project.scripts]\nbert-old = "bert.cli.old:run"\n'
          '\n\n# next\n[tool.x]\ny = 1\n')
  made = gen_commands.pyproject(text)
  assert made.startswith('[project]\nname = "x"\n\n# the scripts\n[project.scripts]\n'
                         'bert-create-vocab = "bert.cli.create_vocab:run"\n')
  assert made.endswith('bert-quickstart = "bert.cli.quickstart:run"\n\n# next\n[tool.x]\ny = 1\n')
  assert "bert-old" not in made


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
  assert result.stdout.split() == ["True", "True", "True", "bert.modeling_config"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
  return serving_install.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel):
  """(python of a new environment with the wheel installed, a folder outside the clone)."""
  work = tmp_path_factory.mktemp("package")
  python = serving_install.new_env(work / "env", sysconfig.get_paths()["purelib"])
  subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                  str(wheel)], check=True, capture_output=True, text=True,
                 env=serving_install.PIP_ENV)
  outside = work / "elsewhere"
  outside.mkdir()
  return python, str(outside), wheel.name


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
  assert helpfull.returncode == 0  # help asked for is no failure (absl's own exits 1)
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
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  python, outside, _ = installed
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "was", "jim", "henson",
           "?", "a", "puppet", "##eer"]
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
  config = tiny.write_tiny_config(tmp_path / "bert_config.json", len(vocab))
  encoder = modeling.BertModel(modeling.BertConfig.from_json_file(config))
  checkpoint_files.save_google_checkpoint(encoder, str(tmp_path / "bert_model.ckpt"))
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


def test_the_wheels_metadata_pins_no_framework_and_names_its_license(wheel):
  message, names = serving_install.wheel_metadata(wheel)
  for line in message.get_all("Requires-Dist"):
    requirement = Requirement(line)
    if canonicalize_name(requirement.name) in NEVER_PINNED:
      assert not any(s.operator in ("==", "===") for s in requirement.specifier), line
  core = {canonicalize_name(Requirement(r).name)
          for r in serving_install.core_requirements(message)}
  assert core == {"numpy", "absl-py", "ai-edge-litert"}
  assert message["License-Expression"] == "Apache-2.0"
  assert message.get_all("License-File") == ["LICENSE"]
  (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
  import zipfile  # pylint: disable=g-import-not-at-top
  with zipfile.ZipFile(wheel) as archive:
    text = archive.read(license_file).decode("utf-8")
  with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as handle:
    assert text == handle.read()
  assert text.startswith("Copyright 2026 The bert-tensorflow2 authors")
  for words in ("Apache License", "Version 2.0, January 2004",
                "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
                "END OF TERMS AND CONDITIONS"):
    assert words in text, words


@pytest.fixture(scope="module")
def serving(tmp_path_factory, wheel):
  """(python of the serving install, its dependencies, a folder outside the clone)."""
  work = tmp_path_factory.mktemp("serving")
  python, dependencies = serving_install.make_serving_env(work, wheel)
  outside = work / "elsewhere"
  outside.mkdir()
  return python, dependencies, str(outside)


def test_the_serving_install_holds_no_tensorflow_and_stays_small(serving):
  python, dependencies, outside = serving
  assert not set(TRAINING_ONLY) & set(dependencies), sorted(dependencies)
  code = ("import importlib.util as u; "
          "print([m for m in ('tensorflow', 'tensorflow_text', 'keras') if u.find_spec(m)]); "
          "import ai_edge_litert.interpreter, numpy, absl, bert.tokenization; print('ok')")
  result = subprocess.run([python, "-c", code], cwd=outside, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=""))
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.splitlines() == ["[]", "ok"]
  # What the install weighs on disk (measured with a real download: 167 MB).
  assert serving_install.installed_bytes(dependencies) < 300e6


@pytest.mark.parametrize("command", ["run_classifier", "create_vocab", "export_encoder"])
def test_a_tensorflow_command_in_the_serving_install_names_the_training_install(
    serving, command):
  python, _, outside = serving
  program = cli.console_name(command)
  result = subprocess.run([os.path.join(os.path.dirname(python), program),
                           "--output_dir=o"], cwd=outside, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=""))
  assert result.returncode == 2
  assert result.stdout == ""
  assert result.stderr.splitlines() == [
      f"{program}: error: this command needs TensorFlow (no module named 'tensorflow' here; "
      f"this is the serving install): {cli.TRAINING_INSTALL}"]
  # The same through `python -m bert <command>`.
  result = subprocess.run([python, "-m", "bert", command], cwd=outside, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=""))
  assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
  assert result.stderr.startswith(f"{program}: error: this command needs TensorFlow")


def test_the_commands_without_tensorflow_run_in_the_serving_install(serving, tmp_path):
  python, _, outside = serving
  # squad_evaluate scores a prediction file (predict_litert: tests/litert/test_predictor.py).
  (tmp_path / "dev.json").write_text(
      '{"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "Jim Henson '
      'was a puppeteer", "qas": [{"id": "q1", "question": "Who?", "answers": [{"text": '
      '"Jim Henson", "answer_start": 0}]}]}]}]}', encoding="utf-8")
  (tmp_path / "pred.json").write_text('{"q1": "Jim Henson"}', encoding="utf-8")
  result = subprocess.run([os.path.join(os.path.dirname(python), "bert-squad-evaluate"),
                           str(tmp_path / "dev.json"), str(tmp_path / "pred.json")],
                          cwd=outside, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=""))
  assert result.returncode == 0, result.stderr[-2000:]
  assert '"exact_match": 100.0' in result.stdout
