"""Classifier speed: per-batch padding against fixed padding to 128, on SST-2 dev.

  .venv/bin/python benchmarks/bench_classifier.py [--quick]

Builds run_classifier's model for the shared MiniLM config (6 layers, hidden 384; the
weights do not matter for speed, so they stay random) and feeds it SST-2 dev sentences
(872, median about 25 WordPieces) through classifier_data.make_dataset, once with
per-batch padding (the default) and once with --fixed_padding (every batch 128 long),
in the same process:
  * prediction examples/s (batch 32; the whole dev set, after one warm-up pass so that
    tracing is not timed);
  * training examples/s (batch 32, forward + backward + AdamWeightDecay update, after
    warm-up steps).
Hugging Face transformers is compared only when it is installed with a backend (it is
not part of this project's requirements); otherwise the row says so.
--quick: 256 sentences and fewer training steps.
"""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

DATA = os.path.join(ROOT, "..", "shared", "data")
SST2 = os.path.join(DATA, "glue", "SST-2")
MODEL_DIR = os.path.join(DATA, "models", "uncased_L-6_H-384_A-12")
VOCAB = os.path.join(DATA, "vocab", "uncased_vocab.txt")
BATCH = 32
SEQ = 128


def _predict_rate(tf, model, dataset, num_examples):
  names = [t.name for t in model.inputs]

  @tf.function(reduce_retracing=True)
  def forward(features):
    return model({n: features[n] for n in names}, training=False)["logits"]

  def one_pass():
    for batch in dataset:
      forward(batch).numpy()

  one_pass()  # warm-up: traces, tf.data start-up
  started = time.perf_counter()
  one_pass()
  return num_examples / (time.perf_counter() - started)


def _train_rate(tf, model, optimizer, dataset, steps, warmup):
  names = [t.name for t in model.inputs]
  variables = model.trainable_variables

  @tf.function(reduce_retracing=True)
  def step(features):
    with tf.GradientTape() as tape:
      logits = model({n: features[n] for n in names}, training=True)["logits"]
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=features["label_ids"], logits=logits))
    # Dense gradients, as training.py applies them (the embedding's are IndexedSlices).
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  iterator = iter(dataset)
  for _ in range(warmup):
    step(next(iterator)).numpy()
  started = time.perf_counter()
  for _ in range(steps):
    step(next(iterator)).numpy()
  return steps * BATCH / (time.perf_counter() - started)


def run(quick=False):
  """Returns [{name, value, unit, note}]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  import checkpoints  # pylint: disable=g-import-not-at-top
  import classifier_data  # pylint: disable=g-import-not-at-top
  import modeling  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import tokenization  # pylint: disable=g-import-not-at-top

  tf.keras.utils.set_random_seed(1)
  config_file = os.path.join(MODEL_DIR, "bert_config.json")
  config = checkpoints.load_bert_config(config_file)
  tokenizer = tokenization.FastTokenizer(VOCAB, True)
  examples = classifier_data.Sst2Processor().get_dev_examples(SST2)
  if quick:
    examples = examples[:256]
  lengths = [len(ids) + 2 for ids in tokenizer.tokenize_batch([e.text_a for e in examples])]
  scope = (f"SST-2 dev, {len(examples)} sentences (median {sorted(lengths)[len(lengths) // 2]}"
           f" tokens), L{config.num_hidden_layers} H{config.hidden_size}, batch {BATCH}")
  rows = []
  rates = {}
  for fixed in (False, True):
    label = "fixed128" if fixed else "per_batch"
    model, _ = modeling.build_classifier_model(config, 2)
    dataset = classifier_data.make_dataset(examples, ["0", "1"], tokenizer, SEQ, BATCH,
                                           is_training=False, fixed_padding=fixed)
    rates[("predict", fixed)] = _predict_rate(tf, model, dataset, len(examples))
    steps = 4 if quick else 12
    optimizer = optimization.create_optimizer(2e-5, 1000, 100)
    train_dataset = classifier_data.make_dataset(examples, ["0", "1"], tokenizer, SEQ,
                                                 BATCH, is_training=True,
                                                 fixed_padding=fixed, seed=1)
    rates[("train", fixed)] = _train_rate(tf, model, optimizer, train_dataset, steps,
                                          warmup=3)
    for mode in ("predict", "train"):
      rows.append({"name": f"classifier_{mode}_{label}",
                   "value": round(rates[(mode, fixed)], 1), "unit": "examples/s",
                   "note": scope})
  for mode in ("predict", "train"):
    rows.append({"name": f"classifier_{mode}_speedup_per_batch_vs_fixed128",
                 "value": round(rates[(mode, False)] / rates[(mode, True)], 2), "unit": "x",
                 "note": "same run, same model; target >= 2x for prediction"})
  try:
    import transformers  # pylint: disable=g-import-not-at-top,unused-import
    note = ("transformers is installed, but its TensorFlow models are gone (v5) and this "
            "project has no torch: not compared")
  except ImportError:
    note = "transformers not installed: not compared"
  rows.append({"name": "classifier_hf_comparison", "value": "skipped", "unit": "",
               "note": note})
  return rows


if __name__ == "__main__":
  for row in run(quick="--quick" in sys.argv):
    print(f"{row['name']:50s} {row['value']!s:>10} {row['unit']:12s} {row['note']}")
