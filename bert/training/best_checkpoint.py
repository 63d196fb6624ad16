"""The evaluation during training and the best checkpoint on dev: kept beside the newest,
chosen by one metric, and early stopping on it.

--eval_every_steps=N evaluates the dev set every N training steps (PeriodicEval, the
training loop's after_loop hook), its scalars into output_dir/eval. A run with
--eval_every_steps keeps, in output_dir/best/, a copy of the weights that
scored best on the dev set (ckpt-<step>, our layout without the optimizer: any command
that takes --init_checkpoint, export_encoder.py included, reads output_dir/best), and
best.json, the evaluations so far:

  {"metric": "eval_accuracy", "higher_is_better": true,
   "evaluations": [[50, 0.81], [100, 0.86], ...], "best_step": 100, "best_value": 0.86}

output_dir/best is outside the newest checkpoints that --keep_checkpoint_max rotates, so
the best is never removed by a later save. Every choice is a function of that record, so
a run killed at any point and run again chooses what an uninterrupted run chooses:

  * the best checkpoint is written before best.json, and records its own step, metric
    and value: a kill between the two leaves a checkpoint newer than the record, and
    the checkpoint wins when the record is read again;
  * a resumed run re-evaluates the steps it trains again (those after its last saved
    checkpoint); an evaluation replaces the record's entry at its step and drops the
    later ones, and a step is the new best only when it beats the best strictly (ties
    keep the earlier step), so the same evaluations give the same best;
  * evaluations without improvement are those after the best step, counted from the
    record: --early_stopping_patience=N stops the run once there are N, and the same
    command run again stops before training (a larger N, or 0, trains on).
"""

import json
import math

from absl import logging
import tensorflow as tf

from bert.formats import checkpoint_files
from bert.training import checkpoints
from bert.training import evaluation
from bert.training import loop
from bert.utils import atomic_output
from bert.utils import errors
from bert.utils import file_io
from bert.utils import paths

FOLDER = "best"
RECORD = "best.json"
_BEST_KEY = "best/.ATTRIBUTES/VARIABLE_VALUE"
# Keys of an evaluation that count things rather than score them: never a --best_metric.
_COUNTS = ("num_examples", "eval_sentences", "total", "HasAns_total", "NoAns_total")


def higher_is_better(metric):
  """False for a loss (eval_loss, loss, ...), True for every other score."""
  return not metric.endswith("loss")


def selectable(names):
  """The names of `names` that score a model (counts and thresholds left out)."""
  return [n for n in names if n not in _COUNTS and not n.endswith("_thresh")]


def best_dir(output_dir):
  return paths.join(output_dir, FOLDER)


def check_metric(metric, names, task_name):
  """A UserError (one line, listing the valid names) when --best_metric is not one of the
  metrics `task_name`'s evaluation reports (`names`)."""
  valid = selectable(names)
  if metric not in valid:
    raise errors.UserError(
        f"--best_metric={metric}: {task_name}'s dev evaluation reports "
        + (", ".join(valid) if valid else "no metric")
        + ("; name one of them" if valid else ""))


def _better(value, than, higher):
  return value > than if higher else value < than


class Record:
  """best.json in memory: the metric, its direction, the evaluations [(step, value)] in
  step order, and the best (step, value); every choice is computed from them."""

  def __init__(self, metric, evaluations=(), best=None):
    self.metric, self.higher = metric, higher_is_better(metric)
    self.evaluations = [(int(s), float(v)) for s, v in evaluations]
    self.best = best  # (step, value) or None

  def without_improvement(self, up_to=None):
    """Evaluations after the best step (those at steps <= up_to, when given)."""
    if self.best is None:
      return 0
    return sum(1 for s, _ in self.evaluations
               if s > self.best[0] and (up_to is None or s <= up_to))

  def evaluated(self, step):
    return any(s == step for s, _ in self.evaluations)

  def add(self, step, value):
    """Records an evaluation; True when `step` is now the best (to be saved)."""
    self.evaluations = [(s, v) for s, v in self.evaluations if s < step] + [(step, value)]
    if self.best is None or _better(value, self.best[1], self.higher):
      self.best = (step, value)
      return True
    if self.best[0] == step:  # the best step evaluated again (a resumed run)
      self.best = (step, value)
      return True
    return False

  def to_json(self):
    """best.json's text: one key a line, one evaluation a line."""
    fields = {"metric": self.metric, "higher_is_better": self.higher,
              "best_step": self.best[0] if self.best else None,
              "best_value": self.best[1] if self.best else None}
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in fields.items()]
    evaluations = ",\n".join(f"  {json.dumps([s, v])}" for s, v in self.evaluations)
    evaluations = f"[\n{evaluations}\n ]" if evaluations else "[]"
    return "{\n" + "\n".join(lines) + f'\n "evaluations": {evaluations}\n}}\n'

  def describe(self):
    """"eval_accuracy = 0.9106 at step 150, the highest of 8 evaluations (the newest,
    step 400: 0.8922)"."""
    step, value = self.best
    text = (f"{self.metric} = {value:.6g} at step {step}, the "
            f"{'highest' if self.higher else 'lowest'} of {len(self.evaluations)} "
            "evaluation" + ("s" if len(self.evaluations) != 1 else ""))
    last_step, last_value = self.evaluations[-1]
    if last_step != step:
      text += f" (the newest, step {last_step}: {last_value:.6g})"
    return text


