"""The pretraining data's worker pool: chunks of token ids in, serialized records out.

The workers are spawned (not forked: the parent runs TensorFlow threads)
and import this module, which needs NumPy only: pretraining_instances and
pretraining_records, never TensorFlow. `run_tasks` hands the results back in task order, so
the output bytes do not depend on the number of workers.
"""

import collections
import multiprocessing

from bert.pretraining import pretraining_records
from bert.pretraining import pretraining_instances


# num_workers=0: the calling process does the work itself (the library's default; each
# command's is one worker per CPU).
IN_THIS_PROCESS = 0

_WORKER = {}


def _init_worker(opt):
  _WORKER["opt"] = opt
  _WORKER["encoder"] = pretraining_records.ExampleEncoder(opt.max_seq_length,
                                                     opt.max_predictions_per_seq)
  _WORKER["arrays"] = pretraining_instances.option_arrays(opt)


def _process_chunk(task):
  """Worker entry: (seed, flat_ids, sentence_splits, doc_sentence_counts) -> results."""
  seed, flat_ids, splits, counts = task
  return pretraining_instances.create_chunk_examples(
      flat_ids, splits, counts, _WORKER["opt"], seed, _WORKER["encoder"], _WORKER["arrays"])


def start_workers(opt, num_workers):
  """The spawned worker pool (None for num_workers=0, where this process does the work)."""
  if num_workers == 0:
    _init_worker(opt)
    return None
  # Spawned, not forked: the parent runs TensorFlow threads, and the workers need only
  # NumPy. Started before TensorFlow is imported, so that both start-ups overlap.
  return multiprocessing.get_context("spawn").Pool(
      num_workers, initializer=_init_worker, initargs=(opt,))


def run_tasks(tasks, pool, num_workers, write):
  """Runs the tasks in this process or on the pool; results are written in task order,
  so the bytes do not depend on num_workers."""
  if pool is None:
    for task in tasks:
      write(_process_chunk(task))
    return
  # Bounded look-ahead keeps memory flat (imap would tokenize the whole corpus ahead).
  pending = collections.deque()
  for task in tasks:
    pending.append(pool.apply_async(_process_chunk, (task,)))
    while len(pending) > num_workers:
      write(pending.popleft().get())
  while pending:
    write(pending.popleft().get())
  pool.close()
  pool.join()
