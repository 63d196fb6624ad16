"""Rates and ETAs for long phases: one helper for training, evaluation and data creation."""

import time


def format_duration(seconds):
  """Seconds -> "H:MM:SS" (negative values read as 0)."""
  seconds = int(max(seconds, 0))
  return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
  """Rates and ETAs for a long phase, measured after its first update (which may trace).

  update(done) after each unit of work; `rate()` and `eta()` leave out the time up to the
  first update, so the first ETA is not inflated by tracing or start-up.
  """

  def __init__(self, total, done=0):
    self.total, self.start_done = total, done
    self.started = time.time()
    self.warm_time, self.warm_done = None, done
    self.done = done

  def update(self, done):
    if self.warm_time is None:
      self.warm_time, self.warm_done = time.time(), done
    self.done = done

  def elapsed(self):
    return time.time() - self.started

  def rate(self):
    """Units per second since the first update (or since the start, if only one)."""
    if self.warm_time is not None and self.done > self.warm_done:
      return (self.done - self.warm_done) / max(time.time() - self.warm_time, 1e-9)
    return (self.done - self.start_done) / max(time.time() - self.started, 1e-9)

  def eta_seconds(self):
    return (self.total - self.done) / max(self.rate(), 1e-9)

  def eta(self):
    """The time left as "H:MM:SS"."""
    return format_duration(self.eta_seconds())
