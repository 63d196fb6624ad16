"""tools/linear_probe.py: frozen encoder features and the linear models fitted on them.

The tool's refusals (one class, equal scores, a header read as data, batch sizes, `~`)
are cases of tests/reliability/test_tool_inputs.py; here its numbers, and whole runs as a
user starts them (their command lines, in the tool's warm process:
tests/support/cli_harness.py).
"""
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from bert.classifier import classifier_examples  # noqa: E402  pylint: disable=wrong-import-position
from bert.classifier import classifier_features  # noqa: E402  pylint: disable=wrong-import-position
from bert import fast_tokenization  # noqa: E402  pylint: disable=wrong-import-position
import linear_probe  # noqa: E402  pylint: disable=wrong-import-position
from bert import modeling  # noqa: E402  pylint: disable=wrong-import-position
from tiny import tiny_config  # noqa: E402  pylint: disable=wrong-import-position
import cli_harness  # noqa: E402  pylint: disable=wrong-import-position

WORDS = ["good", "bad", "film", "plot", "actor", "music", "long", "short", "the", "a"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


def test_logistic_regression_stops_at_the_optimum():
  # The objective (mean cross-entropy + L2/2 |W|^2) is strictly convex: a zero gradient
  # is its one minimum, whatever the path gradient descent took to get there.
  rng = np.random.default_rng(0)
  x = rng.normal(size=(300, 6))
  labels = (x @ rng.normal(size=(6, 3)) + rng.normal(scale=2.0, size=(300, 3))).argmax(1)
  weights, bias = linear_probe.logistic_regression(x, labels, 3)
  logits = x @ weights + bias
  probs = np.exp(logits - logits.max(1, keepdims=True))
  probs /= probs.sum(1, keepdims=True)
  error = (probs - np.eye(3)[labels]) / len(x)  # d(mean cross-entropy)/d(logits)
  grad_w, grad_b = x.T @ error + linear_probe.L2 * weights, error.sum(0)
  assert max(np.abs(grad_w).max(), np.abs(grad_b).max()) < linear_probe.TOLERANCE
  # Better than always guessing the most frequent label, on the rows it learned from.
  train_accuracy = np.mean((x @ weights + bias).argmax(1) == labels)
  assert train_accuracy > np.bincount(labels).max() / len(labels) + 0.1


def test_ridge_regression_equals_least_squares_on_the_augmented_system():
  # min |xW + b - y|^2 + lam |W|^2 is least squares on [x; sqrt(lam) I] against [y - b; 0]
  # (b the mean of y, as x is centred): solved here by lstsq, not the normal equations.
  rng = np.random.default_rng(1)
  x = rng.normal(size=(80, 5))
  x -= x.mean(axis=0)
  y = x @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 4.0 + rng.normal(scale=0.3, size=80)
  weights, bias = linear_probe.ridge_regression(x, y)
  penalty = np.sqrt(linear_probe.RIDGE * len(x))
  expected = np.linalg.lstsq(np.vstack([x, penalty * np.eye(5)]),
                             np.concatenate([y - y.mean(), np.zeros(5)]), rcond=None)[0]
  np.testing.assert_allclose(weights, expected, rtol=1e-10, atol=1e-12)
  assert bias == pytest.approx(y.mean())


def _tokenizer(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
  return fast_tokenization.FastTokenizer(str(vocab), True), str(vocab)


def test_features_are_per_example_in_input_order_and_ignore_padding(tmp_path):
  tokenizer, _ = _tokenizer(tmp_path)
  tf.keras.utils.set_random_seed(3)
  model = modeling.BertModel(tiny_config(len(VOCAB)))
  texts = ["good film", "the plot was long and bad", "a", "music actor short good the",
           "bad", "film film film plot"]
  examples = [classifier_examples.InputExample(str(i), text, label=str(i % 2))
              for i, text in enumerate(texts)]
  # Batches of 4, each window sorted by length: rows come back out of order and padded.
  batches = classifier_features.predict_batches(examples, ["0", "1"], tokenizer, 16, 4)
  features, labels = linear_probe.encoder_features(model, batches)
  np.testing.assert_array_equal(labels, [i % 2 for i in range(len(texts))])
  for index, text in enumerate(texts):  # each row alone, no padding at all
    ids = [2] + [VOCAB.index(w) if w in VOCAB else 1 for w in text.split()] + [3]
    inputs = {"input_ids": tf.constant([ids]), "input_mask": tf.ones((1, len(ids)), tf.int32),
              "segment_ids": tf.zeros((1, len(ids)), tf.int32)}
    out = model(inputs, training=False)
    np.testing.assert_allclose(features["cls"][index], out["sequence_output"][0, 0], atol=2e-5)
    np.testing.assert_allclose(features["pooled"][index], out["pooled_output"][0], atol=2e-5)
    np.testing.assert_allclose(features["mean"][index],
                               out["sequence_output"][0].numpy().mean(0), atol=2e-5)
    np.testing.assert_allclose(features["embeddings"][index],
                               out["embedding_output"][0].numpy().mean(0), atol=2e-5)


def _probe(*argv):
  """Runs `python tools/linear_probe.py ARGV...` (its command line's real path, in its warm
  process: no TensorFlow start-up per run); returns the finished process."""
  return cli_harness.run("tools/linear_probe.py", argv, timeout=600)


def test_a_word_that_decides_the_label_is_found_from_random_weights(tmp_path):
  # The label is "does the row say good or bad": the averaged embeddings hold each word's
  # vector, so a linear model finds it on rows it never saw, even from random weights.
  _, vocab = _tokenizer(tmp_path)
  rng = np.random.default_rng(5)
  filler = ["film", "plot", "actor", "music", "long", "short", "the", "a"]
  for name, rows in (("train", 120), ("dev", 40)):
    lines = ["text\tlabel"]
    for _ in range(rows):
      label = int(rng.integers(2))
      words = list(rng.choice(filler, size=int(rng.integers(1, 6)))) + [["bad", "good"][label]]
      rng.shuffle(words)
      lines.append(f"{' '.join(words)}\t{label}")
    (tmp_path / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
  config = tmp_path / "bert_config.json"
  tiny_config(len(VOCAB)).to_json_file(str(config))
  proc = _probe(f"--bert_config_file={config}", f"--vocab_file={vocab}",
                f"--data_dir={tmp_path}", "--has_header", "--text_a_column=text",
                "--label_column=label", "--max_seq_length=16")
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = proc.stdout.splitlines()
  assert lines[0] == ("linear probe, dev accuracy (40 rows; trained on 120), encoder "
                      "random weights (seed 1):")
  scores = {line.split()[0]: float(line.split()[1]) for line in lines[1:]}
  assert sorted(scores) == sorted(linear_probe.FEATURES)
  assert scores["embeddings"] == 1.0


def test_pair_regression_adds_the_cosine_of_the_two_texts(tmp_path):
  # Scores equal to the fraction of shared words: the cosine of the averaged embeddings
  # follows it; checked against the cosine computed here from the features alone.
  _, vocab = _tokenizer(tmp_path)
  rng = np.random.default_rng(9)
  rows = {}
  for name, count in (("train", 30), ("dev", 20)):
    lines = ["a\tb\tscore"]
    for _ in range(count):
      a = list(rng.choice(WORDS, size=4))
      b = a[:int(rng.integers(0, 5))] + list(rng.choice(WORDS, size=2))
      lines.append(f"{' '.join(a)}\t{' '.join(b)}\t{len(set(a) & set(b)) / 4:.2f}")
    rows[name] = lines[1:]
    (tmp_path / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
  config = tmp_path / "bert_config.json"
  tiny_config(len(VOCAB)).to_json_file(str(config))
  proc = _probe(f"--bert_config_file={config}", f"--vocab_file={vocab}",
                f"--data_dir={tmp_path}", "--has_header", "--text_a_column=a",
                "--text_b_column=b", "--label_column=score", "--regression",
                "--max_seq_length=16")
  assert proc.returncode == 0, proc.stderr[-3000:]
  lines = proc.stdout.splitlines()
  assert lines[0].startswith("linear probe, dev Pearson (20 rows; trained on 30)")
  scores = {line.rsplit(None, 1)[0].strip(): float(line.split()[-1]) for line in lines[1:]}
  assert sorted(scores) == sorted(list(linear_probe.FEATURES)
                                  + ["cosine mean", "cosine embeddings"])
  # The same cosine from features computed here, each text alone (same seed, same model).
  tf.keras.utils.set_random_seed(1)
  model = modeling.BertModel(tiny_config(len(VOCAB)))
  tokenizer, _ = _tokenizer(tmp_path)
  texts = [row.split("\t") for row in rows["dev"]]
  feats = [linear_probe.encoder_features(model, classifier_features.predict_batches(
      [classifier_examples.InputExample(str(i), t[side]) for i, t in enumerate(texts)],
      None, tokenizer, 16, 64))[0]["embeddings"] for side in (0, 1)]
  cosine = (feats[0] * feats[1]).sum(1) / np.linalg.norm(feats[0], axis=1) / np.linalg.norm(
      feats[1], axis=1)
  expected = np.corrcoef(cosine, [float(t[2]) for t in texts])[0, 1]
  assert scores["cosine embeddings"] == pytest.approx(expected, abs=1e-4)
  assert scores["cosine embeddings"] > 0.5
