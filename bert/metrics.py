"""Evaluation metrics and softmax in NumPy, for every task (the one metrics module).

Every metric takes predictions (label ids or scores), never logits. `softmax` and
`log_softmax` compute in the input's floating dtype, so float32 logits give the same
bits as the inline NumPy the scripts used; pass float64 for more precision."""

import numpy as np


# --------------------------------------------------------------------------- softmax


def _floating(logits):
  logits = np.asarray(logits)
  return logits if np.issubdtype(logits.dtype, np.floating) else logits.astype(np.float64)


def softmax(logits, axis=-1):
  """Probabilities along `axis` of float logits [..., n] (same shape and float dtype)."""
  logits = _floating(logits)
  shifted = logits - logits.max(axis=axis, keepdims=True)
  exp = np.exp(shifted)
  return exp / exp.sum(axis=axis, keepdims=True)


def log_softmax(logits, axis=-1):
  """Log-probabilities along `axis` of float logits [..., n] (same shape and float dtype)."""
  logits = _floating(logits)
  shifted = logits - logits.max(axis=axis, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def cross_entropy(logits, labels):
  """Mean softmax cross-entropy (nats) of float logits [n, k] against label ids [n], in
  float64: every task's eval_loss (the training loss's twin, without dropout)."""
  labels = np.asarray(labels, np.int64)
  if not labels.size:
    return 0.0
  log_probs = log_softmax(np.asarray(logits, np.float64))
  return float(-np.mean(log_probs[np.arange(len(labels)), labels]))


# --------------------------------------------------------------------------- classification


def accuracy(predictions, labels):
  """Fraction of predictions [n] equal to labels [n]; 0.0 for no examples."""
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  if predictions.shape != labels.shape:
    raise ValueError(f"accuracy: predictions of shape {predictions.shape} but labels of "
                     f"shape {labels.shape} (pass predicted ids, not logits)")
  return float(np.mean(predictions == labels)) if labels.size else 0.0


def f1_score(predictions, labels, positive=1):
  """Binary F1 of the positive class (GLUE's F1 for MRPC and QQP: class 1)."""
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  tp = float(np.sum((predictions == positive) & (labels == positive)))
  fp = float(np.sum((predictions == positive) & (labels != positive)))
  fn = float(np.sum((predictions != positive) & (labels == positive)))
  return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews_corrcoef(predictions, labels):
  """Matthews correlation (multi-class form, equal to the binary one for 2 classes).

  0.0 when a marginal is constant (the undefined case, as scikit-learn reports it).
  """
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  classes = np.union1d(predictions, labels)
  index = {c: i for i, c in enumerate(classes)}
  confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
  for t, p in zip(labels, predictions, strict=True):
    confusion[index[t], index[p]] += 1
  t_sum, p_sum = confusion.sum(axis=1), confusion.sum(axis=0)
  correct, total = np.trace(confusion), confusion.sum()
  cov_ytyp = correct * total - np.dot(t_sum, p_sum)
  cov_ypyp = total ** 2 - np.dot(p_sum, p_sum)
  cov_ytyt = total ** 2 - np.dot(t_sum, t_sum)
  if cov_ypyp * cov_ytyt == 0:
    return 0.0
  return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


# --------------------------------------------------------------------------- multi-label


def sigmoid(logits):
  """Per-label probabilities 1 / (1 + exp(-x)) of float logits [...] (no overflow)."""
  logits = _floating(logits)
  exp = np.exp(-np.abs(logits))
  return np.where(logits >= 0, 1.0 / (1.0 + exp), exp / (1.0 + exp))


def sigmoid_cross_entropy(logits, labels, axis=-1):
  """Mean over `axis` of -z log p - (1 - z) log(1 - p), p = sigmoid(x): the multi-label
  loss per example from logits x [N, K] and 0/1 labels z [N, K] (computed as
  max(x, 0) - x z + log(1 + exp(-|x|)), TensorFlow's stable form)."""
  x, z = _floating(logits), np.asarray(labels, np.float64)
  return np.mean(np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))), axis=axis)


