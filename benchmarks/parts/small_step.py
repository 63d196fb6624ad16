"""The small pretraining step (the Korean and demo shapes), shared by bench_pretraining.py's `small`
workload and profile_small_step.py.

Shapes: "korean" is reproduce/korean.sh's model (L=4 H=128 A=4 I=512, sequence 64,
batch 32, vocabulary 15,742, 10 predictions), "korean64" the same at batch 64 (the
short-budget recipe's batch, docs/new_language.md); "demo" is quickstart.py's (L=2 H=128 A=2
I=512, sequence 64, batch 32, 10 predictions, its 4,000-piece vocabulary).

`build(shape, xla)` makes the model, heads.pretraining_loss, AdamWeightDecay and
training.py's own strategy, step, loop and input iterator (create_strategy("one_device"),
make_train_step / make_train_loop, the iterator loop.train makes) on synthetic
batches held in memory, as run_pretraining would run them; `Run.rate(steps)`
times one loop call of `steps` steps after the caller made a warm-up call.

Model FLOPs a sequence (`flops_per_sequence`), forward + backward = 3x forward:
  6 x the encoder's matmul parameters (4 H^2 + 2 H I a layer) x tokens
  + 12 x layers x seq^2 x H                      (attention scores and context)
  + 6 x P x (H^2 + H V)                           (masked-LM transform and output)
  + 6 x (H^2 + 2 H)                               (pooler and next-sentence output)
"""

import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# $BERT_BENCH_CODE_ROOT: another checkout of the project (say, the commit before a change)
# whose modeling/training/optimization this process uses: bench_pretraining.py's small
# workload alternates processes on both trees for a before/after ratio in one run.
ROOT = os.environ.get("BERT_BENCH_CODE_ROOT") or os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

SHAPES = {
    "korean": dict(layers=4, hidden=128, heads=4, intermediate=512, seq=64, batch=32,
                   vocab=15742, predictions=10),
    # The same model at the short-budget recipe's batch (docs/new_language.md).
    "korean64": dict(layers=4, hidden=128, heads=4, intermediate=512, seq=64, batch=64,
                     vocab=15742, predictions=10),
    "demo": dict(layers=2, hidden=128, heads=2, intermediate=512, seq=64, batch=32,
                 vocab=4000, predictions=10),
}


def describe(shape):
  s = SHAPES[shape]
  return (f"{shape}: L={s['layers']} H={s['hidden']} A={s['heads']} I={s['intermediate']} "
          f"seq {s['seq']} batch {s['batch']} vocab {s['vocab']:,} {s['predictions']} "
          "predictions")


def flops_per_sequence(shape):
  s = SHAPES[shape]
  h, layers, inter, seq = s["hidden"], s["layers"], s["intermediate"], s["seq"]
  matmul_params = layers * (4 * h * h + 2 * h * inter)
  return (6 * matmul_params * seq + 12 * layers * seq * seq * h
          + 6 * s["predictions"] * (h * h + h * s["vocab"]) + 6 * (h * h + 2 * h))


class Run:
  """One model + optimizer + compiled loop; `loop(n)` runs n steps."""

  def __init__(self, loop, iterator, batch):
    self._loop, self._iterator, self.batch = loop, iterator, batch

  def loop(self, steps):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    loss = self._loop(self._iterator, tf.constant(steps, tf.int32))[0]
    return float(loss)

  def rate(self, steps):
    """Sequences/s over one loop call of `steps` steps."""
    started = time.perf_counter()
    self.loop(steps)
    return steps * self.batch / (time.perf_counter() - started)


def build(shape, xla=False, seed=0):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import heads
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert import optimization  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  from bert.training import strategies  # pylint: disable=g-import-not-at-top

  s = SHAPES[shape]
  strategy = strategies.create_strategy("one_device")  # run_pretraining's default
  strategies.setup_precision("float32")
  strategies.setup_determinism(1, False)
  config = modeling.BertConfig(
      vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=s["layers"],
      num_attention_heads=s["heads"], intermediate_size=s["intermediate"],
      max_position_embeddings=max(128, s["seq"]), type_vocab_size=2)
  rng = np.random.default_rng(seed)
  n, seq, p, batch = 8 * s["batch"], s["seq"], s["predictions"], s["batch"]
  data = {
      "input_ids": rng.integers(5, s["vocab"], (n, seq)).astype("int32"),
      "input_mask": np.ones((n, seq), "int32"),
      "segment_ids": np.repeat([[0] * (seq // 2) + [1] * (seq - seq // 2)], n, 0
                               ).astype("int32"),
      "masked_lm_positions": np.sort(np.stack([rng.choice(np.arange(1, seq), p, False)
                                               for _ in range(n)]), 1).astype("int32"),
      "masked_lm_ids": rng.integers(5, s["vocab"], (n, p)).astype("int32"),
      "masked_lm_weights": np.ones((n, p), "float32"),
      "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype("int32")}
  dataset = tf.data.Dataset.from_tensor_slices(data).repeat().batch(
      batch, drop_remainder=True).prefetch(2)
  with strategy.scope():
    model, _ = heads.build_pretraining_model(config)
    optimizer = optimization.create_optimizer(1e-4, 10000, 1000)
  state = checkpoints.RunCheckpoint(tempfile.mkdtemp(prefix="small-step-"), model,
                                    optimizer, strategy)
  train_config = loop.TrainConfig(global_batch_size=batch, num_train_steps=10**6,
                                  jit_compile=xla)
  names = sorted(["masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                  "next_sentence_loss"])
  step = loop.make_train_step(model, optimizer, heads.pretraining_loss, names,
                              train_config, state)
  loop = loop.make_train_loop(strategy, step, names)
  # The loop's input as loop.train makes it (for the CPU: the dataset itself now,
  # tf.distribute's iterator in older trees), so a --baseline tree times its own.
  iterator = loop._train_iterator(  # pylint: disable=protected-access
      strategy, lambda context, per_replica: dataset, train_config, 0)
  return Run(loop, iterator, batch)
