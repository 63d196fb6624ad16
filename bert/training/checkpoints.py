"""Checkpoints: loading any of the three formats, our TF2 layout, and what a run starts from.

Every loader maps onto the Google TF1 names that `modeling.google_variable_map` gives
each weight, so one table of names serves Google's checkpoints, ours (`RunCheckpoint`,
the layout of a run's output_dir) and Hugging Face's. `start_weights` is the one answer,
for every script, to "what does this run start from": resume, else --init_checkpoint,
else random weights when training, else a one-line error."""

import contextlib
import errno
import json
import re
import time

from absl import logging
import tensorflow as tf

from bert.formats import hugging_face
from bert import heads
from bert import modeling
from bert.formats import checkpoint_files
from bert.training import loop
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks


# --------------------------------------------------------------------------- loading


def load_checkpoint(model, path, strict_encoder=True, head_info=None):
  """Loads a checkpoint of any supported kind into `model` (encoder and present heads).

  Returns a report dict: format, path, loaded / missing / unused variable names (logged,
  as the original did), global_step (0 when the checkpoint holds none). ValueError with
  a clear message on any shape mismatch, or on an encoder that does not fit the config
  (missing or extra layers).
  """
  kind, resolved = checkpoint_files.resolve_checkpoint(path)
  with checkpoint_files.reading(resolved):
    if kind == checkpoint_files.GOOGLE:
      tensors = checkpoint_files.read_google_checkpoint(resolved)
      report = checkpoint_files.assign_by_name(model, tensors, resolved, strict_encoder)
      report["global_step"] = int(tensors.get("global_step", 0))
    elif kind == checkpoint_files.HUGGING_FACE:
      tensors = hugging_face.read_hugging_face_checkpoint(resolved)
      report = checkpoint_files.assign_by_name(model, tensors, resolved,
                                                 strict_encoder)
      report["global_step"] = 0
    else:
      report = _restore_ours(model, resolved, head_info)
  report["format"] = kind
  checkpoint_files.log_report(report)
  return report


# --------------------------------------------------------------------------- our layout
#
# A run's output_dir holds ckpt-N.index / ckpt-N.data-* and a `checkpoint` state file
# (tf.train.CheckpointManager), each ckpt-N a tf.train.Checkpoint of:
#   step             int64, the global step (optimizer updates)
#   model            the whole keras.Model being trained (encoder and heads)
#   encoder          its BERT encoder (absent for models without one, e.g. a BiLSTM)
#   model_signature  string: JSON of the model's weight names and shapes (see below)
#   head_info        string: JSON of what the head means (Task.head_info(): task, head
#                    kind, label names), when the run's task gives one
#   optimizer        the optimizer and its slots (training runs only)
#   rng_states       dropout seed-generator states (Keras 3 does not track them)
#   loss_scale, good_steps   float16 dynamic loss scaling
# step, rng_states, loss_scale and good_steps are the training loop's variables:
# loop.LoopState creates them and says which are saved (`trackables`).
# Keras 3 optimizers track the model's variables too, so `tf.train.list_variables` may
# list the weights under optimizer/_trainable_variables/N: what a checkpoint holds is read
# from its object graph (by restoring into objects), never from key-name prefixes.

_STEP_KEY = "step/.ATTRIBUTES/VARIABLE_VALUE"
_SIGNATURE_KEY = "model_signature/.ATTRIBUTES/VARIABLE_VALUE"
_HEAD_INFO_KEY = "head_info/.ATTRIBUTES/VARIABLE_VALUE"


def model_signature(model):
  """A JSON string naming `model`'s architecture: Google names and shapes of its weights.

  Two models with equal signatures can restore each other's `model=` object. Weights
  that have no Google name (a BiLSTM tagger) are listed by shape, in order.
  """
  try:
    named = modeling.google_variable_map(model)
  except ValueError:  # no BERT encoder inside
    named = {}
  mapped = {id(v) for v in named.values()}
  others = [list(v.shape) for v in model.weights
            if id(v) not in mapped and "seed_generator" not in v.path]
  return json.dumps({"weights": {n: list(v.shape) for n, v in sorted(named.items())},
                     "other_weights": others}, sort_keys=True)


