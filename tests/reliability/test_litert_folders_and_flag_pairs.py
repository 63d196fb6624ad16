"""The bad-input catalogue, an export's LiteRT folder and flags without their partner: a
LiteRT folder checked whole at load (predict_litert.py, tools/litert_accuracy.py, every
field of model.json altered in turn), run_classifier.py's flags that need another,
`python -m bert <command>`, and the tools' messages, which name their own flags.

The cases run as the rest of the catalogue's do (tests/support/catalogue.py: one
process per script through tests/support/cli_harness.py, exit status 2, ONE error line, no
traceback). One module fixture converts two tiny models (a classifier and a regression
model, random weights) to float32 LiteRT models once; every case works on a copy of
their folder with one thing changed, as a user's edit or a mix-up would leave it.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from catalogue import check_case
from catalogue import flags_named
from catalogue import foreign_flags
from catalogue import run_harness
from conftest import ROOT
import litert_data
import tiny

pytest.importorskip("ai_edge_litert.interpreter")

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
XNNPACK_NOTICE = "INFO: Created TensorFlow Lite XNNPACK delegate for CPU."
SEQ = 24
POSITIONS = 64  # the tiny config's max_position_embeddings
# One layer: what a case changes in a folder (its files, model.json, the vocabulary, the
# flags) is refused the same for any depth (the encoder's outputs a message names: one
# encoder_outputs_N a layer), and exporting and converting the three models (most of this
# file's time) grows with the layers.
LAYERS = 1
MRPC_TEST = ("Index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
             "0\t1\t2\tthe movie was good .\tthe film is great .\n"
             "1\t3\t4\ta sad day .\tthe river was cold .\n")


def _export(root, name, labels, head_info):
  """A tiny classifier (labels) or regression model (None) exported with its float32
  LiteRT model; returns its litert/ folder."""
  from bert import heads  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
  from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  config = tiny.tiny_config(len(litert_data.VOCAB), num_hidden_layers=LAYERS)
  model, _ = heads.build_classifier_model(config, len(labels) if labels else 1)
  export = os.path.join(root, name)
  serving.export_classifier(export, model, labels, litert=litert_metadata.request(
      "float32", {**head_info, "num_texts": 2, "max_seq_length": SEQ, "do_lower_case": True,
                  "normalize": None, "max_position_embeddings": config.max_position_embeddings,
                  "type_vocab_size": config.type_vocab_size},
      os.path.join(root, "vocab.txt")))
  return os.path.join(export, "litert")


def _encoder_export(root):
  """A tiny encoder's LiteRT folder as export_encoder.py --format=tfhub writes it (TF
  Hub's input names); returns its litert/ folder."""
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
  from bert.formats import tfhub_modules  # pylint: disable=g-import-not-at-top
  config = tiny.tiny_config(len(litert_data.VOCAB), num_hidden_layers=LAYERS)
  module, signatures = tfhub_modules.build_encoder_module(modeling.BertModel(config))
  saved = os.path.join(root, "encoder", "encoder")
  tfhub_modules.save_module(module, saved, signatures)
  folder = os.path.join(root, "encoder", "litert")
  litert_convert.write(saved, folder, litert_metadata.request(
      "float32", {"task": "encoder", "head": "encoder", "max_seq_length": SEQ,
                  "do_lower_case": True, "normalize": None, "num_texts": 2,
                  "max_position_embeddings": config.max_position_embeddings,
                  "type_vocab_size": config.type_vocab_size},
      os.path.join(root, "vocab.txt")))
  return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory):
  root = str(tmp_path_factory.mktemp("litert-folders"))
  litert_data.write_vocab(__import__("pathlib").Path(root, "vocab.txt"))
  folders = {
      "mrpc": _export(root, "mrpc", ["0", "1"], {"task": "Mrpc", "task_name": "mrpc",
                                                  "head": "classifier", "labels": ["0", "1"]}),
      "stsb": _export(root, "stsb", None, {"task": "Stsb", "task_name": "stsb",
                                            "head": "regression"}),
      "encoder": _encoder_export(root),
  }
  return root, folders


