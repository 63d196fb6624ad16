"""Checkpoint files by format: what a path holds, and weights by Google's TF1 names in and out.

`resolve_checkpoint` names a missing, truncated or corrupt file in one line before
TensorFlow reads it; `assign_by_name` checks every shape; `save_google_checkpoint`
writes Google's layout, so tools written for the original read what we train. Our own
TF2 layout, and what a run starts from, are checkpoints.py's."""

import codecs
import contextlib
import re

from absl import logging
import numpy as np
import tensorflow as tf

from bert import modeling
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors

GOOGLE, OURS, HUGGING_FACE = "google_tf1", "tf2", "hugging_face"


# --------------------------------------------------------------------------- what a path holds


def _safetensors_file(path):
  if file_io.isdir(path):
    candidate = paths.join(path, "model.safetensors")
    return candidate if file_io.isfile(candidate) else None
  return path if path.endswith(".safetensors") else None


_CHECKPOINT_FILE_SUFFIX = re.compile(r"\.(index|meta|data-\d{5}-of-\d{5})$")


def strip_file_suffix(path):
  """`.../bert_model.ckpt.index` (or .data-00000-of-00001, .meta) -> the prefix, noted."""
  prefix = _CHECKPOINT_FILE_SUFFIX.sub("", path)
  if prefix != path and not file_io.isdir(path):
    logging.info("Checkpoint %s: using its prefix %s", path, prefix)
    return prefix
  return path


def checkpoint_reader(prefix):
  """TensorFlow's reader of the checkpoint `prefix` (local or a URL).

  tf.train.load_checkpoint first asks whether `prefix` is a folder, which ram:// answers
  yes for any prefix of a file name (bert_model.ckpt beside bert_model.ckpt.index): the
  reader is opened on the prefix itself."""
  return tf.compat.v1.train.NewCheckpointReader(prefix)


def checkpoint_variables(prefix):
  """{name: shape} of the checkpoint `prefix`, as checkpoint_variables(prefix)."""
  return dict(checkpoint_reader(prefix).get_variable_to_shape_map())


@contextlib.contextmanager
def reading(prefix):
  """Turns the errors of a truncated or corrupt checkpoint file into one line."""
  try:
    yield
  except (IndexError, tf.errors.DataLossError, tf.errors.OutOfRangeError,
          tf.errors.InternalError) as exc:
    raise errors.UserError(
        f"{prefix}: the checkpoint is truncated or corrupt ({' '.join(str(exc).split())[:160]}"
        "); copy or download it again") from None


def resolve_checkpoint(path):
  """(kind, path) for a checkpoint given as a prefix, a directory or a safetensors file."""
  if not path:
    raise errors.UserError("no checkpoint path given")
  path = strip_file_suffix(str(path))
  st = _safetensors_file(path)
  if st:
    if not file_io.isfile(st):
      raise FileNotFoundError(2, "no such file", st)
    return HUGGING_FACE, st
  prefix = path
  if file_io.isdir(path):
    prefix = _directory_checkpoint(path)
  if not file_io.exists(prefix + ".index"):
    raise errors.UserError(
        f"{path}: not a checkpoint ({prefix}.index does not exist); pass the "
        "prefix, e.g. .../bert_model.ckpt")
  try:
    names = checkpoint_variables(prefix)
  except (tf.errors.OpError, ValueError) as exc:
    raise errors.UserError(f"{prefix}: unreadable checkpoint ({exc})") from None
  _check_data_files(prefix)
  if any(n.startswith("bert/") or n.startswith("cls/") for n in names):
    return GOOGLE, prefix
  if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
    return OURS, prefix
  raise errors.UserError(
      f"{prefix}: neither a Google BERT checkpoint (no bert/* variables) "
      "nor one of ours")


_SAID = set()  # (directory, problem, checkpoint) already logged by this process