def _signature_of(prefix):
  names = checkpoint_files.checkpoint_variables(prefix)
  if _SIGNATURE_KEY not in names:
    return None
  return checkpoint_files.checkpoint_reader(prefix).get_tensor(_SIGNATURE_KEY).decode("utf-8")


# Heads whose meaning is a list of labels (one output per label), and those that need
# a count of choices: a recorded head_info without them cannot be rebuilt.
_HEADS_WITH_LABELS = ("classifier", "multi_label", "token_classification")
_HEADS_WITH_CHOICES = ("multiple_choice",)


def head_info_of(prefix):
  """What the head of checkpoint `prefix` means ({"task", "head", "labels", ...}, as the
  run's Task.head_info() gave it), or None for a checkpoint that does not record it
  (Google's, Hugging Face's, or ours written before runs recorded it).

  The one reader of a recorded head_info: a record that is not what runs write (not
  JSON, not an object, no head, labels missing, not a list of strings or repeating one,
  ...) is a
  UserError naming the checkpoint and what is wrong, never a KeyError later.
  """
  names = checkpoint_files.checkpoint_variables(prefix)
  if _HEAD_INFO_KEY not in names:
    return None
  raw = checkpoint_files.checkpoint_reader(prefix).get_tensor(_HEAD_INFO_KEY)
  where = f"{prefix}: its recorded head_info"
  try:
    info = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
  except (UnicodeDecodeError, json.JSONDecodeError) as exc:
    raise errors.UserError(
        f"{where} is not valid JSON ({exc}); the checkpoint was not written by this "
        "project's runs or was altered: export it from the run's earlier checkpoint, or "
        "pass the weights alone (bert_model.ckpt)") from None
  problem = _head_info_problem(info)
  if problem:
    raise errors.UserError(
        f"{where} {problem}: {json.dumps(info)[:200]}; the checkpoint was not written by "
        "this project's runs or was altered")
  return info


def _head_info_problem(info):
  """What makes a decoded head_info unusable, as a phrase, or None."""
  if not isinstance(info, dict):
    return f"is a JSON {type(info).__name__}, not an object"
  head = info.get("head")
  if not isinstance(head, str) or not head:
    return "names no head (its \"head\" key is missing or not a string)"
  labels = info.get("labels")
  if head in _HEADS_WITH_LABELS and labels is None:
    return f"has no \"labels\" for its {head} head"
  if labels is not None and (not isinstance(labels, list) or not labels
                             or not all(isinstance(x, str) for x in labels)):
    return "has \"labels\" that are not a non-empty list of strings"
  repeat = labels and input_checks.first_repeat(labels)
  if repeat:  # runs refuse a label list that repeats (input_checks.check_label_list)
    return f"lists the label {labels[repeat[0]]!r} twice (a run never records that)"
  if head in _HEADS_WITH_CHOICES:
    choices = info.get("num_choices")
    if not isinstance(choices, int) or isinstance(choices, bool) or choices < 2:
      return f"has no \"num_choices\" (an integer >= 2) for its {head} head"
  return None


def saved_signature(prefix):
  """{google_name: shape} of the weights of our TF2 checkpoint `prefix`, or None."""
  saved = _signature_of(prefix)
  return None if saved is None else json.loads(saved)["weights"]


def describe_head(info):
  """One phrase for a head_info dict: "MRPC's classifier (labels 0, 1)"."""
  labels = info.get("labels")
  text = f"{info.get('task', '?')}'s {info.get('head', '?')}"
  if labels:
    shown = ", ".join(str(label) for label in labels[:6])
    text += f" (labels {shown}{', ...' if len(labels) > 6 else ''})"
  return text


