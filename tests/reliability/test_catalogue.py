"""The bad-input catalogue: every script, every kind of bad input it can meet.

Each case must end with exit status 2, ONE error line on stderr (`<script>: error: ...`)
that names the offending file (and line or record), no Python traceback, and no output
left behind that looks complete (nor a half-written temporary file).

A kind of fault that many commands meet (a config of another vocabulary size, an
unwritable output, a missing data file, ...) is one case function and a table of the
commands that meet it, a row each with what differs there (the bad content, the line
named); each case spoils one place of a run of its command that would otherwise work
(`Command.run`). What one command alone meets is in that command's `# ---- <script>`
section.

Cost: one `python script.py` costs 4-6 s of TensorFlow import on 2 cores, so the cases of
one script run in ONE process through tests/support/cli_harness.py, which still goes through the
real command-line path (absl parsing, required flags, report_user_errors, SystemExit). A
single true subprocess (test_real_subprocess_...) checks that the harness sees what a user
sees. The default run takes a representative subset; the whole catalogue is marked slow
(`make test-slow`, or `pytest -m slow tests/reliability/test_catalogue.py`).
"""
import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, shared_path
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


def _pretraining_features(seq=SEQ, preds=PREDS, drop=(), **lengths):
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


def _mrpc(ws, name, train=None, dev=None):
  """An MRPC-layout data dir; `train`/`dev` are lists of data rows (None: no file)."""
  directory = ws.mkdir(name)
  for split, rows in (("train", train), ("dev", dev)):
    if rows is not None:
      ws.write(f"{name}/{split}.tsv",
               MRPC if rows == "good" else MRPC_HEADER + "".join(r + "\n" for r in rows))
  return directory


def _conll(ws, name, train=None, valid=None):
  directory = ws.mkdir(name)
  for split, content in (("train.txt", train), ("valid.txt", valid)):
    if content is not None:
      ws.write(f"{name}/{split}", CONLL if content == "good" else content)
  return directory


def _swag(ws, name, train=None, val=None):
  directory = ws.mkdir(name)
  for split, content in (("train.csv", train), ("val.csv", val)):
    if content is not None:
      ws.write(f"{name}/{split}", SWAG if content == "good" else content)
  return directory


def _squad_json(questions):
  return json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{
      "context": "The cat sat on the mat in the house of the old man .",
      "qas": questions}]}]})


GOOD_QA = {"id": "q1", "question": "where did the cat sit ?",
           "answers": [{"text": "on the mat", "answer_start": 12}]}


# --------------------------------------------------------------------------- the catalogue

CASES = {}   # id -> (script, default?, builder)


def case_id(script, name):
  """A case's id: the script's name without .py, and the case's name."""
  return f"{os.path.basename(script)[:-3]}-{name}"


def case(script, default=False):
  """Registers a case of `script` (a root script, or a tool as "tools/<name>.py")."""
  def register(builder):
    CASES[case_id(script, builder.__name__)] = (script, default, builder)
    return builder
  return register


# Each builder returns dict(argv=[...], expect=[substrings of the error line] or
# line=the whole message after "<script>: error: ", absent=[paths that must not exist
# afterwards], kept={path: content unchanged}, no_temporaries=[folders that must hold no
# temporary afterwards], setup=[harness setup actions]); a run that must work: works=True,
# with same=[(output, reference output)], exists=[paths], gone=[paths], contains={path:
# exact content}, lines_in={path: [lines it holds]}, stdout_first=its first line of output.


# --------------------------------------------------------------------------- the commands
# Each command's command line, and a run of it that would work (good inputs, the tiny
# model's files) for a case of the tables to spoil in one place.


def _checkpoint_flag(checkpoint):
  return [f"--init_checkpoint={checkpoint}"] if checkpoint else []


def _classifier(ws, data_dir, out, *extra, config=None, vocab=None, checkpoint=None):
  return ["--task_name=MRPC", f"--data_dir={data_dir}", *ws.model_flags(config, vocab),
          f"--output_dir={out}", "--max_seq_length=32", "--train_batch_size=2",
          "--num_train_epochs=1", *_checkpoint_flag(checkpoint), *extra]


def _cpd(ws, input_file, output_file, *extra, vocab=None):
  return [f"--input_file={input_file}", f"--output_file={output_file}",
          f"--vocab_file={vocab or ws.vocab}", "--max_seq_length=32",
          "--max_predictions_per_seq=5", "--dupe_factor=1", *extra]


def _pretrain(ws, input_file, out, *extra, config=None, checkpoint=None):
  return [f"--input_file={input_file}", f"--bert_config_file={config or ws.config}",
          f"--output_dir={out}", "--do_train", f"--max_seq_length={SEQ}",
          f"--max_predictions_per_seq={PREDS}", "--train_batch_size=2",
          "--num_train_steps=2", "--num_warmup_steps=1", *_checkpoint_flag(checkpoint),
          *extra]


def _squad(ws, out, *extra, config=None):
  return [*ws.model_flags(config), f"--output_dir={out}", "--max_seq_length=48",
          "--doc_stride=16", "--max_query_length=12", "--train_batch_size=2",
          "--num_train_epochs=1", *extra]


def _ner(ws, data_dir, out, *extra, config=None):
  return [f"--data_dir={data_dir}", *ws.model_flags(config), f"--output_dir={out}",
          "--max_seq_length=16", "--doc_stride=8", "--train_batch_size=2",
          "--num_train_epochs=1", *extra]


def _tagger(ws, data_dir, out, *extra):
  return [f"--data_dir={data_dir}", *ws.model_flags(), f"--output_dir={out}",
          "--max_seq_length=16", "--train_batch_size=2", "--num_train_epochs=1", *extra]


def _swag_args(ws, data_dir, out, *extra, config=None):
  return [f"--data_dir={data_dir}", *ws.model_flags(config), f"--output_dir={out}",
          "--max_seq_length=32", "--train_batch_size=2", "--num_train_epochs=1", *extra]


def _extract(ws, input_file, output_file, *extra, config=None, checkpoint=None):
  return [f"--input_file={input_file}", f"--output_file={output_file}", *ws.model_flags(config),
          f"--init_checkpoint={checkpoint or ws.path('ef-tiny', 'bert_model.ckpt')}",
          "--max_seq_length=16", "--layers=-1", *extra]


def _vocab_args(ws, input_file, output_file, *extra):
  return [f"--input_file={input_file}", f"--output_file={output_file}", "--vocab_size=200",
          "--num_unused=5", *extra]


def _export(ws, export_dir, *extra, config=None, vocab=None, checkpoint=None):
  return [*ws.model_flags(config, vocab), f"--export_dir={export_dir}",
          f"--init_checkpoint={checkpoint or ws.path('ee-tiny', 'bert_model.ckpt')}",
          "--max_seq_length=32", *extra]


def _google_checkpoint(ws, folder):
  """Harness setup: the tiny encoder, saved in Google's layout in `folder`."""
  return {"google_checkpoint": ws.path(folder, "bert_model.ckpt"), "bert_config": ws.config}


def _text_input(content, file_name="input.txt"):
  """Command.inputs of a command that reads one text file: `content` (TFRecords alone
  hold a length)."""
  def inputs(ws, name, length):  # pylint: disable=unused-argument
    return ws.write(f"{name}/{file_name}", content), []
  return inputs


def _records_input(ws, name, length):
  """Command.inputs of run_pretraining.py: TFRecords of `length` tokens a sequence."""
  path = ws.path(name, "records.tfrecord")
  return path, [{"tfrecord": path, "features": _pretraining_features(seq=length), "count": 8}]


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
      inputs = _data_folder(ws, self, name)
    elif inputs is None:
      inputs, setup = self.inputs(ws, name, length)
    if self.checkpoint and "checkpoint" not in model:
      setup = setup + [_google_checkpoint(ws, self.checkpoint)]
    out = out or ws.path(f"{name}-{self.output or 'out'}")
    return self.args(ws, inputs, out, *self.action, *extra, **model), out, setup


A_FOLDER = object()  # _data_folder: a folder where the file should be


def _data_folder(ws, command, name, **files):
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
  return _squad(ws, out, f"--train_file={train_file}", *extra, config=config)


def _export_args(ws, _, export_dir, *extra, **model):
  """export_encoder.py's command line: it reads a checkpoint, no input of its own."""
  return _export(ws, export_dir, *extra, **model)


COMMANDS = {command.script: command for command in (
    Command("run_classifier.py", _classifier, ("--do_train",),
            data_files={"train": ("train.tsv", MRPC), "dev": ("dev.tsv", MRPC)}),
    Command("run_ner.py", _ner, ("--do_train",),
            data_files={"train": ("train.txt", CONLL), "dev": ("valid.txt", CONLL)}),
    Command("run_tagger.py", _tagger, ("--do_train",),
            data_files={"train": ("train.txt", CONLL), "dev": ("valid.txt", CONLL)}),
    Command("run_swag.py", _swag_args, ("--do_train",),
            data_files={"train": ("train.csv", SWAG), "dev": ("val.csv", SWAG)}),
    # SQuAD's one question is one training step only when told so.
    Command("run_squad.py", _squad_training, ("--do_train", "--num_train_steps=1"),
            inputs=_text_input(_squad_json([GOOD_QA]), "train.json")),
    Command("run_pretraining.py", _pretrain, inputs=_records_input),
    Command("create_pretraining_data.py", _cpd, inputs=_text_input(CORPUS),
            output="out.tfrecord"),
    Command("create_vocab.py", _vocab_args, inputs=_text_input(CORPUS * 5),
            output="vocab.txt"),
    Command("extract_features.py", _extract, inputs=_text_input("the cat sat .\n"),
            output="features.jsonl", checkpoint="ef-tiny"),
    Command("export_encoder.py", _export_args,
            inputs=lambda ws, name, length: (None, []), checkpoint="ee-tiny"),
)}


# --------------------------------------------------------------------------- the tables
# A kind of fault: kind(ws, command, name, **given) -> the case of `command`, its
# workspace files named `name` (the case's id); then its table, a row per command.


def row(script, name=None, default=False, **given):
  """One command's case of a kind of fault: `name` where the case is not named after the
  kind, `default` for the default subset (else slow), `given`: what differs for it."""
  return script, name, default, given


def table(kind, *rows):
  """Registers a case of `kind` per row."""
  for script, name, default, given in rows:
    def builder(ws, kind=kind, script=script, name=name or kind.__name__, given=given):
      return kind(ws, COMMANDS[script], case_id(script, name), **given)
    builder.__name__ = name or kind.__name__
    case(script, default)(builder)


def _refused(ws, command, name, *extra, expect=(), line=None, **run):
  """A run refused before it writes anything; the error line holds `expect` (or is
  `line`). run: Command.run's keywords."""
  argv, out, setup = command.run(ws, name, *extra, **run)
  spec = dict(argv=argv, setup=setup, expect=list(expect), absent=[out])
  if line is not None:
    spec["line"] = line
  return spec


# ---- the model's files, and the model in output_dir


def vocab_config_mismatch(ws, command, name):
  """The config's vocab_size (2001) is not the vocabulary's (2000 lines)."""
  config = ws.write_config(f"{name}-config.json", vocab_size=2001)
  return _refused(ws, command, name, expect=[ws.vocab, "2001"], config=config)


table(vocab_config_mismatch,
      row("run_classifier.py"), row("run_squad.py"), row("run_ner.py"), row("run_swag.py"),
      row("extract_features.py"), row("export_encoder.py"))


def max_seq_length_over_positions(ws, command, name):
  """--max_seq_length=128 on a config of 64 positions (pretraining's records are 128 long:
  the flag is the one fault)."""
  return _refused(ws, command, name, "--max_seq_length=128",
                  expect=["max_seq_length=128", "64"], length=128)


table(max_seq_length_over_positions,
      row("run_classifier.py"), row("run_pretraining.py"), row("run_ner.py"),
      row("run_swag.py"), row("extract_features.py"))


def type_vocab_size_one(ws, command, name, task):
  """A config of one segment (type_vocab_size 1) for a task of text pairs: refused once
  the data is read (the pairs say how many segments there are)."""
  config = ws.write_config(f"{name}-config.json", type_vocab_size=1)
  spec = _refused(ws, command, name, config=config,
                  expect=[config, f"type_vocab_size=1, but {task} packs 2 segments"])
  del spec["absent"]  # SQuAD's read_data writes train.tf_record, whole, as the original does
  return spec


table(type_vocab_size_one,
      row("run_classifier.py", "type_vocab_size_one_on_a_pair_task", True, task="Mrpc"),
      row("run_squad.py", task="SQuAD"))


def malformed_config_json(ws, command, name):
  config = ws.write(f"{name}-config.json", '{"vocab_size": 2000,\n "hidden_size": 32,,\n}')
  return _refused(ws, command, name, expect=[config, "line 2"], config=config)


table(malformed_config_json, row("run_classifier.py"), row("export_encoder.py"))


def missing_vocab(ws, command, name):
  vocab = ws.path(f"{name}-vocab.txt")
  return _refused(ws, command, name, expect=[vocab], vocab=vocab)


table(missing_vocab, row("create_pretraining_data.py"), row("export_encoder.py"))


def non_utf8_vocab(ws, command, name):
  vocab = ws.write(f"{name}-vocab.txt", "".join(ws.vocab_lines[:500]).encode() +
                   b"caf\xe9\n" + "".join(ws.vocab_lines[501:]).encode())
  return _refused(ws, command, name, expect=[vocab], vocab=vocab)


table(non_utf8_vocab, row("run_classifier.py"), row("create_pretraining_data.py"))


def checkpoint_of_other_size(ws, command, name):
  """BERT's 6-layer, 384-wide checkpoint for the tiny config."""
  return _refused(ws, command, name, expect=[ws.minilm], checkpoint=ws.minilm)


table(checkpoint_of_other_size,
      row("run_classifier.py", "init_checkpoint_of_other_size"),
      row("run_pretraining.py", "init_checkpoint_of_other_size"),
      row("extract_features.py"), row("export_encoder.py"))


def missing_checkpoint(ws, command, name):
  checkpoint = ws.path(f"{name}-nothing", "bert_model.ckpt")
  return _refused(ws, command, name, expect=[checkpoint], checkpoint=checkpoint)


table(missing_checkpoint,
      row("run_classifier.py", "missing_init_checkpoint"), row("extract_features.py"),
      row("export_encoder.py"))


def checkpoint_dir_names_a_missing_ckpt(ws, command, name):
  """A run's folder whose 'checkpoint' file names a ckpt-N that is not there."""
  folder = ws.mkdir(f"{name}-checkpoint")
  ws.write(f"{name}-checkpoint/checkpoint", 'model_checkpoint_path: "ckpt-99"\n'
           'all_model_checkpoint_paths: "ckpt-99"\n')
  return _refused(ws, command, name, checkpoint=folder, expect=[
      folder + ": its 'checkpoint' file names ckpt-99, which does not exist",
      os.path.join(folder, "ckpt-99.index") + " is missing"])


table(checkpoint_dir_names_a_missing_ckpt,
      row("run_classifier.py", "init_checkpoint_dir_names_a_missing_ckpt"),
      row("extract_features.py", default=True))


def output_dir_holds_other_model(ws, command, name, extra=()):
  """output_dir holds a checkpoint of another model (hidden size 48, not 32): neither
  resumed from nor written over."""
  argv, out, setup = command.run(ws, name, *extra)
  return dict(argv=argv, expect=[out],
              setup=setup + [{"foreign_checkpoint": out, "bert_config": ws.other_config}],
              absent=[os.path.join(out, written) for written in
                      ("ckpt-1.index", "eval_results.txt", "pretrained")])


table(output_dir_holds_other_model,
      row("run_classifier.py", default=True, extra=("--do_eval",)),
      row("run_pretraining.py"), row("run_squad.py"), row("run_ner.py"), row("run_swag.py"))


