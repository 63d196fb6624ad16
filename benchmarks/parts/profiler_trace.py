"""What TensorFlow's profiler recorded: the events of the threads that run ops."""

import collections
import glob
import os
import tempfile


def compute_events(path):
  """(name, duration in picoseconds) of every event on the op threads (tf_Compute lines)
  of a profiler trace (xplane.pb); an op's name is 'its/name:OpType'."""
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(path, "rb") as handle:
    space.ParseFromString(handle.read())
  for plane in space.planes:
    for line in plane.lines:
      if line.name.startswith("tf_Compute"):
        for event in line.events:
          yield plane.event_metadata[event.metadata_id].name, event.duration_ps


def is_op(name):
  """Whether a compute event is an op (not the executor's or the thread pool's own)."""
  return ":" in name and not name.startswith(("Executor", "Threadpool"))


def op_times(run):
  """{op type: (seconds of op time, count)} of one run() under TensorFlow's profiler,
  summed over the threads that run ops."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  logdir = tempfile.mkdtemp(prefix="profile-")
  tf.profiler.experimental.start(logdir)
  run()
  tf.profiler.experimental.stop()
  path = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0]
  seconds, counts = collections.Counter(), collections.Counter()
  for name, duration in compute_events(path):
    if is_op(name):
      op = name.rsplit(":", 1)[1]
      seconds[op] += duration / 1e12
      counts[op] += 1
  return {op: (seconds[op], counts[op]) for op in seconds}


def print_op_times(times, top=12, per=1):
  """The `top` op types by time, each with its share; `per`: divide times and counts by
  it (steps, for a per-step profile)."""
  total = sum(s for s, _ in times.values())
  print(f"  op time {total / per:.3f} s, summed over the threads that run ops")
  for op, (seconds, count) in sorted(times.items(), key=lambda kv: -kv[1][0])[:top]:
    print(f"  {op:<28} {seconds / per:7.3f} s {100 * seconds / total:5.1f}%  "
          f"{count / per:g} ops")
