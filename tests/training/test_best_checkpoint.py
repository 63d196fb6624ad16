"""The best checkpoint on dev and early stopping, through finetune.run in-process: a small
Task whose dev metric is scripted by the global step (so that it peaks where the test
says), over the tiny config. A run keeps the peak's weights in output_dir/best; eval,
predict and the export read them; early stopping stops after N evaluations and the
same command run again trains no further; a run cut at each point of an evaluation and
run again keeps what an uninterrupted run keeps; ram:// too.
"""
import hashlib
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import metrics
from bert import modeling
from bert import optimization
from bert.training import best_checkpoint
from bert.training import checkpoints
from bert.training import finetune
from bert.training import run_options
from bert.utils import atomic_output
from bert.utils import errors
from bert.utils import file_io
from bert.utils import paths
import tiny

VOCAB, SEQ, ROWS, LABELS = 50, 12, 16, 2
# The scripted dev accuracy at each evaluation step: it peaks at step 6.
SCORES = {2: 0.5, 4: 0.75, 6: 0.9, 8: 0.6, 10: 0.8, 12: 0.85}


class Killed(BaseException):
  """What a kill -9 leaves is what the files hold when this is raised: nothing after it
  runs (not even the driver's own error handling, which lets BaseException through)."""


def _rows(seed):
  rng = np.random.default_rng(seed)
  ids = np.zeros((ROWS, SEQ), np.int32)
  for row, length in enumerate(rng.integers(4, SEQ + 1, ROWS)):
    ids[row, :length] = rng.integers(5, VOCAB, length)
  return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
          "segment_ids": np.zeros((ROWS, SEQ), np.int32),
          "label_ids": rng.integers(0, LABELS, ROWS).astype(np.int32)}


# The step of weights seen in an evaluation, by their bytes: weights evaluated again
# (the best, restored after training, or in a run that does not train) keep their step.
STEP_OF_WEIGHTS = {}


def _fingerprint(model):
  return hashlib.sha256(b"".join(np.asarray(v.numpy()).tobytes()
                                 for v in model.weights)).hexdigest()


def _logits(model, rows):
  """Logits float64 [ROWS, LABELS] of one eager call (no tracing: the tests stay quick)."""
  inputs = {k: tf.constant(rows[k]) for k in ("input_ids", "input_mask", "segment_ids")}
  return model(inputs, training=False)["logits"].numpy().astype(np.float64)


class ScriptedTask(finetune.Task):
  """A two-label classifier over random rows whose dev accuracy is SCORES[step]: the
  step of weights evaluated before, else the optimizer's (which a resume restores);
  eval_loss is the real one. predict writes the probabilities; export the weights, by
  Google name."""

  name = "scripted"
  needs_vocab = False

  def __init__(self, options, optimizers, kill_at_evaluation=None):
    super().__init__(options)
    self.optimizers, self.kill_at_evaluation = optimizers, kill_at_evaluation
    self.splits, self.evaluated_steps = {}, []

  def read_data(self, config):
    del config
    self.splits = {"train": _rows(1), "dev": _rows(2), "test": _rows(3)}

  def num_train_examples(self):
    return ROWS

  def train_dataset(self, input_context, batch_size):
    del input_context
    return tf.data.Dataset.from_tensor_slices(self.splits["train"]).shuffle(
        ROWS, seed=self.options.seed).repeat().batch(batch_size, drop_remainder=True)

  def build_model(self, config):
    return heads.build_classifier_model(config, LABELS)[0]

  def loss(self, features, outputs):
    return heads.classifier_loss(features, outputs)

  def eval_metric_names(self):
    return ["eval_accuracy", "eval_loss", "num_examples"]

  def evaluate(self, model, strategy):
    fingerprint = _fingerprint(model)
    step = STEP_OF_WEIGHTS.get(fingerprint)
    if step is None:
      step = STEP_OF_WEIGHTS[fingerprint] = int(self.optimizers[-1].iterations.numpy())
    if step == self.kill_at_evaluation:
      raise Killed(f"killed before the evaluation at step {step}")
    self.evaluated_steps.append(step)
    dev = self.splits["dev"]
    return {"eval_accuracy": SCORES.get(step, 0.0),
            "eval_loss": metrics.cross_entropy(_logits(model, dev), dev["label_ids"]),
            "num_examples": ROWS}

  def predict(self, model, global_step):
    logits = _logits(model, self.splits["test"])
    path = paths.join(self.options.output_dir, "test_results.tsv")
    with atomic_output.atomic_open(path) as handle:
      handle.write(f"step {global_step}\n")
      for row in metrics.softmax(logits.astype(np.float64)):
        handle.write("\t".join(repr(float(p)) for p in row) + "\n")

  def export(self, model, export_dir):
    file_io.makedirs(export_dir)
    weights = {k: v.numpy() for k, v in modeling.google_variable_map(model).items()}
    with file_io.open(paths.join(export_dir, "weights.npz"), "wb") as handle:
      np.savez(handle, **weights)


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
  # One layer: the model only carries weights here (the dev metric is scripted), and each
  # run's cost is tracing its steps, which grows with the layers.
  path = tmp_path_factory.mktemp("scripted") / "bert_config.json"
  return tiny.write_tiny_config(path, VOCAB, max_position_embeddings=SEQ,
                                num_hidden_layers=1)


