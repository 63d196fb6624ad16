"""The encoder layer's CPU graph fuses: every dense layer is one fused matmul (bias, and
with oneDNN the GELU, inside it), with oneDNN's ops on and off; each LayerNorm is the same
portable two-pass statistics on a CPU as anywhere, with no CPU-only op in it.

What runs is read from TensorFlow's own optimized graph (tests/support/optimized_graph.py),
in a process per setting: TF_ENABLE_ONEDNN_OPTS is read once, when TensorFlow starts (the
setting this test process started with is read in this process).
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
# What a LayerNorm's statistics are computed with: the row's mean, the centred row, its
# square, their mean, the reciprocal square root.
NORM_PIECES = ("Mean", "SquaredDifference", "Rsqrt", "Sub", "Square")
# One LayerNorm's statistics, as it runs (tests/core/test_layer_norm_precision.py has why).
TWO_PASS = ["Mean", "Mean", "Rsqrt", "Square", "Sub"]


@functools.lru_cache(maxsize=None)
def _variants(onednn):
  if cpu_choice.onednn_state(cpu_choice.this_cpu())[0] == (onednn == "1"):
    # This process's TensorFlow started with that setting: its graphs are read here.
    return optimized_graph.every_variant()
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
                  if op in ("Tanh", "Pow", "Square") and "Gelu" not in name
                  and "LayerNorm" not in name]
  assert hand_written == []


def layer_norms(found):
  """{LayerNorm name scope: sorted statistics ops and the dtypes they run in}, and every
  op with a batch norm's or oneDNN's layer norm's name."""
  norms = {}
  for op, _, dtype, name in found:
    parts = name.split("/")
    inside = [index for index, part in enumerate(parts) if "LayerNorm" in part]
    if inside and op in NORM_PIECES and parts[0] != "gradients":
      norms.setdefault("/".join(parts[:inside[0] + 1]), []).append((op, dtype))
  one_op = [op for op, _, _, _ in found if "BatchNorm" in op or op == "_MklLayerNorm"]
  return {scope: sorted(ops) for scope, ops in norms.items()}, one_op


def assert_two_pass_layer_norms(found, count=LAYER_NORMS):
  """`count` LayerNorms, each the portable two-pass statistics in float32, and no one-op
  form: neither the fused batch norm it was once written as nor oneDNN's layer norm."""
  norms, one_op = layer_norms(found)
  assert one_op == []
  assert list(norms.values()) == [[(op, "float32") for op in TWO_PASS]] * count, norms


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
  assert not [op for op, _, _, name in found
              if op in ("Tanh", "Pow", "Square", "Erfc") and "LayerNorm" not in name]
  assert ("_MklFusedBatchMatMulV2", ["Mul", "Add"], "float32") in [
      (op, f, d) for op, f, d, _ in found]


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_each_layer_norm_is_the_portable_two_pass_form_at_inference(onednn):
  # TensorFlow's remapper has a oneDNN one-op layer norm for Keras' old fused-batch-norm
  # form and for a few decomposed patterns, but none of them matches the two-pass
  # statistics on variables that this graph holds: the ops run as written, and the
  # graph is the one a GPU or a TPU would run.
  assert_two_pass_layer_norms(nodes(onednn))
  assert_two_pass_layer_norms(nodes(onednn, "encoder float32"),
                              1 + LAYER_NORMS * optimized_graph.ENCODER_LAYERS)


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
  assert_two_pass_layer_norms(found)


def test_without_onednn_each_dense_layer_is_one_fused_matmul_with_its_bias():
  found = nodes("0")
  no_unfused_dense(found)
  matmuls = fused(found)
  assert len(matmuls) == DENSE_LAYERS
  assert {tuple(f) for _, f, _ in matmuls} == {("BiasAdd",)}


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_training_keeps_the_bias_in_the_matmul(onednn):
  found = nodes(onednn, "float32 training")
  # Forward: the six fused matmuls; backward: plain matmuls for the gradients, and no
  # BiasAdd anywhere (its gradient is BiasAddGrad).
  assert len(fused(found)) == DENSE_LAYERS
  assert "BiasAdd" not in [op for op, _, _, _ in found]
  # Each LayerNorm forward is the two-pass statistics, and its gradient is theirs: no
  # fused batch norm forward or backward.
  assert_two_pass_layer_norms(found)