_SAID = set()  # (best.json, why it cannot be read, what rebuilt it) already in the log


def read_record(output_dir):
  """The Record of output_dir/best, reconciled with the checkpoint there (None when
  nothing is kept). A record that cannot be read (empty after a power cut, or not ours)
  is rebuilt from the whole best checkpoint, which records its own metric, step and
  value (the other evaluations are lost: said in the log); with none, the best is chosen
  again from the next evaluations. Nothing whole is ever given up."""
  folder = best_dir(output_dir)
  if not file_io.isdir(folder):
    return None
  path = paths.join(folder, RECORD)
  record = unreadable = None
  if file_io.exists(path):
    try:
      raw = json.loads(file_io.read_bytes(path).decode("utf-8"))
      record = Record(raw["metric"], raw["evaluations"],
                      (int(raw["best_step"]), float(raw["best_value"]))
                      if raw.get("best_step") is not None else None)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
      unreadable = " ".join(str(exc).split())[:120] or type(exc).__name__
  kept = kept_checkpoint(output_dir)
  said = (path, unreadable, kept and kept[0])
  if unreadable and said not in _SAID:  # said once, though read again
    _SAID.add(said)
    logging.warning(
        "%s is not the record of a best checkpoint (%s); %s", path, unreadable,
        f"rebuilt from {kept[0]}, which records its own step and value (the other "
        "evaluations are not known: early stopping counts from the next)" if kept else
        f"{folder} holds no whole best checkpoint: the best is chosen again from the next "
        "evaluations")
  if kept is None:
    if record is not None and record.best is not None:
      logging.warning("%s names the best step %d, but %s holds no whole checkpoint of it: "
                      "the best is chosen again from the next evaluations", path,
                      record.best[0], folder)
      record.best = None
      record.evaluations = []
    return record
  _, saved = kept
  if record is None or record.metric != saved["metric"]:
    # Killed between the first best checkpoint and its record.
    record = Record(saved["metric"])
  if record.best != (saved["step"], saved["value"]):
    # Killed between a best checkpoint and its record: the checkpoint is the newer.
    record.evaluations = [(s, v) for s, v in record.evaluations if s < saved["step"]]
    record.evaluations.append((saved["step"], saved["value"]))
    record.best = (saved["step"], saved["value"])
  return record


def kept_checkpoint(output_dir):
  """(prefix, {"metric", "value", "step"}) of the best checkpoint kept in output_dir/best,
  or None. Two whole ones (a kill before the older was removed): the better value, the
  earlier step on a tie."""
  folder = best_dir(output_dir)
  _, indexed = checkpoints.newest_whole_checkpoint(folder)
  candidates = []
  names = set(file_io.listdir(folder)) if file_io.isdir(folder) else set()
  for prefix in indexed:
    if not checkpoints.is_whole(prefix, names):
      continue
    saved = _saved_best(prefix)
    if saved is not None:
      candidates.append((prefix, saved))
  if not candidates:
    return None
  higher = higher_is_better(candidates[0][1]["metric"])
  candidates.sort(key=lambda c: ((-c[1]["value"] if higher else c[1]["value"]),
                                 c[1]["step"]))
  return candidates[0]


def _saved_best(prefix):
  try:
    reader = checkpoint_files.checkpoint_reader(prefix)
    raw = reader.get_tensor(_BEST_KEY)
    saved = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    return {"metric": str(saved["metric"]), "value": float(saved["value"]),
            "step": int(saved["step"])}
  except (tf.errors.OpError, ValueError, KeyError, TypeError):
    return None