def _directory_checkpoint(directory):
  """The checkpoint a directory given as a checkpoint means: a run folder's newest whole
  ckpt-N whatever its `checkpoint` state file says (the log names the file and what is
  wrong with it), else the checkpoint the state file names (the original's
  model.ckpt-N), else Google's bert_model.ckpt."""
  newest, _ = newest_whole_checkpoint(directory)
  named, problem = state_file_problem(directory, newest)
  if newest is not None:
    if problem and (directory, problem, newest) not in _SAID:
      _SAID.add((directory, problem, newest))  # a run resolves its checkpoint more than once
      logging.warning("%s: %s; loading %s, the newest whole checkpoint there",
                      directory, problem, paths.basename(newest))
    return newest
  if named is not None:
    # TensorFlow has already joined the directory onto a relative name.
    prefix = read_state_file(directory)[2]
    if file_io.exists(prefix + ".index"):
      return prefix
    raise errors.UserError(
        f"{directory}: its 'checkpoint' file names {named}, which does not exist "
        f"({prefix}.index is missing); restore the files, pass an existing ckpt-N "
        "prefix, or delete the 'checkpoint' file")
  google = paths.join(directory, "bert_model.ckpt")
  if file_io.exists(google + ".index"):
    return google
  said = f"; {problem}" if problem and "is missing" not in problem else ""
  raise errors.UserError(
      f"{directory}: no checkpoint in this directory (no whole ckpt-N, no 'checkpoint' "
      f"file naming one, no bert_model.ckpt.index or model.safetensors){said}")


# --------------------------------------------------------------------------- run folders

STATE_FILE = "checkpoint"  # TensorFlow's checkpoint state file in a run folder
_STEP_KEY = "step/.ATTRIBUTES/VARIABLE_VALUE"  # a checkpoint of ours: its global step


# The lines of TensorFlow's CheckpointState text (update_checkpoint_state writes them).
_STATE_LINE = re.compile(r'(model_checkpoint_path|all_model_checkpoint_paths): '
                         r'"((?:[^"\\]|\\.)*)"|(all_model_checkpoint_timestamps|'
                         r'last_preserved_timestamp): [^\s"]+')


def read_state_file(directory):
  """(name, problem, path) of a run folder's `checkpoint` state file: the basename of the
  checkpoint it names ("ckpt-4") and its path (a relative name joined onto the folder,
  as TensorFlow does), or None and a phrase saying what is wrong with the file
  ("'.../checkpoint' is empty (0 bytes)"): missing, empty, or cut short while it was
  written. Read here rather than by tf.train.get_checkpoint_state, which raises on an
  empty file and answers None, with warnings of its own, for a cut one."""
  state_file = paths.join(directory, STATE_FILE)
  if not file_io.exists(state_file):
    return None, f"'{state_file}' is missing", None
  data = file_io.read_bytes(state_file)
  if not data:
    return None, f"'{state_file}' is empty (0 bytes)", None
  lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
  bad = [line for line in lines if line and not _STATE_LINE.fullmatch(line)]
  if bad:
    return None, (f"'{state_file}' is cut short or not a checkpoint state ({len(data)} "
                  f"bytes; its line {bad[0][:60]!r} is not one)"), None
  named = [_STATE_LINE.fullmatch(line).group(2) for line in lines
           if line.startswith("model_checkpoint_path:")]
  if not named or not named[0]:
    return None, (f"'{state_file}' names no checkpoint ({len(data)} bytes: cut short "
                  "while it was written?)"), None
  # Text-format strings escape quotes, backslashes and non-ASCII bytes.
  path = codecs.escape_decode(named[0].encode("utf-8"))[0].decode("utf-8", "replace")
  if not (paths.is_url(path) or path.startswith("/")):
    path = paths.join(directory, path)
  return paths.basename(path), None, path


def state_file_problem(directory, newest):
  """(name, problem): what the state file names (or None) and, unless it names `newest`
  (the newest whole ckpt-N prefix, or None), what is wrong with it, in a phrase that
  names the file: missing, empty, cut short, naming an older checkpoint, naming one that
  is gone or not whole."""
  named, problem, _ = read_state_file(directory)
  state_file = paths.join(directory, STATE_FILE)
  newest_name = paths.basename(newest) if newest else None
  if problem or named == newest_name:
    return named, problem
  if not file_io.exists(paths.join(directory, named) + ".index"):
    return named, f"'{state_file}' names {named}, which does not exist"
  if newest_name and _number_of(named) < _number_of(newest_name):
    return named, (f"'{state_file}' names {named}, older than {newest_name} (a run was "
                   "stopped while saving)")
  return named, f"'{state_file}' names {named}, which is not whole"


