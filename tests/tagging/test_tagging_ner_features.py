"""tagging_ner_features (feature-based NER) and tagging_task's token batches, with a tiny random BERT."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert import input_pipeline
from bert import modeling
from bert.tagging import tagging_ner_features
from bert.tagging import tagging_task
from bert.formats import checkpoint_files
from bert.utils import errors
import tiny

# BertConfig's own default type_vocab_size (16), as this test always had.
TINY = tiny.tiny_config(97, max_position_embeddings=80, type_vocab_size=16)
LENGTHS = [5, 9, 3, 40, 7]  # real tokens per window; window 3 needs a 64-wide batch


def token_arrays(max_seq_length=64, lengths=LENGTHS, seed=0):
  """tagging_ner_data.features_to_arrays-like arrays [N, S] with the given real lengths."""
  rng = np.random.default_rng(seed)
  n = len(lengths)
  mask = (np.arange(max_seq_length)[None] < np.array(lengths)[:, None]).astype(np.int32)
  labels = np.where(mask == 1, rng.integers(0, 9, (n, max_seq_length)), -1)
  return {"input_ids": (rng.integers(1, TINY.vocab_size, (n, max_seq_length)) * mask
                        ).astype(np.int32),
          "input_mask": mask, "segment_ids": np.zeros_like(mask),
          "label_ids": labels.astype(np.int32),
          "feature_index": np.arange(n, dtype=np.int32)}


@pytest.fixture(scope="module")
def encoder():
  keras.utils.set_random_seed(3)
  model = modeling.BertModel(TINY)
  arrays = token_arrays()
  model({k: arrays[k][:1] for k in ("input_ids", "input_mask", "segment_ids")})
  return model


def test_combine_layers_against_numpy():
  rng = np.random.default_rng(1)
  layers = [rng.normal(size=(2, 3, 4)).astype(np.float32) for _ in range(5)]
  outputs = {"encoder_outputs": [tf.constant(x) for x in layers],
             "embedding_output": tf.constant(rng.normal(size=(2, 3, 4)).astype(np.float32))}
  expected = {"embeddings": outputs["embedding_output"].numpy(), "last": layers[-1],
              "second_to_last": layers[-2], "sum_last_four": sum(layers[-4:]),
              "concat_last_four": np.concatenate(layers[-4:], axis=-1),
              "sum_all": sum(layers)}
  assert set(expected) == set(tagging_ner_features.LAYER_CHOICES)
  for choice, value in expected.items():
    combined = tagging_ner_features.combine_layers(outputs, choice).numpy()
    np.testing.assert_allclose(combined, value, rtol=1e-6, atol=1e-6)
    assert combined.shape[-1] == tagging_ner_features.feature_dim(choice, 4)


def test_layer_choice_needs_enough_layers():
  tagging_ner_features.check_layer_choice("second_to_last", 2)
  tagging_ner_features.check_layer_choice("sum_all", 1)
  with pytest.raises(errors.UserError, match=(
      r"^--feature_layers=concat_last_four needs at least 4 encoder layers; the model "
      r"has 3$")):
    tagging_ner_features.check_layer_choice("concat_last_four", 3)
  with pytest.raises(errors.UserError, match="--feature_layers=last_two: use one of"):
    tagging_ner_features.check_layer_choice("last_two", 12)


def test_token_batches_are_trimmed_exactly_or_to_multiples_of_32():
  arrays = token_arrays()
  # Rows (5, 9), (3, 40), (7). Eval/predict batches are their longest window exactly;
  # with multiple=32 (training's default, and the feature cache's) 32, 64, 32.
  # feature_index is not cut.
  for multiple, widths in ((None, [9, 40, 7]), (input_pipeline.TRAINING_LENGTH_MULTIPLE, [32, 64, 32])):
    batches = list(tagging_task.make_dataset(arrays, 2, False, multiple=multiple))
    assert [b["input_ids"].shape[1] for b in batches] == widths
    for batch, rows in zip(batches, ([0, 1], [2, 3], [4])):
      width = batch["input_ids"].shape[1]
      assert batch["feature_index"].numpy().tolist() == rows
      for key in ("input_ids", "input_mask", "segment_ids", "label_ids"):
        np.testing.assert_array_equal(batch[key].numpy(), arrays[key][rows, :width])
  # sort_by_length (run_ner's eval and predict): windows in order of length, stable,
  # lengths 3, 5 | 7, 9 | 40, each batch exactly its longest; feature_index says whose.
  batches = list(tagging_task.make_dataset(arrays, 2, False, sort_by_length=True))
  assert [b["input_ids"].shape[1] for b in batches] == [5, 9, 40]
  for batch, rows in zip(batches, ([2, 0], [4, 1], [3])):
    width = batch["input_ids"].shape[1]
    assert batch["feature_index"].numpy().tolist() == rows
    for key in ("input_ids", "input_mask", "segment_ids", "label_ids"):
      np.testing.assert_array_equal(batch[key].numpy(), arrays[key][rows, :width])
  # Training batches: multiples of 32 that hold their longest window.
  for batch in tagging_task.make_dataset(arrays, 2, True).take(6):
    width = int(batch["input_ids"].shape[1])
    longest = int(batch["input_mask"].numpy().sum(axis=1).max())
    assert width % 32 == 0 and longest <= width < longest + 32
  # Never wider than the arrays: a 16-wide window stays 16.
  short = token_arrays(max_seq_length=16, lengths=[3, 16])
  assert next(iter(tagging_task.make_dataset(short, 2, False, multiple=32)))[
      "input_ids"].shape[1] == 16


def test_feature_cache_round_trip(encoder, tmp_path):
  arrays = token_arrays()
  path = str(tmp_path / "dev.tfrecord")
  dataset = tagging_task.make_dataset(arrays, 2, False, multiple=input_pipeline.TRAINING_LENGTH_MULTIPLE)
  tagging_ner_features.write_feature_cache(path, encoder, dataset, "sum_all", len(LENGTHS))
  outputs = encoder({k: arrays[k] for k in ("input_ids", "input_mask", "segment_ids")},
                    training=False)
  expected = sum(x.numpy() for x in outputs["encoder_outputs"]).astype(np.float16)
  batches = list(tagging_ner_features.feature_dataset(path, 32, 3, False))
  assert [b["features"].shape[1] for b in batches] == [32, 64]
  rows = 0
  for batch in batches:
    for row, index in enumerate(batch["feature_index"].numpy()):
      length = LENGTHS[index]
      features = batch["features"].numpy()[row]
      # Windows were encoded in batches of 2 at width 32 or 64: the same activations as
      # one full-width pass, to float16 rounding of float32 sums.
      np.testing.assert_allclose(features[:length], expected[index, :length],
                                 rtol=2e-3, atol=2e-3)
      assert not features[length:].any()
      np.testing.assert_array_equal(batch["input_mask"].numpy()[row],
                                    np.arange(features.shape[0]) < length)
      np.testing.assert_array_equal(batch["label_ids"].numpy()[row, :length],
                                    arrays["label_ids"][index, :length])
      assert (batch["label_ids"].numpy()[row, length:] == -1).all()
      rows += 1
  assert rows == len(LENGTHS)


def test_bilstm_tagger_ignores_padding():
  keras.utils.set_random_seed(5)
  model = tagging_ner_features.build_bilstm_tagger(6, 9, 4)
  rng = np.random.default_rng(2)
  features = rng.normal(size=(2, 7, 6)).astype(np.float32)
  mask = np.array([[1] * 4 + [0] * 3, [1] * 7], np.int32)
  logits = model({"features": features, "input_mask": mask})["logits"].numpy()
  assert logits.shape == (2, 7, 9) and logits.dtype == np.float32
  noisy = features.copy()
  noisy[0, 4:] = 100.0  # padding: must not reach the real positions (backward LSTM)
  changed = model({"features": noisy, "input_mask": mask})["logits"].numpy()
  np.testing.assert_allclose(changed[0, :4], logits[0, :4], rtol=1e-5, atol=1e-6)
  # A real position does reach the others, both ways (forward and backward LSTM).
  noisy[0, 2] += 1.0
  moved = model({"features": noisy, "input_mask": mask})["logits"].numpy()
  assert not np.allclose(moved[0, 0], logits[0, 0]) and not np.allclose(moved[0, 3],
                                                                        logits[0, 3])


def test_checkpoint_identity_follows_the_resolved_checkpoint(encoder, tmp_path, monkeypatch):
  assert tagging_ner_features.checkpoint_identity(None) == "random"
  directory = str(tmp_path / "run")
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(encoder=encoder), directory, 3,
                                       checkpoint_name="ckpt")
  manager.save(checkpoint_number=1)
  first = tagging_ner_features.checkpoint_identity(directory)
  assert "ckpt-1" in first
  assert tagging_ner_features.checkpoint_identity(os.path.join(directory, "ckpt-1")) == first
  # The same checkpoint typed relative, with ../ or through a symlinked folder is the
  # same identity (the same cache file).
  os.symlink(directory, str(tmp_path / "link"))
  with monkeypatch.context() as patch:
    patch.chdir(tmp_path)
    assert tagging_ner_features.checkpoint_identity("run") == first
    assert tagging_ner_features.checkpoint_identity("link/ckpt-1.index") == first
    patch.chdir(directory)
    assert tagging_ner_features.checkpoint_identity("../run/") == first
    assert tagging_ner_features.file_identity("../run/checkpoint") == tagging_ner_features.file_identity(
        os.path.join(str(tmp_path), "link", "checkpoint"))
  # A later checkpoint in the same run directory is other weights: another identity.
  manager.save(checkpoint_number=2)
  second = tagging_ner_features.checkpoint_identity(directory)
  assert "ckpt-2" in second and second != first
  # So is a rewritten Google checkpoint at the same prefix.
  prefix = str(tmp_path / "google" / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(encoder, prefix)
  before = tagging_ner_features.checkpoint_identity(prefix)
  os.utime(prefix + ".index", ns=(1, 1))
  assert tagging_ner_features.checkpoint_identity(prefix) != before
