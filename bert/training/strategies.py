"""Where a run runs: tf.distribute strategies (one device, mirrored GPUs, hosts from
TF_CONFIG, TPU) and op determinism. (The precision is not here: the model takes it as
an argument, precision.py.)

Call create_strategy first, before any TensorFlow op: MultiWorkerMirroredStrategy must
configure collective ops before the TensorFlow context starts. TF_CONFIG is checked before
anything connects (parse_tf_config); a worker waiting for its peers says for whom, and
--multi_worker_timeout bounds the wait (waiting_for_peers).
"""

import contextlib
import json
import os
import time

from absl import logging
import keras
import tensorflow as tf
# Internal modules, for --multi_worker_timeout only (_bound_the_wait_for_peers).
from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
from tensorflow.python.distribute import multi_worker_util
from tensorflow.python.eager import context as tf_context

from bert.utils import cpu_choice
from bert.utils import errors


def create_strategy(name="one_device", tpu_name=None, tpu_zone=None, gcp_project=None,
                    num_gpus=None, num_tpu_cores=None, peer_timeout=0):
  """A tf.distribute strategy by the name of --distribution_strategy.

  one_device: the first GPU, else the CPU. mirrored: all (or num_gpus) local GPUs; on a
  machine without GPUs, every logical CPU device (what the tests use). multi_worker_mirrored:
  the hosts listed in the TF_CONFIG environment variable (checked first, parse_tf_config;
  while this worker waits for its peers it says for whom, and peer_timeout > 0 seconds
  bounds the wait: waiting_for_peers). tpu: --tpu_name.
  Call it first: MultiWorkerMirroredStrategy fails once any TensorFlow op has run.
  """
  # MultiWorkerMirrored must configure collective ops before the TF context starts, so
  # nothing here may run an op (or list logical devices) before its branch.
  _check_accelerators(name, num_gpus, tpu_name)
  strategy = _create_strategy(name, tpu_name, tpu_zone, gcp_project, num_gpus,
                              num_tpu_cores, peer_timeout)
  devices = list(getattr(strategy.extended, "worker_devices", ()) or ())
  logging.info("Strategy %s: %d replica(s) on %s", name, strategy.num_replicas_in_sync,
               ", ".join(devices) or "the TPU")
  return strategy


_NO_ACCELERATOR_CAUSE = (
    "the usual cause is a CPU-only TensorFlow (pip install 'tensorflow[and-cuda]') or a "
    "driver that does not work (run nvidia-smi); or drop the flag to run on what is there")


def _check_accelerators(name, num_gpus, tpu_name):
  """Stops a run that asked for accelerators TensorFlow does not see.

  Physical devices only: listing them does not start the TensorFlow context, which
  MultiWorkerMirroredStrategy needs untouched.
  """
  if name == "tpu":
    if not tpu_name and not tf.config.list_physical_devices("TPU"):
      raise errors.UserError(
          "--use_tpu (or --distribution_strategy=tpu) asks for a TPU, but TensorFlow sees "
          "no local TPU and no --tpu_name (or --master) names one; pass --tpu_name, or "
          "drop --use_tpu to run on the CPU/GPU")
    return
  if num_gpus:
    gpus = tf.config.list_physical_devices("GPU")
    if num_gpus > len(gpus):
      raise errors.UserError(
          f"--num_gpus={num_gpus} (--distribution_strategy={name}) asks for {num_gpus} "
          f"GPU(s), but TensorFlow sees {len(gpus)}"
          + (f" ({', '.join(g.name for g in gpus)})" if gpus else "")
          + f": {_NO_ACCELERATOR_CAUSE}")


def _create_strategy(name, tpu_name, tpu_zone, gcp_project, num_gpus, num_tpu_cores,
                     peer_timeout=0):
  if name == "one_device":
    gpus = tf.config.list_physical_devices("GPU")
    return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
  if name == "mirrored":
    gpus = tf.config.list_logical_devices("GPU")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    if num_gpus:  # _check_accelerators: that many GPUs are there
      devices = devices[:num_gpus]
    return tf.distribute.MirroredStrategy(devices=devices)
  if name == "multi_worker_mirrored":
    raw = os.environ.get("TF_CONFIG")
    if not raw:
      logging.warning("multi_worker_mirrored without TF_CONFIG: running as a single worker")
      return tf.distribute.MultiWorkerMirroredStrategy()
    config = parse_tf_config(raw)
    with waiting_for_peers(config, peer_timeout):
      return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=tpu_name, zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
    if num_tpu_cores and strategy.num_replicas_in_sync != num_tpu_cores:
      raise errors.UserError(
          f"--num_tpu_cores={num_tpu_cores}: the TPU {tpu_name} has "
          f"{strategy.num_replicas_in_sync} cores")
    return strategy
  raise errors.UserError(
      f"--distribution_strategy={name}: use one_device, mirrored, multi_worker_mirrored or tpu")


_TF_CONFIG_EXAMPLE = ('{"cluster": {"worker": ["host1:port", "host2:port"]}, '
                      '"task": {"type": "worker", "index": 0}}')


# The task types MultiWorkerMirroredStrategy knows (an evaluator takes no part in training).
_TASK_TYPES = ("chief", "worker", "evaluator")


