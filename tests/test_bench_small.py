"""benchmarks/small_step.py's FLOP count and profile_small_step.py's op classes (issue 26).

No timing here (speed figures live in benchmarks/); these check the arithmetic and the
classification that the benchmark's figures rest on.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks"))

import profile_small_step  # noqa: E402  pylint: disable=g-import-not-at-top
import small_step  # noqa: E402  pylint: disable=g-import-not-at-top


def test_flops_per_sequence_by_hand():
  # Korean: encoder 6 x 4 x (4*128^2 + 2*128*512) x 64 = 301,989,888; attention
  # 12 x 4 x 64^2 x 128 = 25,165,824; masked LM 6 x 10 x (128^2 + 128 x 15,742) =
  # 121,881,600; pooler + NSP 6 x (128^2 + 2 x 128) = 99,840.
  assert small_step.flops_per_sequence("korean") == 449_137_152
  # Demo: 150,994,944 + 12,582,912 + 6 x 10 x (16,384 + 512,000) + 99,840.
  assert small_step.flops_per_sequence("demo") == 195_380_736


@pytest.mark.parametrize("name,expected", [
    ("while/body/_1/while/AdamWeightDecay/mul_8:Mul", "optimizer update"),
    ("while/body/_1/gradient_tape/while/bert_pretraining_1/cls_predictions_1/Tensordot/"
     "MatMul/MatMul_1:_MklMatMul", "MLM output over the vocabulary: matmuls"),
    ("while/body/_1/while/bert_pretraining_1/cls_predictions_1/MatMul:_MklMatMul",
     "MLM output over the vocabulary: matmuls"),
    ("while/body/_1/while/SparseSoftmaxCrossEntropyWithLogits/"
     "SparseSoftmaxCrossEntropyWithLogits:SparseSoftmaxCrossEntropyWithLogits",
     "MLM softmax cross-entropy"),
    ("while/body/_1/while/bert_pretraining_1/bert_1/layer_1_1/dropout_4_1/stateless_dropout/"
     "stateless_random_uniform/StatelessRandomUniformV2:StatelessRandomUniformV2",
     "dropout: random numbers"),
    ("while/body/_1/gradient_tape/while/bert_pretraining_1/bert_1/layer_3_1/intermediate_1/"
     "Tensordot/MatMul/MatMul:_MklMatMul", "encoder matmuls"),
    ("while/body/_1/while/bert_pretraining_1/bert_1/layer_0_1/MatMul_1:BatchMatMulV2",
     "attention scores and context"),
    ("while/body/_1/while/bert_pretraining_1/bert_1/embeddings_1/LayerNorm_1/mul:Mul",
     "LayerNorm"),
    ("while/body/_1/while/AddN_34/inputs_1:UnsortedSegmentSum", "embedding gradient"),
    ("while/body/_1/while/clip_by_global_norm/mul_1:Mul", "gradient clipping"),
])
def test_profile_op_classes(name, expected):
  assert profile_small_step.classify(name).startswith(expected)
