"""The bad-input catalogue's machinery (its cases are tests/reliability's catalogue files).

A case spoils one place of a run of its command that would otherwise work and says what
the command must answer. Refused: exit status 2, ONE error line on stderr (`<script>:
error: ...`) naming the offending file, no traceback, and nothing left behind that looks
complete. A run that must work: exit 0 and its outputs byte for byte the reference's.

Here: the small inputs and the workspace (tiny model files, good inputs for every
script), the registry of one file's cases (`Catalogue`: @case and table rows), each
command's command line and a run of it that would work (`COMMANDS`, for a table's kind
of fault to spoil), and the harness runs and checks. One `python script.py` costs 4-6 s
of TensorFlow import on 2 cores, so the cases of one script and group run in ONE process
through tests/support/cli_harness.py, which still goes through the real command-line path
(absl parsing, required flags, report_user_errors, SystemExit).
"""
import dataclasses
import json
import os
import re
import subprocess
import sys

from conftest import ROOT, shared_path
import tiny

# One layer: what a case spoils and what a run must answer are the same for any depth, and
# the runs that must work (training, exports) grow with the layers.
TINY_CONFIG = tiny.tiny_config_dict(2000, num_hidden_layers=1)
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


# --------------------------------------------------------------------------- workspace


class Workspace:
  """Tiny model files, good inputs for every script, and places that cannot be written."""

  def __init__(self, root):
    self.root = str(root)
    self.model = self.path("model")
    os.makedirs(self.model)
    with open(shared_path("vocab", "uncased_vocab.txt"), encoding="utf-8") as handle:
      self.vocab_lines = [next(handle) for _ in range(TINY_CONFIG["vocab_size"])]
    self.vocab = self.write("model/vocab.txt", "".join(self.vocab_lines))
    self.config = self.write_config("model/bert_config.json")
    self.other_config = self.write_config("model/other_config.json", hidden_size=48)
    self.blocker = self.write("blocker", "a regular file: nothing can be created under it\n")
    self.minilm = os.path.join(shared_path("models", "uncased_L-6_H-384_A-12"),
                               "bert_model.ckpt")

  def path(self, *parts):
    return os.path.join(self.root, *parts)

  def write(self, name, content, mode="w"):
    path = self.path(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(content, bytes):
      with open(path, "wb") as handle:
        handle.write(content)
    else:
      with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    return path

  def mkdir(self, name):
    path = self.path(name)
    os.makedirs(path, exist_ok=True)
    return path

  def write_config(self, name, **overrides):
    return self.write(name, json.dumps(dict(TINY_CONFIG, **overrides)))

  def unwritable(self, name):
    """An output directory that cannot be created or written, as root or not.

    Tests often run as root, where mode 0o500 does not bind; a path under a regular file
    fails for everyone.
    """
    if os.geteuid() != 0:
      path = self.mkdir(name + "-readonly")
      os.chmod(path, 0o500)
      return os.path.join(path, "out")
    return os.path.join(self.blocker, name)

  def model_flags(self, config=None, vocab=None):
    return [f"--vocab_file={vocab or self.vocab}",
            f"--bert_config_file={config or self.config}"]


def pretraining_features(seq=SEQ, preds=PREDS, drop=(), **lengths):
  lengths = dict(dict(input_ids=seq, input_mask=seq, segment_ids=seq,
                      masked_lm_positions=preds, masked_lm_ids=preds,
                      masked_lm_weights=preds, next_sentence_labels=1), **lengths)
  features = {}
  for name, length in lengths.items():
    if name in drop:
      continue
    if name == "masked_lm_weights":
      features[name] = ["float", [1.0] * length]
    else:
      features[name] = ["int64", [(i % 7) + 1 if name == "input_ids" else 1
                                  for i in range(length)]]
  return features


def mrpc_folder(ws, name, train=None, dev=None):
  """An MRPC-layout data dir; `train`/`dev` are lists of data rows (None: no file)."""
  directory = ws.mkdir(name)
  for split, rows in (("train", train), ("dev", dev)):
    if rows is not None:
      ws.write(f"{name}/{split}.tsv",
               MRPC if rows == "good" else MRPC_HEADER + "".join(r + "\n" for r in rows))
  return directory


def conll_folder(ws, name, train=None, valid=None):
  directory = ws.mkdir(name)
  for split, content in (("train.txt", train), ("valid.txt", valid)):
    if content is not None:
      ws.write(f"{name}/{split}", CONLL if content == "good" else content)
  return directory


def swag_folder(ws, name, train=None, val=None):
  directory = ws.mkdir(name)
  for split, content in (("train.csv", train), ("val.csv", val)):
    if content is not None:
      ws.write(f"{name}/{split}", SWAG if content == "good" else content)
  return directory


def squad_json(questions):
  return json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{
      "context": "The cat sat on the mat in the house of the old man .",
      "qas": questions}]}]})


