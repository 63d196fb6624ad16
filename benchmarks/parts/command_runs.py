"""A training command run as a user runs it, timed by its own loop: the seconds of its
steps after the first ones, from the examples/s the loop logs to TensorBoard each call."""

import os
import subprocess
import time


def train_scalars(output_dir, tag):
  """{step: value} of one scalar in a run's TensorBoard train events."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  values = {}
  train = os.path.join(output_dir, "train")
  for name in sorted(os.listdir(train)):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(train, name)):
      for value in event.summary.value:
        if value.tag == tag:
          values[event.step] = (float(tf.make_ndarray(value.tensor)) if value.tensor.dtype
                                else value.simple_value)
  return values


def timed_run(command, output_dir, warmup_steps, steps, loop_steps, batch):
  """(seconds of steps warmup_steps+1..steps, seconds of the whole process) of a training
  command whose loop logs every `loop_steps` steps (--steps_per_loop = --log_every_steps
  = loop_steps) into output_dir; raises with the output's tail when it fails."""
  started = time.perf_counter()
  proc = subprocess.run(command, capture_output=True, text=True)
  wall = time.perf_counter() - started
  if proc.returncode != 0:
    raise RuntimeError(f"{os.path.basename(command[1])} failed (exit {proc.returncode}):\n"
                       f"{proc.stderr[-1500:]}")
  rates = train_scalars(output_dir, "examples_per_second")
  timed = sum(loop_steps * batch / rates[step]
              for step in range(warmup_steps + loop_steps, steps + 1, loop_steps))
  return timed, wall


def alternate(command_of, dtypes, rounds, work, warmup_steps, steps, loop_steps, batch):
  """({dtype: [seconds of the timed steps]}, {dtype: [seconds of the whole process]}):
  each round runs command_of(dtype, output_dir) once per dtype, in an order that reverses
  every other round, so that load from other work falls on every dtype alike."""
  timed, wall = {d: [] for d in dtypes}, {d: [] for d in dtypes}
  for round_index in range(rounds):
    for dtype in (dtypes if round_index % 2 == 0 else dtypes[::-1]):
      output_dir = os.path.join(work, f"{dtype}-{round_index}")
      seconds, process = timed_run(command_of(dtype, output_dir), output_dir, warmup_steps,
                                   steps, loop_steps, batch)
      timed[dtype].append(seconds)
      wall[dtype].append(process)
  return timed, wall
