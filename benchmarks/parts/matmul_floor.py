"""The matmul floor of a BERT classifier step: the fastest a step could run on
this machine if it were nothing but its matrix multiplications and its optimizer update.

Every implementation (ours, transformers, ONNX Runtime) must do the encoder's matmuls
(a classifier's last layer only at [CLS], all it reads; transformers and ONNX Runtime do
more); they are most of a step's FLOPs. This module lists them for a batch of shape
[batch, seq] (`forward_gemms`; the backward pass does two matmuls of the same size for
each forward one: dX = dY W^T and dW = X^T dY), runs exactly those matmuls alone, each
on its own random operands with no dependency between them, in one tf.function, and
keeps the faster of TensorFlow's default CPU kernels (oneDNN) and XLA's (`time_gemms`).
It also times AdamWeightDecay's update over the model's weights as training applies it
(`update_seconds`; the original's update is dense, so every weight is read and written
every step). Then, in examples/s:

  prediction ceiling = batch / forward matmuls
  training ceiling   = batch / (forward + backward matmuls + the update)

Nothing else of a step is counted: no softmax, LayerNorm, GELU, dropout, embedding
lookup or gradient, loss, clipping, input pipeline or host loop. So the ceilings are
optimistic bounds; a target above them cannot be reached with these kernels on this
machine. The fraction of the matmul peak (machine.matmul_peak: the fastest square matmul
of 1024-4096) the step's matmuls reach is printed beside them: small matrices run further
from the peak than large ones.

  python -m benchmarks.parts.matmul_floor [--shape=minilm|korean|demo] [--seq=14] [--batch=32]
      [--repeats=5]

minilm is the shared MiniLM's shape (L6 H384 A12 I1536), like bench_classifier.py;
korean and demo are small_step.py's pretraining shapes (the masked-LM matmuls included,
no update timed): their "forward + backward matmuls" GFLOP/s bounds what the whole small
step can reach, as a fraction of the same run's peak.
"""

import argparse
import os
import time

from benchmarks.parts import machine
from benchmarks.parts import small_step

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# The shared MiniLM (models/uncased_L-6_H-384_A-12), bench_classifier's model.
MINILM = dict(layers=6, hidden=384, heads=12, intermediate=1536, vocab=30522,
              max_position=512, type_vocab=2)


def forward_gemms(layers, hidden, heads, intermediate, batch, seq, num_labels=2,
                  predictions=0, vocab=0, **_):
  """The forward pass's matmuls: [(count, b, m, k, n)], each b x ([m, k] @ [k, n]).

  A layer: the query, key, value and attention-output projections ([batch*seq, H] @
  [H, H], four), the intermediate and output dense layers, then the attention scores
  (batch*heads x [seq, H/heads] @ [H/heads, seq]) and context (batch*heads x [seq, seq]
  @ [seq, H/heads]). After the layers: the pooler and the classifier (or next-sentence
  output), on [CLS] only; with `predictions` (pretraining), the masked-LM transform and
  output over the vocabulary at batch*predictions rows. A classifier (no `predictions`)
  reads the last layer at [CLS] only, so its last layer is counted as a classifier needs
  it (modeling.BertModel's pooled_only): keys and values at every row, the query, the
  attention output and the feed-forward layers at the batch's [CLS] rows. Transformers
  and ONNX Runtime compute that layer at every row.
  """
  rows, head = batch * seq, hidden // heads
  full = layers if predictions else layers - 1  # layers computed at every row
  gemms = [
      (4 * full, 1, rows, hidden, hidden),
      (full, 1, rows, hidden, intermediate),
      (full, 1, rows, intermediate, hidden),
      (full, batch * heads, seq, head, seq),
      (full, batch * heads, seq, seq, head),
      (1, 1, batch, hidden, hidden),
      (1, 1, batch, hidden, num_labels),
  ]
  if not predictions:  # the last layer, [CLS] only
    gemms += [(2, 1, rows, hidden, hidden),          # key, value
              (2, 1, batch, hidden, hidden),         # query, attention output
              (1, 1, batch, hidden, intermediate),
              (1, 1, batch, intermediate, hidden),
              (1, batch * heads, 1, head, seq),
              (1, batch * heads, 1, seq, head)]
  if predictions:
    gemms += [(1, 1, batch * predictions, hidden, hidden),
              (1, 1, batch * predictions, hidden, vocab)]
  return gemms