def _number_of(name):
  """N of ckpt-N (-1 for a name of another form)."""
  match = re.fullmatch(r"ckpt-(\d+)", name)
  return int(match.group(1)) if match else -1


def newest_whole_checkpoint(directory):
  """(prefix, every ckpt-N prefix with an .index, oldest first) of `directory`: the
  newest ckpt-N whose .index reads and whose data shards are all there and readable (its
  global step read from them), or None.

  What a kill at each point of a save leaves: the shards in `ckpt-N_temp/` (no
  ckpt-N.index), the shards in place without their .index, or a whole ckpt-N that the
  `checkpoint` file does not name yet; only the last is taken."""
  names = set(file_io.listdir(directory)) if file_io.isdir(directory) else set()
  numbers = sorted((int(m.group(1)) for m in (re.fullmatch(r"ckpt-(\d+)\.index", n)
                                             for n in names) if m))
  indexed = [paths.join(directory, f"ckpt-{n}") for n in numbers]
  for prefix in reversed(indexed):
    if is_whole(prefix, names):
      return prefix, indexed
  return None, indexed


def is_whole(prefix, names):
  """True when checkpoint `prefix` is whole: every data shard of its count is among
  `names` (its folder's listing) and its step can be read."""
  base = paths.basename(prefix)
  shards = [re.fullmatch(re.escape(base) + r"\.data-(\d+)-of-(\d+)", n) for n in names]
  counts = {int(m.group(2)) for m in shards if m}
  if len(counts) != 1:
    return False
  count = counts.pop()
  if {int(m.group(1)) for m in shards if m} != set(range(count)):
    return False
  try:
    reader = checkpoint_reader(prefix)
    if _STEP_KEY in reader.get_variable_to_shape_map():
      reader.get_tensor(_STEP_KEY)
  except (tf.errors.OpError, ValueError, errors.UserError):
    return False
  return True


