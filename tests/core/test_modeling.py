"""modeling.py against the independent NumPy reference, configs, heads, layer configs."""

import json
import os
import subprocess
import sys

import keras
import tensorflow as tf
import numpy as np
import pytest

from bert import modeling

from bert import heads
import numpy_bert
from conftest import MINILM_DIR, ROOT, shared_path
import tiny

TINY = tiny.tiny_config_dict(101, max_position_embeddings=40)


def _inputs(batch=3, seq=11, vocab=101, seed=0, pad=True):
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, vocab, (batch, seq)).astype("int32")
  mask = np.ones((batch, seq), "int32")
  if pad:
    mask[1, 7:] = 0
    mask[2, 3:] = 0
  seg = np.zeros((batch, seq), "int32")
  seg[:, seq // 2:] = 1
  return {"input_ids": ids, "input_mask": mask, "segment_ids": seg}


def _weights(model):
  return {k: v.numpy() for k, v in modeling.google_variable_map(model).items()}


def _randomize(model, seed=1):
  # Non-trivial LayerNorm/bias values, so that a swapped gamma/beta or a dropped bias shows.
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0, 0.5, v.shape).astype("float32"))


@pytest.mark.parametrize("act,causal", [("gelu", False), ("gelu_exact", False),
                                        ("relu", True), ("tanh", False)])
