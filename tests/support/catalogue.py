"""The bad-input catalogue's shared parts: its small inputs, the harness that runs a script's
cases in one process (tests/support/cli_harness.py), and what each case's result must be.

A refused case: exit status 2, ONE error line on stderr (`<script>: error: ...`) naming
the offending file, no traceback, and nothing left behind that looks complete. A case
that must work: exit 0 and its outputs byte for byte the reference's.
"""
import json
import os
import re
import subprocess
import sys

from conftest import ROOT
import tiny

TINY_CONFIG = tiny.tiny_config_dict(2000)
SEQ, PREDS = 32, 5          # pretraining records: max_seq_length, max_predictions_per_seq
MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
MRPC_ROWS = ["1\t1\t2\tthe cat sat on the mat .\tthe cat is on the mat .",
             "0\t3\t4\ta man went home .\tshe said no ."]
MRPC = MRPC_HEADER + "".join(r + "\n" for r in MRPC_ROWS)
CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
         "German JJ B-NP B-MISC\ncall NN I-NP O\n. . O O\n\n"
         "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n")
SWAG_HEADER = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1," \
              "ending2,ending3,label\n"
SWAG = SWAG_HEADER + ('v1,0,"A man sits. He",A man sits.,He,gold,walks away.,'
                      'eats a cake.,sings loudly.,reads a book.,0\n'
                      'v2,1,"The cat jumps. It",The cat jumps.,It,gold,lands.,'
                      'flies.,swims.,talks.,0\n')
CORPUS = ("the cat sat on the mat .\nit was a good day .\n\n"
          "a man went home .\nhe said no .\nshe said yes .\n")
# absl's Python log lines, and the C++ ones TensorFlow 2.21 prints at import even with
# TF_CPP_MIN_LOG_LEVEL=3 (oneDNN notice, "Could not find cuda drivers").
LOG_LINE = re.compile(r"^([IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] |WARNING: All log messages "
                      r"before absl::InitializeLog\(\) is called are written to STDERR$)")


def run_harness(script, cases, workdir):
  """Runs the given {id: spec} cases of `script` in one process; returns {id: result}."""
  specs = [{"id": case_id, "argv": spec["argv"], "setup": spec.get("setup", []),
            "cwd": spec.get("cwd"), "env": spec.get("env", {})}
           for case_id, spec in cases.items()]
  name = script.replace("/", "-")
  cases_file = os.path.join(workdir, f"{name}.cases.json")
  results_file = os.path.join(workdir, f"{name}.results.json")
  with open(cases_file, "w", encoding="utf-8") as handle:
    json.dump(specs, handle)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(
      [sys.executable, os.path.join(ROOT, "tests", "support", "cli_harness.py"), script, cases_file,
       results_file], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(results_file, encoding="utf-8") as handle:
    return json.load(handle)


# Outputs that are not the run's results: checkpoints (their bytes hold the object graph
# and the saving order), TensorBoard events (wall-clock times), the lock, logs.
NOT_COMPARED = re.compile(r"(^|/)(ckpt-\d+\.|checkpoint$|events\.out\.|\.bert-run\.lock$|"
                           r"feature_cache/|[^/]*\.log$)")


# Two exports of the same model differ in bytes (a SavedModel's object graph lists the
# variables in set order; its graph and fingerprint follow): a SavedModel's variables are
# compared by value instead, as a sorted list.
_SAVED_MODEL_FILE = re.compile(r"(^|/)(saved_model\.pb|fingerprint\.pb|"
                               r"variables/variables\.(index|data-\d+-of-\d+))$")


def _saved_model_values(folder):
  """The values of a SavedModel's variables (without the object graph), sorted."""
  import numpy as np  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(os.path.join(folder, "variables", "variables"))
  values = []
  for key in reader.get_variable_to_shape_map():
    if key != "_CHECKPOINTABLE_OBJECT_GRAPH":
      value = np.asarray(reader.get_tensor(key))
      values.append((str(value.dtype), value.shape,
                     repr(value.tolist()) if value.dtype == object else value.tobytes()))
  assert values, folder
  return sorted(values)


# NER's activation cache names each file by a fingerprint of its inputs' identity (real
# paths, sizes, times): the same files typed any way give the same name, and the copies
# in another folder (spec["copies"]: the spaces and non-ASCII forms) another.
_FINGERPRINT = re.compile(r"-[0-9a-f]{12}(?=\.tfrecord$)")


def _compared_files(folder, copies=False):
  """{name (without fingerprint for copies): relative path} of the files of an output
  folder that hold the run's results (not NOT_COMPARED)."""
  found = {}
  for parent, _, names in os.walk(folder):
    for name in names:
      relative = os.path.relpath(os.path.join(parent, name), folder)
      if not NOT_COMPARED.search(relative):
        found[_FINGERPRINT.sub("", relative) if copies else relative] = relative
  return found


def check_works(script, spec, result):
  """A run that must succeed: exit 0, no traceback, and its outputs equal the
  reference's byte for byte (spec["same"]: [(output, reference output)]; a folder: the
  same files, each the same bytes)."""
  stderr = result["stderr"]
  assert not result["crashed"] and result["exit"] == 0, (script, stderr[-3000:])
  assert "Traceback" not in stderr and ": error:" not in stderr, stderr[-3000:]
  _check_disk(spec)
  for path in spec.get("exists", []):
    assert os.path.exists(path), f"{path} not written"
  for path in spec.get("gone", []):
    assert not os.path.lexists(path), f"{path} left behind"
  for path, content in spec.get("contains", {}).items():
    with open(path, encoding="utf-8") as handle:
      assert handle.read() == content, path
  for path, lines in spec.get("lines_in", {}).items():
    with open(path, encoding="utf-8") as handle:
      held = handle.read().splitlines()
    assert [line for line in lines if line not in held] == [], (path, held)
  if "stdout_first" in spec:
    assert result["stdout"].splitlines()[:1] == [spec["stdout_first"]], result["stdout"]
  for got, want in spec.get("same", []):
    pairs = [(got, want)]
    if os.path.isdir(want):
      files = _compared_files(want, spec.get("copies"))
      got_files = _compared_files(got, spec.get("copies"))
      assert files and sorted(got_files) == sorted(files), (got, want)
      pairs = [(os.path.join(got, got_files[f]), os.path.join(want, files[f])) for f in files
               if not _SAVED_MODEL_FILE.search(f)]
      for saved_model in [os.path.dirname(f) for f in files if f.endswith("saved_model.pb")]:
        assert (_saved_model_values(os.path.join(got, saved_model))
                == _saved_model_values(os.path.join(want, saved_model))), (got, saved_model)
    for got_file, want_file in pairs:
      with open(got_file, "rb") as a, open(want_file, "rb") as b:
        assert a.read() == b.read(), (got_file, want_file)


def _check_disk(spec):
  """What a case says must hold on disk afterwards: absent, kept, no_temporaries."""
  for path in spec.get("absent", []):
    assert not os.path.exists(path), f"{path} left behind"
  for path, content in spec.get("kept", {}).items():
    with open(path, encoding="utf-8") as handle:
      assert handle.read() == content, f"{path} changed"
  for folder in spec.get("no_temporaries", []):
    for parent, dirs, files in os.walk(folder):
      left = [n for n in dirs + files if re.fullmatch(r"\..+\.tmp-[0-9a-f]{8}|\..*\.lock", n)]
      assert left == [], (parent, left)


# `--flag` in a message: a flag of the tool, unless it follows another command's name
# ("use run_classifier.py --do_predict").
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_]*)")
_OTHER_COMMAND = re.compile(r"(?:\S+\.py|bert-[a-z-]+)((?: --[a-z_]+(?:=\S+)?)+)")


