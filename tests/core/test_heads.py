"""modeling.py's task losses against NumPy references on tiny batches."""

import numpy as np
import pytest
import tensorflow as tf


from bert import heads


def _log_softmax(logits):
  logits = logits.astype(np.float64)
  shifted = logits - logits.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _nll(logits, labels):
  """-log p(label) per row; logits [..., K], labels [...] int."""
  return -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]


def _numpy(per_example, metrics):
  assert per_example.dtype == tf.float32
  for numerator, denominator in metrics.values():
    assert numerator.dtype == tf.float32 and denominator.dtype == tf.float32
    assert numerator.shape == () and denominator.shape == ()
  return per_example.numpy(), {k: (float(n), float(d)) for k, (n, d) in metrics.items()}


def _pretraining_batch(rng, batch=3, predictions=4, vocab=7):
  features = {
      "masked_lm_ids": rng.integers(0, vocab, (batch, predictions)).astype("int32"),
      "masked_lm_weights": np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]],
                                    "float32")[:batch, :predictions],
      "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32")}
  outputs = {"masked_lm_logits": rng.normal(0, 2, (batch, predictions, vocab)).astype("float32"),
             "next_sentence_logits": rng.normal(0, 2, (batch, 2)).astype("float32")}
  # Two right predictions, one of them under a zero weight (it must not count).
  features["masked_lm_ids"][0, 1] = outputs["masked_lm_logits"][0, 1].argmax()
  features["masked_lm_ids"][1, 2] = outputs["masked_lm_logits"][1, 2].argmax()
  return features, outputs


@pytest.mark.parametrize("use_next_sentence", [True, False])
def test_pretraining_loss(use_next_sentence):
  features, outputs = _pretraining_batch(np.random.default_rng(0))
  per_example, metrics = _numpy(*heads.pretraining_loss(
      features, outputs, use_next_sentence=use_next_sentence))
  ids, weights = features["masked_lm_ids"], features["masked_lm_weights"]
  nll = _nll(outputs["masked_lm_logits"], ids)
  # The batch mean of the per-example loss is the original's masked_lm_loss:
  # sum(weights * nll) / (sum(weights) + 1e-5).
  expected = (weights * nll).sum(1) * 3 / (weights.sum() + 1e-5)
  mlm_loss = (weights * nll).sum() / (weights.sum() + 1e-5)
  correct = (outputs["masked_lm_logits"].argmax(-1) == ids) * weights
  expected_metrics = {"masked_lm_accuracy": (correct.sum(), 8.0),
                      "masked_lm_loss": ((weights * nll).sum(), 8.0)}
  if use_next_sentence:
    labels = features["next_sentence_labels"][:, 0]
    ns_nll = _nll(outputs["next_sentence_logits"], labels)
    expected = expected + ns_nll
    ns_correct = outputs["next_sentence_logits"].argmax(-1) == labels
    expected_metrics.update(next_sentence_accuracy=(ns_correct.sum(), 3.0),
                            next_sentence_loss=(ns_nll.sum(), 3.0))
    np.testing.assert_allclose(per_example.mean(), mlm_loss + ns_nll.mean(), rtol=1e-5)
  else:
    np.testing.assert_allclose(per_example.mean(), mlm_loss, rtol=1e-5)
  np.testing.assert_allclose(per_example, expected, rtol=1e-5)
  assert sorted(metrics) == sorted(expected_metrics)
  for name, (numerator, denominator) in expected_metrics.items():
    np.testing.assert_allclose(metrics[name], (numerator, denominator), rtol=1e-5)
  assert metrics["masked_lm_accuracy"][0] >= 1 and metrics["masked_lm_loss"][0] > 0


def test_pretraining_loss_without_labelled_predictions_is_zero_not_nan():
  features, outputs = _pretraining_batch(np.random.default_rng(1))
  features["masked_lm_weights"] = np.zeros_like(features["masked_lm_weights"])
  per_example, metrics = _numpy(*heads.pretraining_loss(features, outputs, False))
  np.testing.assert_array_equal(per_example, np.zeros(3, np.float32))
  assert metrics["masked_lm_loss"] == (0.0, 0.0)


def test_cross_replica_sum_outside_a_strategy_returns_the_value():
  value = tf.constant([1.5, 2.0])
  assert heads.cross_replica_sum(value) is value