def test_encoder_matches_numpy_reference(act, causal):
  cfg = modeling.BertConfig.from_dict({**TINY, "hidden_act": act})
  model = modeling.BertModel(cfg, causal=causal)
  _randomize(model)
  x = _inputs()
  ours = model(x, training=False)
  ref = numpy_bert.encoder(_weights(model), cfg.to_dict(), x["input_ids"], x["input_mask"],
                           x["segment_ids"], causal=causal)
  for key in ("embedding_output", "sequence_output", "pooled_output"):
    np.testing.assert_allclose(ours[key].numpy(), ref[key], atol=2e-4, rtol=1e-4)
  assert len(ours["encoder_outputs"]) == 3
  for a, b in zip(ours["encoder_outputs"], ref["encoder_outputs"]):
    np.testing.assert_allclose(a.numpy(), b, atol=2e-4, rtol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_pooled_only_encoder_computes_the_same_pooled_output(causal):
  """pooled_only runs the last layer at [CLS] alone: the same weights under the same
  names, the NumPy reference's pooled output (full encoder) on padded rows, and nothing
  else to read, so no caller can take its [batch, 1, hidden] last layer for the sequence."""
  cfg = modeling.BertConfig.from_dict(TINY)
  full = modeling.BertModel(cfg, causal=causal)
  pooled = modeling.BertModel(cfg, causal=causal, pooled_only=True)
  assert [v.path for v in pooled.weights] == [v.path for v in full.weights]
  _randomize(full)
  for source, target in zip(full.weights, pooled.weights):
    target.assign(source)
  x = _inputs()
  out = pooled(x, training=False)
  assert sorted(out) == ["pooled_output"]
  ref = numpy_bert.encoder(_weights(full), TINY, x["input_ids"], x["input_mask"],
                           x["segment_ids"], causal=causal)
  np.testing.assert_allclose(out["pooled_output"].numpy(), ref["pooled_output"], atol=2e-4,
                             rtol=1e-4)
  np.testing.assert_allclose(out["pooled_output"].numpy(),
                             full(x, training=False)["pooled_output"].numpy(), atol=1e-5)
  last = pooled.get_layer(f"layer_{cfg.num_hidden_layers - 1}")
  hidden = full(x, training=False)["encoder_outputs"][-2]
  bias = modeling.attention_mask_bias(x["input_mask"], causal=causal)
  first = last(hidden, bias, training=False, first_token_only=True).numpy()
  assert first.shape == (3, 1, cfg.hidden_size)
  np.testing.assert_allclose(first[:, 0], full(x, training=False)["sequence_output"][:, 0],
                             atol=1e-5)
  clone = modeling.BertModel.from_config(pooled.get_config())
  assert clone.pooled_only and sorted(clone(x)) == ["pooled_output"]


def test_padding_does_not_leak_into_real_tokens():
  cfg = modeling.BertConfig.from_dict(TINY)
  model = modeling.BertModel(cfg)
  x = _inputs(pad=True)
  changed = {k: v.copy() for k, v in x.items()}
  changed["input_ids"][1, 7:] = (changed["input_ids"][1, 7:] + 5) % 101
  a = model(x, training=False)["sequence_output"].numpy()
  b = model(changed, training=False)["sequence_output"].numpy()
  np.testing.assert_allclose(a[1, :7], b[1, :7], atol=1e-5)
  assert np.abs(a[1, 7:] - b[1, 7:]).max() > 1e-3


def test_dropout_only_in_training():
  cfg = modeling.BertConfig.from_dict(TINY)
  model = modeling.BertModel(cfg)
  x = _inputs()
  a = model(x, training=False)["pooled_output"].numpy()
  b = model(x, training=False)["pooled_output"].numpy()
  c = model(x, training=True)["pooled_output"].numpy()
  np.testing.assert_array_equal(a, b)
  assert np.abs(a - c).max() > 1e-4


def test_heads_match_numpy_reference():
  cfg = modeling.BertConfig.from_dict(TINY)
  model, encoder = heads.build_pretraining_model(cfg)
  _randomize(model, seed=3)
  x = _inputs()
  positions = np.array([[1, 2, 0], [3, 6, 0], [0, 1, 2]], "int32")
  out = model({**x, "masked_lm_positions": positions}, training=False)
  w = _weights(model)
  ref = numpy_bert.encoder(w, TINY, x["input_ids"], x["input_mask"], x["segment_ids"])
  np.testing.assert_allclose(
      out["masked_lm_logits"].numpy(),
      numpy_bert.masked_lm_logits(w, TINY, ref["sequence_output"], positions),
      atol=5e-3, rtol=1e-4)
  nsp = ref["pooled_output"] @ w["cls/seq_relationship/output_weights"].T + w[
      "cls/seq_relationship/output_bias"]
  np.testing.assert_allclose(out["next_sentence_logits"].numpy(), nsp, atol=2e-4)
  assert out["masked_lm_logits"].dtype == "float32"

  squad, _ = heads.build_squad_model(cfg)
  _randomize(squad, seed=4)
  w = _weights(squad)
  ref = numpy_bert.encoder(w, TINY, x["input_ids"], x["input_mask"], x["segment_ids"])
  out = squad(x, training=False)
  start, end = numpy_bert.squad_logits(w, ref["sequence_output"])
  np.testing.assert_allclose(out["start_logits"].numpy(), start, atol=2e-4)
  np.testing.assert_allclose(out["end_logits"].numpy(), end, atol=2e-4)


def test_classifier_token_and_choice_heads():
  cfg = modeling.BertConfig.from_dict(TINY)
  clf, _ = heads.build_classifier_model(cfg, 3)
  _randomize(clf, seed=5)
  x = _inputs()
  w = _weights(clf)
  ref = numpy_bert.encoder(w, TINY, x["input_ids"], x["input_mask"], x["segment_ids"])
  np.testing.assert_allclose(
      clf(x, training=False)["logits"].numpy(),
      ref["pooled_output"] @ w["output_weights"].T + w["output_bias"], atol=2e-4)
  tok, _ = heads.build_token_classifier_model(cfg, 5)
  _randomize(tok, seed=6)
  w = _weights(tok)
  ref = numpy_bert.encoder(w, TINY, x["input_ids"], x["input_mask"], x["segment_ids"])
  np.testing.assert_allclose(
      tok(x, training=False)["logits"].numpy(),
      ref["sequence_output"] @ w["output_weights"].T + w["output_bias"], atol=2e-4)
  mc, _ = heads.build_multiple_choice_model(cfg, 4)
  _randomize(mc, seed=7)
  w = _weights(mc)
  rng = np.random.default_rng(2)
  choice = {k: rng.integers(0, 2 if k != "input_ids" else 101, (2, 4, 9)).astype("int32")
            for k in ("input_ids", "input_mask", "segment_ids")}
  choice["input_mask"][:, :, 0] = 1
  flat = {k: v.reshape(8, 9) for k, v in choice.items()}
  ref = numpy_bert.encoder(w, TINY, flat["input_ids"], flat["input_mask"],
                           flat["segment_ids"])
  expected = (ref["pooled_output"] @ w["output_weights"].T + w["output_bias"]).reshape(2, 4)
  np.testing.assert_allclose(mc(choice, training=False)["logits"].numpy(), expected,
                             atol=2e-4)


def test_variable_names_and_shapes_follow_google_layout():
  cfg = modeling.BertConfig.from_dict(TINY)
  model, _ = heads.build_pretraining_model(cfg)
  shapes = {k: tuple(v.shape) for k, v in modeling.google_variable_map(model).items()}
  assert shapes["bert/embeddings/word_embeddings"] == (101, 32)
  assert shapes["bert/embeddings/position_embeddings"] == (40, 32)
  assert shapes["bert/encoder/layer_2/attention/self/query/kernel"] == (32, 32)
  assert shapes["bert/encoder/layer_0/intermediate/dense/kernel"] == (32, 37)
  assert shapes["bert/encoder/layer_0/output/dense/kernel"] == (37, 32)
  assert shapes["cls/predictions/output_bias"] == (101,)
  assert shapes["cls/seq_relationship/output_weights"] == (2, 32)
  # 5 embedding + 16 per layer + 2 pooler + 5 masked-LM + 2 next-sentence
  assert len(shapes) == 5 + 16 * 3 + 2 + 5 + 2
  # Every weight is named, and the tied output embedding is not a second variable.
  assert len(model.weights) == len(shapes)


@pytest.mark.slow
def test_bert_base_parameter_count():
  cfg = modeling.BertConfig(vocab_size=30522, type_vocab_size=2)
  # The published BERT-Base encoder size (embeddings, 12 layers, pooler).
  assert modeling.BertModel(cfg).count_params() == 109482240


def test_config_reads_google_json_unchanged(tmp_path):
  path = shared_path("models", "uncased_L-6_H-384_A-12", "bert_config.json")
  with open(path) as f:
    raw = json.load(f)
  cfg = modeling.BertConfig.from_json_file(path)
  assert cfg.to_dict() == raw
  out = tmp_path / "c.json"
  cfg.to_json_file(out)
  assert json.loads(out.read_text()) == raw


@pytest.mark.parametrize("change,words", [
    ({"hidden_size": 30}, "not a multiple of num_attention_heads"),
    ({"hidden_sze": 3}, "unknown key(s) hidden_sze"),
    ({"num_hidden_layers": 0}, "num_hidden_layers must be a positive integer"),
    ({"hidden_act": "swishy"}, "hidden_act 'swishy'"),
    ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob must be in [0, 1)"),
])
def test_config_rejects_impossible_values(tmp_path, change, words):
  path = tmp_path / "bert_config.json"
  path.write_text(json.dumps({**TINY, **change}))
  with pytest.raises(ValueError) as info:
    modeling.BertConfig.from_json_file(path)
  assert words in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("key", modeling.REQUIRED_CONFIG_KEYS)
def test_config_refuses_a_missing_shape_key(tmp_path, key):
  # The original's from_dict silently took its defaults (num_attention_heads=12, ...):
  # a model of another shape than the checkpoint's.
  path = tmp_path / "bert_config.json"
  path.write_text(json.dumps({k: v for k, v in TINY.items() if k != key}))
  with pytest.raises(ValueError) as info:
    modeling.BertConfig.from_json_file(path)
  assert str(info.value).startswith(f"{path}: missing required key(s) {key};")


def test_config_defaults_only_the_keys_that_fix_no_shape():
  optional = ("hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
              "initializer_range")
  cfg = modeling.BertConfig.from_dict({k: v for k, v in TINY.items() if k not in optional})
  assert (cfg.hidden_act, cfg.hidden_dropout_prob, cfg.attention_probs_dropout_prob,
          cfg.initializer_range) == ("gelu", 0.1, 0.1, 0.02)
  assert cfg.num_attention_heads == 4 and cfg.type_vocab_size == 2
  with pytest.raises(ValueError, match=r"^bert config: missing required key\(s\) "
                                       r"num_hidden_layers, type_vocab_size;"):
    modeling.BertConfig.from_dict({k: v for k, v in TINY.items()
                                   if k not in ("type_vocab_size", "num_hidden_layers")})


def test_config_rejects_bad_json(tmp_path):
  path = tmp_path / "bert_config.json"
  path.write_text('{"vocab_size": 3,')
  with pytest.raises(ValueError, match="invalid JSON at line 1"):
    modeling.BertConfig.from_json_file(path)


def test_layer_and_model_config_round_trip():
  cfg = modeling.BertConfig.from_dict(TINY)
  model = modeling.BertModel(cfg, causal=True)
  clone = modeling.BertModel.from_config(model.get_config())
  assert clone.config == cfg and clone.causal
  clone.set_weights(model.get_weights())
  x = _inputs()
  np.testing.assert_allclose(model(x)["sequence_output"].numpy(),
                             clone(x)["sequence_output"].numpy(), atol=1e-6)
  for layer in (modeling.TransformerLayer(cfg), modeling.BertEmbeddings(cfg),
                heads.OutputProjection(cfg, 3, dropout_rate=0.1, scope="cls/x")):
    again = type(layer).from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


def test_config_layers_share_one_serialisation():
  cfg = modeling.BertConfig.from_dict(TINY)
  layers = [modeling.BertEmbeddings(cfg, name="e"), modeling.TransformerLayer(cfg),
            modeling.BertPooler(cfg), heads.MaskedLMHead(cfg),
            heads.OutputProjection(cfg, 3, dropout_rate=0.1, scope="cls/x"),
            heads.SquadHead(cfg, name="s")]
  config_layers = {c for c in heads.CUSTOM_OBJECTS.values()
                   if issubclass(c, modeling.ConfigLayer)}
  assert config_layers == {type(layer) for layer in layers}
  for layer in layers:
    assert "from_config" not in type(layer).__dict__  # the base class's, not a copy
    config = layer.get_config()
    assert config["config"] == TINY
    again = type(layer).from_config(config)
    assert again.config == cfg and again.name == layer.name
    assert again.get_config() == config
  clone = heads.OutputProjection.from_config(layers[4].get_config())
  assert (clone.num_outputs, clone.dropout_rate, clone.scope) == (3, 0.1, "cls/x")


def test_keras_file_round_trip_of_span_and_choice_heads(tmp_path):
  cfg = modeling.BertConfig.from_dict(TINY)
  x = _inputs()
  squad, _ = heads.build_squad_model(cfg)
  _randomize(squad, seed=8)
  path = str(tmp_path / "squad.keras")
  squad.save(path)
  loaded = keras.models.load_model(path, custom_objects=heads.CUSTOM_OBJECTS,
                                   safe_mode=True)
  for key in ("start_logits", "end_logits"):
    np.testing.assert_allclose(squad(x)[key].numpy(), loaded(x)[key].numpy(), atol=1e-6)
  choice, _ = heads.build_multiple_choice_model(cfg, 2)
  path = str(tmp_path / "choice.keras")
  choice.save(path)
  loaded = keras.models.load_model(path, custom_objects=heads.CUSTOM_OBJECTS,
                                   safe_mode=True)
  pairs = {k: np.stack([v[:2], v[1:]], axis=1) for k, v in x.items()}  # [2, 2, seq]
  np.testing.assert_allclose(choice(pairs)["logits"].numpy(),
                             loaded(pairs)["logits"].numpy(), atol=1e-6)


def test_keras_file_round_trip(tmp_path):
  cfg = modeling.BertConfig.from_dict(TINY)
  model, _ = heads.build_classifier_model(cfg, 2)
  path = str(tmp_path / "clf.keras")
  model.save(path)
  loaded = keras.models.load_model(path, custom_objects=heads.CUSTOM_OBJECTS,
                                   safe_mode=True)
  x = _inputs()
  np.testing.assert_allclose(model(x)["logits"].numpy(), loaded(x)["logits"].numpy(),
                             atol=1e-6)


def test_keras_file_keeps_the_precision_the_model_was_built_with(tmp_path):
  """A model built with dtype= saves it (the encoder's config holds it) and reloads in it
  under the float32 global policy; one built without (the global policy) saves none."""
  cfg = modeling.BertConfig.from_dict(TINY)
  model, encoder = heads.build_classifier_model(cfg, 2, dtype="mixed_bfloat16")
  assert encoder.get_config()["dtype"] == "mixed_bfloat16"
  assert "dtype" not in heads.build_classifier_model(cfg, 2)[1].get_config()
  path = str(tmp_path / "clf.keras")
  model.save(path)
  loaded = keras.models.load_model(path, custom_objects=heads.CUSTOM_OBJECTS,
                                   safe_mode=True)
  layer_0 = modeling.find_encoder(loaded).get_layer("layer_0")
  assert (layer_0.compute_dtype, layer_0.query.compute_dtype,
          layer_0.attention_layer_norm.compute_dtype) == ("bfloat16", "bfloat16", "float32")
  x = _inputs()
  np.testing.assert_array_equal(model(x)["logits"].numpy(), loaded(x)["logits"].numpy())


def test_mixed_bfloat16_policy_keeps_float32_logits_and_layernorm():
  cfg = modeling.BertConfig.from_dict(TINY)
  ref_model, _ = heads.build_classifier_model(cfg, 2)
  model, encoder = heads.build_classifier_model(cfg, 2, dtype="mixed_bfloat16")
  model.set_weights(ref_model.get_weights())
  assert all(v.dtype == "float32" for v in model.weights)
  assert encoder.get_layer("layer_0").attention_layer_norm.compute_dtype == "float32"
  assert encoder.get_layer("layer_0").query.compute_dtype == "bfloat16"
  x = _inputs()
  low = model(x, training=False)["logits"]
  assert low.dtype == "float32"
  np.testing.assert_allclose(low.numpy(), ref_model(x, training=False)["logits"].numpy(),
                             atol=0.05)


def test_layer_norm_is_the_same_portable_ops_on_every_device():
  # No device check and no CPU-chosen op: the graph traced here is the one a GPU or a TPU
  # would run, and it is the NumPy reference's function.
  norm = modeling.layer_norm("LayerNorm")
  norm.build((None, None, 24))
  rng = np.random.default_rng(3)
  norm.gamma.assign(rng.normal(1, 0.5, 24).astype("float32"))
  norm.beta.assign(rng.normal(0, 0.5, 24).astype("float32"))
  x = rng.normal(2, 3, (2, 5, 24)).astype("float32")
  graph = tf.function(norm.call).get_concrete_function(
      tf.TensorSpec([None, None, 24], tf.float32)).graph
  kinds = {op.type for op in graph.get_operations()}
  assert {"Mean", "Sub", "Square", "Rsqrt"} <= kinds
  assert not [kind for kind in kinds if "BatchNorm" in kind or "Fused" in kind]
  np.testing.assert_allclose(norm(x).numpy(), numpy_bert.layer_norm(
      x, norm.gamma.numpy(), norm.beta.numpy()), atol=2e-5, rtol=1e-5)


def test_attention_mask_bias_is_the_originals_zero_or_minus_10000():
  mask = np.array([[1, 1, 0], [1, 0, 0]], "int32")
  np.testing.assert_array_equal(modeling.attention_mask_bias(mask).numpy(), np.array(
      [[[[0, 0, -10000]]], [[[0, -10000, -10000]]]], "float32"))
  causal = modeling.attention_mask_bias(mask, causal=True).numpy()
  np.testing.assert_array_equal(causal[0, 0], [[0, -10000, -10000], [0, 0, -10000],
                                               [0, 0, -10000]])
  np.testing.assert_array_equal(causal[1, 0], [[0, -10000, -10000]] * 3)


def test_real_checkpoint_matches_numpy_reference():
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  cfg = model_config.load_bert_config(shared_path("models", "uncased_L-6_H-384_A-12",
                                                  "bert_config.json"))
  model = modeling.BertModel(cfg)
  checkpoints.load_checkpoint(model, os.path.join(MINILM_DIR, "bert_model.ckpt"))
  # "[CLS] the quick brown fox jumps [SEP] over it [SEP]" in the uncased vocabulary,
  # plus padding.
  ids = np.array([[101, 1996, 4248, 2829, 4419, 14523, 102, 2058, 2009, 102, 0, 0]], "int32")
  mask = (ids != 0).astype("int32")
  seg = np.array([[0] * 7 + [1] * 5], "int32")
  ours = model({"input_ids": ids, "input_mask": mask, "segment_ids": seg}, training=False)
  ref = numpy_bert.encoder(_weights(model), cfg.to_dict(), ids, mask, seg)
  diff = max(np.abs(ours["sequence_output"].numpy() - ref["sequence_output"]).max(),
             np.abs(ours["pooled_output"].numpy() - ref["pooled_output"]).max())
  assert diff < 1e-4, diff


def test_dropout_is_keras_dropout_in_float32_and_keeps_float32_masks_in_bfloat16():
  x = tf.random.stateless_normal([64, 48], seed=[1, 2])
  ours, theirs = modeling.Dropout(0.1, seed=7), keras.layers.Dropout(0.1, seed=7)
  for _ in range(3):  # each call draws new masks, in step
    a, b = ours(x, training=True), theirs(x, training=True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  dropped = float(np.mean(a.numpy() == 0))
  assert 0.07 < dropped < 0.13
  np.testing.assert_allclose(a.numpy()[a.numpy() != 0], (x.numpy() / 0.9)[a.numpy() != 0],
                             rtol=1e-6)
  # bfloat16 input: the same units dropped as for float32 with the same seed.
  low = modeling.Dropout(0.1, seed=3, dtype="mixed_bfloat16")
  high = modeling.Dropout(0.1, seed=3)
  got = low(tf.cast(x, tf.bfloat16), training=True)
  want = high(x, training=True)
  assert got.dtype == tf.bfloat16
  np.testing.assert_array_equal(got.numpy() == 0, want.numpy() == 0)
  assert ours(x, training=False) is x


# Every public name `from bert import modeling` (and the original's `import modeling`)
# gave while the config, the layers' ops and the layers were one module. Left out: the
# modules it imported (copy, errors, file_io, functools, json), which were never its API,
# and accelerator_visible, which went with the LayerNorm's CPU-only form (the one device
# check left is bert.utils.cpu_choice's).
MODELING_NAMES = [
    "ACTIVATIONS", "AttentionBias", "BertConfig", "BertEmbeddings", "BertModel",
    "BertPooler", "CUSTOM_OBJECTS", "ConfigLayer", "Dropout", "ENCODER_INPUT_NAMES",
    "LayerNorm", "PACKED_INPUTS", "REQUIRED_CONFIG_KEYS", "TransformerLayer",
    "attention_mask_bias", "check_encoder_inputs", "check_input_shapes_in_graph",
    "concrete_value", "dense_2d", "dense_variables", "encoder_inputs", "find_encoder",
    "gelu", "gelu_exact", "get_activation", "google_variable_map", "initializer", "keras",
    "layer_norm", "math", "norm_variables", "ops", "packed_attention_bias", "static_shape",
    "tf"]


def test_modeling_still_gives_every_public_name_of_the_one_module():
  import modeling as root_modeling  # pylint: disable=g-import-not-at-top
  from bert import modeling_config  # pylint: disable=g-import-not-at-top
  for module in (modeling, root_modeling):
    assert [name for name in MODELING_NAMES if not hasattr(module, name)] == []
  assert modeling.BertConfig is modeling_config.BertConfig
  assert modeling.LayerNorm.__module__ == "bert.modeling_ops"


def test_modeling_config_reads_a_config_without_tensorflow(tmp_path):
  path = tmp_path / "bert_config.json"
  path.write_text(json.dumps(TINY))
  code = ("import sys; from bert import modeling_config; "
          f"config = modeling_config.BertConfig.from_json_file({str(path)!r}); "
          "print(config.hidden_size, 'tensorflow' in sys.modules, 'keras' in sys.modules)")
  result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
  assert result.stdout.split() == [str(TINY["hidden_size"]), "False", "False"], result.stderr