class Place:
  """A case's own copy of an export's litert/ folder and a data folder."""

  def __init__(self, made, name, source="mrpc"):
    root, folders = made
    self.dir = os.path.join(root, "cases", name)
    shutil.copytree(folders[source], os.path.join(self.dir, "litert"))
    self.model = os.path.join(self.dir, "litert", "model_float32.tflite")
    self.data = os.path.join(self.dir, "data")
    os.makedirs(self.data)
    self.write("data/test.tsv", MRPC_TEST)
    self.out = os.path.join(self.dir, "out")

  def path(self, name):
    return os.path.join(self.dir, name)

  def write(self, name, content):
    with open(self.path(name), "w", encoding="utf-8") as handle:
      handle.write(content)
    return self.path(name)

  def edit_json(self, **changes):
    path = self.path("litert/model.json")
    with open(path, encoding="utf-8") as handle:
      metadata = json.load(handle)
    for key, value in changes.items():
      if value is None:
        metadata.pop(key, None)
      else:
        metadata[key] = value
    with open(path, "w", encoding="utf-8") as handle:
      json.dump(metadata, handle)
    return path

  def argv(self, *extra):
    return [f"--model={self.model}", f"--data_dir={self.data}", f"--output_dir={self.out}",
            *extra]


def _vocab(tokens):
  return "".join(t + "\n" for t in tokens)


FIX = "put back the export's own vocab.txt (model.json {json} names 'vocab.txt'), or " \
      "re-export the model (run_classifier.py/run_multilabel.py --export_dir)"
REEXPORT = "re-export the model (run_classifier.py/run_multilabel.py --export_dir)"


# ---- predict_litert.py: a folder that does not hold what its model.json says, models of
# other exports, and the local-paths rule


def vocab_replaced_by_a_cased_one(made):
  """vocab.txt replaced by another vocabulary (here of another size)."""
  p = Place(made, "cased")
  vocab = p.write("litert/vocab.txt", _vocab(litert_data.VOCAB + ["Good", "Bad", "The"]))
  n, m = len(litert_data.VOCAB) + 3, len(litert_data.VOCAB)
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"{vocab}: {n} tokens, the model was exported with {m} (model.json's vocab_size): "
      + FIX.format(json=p.path("litert/model.json"))))


def vocab_of_the_same_size_reordered(made):
  """vocab.txt with the same tokens, two swapped (the digest tells): same size, other ids."""
  p = Place(made, "swapped")
  tokens = list(litert_data.VOCAB)
  tokens[5], tokens[11] = tokens[11], tokens[5]
  vocab = p.write("litert/vocab.txt", _vocab(tokens))
  with open(vocab, "rb") as handle:
    digest = hashlib.sha256(handle.read()).hexdigest()
  with open(p.path("litert/model.json"), encoding="utf-8") as handle:
    recorded = json.load(handle)["vocab_sha256"]
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"{vocab}: not the vocabulary the model was exported with (its SHA-256 is "
      f"{digest[:12]}..., model.json's vocab_sha256 {recorded[:12]}...): "
      + FIX.format(json=p.path("litert/model.json"))))


def vocab_file_edited_to_name_another(made):
  """model.json's vocab_file names a smaller vocabulary."""
  p = Place(made, "vocabname")
  other = p.write("litert/small_vocab.txt", _vocab(litert_data.VOCAB[:20]))
  meta = p.edit_json(vocab_file="small_vocab.txt")
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"{other}: 20 tokens, the model was exported with {len(litert_data.VOCAB)} (model."
      f"json's vocab_size): put back the export's own vocab.txt (model.json {meta} names "
      f"'small_vocab.txt'), or {REEXPORT}"))


def tsv_model_on_a_folder_with_a_header(made):
  """The tsv task's files start with a header; --has_header not given."""
  p = Place(made, "header")
  p.edit_json(task="DelimitedFile", task_name="tsv", labels=["negative", "positive"],
              num_texts=1)
  rows = ["the movie was good .\tpositive", "a sad day .\tnegative",
          "the plot was great .\tpositive"]
  train = p.write("data/train.tsv", "sentence\tlabel\n" + _vocab(rows))
  p.write("data/test.tsv", "sentence\n" + _vocab(r.split("\t")[0] for r in rows))
  return dict(argv=p.argv("--task_name=tsv"), absent=[p.out], line=(
      f"{train}:1: the first row looks like a header (its label 'label' is a column name "
      "and occurs in no other row); pass --has_header if it is one, or --has_header=false "
      "if the first row really is data"))