def unwritable_output_dir(ws, command, name, names="output"):
  """An output that cannot be created; the line names it (names="folder": its folder)."""
  folder = ws.unwritable(name)
  out = os.path.join(folder, command.output) if command.output else folder
  return _refused(ws, command, name, out=out,
                  expect=[out if names == "output" else os.path.dirname(out)])


table(unwritable_output_dir,
      row("run_classifier.py"), row("run_pretraining.py"), row("run_squad.py"),
      row("run_ner.py"), row("run_swag.py"),
      row("create_pretraining_data.py", "unwritable_output", default=True),
      row("extract_features.py", "unwritable_output"),
      row("create_vocab.py", "unwritable_output", names="folder"),
      row("export_encoder.py", "unwritable_export_dir"))


# ---- flags that cannot work: refused before anything is read or written


def refused_flags(ws, command, name, flags, expect=(), line=None):
  """`flags` on a run that would otherwise work."""
  return _refused(ws, command, name, *flags, expect=expect, line=line)


table(refused_flags,
      # Flags that would train to a plausible wrong model.
      row("run_classifier.py", "negative_learning_rate", True, flags=["--learning_rate=-2e-5"],
          expect=["--learning_rate=-2e-05", "gradient ascent"]),
      row("run_classifier.py", "nan_learning_rate", flags=["--learning_rate=nan"],
          expect=["--learning_rate=nan"]),
      row("run_classifier.py", "infinite_learning_rate", flags=["--learning_rate=inf"],
          expect=["--learning_rate=inf"]),
      row("run_classifier.py", "nan_epochs", flags=["--num_train_epochs=nan"],
          expect=["--num_train_epochs=nan"]),
      row("run_classifier.py", "absurd_max_seq_length", flags=["--max_seq_length=1000000000"],
          expect=["--max_seq_length=1000000000", "8192"]),
      row("run_classifier.py", "zero_train_steps", flags=["--num_train_steps=0"],
          expect=["--num_train_steps=0"]),
      row("run_ner.py", "nan_dropout_rate", flags=["--dropout_rate=nan"],
          expect=["--dropout_rate=nan: must be in [0, 1)"]),
      row("run_squad.py", "nan_null_score_diff_threshold", True,
          flags=["--version_2_with_negative", "--null_score_diff_threshold=nan"],
          expect=["--null_score_diff_threshold=nan: must be a finite number"]),
      row("run_squad.py", "infinite_null_score_diff_threshold",
          flags=["--version_2_with_negative", "--null_score_diff_threshold=-inf"],
          expect=["--null_score_diff_threshold=-inf: must be a finite number"]),
      row("extract_features.py", "layer_out_of_range", flags=["--layers=-1,-7"],
          expect=["-7"]),
      row("run_tagger.py", "tag_column_of_the_words", flags=["--tag_column=1"],
          expect=["--tag_column=1: the tags are column 2 or later"]),
      # Lists that name an item twice.
      row("run_tagger.py", "labels_given_twice", flags=["--tag_column=2", "--labels=NNP,VBZ,NNP"],
          line="--labels=NNP,VBZ,NNP: 'NNP' is given 2 times; each label once, in label-id "
               "order"),
      row("run_ner.py", "entity_types_given_twice", flags=["--entity_types=PER,ORG,PER"],
          line="--entity_types=PER,ORG,PER: 'PER' is given 2 times; each entity type once"),
      # Accelerators and the cluster: asked for and not there, or not waited for.
      row("run_classifier.py", "tpu_asked_none_named", flags=["--use_tpu"],
          expect=["--use_tpu", "no local TPU and no --tpu_name"]),
      # Feature extraction has no TPU path (docs/pretraining.md's what-runs-where table).
      row("extract_features.py", "tpu_not_offered", flags=["--use_tpu"],
          line="--use_tpu: feature extraction runs on CPU/GPU here; drop --use_tpu"),
      row("run_classifier.py", "negative_multi_worker_timeout",
          flags=["--multi_worker_timeout=-1"],
          expect=["--multi_worker_timeout=-1.0: must be a finite number of seconds"]),
      # An export's version without the export.
      row("run_classifier.py", "export_version_without_export_dir", True,
          flags=["--export_version=3"], expect=["--export_version=3", "needs --export_dir"]))


def gpus_asked_none_visible(ws, command, name):
  """This machine has no GPU (the CPU-only wheel): --num_gpus=64 is more than any has."""
  return _refused(ws, command, name, "--distribution_strategy=mirrored", "--num_gpus=64",
                  expect=["--num_gpus=64", "asks for 64 GPU(s), but TensorFlow sees",
                          "nvidia-smi", "tensorflow[and-cuda]"])


table(gpus_asked_none_visible,
      row("run_classifier.py", default=True), row("run_pretraining.py"))


# ---- a data folder with a file missing or wrong


def _spoiled_data(ws, command, name, split, content, *extra, line=None, names="file",
                  also=()):
  """A run whose data folder's `split` file is `content` (see _data_folder); the line
  names that file (at `line`), or its folder (names="folder"), and `also`."""
  folder = _data_folder(ws, command, name, **{split: content})
  path = os.path.join(folder, command.data_files[split][0])
  named = folder if names == "folder" else path if line is None else f"{path}:{line}"
  extra = ("--do_eval", *extra) if split == "dev" else extra  # a run that reads the dev file
  return _refused(ws, command, name, *extra, inputs=folder, expect=[named, *also])


def missing_data_dir(ws, command, name):
  folder = ws.path(name)
  return _refused(ws, command, name, inputs=folder, expect=[folder])


table(missing_data_dir, row("run_classifier.py"), row("run_ner.py"))


def missing_train_file(ws, command, name, split="train", names="file"):
  return _spoiled_data(ws, command, name, split, None, names=names)


table(missing_train_file,
      row("run_classifier.py"), row("run_ner.py", names="folder"),
      row("run_swag.py", "missing_val_file", split="dev"))


def empty_train_file(ws, command, name):
  return _spoiled_data(ws, command, name, "train", "")


table(empty_train_file,
      row("run_classifier.py", default=True), row("run_ner.py"), row("run_swag.py"))


def train_file_is_a_directory(ws, command, name, names="file"):
  return _spoiled_data(ws, command, name, "train", A_FOLDER, names=names)


table(train_file_is_a_directory,
      row("run_classifier.py"), row("run_ner.py", names="folder"), row("run_swag.py"))


def wrong_column_count(ws, command, name, content, line):
  return _spoiled_data(ws, command, name, "train", content, line=line)


table(wrong_column_count,
      row("run_classifier.py", default=True, line=3, content=MRPC_HEADER +
          "1\t1\t2\tthe cat .\tthe mat .\n0\t3\tonly three\n"),
      row("run_ner.py", line=2, content="EU NNP B-NP B-ORG\nrejects O\n\n"),
      row("run_swag.py", line=2, content=SWAG_HEADER + "v1,0,ctx,A man sits.,He,gold,x,y\n"))


def unknown_label(ws, command, name, content, line, label, split="train"):
  return _spoiled_data(ws, command, name, split, content, line=line, also=[label])


table(unknown_label,
      row("run_classifier.py", default=True, split="dev", line=2, label="7",
          content=MRPC_HEADER + "7\t1\t2\tthe cat .\tthe mat .\n"),
      row("run_ner.py", line=2, label="B-FOO",
          content="EU NNP B-NP B-ORG\nrejects VBZ B-VP B-FOO\n\n"),
      row("run_swag.py", line=2, label="4",
          content=SWAG_HEADER + "v1,0,ctx,A man sits.,He,gold,a,b,c,d,4\n"))


def non_utf8_row(ws, command, name, content, line=None, split="train", flags=()):
  """A Latin-1 byte in a row of the data; `line`: that row's, where the message names it."""
  return _spoiled_data(ws, command, name, split, content, *flags, line=line)


table(non_utf8_row,
      row("run_classifier.py", "non_utf8_dev_row", True, split="dev", line=3,
          content=MRPC_HEADER.encode() + b"1\t1\t2\tthe cat .\tthe mat .\n"
          b"0\t1\t2\tcaf\xe9 .\tthe mat .\n"),
      row("run_ner.py", default=True, line=2,
          content=b"EU NNP B-NP B-ORG\nCaf\xe9 NNP I-NP O\n\n"),
      row("run_tagger.py", line=2, flags=["--tag_column=2"],
          content=b"EU NNP B-NP B-ORG\nCaf\xe9 NNP I-NP O\n\n"),
      row("run_swag.py",
          content=SWAG_HEADER.encode() + b"v1,0,ctx,A man sits.,He,gold,caf\xe9,b,c,d,0\n"))


# ---- an input file missing or wrong


def missing_input(ws, command, name):
  path = ws.path(f"{name}-input.txt")
  return _refused(ws, command, name, inputs=path, expect=[path])


table(missing_input,
      row("create_pretraining_data.py"), row("extract_features.py"), row("create_vocab.py"))


def empty_input(ws, command, name):
  path = ws.write(f"{name}-input.txt", "")
  return _refused(ws, command, name, inputs=path, expect=[path])


table(empty_input,
      row("create_pretraining_data.py"), row("run_pretraining.py"), row("create_vocab.py"))


def directory_as_input(ws, command, name):
  path = ws.mkdir(f"{name}-input")
  return _refused(ws, command, name, inputs=path, expect=[path])


table(directory_as_input,
      row("create_pretraining_data.py"), row("run_pretraining.py"),
      row("extract_features.py"), row("create_vocab.py"))


def non_utf8_input(ws, command, name, content, line):
  """A Latin-1 byte on `line`."""
  path = ws.write(f"{name}-input.txt", content)
  return _refused(ws, command, name, inputs=path, expect=[f"{path}:{line}"])


table(non_utf8_input,
      row("create_pretraining_data.py", default=True, line=7,
          content=CORPUS.encode() + b"caf\xe9 au lait .\n"),
      row("extract_features.py", default=True, line=2,
          content=b"the cat sat .\ncaf\xe9 ||| au lait\n"),
      row("create_vocab.py", default=True, line=7,
          content=CORPUS.encode() + b"caf\xe9 au lait .\n"))


# ---- run_classifier.py


@case("run_classifier.py", default=True)
def unknown_label_with_verbose(ws):
  """--verbose: the same one error line, after the traceback a bug report needs."""
  d = _mrpc(ws, "cls-label-v", dev=["7\t1\t2\tthe cat .\tthe mat ."])
  return dict(argv=_classifier(ws, d, ws.path("cls-o7v"), "--do_eval", "--verbose"),
              expect=[os.path.join(d, "dev.tsv") + ":2", "7"], verbose=True)


@case("run_classifier.py")
def eval_only_output_dir_holds_other_model(ws):
  d = _mrpc(ws, "cls-foreign2", dev="good")
  out = ws.path("cls-o12")
  return dict(argv=_classifier(ws, d, out, "--do_eval"), expect=[out],
              setup=[{"foreign_checkpoint": out, "bert_config": ws.other_config}],
              absent=[os.path.join(out, "eval_results.txt")])


@case("run_classifier.py", default=True)
def eval_only_with_nothing_trained(ws):
  d = _mrpc(ws, "cls-untrained", dev="good")
  out = ws.path("cls-o26")
  return dict(argv=_classifier(ws, d, out, "--do_eval"),
              expect=["nothing trained to evaluate", f"--output_dir={out}", "--do_train"],
              absent=[os.path.join(out, "eval_results.txt")])


@case("run_classifier.py", default=True)
def eval_only_from_a_pretrained_encoder(ws):
  d = _mrpc(ws, "cls-untrained2", dev="good")
  out = ws.path("cls-o27")
  prefix = ws.path("cls-google", "bert_model.ckpt")
  return dict(argv=_classifier(ws, d, out, "--do_eval", f"--init_checkpoint={prefix}"),
              expect=[prefix, "no trained weights for output_bias"],
              setup=[{"google_checkpoint": prefix, "bert_config": ws.config}],
              absent=[os.path.join(out, "eval_results.txt")])


@case("run_classifier.py", default=True)
def truncated_init_checkpoint(ws):
  d = _mrpc(ws, "cls-trunc", train="good")
  out = ws.path("cls-o28")
  prefix = ws.path("cls-trunc-ckpt", "bert_model.ckpt")
  return dict(argv=_classifier(ws, d, out, "--do_train", f"--init_checkpoint={prefix}"),
              expect=[prefix, "truncated"],
              setup=[{"google_checkpoint": prefix, "bert_config": ws.config},
                     {"truncate": prefix + ".data-00000-of-00001", "by": 4096}],
              absent=[os.path.join(out, "ckpt-1.index")])


@case("run_classifier.py")
def config_missing_a_key(ws):
  d = _mrpc(ws, "cls-key", train="good")
  config = ws.write("cls-nokey.json", json.dumps(
      {k: v for k, v in TINY_CONFIG.items() if k != "num_attention_heads"}))
  return dict(argv=_classifier(ws, d, ws.path("cls-o29"), "--do_train", config=config),
              expect=[config, "num_attention_heads"])


@case("run_classifier.py")
def directory_as_vocab(ws):
  vocab = ws.mkdir("cls-vocab-dir")
  d = _mrpc(ws, "cls-vocab2", train="good")
  return dict(argv=_classifier(ws, d, ws.path("cls-o17"), "--do_train", vocab=vocab),
              expect=[vocab])


# Silent wrong answers and unhelpful messages.


def _tsv_task(ws, name, train):
  directory = ws.mkdir(name)
  ws.write(f"{name}/train.tsv", train)
  return ["--task_name=tsv", f"--data_dir={directory}", *ws.model_flags(),
          f"--output_dir={ws.path(name + '-out')}", "--max_seq_length=32",
          "--train_batch_size=2", "--num_train_epochs=1", "--do_train"]


@case("run_classifier.py", default=True)
def header_read_as_data(ws):
  # Without --has_header, "label" would become a third class of a two-class file.
  argv = _tsv_task(ws, "cls-header", "sentence\tlabel\nthe cat sat .\t0\na dog ran .\t1\n"
                   "the sun set .\t1\n")
  path = ws.path("cls-header", "train.tsv")
  return dict(argv=argv, expect=[path + ":1: the first row looks like a header",
                                 "'label' is not a number", "pass --has_header",
                                 "--has_header=false"],
              absent=[ws.path("cls-header-out", "checkpoint")])


@case("run_classifier.py")
def header_of_word_labels_read_as_data(ws):
  argv = _tsv_task(ws, "cls-header2", "text\tsentiment\nthe cat sat .\tpositive\n"
                   "a dog ran .\tnegative\nthe sun set .\tpositive\n")
  return dict(argv=argv, expect=[ws.path("cls-header2", "train.tsv") + ":1:",
                                 "'sentiment' is a column name", "--has_header=false"])


# ---- create_pretraining_data.py


@case("create_pretraining_data.py")
def vocab_without_mask_token(ws):
  path = ws.write("cpd-ok.txt", CORPUS)
  vocab = ws.write("cpd-vocab-nomask.txt",
                   "".join(l for l in ws.vocab_lines if l.strip() != "[MASK]"))
  out = ws.path("cpd-o7.tfrecord")
  return dict(argv=_cpd(ws, path, out, vocab=vocab), expect=[vocab, "[MASK]"], absent=[out])


@case("create_pretraining_data.py")
def output_is_a_directory(ws):
  path = ws.write("cpd-ok.txt", CORPUS)
  out = ws.mkdir("cpd-o9.tfrecord")
  return dict(argv=_cpd(ws, path, out), expect=[out])


# ---- run_pretraining.py


@case("run_pretraining.py")
def no_input_matches(ws):
  pattern = ws.path("rp-none", "*.tfrecord")
  return dict(argv=_pretrain(ws, pattern, ws.path("rp-o1")), expect=[pattern])


@case("run_pretraining.py", default=True)
def text_file_as_input(ws):
  path = ws.write("rp-text.tfrecord", CORPUS * 20)
  return dict(argv=_pretrain(ws, path, ws.path("rp-o4")), expect=[path])