def multi_label_metrics(predictions, labels, names):
  """Scores of 0/1 predictions [n, K] against 0/1 labels [n, K], label k named names[k].

  micro_precision/micro_recall/micro_f1: over every (example, label) decision;
  f1_<name>: each label's F1, 0.0 when it has no true positive (also when it is neither
  predicted nor present: scikit-learn's zero_division default); macro_f1: their mean;
  subset_accuracy: the fraction of examples whose predicted label set is exactly right.
  """
  predictions = np.asarray(predictions).astype(bool)
  labels = np.asarray(labels).astype(bool)
  if predictions.shape != labels.shape or predictions.shape[-1:] != (len(names),):
    raise ValueError(f"multi_label_metrics: predictions {predictions.shape}, labels "
                     f"{labels.shape}, {len(names)} names")
  tp = np.sum(predictions & labels, axis=0).astype(np.float64)
  fp = np.sum(predictions & ~labels, axis=0).astype(np.float64)
  fn = np.sum(~predictions & labels, axis=0).astype(np.float64)
  per_label = [0.0 if t == 0 else 2 * t / (2 * t + p + n) for t, p, n in zip(tp, fp, fn)]
  all_tp, all_fp, all_fn = tp.sum(), fp.sum(), fn.sum()
  result = {
      "micro_precision": 0.0 if all_tp == 0 else float(all_tp / (all_tp + all_fp)),
      "micro_recall": 0.0 if all_tp == 0 else float(all_tp / (all_tp + all_fn)),
      "micro_f1": 0.0 if all_tp == 0 else float(2 * all_tp / (2 * all_tp + all_fp + all_fn)),
      "macro_f1": float(np.mean(per_label)),
      "subset_accuracy": (float(np.mean(np.all(predictions == labels, axis=-1)))
                          if len(labels) else 0.0),
  }
  for name, value in zip(names, per_label):
    result[f"f1_{name}"] = float(value)
  return result


# --------------------------------------------------------------------------- regression


def pearson_corrcoef(x, y):
  """Pearson correlation of two float vectors [n]; 0.0 when one is constant."""
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  xm, ym = x - x.mean(), y - y.mean()
  denominator = np.sqrt(np.sum(xm * xm) * np.sum(ym * ym))
  return 0.0 if denominator == 0 else float(np.sum(xm * ym) / denominator)


def rankdata_average(values):
  """1-based ranks [n] of values [n]; tied values share the average of their ranks."""
  values = np.asarray(values, np.float64)
  order = np.argsort(values, kind="mergesort")
  ranks = np.empty(len(values), np.float64)
  sorted_values = values[order]
  start = 0
  while start < len(values):
    end = start
    while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
      end += 1
    ranks[order[start:end + 1]] = (start + end) / 2.0 + 1.0
    start = end + 1
  return ranks


def spearman_corrcoef(x, y):
  """Spearman correlation: Pearson of the average ranks."""
  return pearson_corrcoef(rankdata_average(x), rankdata_average(y))


# --------------------------------------------------------------------------- GLUE


def compute_metrics(metric, predictions, labels):
  """GLUE's metrics for one eval set, as a dict of names to floats.

  metric: "accuracy", "accuracy_f1", "matthews" or "pearson_spearman".
  predictions, labels: label ids [n] (int) or, for "pearson_spearman", float scores [n].
  Classification metrics always include "accuracy" (the original's eval_accuracy).
  """
  if metric == "pearson_spearman":
    pearson = pearson_corrcoef(predictions, labels)
    spearman = spearman_corrcoef(predictions, labels)
    return {"pearson": pearson, "spearman": spearman, "corr": (pearson + spearman) / 2}
  result = {"accuracy": accuracy(predictions, labels)}
  if metric == "accuracy_f1":
    result["f1"] = f1_score(predictions, labels)
    result["acc_and_f1"] = (result["accuracy"] + result["f1"]) / 2
  elif metric == "matthews":
    result["matthews_corrcoef"] = matthews_corrcoef(predictions, labels)
  elif metric != "accuracy":
    raise ValueError(f"unknown metric {metric!r}")
  return result