GOOD_QA = {"id": "q1", "question": "where did the cat sit ?",
           "answers": [{"text": "on the mat", "answer_start": 12}]}


LITERT_MRPC = {"format": "bert-litert", "format_version": 1, "task": "Mrpc",
                "task_name": "mrpc", "head": "classifier", "labels": ["0", "1"],
                "num_texts": 2, "max_seq_length": 32, "do_lower_case": True,
                "normalize": None, "vocab_file": "vocab.txt", "vocab_size": 2000,
                "inputs": ["input_ids", "input_mask", "segment_ids"],
                "outputs": ["label_id", "probabilities"],
                "models": {"int8": {"file": "model_int8.tflite"}}}


def litert_folder(ws, name, describe=True):
  """A litert/ folder as an export leaves it, whose .tflite is not a model."""
  if describe:
    ws.write(f"{name}/model.json", json.dumps(LITERT_MRPC))
  ws.write(f"{name}/vocab.txt", "".join(ws.vocab_lines))
  return ws.write(f"{name}/model_int8.tflite", b"not a flatbuffer" * 4)


# --------------------------------------------------------------------------- the registry

_EVERY_ID = set()  # the ids of every catalogue file's cases: an id names one case


def case_id(script, name):
  """A case's id: the script's name without .py, and the case's name."""
  return f"{os.path.basename(script)[:-3]}-{name}"


def row(script, name=None, default=False, **given):
  """One command's case of a kind of fault: `name` where the case is not named after the
  kind, `default` for the default subset (else slow), `given`: what differs for it."""
  return script, name, default, given


class Catalogue:
  """The cases of one catalogue file, and their runs: the cases of one script and group
  (the default subset, or the slow rest) run in ONE harness process, once.

  default_scripts: the scripts of the file's default cases, one process each in the
  default suite; a default case of another script fails the file's collection, so that
  the default suite's cost changes only on purpose.
  """

  def __init__(self, default_scripts):
    self.cases = {}  # id -> (script, default?, builder), in the order registered
    self.default_scripts = set(default_scripts)
    self._results = {}

  def case(self, script, default=False):
    """Registers a case of `script` (a root script, or a tool as "tools/<name>.py")."""
    def register(builder):
      cid = case_id(script, builder.__name__)
      if cid in _EVERY_ID:
        raise ValueError(f"two catalogue cases are named {cid}")
      _EVERY_ID.add(cid)
      self.cases[cid] = (script, default, builder)
      return builder
    return register

  def table(self, kind, *rows):
    """Registers a case of `kind` per row: kind(ws, command, name, **given)."""
    for script, name, default, given in rows:
      def builder(ws, kind=kind, script=script, name=name or kind.__name__, given=given):
        return kind(ws, COMMANDS[script], case_id(script, name), **given)
      builder.__name__ = name or kind.__name__
      self.case(script, default)(builder)

  def ids(self, default):
    """The ids of the default subset (default=True) or of the slow rest, sorted."""
    ids = sorted(cid for cid, (_, is_default, _) in self.cases.items()
                 if is_default == default)
    scripts = {self.cases[cid][0] for cid in ids}
    if default and scripts != self.default_scripts:
      raise AssertionError(f"the default cases run {sorted(scripts)}, not the "
                           f"default_scripts {sorted(self.default_scripts)}")
    return ids

  def check(self, ws, cid):
    """Runs (once) every case of this case's script and group in `ws`; checks this one."""
    script, default, _ = self.cases[cid]
    if (script, default) not in self._results:
      group = {other: builder(ws) for other, (s, d, builder) in self.cases.items()
               if s == script and d == default}
      results = run_harness(script, group, ws.root)
      self._results[script, default] = {other: (group[other], results[other])
                                        for other in group}
    spec, result = self._results[script, default][cid]
    check_case(script, spec, result)