def _head_mismatch(saved_info, head_info):
  """A phrase when two head_info records disagree, else None (either absent: None)."""
  if not saved_info or not head_info or saved_info == head_info:
    return None
  return f"{describe_head(saved_info)}, not this run's {describe_head(head_info)}"


def _step_of(prefix):
  names = checkpoint_files.checkpoint_variables(prefix)
  if _STEP_KEY not in names:
    return 0
  return int(checkpoint_files.checkpoint_reader(prefix).get_tensor(_STEP_KEY))


def _describe_mismatch(saved, model):
  """One phrase saying how a saved signature differs from `model`'s."""
  try:
    saved_weights = json.loads(saved)["weights"]
  except (ValueError, KeyError, TypeError):
    return "a different model"
  ours = json.loads(model_signature(model))["weights"]
  only_saved = sorted(set(saved_weights) - set(ours))
  only_ours = sorted(set(ours) - set(saved_weights))
  if only_saved or only_ours:
    return ("a different model (" + (f"it has {only_saved[0]}" if only_saved else
                                     f"it lacks {only_ours[0]}") + ")")
  for name in sorted(ours):
    if ours[name] != saved_weights[name]:
      return f"a different model size ({name}: {saved_weights[name]} vs {ours[name]})"
  return "a model with different non-BERT weights"


def _restore_ours(model, prefix, head_info=None):
  """Restores our TF2 checkpoint into `model`: the whole model when its signature matches
  (and, when both record it, its head means the same: head_info), else the BERT encoder
  alone (heads differ between tasks). A run on packed rows loads into a model of one
  sequence a row, and the reverse (_restore_any_rows)."""
  names = modeling.google_variable_map(model) if _has_encoder(model) else {}
  other_head = _head_mismatch(head_info_of(prefix), head_info)
  if other_head:
    logging.warning("%s holds %s: loading its BERT encoder only", prefix, other_head)
  if _signature_of(prefix) == model_signature(model) and not other_head:
    rows = _restore_any_rows(prefix, "model", model, f"{prefix}: the checkpoint's model")
    return {"format": None, "path": prefix, "loaded": sorted(names), "missing": [],
            "unused": [], "global_step": _step_of(prefix), "whole_model": True,
            "rows": rows}
  if not _has_encoder(model):
    raise errors.UserError(
        f"{prefix}: this checkpoint holds another model than this one; "
        "it cannot initialise it")
  encoder = modeling.find_encoder(model)
  rows = _restore_any_rows(prefix, "encoder", encoder,
                           f"{prefix}: the checkpoint's BERT encoder", missing_hint=(
                               "it holds no BERT encoder (a model without one?)"))
  encoder_names = sorted(encoder.google_variables())
  saved = saved_signature(prefix) or {}
  return {"format": None, "path": prefix, "loaded": encoder_names,
          "missing": sorted(set(names) - set(encoder_names)),
          "unused": sorted(set(saved) - set(encoder_names)),
          "global_step": _step_of(prefix), "whole_model": False, "rows": rows}


PACKED_ROWS, ONE_SEQUENCE_ROWS = "packed rows", "one sequence a row"


def rows_of(model):
  """The record layout `model` was built for: PACKED_ROWS or ONE_SEQUENCE_ROWS."""
  return PACKED_ROWS if heads.is_packed(model) else ONE_SEQUENCE_ROWS


def _fits_other_rows(prefix, key, target):
  """A twin of `target` for the other rows whose object `key` restores from prefix, or
  None (no such twin, or the checkpoint fits neither)."""
  if not _has_encoder(target):
    return None
  twin = heads.rebuild_for_rows(target, packed=not heads.is_packed(target))
  if twin is None:
    return None
  try:
    _restore_objects(prefix, {key: twin}, prefix)
  except errors.UserError:
    return None
  return twin