@pytest.fixture
def optimizers(monkeypatch):
  """The optimizer of each run, so that the task reads the global step from it."""
  made = []
  create = optimization.create_optimizer

  def recording(*args, **kwargs):
    made.append(create(*args, **kwargs))
    return made[-1]

  monkeypatch.setattr(optimization, "create_optimizer", recording)
  return made


def _options(output_dir, config_file, **flags):
  values = dict(output_dir=str(output_dir), bert_config_file=config_file,
                max_seq_length=SEQ, train_batch_size=4, eval_batch_size=5,
                predict_batch_size=3, learning_rate=1e-3, num_warmup_steps=1,
                num_train_steps=12, save_checkpoints_steps=4, log_every_steps=2,
                steps_per_loop=2, seed=7, do_train=True, do_eval=True,
                eval_every_steps=2)
  values.update(flags)
  return run_options.RunOptions(**values)


def _run(options, optimizers, **task_args):
  task = ScriptedTask(options, optimizers, **task_args)
  finetune.run(task, options)
  return task


def _eval_results(output_dir):
  with file_io.open(paths.join(str(output_dir), "eval_results.txt")) as handle:
    return dict(line.split(" = ") for line in handle.read().splitlines())


def _record(output_dir):
  with file_io.open(paths.join(str(output_dir), "best", "best.json")) as handle:
    return json.load(handle)


def _weights(prefix, config_file):
  model = heads.build_classifier_model(modeling.BertConfig.from_json_file(config_file),
                                       LABELS)[0]
  report = checkpoints.load_checkpoint(model, prefix)
  assert report["whole_model"]
  return report["global_step"], {k: v.numpy() for k, v in
                                 modeling.google_variable_map(model).items()}


def _assert_same(a, b):
  assert sorted(a) == sorted(b)
  for name in a:
    np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _ckpts(folder):
  return sorted(n for n in os.listdir(folder) if n.endswith(".index"))


@pytest.fixture(scope="module")
def straight(tmp_path_factory, config_file):
  """One uninterrupted run, every step's checkpoint kept, every output asked of the best."""
  out = tmp_path_factory.mktemp("straight") / "run"
  made = []
  create = optimization.create_optimizer

  def recording(*args, **kwargs):
    made.append(create(*args, **kwargs))
    return made[-1]

  optimization.create_optimizer = recording
  try:
    options = _options(out, config_file, save_checkpoints_steps=2, keep_checkpoint_max=10,
                       use_best_checkpoint=True, do_predict=True,
                       export_dir=str(out) + "-export")
    task = _run(options, made)
  finally:
    optimization.create_optimizer = create
  return {"out": out, "task": task, "export": str(out) + "-export"}