def test_classifier_loss():
  rng = np.random.default_rng(2)
  logits = rng.normal(0, 2, (5, 3)).astype("float32")
  labels = np.array([0, 2, 1, 1, 0], "int32")
  per_example, metrics = _numpy(*heads.classifier_loss({"label_ids": labels},
                                                       {"logits": logits}))
  np.testing.assert_allclose(per_example, _nll(logits, labels), rtol=1e-5)
  assert metrics == {"accuracy": (float((logits.argmax(-1) == labels).sum()), 5.0)}


def test_classifier_regression_loss():
  scores = np.array([0.0, 2.5, 5.0, 3.2], "float32")
  logits = np.array([[0.5], [2.0], [4.0], [3.2]], "float32")
  per_example, metrics = _numpy(*heads.classifier_loss(
      {"label_ids": scores}, {"logits": logits}, regression=True))
  np.testing.assert_allclose(per_example, [0.25, 0.25, 1.0, 0.0], atol=1e-6)
  np.testing.assert_allclose(metrics["mse"], (1.5, 4.0), atol=1e-6)
  assert list(metrics) == ["mse"]


def test_squad_loss():
  rng = np.random.default_rng(3)
  start = rng.normal(0, 2, (4, 9)).astype("float32")
  end = rng.normal(0, 2, (4, 9)).astype("float32")
  start_positions = np.array([0, 3, 8, 5], "int32")
  end_positions = np.array([0, 4, 8, 7], "int32")
  start_positions[1] = start[1].argmax()  # at least one right answer in each metric
  end_positions[2] = end[2].argmax()
  per_example, metrics = _numpy(*heads.squad_loss(
      {"start_positions": start_positions, "end_positions": end_positions},
      {"start_logits": start, "end_logits": end}))
  expected = (_nll(start, start_positions) + _nll(end, end_positions)) / 2
  np.testing.assert_allclose(per_example, expected, rtol=1e-5)
  assert metrics == {
      "start_accuracy": (float((start.argmax(-1) == start_positions).sum()), 4.0),
      "end_accuracy": (float((end.argmax(-1) == end_positions).sum()), 4.0)}
  assert metrics["start_accuracy"][0] >= 1 and metrics["end_accuracy"][0] >= 1


def test_token_classification_loss():
  rng = np.random.default_rng(4)
  logits = rng.normal(0, 2, (3, 6, 5)).astype("float32")
  labels = np.array([[-1, 2, -1, 4, 0, -1],
                     [-1, -1, -1, -1, -1, -1],      # a window without labels: loss 0
                     [1, 1, 3, -1, 2, 2]], "int32")
  labels[2, 0] = logits[2, 0].argmax()
  per_example, metrics = _numpy(*heads.token_classification_loss(
      {"label_ids": labels}, {"logits": logits}))
  mask = labels >= 0
  nll = _nll(logits, np.maximum(labels, 0))
  expected = (nll * mask).sum(1) / np.maximum(mask.sum(1), 1)
  np.testing.assert_allclose(per_example, expected, rtol=1e-5)
  assert per_example[1] == 0.0
  correct = ((logits.argmax(-1) == labels) & mask).sum()
  assert metrics == {"accuracy": (float(correct), 8.0)}
  assert correct >= 1


def test_multiple_choice_loss():
  rng = np.random.default_rng(5)
  logits = rng.normal(0, 2, (3, 4)).astype("float32")
  labels = np.array([3, 0, 1], "int32")
  labels[0] = logits[0].argmax()
  per_example, metrics = _numpy(*heads.multiple_choice_loss({"label_ids": labels},
                                                            {"logits": logits}))
  np.testing.assert_allclose(per_example, _nll(logits, labels), rtol=1e-5)
  assert metrics == {"accuracy": (float((logits.argmax(-1) == labels).sum()), 3.0)}


def test_losses_compute_in_float32_from_low_precision_logits():
  # Under a mixed policy a caller may hand over bfloat16/float16 logits: the loss casts.
  rng = np.random.default_rng(6)
  logits = rng.normal(0, 2, (4, 3)).astype("float32")
  labels = np.array([0, 1, 2, 1], "int32")
  for dtype in (tf.bfloat16, tf.float16):
    low = tf.cast(logits, dtype)
    per_example, _ = _numpy(*heads.classifier_loss({"label_ids": labels},
                                                   {"logits": low}))
    np.testing.assert_allclose(per_example,
                               _nll(tf.cast(low, tf.float32).numpy(), labels), rtol=1e-5)
