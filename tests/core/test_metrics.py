"""metrics: GLUE's metrics and softmax, against values worked out by hand."""
import math

import numpy as np
import pytest

from bert import metrics


def test_accuracy_f1_by_hand():
  predictions = [1, 1, 0, 1, 0, 0, 1, 1]
  labels = [1, 0, 0, 1, 1, 0, 1, 0]
  # tp=3 fp=2 fn=1 tn=2: accuracy 5/8, F1 = 6/9.
  result = metrics.compute_metrics("accuracy_f1", predictions, labels)
  assert result["accuracy"] == pytest.approx(0.625)
  assert result["f1"] == pytest.approx(2 / 3)
  assert result["acc_and_f1"] == pytest.approx((0.625 + 2 / 3) / 2)
  assert metrics.f1_score([0, 0], [1, 1]) == 0.0
  assert metrics.accuracy([], []) == 0.0


def test_accuracy_takes_predictions_not_logits():
  logits = np.array([[0.1, 0.9, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 3.0],
                     [0.0, 0.0, 5.0, 0.0]])
  labels = [1, 0, 2, 2]
  assert metrics.accuracy(np.argmax(logits, -1), labels) == 0.75
  # Four examples of four choices: logits == labels would broadcast to a 4x4 comparison.
  with pytest.raises(ValueError, match="pass predicted ids, not logits"):
    metrics.accuracy(logits, labels)


def test_matthews_by_hand():
  predictions = [1, 1, 0, 1, 0, 0, 1, 1]
  labels = [1, 0, 0, 1, 1, 0, 1, 0]
  # (tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (6-2)/sqrt(5*4*4*3) = 4/sqrt(240)
  assert metrics.matthews_corrcoef(predictions, labels) == pytest.approx(4 / np.sqrt(240))
  assert metrics.compute_metrics("matthews", predictions, labels)["matthews_corrcoef"] == (
      pytest.approx(0.2581988897))
  assert metrics.matthews_corrcoef([1, 1, 1], [0, 1, 1]) == 0.0  # constant prediction
  assert metrics.matthews_corrcoef([0, 1, 2], [0, 1, 2]) == pytest.approx(1.0)


def test_pearson_spearman_with_ties_by_hand():
  x = [1.0, 2.0, 2.0, 4.0]
  y = [1.0, 3.0, 2.0, 5.0]
  assert list(metrics.rankdata_average(x)) == [1.0, 2.5, 2.5, 4.0]
  assert list(metrics.rankdata_average([3, 1, 3, 3])) == [3.0, 1.0, 3.0, 3.0]
  # Pearson: mean x 2.25, mean y 2.75; sum dxdy = 6.25, sum dx2 = 4.75, sum dy2 = 8.75.
  result = metrics.compute_metrics("pearson_spearman", x, y)
  assert result["pearson"] == pytest.approx(6.25 / np.sqrt(4.75 * 8.75))
  # Spearman = Pearson of ranks [1, 2.5, 2.5, 4] and [1, 3, 2, 4]: 4.5 / sqrt(4.5 * 5).
  assert result["spearman"] == pytest.approx(4.5 / np.sqrt(4.5 * 5.0))
  assert result["corr"] == pytest.approx((result["pearson"] + result["spearman"]) / 2)
  assert metrics.pearson_corrcoef([1, 1, 1], [1, 2, 3]) == 0.0
  with pytest.raises(ValueError, match="unknown metric"):
    metrics.compute_metrics("bleu", [1], [1])


def test_softmax_and_log_softmax_by_hand():
  logits = np.array([[0.0, math.log(3.0)], [1000.0, 1000.0]])
  np.testing.assert_allclose(metrics.softmax(logits), [[0.25, 0.75], [0.5, 0.5]],
                             rtol=1e-15)
  np.testing.assert_allclose(metrics.log_softmax(logits),
                             [[math.log(0.25), math.log(0.75)], [math.log(0.5)] * 2],
                             rtol=1e-15)
  # Stable where the naive exp overflows, and along any axis.
  big = np.array([[-1e4, 0.0, 1e4]])
  assert metrics.softmax(big).tolist() == [[0.0, 0.0, 1.0]]
  assert metrics.log_softmax(big)[0, 2] == 0.0
  np.testing.assert_allclose(metrics.softmax(logits.T, axis=0), metrics.softmax(logits).T)
  assert metrics.softmax([1, 1]).dtype == np.float64  # ints are computed in float64


def test_softmax_keeps_float32_bits():
  """float32 logits: the same bits as the inline NumPy the scripts' outputs were made with
  (test_results.tsv writes str(float(p)), so a float64 softmax would change the files)."""
  rng = np.random.default_rng(3)
  logits = rng.normal(size=(50, 3)).astype(np.float32) * 4
  shifted = logits - logits.max(axis=1, keepdims=True)
  inline = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
  ours = metrics.softmax(logits)
  assert ours.dtype == np.float32
  assert ours.tobytes() == inline.tobytes()
  log_inline = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  assert metrics.log_softmax(logits).tobytes() == log_inline.tobytes()