def tsv_model_on_a_folder_with_a_header_given(made):
  """The other way: --has_header, three rows predicted for three test rows."""
  p = Place(made, "header-given")
  p.edit_json(task="DelimitedFile", task_name="tsv", labels=["negative", "positive"],
              num_texts=1)
  rows = ["the movie was good .\tpositive", "a sad day .\tnegative",
          "the plot was great .\tpositive"]
  p.write("data/train.tsv", "sentence\tlabel\n" + _vocab(rows))
  p.write("data/test.tsv", "sentence\n" + _vocab(r.split("\t")[0] for r in rows))
  return dict(argv=p.argv("--task_name=tsv", "--has_header"), works=True,
              rows={os.path.join(p.out, "test_results.tsv"): 3})


def regression_model_under_a_classifiers_json(made):
  """An STS-B model_float32.tflite put under MRPC's model.json."""
  p = Place(made, "swapmodel")
  shutil.copy(os.path.join(made[1]["stsb"], "model_float32.tflite"), p.model)
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"--model={p.model}: takes input_ids, input_mask, segment_ids and gives score, but "
      f"{p.path('litert/model.json')} describes a model that takes input_ids, input_mask, "
      "segment_ids and gives label_id, probabilities: the .tflite is not the model model.json"
      f" describes; put the export's own files back together, or {REEXPORT}"))


def encoder_model_under_a_classifiers_json(made):
  """A TF-Hub encoder's model_float32.tflite put under MRPC's model.json."""
  p = Place(made, "swapencoder")
  shutil.copy(os.path.join(made[1]["encoder"], "model_float32.tflite"), p.model)
  return dict(argv=p.argv(), absent=[p.out], expect=[
      f"--model={p.model}: takes input_mask, input_type_ids, input_word_ids and gives "
      "default, encoder_outputs_0, pooled_output, sequence_output, ", f"but {p.path('litert/model.json')} describes a model that "
      "takes input_ids, input_mask, segment_ids and gives label_id, probabilities: the "
      ".tflite is not the model model.json describes"])


def max_seq_length_past_the_positions(made):
  """model.json edited to max_seq_length 512; the model has 64 positions."""
  p = Place(made, "seq512")
  meta = p.edit_json(max_seq_length=512)
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"{meta}: max_seq_length 512 is more than the model's max_position_embeddings "
      f"{POSITIONS}; put back the export's own model.json (max_seq_length as at training), "
      f"or {REEXPORT}"))


def max_seq_length_past_the_positions_of_an_older_export(made):
  """The same on format 1 (no max_position_embeddings recorded): the model itself is asked."""
  p = Place(made, "seq512-v1")
  meta = p.edit_json(max_seq_length=512, format_version=1, vocab_sha256=None,
                     special_ids=None, max_position_embeddings=None, type_vocab_size=None,
                     output_shapes=None)
  return dict(argv=p.argv(), absent=[p.out], expect=[
      f"--model={p.model}: the LiteRT runtime failed on a batch of 1 row(s) of 512 tokens (",
      f"(a row of model.json's max_seq_length=512 tokens; {meta} may not be this model's "
      "own)"])


def special_tokens_renamed(made):
  """[CLS] and [SEP] renamed (the same number of lines)."""
  p = Place(made, "nocls")
  tokens = ["[CLS_]" if t == "[CLS]" else "[SEP_]" if t == "[SEP]" else t
            for t in litert_data.VOCAB]
  vocab = p.write("litert/vocab.txt", _vocab(tokens))
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"{vocab}: has no [CLS], [SEP], which the predictor puts into every row; not the "
      "vocabulary the model was exported with: "
      + FIX.format(json=p.path("litert/model.json"))))


def squad_model(made):
  """A SQuAD export's model (its model.json says so)."""
  p = Place(made, "squad")
  p.edit_json(task="squad", head="squad", labels=None)
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"--model={p.model} is squad's squad model; predict_litert.py serves classifier, "
      "regression and multi-label models (run_classifier.py's and run_multilabel.py's "
      "exports); a SQuAD model's answers need run_squad.py's decoding: run_squad.py "
      "--do_predict (or its SavedModel in export_dir/ids)"))


def encoder_model(made):
  """An encoder's model (export_encoder.py --format=tfhub)."""
  p = Place(made, "encoder")
  p.edit_json(task="encoder", head="encoder", labels=None)
  return dict(argv=p.argv(), absent=[p.out], line=(
      f"--model={p.model} is encoder's encoder model; predict_litert.py serves classifier, "
      "regression and multi-label models (run_classifier.py's and run_multilabel.py's "
      "exports); an encoder's outputs are features for a head of your own: run the .tflite "
      "with ai_edge_litert's Interpreter yourself (docs/serving.md)"))


