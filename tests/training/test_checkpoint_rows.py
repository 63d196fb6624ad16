"""A run on packed rows and a run on the original's rows (one sequence a row) start each
other: their models hold the same weights under the same Google names but different Keras
object graphs, so a checkpoint of one form loads into the other by name
(checkpoints._restore_any_rows). Resuming in a run's own folder with rows of the other
form stays refused, in one line naming both.

Each run is saved as run_pretraining.py saves it (RunCheckpoint with the optimizer and its
slots); the models are tiny and built in this process.
"""
import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import modeling
from bert import optimization
from bert.training import checkpoints
from bert.utils import errors
import tiny

CONFIG = tiny.tiny_config(41, max_position_embeddings=24)


def _values(model):
  return {name: variable.numpy() for name, variable in
          modeling.google_variable_map(model).items()}


def _saved_run(folder, packed, use_next_sentence=True, seed=0):
  """A pretraining run's folder (ckpt-3, optimizer slots included) whose every weight is
  drawn from `seed`; returns the weights by Google name."""
  model, _ = heads.build_pretraining_model(CONFIG, use_next_sentence=use_next_sentence,
                                           packed=packed)
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    if "seed_generator" not in variable.path:
      variable.assign(rng.normal(size=variable.shape).astype("float32"))
  optimizer = optimization.create_optimizer(1e-3, 10, 1)
  state = checkpoints.RunCheckpoint(str(folder), model, optimizer=optimizer,
                                    head_info={"task": "pretraining", "head": "pretraining",
                                               "next_sentence": use_next_sentence})
  state.step.assign(3)
  state.save()
  return _values(model)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("rows")
  return {packed: (root / str(packed), _saved_run(root / str(packed), packed, seed=packed))
          for packed in (True, False)}


@pytest.mark.parametrize("packed", [True, False])
def test_a_run_loads_whole_into_a_pretraining_model_of_the_other_rows(runs, packed):
  folder, saved = runs[packed]
  model, _ = heads.build_pretraining_model(CONFIG, packed=not packed)
  for where in (str(folder), str(folder / "ckpt-3")):
    report = checkpoints.load_checkpoint(model, where)
    assert report["whole_model"] and report["global_step"] == 3
    assert report["rows"] == ("packed rows" if packed else "one sequence a row")
    values = _values(model)
    assert sorted(values) == sorted(saved)  # the masked-LM and next-sentence heads too
    for name, value in saved.items():
      np.testing.assert_array_equal(values[name], value, err_msg=name)


@pytest.mark.parametrize("packed", [True, False])
def test_a_run_gives_its_encoder_to_a_classifier(runs, packed):
  folder, saved = runs[packed]
  model, encoder = heads.build_classifier_model(CONFIG, 3)
  report = checkpoints.load_checkpoint(model, str(folder))
  assert not report["whole_model"]
  assert report["missing"] == ["output_bias", "output_weights"]
  values = _values(encoder)
  assert values and all(name.startswith("bert/") for name in values)
  for name, value in values.items():
    np.testing.assert_array_equal(value, saved[name], err_msg=name)


def test_a_packed_run_gives_its_encoder_to_an_encoder(runs):
  folder, saved = runs[True]
  encoder = modeling.BertModel(CONFIG)
  checkpoints.load_checkpoint(encoder, str(folder))
  for name, value in _values(encoder).items():
    np.testing.assert_array_equal(value, saved[name], err_msg=name)


def test_a_run_without_next_sentence_loads_into_the_other_rows(tmp_path):
  saved = _saved_run(tmp_path, packed=True, use_next_sentence=False, seed=5)
  model, _ = heads.build_pretraining_model(CONFIG, use_next_sentence=False, packed=False)
  assert checkpoints.load_checkpoint(model, str(tmp_path))["whole_model"]
  for name, value in _values(model).items():
    np.testing.assert_array_equal(value, saved[name], err_msg=name)


@pytest.mark.parametrize("packed", [True, False])
def test_resuming_with_the_other_rows_is_refused_naming_both(runs, packed):
  folder, _ = runs[packed]
  model, _ = heads.build_pretraining_model(CONFIG, packed=not packed)
  state = checkpoints.RunCheckpoint(str(folder), model,
                                    optimizer=optimization.create_optimizer(1e-3, 10, 1),
                                    head_info={"task": "pretraining", "head": "pretraining",
                                               "next_sentence": True})
  with pytest.raises(errors.UserError) as caught:
    checkpoints.start_weights(state, None, for_training=True)
  message = str(caught.value)
  ours, theirs = ("one sequence a row", "packed rows") if packed else (
      "packed rows", "one sequence a row")
  assert f"holds a run on {theirs} (ckpt-3), but this run reads {ours}" in message
  assert f"--init_checkpoint={folder}" in message and "\n" not in message


@pytest.mark.parametrize("packed", [True, False])
def test_evaluating_a_run_in_its_folder_with_the_other_rows_reads_its_weights(runs, packed):
  folder, saved = runs[packed]
  model, _ = heads.build_pretraining_model(CONFIG, packed=not packed)
  state = checkpoints.RunCheckpoint(str(folder), model, head_info={
      "task": "pretraining", "head": "pretraining", "next_sentence": True})
  assert checkpoints.start_weights(state, None, for_training=False) == 3
  for name, value in _values(model).items():
    np.testing.assert_array_equal(value, saved[name], err_msg=name)


def test_a_checkpoint_of_another_size_is_still_refused(runs):
  folder, _ = runs[True]
  other = tiny.tiny_config(41, max_position_embeddings=24, hidden_size=16,
                           intermediate_size=19)
  model, _ = heads.build_pretraining_model(other, packed=False)
  with pytest.raises(errors.UserError, match="does not fit the model built from"):
    checkpoints.load_checkpoint(model, str(folder))


def test_the_two_forms_compute_the_same_for_one_sequence_a_row(runs):
  """What makes loading by name right: the packed model given one sequence a row (its
  positions 0..S-1, one sequence id) computes what the original's model computes."""
  folder, _ = runs[True]
  packed, _ = heads.build_pretraining_model(CONFIG, packed=True)
  plain, _ = heads.build_pretraining_model(CONFIG, packed=False)
  checkpoints.load_checkpoint(packed, str(folder))
  checkpoints.load_checkpoint(plain, str(folder))
  rng = np.random.default_rng(1)
  ids = tf.constant(rng.integers(5, 41, (2, 12)), tf.int32)
  ones = tf.ones_like(ids)
  common = {"input_ids": ids, "input_mask": ones, "segment_ids": tf.zeros_like(ids),
            "masked_lm_positions": tf.constant([[1, 4], [2, 7]], tf.int32)}
  a = plain(common)
  b = packed({**common, "position_ids": tf.tile(tf.range(12)[None], [2, 1]),
              "sequence_ids": ones, "next_sentence_positions": tf.zeros([2, 1], tf.int32)})
  np.testing.assert_allclose(a["masked_lm_logits"], b["masked_lm_logits"], atol=1e-5)
  np.testing.assert_allclose(a["next_sentence_logits"], b["next_sentence_logits"][:, 0],
                             atol=1e-5)
