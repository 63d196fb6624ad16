"""What an encoder knows before fine-tuning: a linear model on its frozen features.

  python tools/linear_probe.py --bert_config_file=out/korean/bert_config.json \
      --vocab_file=out/korean/vocab/vocab.txt --do_lower_case=false \
      --init_checkpoint=out/korean/pretrain/pretrained/bert_model.ckpt \
      --data_dir=out/korean/data/nsmc --has_header \
      --text_a_column=document --label_column=label --max_seq_length=64

Reads DIR/train.tsv and DIR/dev.tsv as `run_classifier.py --task_name=tsv` does (the same
column flags), runs the encoder once over both without training it (dropout off), and
fits one linear model on each of four features of a row, scored on dev:
  cls         the last layer at [CLS]       (what the classifier's pooler reads);
  pooled      the pooler's output           (what the classifier's head reads);
  mean        the last layer averaged over the row's real tokens;
  embeddings  the embedding output averaged over the row's real tokens (no attention).
Classification: multinomial logistic regression (standardised features, L2 1e-3,
Newton's method to its minimum); score: dev accuracy. --regression: ridge
regression; score: dev Pearson. A pair regression task (--text_b_column, e.g. STS) also
gets two scores with nothing fitted: the Pearson correlation of the label with the cosine
of the two texts' features (mean, embeddings), each text encoded alone. Without
--init_checkpoint the encoder keeps its random initial weights (seed 1), the baseline a
pretrained checkpoint is compared with.

Its flags are run_classifier.py's (names, `~` in paths, --has_header: given, the files
have a header; --has_header=false, they have none; not given, a first row that looks
like a header stops the run). Bad input is one line and exit status 2, as in the
scripts; so is data on which a score would mean nothing: one class, or regression
scores that are all the same (Pearson is undefined).

Pretraining that helps a task shows here first, in seconds and with no fine-tuning
recipe to tune: a checkpoint whose probe beats random weights' knows something about the
task; whether fine-tuning through [CLS] uses it is a separate question (see
docs/new_language.md, "What the pretrained encoder knows").
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# pylint: disable=wrong-import-position
from bert.utils import runtime_log  # noqa: E402
if __name__ == "__main__":  # as the scripts: TensorFlow's runtime log quiet before it loads
  runtime_log.quiet()

from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert.cli import flags_common  # noqa: E402
from bert.cli import launch  # noqa: E402
from bert.training import checkpoints  # noqa: E402
from bert.classifier import classifier_examples  # noqa: E402
from bert.classifier import classifier_features  # noqa: E402
from bert.classifier import classifier_data  # noqa: E402
from bert import fast_tokenization  # noqa: E402
from bert import modeling  # noqa: E402
from bert import modeling_config  # noqa: E402
from bert.training import model_config  # noqa: E402
from bert.utils import paths  # noqa: E402
from bert.utils import errors  # noqa: E402
from bert.utils import input_checks  # noqa: E402

FEATURES = ("cls", "pooled", "mean", "embeddings")
L2 = 1e-3           # logistic regression's weight decay (standardised features)
RIDGE = 1e-3        # ridge regression's penalty per training row, as L2 is per row
MAX_ITERATIONS = 100  # Newton steps (it converges in about ten)
TOLERANCE = 1e-8    # stop when the gradient's largest entry is below this


def encoder_features(model, batches):
  """({feature: float64 [rows, hidden]}, label ids [rows]) in example order, from
  predict_batches' batches (which sort rows by length within windows)."""
  parts, order, labels = {name: [] for name in FEATURES}, [], []
  for batch in batches:
    inputs = {k: tf.constant(batch[k]) for k in classifier_features.FEATURE_NAMES}
    out = model(inputs, training=False)
    mask = batch["input_mask"][..., None].astype(np.float64)
    parts["cls"].append(out["sequence_output"].numpy()[:, 0])
    parts["pooled"].append(out["pooled_output"].numpy())
    for name, key in (("mean", "sequence_output"), ("embeddings", "embedding_output")):
      values = out[key].numpy().astype(np.float64)
      parts[name].append((values * mask).sum(axis=1) / mask.sum(axis=1))
    order.append(batch["example_index"])
    labels.append(batch["label_ids"])
  inverse = np.argsort(np.concatenate(order), kind="stable")
  return ({name: np.concatenate(rows).astype(np.float64)[inverse]
           for name, rows in parts.items()}, np.concatenate(labels)[inverse])