def _url_case(flag):
  def build(made):
    p = Place(made, f"url-{flag}")
    url = {"model": "gs://b/x/model_float32.tflite", "data_dir": "ram://x",
           "output_dir": "gs://b/out"}[flag]
    argv = [a for a in p.argv() if not a.startswith(f"--{flag}=")] + [f"--{flag}={url}"]
    return dict(argv=argv, absent=[p.out], line=(
        f"--{flag}={url}: predict_litert.py reads and writes local paths only; copy the "
        "export and data here first (gsutil cp -r or gcloud storage cp -r), or use "
        "run_classifier.py --do_predict, which takes URLs"))
  build.__name__ = f"url_as_{flag}"
  return build


def a_good_run(made):
  """The export untouched: it predicts (the checks refuse nothing of its own)."""
  p = Place(made, "good")
  return dict(argv=p.argv(), works=True, rows={os.path.join(p.out, "test_results.tsv"): 2})


PREDICT_CASES = [vocab_replaced_by_a_cased_one, vocab_of_the_same_size_reordered,
                 vocab_file_edited_to_name_another, tsv_model_on_a_folder_with_a_header,
                 tsv_model_on_a_folder_with_a_header_given,
                 regression_model_under_a_classifiers_json,
                 encoder_model_under_a_classifiers_json, max_seq_length_past_the_positions,
                 max_seq_length_past_the_positions_of_an_older_export, special_tokens_renamed,
                 squad_model, encoder_model, a_good_run] + [
                     _url_case(f) for f in ("model", "data_dir", "output_dir")]


# ---- tools/litert_accuracy.py


def accuracy_models_naming_a_missing_file(made):
  """--models names a file the folder does not hold."""
  p = Place(made, "acc-missing")
  p.write("data/dev.tsv", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
          "1\t1\t2\tthe movie was good .\tthe film is great .\n")
  folder = p.path("litert")
  return dict(argv=[f"--litert_dir={folder}", f"--data_dir={p.data}", "--task_name=mrpc",
                    "--models=model_fp16.tflite"], line=(
      f"--models=model_fp16.tflite: model_fp16.tflite is not a model of --litert_dir="
      f"{folder} (its model.json lists model_float32.tflite)"))


def accuracy_model_of_another_task(made):
  """--task_name=sst2 on an MRPC export."""
  p = Place(made, "acc-task")
  return dict(argv=[f"--litert_dir={p.path('litert')}", f"--data_dir={p.data}",
                    "--task_name=sst2"], line=(
      f"{p.model} is Mrpc's classifier (labels 0, 1), not --task_name=sst2's Sst2 (labels "
      "0, 1); use that task's model"))


def accuracy_url_as_litert_dir(made):
  p = Place(made, "acc-url")
  return dict(argv=["--litert_dir=gs://b/export/litert", f"--data_dir={p.data}",
                    "--task_name=mrpc"], line=(
      "--litert_dir=gs://b/export/litert: litert_accuracy.py reads and writes local paths "
      "only; copy the export and data here first (gsutil cp -r or gcloud storage cp -r), "
      "or use run_classifier.py --do_eval, which takes URLs"))


def accuracy_good_run(made):
  """The tool's own run on the untouched export: one JSON row per model."""
  p = Place(made, "acc-good")
  p.write("data/dev.tsv", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
          "1\t1\t2\tthe movie was good .\tthe film is great .\n"
          "0\t3\t4\ta sad day .\tthe river was cold .\n")
  return dict(argv=[f"--litert_dir={p.path('litert')}", f"--data_dir={p.data}",
                    "--task_name=mrpc"], works=True)


ACCURACY_CASES = [accuracy_models_naming_a_missing_file, accuracy_model_of_another_task,
                  accuracy_url_as_litert_dir, accuracy_good_run]


# ---- run_classifier.py: flags without their partner


def _classifier_argv(made, *extra):
  root = made[0]
  config = tiny.write_tiny_config(os.path.join(root, "bert_config.json"),
                                  len(litert_data.VOCAB))
  data = os.path.join(root, "cases", "cls-data")
  os.makedirs(data, exist_ok=True)
  return ["--task_name=MRPC", "--do_eval", f"--data_dir={data}",
          f"--vocab_file={os.path.join(root, 'vocab.txt')}", f"--bert_config_file={config}",
          f"--output_dir={os.path.join(root, 'cases', 'cls-out')}", *extra]


def litert_without_export_dir(made):
  """--litert=int8 without --export_dir."""
  return dict(argv=_classifier_argv(made, "--litert=int8"), line=(
      "--litert=int8 writes the LiteRT models of an export: it needs --export_dir (without "
      "it the flag does nothing)"))