def _restore_any_rows(prefix, key, target, what, missing_hint=None):
  """Restores the checkpoint's object `key` into `target` and returns the rows the
  checkpoint's model was built for (PACKED_ROWS or ONE_SEQUENCE_ROWS).

  A model built for packed rows and one built for one sequence a row hold the same
  weights under the same names, but their object graphs differ, so a checkpoint of the
  other form is restored into a twin of that form (heads.rebuild_for_rows) and its
  weights copied by their Google names: pretraining on packed rows, then fine-tuning,
  fill_mask or pretraining on the original's rows, or the reverse, starts from every
  weight the run trained.
  """
  try:
    _restore_objects(prefix, {key: target}, what, missing_hint)
    return rows_of(target)
  except errors.UserError:
    twin = _fits_other_rows(prefix, key, target)
    if twin is None:
      raise
  _copy_by_name(twin, target)
  logging.info("%s: a run on %s; its weights are loaded by name into this model for %s",
               prefix, rows_of(twin), rows_of(target))
  return rows_of(twin)


def _copy_by_name(source, target):
  """Assigns every weight of `target` from the weight of `source` of the same Google name."""
  sources = modeling.google_variable_map(source)
  for name, variable in modeling.google_variable_map(target).items():
    variable.assign(sources[name])


def _has_encoder(model):
  try:
    modeling.find_encoder(model)
  except ValueError:
    return False
  return True


def _restore_objects(prefix, objects, what, missing_hint=None):
  """Restores `objects` (name -> trackable) from prefix; every one of their variables must
  be in the checkpoint with its shape, else ValueError naming `what`."""
  try:
    status = tf.train.Checkpoint(**objects).restore(prefix)
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as exc:
    detail = " ".join(str(exc).split())[:200]
    if missing_hint and "Unresolved object" in detail and "root." in detail:
      detail = missing_hint
    raise errors.UserError(f"{what} does not fit the model built from --bert_config_file "
                                 f"({detail})") from None
  status.expect_partial()
  return status