# Each builder returns dict(argv=[...], expect=[substrings of the error line] or
# line=the whole message after "<script>: error: ", absent=[paths that must not exist
# afterwards], kept={path: content unchanged}, no_temporaries=[folders that must hold no
# temporary afterwards], setup=[harness setup actions]); a run that must work: works=True,
# with same=[(output, reference output)], exists=[paths], gone=[paths], contains={path:
# exact content}, lines_in={path: [lines it holds]}, stdout_first=its first line of output.


# --------------------------------------------------------------------------- the commands
# Each command's command line, and a run of it that would work (good inputs, the tiny
# model's files) for a case of the tables to spoil in one place.


def checkpoint_flag(checkpoint):
  return [f"--init_checkpoint={checkpoint}"] if checkpoint else []


def classifier_args(ws, data_dir, out, *extra, config=None, vocab=None, checkpoint=None):
  return ["--task_name=MRPC", f"--data_dir={data_dir}", *ws.model_flags(config, vocab),
          f"--output_dir={out}", "--max_seq_length=32", "--train_batch_size=2",
          "--num_train_epochs=1", *checkpoint_flag(checkpoint), *extra]


def cpd_args(ws, input_file, output_file, *extra, vocab=None):
  return [f"--input_file={input_file}", f"--output_file={output_file}",
          f"--vocab_file={vocab or ws.vocab}", "--max_seq_length=32",
          "--max_predictions_per_seq=5", "--dupe_factor=1", *extra]


def pretraining_args(ws, input_file, out, *extra, config=None, checkpoint=None):
  return [f"--input_file={input_file}", f"--bert_config_file={config or ws.config}",
          f"--output_dir={out}", "--do_train", f"--max_seq_length={SEQ}",
          f"--max_predictions_per_seq={PREDS}", "--train_batch_size=2",
          "--num_train_steps=2", "--num_warmup_steps=1", *checkpoint_flag(checkpoint),
          *extra]


def squad_args(ws, out, *extra, config=None):
  return [*ws.model_flags(config), f"--output_dir={out}", "--max_seq_length=48",
          "--doc_stride=16", "--max_query_length=12", "--train_batch_size=2",
          "--num_train_epochs=1", *extra]


def ner_args(ws, data_dir, out, *extra, config=None):
  return [f"--data_dir={data_dir}", *ws.model_flags(config), f"--output_dir={out}",
          "--max_seq_length=16", "--doc_stride=8", "--train_batch_size=2",
          "--num_train_epochs=1", *extra]


def tagger_args(ws, data_dir, out, *extra):
  return [f"--data_dir={data_dir}", *ws.model_flags(), f"--output_dir={out}",
          "--max_seq_length=16", "--train_batch_size=2", "--num_train_epochs=1", *extra]


def swag_args(ws, data_dir, out, *extra, config=None):
  return [f"--data_dir={data_dir}", *ws.model_flags(config), f"--output_dir={out}",
          "--max_seq_length=32", "--train_batch_size=2", "--num_train_epochs=1", *extra]


def extract_args(ws, input_file, output_file, *extra, config=None, checkpoint=None):
  return [f"--input_file={input_file}", f"--output_file={output_file}", *ws.model_flags(config),
          f"--init_checkpoint={checkpoint or ws.path('ef-tiny', 'bert_model.ckpt')}",
          "--max_seq_length=16", "--layers=-1", *extra]


