"""benchmarks/bench_accelerator.py times the commands' own step: `--quick` end to end, one
configuration in process (the loop's make_train_step, its float16 loss scale), the FLOP
count and the data-sheet peaks."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import tiny

from benchmarks import bench_accelerator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW_NUMBERS = ("examples_per_second", "seconds", "achieved_tflops",
               "model_tflops_per_example", "peak_tflops_measured", "mfu_measured")


def _positive_finite(value):
  return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def _check_row(r, device):
  assert r["status"] == "ok", r
  for key in ROW_NUMBERS:
    assert _positive_finite(r[key]), (key, r)
  assert r["peak_tflops_measured"] == device["peaks"][r["dtype"]]
  assert math.isclose(r["achieved_tflops"],
                      r["examples_per_second"] * r["model_tflops_per_example"], rel_tol=1e-9)
  assert math.isclose(r["mfu_measured"], r["achieved_tflops"] / (
      r["peak_tflops_measured"] * r["replicas"]), rel_tol=1e-9)
  assert math.isclose(r["examples_per_second"], r["steps"] * r["batch"] / r["seconds"],
                      rel_tol=1e-9)
  assert math.isfinite(r["loss"]) and r["loss"] > 0
  # float16 trains with the loop's dynamic loss scale: 2**15 at the start, unchanged over
  # a few finite steps (it halves on an overflow, doubles after 2000 good steps).
  assert r["loss_scale"] == (2.0 ** 15 if r["dtype"] == "float16" else None)
  if device["kind"] == "CPU":
    assert r["peak_tflops"] is None and r["mfu"] is None  # no data sheet for a CPU
    assert r["peak_memory_bytes"] > 100 * 2**20  # TensorFlow alone is ~0.5 GB
    assert r["max_batch"] is None and r["max_batch_note"] == "not searched"


def test_one_configuration_trains_with_the_loops_own_step(monkeypatch):
  # The step timed is loop.make_train_step's, built as run_pretraining builds it
  # (float16: the loss scaling of --dtype=float16).
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  built = []
  real = loop.make_train_step

  def spy(model, optimizer, loss_fn, metric_names, config, state):
    built.append((loss_fn.__name__, model.get_layer("bert").compute_dtype,
                  config.loss_scaling, config.jit_compile, config.global_batch_size,
                  sorted(metric_names)))
    return real(model, optimizer, loss_fn, metric_names, config, state)

  monkeypatch.setattr(loop, "make_train_step", spy)
  args = bench_accelerator.parse_args(["--quick", "--workloads=pretrain128",
                                       "--dtypes=float16", "--xla=off"])
  report = bench_accelerator.benchmark(args)
  import keras  # pylint: disable=g-import-not-at-top
  assert keras.mixed_precision.global_policy().name == "float32"  # left as it was
  assert built == [("pretraining_loss", "float16", True, False, 2,
                    ["masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                     "next_sentence_loss"])]
  device = report["device"]
  assert device["kind"] in ("CPU", "GPU") and device["count"] >= 1
  assert set(device["peaks"]) == {"float32", "bfloat16", "float16"}
  assert all(_positive_finite(v) for v in device["peaks"].values())
  [row] = report["rows"]
  assert (row["model"], row["workload"], row["seq"], row["predictions"], row["dtype"],
          row["xla"], row["batch"], row["steps"]) == (
              "tiny", "pretrain128", 32, 5, "float16", False, 2, 2)
  _check_row(row, device)
  table = bench_accelerator.format_table(device, report["rows"])
  assert "| MFU (data sheet) | MFU (measured peak) |" in table
  assert "| tiny | pretrain128 | 32 | float16 | off | 2 |" in table


@pytest.mark.slow  # the whole --quick matrix, 9 configurations (make test-slow)
def test_quick_run_writes_the_whole_matrix_as_json(tmp_path):
  out = tmp_path / "accelerator.json"
  proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_accelerator", "--quick",
                         f"--json_out={out}"],
                        cwd=ROOT, capture_output=True, text=True, timeout=900,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(out.read_text())
  device = report["device"]
  rows = report["rows"]
  # Every dtype x XLA setting on the first workload, the other two once; all measured.
  assert [(r["workload"], r["dtype"], r["xla"]) for r in rows] == [
      ("pretrain128", d, x) for d in ("float32", "bfloat16", "float16")
      for x in (False, True)] + [("pretrain512", "float32", False),
                                 ("squad384", "float32", False)]
  assert [(r["seq"], r["predictions"]) for r in rows[-3:]] == [(32, 5), (64, 10), (48, 0)]
  for r in rows:
    assert r["model"] == "tiny" and r["steps"] == 2 and r["batch"] == 2
    _check_row(r, device)
  assert "| tiny | pretrain128 | 32 | float16 | on | 2 |" in proc.stdout
  assert "| tiny | squad384 | 48 | float32 | off | 2 |" in proc.stdout


def test_datasheet_peaks_by_device_name():
  # H100 SXM's dense figures; float32 compared with TF32's when TensorFloat-32 is on.
  peaks, source = bench_accelerator.datasheet_peaks("NVIDIA H100 80GB HBM3", tf32=True)
  assert peaks == {"float32": 495.0, "bfloat16": 989.0, "float16": 989.0}
  assert source == "data sheet (H100, dense, float32 as TF32)"
  peaks, _ = bench_accelerator.datasheet_peaks("NVIDIA H100 PCIe", tf32=False)
  assert peaks == {"float32": 51.0, "bfloat16": 756.0, "float16": 756.0}
  assert bench_accelerator.datasheet_peaks("NVIDIA A100-SXM4-40GB", False)[0]["bfloat16"] == 312.0
  assert bench_accelerator.datasheet_peaks("Tesla T4", True) == ({}, "no data sheet for 'Tesla T4'")


def test_matmul_parameter_count_matches_the_model():
  from bert import modeling  # pylint: disable=g-import-not-at-top
  config = dict(tiny.TINY_SHAPE, vocab_size=53)
  encoder = modeling.BertModel(modeling.BertConfig(type_vocab_size=2, **config))
  dense = sum(int(np.prod(v.shape)) for v in encoder.weights
              if "layer_" in v.path and "LayerNorm" not in v.path)
  assert dense == bench_accelerator.encoder_matmul_params(**config) == 3 * (
      4 * 32 * 32 + 2 * 32 * 37 + 5 * 32 + 37)
  # BERT-Base: with the embeddings (and their LayerNorm), the layers' LayerNorms and the
  # pooler, the published 109,482,240 (the count test_modeling checks on the real model).
  base = bench_accelerator.MODELS["base"]
  h = base["hidden_size"]
  assert bench_accelerator.encoder_matmul_params(**base) == 85_017_600
  assert ((30522 + 512 + 2) * h + 2 * h + 85_017_600 + 12 * 4 * h + h * h + h
          == 109_482_240)
  assert bench_accelerator.encoder_matmul_params(**bench_accelerator.MODELS["large"]) == (
      24 * (4 * 1024**2 + 2 * 1024 * 4096 + 5 * 1024 + 4096))


def test_flops_formula_by_hand():
  config = dict(hidden_size=4, num_hidden_layers=2, intermediate_size=6, vocab_size=10)
  n = 2 * (4 * 16 + 2 * 4 * 6 + 5 * 4 + 6)                     # 300
  attention = 12 * 2 * 4 * 8 * 8                               # 6144
  mlm = 6 * (16 + 4 + 40 + 10) * 3 + 6 * (16 + 12 + 2)         # 1260 + 180
  assert bench_accelerator.model_flops_per_example(config, "pretrain", 8, 3) == (
      6 * n * 8 + attention + mlm)
  assert bench_accelerator.model_flops_per_example(config, "squad", 8, 0) == (
      6 * n * 8 + attention + 6 * 10 * 8)
