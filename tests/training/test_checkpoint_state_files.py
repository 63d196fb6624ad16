"""A run folder's `checkpoint` state file of every kind: missing, empty (a power cut),
cut short, naming an older checkpoint, naming one that is gone, naming one that is not
whole. Resuming the run (RunCheckpoint.latest, start_weights) and giving the folder as
--init_checkpoint (checkpoint_files.resolve_checkpoint) both take the newest whole
checkpoint, ckpt-6, and the log names the file and what was wrong with it; on the local
disk and on ram:// (the same tf.io.gfile calls as gs://)."""
import logging
import os
import uuid

import pytest
import tensorflow as tf

from bert import heads
from bert import modeling
from bert.formats import checkpoint_files
from bert.training import checkpoints
from bert.utils import errors
from bert.utils import file_io
import tiny

# One layer: which checkpoint a state file leads to is the same for any depth, and each
# save and restore grows with the layers.
TINY = dict(tiny.TINY_SHAPE, vocab_size=53, max_position_embeddings=24, type_vocab_size=2,
            num_hidden_layers=1)
STATE_TEXT = ('model_checkpoint_path: "ckpt-6"\nall_model_checkpoint_paths: "ckpt-2"\n'
              'all_model_checkpoint_paths: "ckpt-4"\nall_model_checkpoint_paths: "ckpt-6"\n')


def _run_state(output_dir):
  model, _ = heads.build_classifier_model(modeling.BertConfig(**TINY), 2)
  return checkpoints.RunCheckpoint(output_dir, model)


def _bias(state):
  return [v for v in state.model.weights if "classifier" in v.path and "bias" in v.path][0]


def _saved_at(output_dir, steps):
  """ckpt-<step> for each step, the head's bias holding the step, as the loop saves."""
  state = _run_state(output_dir)
  for step in steps:
    state.step.assign(step)
    _bias(state).assign(tf.fill(_bias(state).shape, float(step)))
    state.save()


def _write(path, data):
  if file_io.exists(path):
    file_io.remove(path)  # ram:// writes over a file's start without truncating it
  file_io.write_bytes(path, data)


def _state(kind, out):
  """Leaves out/checkpoint as `kind` says; returns what the log must say is wrong."""
  state_file = f"{out}/checkpoint"
  if kind == "missing":
    file_io.remove(state_file)
    return f"'{state_file}' is missing"
  if kind == "empty":
    _write(state_file, b"")
    return f"'{state_file}' is empty (0 bytes)"
  if kind == "cut in a name":
    _write(state_file, STATE_TEXT.encode()[:40])
    return (f"'{state_file}' is cut short or not a checkpoint state (40 bytes; its line "
            "'all_mode' is not one)")
  if kind == "naming none":  # whole lines, but not the one that names the newest
    _write(state_file, b'all_model_checkpoint_paths: "ckpt-2"\n')
    return (f"'{state_file}' names no checkpoint (37 bytes: cut short while it was "
            "written?)")
  if kind == "older":
    _write(state_file, STATE_TEXT.replace('path: "ckpt-6"', 'path: "ckpt-4"').encode())
    return f"'{state_file}' names ckpt-4, older than ckpt-6 (a run was stopped while saving)"
  if kind == "gone":
    _write(state_file, STATE_TEXT.replace('path: "ckpt-6"', 'path: "ckpt-8"').encode())
    return f"'{state_file}' names ckpt-8, which does not exist"
  if kind == "not whole":  # ckpt-8's index without its data (an interrupted copy)
    _write(f"{out}/ckpt-8.index", file_io.read_bytes(f"{out}/ckpt-6.index"))
    _write(state_file, STATE_TEXT.replace('path: "ckpt-6"', 'path: "ckpt-8"').encode())
    return f"'{state_file}' names ckpt-8, which is not whole"
  raise ValueError(kind)