def flags_named(line):
  """The flags a message names as the tool's own."""
  others = {m.group(1) for span in _OTHER_COMMAND.finditer(line)
            for m in _FLAG.finditer(span.group(1))}
  return {m.group(1) for m in _FLAG.finditer(line)} - others


def foreign_flags(line, defined):
  """The flags `line` names that the tool does not define (--noX: X's negation)."""
  return sorted(f for f in flags_named(line)
                if f not in defined and not (f.startswith("no") and f[2:] in defined))


def check_case(script, spec, result):
  if spec.get("works"):
    check_works(script, spec, result)
    return
  stderr = result["stderr"]
  assert not result["crashed"], stderr[-3000:]
  assert result["exit"] == 2, stderr[-3000:]
  lines = [l for l in stderr.splitlines() if l.strip()]
  program = os.path.basename(script)
  error_lines = [l for l in lines if l.startswith(f"{program}: error: ")]
  assert len(error_lines) == 1, stderr[-3000:]
  if spec.get("verbose"):
    assert "Traceback (most recent call last):" in stderr
    assert lines[-1] == error_lines[0]
  else:
    assert "Traceback" not in stderr, stderr[-3000:]
    # Everything else on stderr must be log lines, not a stray multi-line dump.
    others = [l for l in lines if l not in error_lines and not LOG_LINE.match(l)]
    assert others == [], others[:5]
  if result.get("flags"):  # a tool's messages name its own flags
    assert foreign_flags(error_lines[0], set(result["flags"])) == [], error_lines[0]
  for needle in spec.get("expect", []):
    assert needle in error_lines[0], (needle, error_lines[0])
  if "line" in spec:
    assert error_lines[0] == f"{program}: error: {spec['line']}"
  _check_disk(spec)
  for path in spec.get("absent", []) + [a for a in spec["argv"] if "output" in a]:
    directory = os.path.dirname(path.split("=", 1)[-1])
    if os.path.isdir(directory):
      leftovers = [n for n in os.listdir(directory) if ".tmp-" in n or ".saving-" in n]
      assert leftovers == [], leftovers