def _check_data_files(prefix):
  """Fails when a .data shard is missing or shorter than the index says (a cut copy)."""
  with reading(prefix):
    reader = checkpoint_reader(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
  needed = sum(int(np.prod(shape)) * dtypes[name].size for name, shape in shapes.items()
               if dtypes[name] != tf.string)
  directory = paths.dirname(prefix) or "."
  base = paths.basename(prefix)
  shards = [paths.join(directory, n) for n in file_io.listdir(directory)
            if n.startswith(base + ".data-")]
  if not shards:
    raise errors.UserError(f"{prefix}: the checkpoint has no .data file beside its "
                                 ".index; copy the whole checkpoint")
  have = sum(file_io.getsize(f) for f in shards)
  if have < needed:
    raise errors.UserError(
        f"{prefix}: the checkpoint is truncated ({have} bytes of data, its index needs at "
        f"least {needed}); copy or download it again")


# --------------------------------------------------------------------------- by Google's names


_LAYER_RE = re.compile(r"^bert/encoder/layer_(\d+)/")


def assign_by_name(model, tensors, source, strict_encoder=True):
  """Assigns {google_name: np.ndarray} to the model's variables; returns the report."""
  targets = modeling.google_variable_map(model)
  loaded, mismatched = [], []
  for name, variable in targets.items():
    if name not in tensors:
      continue
    value = tensors[name]
    if tuple(value.shape) != tuple(variable.shape):
      mismatched.append(f"{name}: checkpoint {list(value.shape)} vs model "
                        f"{list(variable.shape)}")
      continue
    variable.assign(value.astype(variable.dtype))
    loaded.append(name)
  if mismatched:
    raise errors.UserError(
        f"{source}: {len(mismatched)} shape mismatch(es) with the BERT config, "
        f"first: {mismatched[0]}; use the bert_config.json of this checkpoint")
  missing = sorted(set(targets) - set(loaded))
  ignored = {"global_step"}
  unused = sorted(n for n in tensors if n not in targets and n not in ignored
                  and not n.endswith(("/adam_m", "/adam_v")) and "/lamb_" not in n)
  if strict_encoder and loaded:
    bad_missing = [n for n in missing if n.startswith("bert/")]
    bad_unused = [n for n in unused if _LAYER_RE.match(n) or n.startswith("bert/")]
    if bad_missing or bad_unused:
      config = modeling.find_encoder(model).config
      raise errors.UserError(
          f"{source}: the checkpoint does not fit the BERT config "
          f"(num_hidden_layers={config.num_hidden_layers}): "
          + (f"missing {bad_missing[0]}" if bad_missing else f"extra {bad_unused[0]}")
          + "; use the bert_config.json of this checkpoint")
  if not loaded:
    raise errors.UserError(f"{source}: no variable of the checkpoint matches the model")
  return {"format": None, "path": source, "loaded": sorted(loaded), "missing": missing,
          "unused": unused}


def log_report(report):
  rows = f", a run on {report['rows']}" if report.get("rows") else ""
  logging.info("Loaded %d variables from %s (%s%s)", len(report["loaded"]), report["path"],
               report["format"], rows)
  for name in report["loaded"]:
    logging.debug("  init from checkpoint: %s", name)
  if report["missing"]:
    logging.info("Not in the checkpoint (freshly initialised): %s",
                 ", ".join(report["missing"]))
  if report["unused"]:
    logging.info("In the checkpoint but unused by this model: %s",
                 ", ".join(report["unused"]))


def read_google_checkpoint(prefix):
  reader = checkpoint_reader(prefix)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def save_google_checkpoint(model, prefix, global_step=None, extra=None):
  """Writes `model` as a Google-layout TF1 checkpoint at `prefix` (atomically).

  Produces prefix.index, prefix.data-00000-of-00001, prefix.meta and a `checkpoint`
  state file, readable by the original code's `tf.train.init_from_checkpoint` and by
  `load_checkpoint`. `extra` adds {name: np.ndarray} (e.g. optimizer slots).
  """
  values = {name: np.asarray(var.numpy()) for name, var in
            modeling.google_variable_map(model).items()}
  if extra:
    values.update({k: np.asarray(v) for k, v in extra.items()})
  if global_step is not None:
    values["global_step"] = np.asarray(global_step, dtype=np.int64)
  return write_google_checkpoint(values, prefix)


def write_google_checkpoint(values, prefix):
  """Writes {Google name: np.ndarray} as a Google-layout TF1 checkpoint at `prefix`
  (atomically, as save_google_checkpoint); each value's bytes as given."""
  bad = [n for n, v in sorted(values.items())
         if v.dtype.kind == "f" and not np.isfinite(v).all()]
  if bad:  # the file every other script loads never holds NaN/inf
    raise errors.UserError(
        f"{prefix}: not written: {len(bad)} weight(s) are not finite ({bad[0]} first), "
        "the training diverged; lower --learning_rate and train again from the last good "
        "checkpoint")
  directory, basename = paths.split(paths.abspath(prefix))
  file_io.makedirs(directory)
  # Written into a temporary directory beside the target, then moved into place data
  # first and index last: a reader never sees an index pointing at missing data.
  tmp_dir = paths.temporary_sibling(prefix, kind="saving")
  file_io.makedirs(tmp_dir)
  try:
    graph = tf.Graph()
    with graph.as_default():
      feeds, variables = {}, {}
      for name, value in sorted(values.items()):
        # Initialised through placeholders: constants would be copied into the .meta.
        placeholder = tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape)
        variables[name] = tf.compat.v1.Variable(placeholder, name=name)
        feeds[placeholder] = value
      saver = tf.compat.v1.train.Saver(var_list=variables, max_to_keep=1)
      with tf.compat.v1.Session(graph=graph) as session:
        session.run(tf.compat.v1.global_variables_initializer(), feed_dict=feeds)
        saver.save(session, paths.join(tmp_dir, basename), write_meta_graph=True,
                   write_state=False)
    for name in sorted(file_io.listdir(tmp_dir), key=lambda n: n.endswith(".index")):
      file_io.replace(paths.join(tmp_dir, name), paths.join(directory, name))
  finally:
    file_io.rmtree(tmp_dir)
  with atomic_output.atomic_open(paths.join(directory, "checkpoint")) as handle:
    handle.write(f'model_checkpoint_path: "{basename}"\n'
                 f'all_model_checkpoint_paths: "{basename}"\n')
  return prefix