class Tracker:
  """The best checkpoint of one training run: `evaluated(step, metrics)` after each dev
  evaluation saves the weights when they are the best so far and answers whether
  early stopping stops the run now. It saves the run's own objects
  (checkpoints.RunCheckpoint.weights: the model, its signature, encoder and head), so
  the best is in the layout of the newest checkpoints, without the optimizer.

  output_dir/best is written by the chief only; other workers (a multi-worker run) keep
  the same record in memory and write their share of each save to a temporary folder.
  """

  def __init__(self, output_dir, state, metric, patience=0, chief=True, worker_dir=None):
    self.output_dir, self.metric = output_dir, metric
    self.state = state  # the run's checkpoints.RunCheckpoint: its model, signature, head
    self.patience, self.chief = patience, chief
    self.folder = best_dir(output_dir) if chief else worker_dir
    self.record = None
    self._manager = None
    self._best_variable = self._step_variable = None

  def start(self):
    """Reads what an earlier run of this output_dir kept. A record of another metric is
    a UserError (the kept best would be compared in another unit)."""
    record = read_record(self.output_dir)
    if record is not None and record.metric != self.metric and record.best is not None:
      raise errors.UserError(
          f"--best_metric={self.metric}: {best_dir(self.output_dir)} keeps the best by "
          f"{record.metric}; rerun with --best_metric={record.metric}, or use a new "
          "--output_dir")
    self.record = record if record is not None else Record(self.metric)
    if self.record.best is not None:
      logging.info("Best checkpoint so far: %s", self.record.describe())

  def stopped_at(self, step):
    """True when the evaluations up to `step` already stop the run (early stopping)."""
    return bool(self.patience) and self.record.without_improvement(step) >= self.patience

  def evaluated(self, step, metrics):
    """Records the dev evaluation at `step`; saves the weights when they are the best.
    Returns True when early stopping stops the run here."""
    if self.metric not in metrics:
      raise errors.UserError(
          f"--best_metric={self.metric}: the evaluation at step {step} reports no such "
          f"metric (it reports {', '.join(selectable(sorted(metrics)))})")
    value = float(metrics[self.metric])
    if not math.isfinite(value):
      raise errors.UserError(f"{self.metric} = {value} at step {step}: the model's "
                             "outputs are not finite (the weights diverged)")
    previous = self.record.best
    if self.record.add(step, value):
      if previous != (step, value) or self.kept_step() != step:
        self._save(step, value)
      if previous is None or previous[0] != step:
        logging.info("New best checkpoint: %s = %.6g at step %d%s", self.metric, value,
                     step, "" if previous is None else
                     f" (was {previous[1]:.6g} at step {previous[0]})")
    else:
      logging.info("No improvement of %s at step %d (%.6g; best %.6g at step %d): %d "
                   "evaluation(s) without improvement%s", self.metric, step, value,
                   self.record.best[1], self.record.best[0],
                   self.record.without_improvement(),
                   f" of --early_stopping_patience={self.patience}" if self.patience else "")
    if self.chief:
      path = paths.join(self.folder, RECORD)
      with errors.disk_full_names(path), atomic_output.atomic_open(path) as handle:
        handle.write(self.record.to_json())
    stop = self.stopped_at(step)
    if stop:
      logging.info("Early stopping at step %d: %d evaluations without improvement of %s "
                   "(--early_stopping_patience=%d); the best is step %d (%s = %.6g), kept "
                   "in %s", step, self.record.without_improvement(), self.metric,
                   self.patience, self.record.best[0], self.metric, self.record.best[1],
                   self.folder)
    return stop

  def kept_step(self):
    kept = kept_checkpoint(self.output_dir) if self.chief else None
    return kept[1]["step"] if kept else None

  def _save(self, step, value):
    if self._manager is None:
      self._best_variable = tf.Variable("", trainable=False)
      self._step_variable = tf.Variable(0, dtype=tf.int64, trainable=False)
      # The run's own weights objects (the newest checkpoints' layout), with the best's
      # step and record in place of the loop's state and the optimizer.
      tracked = dict(self.state.weights(), step=self._step_variable,
                     best=self._best_variable)
      file_io.makedirs(self.folder)
      self._manager = tf.train.CheckpointManager(
          tf.train.Checkpoint(**tracked), self.folder, max_to_keep=1,
          checkpoint_name="ckpt")
    self._best_variable.assign(json.dumps({"metric": self.metric, "value": value,
                                           "step": step}))
    self._step_variable.assign(step)
    path = self._manager.save(checkpoint_number=step)
    if self.chief:
      logging.info("Saved the best checkpoint %s", path)

  def cleanup(self):
    if not self.chief and self.folder and file_io.isdir(self.folder):
      file_io.rmtree(self.folder)


def check_kept(output_dir):
  """(Record, (prefix, saved)) of the best checkpoint kept in output_dir; a UserError
  when there is none."""
  record = read_record(output_dir)
  kept = kept_checkpoint(output_dir)
  if record is None or record.best is None or kept is None:
    raise errors.UserError(
        f"--use_best_checkpoint: {best_dir(output_dir)} holds no best checkpoint (a run "
        "with --do_train --do_eval --eval_every_steps keeps one there)")
  return record, kept


