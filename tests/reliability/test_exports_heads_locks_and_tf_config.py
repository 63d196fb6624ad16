"""The bad-input catalogue, what earlier runs and the cluster leave a command: export
versions already there (or a file in a version's place), what a killed export left, the
head a checkpoint records, a run lock that is not one, and TF_CONFIG.

The catalogue's machinery and rules: tests/support/catalogue.py.
"""
import json
import os

import pytest

import catalogue
from catalogue import classifier_args, mrpc_folder

CATALOGUE = catalogue.Catalogue(default_scripts={"run_classifier.py"})
case = CATALOGUE.case


# ---- export versions, recorded heads, the run lock, TF_CONFIG


def _saved_model_stub(ws, folder):
  """A folder that stands for an exported version (its content must survive)."""
  ws.write(f"{folder}/saved_model.pb", "version already served\n")
  return ws.path(folder)


@case("run_classifier.py", default=True)
def export_version_that_exists(ws):
  d = mrpc_folder(ws, "cls-ev1", train="good")
  out, export = ws.path("cls-ev1-out"), ws.path("cls-ev1-export")
  _saved_model_stub(ws, "cls-ev1-export/ids/1")
  _saved_model_stub(ws, "cls-ev1-export/ids/2")
  return dict(argv=classifier_args(ws, d, out, "--do_train", f"--export_dir={export}",
                               "--export_version=1"),
              expect=[f"--export_version=1: {export}/ids/1 already exists (versions there: "
                      "1, 2)", "--overwrite_export"],
              absent=[out, f"{export}/text"],
              kept={f"{export}/ids/{v}/saved_model.pb": "version already served\n"
                    for v in (1, 2)})


@case("run_classifier.py")
def unversioned_export_over_versions(ws):
  d = mrpc_folder(ws, "cls-ev0", train="good")
  out, export = ws.path("cls-ev0-out"), ws.path("cls-ev0-export")
  _saved_model_stub(ws, "cls-ev0-export/ids/4")
  return dict(argv=classifier_args(ws, d, out, "--do_train", f"--export_dir={export}",
                               "--overwrite_export"),
              expect=[f"--export_dir={export}: holds versioned exports (ids/ 4)"],
              absent=[out],
              kept={f"{export}/ids/4/saved_model.pb": "version already served\n"})


@case("run_classifier.py", default=True)
def run_lock_is_a_directory(ws):
  d = mrpc_folder(ws, "cls-lockdir", train="good")
  out = ws.mkdir("cls-lockdir-out")
  lock = ws.mkdir("cls-lockdir-out/.bert-run.lock")
  return dict(argv=classifier_args(ws, d, out, "--do_train"),
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
  d = mrpc_folder(ws, "cls-hi", train="good")
  out = ws.path("cls-hi-out")
  return dict(argv=classifier_args(ws, d, out, "--do_train",
                               f"--init_checkpoint={ws.path('cls-hi-ckpt')}"),
              setup=[_recorded_head(ws, "cls-hi-ckpt", "{")],
              expect=[ws.path("cls-hi-ckpt", "ckpt-7") + ": its recorded head_info is not "
                      "valid JSON"], absent=[os.path.join(out, "checkpoint")])


_CLUSTER = {"worker": ["localhost:23456", "localhost:23457"]}


def _tf_config_case(ws, name, tf_config, expect):
  d = mrpc_folder(ws, f"cls-tfc-{name}", train="good")
  out = ws.path(f"cls-tfc-{name}-out")
  raw = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
  return dict(argv=classifier_args(ws, d, out, "--do_train",
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


# ---- exports over a file, or after a killed export


@case("run_classifier.py", default=True)
def export_version_over_a_file_with_overwrite(ws):
  """exp/ids/1 a regular file and --overwrite_export: the run used to exit 0 with the
  user's file moved to exp/ids/.1.tmp-*."""
  d = mrpc_folder(ws, "cls-evf", train="good")
  out, export = ws.path("cls-evf-out"), ws.path("cls-evf-export")
  ws.write("cls-evf-export/ids/1", "a user's notes, not an export\n")
  return dict(argv=classifier_args(ws, d, out, "--do_train", f"--export_dir={export}",
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
  d = mrpc_folder(ws, "cls-evk", train="good")
  out = ws.path("cls-evk-out")
  export = _stale_export(ws, "cls-evk-export")
  # The export of a trained run's output_dir (no --do_train): the killed export's
  # temporaries are the export's to clean, and tracing a training step first would double
  # this run's time.
  return dict(argv=classifier_args(ws, d, out, f"--export_dir={export}",
                               "--export_version=2"), works=True,
              setup=[_recorded_head(ws, "cls-evk-out", '{"task": "Mrpc", "head": '
                                    '"classifier", "labels": ["0", "1"]}')],
              gone=[f"{export}/ids/.3.tmp-0123abcd", f"{export}/text/.3.tmp-4567cdef"],
              kept={f"{export}/ids/1/saved_model.pb": "version already served\n",
                    f"{export}/ids/.3.tmp-notes": "the user's own file\n"},
              exists=[f"{export}/ids/2/saved_model.pb", f"{export}/text/2/saved_model.pb"],
              no_temporaries=[export])


@case("run_classifier.py")
def unversioned_export_after_a_killed_one_removes_its_temporary(ws):
  d = mrpc_folder(ws, "cls-ev0k", train="good")
  out, export = ws.path("cls-ev0k-out"), ws.path("cls-ev0k-exports/export")
  stale = ws.write("cls-ev0k-exports/.export.tmp-89abcdef/saved_model.pb", "half-written\n")
  mine = ws.write("cls-ev0k-exports/.export.tmp-notes", "the user's own file\n")
  return dict(argv=classifier_args(ws, d, out, "--do_train", f"--export_dir={export}"),
              works=True, gone=[os.path.dirname(stale)],
              exists=[f"{export}/saved_model.pb", f"{export}/ids/saved_model.pb"],
              kept={mine: "the user's own file\n"})


# --------------------------------------------------------------------------- running


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
  return catalogue.Workspace(tmp_path_factory.mktemp("catalogue"))


@pytest.mark.parametrize("case_id", CATALOGUE.ids(default=True))
def test_bad_input_default(ws, case_id):
  CATALOGUE.check(ws, case_id)


@pytest.mark.slow
@pytest.mark.parametrize("case_id", CATALOGUE.ids(default=False))
def test_bad_input_catalogue(ws, case_id):
  CATALOGUE.check(ws, case_id)