def standardise(train, dev):
  mean, scale = train.mean(axis=0), train.std(axis=0) + 1e-8
  return (train - mean) / scale, (dev - mean) / scale


def logistic_regression(x, labels, num_labels):
  """(weights [d, k], bias [k]) minimising mean cross-entropy + L2/2 |W|^2 (the bias is
  not penalised): Newton's method with a backtracking line search, to a gradient below
  TOLERANCE. The objective is strictly convex in W, so this is its one minimum."""
  onehot = np.eye(num_labels)[labels]
  augmented = np.hstack([x, np.ones((len(x), 1))])  # the bias as a last feature
  params = np.zeros((augmented.shape[1], num_labels))
  penalty = np.full(params.shape, L2)
  penalty[-1] = 0.0
  for _ in range(MAX_ITERATIONS):
    probs = _softmax(augmented @ params)
    grad = augmented.T @ (probs - onehot) / len(x) + penalty * params
    if np.abs(grad).max() < TOLERANCE:
      break
    step = np.linalg.solve(_hessian(augmented, probs, penalty),
                           grad.reshape(-1, order="F")).reshape(params.shape, order="F")
    scale, before = 1.0, _objective(augmented, onehot, params, penalty)
    while _objective(augmented, onehot, params - scale * step, penalty) > before and scale > 1e-8:
      scale /= 2
    params = params - scale * step
  return params[:-1], params[-1]


def _softmax(logits):
  logits = logits - logits.max(axis=1, keepdims=True)
  probs = np.exp(logits)
  return probs / probs.sum(axis=1, keepdims=True)