@case("run_pretraining.py", default=True)
def wrong_feature_length(ws):
  path = ws.path("rp-len.tfrecord")
  setup = {"tfrecord": path, "features": _pretraining_features(input_ids=SEQ * 2),
           "count": 4}
  return dict(argv=_pretrain(ws, path, ws.path("rp-o5")), expect=[path, "input_ids"],
              setup=[setup])


@case("run_pretraining.py")
def missing_feature(ws):
  path = ws.path("rp-nofeature.tfrecord")
  setup = {"tfrecord": path, "features": _pretraining_features(drop=("next_sentence_labels",)),
           "count": 4}
  return dict(argv=_pretrain(ws, path, ws.path("rp-o6")),
              expect=[path, "next_sentence_labels"], setup=[setup])


@case("run_pretraining.py")
def truncated_last_record(ws):
  path = ws.path("rp-truncated.tfrecord")
  setup = {"tfrecord": path, "features": _pretraining_features(), "count": 8,
           "truncate_by": 30}
  out = ws.path("rp-o7")
  return dict(argv=_pretrain(ws, path, out), expect=[path], setup=[setup],
              absent=[os.path.join(out, "pretrained")])


@case("run_pretraining.py")
def non_utf8_config(ws):
  config = ws.write("rp-config-latin1.json",
                    json.dumps(TINY_CONFIG).encode().replace(b'"gelu"', b'"g\xe9lu"'))
  path, setup = _records_input(ws, "rp-ok-a", SEQ)
  return dict(argv=_pretrain(ws, path, ws.path("rp-o9"), config=config), expect=[config],
              setup=setup)


# ---- run_squad.py


