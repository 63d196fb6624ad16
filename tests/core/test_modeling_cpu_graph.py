"""The encoder layer's CPU graph fuses: every dense layer is one fused matmul (bias, and
with oneDNN the GELU, inside it), and each LayerNorm one op, with oneDNN's ops on and off.

What runs is read from TensorFlow's own optimized graph (tests/support/optimized_graph.py),
in a process per setting: TF_ENABLE_ONEDNN_OPTS is read once, when TensorFlow starts.
"""
import functools
import json
import os
import subprocess
import sys

import pytest

from bert.utils import cpu_choice
from conftest import ROOT
import optimized_graph

SCRIPT = os.path.join(ROOT, "tests", "support", "optimized_graph.py")
FUSED_MATMULS = ("_FusedMatMul", "_MklFusedMatMul", "_MklNativeFusedMatMul")
# The six dense layers of one encoder layer: query, key, value, attention output,
# intermediate, output.
DENSE_LAYERS = 6
# Its two LayerNorms: after attention, after the feed-forward layers.
LAYER_NORMS = 2
# What a LayerNorm's statistics would be computed with if it did not fuse.
NORM_PIECES = ("Mean", "SquaredDifference", "Rsqrt", "Sub", "Square")


@functools.lru_cache(maxsize=None)
def _variants(onednn):
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": onednn}
  result = subprocess.run([sys.executable, SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


def nodes(onednn, variant="float32"):
  """The optimized graph's nodes (op, fused ops, dtype, name) of one variant of
  optimized_graph.VARIANTS, with oneDNN's ops on ("1") or off ("0")."""
  return [tuple(node) for node in _variants(onednn)[variant]]


def fused(found):
  return [(op, fused_ops, dtype) for op, fused_ops, dtype, _ in found if op in FUSED_MATMULS]


def no_unfused_dense(found):
  """No plain MatMul, no BiasAdd after one, and no GELU written out by hand: the only
  Tanh or Pow left is tf.nn.gelu's own (its name scope is Gelu)."""
  ops = [op for op, _, _, _ in found]
  assert "MatMul" not in ops and "_MklMatMul" not in ops and "BiasAdd" not in ops, ops
  hand_written = [name for op, _, _, name in found
                  if op in ("Tanh", "Pow", "Square") and "Gelu" not in name]
  assert hand_written == []


def test_with_onednn_each_dense_layer_is_one_op_with_its_bias_and_gelu():
  found = nodes("1")
  no_unfused_dense(found)
  matmuls = fused(found)
  assert len(matmuls) == DENSE_LAYERS
  assert all(fused_ops[0] == "BiasAdd" for _, fused_ops, _ in matmuls)
  assert [f for _, f, _ in matmuls if "GeluApproximate" in f] == [["BiasAdd",
                                                                    "GeluApproximate"]]
  # No GELU op is left outside the matmul, and the scores' scale and mask are in the
  # batch matmul.
  assert not [op for op, _, _, _ in found if op in ("Tanh", "Pow", "Square", "Erfc")]
  assert ("_MklFusedBatchMatMulV2", ["Mul", "Add"], "float32") in [
      (op, f, d) for op, f, d, _ in found]


def test_with_onednn_each_layer_norm_is_one_op_at_inference():
  found = nodes("1")
  assert [d for op, _, d, _ in found if op == "_MklLayerNorm"] == ["float32"] * LAYER_NORMS
  assert not [op for op, _, _, _ in found if op in NORM_PIECES or "BatchNorm" in op]


def test_with_onednn_gelu_exact_fuses_as_the_exact_gelu():
  matmuls = fused(nodes("1", "float32 gelu_exact"))
  assert [f for _, f, _ in matmuls if f[-1].startswith("Gelu")] == [["BiasAdd", "GeluExact"]]


def test_with_onednn_every_layer_of_an_encoder_fuses_its_scores_scale_and_mask():
  # The layers share one attention bias, computed from input_mask inside the graph: each
  # layer's scores still take their scale and that bias inside the batch matmul.
  found = nodes("1", "encoder float32")
  assert [(op, f, d) for op, f, d, _ in found if op == "_MklFusedBatchMatMulV2"] == [
      ("_MklFusedBatchMatMulV2", ["Mul", "Add"], "float32")] * optimized_graph.ENCODER_LAYERS
  # The other batch matmul of each layer: the probabilities times the values.
  assert [op for op, _, _, _ in found if op == "_MklBatchMatMulV2"] == [
      "_MklBatchMatMulV2"] * optimized_graph.ENCODER_LAYERS


@pytest.mark.skipif(not cpu_choice.this_cpu().has_bfloat16,
                    reason="oneDNN runs bfloat16 only on a CPU with AVX512-BF16 or AMX")
def test_with_onednn_an_encoder_in_bfloat16_fuses_every_layers_scores():
  found = nodes("1", "encoder bfloat16")
  assert [(op, f, d) for op, f, d, _ in found if op == "_MklFusedBatchMatMulV2"] == [
      ("_MklFusedBatchMatMulV2", ["Mul", "Add"], "bfloat16")] * optimized_graph.ENCODER_LAYERS


@pytest.mark.skipif(not cpu_choice.this_cpu().has_bfloat16,
                    reason="oneDNN runs bfloat16 only on a CPU with AVX512-BF16 or AMX")
def test_with_onednn_bfloat16_fuses_in_bfloat16():
  found = nodes("1", "bfloat16")
  no_unfused_dense(found)
  matmuls = fused(found)
  assert len(matmuls) == DENSE_LAYERS and {d for _, _, d in matmuls} == {"bfloat16"}
  assert ("_MklFusedBatchMatMulV2", ["Mul", "Add"], "bfloat16") in [
      (op, f, d) for op, f, d, _ in found]
  # The softmax and both LayerNorms in float32.
  assert {d for op, _, d, _ in found if op in ("_MklSoftmax", "Softmax")} == {"float32"}
  assert [d for op, _, d, _ in found if op == "_MklLayerNorm"] == ["float32"] * LAYER_NORMS
  assert not [op for op, _, _, _ in found if op in NORM_PIECES]


def test_without_onednn_each_dense_layer_is_one_fused_matmul_with_its_bias():
  found = nodes("0")
  no_unfused_dense(found)
  matmuls = fused(found)
  assert len(matmuls) == DENSE_LAYERS
  assert {tuple(f) for _, f, _ in matmuls} == {("BiasAdd",)}
  # Each LayerNorm's statistics and normalisation are one fused batch norm.
  assert [op for op, _, _, _ in found if "Norm" in op] == ["FusedBatchNormV3"] * LAYER_NORMS
  assert not [op for op, _, _, _ in found if op in NORM_PIECES[:4]]


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_training_keeps_the_bias_in_the_matmul(onednn):
  found = nodes(onednn, "float32 training")
  # Forward: the six fused matmuls; backward: plain matmuls for the gradients, and no
  # BiasAdd anywhere (its gradient is BiasAddGrad).
  assert len(fused(found)) == DENSE_LAYERS
  assert "BiasAdd" not in [op for op, _, _, _ in found]
  # Each LayerNorm forward and backward is a fused batch norm and its fused gradient.
  norms = sorted(op for op, _, _, _ in found if "Norm" in op)
  prefix = "_MklNative" if onednn == "1" else ""
  assert norms == sorted([f"{prefix}FusedBatchNormGradV3", f"{prefix}FusedBatchNormV3"]
                         * LAYER_NORMS)