def test_a_run_whose_metric_peaks_early_keeps_that_step_for_eval_predict_and_export(
    straight, config_file, tmp_path, optimizers):
  out = straight["out"]
  # Evaluated at every second step, the last included; the peak (step 6) is kept.
  # Then the best weights, for --do_eval.
  assert straight["task"].evaluated_steps == [2, 4, 6, 8, 10, 12, 6]
  record = _record(out)
  assert record == {"metric": "eval_accuracy", "higher_is_better": True,
                    "evaluations": [[s, v] for s, v in sorted(SCORES.items())],
                    "best_step": 6, "best_value": 0.9}
  assert _ckpts(out / "best") == ["ckpt-6.index"]
  step, best = _weights(str(out / "best" / "ckpt-6"), config_file)
  assert step == 6
  _assert_same(best, _weights(str(out / "ckpt-6"), config_file)[1])
  # The newest checkpoints went on to step 12 (rotation never touches best/).
  assert "ckpt-12.index" in _ckpts(out)
  # eval_results.txt is the evaluation of the best step, not of the last.
  values = _eval_results(out)
  assert values["global_step"] == "6" and values["eval_accuracy"] == "0.9"
  # The export holds the best weights.
  with np.load(os.path.join(straight["export"], "weights.npz")) as exported:
    _assert_same(dict(exported), best)
  # The predictions are the best weights': a predict-only run from best/ (the folder as
  # --init_checkpoint, as export_encoder.py takes it) writes the same file.
  again = tmp_path / "again"
  options = _options(again, config_file, do_train=False, do_eval=False, do_predict=True,
                     eval_every_steps=0, init_checkpoint=str(out / "best"))
  _run(options, optimizers)
  predicted = (out / "test_results.tsv").read_text().splitlines()
  assert predicted[0] == "step 6"
  assert (again / "test_results.tsv").read_text().splitlines()[1:] == predicted[1:]
  # ... and differ from the newest weights'.
  newest = tmp_path / "newest"
  options = _options(newest, config_file, do_train=False, do_eval=False, do_predict=True,
                     eval_every_steps=0, init_checkpoint=str(out / "ckpt-12"))
  _run(options, optimizers)
  assert (newest / "test_results.tsv").read_text().splitlines()[1:] != predicted[1:]


def test_use_best_checkpoint_without_training_reads_the_kept_best(straight, config_file,
                                                                   optimizers, caplog):
  out = straight["out"]
  options = _options(out, config_file, do_train=False, eval_every_steps=0,
                     use_best_checkpoint=True)
  caplog.set_level("INFO", logger="absl")
  _run(options, optimizers)
  assert _eval_results(out)["global_step"] == "6"
  assert _eval_results(out)["eval_accuracy"] == "0.9"
  said = caplog.text
  assert ("Using the best checkpoint on dev, " + str(out / "best" / "ckpt-6") +
          " (eval_accuracy = 0.9 at step 6, the highest of 6 evaluations (the newest, step "
          "12: 0.85)), for --do_eval: --use_best_checkpoint") in said


@pytest.mark.parametrize("content", [b"", b'{"metric": "eval_acc', b"[]"],
                         ids=["empty", "cut_short", "not_a_record"])