def num_tpu_cores_without_use_tpu(made):
  return dict(argv=_classifier_argv(made, "--num_tpu_cores=4"), line=(
      "--num_tpu_cores=4 counts the TPU's cores: it needs --use_tpu (without it the flag "
      "does nothing)"))


def eval_every_steps_without_do_train(made):
  return dict(argv=_classifier_argv(made, "--eval_every_steps=5"), line=(
      "--eval_every_steps=5 evaluates during training: it needs --do_train (without it the "
      "flag does nothing)"))


CLASSIFIER_CASES = [litert_without_export_dir, num_tpu_cores_without_use_tpu,
                    eval_every_steps_without_do_train]

SCRIPTS = {"predict_litert.py": PREDICT_CASES, "tools/litert_accuracy.py": ACCURACY_CASES,
           "run_classifier.py": CLASSIFIER_CASES}
IDS = [(script, build.__name__) for script, builders in SCRIPTS.items()
       for build in builders]
_RESULTS = {}


def _result(made, tmp_root, script, name):
  if script not in _RESULTS:
    specs = {b.__name__: b(made) for b in SCRIPTS[script]}
    _RESULTS[script] = (specs, run_harness(script, specs, tmp_root))
  specs, results = _RESULTS[script]
  return specs[name], results[name]


@pytest.mark.parametrize("script,name", IDS, ids=[f"{s}-{n}" for s, n in IDS])
def test_bad_input(made, script, name):
  spec, result = _result(made, made[0], script, name)
  rows = spec.pop("rows", {})
  # The LiteRT runtime's own notice when it builds an interpreter (its C++ log, which
  # no setting of ours silences) is a log line, not a message of ours.
  result = dict(result, stderr="\n".join(
      l for l in result["stderr"].splitlines() if l != XNNPACK_NOTICE))
  check_case(script, spec, result)
  for path, count in rows.items():
    with open(path, encoding="utf-8") as handle:
      assert len(handle.read().splitlines()) == count, path
  # check_case also holds every --flag of the message to the tool's own (the harness
  # lists them): the tools' messages used to name the predictor's --model.
  assert result["flags"] and "model" not in result["flags"] or script == "predict_litert.py"


def test_flags_named_reads_a_message_as_a_user_does():
  assert foreign_flags("--models=x: no; pass --nohas_header, not --model", {
      "models", "has_header"}) == ["model"]
  assert flags_named("--model=x: copy it, or use run_classifier.py --do_predict, which "
                     "takes URLs; pass --has_header or --nohas_header") == {
                         "model", "has_header", "nohas_header"}
  assert flags_named("a--b and bert-run-classifier --litert=none") == set()


# ---- python -m bert <command>


def _python_m_bert(*argv, cwd=None):
  return subprocess.run([sys.executable, "-m", "bert", *argv], capture_output=True,
                        text=True, env=dict(ENV, PYTHONPATH=ROOT), cwd=cwd, timeout=300)


def test_python_m_bert_runs_the_command_or_refuses_in_one_line(made, tmp_path):
  # Run from outside the clone, as an installed package is: the command runs (here
  # to its flag check: --litert without --export_dir), named as its console script.
  proc = _python_m_bert("run_classifier", *_classifier_argv(made, "--litert=int8"),
                        cwd=tmp_path)
  assert proc.returncode == 2, proc.stderr
  assert proc.stderr.splitlines()[-1] == (
      "bert-run-classifier: error: --litert=int8 writes the LiteRT models of an export: it "
      "needs --export_dir (without it the flag does nothing)")
  assert proc.stdout == ""
  # Without the required flags: the command runs, so its parse names the missing required
  # flags in one line, exactly as `python run_classifier.py --task_name=MRPC` does.
  proc = _python_m_bert("run_classifier", "--task_name=MRPC", cwd=tmp_path)
  assert proc.returncode == 2 and proc.stdout == "", proc.stderr
  assert proc.stderr.splitlines() == [
      "bert-run-classifier: error: missing the required flags --bert_config_file, "
      "--vocab_file, --output_dir, --data_dir; --helpshort lists the flags"]
  for argv, line in (
      (["run_clasifier", "--task_name=MRPC"], "'run_clasifier' is not a command"),
      (["--task_name=MRPC"], "flags come after the command")):
    proc = _python_m_bert(*argv, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"python -m bert: error: {line}: "
                                                   "python -m bert <command> [flags], "
                                                   "the command one of create_vocab, "), lines
  proc = _python_m_bert(cwd=tmp_path)
  assert proc.returncode == 0 and "  bert-predict-litert" in proc.stdout.splitlines()


