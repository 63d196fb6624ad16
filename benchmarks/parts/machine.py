"""The machine facts every benchmark row names (CPU, load, threads) and its matmul peak."""

import os
import statistics
import time

from bert.utils import cpu_choice

# Square sizes of the peak's matmuls. On a shared 2-core AMD EPYC the 4096^2 matmul alone
# measured 69-81 GFLOP/s on a day when 1536^2-3072^2 ran at 115-137 and the MiniLM's own
# [448, 384] matmuls at 112 (2026-11-25): one size is not the machine's peak.
PEAK_SIZES = (1024, 1536, 2048, 3072, 4096)


def cpu_model():
  """'AMD EPYC (AuthenticAMD family 25 model 1; AVX2), 2 logical CPUs': the CPU as
  cpu_choice reads it (the model name alone does not tell two CPUs of one brand apart;
  family, model and vector units decide a matmul peak) and the CPUs this machine has."""
  return f"{cpu_choice.this_cpu().describe()}, {os.cpu_count()} logical CPUs"


def load_average():
  return "load avg " + "/".join(f"{x:.2f}" for x in os.getloadavg())


def threads():
  """CPU threads this process may use: what every side of a comparison is given."""
  return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def median_range(values):
  """(median, lowest, highest) of a list of numbers."""
  ordered = sorted(values)
  return statistics.median(ordered), ordered[0], ordered[-1]


def spread(values, fmt="{:,.1f}"):
  """'median (min-max over N rounds)' of a list of numbers."""
  median, low, high = median_range(values)
  if len(values) == 1:
    return fmt.format(median) + " (one round)"
  return (fmt.format(median) + " (" + fmt.format(low) + "-" + fmt.format(high) +
          f" over {len(values)} rounds)")


def matmul_peak(dtype, sizes=PEAK_SIZES, repeats=3, seconds=0.2):
  """FLOP/s of the fastest square tf.matmul over `sizes` on TensorFlow's default device:
  for each size the best of `repeats` timings, each over enough back-to-back calls to
  last about `seconds`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  matmul = tf.function(lambda x: tf.matmul(x, x))
  best_rate = 0.0
  for size in sizes:
    a = tf.cast(tf.random.normal((size, size), dtype=tf.float32), dtype)
    t0 = time.perf_counter()
    matmul(a).numpy()
    calls = max(1, int(seconds / max(time.perf_counter() - t0, 1e-6)))
    for _ in range(repeats):
      t0 = time.perf_counter()
      for _ in range(calls):
        out = matmul(a)
      out.numpy()
      best_rate = max(best_rate, 2 * size ** 3 * calls / (time.perf_counter() - t0))
  return best_rate


def peak_note(sizes=PEAK_SIZES):
  return "fastest square tf.matmul of " + ", ".join(map(str, sizes)) + ", best of 3 each"