def _objective(augmented, onehot, params, penalty):
  logits = augmented @ params
  shifted = logits - logits.max(axis=1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  return -(onehot * log_probs).sum() / len(augmented) + 0.5 * (penalty * params ** 2).sum()


def _hessian(augmented, probs, penalty):
  """The objective's Hessian over params flattened class by class (column-major)."""
  d, k = augmented.shape[1], probs.shape[1]
  hessian = np.empty((d * k, d * k))
  for a in range(k):
    for b in range(k):
      weight = probs[:, a] * ((a == b) - probs[:, b]) / len(augmented)
      hessian[a * d:(a + 1) * d, b * d:(b + 1) * d] = augmented.T @ (augmented * weight[:, None])
  return hessian + np.diag(penalty.reshape(-1, order="F")) + 1e-10 * np.eye(d * k)


def ridge_regression(x, y):
  """(weights [d], bias) minimising |xW + b - y|^2 + RIDGE * rows * |W|^2."""
  bias = y.mean()
  gram = x.T @ x + RIDGE * len(x) * np.eye(x.shape[1])
  return np.linalg.solve(gram, x.T @ (y - bias)), bias


def probe_scores(train, dev, train_labels, dev_labels, num_labels=None):
  """{feature: dev accuracy (num_labels given) or dev Pearson (regression)}."""
  scores = {}
  for name in FEATURES:
    x_train, x_dev = standardise(train[name], dev[name])
    if num_labels:
      weights, bias = logistic_regression(x_train, train_labels, num_labels)
      scores[name] = float(np.mean((x_dev @ weights + bias).argmax(axis=1) == dev_labels))
    else:
      weights, bias = ridge_regression(x_train, train_labels)
      scores[name] = float(np.corrcoef(x_dev @ weights + bias, dev_labels)[0, 1])
  return scores


def cosine_scores(model, examples, labels, tokenizer, max_seq_length, batch_size):
  """{"cosine mean": r, "cosine embeddings": r}: the Pearson correlation between the
  labels and the cosine of each pair's two texts, each encoded alone (nothing fitted)."""
  alone = []
  for field in ("text_a", "text_b"):
    texts = [classifier_examples.InputExample(e.guid, getattr(e, field) or "", label=e.label)
             for e in examples]
    alone.append(encoder_features(model, classifier_features.predict_batches(
        texts, None, tokenizer, max_seq_length, batch_size))[0])
  scores = {}
  for name in ("mean", "embeddings"):
    a, b = alone[0][name], alone[1][name]
    cosine = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    scores[f"cosine {name}"] = float(np.corrcoef(cosine, labels)[0, 1])
  return scores


def _scores_of(examples):
  return [float(example.label) for example in examples]


def check_probe_data(train_path, dev_path, train_examples, dev_examples, label_list):
  """Refuses data on which the probe's scores mean nothing: one class (every feature
  would score 1.0 whatever the encoder knows), or for regression training or dev scores
  that are all the same (the fitted model predicts one value, or Pearson has no
  variance to correlate with: NumPy would print nan)."""
  if label_list is not None:
    if len(label_list) < 2:
      raise errors.UserError(
          f"{train_path}: every row has the label {label_list[0]!r}; a probe needs two "
          "classes or more (with one, every feature scores 1.0 whatever the encoder knows)")
    return
  for path, examples, what in ((dev_path, dev_examples, "dev"),
                               (train_path, train_examples, "training")):
    scores = set(_scores_of(examples))
    if len(scores) == 1:
      raise errors.UserError(
          f"{path}: Pearson is undefined: every {what} score is the same "
          f"({scores.pop():g} on all {len(examples):,} rows); the probe needs scores "
          "that differ")


def main(_):
  with errors.report_user_errors(FLAGS.verbose, "linear_probe.py"):
    flags_common.check_positive(FLAGS, ("batch_size",))
    data_dir = FLAGS.data_dir
    processor = classifier_data.DelimitedFileProcessor(
        flags_common.settings_from_flags(classifier_examples.DelimitedFileOptions, FLAGS))
    processor.set_data_dir(data_dir)  # where its labels are read from
    train_examples = processor.get_train_examples(data_dir)
    dev_examples = processor.get_dev_examples(data_dir)
    label_list = None if FLAGS.regression else processor.get_labels()
    check_probe_data(paths.join(data_dir, processor.train_file),
                     paths.join(data_dir, processor.dev_file), train_examples,
                     dev_examples, label_list)
    config = model_config.load_bert_config(input_checks.check_input_file(
        FLAGS.bert_config_file, "bert_config_file"))
    modeling_config.check_max_seq_length(FLAGS.max_seq_length, config)
    tokenizer = fast_tokenization.FastTokenizer(
        input_checks.check_input_file(FLAGS.vocab_file, "vocab_file"), FLAGS.do_lower_case)
    model_config.check_vocab_matches_config(tokenizer.vocab_size, config)
    tf.keras.utils.set_random_seed(1)
    model = modeling.BertModel(config, dtype="float32")
    if FLAGS.init_checkpoint:
      checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
    features, labels = [], []
    for examples in (train_examples, dev_examples):
      split_features, split_labels = encoder_features(model, classifier_features.predict_batches(
          examples, label_list, tokenizer, FLAGS.max_seq_length, FLAGS.batch_size))
      features.append(split_features)
      labels.append(split_labels)
    scores = probe_scores(*features, *labels, num_labels=label_list and len(label_list))
    if FLAGS.regression and FLAGS.text_b_column:
      scores.update(cosine_scores(model, dev_examples, labels[1], tokenizer,
                                  FLAGS.max_seq_length, FLAGS.batch_size))
    for name, score in scores.items():
      if not np.isfinite(score):  # a feature whose values are the same on every dev row
        raise errors.UserError(
            f"the {name} feature's Pearson is undefined: its predictions are the same on "
            "every dev row")
  metric = "Pearson" if FLAGS.regression else "accuracy"
  source = FLAGS.init_checkpoint or "random weights (seed 1)"
  print(f"linear probe, dev {metric} ({len(dev_examples):,} rows; trained on "
        f"{len(train_examples):,}), encoder {source}:")
  for name, score in scores.items():
    print(f"  {name:18s} {score:.4f}")


def define_flags():
  """The tool's flags, named and read as run_classifier.py's (paths expand `~`)."""
  flags_common.define_model_flags()
  flags_common.define_path("data_dir", None, "The folder of train.tsv and dev.tsv.")
  flags.mark_flag_as_required("data_dir")
  flags_common.define_delimited_file_flags()
  flags.DEFINE_integer("batch_size", 64, "Rows per batch of the encoder's pass.")
  flags_common.define_runtime_flags()


FLAGS = flags.FLAGS

if __name__ == "__main__":
  define_flags()
  launch.entry_point(main)()  # as the commands start: --help lists every flag above
