"""benchmarks/bench_peers.py compares runtimes only on the same batches.

The batching every side runs is one function (peer_batches.make_batches); its sorted
order is the one predict_litert.py's predictor uses; each side reports a digest of what it
ran, and the driver refuses to keep a round in which any side ran something else. Nothing
here times anything or loads a model.
"""
import numpy as np
import pytest

from benchmarks import bench_peers
from benchmarks.parts import peer_batches
from benchmarks.parts import peer_worker

LENGTHS = [9, 3, 7, 3, 12, 5, 7, 3, 20, 1]


def test_file_order_keeps_rows_in_place_and_cuts_every_batch_size():
  assert peer_batches.make_batches(LENGTHS, 4, "file") == [
      [0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_sorted_order_is_stable_by_length():
  batches = peer_batches.make_batches(LENGTHS, 4, "sorted")
  assert batches == [[9, 1, 3, 7], [5, 2, 6, 0], [4, 8]]
  flat = [i for b in batches for i in b]
  assert sorted(flat) == list(range(len(LENGTHS)))
  assert [LENGTHS[i] for i in flat] == sorted(LENGTHS)


def test_bad_order_or_batch_size_is_refused():
  with pytest.raises(ValueError, match="order"):
    peer_batches.make_batches(LENGTHS, 4, "shuffled")
  with pytest.raises(ValueError, match="batch_size"):
    peer_batches.make_batches(LENGTHS, 0, "file")


def test_sorted_plan_is_the_order_predict_litert_runs():
  """The LiteRT predictor's own batching (bert.litert.predictor.LiteRTModel.predict) runs
  exactly the sorted plan's batches: the bench's sorted rows are what users get."""
  from bert.litert import predictor  # pylint: disable=g-import-not-at-top
  model = predictor.LiteRTModel.__new__(predictor.LiteRTModel)
  seen = []

  def fake_run(rows):
    seen.append([int(ids[0]) for ids, _ in rows])
    return {"p": np.zeros((len(rows), 2), np.float32)}
  model.run = fake_run
  rows = [([i] + [0] * (n - 1), [0] * n) for i, n in enumerate(LENGTHS)]
  model.predict(rows, 4, "p")
  assert seen == peer_batches.make_batches(LENGTHS, 4, "sorted")


def test_digest_tells_orders_and_groupings_apart():
  sorted_batches = peer_batches.make_batches(LENGTHS, 4, "sorted")
  digest = peer_batches.order_digest(sorted_batches)
  assert digest == peer_batches.order_digest([list(b) for b in sorted_batches])
  assert digest != peer_batches.order_digest(peer_batches.make_batches(LENGTHS, 4, "file"))
  assert digest != peer_batches.order_digest(peer_batches.make_batches(LENGTHS, 5, "sorted"))
  flat = [i for b in sorted_batches for i in b]
  assert digest != peer_batches.order_digest([flat])  # same rows, other grouping


def test_a_side_reports_the_digest_of_what_it_ran():
  """peer_worker.run_plan pads each batch to its own longest row, fills every row's
  probabilities and returns the digest of the batches in the order it ran them."""
  rows = [np.arange(1, n + 1, dtype=np.int32) for n in LENGTHS]
  batches = peer_batches.make_batches(LENGTHS, 4, "sorted")
  seen = []

  def run(ids, mask, segments):
    batch = batches[len(seen)]
    seen.append(ids.shape[1])
    assert mask.sum(1).tolist() == [LENGTHS[i] for i in batch]
    assert (ids[:, 0] == 1).all() and not segments.any()
    return np.tile([0.25, 0.75], (len(ids), 1)).astype(np.float32)
  probabilities = np.zeros((len(rows), 2), np.float32)
  digest = peer_worker.run_plan(run, rows, batches, probabilities)
  assert digest == peer_batches.order_digest(batches)
  assert seen == [max(LENGTHS[i] for i in b) for b in batches]
  assert (probabilities[:, 1] == 0.75).all()


def test_bench_refuses_a_round_where_a_side_ran_another_order():
  plan = {"digest": peer_batches.order_digest(
      peer_batches.make_batches(LENGTHS, 4, "sorted"))}
  other = peer_batches.order_digest(peer_batches.make_batches(LENGTHS, 4, "file"))

  def run_side(side):
    return {"digest": other if side == "ort_int8" else plan["digest"], "whole_s": 1.0,
            "run_s": 1.0}
  with pytest.raises(peer_batches.OrderMismatch, match="ort_int8"):
    bench_peers.checked_round(plan, ["litert_int8", "ort_int8", "tf_f32"], run_side)
  with pytest.raises(peer_batches.OrderMismatch, match="tf_f32"):
    bench_peers.checked_round(plan, ["litert_int8", "tf_f32"],
                              lambda side: {} if side == "tf_f32" else run_side(side))
  results = bench_peers.checked_round(plan, ["litert_int8", "tf_f32"], run_side)
  assert sorted(results) == ["litert_int8", "tf_f32"]


def test_no_report_without_sides():
  with pytest.raises(peer_batches.OrderMismatch):
    peer_batches.check_same_order("abc", {})
