"""What TensorFlow's profiler recorded: the events of the threads that run ops."""


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