def flops(gemms, training):
  """Multiply-adds x 2 of the forward matmuls, x 3 with the backward pass's two."""
  forward = sum(2 * count * b * m * k * n for count, b, m, k, n in gemms)
  return 3 * forward if training else forward


def _operands(tf, gemms, training, seed=0):
  """Distinct random operands for every matmul (distinct, so that no graph optimisation
  can merge two of them): a list of (x [b, m, k], w [b, k, n], dy [b, m, n] or None)."""
  generator = tf.random.Generator.from_seed(seed)
  operands = []
  for count, b, m, k, n in gemms:
    batch = (b,) if b > 1 else ()  # 2-D where the model's dense layers are (MatMul)
    for _ in range(count):
      operands.append((generator.normal(batch + (m, k)), generator.normal(batch + (k, n)),
                       generator.normal(batch + (m, n)) if training else None))
  return operands


def gemm_function(xla):
  """A tf.function(operands) -> scalar running every matmul of _operands(): x @ w, and
  where dy is given dy @ w^T and x^T @ dy (the backward pass's)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  @tf.function(jit_compile=xla)
  def run(operands):
    total = tf.constant(0.0)
    for x, w, dy in operands:
      outputs = [tf.matmul(x, w)]
      if dy is not None:
        outputs += [tf.matmul(dy, w, transpose_b=True), tf.matmul(x, dy, transpose_a=True)]
      for out in outputs:  # one element of each, so that no matmul is pruned
        total += tf.reshape(out, [-1])[0]
    return total

  return run


def time_gemms(gemms, training, xla, repeats=5):
  """Best and median seconds of one call running all of `gemms` (and, training, both
  backward matmuls of each), after an untimed call that traces and compiles."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  operands = _operands(tf, gemms, training)
  run = gemm_function(xla)
  return _best_and_median(lambda: run(operands).numpy(), repeats)


def _best_and_median(call, repeats):
  """(best, median) seconds of `repeats` timed calls, after one untimed call."""
  call()
  seconds = []
  for _ in range(repeats):
    started = time.perf_counter()
    call()
    seconds.append(time.perf_counter() - started)
  seconds.sort()
  return seconds[0], seconds[len(seconds) // 2]


def update_seconds(shape, repeats=5):
  """Best and median seconds of AdamWeightDecay's update (optimization.create_optimizer,
  as run_classifier makes it) over the classifier's weights, given their gradients, in a
  tf.function as training runs it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bert import modeling  # pylint: disable=g-import-not-at-top

  from bert import heads
  from bert import optimization  # pylint: disable=g-import-not-at-top
  config = modeling.BertConfig(
      vocab_size=shape["vocab"], hidden_size=shape["hidden"],
      num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"],
      intermediate_size=shape["intermediate"], max_position_embeddings=shape["max_position"],
      type_vocab_size=shape["type_vocab"])
  model, _ = heads.build_classifier_model(config, 2)
  variables = model.trainable_variables
  optimizer = optimization.create_optimizer(2e-5, 1000, 100)
  optimizer.build(variables)
  grads = [tf.random.normal(v.shape) * 1e-3 for v in variables]

  @tf.function
  def apply(grads):
    optimizer.apply_gradients(zip(grads, variables))
    return optimizer.iterations

  best, median = _best_and_median(lambda: apply(grads).numpy(), repeats)
  return best, median, sum(int(tf.size(v)) for v in variables)


def measure(seq, batch=32, shape=None, repeats=5, update=True):
  """{name: value} of one run: the matmul peak, the forward and training matmuls at
  [batch, seq] (best of the two kernel sets), the classifier's update (update=False: 0,
  as for a pretraining shape, whose model this does not build), and the two ceilings."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  shape = shape or MINILM
  gemms = forward_gemms(**dict(shape, batch=batch, seq=seq))
  out = {"peak": machine.matmul_peak(tf.float32)}
  for training in (False, True):
    mode = "train" if training else "forward"
    for xla in (False, True):
      best, median = time_gemms(gemms, training, xla, repeats)
      out[f"{mode}_{'xla' if xla else 'default'}_seconds"] = best
      out[f"{mode}_{'xla' if xla else 'default'}_median"] = median
    out[f"{mode}_seconds"] = min(out[f"{mode}_default_seconds"], out[f"{mode}_xla_seconds"])
    out[f"{mode}_flops"] = flops(gemms, training)
  best, median, num_weights = update_seconds(shape, repeats) if update else (0.0, 0.0, 0)
  out.update(update_seconds=best, update_median=median, num_weights=num_weights)
  out["predict_ceiling"] = batch / out["forward_seconds"]
  out["train_ceiling"] = batch / (out["train_seconds"] + out["update_seconds"])
  out["peak_after"] = machine.matmul_peak(tf.float32)
  return out


