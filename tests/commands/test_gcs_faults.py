"""Bad buckets and kills on gs://, every command, through TensorFlow's own GCS client.

Against the local GCS emulator (tests/support/gcs_emulator), in `make test`'s gs:// stage:
  * every output flag of every command given a bucket that does not exist: one line
    naming the flag and the bucket, exit status 2, before any work (the cases of one
    command run in one process, tests/support/cli_harness.py; the commands side by side);
    an object where a folder goes, a bucket name GCS refuses, a missing input bucket,
    and `gs://b//x`, read as gsutil reads it;
  * kill -9 after each file of an export's move (tests/support/export_mover.py), then
    the rerun of the same command, which replaces the half-moved export.
Each loads TensorFlow in a process per command: `make test` runs them for the four
commands whose bucket errors were the worst and three kill points; `make test-slow` for every command and step.
The runs that train (a cut network mid-run, a kill between a checkpoint's .index and the
`checkpoint` file) take minutes: tests/commands/test_gcs_runs.py, in `make test-slow`.
"""
import json
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import ROOT
from tiny import tiny_config_dict
from test_url_paths import CORPUS, WORDS

pytestmark = [pytest.mark.gcs, pytest.mark.gcs_pipeline]

MISSING = "gs://no-such-bucket-b3"  # nobody creates it
LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING: All log messages|WARNING:absl:|I\d{4}|W\d{4})")


def _missing_line(script, flag, url):
  return (f"{script}: error: --{flag}={url}: the bucket {MISSING} does not exist (or these "
          "credentials cannot see it); create it, or check the name")


def _local_inputs(root):
  """Inputs that the commands would read, had their output been good."""
  files = {"vocab.txt": "\n".join(WORDS) + "\n", "corpus.txt": CORPUS,
           "bert_config.json": json.dumps(tiny_config_dict(len(WORDS))),
           "sentences.txt": "the cat sat .\n", "squad.json": "{}", "pred.json": "{}"}
  for name, text in files.items():
    with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
      handle.write(text)
  os.makedirs(os.path.join(root, "data"), exist_ok=True)
  return {name.split(".")[0]: os.path.join(root, name) for name in files}


def _commands(i, local):
  """{script: (argv without the output flags, {output flag: URL relative name})}."""
  model = [f"--vocab_file={i['vocab']}", f"--bert_config_file={i['bert_config']}"]
  data = os.path.dirname(i["vocab"]) + "/data"
  out = f"--output_dir={local}/out"
  return {
      "create_vocab.py": ([f"--input_file={i['corpus']}", "--vocab_size=40"],
                          {"output_file": "v/vocab.txt", "output_config_file": "v/c.json"}),
      "create_pretraining_data.py": ([f"--input_file={i['corpus']}", model[0]],
                                     {"output_file": "d/pt.tfrecord"}),
      "run_pretraining.py": ([f"--input_file={data}/*.tfrecord", model[1], "--do_train"],
                             {"output_dir": "pt"}),
      "run_classifier.py": (["--task_name=MRPC", f"--data_dir={data}", *model, "--do_train",
                             out], {"output_dir": "cls", "export_dir": "exp"}),
      "run_squad.py": ([f"--train_file={i['squad']}", *model, "--do_train", out],
                       {"output_dir": "sq", "export_dir": "exp"}),
      "run_ner.py": ([f"--data_dir={data}", *model, "--do_train", out],
                     {"output_dir": "ner", "feature_cache_dir": "cache"}),
      "run_tagger.py": ([f"--data_dir={data}", *model, "--do_train"], {"output_dir": "tag"}),
      "run_swag.py": ([f"--data_dir={data}", *model, "--do_train"], {"output_dir": "swag"}),
      "run_multilabel.py": ([f"--data_dir={data}", *model, "--do_train", out],
                            {"output_dir": "ml", "export_dir": "exp"}),
      "extract_features.py": ([f"--input_file={i['sentences']}", *model,
                               f"--init_checkpoint={data}/none"],
                              {"output_file": "f/features.jsonl"}),
      "export_encoder.py": ([*model, f"--init_checkpoint={data}/none"], {"export_dir": "hub"}),
      "quickstart.py": ([], {"output_dir": "qs"}),
      "squad_evaluate.py": ([i["squad"], i["pred"]], {"out-file": "e/eval.json"}),
  }