def fill_mask_args(ws, input_file, output_file, *extra, config=None, vocab=None,
                   checkpoint=None):
  return [f"--input_file={input_file}", f"--output_file={output_file}",
          *ws.model_flags(config, vocab),
          f"--init_checkpoint={checkpoint or ws.path('fm-tiny', 'bert_model.ckpt')}",
          "--max_seq_length=16", *extra]


def extend_vocab_args(ws, words_file, output_file, *extra, vocab=None):
  return [f"--vocab_file={vocab or ws.vocab}", f"--words_file={words_file}",
          f"--output_file={output_file}", *extra]


def vocab_args(ws, input_file, output_file, *extra):
  return [f"--input_file={input_file}", f"--output_file={output_file}", "--vocab_size=200",
          "--num_unused=5", *extra]


def export_args(ws, export_dir, *extra, config=None, vocab=None, checkpoint=None):
  return [*ws.model_flags(config, vocab), f"--export_dir={export_dir}",
          f"--init_checkpoint={checkpoint or ws.path('ee-tiny', 'bert_model.ckpt')}",
          "--max_seq_length=32", *extra]


def google_checkpoint(ws, folder):
  """Harness setup: the tiny encoder, saved in Google's layout in `folder`."""
  return {"google_checkpoint": ws.path(folder, "bert_model.ckpt"), "bert_config": ws.config}


def pretraining_checkpoint(ws, folder):
  """Harness setup: the tiny pretraining model (encoder, masked-LM and next-sentence
  heads), saved in Google's layout in `folder`."""
  return {**google_checkpoint(ws, folder), "head": "pretraining"}


def _text_input(content, file_name="input.txt"):
  """Command.inputs of a command that reads one text file: `content` (TFRecords alone
  hold a length)."""
  def inputs(ws, name, length):  # pylint: disable=unused-argument
    return ws.write(f"{name}/{file_name}", content), []
  return inputs


def records_input(ws, name, length):
  """Command.inputs of run_pretraining.py: TFRecords of `length` tokens a sequence."""
  path = ws.path(name, "records.tfrecord")
  return path, [{"tfrecord": path, "features": pretraining_features(seq=length), "count": 8}]


@dataclasses.dataclass(frozen=True)
class Command:
  """How the tables' cases run one command.

  args(ws, inputs, out, *flags, **model): its command line reading `inputs` (its data
  folder or its input file) and writing `out`, `flags` last; model: config=, vocab=,
  checkpoint= in place of the tiny model's files (each command takes those it has).
  action: the flags of a run that would work (a training run, for the commands that
  train), before a case's own.
  data_files: {"train"|"dev": (file name, good content)} of a command's data folder;
  a command that reads an input file has inputs(ws, name, length) -> (path, harness
  setup) instead: good input, named `name`, for a run of max_seq_length `length`.
  output: the file it writes (None: it writes an output folder).
  checkpoint: the folder of the tiny checkpoint it reads unless told otherwise (made by
  the harness's setup).
  """
  script: str
  args: object
  action: tuple = ()
  data_files: dict = None
  inputs: object = None
  output: str = None
  checkpoint: str = None

  def run(self, ws, name, *extra, inputs=None, out=None, length=SEQ, **model):
    """(argv, output, harness setup) of a run named `name` that would work: good inputs
    (or `inputs`) for max_seq_length `length`, the tiny model (or `model`'s files), its
    output <name>-out or <name>-<its output file> (or `out`), and `extra` flags."""
    setup = []
    if inputs is None and self.data_files:
      inputs = data_folder(ws, self, name)
    elif inputs is None:
      inputs, setup = self.inputs(ws, name, length)
    if self.checkpoint and "checkpoint" not in model:
      setup = setup + [(pretraining_checkpoint if self.script == "fill_mask.py"
                        else google_checkpoint)(ws, self.checkpoint)]
    out = out or ws.path(f"{name}-{self.output or 'out'}")
    return self.args(ws, inputs, out, *self.action, *extra, **model), out, setup


A_FOLDER = object()  # data_folder: a folder where the file should be