def ceiling_at(mean_tokens, batch=32, shape=None, repeats=5, update=True):
  """measure() at the two whole lengths around mean_tokens (a batch's mean width),
  interpolated linearly (a matmul's time is close to linear in its rows)."""
  low = max(int(mean_tokens), 1)
  at_low = measure(low, batch, shape, repeats, update)
  if mean_tokens == low:
    return at_low
  at_high = measure(low + 1, batch, shape, repeats, update)
  weight = mean_tokens - low
  mixed = {}
  for key, value in at_low.items():
    if key.endswith("ceiling"):  # interpolate the time, not the rate
      value = batch / ((1 - weight) * batch / value + weight * batch / at_high[key])
    elif key != "num_weights":
      value = (1 - weight) * value + weight * at_high[key]
    mixed[key] = value
  return mixed


def describe(out, batch, seq):
  """Printable rows (name, value, unit, note) of measure()'s result."""
  peak = out["peak"]
  rows = [("matmul peak float32", out["peak"] / 1e9, "GFLOP/s",
           f"best of 3, before; {out['peak_after'] / 1e9:.1f} after")]
  for mode, what in (("forward", "forward matmuls"), ("train", "forward + backward matmuls")):
    rate = out[f"{mode}_flops"] / out[f"{mode}_seconds"]
    rows.append((f"{what}, [{batch}, {seq}]", out[f"{mode}_seconds"] * 1e3, "ms",
                 f"{out[f'{mode}_flops'] / 1e9:.2f} GFLOP at {rate / 1e9:.1f} GFLOP/s = "
                 f"{100 * rate / peak:.0f}% of the peak; oneDNN "
                 f"{out[f'{mode}_default_seconds'] * 1e3:.1f} ms (median "
                 f"{out[f'{mode}_default_median'] * 1e3:.1f}), XLA "
                 f"{out[f'{mode}_xla_seconds'] * 1e3:.1f} ms (median "
                 f"{out[f'{mode}_xla_median'] * 1e3:.1f})"))
  if out["num_weights"]:
    rows.append(("AdamWeightDecay update", out["update_seconds"] * 1e3, "ms",
                 f"{out['num_weights']:,} weights; median {out['update_median'] * 1e3:.1f} ms"))
  rows.append(("prediction ceiling", out["predict_ceiling"], "examples/s",
               "batch / forward matmuls"))
  rows.append(("training ceiling", out["train_ceiling"], "examples/s",
               "batch / (forward + backward matmuls + update)"))
  return rows


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--shape", default="minilm", choices=("minilm", "korean", "demo"),
                      help="minilm: the classifier (fine-tuning, prediction); korean, demo: "
                           "small_step.py's pretraining shapes (matmuls only, no update)")
  parser.add_argument("--seq", type=float, default=None,
                      help="a batch's width in tokens (a mean: interpolated); default 14 "
                           "for minilm, the shape's own for korean and demo")
  parser.add_argument("--batch", type=int, default=32)
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel("ERROR")  # each measurement traces a function of its own
  print(f"{machine.cpu_model()}; {machine.load_average()}")
  shape = MINILM if args.shape == "minilm" else small_step.SHAPES[args.shape]
  seq = args.seq or (14.0 if args.shape == "minilm" else shape["seq"])
  out = ceiling_at(seq, args.batch, shape, args.repeats, update=args.shape == "minilm")
  for name, value, unit, note in describe(out, args.batch, seq):
    print(f"{name:42s} {value:10.1f} {unit:11s} {note}")
  print(machine.load_average())


if __name__ == "__main__":
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  main()