def _harness(gcs, script, cases, workdir):
  """Starts cli_harness.py on `cases` ({id: argv}) of `script`; returns (process, results
  file)."""
  cases_file = os.path.join(workdir, f"{script}.cases.json")
  results_file = os.path.join(workdir, f"{script}.results.json")
  with open(cases_file, "w", encoding="utf-8") as handle:
    json.dump([{"id": cid, "argv": argv} for cid, argv in cases.items()], handle)
  process = subprocess.Popen(
      [sys.executable, os.path.join(ROOT, "tests", "support", "cli_harness.py"), script,
       cases_file, results_file], env={**os.environ, **gcs.env(), "TF_CPP_MIN_LOG_LEVEL": "3"},
      cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  return process, results_file


def _error_line(result):
  lines = [l for l in result["stderr"].splitlines() if l.strip() and not LOG_LINE.match(l)]
  assert result["exit"] == 2 and not result["crashed"], result["stderr"][-3000:]
  assert "Traceback" not in result["stderr"], result["stderr"][-3000:]
  return lines[-1]


# The commands whose bucket errors were the worst (a missing bucket was a raw HTTP error
# naming our lock, run_classifier's only after training) and the generator: in `make test`; every
# command in `make test-slow` (each command's cases run in a process of its own that loads
# TensorFlow: a few seconds each).
WORST_BEFORE = ("run_classifier.py", "extract_features.py", "export_encoder.py",
            "create_pretraining_data.py")


@pytest.mark.parametrize("scripts", [
    pytest.param(WORST_BEFORE, id="four-commands"),
    pytest.param(None, id="every-command", marks=pytest.mark.slow)])
def test_every_output_flag_of_every_command_checks_its_bucket_before_any_work(
    gcs, gcs_bucket, tmp_path, scripts):
  inputs = _local_inputs(str(tmp_path))
  local = str(tmp_path / "local")
  gcs.put_object(f"{gcs_bucket}/afile", b"a user's object\n")
  expected, runs = {}, {}
  commands = _commands(inputs, local)
  assert set(WORST_BEFORE) <= set(commands)
  for script, (argv, outputs) in commands.items():
    if scripts and script not in scripts:
      continue
    cases = {}
    for flag, name in outputs.items():
      url = f"{MISSING}/{name}"
      cases[f"missing-{flag}"] = [*argv, f"--{flag}={url}"]
      expected[(script, f"missing-{flag}")] = _missing_line(script, flag, url)
    flag, name = next(iter(outputs.items()))
    url = f"{gcs_bucket}/afile/{name}"
    cases["object-for-folder"] = [*argv, f"--{flag}={url}"]
    expected[(script, "object-for-folder")] = (
        f"{script}: error: --{flag}={url}: {gcs_bucket}/afile is a file, not a directory")
    runs[script] = cases
  # A name GCS refuses, said before any request; a missing bucket of an input.
  runs["create_pretraining_data.py"]["bad-name"] = [
      f"--input_file={inputs['corpus']}", f"--vocab_file={inputs['vocab']}",
      "--output_file=gs://Upper/pt.tfrecord"]
  expected[("create_pretraining_data.py", "bad-name")] = (
      "create_pretraining_data.py: error: --output_file=gs://Upper/pt.tfrecord: gs://Upper "
      "is not a valid bucket name (bucket names have no capital letters); check the name")
  runs["export_encoder.py"]["bad-name"] = [
      f"--vocab_file={inputs['vocab']}", f"--bert_config_file={inputs['bert_config']}",
      "--init_checkpoint=x", "--export_dir=gs://_x/exp"]
  expected[("export_encoder.py", "bad-name")] = (
      "export_encoder.py: error: --export_dir=gs://_x/exp: gs://_x is not a valid bucket "
      "name (bucket names hold only lowercase letters, digits, '-', '_' and '.', and start "
      "and end with a letter or a digit); check the name")
  runs["create_pretraining_data.py"]["missing-input"] = [
      f"--input_file={MISSING}/*.txt", f"--vocab_file={inputs['vocab']}",
      f"--output_file={tmp_path}/pt.tfrecord"]
  expected[("create_pretraining_data.py", "missing-input")] = (
      f"create_pretraining_data.py: error: --input_file={MISSING}/*.txt: the bucket "
      f"{MISSING} does not exist (or these credentials cannot see it); create it, or check "
      "the name")
  runs["extract_features.py"]["missing-input"] = [
      f"--input_file={MISSING}/in.txt", f"--vocab_file={inputs['vocab']}",
      f"--bert_config_file={inputs['bert_config']}", "--init_checkpoint=x",
      f"--output_file={tmp_path}/f.jsonl"]
  expected[("extract_features.py", "missing-input")] = (
      f"extract_features.py: error: --input_file={MISSING}/in.txt: the bucket {MISSING} "
      "does not exist (or these credentials cannot see it); create it, or check the name")
  # A bucket that may not be written: the probe before any work says so.
  readonly = gcs.new_bucket("ro", readonly=True)
  runs["export_encoder.py"]["read-only"] = [
      f"--vocab_file={inputs['vocab']}", f"--bert_config_file={inputs['bert_config']}",
      "--init_checkpoint=x", f"--export_dir={readonly}/exp"]
  expected[("export_encoder.py", "read-only")] = re.compile(
      rf"export_encoder\.py: error: --export_dir={readonly}/exp: permission denied \(.*"
      r"HTTP response code 403.*\); check the bucket's permissions")
  # gs://b//x: read as gsutil reads it, gs://b/x, and said so.
  runs["create_pretraining_data.py"]["double-slash"] = [
      f"--input_file={inputs['corpus']}", f"--vocab_file={inputs['vocab']}",
      "--max_seq_length=24", "--dupe_factor=1", "--num_workers=0",
      f"--output_file={gcs_bucket}//d//pt.tfrecord"]
  results = {}
  pending = list(runs.items())
  running = []
  while pending or running:  # four at a time: each loads TensorFlow
    while pending and len(running) < 4:
      script, cases = pending.pop(0)
      running.append((script, *_harness(gcs, script, cases, str(tmp_path))))
    script, process, results_file = running.pop(0)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    with open(results_file, encoding="utf-8") as handle:
      results[script] = json.load(handle)
  for (script, case), line in expected.items():
    said = _error_line(results[script][case])
    assert (line.fullmatch(said) if isinstance(line, re.Pattern) else said == line), (
        script, case, said)
  assert gcs.list_objects(readonly) == []
  # Before any work: nothing created, nothing written anywhere.
  assert not os.path.exists(local)
  assert not [n for n in os.listdir(tmp_path) if n.endswith((".tfrecord", ".jsonl"))]
  made = results["create_pretraining_data.py"]["double-slash"]
  assert made["exit"] == 0, made["stderr"][-3000:]
  assert (f"--output_file={gcs_bucket}//d//pt.tfrecord: read as {gcs_bucket}/d/pt.tfrecord "
          "(repeated slashes collapsed, as gsutil does)") in made["stderr"]
  assert gcs.list_objects(gcs_bucket) == ["afile", "d/", "d/pt.tfrecord"]
  assert len(gcs.get_object(f"{gcs_bucket}/d/pt.tfrecord")) > 100


# --------------------------------------------------------------------------- kill -9 during an export's move


def _mover(gcs, root, dirs, kill_at, log):
  """export_mover.py writing the exports `dirs` under `root`, each run with the same
  command line; it kills itself (SIGKILL) before the `kill_at`-th file of the move (0:
  it is not killed)."""
  env = {**os.environ, **gcs.env(), "TF_CPP_MIN_LOG_LEVEL": "3",
         "EXPORT_MOVER_KILL_AT": str(kill_at), "EXPORT_MOVER_DIRS": ",".join(dirs)}
  return subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "support",
                                                         "export_mover.py"), root],
                          env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)