def data_folder(ws, command, name, **files):
  """`command`'s data folder `name`, each file good unless files[split] says otherwise:
  None (no file), A_FOLDER (a folder in its place) or the file's content (str or bytes)."""
  folder = ws.mkdir(name)
  for split, (file_name, good) in command.data_files.items():
    content = files.get(split, good)
    if content is A_FOLDER:
      ws.mkdir(f"{name}/{file_name}")
    elif content is not None:
      ws.write(f"{name}/{file_name}", content)
  return folder


def _squad_training(ws, train_file, out, *extra, config=None):
  return squad_args(ws, out, f"--train_file={train_file}", *extra, config=config)


def _export_run_args(ws, _, export_dir, *extra, **model):
  """export_encoder.py's command line: it reads a checkpoint, no input of its own."""
  return export_args(ws, export_dir, *extra, **model)


COMMANDS = {command.script: command for command in (
    Command("run_classifier.py", classifier_args, ("--do_train",),
            data_files={"train": ("train.tsv", MRPC), "dev": ("dev.tsv", MRPC)}),
    Command("run_ner.py", ner_args, ("--do_train",),
            data_files={"train": ("train.txt", CONLL), "dev": ("valid.txt", CONLL)}),
    Command("run_tagger.py", tagger_args, ("--do_train",),
            data_files={"train": ("train.txt", CONLL), "dev": ("valid.txt", CONLL)}),
    Command("run_swag.py", swag_args, ("--do_train",),
            data_files={"train": ("train.csv", SWAG), "dev": ("val.csv", SWAG)}),
    # SQuAD's one question is one training step only when told so.
    Command("run_squad.py", _squad_training, ("--do_train", "--num_train_steps=1"),
            inputs=_text_input(squad_json([GOOD_QA]), "train.json")),
    Command("run_pretraining.py", pretraining_args, inputs=records_input),
    Command("create_pretraining_data.py", cpd_args, inputs=_text_input(CORPUS),
            output="out.tfrecord"),
    Command("create_vocab.py", vocab_args, inputs=_text_input(CORPUS * 5),
            output="vocab.txt"),
    Command("extract_features.py", extract_args, inputs=_text_input("the cat sat .\n"),
            output="features.jsonl", checkpoint="ef-tiny"),
    Command("fill_mask.py", fill_mask_args, inputs=_text_input("the cat sat on the [MASK] .\n"),
            output="masks.jsonl", checkpoint="fm-tiny"),
    Command("extend_vocab.py", extend_vocab_args, inputs=_text_input("bitcoin\n", "words.txt"),
            output="vocab.txt"),
    Command("export_encoder.py", _export_run_args,
            inputs=lambda ws, name, length: (None, []), checkpoint="ee-tiny"),
)}


def refused(ws, command, name, *extra, expect=(), line=None, **run):
  """A run refused before it writes anything; the error line holds `expect` (or is
  `line`). run: Command.run's keywords."""
  argv, out, setup = command.run(ws, name, *extra, **run)
  spec = dict(argv=argv, setup=setup, expect=list(expect), absent=[out])
  if line is not None:
    spec["line"] = line
  return spec


# --------------------------------------------------------------------------- the scripts and tools


def listed_scripts():
  """Every script, from the one list of them: bert.cli.COMMANDS."""
  from bert import cli  # pylint: disable=g-import-not-at-top
  return {f"{name}.py" for name in cli.COMMANDS}


def tools_users_run():
  """Every tools/<name>.py that README.md, docs/ or reproduce/ names (for users to run)."""
  found = set()
  places = [os.path.join(ROOT, "README.md")] + [
      os.path.join(parent, name) for folder in ("docs", "reproduce")
      for parent, _, names in os.walk(os.path.join(ROOT, folder)) for name in names
      if name.endswith((".md", ".sh"))]
  for path in places:
    with open(path, encoding="utf-8") as handle:
      # Not a test file under tests/tools/, which docs/TESTS.md lists.
      found.update(re.findall(r"(?<![\w/])(tools/(?:maintainers/)?[a-z_]+\.py)", handle.read()))
  return found


# --------------------------------------------------------------------------- running


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