def is_chief(strategy):
  """True on the worker that writes outputs (every single-host strategy is chief)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not getattr(resolver, "task_type", None):
    return True
  if resolver.task_type == "chief":
    return True
  has_chief = "chief" in resolver.cluster_spec().as_dict()
  return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def _loop_state(model, loss_scaling):
  # Here, not in RunCheckpoint.__init__: its `loop` argument hides the module there.
  return loop.LoopState(model, loss_scaling)


class RunCheckpoint:
  """A run's state in output_dir, in our TF2 layout (see above): save, find, restore.

  Built inside nothing; variables it creates go under `strategy`'s scope. Optimizer
  slots are created at once (optimizer.build), so a restore fills them immediately.
  On a multi-worker run only the chief writes to output_dir; the others write their
  share to a temporary folder that `cleanup` removes. loop: the run's
  loop.LoopState (built here, under the strategy's scope, when not given).
  """

  def __init__(self, output_dir, model, optimizer=None, strategy=None, keep=3,
               loss_scaling=False, loop=None, head_info=None):
    self.output_dir, self.model, self.keep = output_dir, model, keep
    self.head_info = head_info  # what the head means (Task.head_info()), saved with it
    self.chief = strategy is None or is_chief(strategy)
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
      if optimizer is not None:
        optimizer.build(model.trainable_variables)
      # The loop's variables are loop.LoopState's; this class only tracks them.
      self.loop = loop or _loop_state(model, loss_scaling)
    self.step = self.loop.step  # the global step: names ckpt-<step>
    tracked = dict(model=model,
                   model_signature=tf.Variable(model_signature(model), trainable=False),
                   **self.loop.trackables(with_optimizer=optimizer is not None))
    if _has_encoder(model):
      tracked["encoder"] = modeling.find_encoder(model)
    if head_info is not None:
      tracked["head_info"] = tf.Variable(json.dumps(head_info, sort_keys=True),
                                         trainable=False)
    if optimizer is not None:
      tracked["optimizer"] = optimizer
    self._tracked = tracked
    self._checkpoint = tf.train.Checkpoint(**tracked)
    self._manager = None
    self.last_saved = None  # the newest checkpoint whole in output_dir that this run knows
    self.write_dir = output_dir if self.chief else paths.join(
        output_dir, f".worker-{strategy.cluster_resolver.task_id}-tmp")

  def weights(self):
    """{name: object} of what a checkpoint holds of the weights: the model, its
    signature, its encoder and head_info, without the loop's state and the optimizer
    (best_checkpoint.Tracker saves the best weights through these objects)."""
    return {k: v for k, v in self._tracked.items()
            if k in ("model", "model_signature", "encoder", "head_info")}

  def latest(self):
    """The newest whole ckpt-N prefix in output_dir (newest_whole_checkpoint), or None.

    The `checkpoint` state file alone is not trusted: a run killed between a checkpoint's
    .index and the state file, or during the state file's rename, leaves a whole
    checkpoint newer than the file names, or no file at all. The newest whole one is
    taken, said in the log, and (by the chief) named in a rewritten state file, so that
    the checkpoints kept and removed go on as before: whether the state file is missing,
    empty, cut short, or names an older checkpoint or one that is gone or not whole. A
    state file that names a checkpoint, with no whole one to take, is an error, not a
    fresh start."""
    if not self.output_dir:
      return None
    newest, kept = newest_whole_checkpoint(self.output_dir)
    named, problem = checkpoint_files.state_file_problem(self.output_dir, newest)
    if newest is None:
      if named is not None:
        raise errors.UserError(
            f"--output_dir={self.output_dir}: its 'checkpoint' file names {named}, which "
            "does not exist or is not whole, and no other checkpoint there is whole; "
            "restore the files or delete the 'checkpoint' file")
      return None
    if problem:
      logging.warning("--output_dir=%s: %s; resuming from %s, the newest whole checkpoint "
                      "there", self.output_dir, problem, paths.basename(newest))
      if self.chief:
        # With their times: CheckpointManager keeps for ever the ones listed without.
        kept = [paths.abspath(p) for p in kept[:kept.index(newest) + 1]]
        tf.compat.v1.train.update_checkpoint_state(
            self.output_dir, kept[-1], all_model_checkpoint_paths=kept,
            all_model_checkpoint_timestamps=[time.time()] * len(kept),
            last_preserved_timestamp=0.0)
    return newest

  def restore(self, prefix, whole_state=True):
    """Restores the model (and, if whole_state, optimizer, step, RNG) from prefix."""
    saved = _signature_of(prefix)
    if saved is None:
      logging.warning("%s was written before checkpoints recorded their model; it cannot "
                      "be checked to be this task's model", prefix)
    elif saved != model_signature(self.model):
      raise errors.UserError(
          f"--output_dir={self.output_dir} holds a checkpoint ({paths.basename(prefix)})"
          f" of {_describe_mismatch(saved, self.model)}; use a new --output_dir, or delete"
          " the old checkpoints")
    other_head = _head_mismatch(head_info_of(prefix), self.head_info)
    if other_head:
      raise errors.UserError(
          f"--output_dir={self.output_dir} holds a checkpoint "
          f"({paths.basename(prefix)}) of {other_head}; use a new --output_dir (pass "
          "that run as --init_checkpoint to start from its encoder only)")
    objects = {k: v for k, v in self._tracked.items()
               if k not in ("model_signature", "head_info")}
    if not whole_state:
      objects = {"model": self.model, "step": self.step}
    what = f"--output_dir={self.output_dir}: its checkpoint {paths.basename(prefix)}"
    with checkpoint_files.reading(prefix):
      try:
        # The model alone first: its object graph says which rows it was built for (with
        # the optimizer, which tracks the same variables, a run of the other rows would
        # restore without a word).
        _restore_objects(prefix, {"model": self.model}, what)
      except ValueError as exc:
        twin = _fits_other_rows(prefix, "model", self.model)
        if twin is None:
          raise errors.UserError(f"{exc}; use a new --output_dir, or delete the old "
                                 "checkpoints") from None
        if whole_state:  # the optimizer's slots and the data's order go with the rows
          raise errors.UserError(
              f"--output_dir={self.output_dir} holds a run on {rows_of(twin)} "
              f"({paths.basename(prefix)}), but this run reads {rows_of(self.model)}: it "
              "cannot resume in the same folder; use a new --output_dir and pass "
              f"--init_checkpoint={self.output_dir} to start from its weights") from None
        _copy_by_name(twin, self.model)
        logging.info("%s: a run on %s, evaluated as a model for %s (the same weights)",
                     prefix, rows_of(twin), rows_of(self.model))
        objects = {"step": self.step}
      try:
        _restore_objects(prefix, objects, what)
      except ValueError as exc:
        raise errors.UserError(f"{exc}; use a new --output_dir, or delete the old "
                               "checkpoints") from None
    logging.info("%s %s at step %d", "Resumed from" if whole_state else "Restored",
                 prefix, int(self.step.numpy()))
    self.last_saved = prefix
    return int(self.step.numpy())

  def save(self):
    """Writes ckpt-<step> (keeping the newest `keep`); returns its prefix."""
    if self._manager is None:
      self._manager = tf.train.CheckpointManager(
          self._checkpoint, self.write_dir, max_to_keep=self.keep, checkpoint_name="ckpt")
    step = int(self.step.numpy())
    try:
      self.last_saved = self._manager.save(checkpoint_number=step)
      return self.last_saved
    except (OSError, tf.errors.ResourceExhaustedError, tf.errors.UnknownError,
            tf.errors.FailedPreconditionError) as exc:
      if errors.storage_failure_url(exc) is not None:
        raise  # the storage stopped answering: naming_storage_failures says so
      self._remove_partial(step)
      previous = self.latest_saved()
      raise errors.UserError(
          f"--output_dir={self.output_dir}: could not save ckpt-{step} "
          f"({_save_failure(exc)}); "
          + (f"the last good checkpoint {paths.basename(previous)} is kept: "
             "free space and rerun to resume" if previous else "nothing was saved")) from None

  def latest_saved(self):
    try:
      return tf.train.latest_checkpoint(self.write_dir)
    except (OSError, tf.errors.OpError):
      return None

  def _remove_partial(self, step):
    for name in file_io.listdir(self.write_dir):
      if name.startswith(f"ckpt-{step}") and ("_temp" in name or ".tempstate" in name
                                              or name.startswith(f"ckpt-{step}.")):
        path = paths.join(self.write_dir, name)
        file_io.remove_any(path)

  def cleanup(self):
    if not self.chief:
      file_io.rmtree(self.write_dir)


# Read in checkpoint_files, where --init_checkpoint=<run folder> takes the same one.
newest_whole_checkpoint = checkpoint_files.newest_whole_checkpoint


@contextlib.contextmanager
def naming_storage_failures(state, outputs):
  """A storage that stops answering while the run works (TensorFlow's Aborted,
  Unavailable and DeadlineExceeded errors on a URL, the summary writer's flush failure):
  one line naming the flag and the URL, the step reached and the checkpoint a rerun
  resumes from; TensorFlow's traceback behind --verbose. state: the RunCheckpoint;
  outputs: {flag name: path} of the run's outputs."""
  try:
    yield
  except errors.UserError:
    raise
  except Exception as exc:  # pylint: disable=broad-except
    url = errors.storage_failure_url(exc)
    if url is None:
      raise
    output_dir = outputs.get("output_dir") or state.output_dir
    if not url:  # the summary writer's flush names no file: it is output_dir's log
      url = paths.join(output_dir, "train")
    flag, value = next(((f, v) for f, v in outputs.items()
                        if v and (url == v or url.startswith(v.rstrip("/") + "/"))),
                       (None, None))
    where = f"--{flag}={value}" if flag else url
    name = url[len(value.rstrip("/")) + 1:] if flag and url != value else paths.basename(url)
    number = re.match(r"ckpt-(\d+)", paths.basename(url))
    what = (f"writing checkpoint ckpt-{number.group(1)}" if number else
            "writing the 'checkpoint' state file" if paths.basename(url).startswith(
                "checkpoint") else
            f"writing the TensorBoard log {name}" if ".tfevents." in url or "/train" in url
            or "/eval" in url else f"writing {name}" if flag else "reading it")
    step = int(state.step.numpy())
    last = paths.basename(state.last_saved) if state.last_saved else None
    if what == "writing the 'checkpoint' state file":
      last = f"ckpt-{step}"  # written whole before its state file (the rerun finds it)
    raise errors.UserError(
        f"{where}: the storage stopped answering at step {step} while {what} "
        f"({errors.storage_failure_detail(exc)}); rerun the same command once it answers "
        "again: it resumes from " + (last or "the start (no checkpoint was saved yet)")
        ) from exc


def _save_failure(exc):
  """What went wrong in a save, in a few words (TensorFlow's message is a graph dump)."""
  text = " ".join(str(exc).split())
  if getattr(exc, "errno", None) == errno.ENOSPC or "No space left" in text:
    return "the disk is full: No space left on device"
  return re.split(r" \[\[| \{\{|; \[Op", text)[0][:160]


def start_weights(state, init_checkpoint, for_training):
  """What a run starts from; the one policy every script follows. Returns the global step.

  1. output_dir holds a checkpoint: resume from it (training: weights, optimizer, step,
     RNG; eval/predict: the trained weights). A checkpoint of another model there is a
     one-line error.
  2. else --init_checkpoint, of any kind load_checkpoint reads. For eval/predict without
     training it must hold every weight of the model (a fine-tuned head, not only a
     pretrained encoder), else nothing trained would be evaluated.
  3. else: training starts from random weights (said in the log); eval/predict is a
     one-line error naming the flags to pass.
  """
  latest = state.latest()
  if latest:
    logging.info("--output_dir holds %s: %s", paths.basename(latest),
                 "training resumes from it" if for_training else "evaluating it")
    return state.restore(latest, whole_state=for_training)
  if init_checkpoint:
    report = load_checkpoint(state.model, init_checkpoint,
                             head_info=getattr(state, "head_info", None))
    if not for_training and report["missing"]:
      raise errors.UserError(
          f"--init_checkpoint={init_checkpoint} holds no trained weights for "
          f"{report['missing'][0]} ({len(report['missing'])} missing): evaluating it would "
          "score random weights; pass a trained run's --output_dir or ckpt-N, or "
          "--do_train")
    return report["global_step"] if not for_training else 0
  if for_training:
    logging.warning("No --init_checkpoint: the model starts from random weights")
    return 0
  check_trained_weights_exist(state.output_dir, None)
  return 0


def check_trained_weights_exist(output_dir, init_checkpoint):
  """For eval/predict without training: fails in one line when neither output_dir nor
  --init_checkpoint holds anything to evaluate (cheap: no model is built)."""
  if init_checkpoint or (output_dir and (
      file_io.exists(paths.join(output_dir, "checkpoint"))
      or newest_whole_checkpoint(output_dir)[1])):
    return
  raise errors.UserError(
      f"nothing trained to evaluate: --output_dir={output_dir} holds no checkpoint "
      "and no --init_checkpoint was given; pass --do_train, or --output_dir (or "
      "--init_checkpoint) of a trained run")




def is_whole(prefix, names=None):
  """True when checkpoint `prefix` is whole: its data shards all there and its step read
  (names: its folder's listing, when the caller has it)."""
  if names is None:
    directory = paths.dirname(prefix)
    names = set(file_io.listdir(directory)) if file_io.isdir(directory) else set()
  return checkpoint_files.is_whole(prefix, names)