@pytest.mark.parametrize("kill_points", [
    pytest.param("first,middle,last", id="three-steps"),
    pytest.param("each", id="each-step", marks=pytest.mark.slow)])
def test_a_kill_at_each_step_of_an_exports_move_then_the_rerun(gcs, gcs_bucket, tmp_path,
                                                               kill_points):
  """The export (export_mover.EXPORT: a SavedModel with its variables, the token-id
  SavedModel in ids/, the LiteRT folder) moves object by object: after a kill before
  each of its files, no folder shows its defining file without the rest; the same
  command run again replaces it (no --overwrite_export), and nothing of the killed run
  is left: no temporary, no marker, no lock."""
  import export_mover  # pylint: disable=g-import-not-at-top  (tests/support)
  steps = len(export_mover.EXPORT)
  order = sorted(export_mover.EXPORT, key=export_mover.move_order)
  logs = open(tmp_path / "movers.log", "w+", encoding="utf-8")  # noqa: SIM115
  # Before the first file, in the middle (a subfolder whole, another begun), before the
  # last (everything but the folder's saved_model.pb): in `make test`; each in test-slow.
  points = (range(1, steps + 1) if kill_points == "each" else (1, steps // 2 + 1, steps))
  dirs = {kill_at: f"k{kill_at}/exp" for kill_at in points}
  batches = [list(dirs)[i:i + 4] for i in range(0, len(dirs), 4)]  # each loads TensorFlow
  for batch in batches:
    movers = {k: _mover(gcs, gcs_bucket, [dirs[k]], k, logs) for k in batch}
    for kill_at, process in movers.items():
      assert process.wait(timeout=300) == -signal.SIGKILL, (kill_at, process.returncode)
  for kill_at, name in dirs.items():
    found = [o[len(name) + 1:] for o in gcs.list_objects(f"{gcs_bucket}/{name}/")]
    moved = order[:kill_at - 1]
    assert sorted(n for n in found if n and not n.endswith("/")) == sorted(moved), kill_at
    for folder, defining in export_mover.DEFINING.items():
      if defining in moved:  # a reader that finds it finds its folder whole
        assert {n for n in export_mover.EXPORT if n.startswith(folder)} <= set(moved)
    left = gcs.list_objects(f"{gcs_bucket}/k{kill_at}/")
    assert f"k{kill_at}/.exp.lock" in left and f"k{kill_at}/.exp.moving" in left, left
    assert any(n.startswith(f"k{kill_at}/.exp.tmp-") for n in left), left
  # The rerun: the same command line, every export replaced in turn.
  rerun = _mover(gcs, gcs_bucket, list(dirs.values()), 0, logs)
  logs.seek(0)
  assert rerun.wait(timeout=300) == 0, logs.read()[-3000:]
  for kill_at, name in dirs.items():
    for file_name, data in export_mover.EXPORT.items():
      assert gcs.get_object(f"{gcs_bucket}/{name}/{file_name}") == data, (kill_at, file_name)
    left = [o for o in gcs.list_objects(f"{gcs_bucket}/k{kill_at}/") if not o.endswith("/")]
    assert sorted(left) == sorted(f"{name}/{n}" for n in export_mover.EXPORT), left
  logs.seek(0)
  said = logs.read()
  assert said.count("was killed while moving it into place; this run writes it again") == \
      len(dirs), said[-3000:]
  assert said.count("Took over the run lock ") == len(dirs), said[-3000:]


# Two workers of one run check and create the same output folder at once; each check writes
# and removes a probe object there. Run in a process of its own, through TensorFlow's GCS
# client against the emulator.
_FOLDER_CHECKS = r'''
import json, sys
from bert.utils import atomic_output, file_io
bucket = sys.argv[1]
seen = {}
probe = atomic_output._probe_write
def recording_probe(folder):
  # What another worker sees of the folder while this probe object is its only content.
  seen["folder_there_before_the_probe"] = file_io.isdir(folder)
  probe(folder)
atomic_output._probe_write = recording_probe
atomic_output.ensure_output_dir(bucket + "/run/pt")
seen["made"] = file_io.isdir(bucket + "/run/pt")
seen["isfile"] = {name: file_io.isfile(bucket + "/" + name)
                  for name in ("prefix", "prefix/only", "object", "none", "run/pt")}
print(json.dumps(seen))
'''


def test_a_folder_seen_between_a_probes_write_and_removal_is_never_a_file(gcs, gcs_bucket):
  """ensure_output_dir makes the folder before its write probe, so that the probe never is
  the only object under the folder's prefix (another worker making the same folder saw it
  appear and vanish: "/run/pt is not a directory", once in the two-worker pipeline); and
  file_io.isfile asks the store one question (stat: an object of exactly that name), so a
  folder whose objects come and go between two questions is never taken for a file."""
  gcs.put_object(f"{gcs_bucket}/prefix/only", b"x")
  gcs.put_object(f"{gcs_bucket}/object", b"x")
  result = gcs.run([sys.executable, "-c", _FOLDER_CHECKS, gcs_bucket], cwd=ROOT,
                   env={"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT})
  seen = json.loads(result.stdout.strip().splitlines()[-1])
  assert seen == {"folder_there_before_the_probe": True, "made": True,
                  "isfile": {"prefix": False, "prefix/only": True, "object": True,
                             "none": False, "run/pt": False}}
  assert not [n for n in gcs.list_objects(gcs_bucket) if "probe" in n]
