"""benchmarks/parts/small_step.py's FLOP count and profile_small_step.py's op classes.

No timing here (speed figures live in benchmarks/); these check the arithmetic and the
classification that the benchmark's figures rest on.
"""
import pytest

from benchmarks.parts import small_step
from benchmarks.studies import profile_small_step


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


def test_step_floor_flops_by_hand():
  from benchmarks.parts import matmul_floor  # pylint: disable=g-import-not-at-top
  # MiniLM at [32, 14], 448 rows. Layers 1-5: 20 x 2 x 448 x 384^2 = 2,642,411,520 (Q, K,
  # V, output); 10 x 2 x 448 x 384 x 1536 = 5,284,823,040 (intermediate, output);
  # attention 5 x 2 x 2 x 384 x 14 x 32 x 14 = 48,168,960. Layer 6 at [CLS] only: key and
  # value 2 x 2 x 448 x 384^2 = 264,241,152; query and output 2 x 2 x 32 x 384^2 =
  # 18,874,368; feed-forward 2 x 2 x 32 x 384 x 1536 = 75,497,472; attention 2 x 2 x 384
  # x 1 x 32 x 14 = 688,128. Pooler 2 x 32 x 384^2 = 9,437,184; classifier 2 x 32 x 384
  # x 2 = 49,152. (Every layer at every row, as transformers computes it: 9,579,970,560.)
  gemms = matmul_floor.forward_gemms(batch=32, seq=14, **matmul_floor.MINILM)
  assert matmul_floor.flops(gemms, training=False) == 8_344_190_976
  assert matmul_floor.flops(gemms, training=True) == 3 * 8_344_190_976


def test_step_floor_runs_every_matmul_once():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from benchmarks.parts import matmul_floor  # pylint: disable=g-import-not-at-top
  gemms = matmul_floor.forward_gemms(layers=2, hidden=12, heads=3, intermediate=20, batch=3,
                                   seq=5)
  # layer 1: 4 + 1 + 1 + 1 + 1; pooler, classifier: 1 + 1; layer 2 ([CLS] only):
  # 2 + 2 + 1 + 1 + 1 + 1
  count = sum(c for c, *_ in gemms)
  assert count == 18
  for training, per_gemm in ((False, 1), (True, 3)):
    operands = matmul_floor._operands(tf, gemms, training)  # pylint: disable=protected-access
    graph = matmul_floor.gemm_function(False).get_concrete_function(operands).graph
    types = [op.type for op in graph.get_operations()]
    # 2-D as in the model: Q, K, V, output, intermediate, output (twice), pooler,
    # classifier.
    assert types.count("MatMul") == 14 * per_gemm
    assert types.count("BatchMatMulV2") == 4 * per_gemm  # attention: batch x heads = 9


@pytest.mark.parametrize("shape", ["korean", "demo"])
def test_step_floor_pretraining_gemms_match_small_step_flops(shape):
  from benchmarks.parts import matmul_floor  # pylint: disable=g-import-not-at-top
  s = small_step.SHAPES[shape]
  gemms = matmul_floor.forward_gemms(**s)
  assert matmul_floor.flops(gemms, training=True) == s["batch"] * small_step.flops_per_sequence(
      shape)


def test_train_run_classifier_trains_the_commands_step():
  """train_run's classifier task (profile_finetuning's step): run_classifier's model and
  loss through loop.make_train_step, on labels of two classes. A head initialised at
  standard deviation 0.02 gives logits near 0, so the first steps' loss is about ln 2;
  on its 16 repeated examples the loop then lowers it."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from benchmarks.parts import train_run  # pylint: disable=g-import-not-at-top
  features = train_run.synthetic_features("classifier", 6, 8, 0, 50, seed=1)
  assert sorted(features) == ["input_ids", "input_mask", "label_ids", "segment_ids"]
  assert features["label_ids"].shape == (6,) and set(features["label_ids"]) <= {0, 1}
  config = dict(train_run.CONFIGS["small"], num_hidden_layers=1, vocab_size=50)
  run = train_run.build(config, task="classifier", seq=8, batch=4, learning_rate=1e-3)
  losses = [run.loop(3) for _ in range(4)]
  assert abs(losses[0] - np.log(2)) < 0.05, losses
  assert losses[-1] < losses[0] - 0.05, losses