def test_an_unreadable_record_is_rebuilt_from_the_whole_best_checkpoint(
    straight, config_file, optimizers, caplog, tmp_path, content):
  """best.json empty (a power cut) or not ours beside a whole best/ckpt-6: the checkpoint
  records its own step and value, so --use_best_checkpoint takes it (no advice to delete
  anything); and what a kill -9 left in best/ while it wrote is cleared as output_dir's
  own temporaries are."""
  out = tmp_path / "run"
  shutil.copytree(straight["out"], out)
  best = out / "best"
  (best / "best.json").write_bytes(content)
  (best / "ckpt-2_temp").mkdir()
  (best / "ckpt-2_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 8)
  (best / ".best.json.tmp-0123abcd").write_text("{")
  whole = sorted(n for n in os.listdir(best) if n.startswith("ckpt-6") or n == "checkpoint")
  options = _options(out, config_file, do_train=False, eval_every_steps=0,
                     use_best_checkpoint=True)
  caplog.set_level("INFO", logger="absl")
  _run(options, optimizers)
  assert _eval_results(out)["global_step"] == "6"
  assert _eval_results(out)["eval_accuracy"] == "0.9"
  assert f"{best / 'best.json'} is not the record of a best checkpoint (" in caplog.text
  assert (f"rebuilt from {best / 'ckpt-6'}, which records its own step and value"
          in caplog.text)
  assert "Removed 2 temporary file(s)" in caplog.text
  assert sorted(os.listdir(best)) == sorted(whole + ["best.json"])
  assert (best / "best.json").read_bytes() == content  # nothing written by an evaluation
  record = best_checkpoint.read_record(str(out))
  assert (record.metric, record.best, record.evaluations) == (
      "eval_accuracy", (6, 0.9), [(6, 0.9)])
  # With no whole checkpoint beside it, the best is chosen again from the next
  # evaluations (nothing whole to keep, nothing refused).
  for name in whole:
    if name != "checkpoint":
      os.remove(best / name)
  assert best_checkpoint.read_record(str(out)) is None
  assert "holds no whole best checkpoint: the best is chosen again" in caplog.text


def test_early_stopping_stops_after_n_evaluations_and_a_rerun_trains_no_further(
    tmp_path, config_file, optimizers, caplog):
  out = tmp_path / "run"
  options = _options(out, config_file, early_stopping_patience=2)
  caplog.set_level("INFO", logger="absl")
  task = _run(options, optimizers)
  # Evaluations at 8 and 10 do not beat step 6: the run stops at 10, keeps 6.
  assert task.evaluated_steps == [2, 4, 6, 8, 10, 6]
  assert "Early stopping at step 10: 2 evaluations without improvement of eval_accuracy" \
      " (--early_stopping_patience=2); the best is step 6" in caplog.text
  # Its newest checkpoint is the step it stopped at, so that a rerun resumes there.
  assert _ckpts(out) == ["ckpt-10.index", "ckpt-4.index", "ckpt-8.index"]
  assert _record(out)["best_step"] == 6 and _eval_results(out)["global_step"] == "6"
  assert _eval_results(out)["eval_accuracy"] == "0.9"
  listing = sorted(os.listdir(out))
  caplog.clear()
  # The same command again: nothing trained, the best the same.
  task = _run(options, optimizers)
  assert "Early stopping already stopped this run at step 10" in caplog.text
  assert "Running training" not in caplog.text
  assert task.evaluated_steps == [6]  # the best, for --do_eval
  assert sorted(os.listdir(out)) == listing
  assert _record(out)["best_step"] == 6 and _eval_results(out)["global_step"] == "6"
  # A larger patience trains on, from step 10.
  caplog.clear()
  more = _options(out, config_file, early_stopping_patience=3)
  task = _run(more, optimizers)
  assert task.evaluated_steps == [12, 6] and "ckpt-12.index" in _ckpts(out)
  assert _record(out)["best_step"] == 6


def _cut_at_record(monkeypatch, step):
  """A kill between the best checkpoint of `step` and its best.json."""
  write = atomic_output.atomic_open

  def cut(path, *args, **kwargs):
    if str(path).endswith("best.json") and os.path.exists(
        os.path.join(os.path.dirname(str(path)), f"ckpt-{step}.index")):
      raise Killed(f"killed before {path}")
    return write(path, *args, **kwargs)

  monkeypatch.setattr(atomic_output, "atomic_open", cut)


# Each cut is two runs: one in the default suite, the others with `make test-slow`.
@pytest.mark.parametrize("cut", [
    "before the best's record",
    pytest.param("after a save, before its evaluation", marks=pytest.mark.slow),
    pytest.param("before an evaluation after the best", marks=pytest.mark.slow)])
def test_a_run_killed_and_run_again_keeps_what_an_uninterrupted_run_keeps(
    cut, tmp_path, config_file, optimizers, monkeypatch, caplog, straight):
  # The uninterrupted run: `straight` (its checkpoints every 2 steps change nothing in
  # its training; patience 3 stops it at its last step, 12).
  whole = straight["out"]
  out = tmp_path / "cut"
  options = _options(out, config_file, early_stopping_patience=3)
  if cut == "before the best's record":
    with monkeypatch.context() as patch:
      _cut_at_record(patch, 6)
      with pytest.raises(Killed):
        _run(options, optimizers)
    # The best checkpoint of step 6 is there; best.json still names step 4.
    assert _record(out)["best_step"] == 4 and "ckpt-6.index" in _ckpts(out / "best")
  else:
    at = 8 if cut == "after a save, before its evaluation" else 10
    with pytest.raises(Killed):
      _run(options, optimizers, kill_at_evaluation=at)
    assert _record(out)["best_step"] == 6
  caplog.set_level("INFO", logger="absl")
  task = _run(options, optimizers)
  if cut == "after a save, before its evaluation":
    # ckpt-8 was saved, its evaluation never ran: the rerun evaluates step 8 first.
    assert task.evaluated_steps[0] == 8
  assert _record(out) == _record(whole)
  assert _ckpts(out / "best") == ["ckpt-6.index"]
  _assert_same(_weights(str(out / "best" / "ckpt-6"), config_file)[1],
               _weights(str(whole / "best" / "ckpt-6"), config_file)[1])
  assert _eval_results(out) == _eval_results(whole)


def test_best_metric_names_a_metric_the_task_reports(tmp_path, config_file, optimizers,
                                                     straight):
  options = _options(tmp_path / "bad", config_file, best_metric="eval_f1")
  task = ScriptedTask(options, optimizers)
  task.build_model = None  # refused before any model is built
  with pytest.raises(errors.UserError) as refused:
    finetune.run(task, options)
  assert str(refused.value) == ("--best_metric=eval_f1: scripted's dev evaluation reports "
                                "eval_accuracy, eval_loss; name one of them")
  # Refused by the options themselves (run_options.PARTNERS), before any run.
  with pytest.raises(errors.UserError) as refused:
    _options(tmp_path / "bad", config_file, early_stopping_patience=2, eval_every_steps=0)
  assert str(refused.value) == (
      "--early_stopping_patience=2 counts the evaluations during training: it needs "
      "--eval_every_steps (without it the flag does nothing)")
  with pytest.raises(errors.UserError) as refused:
    _options(tmp_path / "bad", config_file, use_best_checkpoint=True, eval_every_steps=0)
  assert str(refused.value) == (
      "--use_best_checkpoint with --do_train takes the best of the evaluations during "
      "training: it needs --eval_every_steps (without it no evaluation chooses one)")
  assert not os.path.exists(tmp_path / "bad")
  with pytest.raises(errors.UserError, match="must be >= 0"):
    _options(tmp_path / "bad", config_file, early_stopping_patience=-1)
  with pytest.raises(errors.UserError, match=r"--use_best_checkpoint: .*holds no best "
                     "checkpoint"):
    _run(_options(tmp_path / "none", config_file, do_train=False, eval_every_steps=0,
                  use_best_checkpoint=True,
                  init_checkpoint=str(straight["out"] / "ckpt-12")),
         optimizers)


def test_a_loss_chooses_the_lowest(tmp_path, config_file, optimizers):
  out = tmp_path / "loss"
  _run(_options(out, config_file, best_metric="eval_loss", num_train_steps=6),
       optimizers)
  record = _record(out)
  assert record["metric"] == "eval_loss" and record["higher_is_better"] is False
  losses = dict(record["evaluations"])
  assert sorted(losses) == [2, 4, 6]
  assert record["best_step"] == min(losses, key=lambda s: (losses[s], s))
  assert best_checkpoint.higher_is_better("eval_accuracy")


def test_on_ram_filesystem(config_file, optimizers):
  out = "ram://best-run/out"
  options = _options(out, config_file, early_stopping_patience=2, do_predict=True)
  task = _run(options, optimizers)
  assert task.evaluated_steps == [2, 4, 6, 8, 10, 6]
  assert _record(out)["best_step"] == 6
  assert file_io.exists(out + "/best/ckpt-6.index")
  assert _eval_results(out)["global_step"] == "6"
  with file_io.open(out + "/test_results.tsv") as handle:
    assert handle.readline() == "step 6\n"
  # Run again: nothing trained, the best still step 6.
  task = _run(options, optimizers)
  assert task.evaluated_steps == [6]  # the final --do_eval of the best
  assert _record(out)["best_step"] == 6


def test_each_glue_task_chooses_its_best_checkpoint_by_the_papers_metric(tmp_path):
  """The paper reports F1 for MRPC and QQP, Spearman for STS-B, Matthews correlation for
  CoLA, accuracy for the others."""
  from bert.classifier import classifier_task  # pylint: disable=g-import-not-at-top
  options = run_options.RunOptions(output_dir=str(tmp_path))
  chosen = {name: classifier_task.ClassifierTask(
      options, classifier_task.make_processor(name, str(tmp_path)),
      str(tmp_path)).default_best_metric()
            for name in ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE")}
  assert chosen == {"CoLA": "eval_matthews_corrcoef", "SST-2": "eval_accuracy",
                    "MRPC": "eval_f1", "STS-B": "eval_spearman", "QQP": "eval_f1",
                    "MNLI": "eval_accuracy", "QNLI": "eval_accuracy",
                    "RTE": "eval_accuracy"}
