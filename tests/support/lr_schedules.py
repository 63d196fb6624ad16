"""NumPy reference of the one-cycle learning-rate schedule (--lr_schedule=one_cycle), which
the original release does not have."""
import numpy as np


def one_cycle_reference(step, peak, total, warmup):
  """NumPy reference of the one-cycle schedule: up to `peak` over `warmup` steps, then
  linearly down to 0 at `total` (and 0 after it)."""
  step = np.asarray(step, np.float64)
  up = peak * step / max(warmup, 1)
  down = peak * np.clip(1.0 - (step - warmup) / max(total - warmup, 1), 0.0, 1.0)
  return np.where(step < warmup, up, down)
