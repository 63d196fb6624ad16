"""bert/training/loop.py on a toy classifier: training, resume, gradient accumulation, eval, predict."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import optimization
from bert.training import checkpoints
from bert.utils import errors
import tiny
from bert.training import evaluation
from bert.training import loop
from bert.training import precision
from bert.training import strategies

VOCAB = 41


def _config(dropout=0.1):
  # BertConfig's own defaults for the positions (512) and segments (16), as always here.
  # One layer: what the loop does is the same for any depth, and tracing each run's steps
  # (most of this file's time) grows with the layers.
  return tiny.tiny_config(VOCAB, hidden_dropout_prob=dropout,
                          attention_probs_dropout_prob=dropout,
                          max_position_embeddings=512, type_vocab_size=16,
                          num_hidden_layers=1)


def _data(n=64, seq=11):
  rng = np.random.default_rng(0)
  ids = rng.integers(5, VOCAB, size=(n, seq)).astype("int32")
  mask = np.ones_like(ids)
  mask[::3, -3:] = 0  # some padding
  ids = ids * mask
  labels = (ids == 7).any(1).astype("int32")
  return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids),
          "label_ids": labels}


def _dataset_fn(shuffle=True):
  def fn(context, batch_size):
    del context
    ds = tf.data.Dataset.from_tensor_slices(_data()).repeat()
    if shuffle:
      ds = ds.shuffle(32, seed=3)
    return ds.batch(batch_size, drop_remainder=True)
  return fn


def _run_training(strategy, model, optimizer, output_dir, config, shuffle=True):
  """What finetune.run does around loop.train: a RunCheckpoint, resume, train."""
  state = checkpoints.RunCheckpoint(str(output_dir), model, optimizer, strategy,
                                    loss_scaling=config.loss_scaling)
  checkpoints.start_weights(state, None, for_training=True)
  return loop.train(strategy, model, optimizer, loss_fn, _dataset_fn(shuffle), state,
                    config)


def loss_fn(features, outputs):
  logits = outputs["logits"]
  per_example = tf.keras.losses.sparse_categorical_crossentropy(
      features["label_ids"], logits, from_logits=True)
  predictions = tf.argmax(logits, -1, output_type=tf.int32)
  correct = tf.cast(tf.equal(predictions, features["label_ids"]), tf.float32)
  return per_example, {"accuracy": (tf.reduce_sum(correct), tf.cast(tf.size(correct),
                                                                    tf.float32))}


def _train(output_dir, steps, batch_size=8, accumulation=1, dropout=0.1, seed=5,
           total_steps=40, lr=1e-3, shuffle=True):
  strategies.setup_determinism(seed, True)
  strategy = strategies.create_strategy("one_device")
  with strategy.scope():
    model, encoder = heads.build_classifier_model(_config(dropout), 2,
                                                  dropout_rate=dropout)
    optimizer = optimization.create_optimizer(lr, total_steps, 4)
  del encoder
  result = _run_training(strategy, model, optimizer, output_dir, loop.TrainConfig(
      global_batch_size=batch_size, num_train_steps=steps, steps_per_loop=7,
      save_checkpoints_steps=10, log_every_steps=5,
      gradient_accumulation_steps=accumulation), shuffle)
  return result, model, optimizer, strategy


def test_train_eval_predict_and_resume_equals_uninterrupted(tmp_path):
  full, model_full, _, _ = _train(tmp_path / "full", 20)
  assert full["global_step"] == 20
  assert sorted(f for f in os.listdir(tmp_path / "full") if f.endswith(".index")) == [
      "ckpt-10.index", "ckpt-20.index"]
  assert tf.train.latest_checkpoint(str(tmp_path / "full")).endswith("ckpt-20")
  assert os.listdir(tmp_path / "full" / "train")  # TensorBoard event file

  # Stop at 10, then a fresh process-like start (new model, new optimizer) resumes.
  first, _, _, _ = _train(tmp_path / "split", 10)
  assert first["global_step"] == 10
  resumed, model_resumed, optimizer, strategy = _train(tmp_path / "split", 20)
  assert resumed["global_step"] == 20 and int(optimizer.iterations) == 20
  # Same weights, dropout masks and data order as the uninterrupted run.
  for a, b in zip(model_full.weights, model_resumed.weights):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=a.path)
  assert resumed["loss"] == pytest.approx(full["loss"], rel=1e-5)

  data = _data()
  eval_fn = lambda ctx: tf.data.Dataset.from_tensor_slices(data).batch(10)  # noqa: E731
  metrics = evaluation.evaluate(strategy, model_resumed, loss_fn, eval_fn)
  assert metrics["num_examples"] == 64
  batches = list(evaluation.predict(
      model_resumed, tf.data.Dataset.from_tensor_slices(
          {**data, "uid": np.arange(64)}).batch(10)))
  logits = np.concatenate([b["logits"] for b in batches])
  np.testing.assert_array_equal(np.concatenate([b["uid"] for b in batches]), np.arange(64))
  # Hand-computed metrics from the predicted logits must equal the evaluate() aggregates.
  accuracy = np.mean(np.argmax(logits, -1) == data["label_ids"])
  shifted = logits - logits.max(-1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  nll = -log_probs[np.arange(64), data["label_ids"]].mean()
  assert metrics["accuracy"] == pytest.approx(accuracy, abs=1e-6)
  assert metrics["loss"] == pytest.approx(nll, rel=1e-4)

  # An output_dir holding a checkpoint of another model is a user error, not a crash.
  other = tiny.tiny_config(VOCAB, hidden_size=48, max_position_embeddings=512,
                           type_vocab_size=16, num_hidden_layers=1)
  with strategy.scope():
    model, encoder = heads.build_classifier_model(other, 2)
    optimizer = optimization.create_optimizer(1e-3, 30, 2)
  with pytest.raises(errors.UserError, match="different model size") as error:
    _run_training(strategy, model, optimizer, tmp_path / "full",
                  loop.TrainConfig(global_batch_size=8, num_train_steps=30))
  assert "(bert/embeddings/LayerNorm/beta: [32] vs [48])" in str(error.value)


def test_gradient_accumulation_equals_the_big_batch(tmp_path):
  # No dropout, no shuffling: 2 micro-batches of 4 must give the update of one batch of 8.
  big, model_big, _, _ = _train(tmp_path / "big", 3, batch_size=8, dropout=0.0,
                                shuffle=False)
  small, model_small, _, _ = _train(tmp_path / "acc", 3, batch_size=4, accumulation=2,
                                    dropout=0.0, shuffle=False)
  assert small["global_step"] == big["global_step"] == 3
  moved = 0
  for a, b in zip(model_big.trainable_weights, model_small.trainable_weights):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=2e-6, err_msg=a.path)
  # ...and training really moved the weights away from their (identical) start.
  strategies.setup_determinism(5, True)
  fresh, _ = heads.build_classifier_model(_config(0.0), 2, dropout_rate=0.0)
  for a, b in zip(fresh.trainable_weights, model_big.trainable_weights):
    moved += not np.allclose(a.numpy(), b.numpy(), atol=1e-6)
  assert moved > 10


def test_predict_reuses_traces_across_calls_in_order():
  """predict() traces once for all batch lengths; a second call with the same model
  (another set: other non-input features) runs that trace, with the same outputs in the
  same order; another model gets its own function."""
  tf.keras.utils.set_random_seed(4)
  model, _ = heads.build_classifier_model(_config(dropout=0.0), 2)
  data = _data(n=11, seq=9)
  # Batches of several lengths, as per-batch padding makes them.
  batches = [{k: tf.constant(v[start:start + 4, :length] if v.ndim == 2 else
                             v[start:start + 4]) for k, v in data.items()}
             for start, length in ((0, 5), (4, 9), (8, 7))]
  inputs = ("input_ids", "input_mask", "segment_ids")
  expected = np.concatenate([np.asarray(model({k: b[k] for k in inputs})["logits"])
                             for b in batches])

  first = list(evaluation.predict(model, batches))
  forward = evaluation._predict_forward(model)  # pylint: disable=protected-access
  traces = forward.experimental_get_tracing_count()
  assert traces == 1  # one graph for every batch length
  with_ids = [{**b, "uid": tf.range(s, s + len(b["label_ids"]))}
              for b, s in zip(batches, (0, 4, 8))]
  second = list(evaluation.predict(model, with_ids))
  assert forward.experimental_get_tracing_count() == traces
  assert evaluation._predict_forward(model) is forward  # pylint: disable=protected-access
  for run in (first, second):
    np.testing.assert_allclose(np.concatenate([b["logits"] for b in run]), expected,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.concatenate([b["label_ids"] for b in run]),
                                  data["label_ids"])
  np.testing.assert_array_equal(np.concatenate([b["uid"] for b in second]), np.arange(11))

  other, _ = heads.build_classifier_model(_config(dropout=0.0), 2)
  theirs = np.concatenate([b["logits"] for b in evaluation.predict(other, batches)])
  assert evaluation._predict_forward(other) is not forward  # pylint: disable=protected-access
  np.testing.assert_allclose(theirs, np.concatenate(
      [np.asarray(other({k: b[k] for k in inputs})["logits"]) for b in batches]),
      rtol=1e-5, atol=1e-6)


def _train_precision(output_dir, dtype, jit_compile, steps=6):
  """A few deterministic steps (no dropout, no shuffle) in `dtype`; returns (loss, weights
  before, weights after, loss scale or None)."""
  chosen = precision.Precision(dtype)
  strategies.setup_determinism(5, True)
  strategy = strategies.create_strategy("one_device")
  with strategy.scope():
    model, encoder = heads.build_classifier_model(_config(0.0), 2, dropout_rate=0.0,
                                                  dtype=chosen.policy)
    optimizer = optimization.create_optimizer(1e-3, 40, 2)
  before = [v.numpy().copy() for v in model.trainable_variables]
  del encoder
  result = _run_training(strategy, model, optimizer, output_dir, loop.TrainConfig(
      global_batch_size=8, num_train_steps=steps, steps_per_loop=3,
      save_checkpoints_steps=steps, log_every_steps=3, jit_compile=jit_compile,
      loss_scaling=chosen.loss_scaling), shuffle=False)
  after = [v.numpy().copy() for v in model.trainable_variables]
  reader = tf.train.load_checkpoint(str(output_dir))
  scale_keys = [k for k in reader.get_variable_to_shape_map() if "loss_scale" in k]
  scale = float(reader.get_tensor(scale_keys[0])) if scale_keys else None
  return float(result["loss"]), before, after, scale


# bfloat16 and float16 policies in the default suite: test_precision; here, slow.
@pytest.mark.parametrize("dtype,jit_compile", [
    ("float32", True), pytest.param("bfloat16", False, marks=pytest.mark.slow),
    pytest.param("float16", False, marks=pytest.mark.slow)])
def test_mixed_precision_and_xla_train_like_float32(tmp_path, dtype, jit_compile):
  """The paths a GPU/TPU run takes (XLA, bfloat16, float16 with loss scaling), on CPU:
  the same start, the same data, an update close to the float32 one."""
  loss32, start32, end32, scale32 = _train_precision(tmp_path / "f32", "float32", False)
  loss, start, end, scale = _train_precision(tmp_path / dtype, dtype, jit_compile)
  assert scale32 is None
  for a, b in zip(start32, start, strict=True):
    np.testing.assert_array_equal(a, b)  # same seed, same initial weights
  update32 = np.concatenate([(b - a).ravel() for a, b in zip(start32, end32, strict=True)])
  update = np.concatenate([(b - a).ravel() for a, b in zip(start, end, strict=True)])
  assert all(np.isfinite(w).all() for w in end) and np.isfinite(loss)
  if dtype == "float32":  # XLA only fuses: the same numbers up to rounding
    np.testing.assert_allclose(update, update32, rtol=1e-3, atol=1e-6)
    assert loss == pytest.approx(loss32, rel=1e-5)
    return
  cosine = update @ update32 / np.linalg.norm(update) / np.linalg.norm(update32)
  # Measured: cosine 0.99995 (bfloat16) and 0.999999 (float16), norms within 0.04%.
  assert cosine > 0.999, cosine
  assert np.linalg.norm(update) == pytest.approx(np.linalg.norm(update32), rel=0.01)
  assert loss == pytest.approx(loss32, rel=0.005)
  if dtype == "float16":
    # Dynamic loss scaling: starts at 2**15, halves on an overflow, never below 1.
    assert scale is not None and 1.0 <= scale <= 2.0 ** 15


def _zero(inputs):
  """0.0 of shape [B, S, 1] from input_mask and segment_ids: Keras before 3.11 refuses a
  functional model with an input that reaches no output."""
  unused = inputs["input_mask"] * 0 + inputs["segment_ids"] * 0
  return keras.ops.expand_dims(keras.ops.cast(unused, "float32"), -1)


def _table_model(vocab, width):
  """{input_ids, input_mask, segment_ids} -> {"logits": row input_id of a fixed table
  [B, S, width]}: outputs known exactly."""
  table = np.arange(vocab * width, dtype=np.float32).reshape(vocab, width)
  inputs = {name: keras.Input((None,), dtype="int32", name=name)
            for name in ("input_ids", "input_mask", "segment_ids")}
  lookup = keras.layers.Embedding(vocab, width)
  model = keras.Model(inputs=inputs,
                      outputs={"logits": lookup(inputs["input_ids"]) + _zero(inputs)})
  lookup.set_weights([table])
  return model, table


def _batch(ids, index):
  ids = np.asarray(ids, np.int32)
  return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
          "segment_ids": np.zeros_like(ids), "row": np.asarray(index, np.int32)}


def test_predict_in_order_puts_rows_back_and_pads_widths_to_one_array():
  model, table = _table_model(10, 3)
  # Five rows in batches sorted by length (rows 3 and 1 first), widths 2, 4 and 7.
  batches = [_batch([[4, 5], [6, 0]], [3, 1]),
             _batch([[1, 2, 3, 4], [9, 9, 9, 0]], [0, 4]),
             _batch([[7, 7, 7, 7, 7, 7, 2]], [2])]
  out = evaluation.predict_in_order(model, batches, 5, keys=("logits", "row"),
                                    index_key="row", width=5, sequence_keys=("logits",))
  assert out["row"].tolist() == [0, 1, 2, 3, 4]
  expected = np.zeros((5, 5, 3), np.float32)
  for ids, rows in (([[4, 5], [6, 0]], [3, 1]), ([[1, 2, 3, 4], [9, 9, 9, 0]], [0, 4]),
                    ([[7, 7, 7, 7, 7]], [2])):  # row 2 cut to width 5
    for row, row_ids in zip(rows, ids):
      expected[row, :len(row_ids)] = table[row_ids]
  np.testing.assert_array_equal(out["logits"], expected)
  # Without an index the batches are in input order; equal widths need no sequence_keys.
  plain = evaluation.predict_in_order(model, [_batch([[1, 2]], [0]), _batch([[3, 4]], [1])],
                                      2)
  np.testing.assert_array_equal(plain["logits"], table[[[1, 2], [3, 4]]])


def test_predict_in_order_refuses_a_row_twice_or_rows_missing():
  model, _ = _table_model(10, 3)
  with pytest.raises(ValueError, match=r"predict: row\(s\) \[1\] predicted twice"):
    evaluation.predict_in_order(model, [_batch([[1], [2]], [0, 1]), _batch([[3]], [1])], 3,
                                index_key="row")
  with pytest.raises(ValueError, match="predict: 2 rows predicted, 3 expected"):
    evaluation.predict_in_order(model, [_batch([[1], [2]], [0, 1])], 3, index_key="row")