@case("run_squad.py")
def missing_predict_file(ws):
  path = ws.path("sq-none.json")
  return dict(argv=_squad(ws, ws.path("sq-o1"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def empty_predict_file(ws):
  path = ws.write("sq-empty.json", "")
  return dict(argv=_squad(ws, ws.path("sq-o2"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def directory_as_train_file(ws):
  path = ws.mkdir("sq-dir.json")
  return dict(argv=_squad(ws, ws.path("sq-o3"), "--do_train", f"--train_file={path}"),
              expect=[path])


@case("run_squad.py", default=True)
def truncated_json(ws):
  path = ws.write("sq-trunc.json", _squad_json([GOOD_QA])[:-20])
  out = ws.path("sq-o4")
  return dict(argv=_squad(ws, out, "--do_predict", f"--predict_file={path}"), expect=[path],
              absent=[os.path.join(out, "predictions.json")])


@case("run_squad.py")
def non_utf8_json(ws):
  path = ws.write("sq-latin1.json", _squad_json([GOOD_QA]).encode().replace(b"cat", b"c\xe0t"))
  return dict(argv=_squad(ws, ws.path("sq-o5"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def data_not_a_list(ws):
  path = ws.write("sq-struct.json", json.dumps({"version": "1.1", "data": {"x": 1}}))
  return dict(argv=_squad(ws, ws.path("sq-o6"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def question_without_id(ws):
  path = ws.write("sq-noid.json", _squad_json([{"question": "who ?", "answers": []}]))
  return dict(argv=_squad(ws, ws.path("sq-o7"), "--do_predict", f"--predict_file={path}"),
              expect=[path, "id"])


@case("run_squad.py")
def training_question_without_answer(ws):
  path = ws.write("sq-noans.json", _squad_json([{"id": "q1", "question": "who ?"}]))
  return dict(argv=_squad(ws, ws.path("sq-o8"), "--do_train", f"--train_file={path}"),
              expect=[path, "q1"])


@case("run_squad.py", default=True)
def default_max_seq_length_over_positions(ws):
  path = ws.write("sq-ok.json", _squad_json([GOOD_QA]))
  argv = [*ws.model_flags(), f"--output_dir={ws.path('sq-o9')}", "--do_predict",
          f"--predict_file={path}"]   # run_squad's default max_seq_length is 384
  return dict(argv=argv, expect=["max_seq_length=384", "64"])


@case("run_squad.py", default=True)
def predict_into_a_classifier_output_dir(ws):
  # The classifier's checkpoint (same BERT size) must not be scored as SQuAD.
  path = ws.write("sq-ok.json", _squad_json([GOOD_QA]))
  out = ws.path("sq-o13")
  return dict(argv=_squad(ws, out, "--do_predict", f"--predict_file={path}"),
              expect=[f"--output_dir={out}", "different model"],
              setup=[{"foreign_checkpoint": out, "bert_config": ws.config}],
              absent=[os.path.join(out, "predictions.json"),
                      os.path.join(out, "eval_results.txt")])


@case("run_squad.py", default=True)
def answer_start_is_a_string(ws):
  qa = dict(GOOD_QA, answers=[{"text": "on the mat", "answer_start": "12"}])
  path = ws.write("sq-start.json", _squad_json([qa]))
  return dict(argv=_squad(ws, ws.path("sq-start-out"), "--do_train", f"--train_file={path}"),
              expect=[path + ": article 0 paragraph 0 question 0 (id q1)",
                      "\"answer_start\" is a str ('12'), not an integer"])


# ---- run_ner.py


@case("run_ner.py")
def last_column_of_other_tags(ws):
  d = _conll(ws, "ner-pos", train="EU NNP\nrejects VBZ\n\n")
  out = ws.path("ner-pos-out")
  return dict(argv=_ner(ws, d, out, "--do_train"), absent=[out],
              line=f"{d}/train.txt:1: the last column holds tags that are not IOB chunk "
                   "tags (B-X, I-X or O): 'NNP', 'VBZ'; run_ner.py learns entity tags (O, "
                   "B-<type>, I-<type>) from the last column; run_tagger.py --tag_column "
                   "learns other tags")


# ---- run_tagger.py


@case("run_tagger.py")
def tag_column_past_the_last(ws):
  d = _conll(ws, "tag-column", train="good")
  return dict(argv=_tagger(ws, d, ws.path("tag-o1"), "--do_train", "--tag_column=5"),
              expect=[os.path.join(d, "train.txt") + ":3", "--tag_column=5"])


@case("run_tagger.py")
def tag_outside_the_given_labels(ws):
  d = _conll(ws, "tag-labels", train="good")
  return dict(argv=_tagger(ws, d, ws.path("tag-o3"), "--do_train", "--tag_column=2",
                           "--labels=NNP,VBZ,NN,."),
              expect=[os.path.join(d, "train.txt") + ":5", "'JJ'", "--labels"])


@case("run_tagger.py")
def iob_on_a_column_of_other_tags(ws):
  """The part-of-speech column read as IOB chunks used to become all O: one label, a
  one-output model, F1 0.0 and exit 0."""
  d = _conll(ws, "tag-iob-pos", train="good", valid="good")
  out = ws.path("tag-iob-pos-out")
  return dict(argv=_tagger(ws, d, out, "--do_train", "--do_eval", "--tag_column=2",
                           "--iob"), absent=[out],
              line=f"{d}/train.txt:3: column 2 holds tags that are not IOB chunk tags (B-X, "
                   "I-X or O): 'NNP', 'VBZ', 'JJ', 'NN', '.'; pick the chunk column with "
                   "--tag_column (CoNLL-2003: 3 chunks, 4 entities), or drop --iob to learn "
                   "the tags as written")


_CONLL_DEV = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
              "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n")


@case("run_tagger.py")
def conll_without_a_byte_order_mark_reference(ws):
  d = _conll(ws, "tag-bom-ref", train="good", valid=_CONLL_DEV)
  return dict(argv=_tagger(ws, d, ws.path("tag-bom-ref-out"), "--do_train", "--do_eval",
                           "--iob"), works=True)


@case("run_tagger.py")
def conll_with_a_byte_order_mark(ws):
  """valid.txt saved by a Windows editor: "\\ufeff-DOCSTART-" used to be a word (one
  sentence too many) and -X- a label; the same run as without the mark, byte for byte."""
  d = _conll(ws, "tag-bom", train="good", valid="\ufeff" + _CONLL_DEV)
  out, reference = ws.path("tag-bom-out"), ws.path("tag-bom-ref-out")
  return dict(argv=_tagger(ws, d, out, "--do_train", "--do_eval", "--iob"), works=True,
              same=[(os.path.join(out, name), os.path.join(reference, name))
                    for name in ("eval_results.txt", "dev_predictions.txt")],
              lines_in={os.path.join(out, "eval_results.txt"): ["eval_sentences = 2"]})


# ---- extract_features.py


@case("extract_features.py")
def pair_on_type_vocab_size_one(ws):
  config = ws.write_config("ef-tv1.json", type_vocab_size=1)
  path = ws.write("ef-pair.txt", "the cat sat .\nthe cat ||| sat .\n")
  out = ws.path("ef-o11.jsonl")
  return dict(argv=_extract(ws, path, out, config=config),
              expect=[path + ":2: the line is a pair", "type_vocab_size 1"], absent=[out])


# ---- squad_evaluate.py


@case("squad_evaluate.py")
def data_file_without_questions(ws):
  data = ws.write("se-empty.json", json.dumps({"version": "1.1", "data": [
      {"title": "t", "paragraphs": [{"context": "a b c", "qas": []}]}]}))
  preds = ws.write("se-preds.json", "{}")
  return dict(argv=[data, preds], expect=[data + ": the SQuAD file has no questions"])


@case("squad_evaluate.py")
def nan_na_prob_thresh(ws):
  data = ws.write("se-data.json", _squad_json([GOOD_QA]))
  preds = ws.write("se-preds2.json", '{"q1": "on the mat"}')
  return dict(argv=[data, preds, "--na-prob-thresh=nan"],
              expect=["--na-prob-thresh=nan: must be a finite number"])


# ---- quickstart.py


@case("quickstart.py")
def zero_pretrain_steps(ws):
  out = ws.path("qs-out")
  return dict(argv=[f"--output_dir={out}", "--pretrain_steps=0"],
              expect=["--pretrain_steps=0: must be at least 1"], absent=[out])


@case("quickstart.py")
def nan_finetune_epochs(ws):
  out = ws.path("qs-out2")
  return dict(argv=[f"--output_dir={out}", "--finetune_epochs=nan"],
              expect=["--finetune_epochs=nan: must be a positive finite number"], absent=[out])


# ---- create_vocab.py


@case("create_vocab.py")
def malformed_config_template(ws):
  path = ws.write("cv-ok.txt", CORPUS * 5)
  template = ws.write("cv-template.json", '{"hidden_size": 32,,}')
  out = ws.path("cv-o6", "vocab.txt")
  return dict(argv=_vocab_args(ws, path, out, f"--bert_config_template={template}"),
              expect=[template], absent=[os.path.join(ws.path("cv-o6"), "bert_config.json"), out])


# ---- export_encoder.py


@case("export_encoder.py")
def seq_length_over_positions(ws):
  out = ws.path("ee-o4")
  argv = [a for a in _export(ws, out) if not a.startswith("--max_seq_length")]
  return dict(argv=argv + ["--seq_length=128"], expect=["seq_length=128", "64"],
              absent=[out])


@case("export_encoder.py")
def export_dir_is_a_file(ws):
  out = ws.write("ee-o6", "not a directory\n")
  return dict(argv=_export(ws, out), expect=[out], setup=[_google_checkpoint(ws, "ee-tiny")])


@case("export_encoder.py")
def normalize_with_hugging_face_format(ws):
  # Hugging Face's BertTokenizer has no NFC step: the export would tokenize differently.
  out = ws.path("ee-o9")
  argv = [a for a in _export(ws, out) if not a.startswith("--max_seq_length")]
  return dict(argv=argv + ["--format=huggingface", "--normalize=nfc"],
              expect=["--normalize=nfc", "--format=huggingface"], absent=[out],
              setup=[_google_checkpoint(ws, "ee-tiny")])


# ---- predict_litert.py (the refusals that need a model that loads, and a data file in
# the wrong format, are tests/litert/test_predictor.py's: here those decided before the runtime
# loads the model)

_LITERT_MRPC = {"format": "bert-litert", "format_version": 1, "task": "Mrpc",
                "task_name": "mrpc", "head": "classifier", "labels": ["0", "1"],
                "num_texts": 2, "max_seq_length": 32, "do_lower_case": True,
                "normalize": None, "vocab_file": "vocab.txt", "vocab_size": 2000,
                "inputs": ["input_ids", "input_mask", "segment_ids"],
                "outputs": ["label_id", "probabilities"],
                "models": {"int8": {"file": "model_int8.tflite"}}}


def _litert_folder(ws, name, describe=True):
  """A litert/ folder as an export leaves it, whose .tflite is not a model."""
  if describe:
    ws.write(f"{name}/model.json", json.dumps(_LITERT_MRPC))
  ws.write(f"{name}/vocab.txt", "".join(ws.vocab_lines))
  return ws.write(f"{name}/model_int8.tflite", b"not a flatbuffer" * 4)


def _predict_litert(ws, model, data, out, *extra):
  return [f"--model={model}", f"--data_dir={data}", f"--output_dir={out}", *extra]


@case("predict_litert.py")
def missing_model(ws):
  model, out = ws.path("pl-nowhere", "model_int8.tflite"), ws.path("pl-o1")
  return dict(argv=_predict_litert(ws, model, _mrpc(ws, "pl-data1"), out),
              expect=[f"--model={model}: no such file"], absent=[out])


@case("predict_litert.py")
def model_without_its_description(ws):
  model, out = _litert_folder(ws, "pl-bare", describe=False), ws.path("pl-o2")
  return dict(argv=_predict_litert(ws, model, _mrpc(ws, "pl-data2"), out),
              expect=[f"{model}: no model.json beside it"], absent=[out])


@case("predict_litert.py")
def model_of_another_task(ws):
  model, out = _litert_folder(ws, "pl-mrpc"), ws.path("pl-o3")
  return dict(argv=_predict_litert(ws, model, _mrpc(ws, "pl-data3"), out, "--task_name=sst2"),
              expect=[f"--model={model} is Mrpc's classifier (labels 0, 1), not "
                      "--task_name=sst2's Sst2"], absent=[out])


@case("predict_litert.py")
def model_that_is_not_a_model(ws):
  # Without ai-edge-litert installed the line says so instead; either names the model.
  model, out = _litert_folder(ws, "pl-broken"), ws.path("pl-o4")
  return dict(argv=_predict_litert(ws, model, _mrpc(ws, "pl-data4"), out),
              expect=[f"--model={model}"], absent=[out])


# ---- tools/litert_accuracy.py (docs/serving.md's accuracy table)

_LITERT_ACCURACY = "tools/litert_accuracy.py"


@case(_LITERT_ACCURACY)
def missing_litert_dir(ws):
  folder = ws.path("la-nowhere")
  return dict(argv=[f"--litert_dir={folder}", f"--data_dir={_mrpc(ws, 'la-data1', dev='good')}",
                    "--task_name=mrpc"], line=f"--litert_dir={folder}: no such folder")


@case(_LITERT_ACCURACY)
def litert_model_of_another_task(ws):
  model = _litert_folder(ws, "la-mrpc")
  return dict(argv=[f"--litert_dir={os.path.dirname(model)}",
                    f"--data_dir={_mrpc(ws, 'la-data2', dev='good')}", "--task_name=sst2"],
              line=f"{model} is Mrpc's classifier (labels 0, 1), not --task_name=sst2's Sst2 "
                   "(labels 0, 1); use that task's model")


# ---- borders: export versions, recorded heads, the lock, TF_CONFIG, empty label sets


def _saved_model_stub(ws, folder):
  """A folder that stands for an exported version (its content must survive)."""
  ws.write(f"{folder}/saved_model.pb", "version already served\n")
  return ws.path(folder)


@case("run_classifier.py", default=True)
def export_version_that_exists(ws):
  d = _mrpc(ws, "cls-ev1", train="good")
  out, export = ws.path("cls-ev1-out"), ws.path("cls-ev1-export")
  _saved_model_stub(ws, "cls-ev1-export/ids/1")
  _saved_model_stub(ws, "cls-ev1-export/ids/2")
  return dict(argv=_classifier(ws, d, out, "--do_train", f"--export_dir={export}",
                               "--export_version=1"),
              expect=[f"--export_version=1: {export}/ids/1 already exists (versions there: "
                      "1, 2)", "--overwrite_export"],
              absent=[out, f"{export}/text"],
              kept={f"{export}/ids/{v}/saved_model.pb": "version already served\n"
                    for v in (1, 2)})


@case("run_classifier.py")
def unversioned_export_over_versions(ws):
  d = _mrpc(ws, "cls-ev0", train="good")
  out, export = ws.path("cls-ev0-out"), ws.path("cls-ev0-export")
  _saved_model_stub(ws, "cls-ev0-export/ids/4")
  return dict(argv=_classifier(ws, d, out, "--do_train", f"--export_dir={export}",
                               "--overwrite_export"),
              expect=[f"--export_dir={export}: holds versioned exports (ids/ 4)"],
              absent=[out],
              kept={f"{export}/ids/4/saved_model.pb": "version already served\n"})


@case("run_classifier.py", default=True)
def run_lock_is_a_directory(ws):
  d = _mrpc(ws, "cls-lockdir", train="good")
  out = ws.mkdir("cls-lockdir-out")
  lock = ws.mkdir("cls-lockdir-out/.bert-run.lock")
  return dict(argv=_classifier(ws, d, out, "--do_train"),
              expect=[f"its run lock {lock} is a directory, not a lock file"],
              absent=[os.path.join(out, "checkpoint")])


def _recorded_head(ws, name, head_info, num_labels=2):
  """Our checkpoint of a 2-way classifier recording `head_info` (a string)."""
  return {"foreign_checkpoint": ws.path(name), "bert_config": ws.config,
          "num_labels": num_labels, "head_info": head_info}


def _hf_export(ws, checkpoint, out):
  return [*ws.model_flags(), f"--init_checkpoint={checkpoint}", f"--export_dir={out}",
          "--format=huggingface"]


@case("export_encoder.py")
def recorded_head_info_not_json(ws):
  out = ws.path("ee-hi1-out")
  return dict(argv=_hf_export(ws, ws.path("ee-hi1"), out), absent=[out],
              setup=[_recorded_head(ws, "ee-hi1", '{task: "MRPC"}')],
              expect=[ws.path("ee-hi1", "ckpt-7") + ": its recorded head_info is not valid "
                      "JSON (Expecting property name enclosed in double quotes"])


@case("export_encoder.py")
def recorded_head_info_a_list(ws):
  out = ws.path("ee-hi2-out")
  return dict(argv=_hf_export(ws, ws.path("ee-hi2"), out), absent=[out],
              setup=[_recorded_head(ws, "ee-hi2", '["classifier", "0", "1"]')],
              expect=[ws.path("ee-hi2", "ckpt-7") + ": its recorded head_info is a JSON "
                      "list, not an object"])


@case("export_encoder.py")
def recorded_head_info_without_labels(ws):
  out = ws.path("ee-hi3-out")
  return dict(argv=_hf_export(ws, ws.path("ee-hi3"), out), absent=[out],
              setup=[_recorded_head(ws, "ee-hi3", '{"task": "MRPC", "head": "classifier"}')],
              expect=[ws.path("ee-hi3", "ckpt-7") + ": its recorded head_info has no "
                      '"labels" for its classifier head'])


@case("export_encoder.py")
def recorded_head_info_repeating_a_label(ws):
  """The Hugging Face export said "the run's label list repeats a label: ['1', '1']",
  naming neither the checkpoint nor that its record was altered."""
  out = ws.path("ee-hi6-out")
  info = '{"head": "classifier", "labels": ["1", "1"], "task": "tsv"}'
  return dict(argv=_hf_export(ws, ws.path("ee-hi6"), out), absent=[out],
              setup=[_recorded_head(ws, "ee-hi6", info)],
              line=ws.path("ee-hi6", "ckpt-7") + ": its recorded head_info lists the label "
                   f"'1' twice (a run never records that): {info}; the checkpoint was not "
                   "written by this project's runs or was altered")


@case("export_encoder.py")
def recorded_head_of_three_labels_on_a_two_way_head(ws):
  out, ckpt = ws.path("ee-hi4-out"), ws.path("ee-hi4")
  info = '{"head": "classifier", "labels": ["a", "b", "c"], "task": "MNLI"}'
  return dict(argv=_hf_export(ws, ckpt, out), absent=[out],
              setup=[_recorded_head(ws, "ee-hi4", info)],
              expect=[f"--init_checkpoint={ckpt}: its recorded head_info says MNLI's "
                      "classifier (labels a, b, c), but its weights do not hold that head "
                      "(output_bias: [2] in the checkpoint, [3] for that head)",
                      "the recorded head_info is wrong (the config is right)"])


@case("export_encoder.py")
def recorded_head_of_another_kind(ws):
  out, ckpt = ws.path("ee-hi5-out"), ws.path("ee-hi5")
  info = '{"head": "squad", "task": "SQuAD"}'
  return dict(argv=_hf_export(ws, ckpt, out), absent=[out],
              setup=[_recorded_head(ws, "ee-hi5", info)],
              expect=[f"--init_checkpoint={ckpt}: its recorded head_info says SQuAD's "
                      "squad, but its weights do not hold that head",
                      "the recorded head_info is wrong"])


@case("run_classifier.py")
def init_checkpoint_with_head_info_not_json(ws):
  d = _mrpc(ws, "cls-hi", train="good")
  out = ws.path("cls-hi-out")
  return dict(argv=_classifier(ws, d, out, "--do_train",
                               f"--init_checkpoint={ws.path('cls-hi-ckpt')}"),
              setup=[_recorded_head(ws, "cls-hi-ckpt", "{")],
              expect=[ws.path("cls-hi-ckpt", "ckpt-7") + ": its recorded head_info is not "
                      "valid JSON"], absent=[os.path.join(out, "checkpoint")])


_CLUSTER = {"worker": ["localhost:23456", "localhost:23457"]}


def _tf_config_case(ws, name, tf_config, expect):
  d = _mrpc(ws, f"cls-tfc-{name}", train="good")
  out = ws.path(f"cls-tfc-{name}-out")
  raw = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
  return dict(argv=_classifier(ws, d, out, "--do_train",
                               "--distribution_strategy=multi_worker_mirrored"),
              env={"TF_CONFIG": raw}, expect=["TF_CONFIG: ", *expect], absent=[out])


@case("run_classifier.py", default=True)
def tf_config_index_out_of_range(ws):
  return _tf_config_case(ws, "range", {"cluster": _CLUSTER,
                                       "task": {"type": "worker", "index": 3}},
                         ["task index 3 is out of range: the cluster's 'worker' job has 2 "
                          "address(es), so the index is 0 to 1"])


@case("run_classifier.py")
def tf_config_negative_index(ws):
  return _tf_config_case(ws, "negative", {"cluster": _CLUSTER,
                                          "task": {"type": "worker", "index": -1}},
                         ["task index -1 is out of range"])


@case("run_classifier.py")
def tf_config_unknown_task_type(ws):
  return _tf_config_case(ws, "type", {"cluster": _CLUSTER,
                                      "task": {"type": "wroker", "index": 0}},
                         ["task type 'wroker' is not one of chief, worker, evaluator"])


@case("run_classifier.py")
def tf_config_not_json(ws):
  return _tf_config_case(ws, "json", '{"cluster": ', ["not valid JSON"])


@case("run_classifier.py")
def tf_config_without_cluster(ws):
  return _tf_config_case(ws, "nocluster", {"task": {"type": "worker", "index": 0}},
                         ['no "cluster" object'])


@case("run_classifier.py")
def tf_config_task_not_in_cluster(ws):
  return _tf_config_case(ws, "chief", {"cluster": _CLUSTER,
                                       "task": {"type": "chief", "index": 0}},
                         ["task type 'chief' has no job in the cluster (jobs: worker)"])


@case("run_classifier.py")
def tf_config_address_without_port(ws):
  return _tf_config_case(ws, "port", {"cluster": {"worker": ["localhost"]},
                                      "task": {"type": "worker", "index": 0}},
                         ["cluster job 'worker' is [\"localhost\"], not a list of host:port"])


@case("run_multilabel.py")
def training_data_without_any_label(ws):
  d = ws.mkdir("ml-nolabel")
  ws.write("ml-nolabel/labels.txt", "PER\nLOC\n")
  train = ws.write("ml-nolabel/train.tsv", "the cat sat .\t\nthe mat .\t\n")
  out = ws.path("ml-nolabel-out")
  return dict(argv=[f"--data_dir={d}", *ws.model_flags(), "--do_train",
                    "--max_seq_length=32", f"--output_dir={out}"],
              expect=[f"{train}: no line of the training data has a label"], absent=[out])


@case("run_multilabel.py")
def multilabel_export_version_that_exists(ws):
  d = ws.mkdir("ml-ev")
  ws.write("ml-ev/labels.txt", "PER\nLOC\n")
  ws.write("ml-ev/train.tsv", "the cat sat .\tPER\nthe mat .\t\n")
  out, export = ws.path("ml-ev-out"), ws.path("ml-ev-export")
  _saved_model_stub(ws, "ml-ev-export/text/2")
  return dict(argv=[f"--data_dir={d}", *ws.model_flags(), "--do_train",
                    "--max_seq_length=32", f"--output_dir={out}", f"--export_dir={export}",
                    "--export_version=2"],
              expect=[f"--export_version=2: {export}/text/2 already exists"], absent=[out],
              kept={f"{export}/text/2/saved_model.pb": "version already served\n"})


# ---- label lists that name a label twice; exports over a file, or after a killed export


@case("run_multilabel.py")
def labels_file_lists_a_label_twice(ws):
  d = ws.mkdir("ml-twice")
  labels = ws.write("ml-twice/labels.txt", "PER\nLOC\nPER\n")
  ws.write("ml-twice/train.tsv", "the cat sat .\tPER\n")
  out = ws.path("ml-twice-out")
  return dict(argv=[f"--data_dir={d}", *ws.model_flags(), "--do_train",
                    "--max_seq_length=32", f"--output_dir={out}"], absent=[out],
              line=f"{labels}:3: label 'PER' is listed twice (first on line 1)")


@case("run_classifier.py")
def label_list_given_twice(ws):
  argv = _tsv_task(ws, "cls-twice", "good film\tpos\nbad film\tneg\n")
  return dict(argv=argv + ["--has_header=false", "--label_list=pos,neg,pos"],
              absent=[ws.path("cls-twice-out")],
              line="--label_list=pos,neg,pos: 'pos' is given 2 times; each label once, in "
                   "label-id order")


@case("run_classifier.py", default=True)
def export_version_over_a_file_with_overwrite(ws):
  """exp/ids/1 a regular file and --overwrite_export: the run used to exit 0 with the
  user's file moved to exp/ids/.1.tmp-*."""
  d = _mrpc(ws, "cls-evf", train="good")
  out, export = ws.path("cls-evf-out"), ws.path("cls-evf-export")
  ws.write("cls-evf-export/ids/1", "a user's notes, not an export\n")
  return dict(argv=_classifier(ws, d, out, "--do_train", f"--export_dir={export}",
                               "--export_version=1", "--overwrite_export"),
              line=f"--export_version=1: {export}/ids/1 is a file, not an exported version "
                   "(a folder); it is left as it is, even with --overwrite_export: move it "
                   "away, or choose another version number",
              absent=[out, f"{export}/text"], no_temporaries=[export],
              kept={f"{export}/ids/1": "a user's notes, not an export\n"})


def _stale_export(ws, name, versions=(1,)):
  """An export folder with versions (stubs) and what exports killed with SIGKILL leave
  in it, plus a user's own file whose name only looks like a temporary."""
  for version in versions:
    _saved_model_stub(ws, f"{name}/ids/{version}")
  ws.write(f"{name}/ids/.3.tmp-0123abcd/variables/variables.index", "half-written\n")
  ws.write(f"{name}/text/.3.tmp-4567cdef/saved_model.pb", "half-written\n")
  ws.write(f"{name}/ids/.3.tmp-notes", "the user's own file\n")
  return ws.path(name)


@case("run_classifier.py", default=True)
def export_after_a_killed_export_removes_its_temporaries(ws):
  d = _mrpc(ws, "cls-evk", train="good")
  out = ws.path("cls-evk-out")
  export = _stale_export(ws, "cls-evk-export")
  return dict(argv=_classifier(ws, d, out, "--do_train", f"--export_dir={export}",
                               "--export_version=2"), works=True,
              gone=[f"{export}/ids/.3.tmp-0123abcd", f"{export}/text/.3.tmp-4567cdef"],
              kept={f"{export}/ids/1/saved_model.pb": "version already served\n",
                    f"{export}/ids/.3.tmp-notes": "the user's own file\n"},
              exists=[f"{export}/ids/2/saved_model.pb", f"{export}/text/2/saved_model.pb"],
              no_temporaries=[export])


@case("run_classifier.py")
def unversioned_export_after_a_killed_one_removes_its_temporary(ws):
  d = _mrpc(ws, "cls-ev0k", train="good")
  out, export = ws.path("cls-ev0k-out"), ws.path("cls-ev0k-exports/export")
  stale = ws.write("cls-ev0k-exports/.export.tmp-89abcdef/saved_model.pb", "half-written\n")
  mine = ws.write("cls-ev0k-exports/.export.tmp-notes", "the user's own file\n")
  return dict(argv=_classifier(ws, d, out, "--do_train", f"--export_dir={export}"),
              works=True, gone=[os.path.dirname(stale)],
              exists=[f"{export}/saved_model.pb", f"{export}/ids/saved_model.pb"],
              kept={mine: "the user's own file\n"})


# ---- tools/linear_probe.py: the scripts' rules (run_classifier's column flags)

_PROBE = "tools/linear_probe.py"


def _probe_args(ws, data_dir, *extra):
  return [*ws.model_flags(), f"--data_dir={data_dir}", "--max_seq_length=16", *extra]


def _probe_data(ws, name, train, dev=None, header="text\tlabel"):
  for split, rows in (("train", train), ("dev", dev if dev is not None else train)):
    ws.write(f"{name}/{split}.tsv",
             "".join(f"{row}\n" for row in ([header] if header else []) + rows))
  return ws.path(name)


_PROBE_ROWS = ["good film\tpos", "bad film\tneg", "a good plot\tpos", "the bad actor\tneg"]


@case(_PROBE, default=True)
def one_class(ws):
  """Every row one label: the probe printed 1.0000 for all four features."""
  d = _probe_data(ws, "lp-one", [f"film {i}\tpos" for i in range(19)])
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=text",
                               "--label_column=label"),
              line=f"{d}/train.tsv: every row has the label 'pos'; a probe needs two classes "
                   "or more (with one, every feature scores 1.0 whatever the encoder knows)")


@case(_PROBE, default=True)
def header_read_as_data(ws):
  """Without --has_header the header row was trained on ("label" a class of its own)."""
  d = _probe_data(ws, "lp-header", _PROBE_ROWS)
  return dict(argv=_probe_args(ws, d),
              line=f"{d}/train.tsv:1: the first row looks like a header (its label 'label' "
                   "is a column name and occurs in no other row); pass --has_header if it is "
                   "one, or --has_header=false if the first row really is data")


@case(_PROBE)
def header_given_false_is_data(ws):
  d = _probe_data(ws, "lp-nohead", _PROBE_ROWS, header=None)
  return dict(argv=_probe_args(ws, d, "--has_header=false"), works=True,
              stdout_first="linear probe, dev accuracy (4 rows; trained on 4), encoder random "
                           "weights (seed 1):")


@case(_PROBE, default=True)
def home_in_the_data_dir(ws):
  """--data_dir=~/d: "~/d/train.tsv: no such file" (no shell expands it after `=`)."""
  _probe_data(ws, "lp-home/d", _PROBE_ROWS)
  return dict(argv=_probe_args(ws, "~/d", "--has_header", "--text_a_column=text",
                               "--label_column=label"),
              env={"HOME": ws.path("lp-home")}, works=True,
              stdout_first="linear probe, dev accuracy (4 rows; trained on 4), encoder random "
                           "weights (seed 1):")


@case(_PROBE)
def every_dev_score_the_same(ws):
  """A regression dev set of equal scores: nan four times, exit 0."""
  d = _probe_data(ws, "lp-flat", ["good film\t1.0", "bad film\t3.5", "a plot\t2.0"],
                  dev=["good plot\t2.5", "bad plot\t2.5"], header="text\tscore")
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=text",
                               "--label_column=score", "--regression"),
              line=f"{d}/dev.tsv: Pearson is undefined: every dev score is the same (2.5 on "
                   "all 2 rows); the probe needs scores that differ")


@case(_PROBE)
def every_training_score_the_same(ws):
  d = _probe_data(ws, "lp-flat-train", ["good film\t1.0", "bad film\t1.0"],
                  dev=["good plot\t2.5", "bad plot\t1.5"], header="text\tscore")
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=text",
                               "--label_column=score", "--regression"),
              line=f"{d}/train.tsv: Pearson is undefined: every training score is the same "
                   "(1 on all 2 rows); the probe needs scores that differ")


@case(_PROBE)
def missing_column(ws):
  d = _probe_data(ws, "lp-column", _PROBE_ROWS)
  return dict(argv=_probe_args(ws, d, "--has_header", "--text_a_column=review",
                               "--label_column=label"),
              line=f"{d}/train.tsv:1: no column named 'review' in the header (text, label)")


# ---- tools/tagging_baselines.py, tools/conll_entity_types.py, tools/pretraining_curve.py


@case("tools/tagging_baselines.py")
def iob_on_a_column_of_other_tags(ws):
  d = _conll(ws, "tb-pos", train="good", valid="good")
  return dict(argv=[f"--data_dir={d}", "--tag_column=2", "--iob"],
              line=f"{d}/train.txt:3: column 2 holds tags that are not IOB chunk tags (B-X, "
                   "I-X or O): 'NNP', 'VBZ', 'JJ', 'NN', '.'; pick the chunk column with "
                   "--tag_column (CoNLL-2003: 3 chunks, 4 entities), or drop --iob to score "
                   "the tags as written")


@case("tools/tagging_baselines.py")
def tag_column_of_the_words(ws):
  d = _conll(ws, "tb-words", train="good", valid="good")
  return dict(argv=[f"--data_dir={d}", "--tag_column=1"],
              line="--tag_column=1: the tags are column 2 or later (column 1 holds the words)")


@case("tools/tagging_baselines.py")
def home_in_the_data_dir(ws):
  _conll(ws, "tb-home/d", train="good", valid="good")
  return dict(argv=["--data_dir=~/d", "--tag_column=4", "--iob"],
              env={"HOME": ws.path("tb-home")}, works=True,
              stdout_first="majority accuracy 0.4286  precision 0.0000  recall 0.0000  "
                           "f1 0.0000")


@case("tools/conll_entity_types.py")
def no_entity_tag(ws):
  plain = "EU NNP B-NP O\nrejects VBZ B-VP O\n\n"
  d = _conll(ws, "cet-none", train=plain, valid=plain)
  ws.write("cet-none/test.txt", plain)
  out = ws.path("cet-none-out")
  return dict(argv=[d, out], absent=[out],
              line=f"{d}/train.txt: no entity tag (every tag is O); a multi-label set needs "
                   "entity types to learn")


@case("tools/conll_entity_types.py")
def one_argument(ws):
  return dict(argv=[ws.path("cet-one")],
              line="expected two arguments, CONLL_DIR OUTPUT_DIR (got 1); usage: python "
                   "tools/conll_entity_types.py ../shared/data/conll2003 /tmp/conll_types")


@case("tools/conll_entity_types.py")
def home_in_both_folders(ws):
  d = _conll(ws, "cet-home/d", train="good", valid="good")
  ws.write("cet-home/d/test.txt", "Peter NNP B-NP B-PER\n\n")
  return dict(argv=["~/d", "~/out"], env={"HOME": ws.path("cet-home")}, works=True,
              contains={ws.path("cet-home/out/labels.txt"): "MISC\nORG\nPER\n"})


@case("tools/pretraining_curve.py")
def run_without_curves(ws):
  run = ws.mkdir("pc-none/run")
  out = ws.path("pc-none/curve.svg")
  return dict(argv=[f"--output={out}", f"mine={run}"], absent=[out],
              line=f"{run}: no train/ folder of TensorBoard events (is it a "
                   "run_pretraining.py --output_dir?)")


@case("tools/pretraining_curve.py")
def zero_seconds_a_step(ws):
  run = ws.mkdir("pc-zero/run")
  out = ws.path("pc-zero/curve.svg")
  return dict(argv=[f"--output={out}", f"mine={run}:0"], absent=[out],
              line=f"'mine={run}:0': '0' seconds a step: must be a positive number")


@case("tools/pretraining_curve.py")
def home_in_the_paths(ws):
  home = ws.mkdir("pc-home")
  return dict(argv=["--output=~/curve.svg", "mine=~/run"], env={"HOME": home}, works=True,
              setup=[{"scalars": os.path.join(home, "run", "train"),
                      "tag": "masked_lm_accuracy", "values": [0.1, 0.2, 0.3]}],
              exists=[os.path.join(home, "curve.svg")])


# ---- every batch-size flag of every script and tool refuses 0 and negatives


def _batch_size_flags():
  """{script: [its flags named *batch_size*]} from docs/FLAGS.md (tests/project/test_docs.py keeps
  it current), and the tools' batch-size flags (none elsewhere: test_batch_size_flags)."""
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    text = handle.read().split("\n## Path flags\n", 1)[0]
  found = {}
  for section in text.split("\n## ")[1:]:
    script = section.split("\n", 1)[0].strip()
    rows = re.findall(r"^\| `--([a-z_]+)` \|[^|]*\| (yes)? *\|", section, re.MULTILINE)
    found[script] = ([name for name, _ in rows if "batch_size" in name],
                     [name for name, required in rows if required])
  found[_PROBE] = (["batch_size"], ["bert_config_file", "vocab_file", "data_dir"])
  found["tools/litert_accuracy.py"] = (["batch_size"], ["litert_dir", "data_dir", "task_name"])
  return found


BATCH_SIZE_FLAGS = _batch_size_flags()


def _register_batch_size_cases():
  for script, (names, required) in BATCH_SIZE_FLAGS.items():
    for name in names:
      for value in (0, -2):
        def builder(ws, script=script, name=name, value=value, required=required):
          out = ws.path(f"bs-{script[:-3].replace('/', '-')}-{name}-{value}")
          argv = [f"--{flag}={'MRPC' if flag == 'task_name' else out}" for flag in required]
          return dict(argv=argv + [f"--{name}={value}"], absent=[out],
                      line=f"--{name}={value}: must be at least 1")
        builder.__name__ = f"{name}_{'zero' if value == 0 else 'negative'}"
        case(script)(builder)


_register_batch_size_cases()


# ---- paths as people type them: every form of every path flag gives the absolute
# path's result. Per family (a script, and the flags and data of one small run): the
# absolute-path reference run first, then the same run with the paths typed another way,
# in one process (cli_harness); every output it writes must be byte for byte the
# reference's. The slow matrix: each form applied to every path flag of the family at
# once (one run per form and family), and for the classifier also every (flag, form) pair
# alone; the checkpoint as a folder, a ckpt-N prefix and its .index file. Lists and globs
# are typed item by item in the form. test_every_path_flag_has_a_path_forms_family holds
# the families to every path flag of every script. Default: a few cheap forms.

_FORM_FOLDERS = {"spaces": "with space", "non_ascii": "donn\u00e9es \u6570\u636e",
                 "symlink": "link"}
PATH_FORMS = ("relative", "dot", "dotdot", "trailing_slash", "home", "spaces", "non_ascii",
              "symlink")
# The default suite's subset (about 2 s a run on 2 busy cores): the form people type most
# (`--init_checkpoint=run` from the folder that holds it), `../`, `~`, and a folder name
# with a space and non-ASCII letters.
DEFAULT_PATH_FORMS = ("relative", "dotdot", "home", "non_ascii")
# Outputs that are not the run's results: checkpoints (their bytes hold the object graph
# and the saving order), TensorBoard events (wall-clock times), the lock, logs.
_NOT_COMPARED = re.compile(r"(^|/)(ckpt-\d+\.|checkpoint$|events\.out\.|\.bert-run\.lock$|"
                           r"feature_cache/|[^/]*\.log$)")


def _classifier_materials(ws, folder):
  _mrpc(ws, f"{folder}/data", train="good", dev="good")


def _extract_materials(ws, folder):
  ws.write(f"{folder}/data/input.txt", "the cat sat on the mat .\nit was a good day .\n")


def _squad_materials(ws, folder):
  context = "The cat sat on the mat in the house of the old man ."
  second = {"id": "q2", "question": "whose house was it ?",
            "answers": [{"text": "the old man", "answer_start": context.index("the old man")}]}
  ws.write(f"{folder}/data/train.json", _squad_json([GOOD_QA, second]))
  ws.write(f"{folder}/data/dev.json", _squad_json([GOOD_QA, second]))


def _conll_materials(ws, folder):
  _conll(ws, f"{folder}/data", train="good", valid="good")
  with open(ws.path(folder, "data", "train.txt"), encoding="utf-8") as handle:
    ws.write(f"{folder}/data/test.txt", handle.read())


def _swag_materials(ws, folder):
  _swag(ws, f"{folder}/data", train="good", val="good")


def _multilabel_materials(ws, folder):
  ws.write(f"{folder}/data/labels.txt", "PER\nLOC\n")
  rows = "the cat sat .\tPER\nthe mat in paris .\tLOC,PER\na good day .\t\n"
  for split in ("train", "dev", "test"):
    ws.write(f"{folder}/data/{split}.tsv", rows)


def _text_materials(ws, folder):
  """Two raw-text files for create_pretraining_data.py and create_vocab.py."""
  ws.write(f"{folder}/data/a.txt", "the cat sat on the mat .\nit was a good day .\n\n"
           "a man went home .\nshe said no .\nthe sun set .\n")
  ws.write(f"{folder}/data/b.txt", "the dog ran in the house .\nthe old man sat .\n\n"
           "it was a cat .\nthe mat was good .\n")


def _squad_eval_materials(ws, folder):
  ws.write(f"{folder}/data/dev.json", _squad_json([GOOD_QA]))
  ws.write(f"{folder}/data/predictions.json", '{"q1": "the mat"}')
  ws.write(f"{folder}/data/null_odds.json", '{"q1": 0.25}')


_MRPC_TEST = ("Index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
              "0\t1\t2\tthe cat sat on the mat .\tthe cat is on the mat .\n"
              "1\t3\t4\ta man went home .\tshe said no .\n")


def _litert_materials(ws, folder):
  """MRPC test rows and a tiny classifier's float32 LiteRT export (export/litert/), made
  once per workspace in this process (TensorFlow) and copied into each folder."""
  _mrpc(ws, f"{folder}/data")
  ws.write(f"{folder}/data/test.tsv", _MRPC_TEST)
  made = ws.path("litert-export")
  if not os.path.isdir(made):
    from bert import heads  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
    from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
    from bert.formats import serving  # pylint: disable=g-import-not-at-top
    from bert.training import model_config  # pylint: disable=g-import-not-at-top
    model, _ = heads.build_classifier_model(model_config.load_bert_config(ws.config), 2)
    serving.export_classifier(made, model, ["0", "1"], litert=litert_metadata.request(
        "float32", {"task": "Mrpc", "task_name": "mrpc", "head": "classifier",
                    "labels": ["0", "1"], "num_texts": 2, "max_seq_length": 32,
                    "do_lower_case": True, "normalize": None}, ws.vocab))
  import shutil  # pylint: disable=g-import-not-at-top
  shutil.copytree(made, ws.path(folder, "export"))


def _pretraining_records(base):
  """Harness setup: the TFRecords of the pretraining family, in base/records/."""
  return [{"tfrecord": os.path.join(base, "records", name), "features": _pretraining_features(),
           "count": count} for name, count in (("a.tfrecord", 4), ("b.tfrecord", 4),
                                               ("eval.tfrecord", 2))]


_MODEL_FLAGS = {"vocab_file": ("model/vocab.txt", False),
                "bert_config_file": ("model/bert_config.json", False),
                "init_checkpoint": ("run", True)}
_TRAIN = ["--do_train", "--train_batch_size=2", "--num_train_epochs=1"]


@dataclasses.dataclass(frozen=True)
class FormFamily:
  """One small run of `script` whose path flags are typed in every form.

  flags: {flag: (path in the run's folder, is a folder)}; "{name}" is the case's own name,
  a comma a list, * a glob; a key "<name>" is a positional argument. outputs: the outputs
  compared with the reference's (a folder: every file in it but _NOT_COMPARED's).
  records: the run needs base/records/ (TFRecords, written by the harness).
  default_forms: the forms of the default suite."""
  script: str
  materials: object
  flags: dict
  extra: tuple
  outputs: tuple
  records: bool = False
  default_forms: tuple = ()
  every_flag_alone: bool = False


_FORM_FAMILIES = {
    # Evaluation from one of our runs, every flag also typed alone in every form.
    "classifier": FormFamily(
        "run_classifier.py", _classifier_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        ("--task_name=MRPC", "--do_eval", "--max_seq_length=32", "--eval_batch_size=2"),
        ("out-{name}/eval_results.txt",), default_forms=DEFAULT_PATH_FORMS,
        every_flag_alone=True),
    # A run that trains and exports.
    "classifier_export": FormFamily(
        "run_classifier.py", _classifier_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True),
         "export_dir": ("exp-{name}", True)},
        ("--task_name=MRPC", *_TRAIN, "--do_eval", "--max_seq_length=32",
         "--eval_batch_size=2"), ("out-{name}", "exp-{name}")),
    "extract": FormFamily(
        "extract_features.py", _extract_materials,
        {"input_file": ("data/input.txt", False), "output_file": ("out-{name}.jsonl", False),
         **_MODEL_FLAGS},
        ("--max_seq_length=16", "--layers=-1"), ("out-{name}.jsonl",),
        default_forms=("relative",)),
    "export": FormFamily(
        "export_encoder.py", lambda ws, folder: None,
        {**_MODEL_FLAGS, "export_dir": ("out-{name}", True)},
        ("--format=huggingface",), ("out-{name}",)),
    "squad": FormFamily(
        "run_squad.py", _squad_materials,
        {"train_file": ("data/train.json", False), "predict_file": ("data/dev.json", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True), "export_dir": ("exp-{name}", True)},
        (*_TRAIN, "--do_predict", "--max_seq_length=48", "--doc_stride=16",
         "--max_query_length=12", "--predict_batch_size=2"), ("out-{name}", "exp-{name}")),
    "ner": FormFamily(
        "run_ner.py", _conll_materials,
        {"data_dir": ("data", True), "train_file": ("data/train.txt", False),
         "dev_file": ("data/valid.txt", False), "test_file": ("data/test.txt", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        (*_TRAIN, "--do_eval", "--do_predict", "--max_seq_length=16", "--doc_stride=8"),
        ("out-{name}",)),
    # The feature-based mode: its activation cache.
    "ner_feature": FormFamily(
        "run_ner.py", _conll_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True),
         "feature_cache_dir": ("cache-{name}", True)},
        (*_TRAIN, "--do_eval", "--max_seq_length=16", "--doc_stride=8", "--mode=feature",
         "--feature_layers=last", "--lstm_units=8", "--feature_batch_size=2"),
        ("out-{name}", "cache-{name}")),
    "tagger": FormFamily(
        "run_tagger.py", _conll_materials,
        {"data_dir": ("data", True), "train_file": ("data/train.txt", False),
         "dev_file": ("data/valid.txt", False), "test_file": ("data/test.txt", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        (*_TRAIN, "--do_eval", "--do_predict", "--max_seq_length=16", "--tag_column=2"),
        ("out-{name}",)),
    "swag": FormFamily(
        "run_swag.py", _swag_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        (*_TRAIN, "--do_eval", "--max_seq_length=32"), ("out-{name}",)),
    "multilabel": FormFamily(
        "run_multilabel.py", _multilabel_materials,
        {"data_dir": ("data", True), "labels_file": ("data/labels.txt", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True), "export_dir": ("exp-{name}", True)},
        (*_TRAIN, "--do_eval", "--do_predict", "--max_seq_length=32"),
        ("out-{name}", "exp-{name}")),
    # The training files as a comma-separated list.
    "pretraining": FormFamily(
        "run_pretraining.py", lambda ws, folder: None,
        {"input_file": ("records/a.tfrecord,records/b.tfrecord", False),
         "eval_input_file": ("records/eval.tfrecord", False), **_MODEL_FLAGS,
         "output_dir": ("out-{name}", True)},
        ("--do_train", "--do_eval", f"--max_seq_length={SEQ}",
         f"--max_predictions_per_seq={PREDS}", "--train_batch_size=2", "--num_train_steps=2",
         "--num_warmup_steps=1", "--max_eval_steps=1", "--eval_batch_size=2"),
        ("out-{name}/eval_results.txt",), records=True),
    # ... and as a glob.
    "pretraining_glob": FormFamily(
        "run_pretraining.py", lambda ws, folder: None,
        {"input_file": ("records/[ab].tfrecord", False), **_MODEL_FLAGS,
         "output_dir": ("out-{name}", True)},
        ("--do_train", "--do_eval", f"--max_seq_length={SEQ}",
         f"--max_predictions_per_seq={PREDS}", "--train_batch_size=2", "--num_train_steps=2",
         "--num_warmup_steps=1", "--max_eval_steps=1", "--eval_batch_size=2"),
        ("out-{name}/eval_results.txt",), records=True),
    # Inputs as a list, outputs as a list (written round-robin).
    "pretraining_data": FormFamily(
        "create_pretraining_data.py", _text_materials,
        {"input_file": ("data/a.txt,data/b.txt", False),
         "output_file": ("out-{name}-0.tfrecord,out-{name}-1.tfrecord", False),
         "vocab_file": ("model/vocab.txt", False)},
        ("--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=2"),
        ("out-{name}-0.tfrecord", "out-{name}-1.tfrecord"), default_forms=("home",)),
    # Inputs as a glob.
    "pretraining_data_glob": FormFamily(
        "create_pretraining_data.py", _text_materials,
        {"input_file": ("data/*.txt", False), "output_file": ("out-{name}.tfrecord", False),
         "vocab_file": ("model/vocab.txt", False)},
        ("--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=2"),
        ("out-{name}.tfrecord",)),
    "vocab": FormFamily(
        "create_vocab.py", _text_materials,
        {"input_file": ("data/a.txt,data/b.txt", False), "output_file": ("out-{name}.txt", False),
         "output_config_file": ("out-{name}.json", False),
         "bert_config_template": ("model/bert_config.json", False)},
        ("--vocab_size=200", "--num_unused=5"), ("out-{name}.txt", "out-{name}.json"),
        default_forms=("dotdot",)),
    "vocab_glob": FormFamily(
        "create_vocab.py", _text_materials,
        {"input_file": ("data/*.txt", False), "output_file": ("out-{name}/vocab.txt", False)},
        ("--vocab_size=200", "--num_unused=5"), ("out-{name}",)),
    # The LiteRT predictor (no TensorFlow in its process): the model, its data, its output.
    "predict_litert": FormFamily(
        "predict_litert.py", _litert_materials,
        {"model": ("export/litert/model_float32.tflite", False), "data_dir": ("data", True),
         "output_dir": ("out-{name}", True)},
        ("--task_name=mrpc", "--num_threads=1"), ("out-{name}",)),
    "squad_evaluate": FormFamily(
        "squad_evaluate.py", _squad_eval_materials,
        {"<data_file>": ("data/dev.json", False), "<pred_file>": ("data/predictions.json", False),
         "na-prob-file": ("data/null_odds.json", False), "out-file": ("out-{name}.json", False)},
        (), ("out-{name}.json",)),
    # The whole pipeline, as small as it goes (about 50 s a run).
    "quickstart": FormFamily(
        "quickstart.py", lambda ws, folder: None, {"output_dir": ("out-{name}", True)},
        ("--pretrain_steps=1", "--vocab_size=200", "--finetune_epochs=0.1",
         "--max_seq_length=16"), ("out-{name}",)),
}


def _form_root(ws, family, group):
  """The folder of one family's cases (one group): base/ holds the data, the model files
  and (made by the reference's setup) a run's checkpoint and TFRecords; the forms' own
  folders are copies (those made by the reference copied by the cases' setup), and link/
  is a symlink to base/."""
  root = ws.path(f"pf-{family}-{group}")
  for folder in ["base"] + [f for f in _FORM_FOLDERS.values() if f != "link"]:
    if not os.path.isdir(os.path.join(root, folder)):
      name = os.path.relpath(os.path.join(root, folder), ws.root)
      _FORM_FAMILIES[family].materials(ws, name)
      ws.write(f"{name}/model/vocab.txt", "".join(ws.vocab_lines))
      ws.write_config(f"{name}/model/bert_config.json")
  link = os.path.join(root, "link")
  if not os.path.islink(link):
    os.symlink(os.path.join(root, "base"), link)
  return root


def _typed_one(root, form, rel, folder):
  """(argument as typed, cwd, env) for the path `rel` of the run's folder in `form`."""
  base = os.path.join(root, "base")
  if form == "relative":
    return rel, base, {}
  if form == "dot":
    return "./" + rel, base, {}
  if form == "dotdot":
    return "../" + rel, os.path.join(base, "model"), {}
  if form == "trailing_slash":
    return os.path.join(base, rel) + ("/" if folder else ""), None, {}
  if form == "home":
    return "~/base/" + rel, None, {"HOME": root}
  if form in _FORM_FOLDERS:
    return os.path.join(root, _FORM_FOLDERS[form], rel), None, {}
  assert form == "absolute", form
  return os.path.join(base, rel), None, {}


def _typed(root, form, rel, folder):
  """_typed_one for each item of a comma-separated list."""
  items = [_typed_one(root, form, item, folder) for item in rel.split(",")]
  return ",".join(typed for typed, _, _ in items), items[0][1], items[0][2]


def _path_form_case(ws, family, group, name, forms, checkpoint="run"):
  """A run of the family whose flags are typed in `forms` ({flag: form}; the others
  absolute); its outputs must equal the absolute-path reference's."""
  spec = _FORM_FAMILIES[family]
  root = _form_root(ws, family, group)
  argv, cwd, env, output_folder = [], None, {}, "base"
  for flag, (rel, folder) in spec.flags.items():
    if flag == "init_checkpoint":
      rel, folder = checkpoint, checkpoint == "run"
    rel = rel.format(name=name)
    form = forms.get(flag, "absolute")
    typed, form_cwd, form_env = _typed(root, form, rel, folder)
    if rel.split("/")[0].startswith(("out-", "exp-", "cache-")) and form in ("spaces", "non_ascii"):
      output_folder = _FORM_FOLDERS[form]
    argv.append(typed if flag.startswith("<") else f"--{flag}={typed}")
    cwd, env = form_cwd or cwd, {**env, **form_env}
  generated = (["run"] if "init_checkpoint" in spec.flags else []) + (
      ["records"] if spec.records else [])
  setup = [{"copy": os.path.join(root, "base", g), "to": os.path.join(root, f, g)}
           for g in generated for f in _FORM_FOLDERS.values() if f != "link"]
  same = [(os.path.join(root, output_folder, out.format(name=name)),
           os.path.join(root, "base", out.format(name="reference"))) for out in spec.outputs]
  return dict(argv=argv + list(spec.extra), cwd=cwd, env=env, works=True, setup=setup,
              same=same, copies=output_folder != "base")


def _path_form_reference(family, group):
  def reference(ws):
    spec = _FORM_FAMILIES[family]
    root = _form_root(ws, family, group)
    case_spec = _path_form_case(ws, family, group, "reference", {})
    base = os.path.join(root, "base")
    made = _pretraining_records(base) if spec.records else []
    if "init_checkpoint" in spec.flags:
      made.append({"foreign_checkpoint": os.path.join(base, "run"), "bert_config": ws.config})
    case_spec["setup"] = made + case_spec["setup"]
    case_spec["same"] = []
    return case_spec
  reference.__name__ = f"path_forms_{family}_reference_{group}"
  return reference


# The checkpoint typed as a folder (the families' "run"), as a ckpt-N prefix and as its
# .index file: for every form, in these families.
_CHECKPOINT_KINDS = (("prefix", "run/ckpt-7"), ("index", "run/ckpt-7.index"))
_CHECKPOINT_KIND_FAMILIES = ("classifier", "pretraining")


def _register_path_forms():
  """Per family: a reference run per group; each form applied to every flag at once (the
  family's default_forms in the default group, the rest slow); every (flag, form) pair
  alone where every_flag_alone; the checkpoint as a prefix and as its .index file."""
  for family, spec in _FORM_FAMILIES.items():
    if spec.default_forms:
      case(spec.script, default=True)(_path_form_reference(family, "default"))
    case(spec.script)(_path_form_reference(family, "slow"))
    for form in PATH_FORMS:
      group = "default" if form in spec.default_forms else "slow"

      def every_flag(ws, form=form, group=group, family=family):
        return _path_form_case(ws, family, group, f"all-{form}",
                               {flag: form for flag in _FORM_FAMILIES[family].flags})
      every_flag.__name__ = f"path_form_{family}_{form}_for_every_flag"
      case(spec.script, default=group == "default")(every_flag)
      for flag in spec.flags if spec.every_flag_alone else ():
        def one_flag(ws, form=form, flag=flag, family=family):
          return _path_form_case(ws, family, "slow", f"{flag}-{form}", {flag: form})
        one_flag.__name__ = f"path_form_{family}_{form}_for_{flag}"
        case(spec.script)(one_flag)
      for kind, checkpoint in _CHECKPOINT_KINDS if family in _CHECKPOINT_KIND_FAMILIES else ():
        def checkpoint_file(ws, form=form, kind=kind, checkpoint=checkpoint, family=family):
          return _path_form_case(ws, family, "slow", f"ckpt-{kind}-{form}",
                                 {"init_checkpoint": form}, checkpoint=checkpoint)
        checkpoint_file.__name__ = f"path_form_{family}_{form}_for_init_checkpoint_{kind}"
        case(spec.script)(checkpoint_file)


_register_path_forms()


# --------------------------------------------------------------------------- running


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
  return Workspace(tmp_path_factory.mktemp("catalogue"))


_RESULTS = {}


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


def result_of(ws, case_id, default_group):
  """Runs (once) every case of this case's script and group; returns this one's result."""
  script = CASES[case_id][0]
  key = (script, default_group)
  if key not in _RESULTS:
    group = {cid: builder(ws) for cid, (s, default, builder) in CASES.items()
             if s == script and default == default_group}
    results = run_harness(script, group, ws.root)
    _RESULTS[key] = {cid: (group[cid], results[cid]) for cid in group}
  return _RESULTS[key][case_id]


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
  folder that hold the run's results (not _NOT_COMPARED)."""
  found = {}
  for parent, _, names in os.walk(folder):
    for name in names:
      relative = os.path.relpath(os.path.join(parent, name), folder)
      if not _NOT_COMPARED.search(relative):
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


DEFAULT_IDS = sorted(cid for cid, (_, default, _) in CASES.items() if default)
SLOW_IDS = sorted(cid for cid, (_, default, _) in CASES.items() if not default)


@pytest.mark.parametrize("case_id", DEFAULT_IDS)
def test_bad_input_default(ws, case_id):
  spec, result = result_of(ws, case_id, True)
  check_case(CASES[case_id][0], spec, result)


@pytest.mark.slow
@pytest.mark.parametrize("case_id", SLOW_IDS)
def test_bad_input_catalogue(ws, case_id):
  spec, result = result_of(ws, case_id, False)
  check_case(CASES[case_id][0], spec, result)


def _listed_scripts():
  """Every script, from the one list of them: bert.cli.COMMANDS."""
  from bert import cli  # pylint: disable=g-import-not-at-top
  return {f"{name}.py" for name in cli.COMMANDS}


# Scripts whose bad inputs are tested elsewhere instead of in this catalogue.
# Scripts of bert.cli.COMMANDS whose bad inputs are tested in their own files
# instead of here (none today: every script has a case).
TESTED_ELSEWHERE = set()


# Tools the docs tell users to run that read no user input: gen_flag_docs.py writes
# docs/FLAGS.md from the scripts' own flag definitions, gen_test_suites.py docs/TESTS.md
# from the tests' markers.
TOOLS_WITHOUT_INPUT = {"tools/gen_flag_docs.py", "tools/gen_test_suites.py"}


def _tools_users_run():
  """Every tools/<name>.py that README.md, docs/ or reproduce/ names (for users to run)."""
  found = set()
  places = [os.path.join(ROOT, "README.md")] + [
      os.path.join(parent, name) for folder in ("docs", "reproduce")
      for parent, _, names in os.walk(os.path.join(ROOT, folder)) for name in names
      if name.endswith((".md", ".sh"))]
  for path in places:
    with open(path, encoding="utf-8") as handle:
      # Not a test file under tests/tools/, which docs/TESTS.md lists.
      found.update(re.findall(r"(?<![\w/])(tools/[a-z_]+\.py)", handle.read()))
  return found


def test_the_default_subset_spans_the_scripts():
  """Default: one process per script for 7 scripts and tools/linear_probe.py (run_swag.py's
  one-line errors are also tested by tests/commands/test_run_ner_swag.py, run_tagger.py's by
  tests/commands/test_run_tagger.py); the slow catalogue covers every script of
  tools/gen_flag_docs.py's list and every tool a doc tells users to run."""
  scripts = {CASES[cid][0] for cid in DEFAULT_IDS}
  assert scripts == {"run_classifier.py", "create_pretraining_data.py", "run_pretraining.py",
                     "run_squad.py", "run_ner.py", "extract_features.py", "create_vocab.py",
                     _PROBE}
  tools = _tools_users_run()
  assert {"tools/linear_probe.py", "tools/gen_flag_docs.py"} <= tools  # the docs were read
  assert {CASES[cid][0] for cid in CASES} == (
      _listed_scripts() - TESTED_ELSEWHERE) | (tools - TOOLS_WITHOUT_INPUT)


def test_every_batch_size_flag_has_its_refusals():
  """Every flag named *batch_size* of every script (docs/FLAGS.md) and tool has a case
  for 0 and for a negative value; a tool's batch-size flag is found in its source."""
  for path in sorted(_tools_users_run()):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
      names = set(re.findall(r"[\"'](?:--)?([a-z_]*batch_size)[\"']", handle.read()))
    assert names == set(BATCH_SIZE_FLAGS.get(path, ([], []))[0]), path
  # FLAGS.md's batch-size flags were read (the cases are generated from them).
  assert BATCH_SIZE_FLAGS["extract_features.py"][0] == ["batch_size"]
  assert BATCH_SIZE_FLAGS["run_ner.py"][0] == ["eval_batch_size", "feature_batch_size",
                                               "predict_batch_size", "train_batch_size"]


def test_every_path_flag_has_a_path_forms_family():
  """The path-forms matrix covers every path flag of every script: each flag of
  docs/FLAGS.md's "Path flags" table (tools/gen_flag_docs.py lists there every flag
  defined through flags_common.define_path or named *_file, *_dir, *_checkpoint, and
  tests/project/test_docs.py keeps the file current) is typed by a family, and every family runs
  every form (the checkpoint also as a ckpt-N prefix and its .index file). A new path
  flag without a family fails here."""
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    table = handle.read().split("\n## Path flags\n", 1)[1]
  defined = {(row.group(1), flag) for row in re.finditer(r"^\| (\S+\.py) \| (.*) \|$",
                                                         table, re.MULTILINE)
             for flag in re.findall(r"`--([^`]+)`", row.group(2))}
  covered = {(spec.script, flag) for spec in _FORM_FAMILIES.values() for flag in spec.flags
             if not flag.startswith("<")}
  assert ("run_classifier.py", "export_dir") in defined  # the table was read
  assert sorted(defined - covered) == []
  assert sorted(covered - defined) == []  # a family's flag that is not a path flag
  for family, spec in _FORM_FAMILIES.items():
    for form in PATH_FORMS:
      assert f"{spec.script[:-3]}-path_form_{family}_{form}_for_every_flag" in CASES
      for kind, _ in _CHECKPOINT_KINDS if family in _CHECKPOINT_KIND_FAMILIES else ():
        assert (f"{spec.script[:-3]}-path_form_{family}_{form}_for_init_checkpoint_{kind}"
                in CASES)


def test_real_subprocess_matches_the_harness(ws):
  """One true `python run_classifier.py` run: what a user sees, exit status included."""
  d = _mrpc(ws, "cls-real", train="good", dev=["7\t1\t2\tthe cat .\tthe mat ."])
  out = ws.path("cls-real-out")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(
      [sys.executable, os.path.join(ROOT, "run_classifier.py"),
       *_classifier(ws, d, out, "--do_eval")],
      capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("run_classifier.py: error: " + os.path.join(d, "dev.tsv") + ":2:")
  assert not os.path.exists(os.path.join(out, "eval_results.txt"))


# --------------------------------------------------------------------------- true processes


PT_CONFIG = {"vocab_size": 40, "hidden_size": 32, "num_hidden_layers": 3,
             "num_attention_heads": 4, "intermediate_size": 37, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
             "max_position_embeddings": 16, "type_vocab_size": 2, "initializer_range": 0.02}


def _pt_inputs(directory):
  """A tiny pretraining config and 16 records of length 8 in `directory`."""
  from bert import input_pipeline  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
  config = os.path.join(directory, "bert_config.json")
  records = os.path.join(directory, "data.tfrecord")
  if not os.path.exists(records):
    with open(config, "w", encoding="utf-8") as handle:
      json.dump(PT_CONFIG, handle)

    def record(i):
      ids = [2] + [5 + (i * 7 + j * 3) % 35 for j in range(6)] + [3]
      return {"input_ids": ids, "input_mask": [1] * 8, "segment_ids": [0] * 8,
              "masked_lm_positions": [1, 2, 3], "masked_lm_ids": ids[1:4],
              "masked_lm_weights": [1.0, 1.0, 1.0], "next_sentence_labels": [i % 2]}

    input_pipeline.write_examples(records, (record(i) for i in range(16)))
  return config, records


def _pt_command(directory, out, *extra):
  config, records = _pt_inputs(directory)
  return [sys.executable, os.path.join(ROOT, "run_pretraining.py"), f"--input_file={records}",
          f"--bert_config_file={config}", f"--output_dir={out}", "--do_train",
          "--max_seq_length=8", "--max_predictions_per_seq=3", "--train_batch_size=4",
          "--num_warmup_steps=1", "--steps_per_loop=1", *extra]


ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _last_line(proc_stderr):
  return [l for l in proc_stderr.strip().splitlines() if l.strip()][-1]


@pytest.mark.slow  # 30 s on 2 cores: three runs; the lock itself is tested fast below
def test_a_second_run_in_one_output_dir_is_refused_and_kill_9_leaves_no_stale_lock(tmp_path):
  """Two runs at once in one output_dir would both save ckpt-N there."""
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"
  first = subprocess.Popen(_pt_command(tmp_path, out, "--num_train_steps=1000000",
                                       "--save_checkpoints_steps=5", "--learning_rate=1e-4"),
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, cwd=ROOT)
  try:
    deadline = time.time() + 120
    while not (out / "ckpt-5.index").exists():  # the first run holds the lock and trains
      assert first.poll() is None and time.time() < deadline, first.stderr.read()[-2000:]
      time.sleep(0.2)
    # A stale temporary, as a run killed while writing leaves it.
    (out / ".eval_results.txt.tmp-0123abcd").write_text("half", encoding="utf-8")
    second = subprocess.run(_pt_command(tmp_path, out, "--num_train_steps=3"), env=ENV,
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert second.returncode == 2, second.stderr[-2000:]
    assert "Traceback" not in second.stderr
    assert _last_line(second.stderr).startswith(
        f"run_pretraining.py: error: --output_dir={out} is in use by another run (pid "
        f"{first.pid}: {sys.executable} {os.path.join(ROOT, 'run_pretraining.py')} "
        "--input_file="), second.stderr[-2000:]
    assert (out / ".eval_results.txt.tmp-0123abcd").exists()  # the holder's, untouched
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
  finally:
    if first.poll() is None:
      first.kill()
      first.wait()
  steps = sorted(int(n[5:-6]) for n in os.listdir(out) if n.endswith(".index"))
  assert steps and steps[-1] >= 5
  # The kernel dropped the dead run's lock: the rerun takes it, resumes, and removes what
  # the killed run left half-written.
  rerun = subprocess.run(_pt_command(tmp_path, out, f"--num_train_steps={steps[-1] + 1}",
                                     "--learning_rate=1e-4"),
                         env=ENV, capture_output=True, text=True, cwd=ROOT, timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-2000:]
  assert f"Resumed from {out / f'ckpt-{steps[-1]}'}" in rerun.stderr
  left = os.listdir(out)
  assert ".eval_results.txt.tmp-0123abcd" not in left and ".bert-run.lock" not in left
  assert [n for n in left if "_temp" in n or ".tmp-" in n] == []
  assert f"ckpt-{steps[-1] + 1}.index" in left


def _hashes(folder):
  """{relative path: sha256} of every file under `folder` (its exported versions)."""
  import hashlib  # pylint: disable=g-import-not-at-top
  found = {}
  for parent, _, names in os.walk(folder):
    for name in names:
      path = os.path.join(parent, name)
      with open(path, "rb") as handle:
        found[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
  return found


def _temporaries(folder):
  """Every temporary or lock file of ours under `folder` and beside it."""
  parent = os.path.dirname(os.path.abspath(folder))
  name = os.path.basename(os.path.abspath(folder))
  left = [n for n in os.listdir(parent) if n.startswith(f".{name}.")]
  for directory, dirs, files in os.walk(folder):
    left += [os.path.relpath(os.path.join(directory, n), folder) for n in dirs + files
             if re.fullmatch(r"\..+\.tmp-[0-9a-f]{8}|\..*lock", n)]
  return sorted(left)


def _kill_mid_export(command, temporaries, timeout=300):
  """Starts `command` and SIGKILLs it as soon as `temporaries()` lists a temporary that
  holds a file (the export is being written); returns what it had left."""
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  with open(os.devnull, "wb") as devnull:
    process = subprocess.Popen(command, env=ENV, stdout=devnull, stderr=devnull, cwd=ROOT)
  try:
    deadline = time.time() + timeout
    while True:
      left = temporaries()
      if left:
        process.send_signal(signal.SIGKILL)
        break
      assert process.poll() is None, "the run ended before its export was written"
      assert time.time() < deadline
      time.sleep(0.005)
    process.wait(timeout=60)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()
  assert process.returncode == -signal.SIGKILL
  return left


@pytest.mark.slow  # about 80 s on 2 cores: four run_classifier runs, two killed mid-export
def test_an_export_killed_with_sigkill_leaves_nothing_after_the_same_command(ws, tmp_path):
  """kill -9 during an export, then the same command: the rerun ended whole, but the
  half-written version (exp/ids/.1.tmp-*, 8 MB here, hundreds of MB for BERT-Base) or
  unversioned export (.exp.tmp-* beside it) stayed for ever. Now the rerun removes them,
  and every version that was there before is byte for byte what it was."""
  data = _mrpc(ws, "kill9-data", train="good")
  export = tmp_path / "exp"
  for kind in ("ids", "text"):  # versions already served, as written by earlier runs
    ws.write(str(export / kind / "1" / "saved_model.pb"), f"{kind} 1\n")
    ws.write(str(export / kind / "1" / "variables" / "variables.index"), f"{kind} index\n")
  before = _hashes(export)

  def versioned_temporaries():
    return [n for kind in ("ids", "text") if (export / kind).is_dir()
            for n in os.listdir(export / kind) if n.startswith(".2.tmp-")
            and any(files for _, _, files in os.walk(export / kind / n))]

  command = [sys.executable, os.path.join(ROOT, "run_classifier.py"),
             *_classifier(ws, data, str(tmp_path / "out"), "--do_train",
                          f"--export_dir={export}", "--export_version=2")]
  assert _kill_mid_export(command, versioned_temporaries)
  assert _temporaries(export)  # what the killed run left: the bug's starting point
  rerun = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert _temporaries(export) == []
  after = _hashes(export)
  assert {p: h for p, h in after.items() if p.split(os.sep)[1] == "1"} == before
  assert sorted(os.listdir(export / "ids")) == sorted(os.listdir(export / "text")) == ["1", "2"]
  assert (export / "ids" / "2" / "saved_model.pb").is_file()
  # Without --export_version: the temporary is export_dir's sibling.
  plain = tmp_path / "plain"

  def plain_temporaries():
    return [n for n in os.listdir(tmp_path) if n.startswith(".plain.tmp-")
            and any(files for _, _, files in os.walk(tmp_path / n))]

  command = [sys.executable, os.path.join(ROOT, "run_classifier.py"),
             *_classifier(ws, data, str(tmp_path / "out-plain"), "--do_train",
                          f"--export_dir={plain}")]
  assert _kill_mid_export(command, plain_temporaries)
  rerun = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert _temporaries(plain) == []
  assert (plain / "saved_model.pb").is_file() and (plain / "ids" / "saved_model.pb").is_file()


# A whole training run and an export (25 s): make test-slow. By default the run lock is
# tested in tests/utils/test_file_io.py and versions side by side in tests/formats/test_serving.py;
# waiting for another run's export lock is tested here only.
@pytest.mark.slow
def test_a_run_whose_version_another_run_just_wrote_says_so_and_names_its_flag(ws, tmp_path):
  """Two exports of one version at once: the one that came second used to say
  ".../exp/text/1: exists; remove it or pass --overwrite", a flag run_classifier does not
  have, and not that another run had just written that version. Here the other run is
  this test: it holds the export's lock (as a run writing there does), the run waits for
  it, the test writes version 1 and lets go."""
  import time  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  data = _mrpc(ws, "race-data", train="good")
  export, out = tmp_path / "exp", tmp_path / "out"
  log = tmp_path / "stderr.txt"
  with output_lock.lock_export(str(export), 1):
    with open(log, "w", encoding="utf-8") as stderr:
      run = subprocess.Popen(
          [sys.executable, os.path.join(ROOT, "run_classifier.py"),
           *_classifier(ws, data, str(out), "--do_train", f"--export_dir={export}",
                        "--export_version=1")],
          env=ENV, stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
    try:
      deadline = time.time() + 300
      while "Waiting for pid" not in log.read_text(encoding="utf-8"):
        assert run.poll() is None, log.read_text(encoding="utf-8")[-3000:]
        assert time.time() < deadline
        time.sleep(0.1)
      for kind in ("ids", "text"):  # the other run's version 1, whole
        ws.write(str(export / kind / "1" / "saved_model.pb"), f"the other run's {kind}\n")
    except BaseException:
      run.kill()
      raise
  assert run.wait(timeout=120) == 2
  stderr = log.read_text(encoding="utf-8")
  assert "Traceback" not in stderr
  assert _last_line(stderr) == (
      f"run_classifier.py: error: --export_version=1: another run has just written "
      f"{export}/ids/1 (it was not there when this run started); this run's export is not "
      "written: choose a new version number, or pass --overwrite_export to replace that "
      "version")
  assert _temporaries(export) == []
  for kind in ("ids", "text"):
    assert os.listdir(export / kind) == ["1"]
    assert (export / kind / "1" / "saved_model.pb").read_text(encoding="utf-8") == (
        f"the other run's {kind}\n")


def test_an_export_lock_waits_for_the_writer_and_cleans_only_killed_exports(tmp_path):
  """What a killed export leaves (`.N.tmp-<8 hex>` in ids/, text/ and litert/, `.NAME.tmp-<8 hex>`
  beside an unversioned one) goes when the next export takes the lock; a user's file
  whose name only looks like one stays, and so does a version folder."""
  import threading  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
  assert litert_metadata.FOLDER in output_lock.VERSIONED_KINDS
  export = tmp_path / "exp"
  for path in ("ids/1/saved_model.pb", "ids/.1.tmp-0123abcd/saved_model.pb",
               "text/.7.tmp-89abcdef/variables/variables.index", "ids/.1.tmp-notes",
               "ids/1.tmp-0123abcd", "litert/.1.tmp-4567cdef/model_int8.tflite"):
    os.makedirs(os.path.dirname(export / path), exist_ok=True)
    (export / path).write_text("x", encoding="utf-8")
  with output_lock.lock_export(str(export), 2):
    assert sorted(os.listdir(export)) == [".export.lock", "ids", "litert", "text"]
    assert sorted(os.listdir(export / "ids")) == [".1.tmp-notes", "1", "1.tmp-0123abcd"]
    assert os.listdir(export / "text") == os.listdir(export / "litert") == []
    # A second export of the folder waits for this one instead of refusing.
    order = []

    def second():
      with output_lock.lock_export(str(export), 3):
        order.append("second")

    waiter = threading.Thread(target=second)
    waiter.start()
    waiter.join(timeout=1)
    assert waiter.is_alive() and order == []
    order.append("first done")
  waiter.join(timeout=30)
  assert order == ["first done", "second"]
  (tmp_path / ".plain.tmp-0123abcd").mkdir()
  (tmp_path / ".plain.tmp-notes").write_text("mine", encoding="utf-8")
  with output_lock.lock_export(str(tmp_path / "plain")):
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".plain")) == [
        ".plain.lock", ".plain.tmp-notes"]
  assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".plain")) == [
      ".plain.tmp-notes"]


@pytest.mark.slow  # a NaN loss in the default suite: test_faults
def test_a_diverging_pretraining_run_writes_no_weights_and_no_results(tmp_path):
  """run_pretraining --learning_rate=1e6 --num_train_steps=4 --do_eval used to export NaN
  weights to pretrained/bert_model.ckpt and `loss = nan` to eval_results.txt, exit 0."""
  out = tmp_path / "out"
  proc = subprocess.run(_pt_command(tmp_path, out, "--learning_rate=1e6", "--num_train_steps=4",
                                    "--do_eval", "--save_checkpoints_steps=1",
                                    "--log_every_steps=1"),
                        env=ENV, capture_output=True, text=True, cwd=ROOT, timeout=300)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  last = _last_line(proc.stderr)
  assert re.fullmatch(
      r"run_pretraining\.py: error: the (weights are not finite at step (\d) \(\d+ variable"
      r"\(s\), \S+ first\): the training diverged|training loss is nan at step (\d)); "
      r"the last good checkpoint ckpt-(\d) is kept in " + re.escape(str(out))
      + r"; lower --learning_rate or check the data", last), last
  step = int(re.search(r"at step (\d)", last).group(1))
  kept = int(re.search(r"ckpt-(\d)", last).group(1))
  assert kept == step - 1
  assert not (out / "pretrained").exists() and not (out / "eval_results.txt").exists()
  assert f"ckpt-{step}.index" not in os.listdir(out)
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(str(out / f"ckpt-{kept}"))
  floats = [n for n, d in reader.get_variable_to_dtype_map().items() if d.is_floating]
  assert len(floats) > 40 and all(np.isfinite(reader.get_tensor(n)).all() for n in floats)


# --------------------------------------------------------------------------- full disks at the writers


@pytest.fixture
def full_disk(tmp_path):
  """A directory on a full file system: a 96 KB tmpfs, filled (needs root: mount); None
  where no tmpfs can be mounted."""
  path = tmp_path / "full"
  os.makedirs(path)
  if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(path)],
                    capture_output=True).returncode != 0:
    yield None
    return
  try:
    fd = os.open(path / "filler", os.O_WRONLY | os.O_CREAT)
    try:
      while os.write(fd, b"\0" * 1024):
        pass
    except OSError:
      pass
    finally:
      os.close(fd)
    yield path
  finally:
    subprocess.run(["umount", str(path)], check=False)


def _full(path):
  return (f"could not write {path}: the disk is full (No space left on device); nothing "
          "was written under that name; free space and rerun")


def _injected_full_disk(monkeypatch):
  """Where no tmpfs can be mounted: every file atomic_output opens for writing is full."""
  import errno  # pylint: disable=g-import-not-at-top
  from bert.utils import atomic_output  # pylint: disable=g-import-not-at-top

  class Full:
    def __init__(self, path):
      self.path = path
      open(path, "w").close()  # noqa: SIM115  the temporary exists, as on a real disk

    def write(self, data):
      raise OSError(errno.ENOSPC, "No space left on device")

    def __enter__(self):
      return self

    def __exit__(self, *exc):
      return False

  monkeypatch.setattr(atomic_output, "open", lambda path, *a, **k: Full(path), raising=False)


def test_a_full_disk_at_the_file_writers_is_one_line_naming_the_file(full_disk, tmp_path,
                                                                     monkeypatch):
  from bert.classifier import classifier_examples  # pylint: disable=g-import-not-at-top
  from bert.squad import squad_decoding  # pylint: disable=g-import-not-at-top
  from bert.swag import swag_data  # pylint: disable=g-import-not-at-top
  from bert.tagging import tagging_data  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  directory = full_disk
  if directory is None:
    directory = tmp_path / "injected"
    os.makedirs(directory)
    _injected_full_disk(monkeypatch)
  big = {f"q{i}": "an answer of some length " * 20 for i in range(400)}  # ~200 KB
  examples = [swag_data.SwagExample(str(i), "a man sits .", "he", ["a", "b", "c", "d"], 0)
              for i in range(2000)]
  sentences = [tagging_data.TaggedSentence(str(i), ["EU", "rejects"] * 200, ["B-ORG", "O"] * 200,
                                   [[] for _ in range(400)]) for i in range(100)]
  writers = {
      "predictions.json": lambda p: squad_decoding.write_prediction_files(
          big, big, {}, p, str(directory / "nbest.json")),
      "test_results.tsv": lambda p: classifier_examples.write_probabilities(
          p, [[0.25, 0.75]] * 20000),
      "test_predictions.csv": lambda p: swag_data.write_predictions(
          p, examples, [[1.0, 2.0, 3.0, 4.0]] * 2000),
      "test_predictions.txt": lambda p: tagging_data.write_conll_predictions(
          p, sentences, [["B-ORG", "O"] * 200] * 100, "iob2"),
  }
  for name, write in writers.items():
    path = str(directory / name)
    with pytest.raises(errors.UserError) as error:
      write(path)
    assert str(error.value) == _full(path), name
  assert sorted(os.listdir(directory)) == ([] if full_disk is None else ["filler"])


def test_a_full_disk_at_the_tensorflow_writers_is_one_line_naming_the_path(full_disk):
  """A SavedModel export and TensorBoard events (their own file systems calls: no
  injection stands in for them, so this needs the tmpfs)."""
  if full_disk is None:
    pytest.skip("needs root to mount a tmpfs")
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  from bert import heads
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  model, _ = heads.build_classifier_model(modeling.BertConfig.from_dict(PT_CONFIG), 2)
  export_dir = str(full_disk / "export")
  with pytest.raises(errors.UserError) as error:
    serving.export_classifier(export_dir, model, ["0", "1"])
  assert str(error.value) == _full(f"--export_dir={export_dir}")
  logdir = str(full_disk / "eval")
  with pytest.raises(errors.UserError) as error:
    loop.write_scalars(logdir, {f"metric_{i}_" + "x" * 500: 1.0 for i in range(400)}, 1)
  assert str(error.value) == (f"could not write {logdir}: the disk is full (No space left on "
                              "device); free space and rerun")
  # An event file is appended to (TensorBoard reads what is complete); no SavedModel, nor
  # a temporary of one, is left.
  assert sorted(n for n in os.listdir(full_disk) if n != "eval") == ["filler"]


# --------------------------------------------------------------------------- locks and stale temporaries


def test_an_output_lock_refuses_a_second_holder_and_cleans_stale_temporaries(tmp_path):
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"
  os.makedirs(out / "train")
  stale = [".eval_results.txt.tmp-0123abcd", ".bert_model.ckpt.saving-x1y2", "ckpt-7_temp",
           "checkpoint.tempstate123"]
  keep = [".eval_results.txt.tmp-notours", "eval_results.txt", "ckpt-6.index", "train"]
  for name in stale + keep[:-1]:
    if name.endswith("_temp") or ".saving-" in name:
      os.makedirs(out / name)
    else:
      (out / name).write_text("x", encoding="utf-8")
  with output_lock.lock_output(str(out)):
    assert sorted(os.listdir(out)) == sorted(keep + [".bert-run.lock"])
    with open(out / ".bert-run.lock", encoding="utf-8") as handle:
      assert handle.readline() == f"{os.getpid()}\n"
    # flock locks belong to an open file: a second lock, even from this process, is refused.
    with pytest.raises(errors.UserError) as error:
      output_lock.lock_output(str(out)).acquire()
    assert str(error.value).startswith(f"--output_dir={out} is in use by another run (pid "
                                       f"{os.getpid()}: ")
    assert str(error.value).endswith("); wait for it to finish or stop it, or use another "
                                     "directory")
  assert sorted(os.listdir(out)) == sorted(keep)  # the lock file goes with the lock
  # One output file: its own lock beside it, and only its own temporaries are removed.
  (tmp_path / ".features.jsonl.tmp-89abcdef").write_text("half", encoding="utf-8")
  (tmp_path / ".other.jsonl.tmp-89abcdef").write_text("half", encoding="utf-8")
  target = str(tmp_path / "features.jsonl")
  with output_lock.lock_output(target, "output_file", is_file=True):
    with pytest.raises(errors.UserError, match=r"--output_file=.*features\.jsonl is "
                       r"in use by another run .*or use another output file$"):
      output_lock.lock_output(target, "output_file", is_file=True).acquire()
  assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".")) == [
      ".other.jsonl.tmp-89abcdef"]


def test_a_lock_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
  """The kernel drops a flock when its process dies: no stale lock after kill -9 (a
  process that imports only output_lock: no TensorFlow, a fraction of a second)."""
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  from bert.utils import output_lock  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"
  os.makedirs(out)
  holder = subprocess.Popen(
      [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
       "from bert.utils import output_lock; output_lock.lock_output(sys.argv[2]).acquire(); "
       "print('locked', flush=True); time.sleep(300)", ROOT, str(out)],
      stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline() == "locked\n"
    with pytest.raises(errors.UserError) as error:
      output_lock.lock_output(str(out)).acquire()
    assert str(error.value).startswith(
        f"--output_dir={out} is in use by another run (pid {holder.pid}: {sys.executable} -c "
        "import sys, time;")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
  finally:
    if holder.poll() is None:
      holder.kill()
      holder.wait()
  assert os.path.exists(out / ".bert-run.lock")  # the dead holder's file stays...
  started = time.time()
  lock = output_lock.lock_output(str(out)).acquire()  # ...and binds no one
  assert time.time() - started < 5
  lock.release()
  assert os.listdir(out) == []


def test_extract_features_cleans_a_killed_runs_temporary_and_names_a_full_disk(
    ws, full_disk, tmp_path):
  from bert.extraction import extraction_activations  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  prefix = str(tmp_path / "tiny" / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(
      modeling.BertModel(model_config.load_bert_config(ws.config)), prefix)
  text = ws.write("ef27.txt", "the cat sat on the mat .\nthe man went home .\n" * 20)

  def extract(output_file):
    return extraction_activations.extract_file(text, output_file, ws.vocab, True, ws.config,
                                            prefix, "-1,-2,-3", 16, 8)

  # What a kill -9 while writing leaves: the next run of the same output removes it.
  out = tmp_path / "features.jsonl"
  (tmp_path / ".features.jsonl.tmp-0badf00d").write_text('{"linex_index": 0', "utf-8")
  assert extract(str(out)) == 40
  assert sorted(n for n in os.listdir(tmp_path) if "features" in n) == ["features.jsonl"]
  with open(out, encoding="utf-8") as handle:
    assert len(handle.readlines()) == 40
  if full_disk is None:
    return  # the writer's full-disk path is the file writers' test (injected)
  full = str(full_disk / "features.jsonl")
  with pytest.raises(errors.UserError) as error:
    extract(full)
  assert str(error.value) == _full(f"--output_file={full}")
  assert os.listdir(full_disk) == ["filler"]


@pytest.mark.slow  # about 60 s on 2 cores: two pairs of localhost workers
def test_a_lost_worker_is_one_line_and_rerunning_every_worker_resumes(tmp_path):
  """kill -9 of one of two multi_worker_mirrored workers: the chief used to end in a
  traceback ("The tasks have crashed ... CollectiveReduceV2"), exit 1."""
  import socket  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  out = tmp_path / "out"

  logs = []

  def workers(steps):
    # stderr to files: a pipe nobody reads fills up with progress lines and blocks them.
    ports = []
    for _ in range(2):
      with socket.socket() as s:
        s.bind(("localhost", 0))
        ports.append(s.getsockname()[1])
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    return [subprocess.Popen(
        _pt_command(
            tmp_path, out, f"--num_train_steps={steps}", "--save_checkpoints_steps=5",
            "--learning_rate=1e-4", "--distribution_strategy=multi_worker_mirrored"),
        env=dict(ENV, TF_CONFIG=json.dumps({"cluster": cluster, "task": {
            "type": "worker", "index": i}})),
        stdout=subprocess.DEVNULL, stderr=log(f"{steps}-{i}"), cwd=ROOT)
        for i in range(2)]

  def log(name):
    logs.append(open(tmp_path / f"worker-{name}.log", "w+", encoding="utf-8"))  # noqa: SIM115
    return logs[-1]

  def read(index):
    logs[index].seek(0)
    return logs[index].read()

  def saved():
    return out.exists() and any(n.endswith(".index") for n in os.listdir(out))

  chief, lost = workers(100000)
  try:
    deadline = time.time() + 300
    while not saved():
      assert chief.poll() is None and time.time() < deadline, read(0)[-2000:]
      time.sleep(0.5)
    lost.kill()  # SIGKILL
    lost.wait(timeout=60)
    assert chief.wait(timeout=120) == 2, read(0)[-2000:]
    stderr = read(0)
  finally:
    for process in (chief, lost):
      if process.poll() is None:
        process.kill()
        process.wait()
  assert "Traceback" not in stderr, stderr[-3000:]
  last = _last_line(stderr)
  # The cause in parentheses is TensorFlow's own words and only there when its error names
  # one: which error reaches the chief depends on where its collective was when the peer
  # died (seen both ways on an otherwise busy 2-core machine).
  match = re.fullmatch(
      r"run_pretraining\.py: error: the multi-worker run lost worker 1 \(localhost:\d+\) "
      r"after step (\d+)(?: \(([^)]*)\))?; rerun every worker with the same command: they "
      r"resume from ckpt-(\d+) in " + re.escape(str(out)), last)
  assert match, last
  resumed_at = int(match.group(3))
  assert f"ckpt-{resumed_at}.index" in os.listdir(out)
  rerun = workers(resumed_at + 2)
  results = [(p.wait(timeout=400), read(2 + i)) for i, p in enumerate(rerun)]
  for code, err in results:
    assert code == 0, err[-2000:]
    assert f"Resumed from {out / f'ckpt-{resumed_at}'} at step {resumed_at}" in err
  assert f"ckpt-{resumed_at + 2}.index" in os.listdir(out)
  assert [n for n in os.listdir(out) if n.startswith(".")] == []
  for handle in logs:
    handle.close()


def test_non_finite_weights_are_never_exported_nor_evaluation_figures_written(tmp_path):
  """The two other places a diverged model could leave a result a user trusts."""
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  from bert.training import finetune  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert.utils import errors  # pylint: disable=g-import-not-at-top
  encoder = modeling.BertModel(modeling.BertConfig.from_dict(PT_CONFIG))
  weight = next(w for w in encoder.weights if len(w.shape) == 2 and w.shape[0] > 3)
  values = np.array(weight.numpy())
  values[3, 5] = np.nan
  weight.assign(values)
  prefix = str(tmp_path / "pretrained" / "bert_model.ckpt")
  with pytest.raises(errors.UserError) as error:
    checkpoint_files.save_google_checkpoint(encoder, prefix)
  assert str(error.value).startswith(f"{prefix}: not written: 1 weight(s) are not finite (")
  assert str(error.value).endswith("first), the training diverged; lower --learning_rate "
                                   "and train again from the last good checkpoint")
  assert not os.path.exists(tmp_path / "pretrained")  # checked before anything is created
  with pytest.raises(errors.UserError) as error:
    finetune.write_eval_results(str(tmp_path), {"loss": float("nan"), "accuracy": 0.5}, 4)
  assert str(error.value) == (
      f"evaluation at step 4 gives loss = nan: the model's outputs are not finite (the "
      f"weights diverged); {tmp_path}/eval_results.txt is not written; resume from an "
      "earlier checkpoint with a lower --learning_rate")
  assert os.listdir(tmp_path) == []


@pytest.mark.slow  # about 20 s on 2 busy cores: one TensorFlow process and a 3 s wait
def test_a_worker_whose_peer_never_starts_says_whom_it_waits_for_and_stops_at_the_bound(
    tmp_path):
  """A multi-worker run used to wait in silence for a peer that never comes (not even the
  strategy line): it says for whom it waits before it blocks, and --multi_worker_timeout
  ends the wait in one line naming them, exit 2, nothing written."""
  import socket  # pylint: disable=g-import-not-at-top
  ports = []
  for _ in range(2):
    with socket.socket() as s:
      s.bind(("localhost", 0))
      ports.append(s.getsockname()[1])
  me, peer = (f"localhost:{p}" for p in ports)
  out = tmp_path / "out"
  env = dict(ENV, TF_CONFIG=json.dumps({"cluster": {"worker": [me, peer]},
                                        "task": {"type": "worker", "index": 0}}))
  # timeout -k: a worker waiting for its peer catches SIGTERM (PITFALLS).
  proc = subprocess.run(
      ["timeout", "-k", "5", "120", *_pt_command(
          tmp_path, out, "--num_train_steps=2", "--multi_worker_timeout=3",
          "--distribution_strategy=multi_worker_mirrored")],
      env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
  assert proc.returncode == 2, proc.stderr[-3000:]
  lines = proc.stderr.strip().splitlines()
  waiting = [l for l in lines if "Waiting for the other tasks" in l]
  assert len(waiting) == 1 and waiting[0].endswith(
      f"Waiting for the other tasks of TF_CONFIG's cluster to connect: worker 1 at {peer} "
      f"(this is worker 0 at {me}); waiting at most 3 s (--multi_worker_timeout)"), lines
  assert re.fullmatch(
      r"run_pretraining\.py: error: TF_CONFIG: worker 0 waited \d+ s "
      r"\(--multi_worker_timeout=3\) for the other tasks to connect and some never did: "
      + re.escape(f"worker 1 at {peer}; start every task of the cluster (same TF_CONFIG "
                  "cluster, each its own task), check the addresses and that their ports "
                  "are reachable"), lines[-1]), lines[-1]
  assert "Traceback" not in proc.stderr
  assert not out.exists()