# ---- every field of model.json altered in turn, and vocab.txt: the load refuses


def _altered(made, name, **changes):
  p = Place(made, f"field-{name}")
  p.edit_json(**changes)
  return p


FIELDS = [
    ("vocab_size", dict(vocab_size=len(litert_data.VOCAB) + 1), r"tokens, the model was "
     r"exported with \d+ \(model.json's vocab_size\)"),
    ("vocab_sha256", dict(vocab_sha256="0" * 64), "not the vocabulary the model was "
     "exported with"),
    ("special_ids", dict(special_ids={"[CLS]": 7}), r"its special tokens' ids differ from "
     r"the model's \(\[CLS\] is 2, model.json says 7\)"),
    ("vocab_file", dict(vocab_file="nowhere.txt"), "nowhere.txt: no such file"),
    ("max_seq_length", dict(max_seq_length=2), "max_seq_length 2 is not a whole number"),
    ("max_seq_length", dict(max_seq_length="32"), "max_seq_length '32' is not a whole"),
    ("max_position_embeddings", dict(max_position_embeddings=16), "max_seq_length 24 is "
     "more than the model's max_position_embeddings 16"),
    ("type_vocab_size", dict(type_vocab_size=1), "type_vocab_size 1 cannot embed the 2 "
     "texts"),
    ("do_lower_case", dict(do_lower_case="yes"), "do_lower_case 'yes' is not true or false"),
    ("head", dict(head="regression"), "a regression model's predictions are its score, but "
     "its outputs are label_id, probabilities"),
    ("labels", dict(labels=["0", "1", "2"]), r"output_shapes says probabilities \[2\] per "
     r"row, for 3 labels"),
    # An older export (format 1, no output_shapes): the probe row's outputs are measured.
    ("labels", dict(labels=["0", "1", "2"], format_version=1, output_shapes=None),
     r"its probabilities has shape \[2\] per row, .* says \[3\] \(3 labels\)"),
    ("labels", dict(labels=None), "a classifier model without its labels"),
    ("inputs", dict(inputs=["input_ids", "input_mask"]), "takes input_ids, input_mask, "
     "segment_ids and gives label_id, probabilities, but"),
    ("outputs", dict(outputs=["probabilities"]), "describes a model that takes input_ids, "
     "input_mask, segment_ids and gives probabilities"),
    ("output_shapes", dict(output_shapes={"label_id": [], "probabilities": [5]}),
     r"output_shapes says probabilities \[5\] per row, for 2 labels"),
    ("format_version", dict(format_version=3), "format_version 3; this version of the "
     "project reads 1 and 2"),
    ("format", dict(format="other"), "not a bert-litert description"),
    ("models", dict(models={"float32": {"file": "model.tflite"}}), "model.json beside it "
     "lists model.tflite, not this file"),
] + [(key, {key: None}, f"has no '{key}'") for key in (
    "head", "max_seq_length", "do_lower_case", "vocab_file", "vocab_size", "inputs",
    "outputs", "vocab_sha256", "special_ids", "max_position_embeddings", "type_vocab_size",
    "output_shapes")]


@pytest.mark.parametrize("field,changes,message", FIELDS,
                         ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(FIELDS)])
def test_each_field_of_model_json_altered_is_refused_at_load(made, field, changes, message):
  from bert.litert import predictor  # pylint: disable=g-import-not-at-top
  p = _altered(made, f"{field}-{abs(hash(json.dumps(changes, sort_keys=True))) % 10**8}",
               **changes)
  loaded = []
  with pytest.raises(predictor.UserError, match=message):
    loaded.append(predictor.load_model(p.model, num_threads=1))
    loaded[0].runner()
  if loaded:  # refused when the runtime checked it: asked again, refused again
    with pytest.raises(predictor.UserError, match=message):
      loaded[0].runner()


def test_the_untouched_export_loads_and_its_probe_passes(made):
  from bert.litert import predictor  # pylint: disable=g-import-not-at-top
  p = Place(made, "field-none")
  model = predictor.load_model(p.model, num_threads=1)
  model.runner()
  probabilities = model.predict([model.encode("the movie was good .", "a sad day .")], 4,
                                "probabilities")
  assert probabilities.shape == (1, 2) and abs(float(probabilities.sum()) - 1) < 1e-5