def parse_tf_config(raw):
  """TF_CONFIG's JSON, checked before TensorFlow reads it: one UserError line for each
  way it can be wrong (not JSON, no cluster, a job that is not a list of host:port
  addresses, an unknown task type, an index out of range or negative, a task that is not
  in the cluster). Returns the decoded dict."""
  def bad(what):
    return errors.UserError(f"TF_CONFIG: {what}; expected JSON like {_TF_CONFIG_EXAMPLE}")
  try:
    config = json.loads(raw)
  except ValueError as exc:
    raise bad(f"not valid JSON ({exc})") from None
  if not isinstance(config, dict):
    raise bad(f"a JSON {type(config).__name__}, not an object")
  cluster = config.get("cluster")
  if not isinstance(cluster, dict) or not cluster:
    raise bad("no \"cluster\" object naming each job's host:port addresses")
  for job, addresses in cluster.items():
    if job not in _TASK_TYPES:
      raise bad(f"cluster job {job!r} is not one of {', '.join(_TASK_TYPES)}")
    if (not isinstance(addresses, list) or not addresses
        or not all(isinstance(a, str) and a.rpartition(":")[2].isdigit() for a in addresses)):
      raise bad(f"cluster job {job!r} is {json.dumps(addresses)}, not a list of host:port "
                "addresses")
  task = config.get("task")
  if not isinstance(task, dict):
    raise bad("no \"task\" object saying which task this process is")
  kind, index = task.get("type"), task.get("index")
  if kind not in _TASK_TYPES:
    raise bad(f"task type {kind!r} is not one of {', '.join(_TASK_TYPES)}")
  if kind not in cluster and kind != "evaluator":
    raise bad(f"task type {kind!r} has no job in the cluster (jobs: {', '.join(cluster)})")
  if not isinstance(index, int) or isinstance(index, bool):
    raise bad(f"task index {json.dumps(index)} is not an integer")
  size = len(cluster.get(kind, ()))
  if index < 0 or (kind != "evaluator" and index >= size):
    raise bad(f"task index {index} is out of range: the cluster's {kind!r} job has {size} "
              f"address(es), so the index is 0 to {size - 1}")
  return config


@contextlib.contextmanager
def waiting_for_peers(config, timeout=0):
  """Around MultiWorkerMirroredStrategy's creation, which blocks until every task of the
  cluster has connected: says for whom it waits before it blocks (the wait is in C++ and
  holds the interpreter, so nothing can be said during it), and with timeout > 0 ends it
  after that many seconds with one UserError line naming the tasks (nothing has been
  written yet: the strategy comes before output_dir). timeout 0 waits as TensorFlow does,
  as long as it takes."""
  kind, index = config["task"]["type"], config["task"]["index"]
  cluster = config["cluster"]
  me = cluster[kind][index] if kind in cluster else "?"
  peers = [f"{job} {i} at {address}" for job, addresses in cluster.items()
           for i, address in enumerate(addresses) if (job, i) != (kind, index)]
  whom = ", ".join(peers) or "no other task"
  bound = f"at most {timeout:g} s (--multi_worker_timeout)" if timeout else (
      "as long as it takes (--multi_worker_timeout=N to bound it)")
  logging.info("Waiting for the other tasks of TF_CONFIG's cluster to connect: %s (this is "
               "%s %d at %s); waiting %s", whom, kind, index, me, bound)
  start = time.monotonic()
  if timeout and kind in ("chief", "worker"):
    _bound_the_wait_for_peers(cluster, timeout)
  try:
    yield
  except tf.errors.DeadlineExceededError:
    if not timeout:
      raise
    raise errors.UserError(
        f"TF_CONFIG: {kind} {index} waited {time.monotonic() - start:.0f} s "
        f"(--multi_worker_timeout={timeout:g}) for the other tasks to connect and some never "
        f"did: {whom}; start every task of the cluster (same TF_CONFIG cluster, each its "
        "own task), check the addresses and that their ports are reachable") from None
  logging.info("Every task of the cluster connected after %.0f s", time.monotonic() - start)


def _bound_the_wait_for_peers(cluster, timeout):
  """Configures TensorFlow's coordination service as MultiWorkerMirroredStrategy would
  (it keeps a configuration already there), with a registration deadline: every task,
  the leader included (a registration barrier), then fails with DeadlineExceededError
  after `timeout` seconds instead of waiting for ever. TensorFlow has no public switch
  for this; these are the internal calls the strategy itself makes."""
  spec = tf.train.ClusterSpec(cluster)
  tf_context.context().configure_coordination_service(
      service_type="standalone",
      service_leader=multi_worker_util.coordination_leader(spec),
      coordinated_jobs=[coordination_config_pb2.CoordinatedJob(
          name=job, num_tasks=spec.num_tasks(job))
                        for job in ("chief", "worker") if job in spec.jobs],
      cluster_register_timeout_in_ms=int(timeout * 1000))
  tf_context.context().coordination_service.cluster_register_with_barrier = True


def setup_determinism(seed, deterministic=None):
  """Seeds Python, NumPy, TF and Keras; switches on op determinism if asked.

  deterministic=None means: on when no GPU/TPU is visible (cpu_choice.accelerator_visible;
  CPU runs are cheap to make reproducible; on accelerators deterministic kernels can be
  much slower). Returns the effective setting.
  """
  if deterministic is None:
    deterministic = not cpu_choice.accelerator_visible()
  keras.utils.set_random_seed(int(seed))
  if deterministic:
    tf.config.experimental.enable_op_determinism()
  return bool(deterministic)