KINDS = ["missing", "empty", "cut in a name", "naming none", "older", "gone",
         "not whole"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """ckpt-2, ckpt-4 and ckpt-6 saved once; each test works on a copy."""
  out = str(tmp_path_factory.mktemp("saved") / "out")
  _saved_at(out, (2, 4, 6))
  return out


@pytest.fixture(params=["local", "ram"])
def run_folder(request, saved, tmp_path):
  out = (str(tmp_path / "out") if request.param == "local"
         else f"ram://state-{uuid.uuid4().hex[:8]}/out")
  file_io.makedirs(out)
  for name in os.listdir(saved):
    file_io.write_bytes(f"{out}/{name}", file_io.read_bytes(os.path.join(saved, name)))
  # The copy's state file names its own folder's checkpoints.
  tf.compat.v1.train.update_checkpoint_state(
      out, f"{out}/ckpt-6", all_model_checkpoint_paths=[f"{out}/ckpt-{n}" for n in (2, 4, 6)])
  return out


def _messages(caplog):
  return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("kind", KINDS)
def test_resuming_takes_the_newest_whole_checkpoint_and_says_what_was_wrong(
    run_folder, kind, caplog):
  caplog.set_level(logging.INFO)
  wrong = _state(kind, run_folder)
  state = _run_state(run_folder)
  assert checkpoints.start_weights(state, None, for_training=True) == 6
  assert float(_bias(state).numpy()[0]) == 6.0
  said = [m for m in _messages(caplog) if m.startswith(f"--output_dir={run_folder}: ")]
  assert len(said) == 1 and wrong in said[0], said
  assert said[0].endswith("; resuming from ckpt-6, the newest whole checkpoint there")
  # The state file is rewritten to name it, and a second resume says nothing.
  assert checkpoint_files.read_state_file(run_folder)[:2] == ("ckpt-6", None)
  caplog.clear()
  assert _run_state(run_folder).latest() == f"{run_folder}/ckpt-6"
  assert not _messages(caplog)


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_folder_as_init_checkpoint_loads_the_newest_whole_one(run_folder, kind,
                                                                     caplog):
  caplog.set_level(logging.INFO)
  wrong = _state(kind, run_folder)
  kind_found, prefix = checkpoint_files.resolve_checkpoint(run_folder)
  assert (kind_found, prefix) == (checkpoint_files.OURS, f"{run_folder}/ckpt-6")
  said = _messages(caplog)
  assert len(said) == 1 and said[0].startswith(f"{run_folder}: {wrong}"), said
  assert said[0].endswith("; loading ckpt-6, the newest whole checkpoint there")


def test_a_state_file_naming_a_checkpoint_with_none_whole_is_still_an_error(tmp_path):
  out = str(tmp_path / "out")
  _saved_at(out, (2,))
  os.remove(os.path.join(out, "ckpt-2.index"))
  with pytest.raises(errors.UserError, match=(
      r"^--output_dir=.*/out: its 'checkpoint' file names ckpt-2, which does not exist or "
      r"is not whole, and no other checkpoint there is whole; restore the files or delete "
      r"the 'checkpoint' file$")):
    _run_state(out).latest()
  with pytest.raises(errors.UserError, match=(
      r"/out: its 'checkpoint' file names ckpt-2, which does not exist \(.*/out/ckpt-2\."
      r"index is missing\)")):
    checkpoint_files.resolve_checkpoint(out)


def test_an_empty_state_file_and_no_checkpoint_is_a_fresh_start_or_named(tmp_path):
  out = tmp_path / "out"
  out.mkdir()
  (out / "checkpoint").write_bytes(b"")
  assert _run_state(str(out)).latest() is None  # nothing whole to lose: a fresh start
  with pytest.raises(errors.UserError, match=(
      r"/out: no checkpoint in this directory \(no whole ckpt-N, no 'checkpoint' file "
      r"naming one, no bert_model.ckpt.index or model.safetensors\); '.*/out/checkpoint' "
      r"is empty \(0 bytes\)$")):
    checkpoint_files.resolve_checkpoint(str(out))
