"""The one batching every side of benchmarks/bench_peers.py runs, and the check that it did.

No TensorFlow, torch or ONNX Runtime here: the driver (main venv), the ONNX Runtime sides
(.venv-hf) and the tests import this same module, so "the same batches" is one function,
not two copies that could drift.

  make_batches(lengths, batch_size, order)  -> [[row index, ...], ...]
      order "file":   rows in file order, cut every batch_size rows;
      order "sorted": rows stably sorted by length (what predict_litert.py does), then cut.
  order_digest(batches)                      -> a hex digest of the batches, in order
  check_same_order(expected, ran)            -> raises OrderMismatch naming every side that
                                                ran other batches than the driver planned
"""

import hashlib
import json

ORDERS = ("file", "sorted")


class OrderMismatch(RuntimeError):
  """A side ran other batches (or another order) than the one every side was given."""


def make_batches(lengths, batch_size, order):
  """Row indices per batch. lengths: each row's token count (the sort key). The sort is
  stable (ties keep file order), as bert.litert.predictor.LiteRTModel.predict sorts."""
  if batch_size < 1:
    raise ValueError(f"batch_size={batch_size}: must be at least 1")
  if order == "file":
    rows = list(range(len(lengths)))
  elif order == "sorted":
    rows = sorted(range(len(lengths)), key=lambda i: lengths[i])
  else:
    raise ValueError(f"order={order!r}: one of {', '.join(ORDERS)}")
  return [rows[start:start + batch_size] for start in range(0, len(rows), batch_size)]


def order_digest(batches):
  """sha256 of the batches as run: the same rows, grouped the same way, in the same order."""
  text = json.dumps([[int(i) for i in batch] for batch in batches], separators=(",", ":"))
  return hashlib.sha256(text.encode("ascii")).hexdigest()


def check_same_order(expected, ran):
  """expected: the planned digest; ran: {side: the digest that side reports it ran}.
  Raises OrderMismatch (no figures are reported) unless every side ran `expected`."""
  if not ran:
    raise OrderMismatch("no side reported the batches it ran")
  wrong = sorted(side for side, digest in ran.items() if digest != expected)
  if wrong:
    raise OrderMismatch(
        f"{', '.join(wrong)} ran other batches than the planned order "
        f"({expected[:12]}): not an equal comparison, no ratio reported")


def write_plan(path, lengths, batch_size, order):
  """The plan file a side reads: its batches and their digest."""
  batches = make_batches(lengths, batch_size, order)
  plan = {"order": order, "batch_size": batch_size, "batches": batches,
          "digest": order_digest(batches)}
  with open(path, "w", encoding="utf-8") as handle:
    json.dump(plan, handle)
  return plan