def restore_best(model, output_dir, head_info=None):
  """Loads output_dir/best's checkpoint into `model`; returns (step, Record). A UserError
  when output_dir keeps no best checkpoint."""
  record, kept = check_kept(output_dir)
  report = checkpoints.load_checkpoint(model, kept[0], head_info=head_info)
  if not report.get("whole_model"):
    raise errors.UserError(
        f"--use_best_checkpoint: {kept[0]} holds another model than this run's; use the "
        "--output_dir of this task's run")
  return record.best[0], record


# --------------------------------------------------------------------------- periodic evaluation


def use_best(options, model, periodic, head_info=None):
  """--use_best_checkpoint: loads output_dir/best's weights into `model`, says which step
  and why, and returns that step. head_info: what the run's head means (restore_best)."""
  best_step, record = restore_best(model, options.output_dir, head_info)
  logging.info("Using the best checkpoint on dev, %s (%s), for %s: %s",
               paths.join(best_dir(options.output_dir), f"ckpt-{best_step}"),
               record.describe(), _best_uses(options), _best_reason(options))
  if best_step != periodic.last_step:
    periodic.last, periodic.last_step = None, None  # those were other weights
  return best_step


class PeriodicEval:
  """--eval_every_steps=N: evaluates the dev set each time training passes a multiple of
  N, and at the last step (loop.train's after_loop hook), scalars into output_dir/eval at
  that step; with a Tracker, each evaluation may keep the best
  checkpoint, and its answer (early stopping) stops the training."""

  def __init__(self, task, model, strategy, options, chief, num_train_steps=0,
               tracker=None):
    self.task, self.model, self.strategy = task, model, strategy
    self.every, self.output_dir, self.chief = options.eval_every_steps, options.output_dir, chief
    self.num_train_steps, self.tracker = num_train_steps, tracker
    self.last, self.last_step = None, None

  def due(self, step, previous_step):
    return bool(self.every) and (step // self.every != previous_step // self.every
                                 or step == self.num_train_steps)

  def __call__(self, step, previous_step):
    if not self.due(step, previous_step):
      return False
    return self.evaluate_at(step)

  def catch_up(self, step):
    """A resumed run whose checkpoint is at an evaluation step that its record lacks (a
    kill after the save, before the evaluation): evaluated now, as the uninterrupted run
    did at that step."""
    if (self.tracker is not None and step > 0 and self.due(step, step - 1)
        and not self.tracker.record.evaluated(step)):
      self.evaluate_at(step)

  def evaluate_at(self, step):
    logging.info("***** Evaluation at step %d: %s *****", step, self.task.name)
    self.last, self.last_step = self.task.evaluate(self.model, self.strategy), step
    logging.info("  %s", ", ".join(f"{k} = {v:.4g}" for k, v in self.last.items()
                                   if isinstance(v, (int, float))))
    if self.chief:
      loop.write_scalars(paths.join(self.output_dir, "eval"),
                         evaluation.eval_tags(self.last),
                         step)
    return self.tracker is not None and self.tracker.evaluated(step, self.last)


def uses_best_checkpoint(options):
  """--use_best_checkpoint, or early stopping (which stops because dev stopped
  improving: the best, not the newest, is the model)."""
  return bool(options.use_best_checkpoint or options.early_stopping_patience)


def _best_uses(options):
  uses = [flag for flag, on in (("--do_eval", options.do_eval),
                                ("--do_predict", options.do_predict),
                                ("--export_dir", options.export_dir)) if on]
  return ", ".join(uses)


def _best_reason(options):
  if options.use_best_checkpoint:
    return "--use_best_checkpoint"
  return (f"--early_stopping_patience={options.early_stopping_patience} takes the best, "
          "not the newest")


def best_metric(task, options):
  """The metric that chooses the best checkpoint (--best_metric, else the task's
  default), checked against what the task's dev evaluation reports; None when it reports
  no metric (a SQuAD predict file without answers) and nothing asked for one."""
  names = task.eval_metric_names()
  metric = options.best_metric or task.default_best_metric()
  if names is None:
    return metric
  if options.best_metric or options.early_stopping_patience or options.use_best_checkpoint:
    check_metric(metric, names, task.name)
  elif metric not in selectable(names):
    logging.info("%s's dev evaluation reports no %s: no best checkpoint is kept",
                 task.name, metric)
    return None
  return metric


def best_tracker(options, state, chief, metric):
  """The Tracker of a training run with --eval_every_steps, choosing by `metric`
  (best_metric), saving through the run's checkpoints.RunCheckpoint `state`."""
  logging.info("The best checkpoint on dev is chosen by %s (%s is better)%s", metric,
               "higher" if higher_is_better(metric) else "lower",
               f"; early stopping after {options.early_stopping_patience} evaluations "
               "without improvement" if options.early_stopping_patience else "")
  worker_dir = None
  if not chief:
    worker_dir = paths.join(state.write_dir, "best")
  return Tracker(options.output_dir, state, metric, options.early_stopping_patience,
                 chief=chief, worker_dir=worker_dir)
