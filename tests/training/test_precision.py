"""Correctness an accelerator run depends on, checked on CPU.

* A model takes its precision as an argument (`dtype`, as keras-hub's BertBackbone):
  built with dtype="mixed_bfloat16" under the float32 global policy it has the variables,
  the per-layer dtypes and the outputs, bit for bit, of the same model built under the
  global mixed_bfloat16 policy, and it leaves the global policy as it was.
* Under the mixed_bfloat16 and mixed_float16 policies, LayerNorm (its statistics and its
  output), the attention softmax and the losses compute in float32, while the matmuls
  run in the low-precision type: checked on the layers' dtypes and on every op of the
  traced training forward pass.
* Prediction (evaluation.predict, which every task's --do_predict and evaluation use, and
  the classifier's SavedModel signature) under --dtype=bfloat16: every matmul in
  bfloat16, the softmax, LayerNorm and outputs in float32, and the probabilities within
  the tolerance docs/classifier.md gives of float32's.
* A MirroredStrategy over one device trains exactly like OneDeviceStrategy, both with
  the step the commands train with (loop.make_train_step).
* `--train_batch_size` is the global batch (docs/pretraining.md): MirroredStrategy over
  two logical CPU devices gives each replica half of it, the masked-LM loss is
  normalised over the whole of it, and two replicas train to the single-device weights.
  Logical devices must be set before TensorFlow starts, so that part runs in a
  subprocess (PITFALLS.md).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config  # is_op_determinism_enabled: no public twin

from bert.classifier import classifier_examples
from bert.formats import serving
from bert import heads
from bert import metrics
from bert import modeling
from bert import optimization
from replica_steps import CONFIG, SEQ, pretraining_batch, train_steps
from bert.training import evaluation
from bert.training import precision
from bert.training import run_options
from bert.utils import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build(policy):
  keras.utils.set_random_seed(3)
  return heads.build_pretraining_model(modeling.BertConfig(**CONFIG), dtype=policy)


def _under_global_policy(policy, build):
  """build() with Keras' global policy set to `policy` (the path of a dtype=None model)."""
  keras.mixed_precision.set_global_policy(policy)
  try:
    return build()
  finally:
    keras.mixed_precision.set_global_policy("float32")


def _layer_dtypes(model):
  """[(class, path, compute dtype, variable dtype)] of the model and every layer in it,
  in Keras' order (dropout layers included: their path is None). Not the
  input layers: their tensors are int32 ids whatever policy they hold."""
  layers = model._flatten_layers(include_self=True)  # pylint: disable=protected-access
  return [(type(layer).__name__, layer.path, layer.compute_dtype, layer.variable_dtype)
          for layer in layers if not isinstance(layer, keras.layers.InputLayer)]


def _pairs(batch):
  return {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}


def _choices(batch):
  return {k: np.repeat(v[:, None, :], 2, 1) for k, v in _pairs(batch).items()}


# Every build_*, with the inputs its model takes (the pretraining batch's).
_BUILDERS = {
    "pretraining": (lambda c, d: heads.build_pretraining_model(c, dtype=d), dict),
    "classifier": (lambda c, d: heads.build_classifier_model(c, 3, dtype=d), _pairs),
    "squad": (lambda c, d: heads.build_squad_model(c, dtype=d), _pairs),
    "token_classifier": (lambda c, d: heads.build_token_classifier_model(c, 3, dtype=d),
                         _pairs),
    "multiple_choice": (lambda c, d: heads.build_multiple_choice_model(c, 2, dtype=d),
                        _choices),
}


@pytest.mark.parametrize("name,policy", [(name, "mixed_bfloat16") for name in sorted(_BUILDERS)]
                         + [("pretraining", "mixed_float16")])
def test_dtype_argument_builds_what_the_global_policy_builds(name, policy):
  builder, batch_of = _BUILDERS[name]
  config = modeling.BertConfig(**CONFIG)

  def build(dtype):
    keras.utils.set_random_seed(3)
    return builder(config, dtype)

  under_global, _ = _under_global_policy(policy, lambda: build(None))
  assert keras.mixed_precision.global_policy().name == "float32"
  given, encoder = build(policy)
  assert keras.mixed_precision.global_policy().name == "float32"  # left as it was
  given.set_weights(under_global.get_weights())

  assert [(v.path, v.dtype) for v in given.weights] == [
      (v.path, v.dtype) for v in under_global.weights]
  assert {v.dtype for v in given.weights} == {"float32"}
  dtypes = _layer_dtypes(given)
  assert dtypes == _layer_dtypes(under_global)
  low = policy.split("_")[1]
  layer_0 = encoder.get_layer("layer_0")
  assert (encoder.compute_dtype, layer_0.compute_dtype, layer_0.query.compute_dtype,
          layer_0.attention_dropout.compute_dtype) == (low,) * 4
  # In float32 whatever the policy: the LayerNorms and the embeddings' dropout (the
  # float32 embedding sum); every other layer in `low`.
  float32_kinds = [kind for kind, _, compute, _ in dtypes if compute == "float32"]
  norms = 2 * CONFIG["num_hidden_layers"] + 1 + (name == "pretraining")
  assert sorted(float32_kinds) == ["Dropout"] + ["LayerNorm"] * norms
  assert {compute for _, _, compute, _ in dtypes} == {low, "float32"}
  # A float32 model beside it stays float32 through and through.
  float32_model, _ = build("float32")
  assert {compute for _, _, compute, _ in _layer_dtypes(float32_model)} == {"float32"}

  inputs = batch_of(pretraining_batch()[0])
  for training in (False, True):
    keras.utils.set_random_seed(9)
    out = under_global(inputs, training=training)
    keras.utils.set_random_seed(9)
    got = given(inputs, training=training)
    assert sorted(got) == sorted(out)
    for key in out:
      assert got[key].dtype == out[key].dtype
      np.testing.assert_array_equal(got[key].numpy(), out[key].numpy())


def test_precision_is_the_value_of_dtype():
  table = {name: (p.policy, p.compute_dtype, p.loss_scaling)
           for name in ("float32", "bfloat16", "float16")
           for p in [precision.Precision(name)]}
  assert table == {"float32": ("float32", "float32", False),
                   "bfloat16": ("mixed_bfloat16", "bfloat16", False),
                   "float16": ("mixed_float16", "float16", True)}
  for bad in ("auto", "float64", "mixed_bfloat16"):
    with pytest.raises(errors.UserError, match=f"^--dtype={bad}: use float32, bfloat16, "
                       "float16"):
      precision.Precision(bad)
  # RunOptions checks --dtype through it once, and hands it out.
  with pytest.raises(errors.UserError, match="^--dtype=auto: .*resolved from the CPU table"):
    run_options.RunOptions(output_dir="unused", dtype="auto")
  assert run_options.RunOptions(output_dir="unused", dtype="float16").precision == (
      precision.Precision("float16"))
  precision.Precision("float32").check_litert("both")
  precision.Precision("bfloat16").check_litert("none")
  with pytest.raises(errors.UserError, match="^--export_dir with --dtype=bfloat16: the "
                     "export's LiteRT models \\(--litert=int8\\) convert only from a float32"):
    precision.Precision("bfloat16").check_litert("int8")


def test_the_library_sets_no_global_policy():
  """The precision travels as an argument: no module of the package sets Keras' global
  dtype policy (which every model built later in the process would take)."""
  found = []
  for directory, _, names in os.walk(os.path.join(ROOT, "bert")):
    for name in names:
      if name.endswith(".py"):
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
          if "set_global_policy" in handle.read():
            found.append(os.path.relpath(os.path.join(directory, name), ROOT))
  assert not found


def _layer_norms(model, encoder):
  norms = [encoder.embeddings_layer.layer_norm, model.get_layer("cls_predictions").layer_norm]
  for index in range(CONFIG["num_hidden_layers"]):
    layer = encoder.get_layer(f"layer_{index}")
    norms += [layer.attention_layer_norm, layer.output_layer_norm]
  return norms


def _traced_ops(model):
  inputs, labels = pretraining_batch()
  spec = lambda d: {k: tf.TensorSpec(v.shape, v.dtype) for k, v in d.items()}

  @tf.function
  def forward(x, y):
    return heads.pretraining_loss(y, model(x, training=True))

  graph = forward.get_concrete_function(spec(inputs), spec(labels)).graph
  return [op for op in graph.get_operations()
          if op.outputs and op.type not in ("Placeholder", "ReadVariableOp", "Const")]


@pytest.mark.parametrize("policy,low", [("mixed_bfloat16", tf.bfloat16),
                                        ("mixed_float16", tf.float16)])
def test_mixed_policy_keeps_layernorm_softmax_and_losses_in_float32(policy, low):
  model, encoder = _build(policy)
  reference, reference_encoder = _build("float32")
  reference.set_weights(model.get_weights())

  norms = _layer_norms(model, encoder)
  assert len(norms) == 2 + 2 * CONFIG["num_hidden_layers"]
  assert all(n.compute_dtype == "float32" for n in norms)
  layer_0 = encoder.get_layer("layer_0")
  assert layer_0.compute_dtype == low.name and layer_0.query.compute_dtype == low.name
  assert all(v.dtype == "float32" for v in model.weights)

  ops = _traced_ops(model)
  _check_float32_norms(ops, len(norms))
  softmax = [op for op in ops if op.type == "Softmax"]
  assert len(softmax) == CONFIG["num_hidden_layers"]
  assert all(op.get_attr("T") == tf.float32 for op in softmax)
  # masked LM: the original's -sum(one_hot * log_softmax); next sentence: the
  # fused kernel, which TensorFlow computes as a LogSoftmax too once op determinism is on
  # (another test in this process may have turned it on).
  cross_entropy = [op for op in ops if op.type in ("SparseSoftmaxCrossEntropyWithLogits",
                                                   "LogSoftmax")]
  fused = ("LogSoftmax" if tf_config.is_op_determinism_enabled()
           else "SparseSoftmaxCrossEntropyWithLogits")
  assert sorted(op.type for op in cross_entropy) == sorted(["LogSoftmax", fused])
  assert all(op.get_attr("T") == tf.float32 for op in cross_entropy)
  # ... while the encoder's matmuls do run in the low-precision type.
  matmuls = [op for op in ops if op.type in ("MatMul", "BatchMatMulV2")]
  low_matmuls = [op for op in matmuls if op.outputs[0].dtype == low]
  assert len(low_matmuls) >= 8 * CONFIG["num_hidden_layers"]

  inputs, labels = pretraining_batch()
  out = model(inputs, training=False)
  ref = reference(inputs, training=False)
  for key in ("masked_lm_logits", "next_sentence_logits"):
    assert out[key].dtype == tf.float32
  encoder_inputs = {k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")}
  encoded = encoder(encoder_inputs, training=False)
  for key in ("sequence_output", "embedding_output"):
    assert encoded[key].dtype == tf.float32
  assert all(t.dtype == tf.float32 for t in encoded["encoder_outputs"])
  # The embedding sum and its LayerNorm are float32 end to end: the same numbers as the
  # float32 model, not a rounded copy.
  np.testing.assert_allclose(
      encoded["embedding_output"].numpy(),
      reference_encoder(encoder_inputs, training=False)["embedding_output"].numpy(),
      atol=1e-6)
  np.testing.assert_allclose(out["masked_lm_logits"].numpy(),
                             ref["masked_lm_logits"].numpy(), atol=0.1)
  per_example, metrics = heads.pretraining_loss(labels, out)
  ref_per_example, _ = heads.pretraining_loss(labels, ref)
  assert per_example.dtype == tf.float32
  assert all(n.dtype == tf.float32 and d.dtype == tf.float32 for n, d in metrics.values())
  np.testing.assert_allclose(per_example.numpy(), ref_per_example.numpy(), atol=0.05)


def _prediction_models(num_labels=3, head_scale=1.0):
  """(float32 classifier, the same weights built under --dtype=bfloat16), as finetune.run
  builds them (dtype=Precision(--dtype).policy). head_scale: the output weights' standard
  deviation (the initialiser's 0.02 gives logits near 0, probabilities near 1/K)."""
  models = []
  for dtype in ("float32", "bfloat16"):
    keras.utils.set_random_seed(5)
    model, _ = heads.build_classifier_model(modeling.BertConfig(**CONFIG), num_labels,
                                            dtype=precision.Precision(dtype).policy)
    models.append(model)
  head = models[0].get_layer("classifier")
  weights = head.get_weights()
  rng = np.random.default_rng(4)
  weights[0] = rng.normal(0.0, head_scale, weights[0].shape).astype("float32")
  head.set_weights(weights)
  models[1].set_weights(models[0].get_weights())
  return models


def _prediction_batches(n=48, batch=16):
  rng = np.random.default_rng(6)
  ids = rng.integers(1, CONFIG["vocab_size"], (n, SEQ)).astype("int32")
  mask = np.ones_like(ids)
  mask[::3, -3:] = 0
  segments = np.zeros_like(ids)
  segments[:, 5:] = 1
  return [{"input_ids": ids[i:i + batch] * mask[i:i + batch],
           "input_mask": mask[i:i + batch], "segment_ids": segments[i:i + batch],
           "example_index": np.arange(i, i + batch)} for i in range(0, n, batch)]


def _ops(concrete):
  return [op for op in concrete.graph.get_operations()
          if op.outputs and op.type not in ("Placeholder", "ReadVariableOp", "Const")]


def _check_float32_norms(ops, count):
  """Each of the `count` LayerNorms computes its statistics in float32 (one reciprocal
  square root of its variance each), and every value its ops make is float32 (beside the
  int32 shapes that lay its rows out)."""
  norm_ops = [op for op in ops if "LayerNorm" in op.name]
  assert [op.get_attr("T") for op in norm_ops if op.type == "Rsqrt"] == [
      tf.float32] * count
  assert {o.dtype for op in norm_ops for o in op.outputs if o.dtype != tf.int32} == {
      tf.float32}


def _check_bfloat16_forward(ops, softmax_count):
  layers = CONFIG["num_hidden_layers"]
  products = [op for op in ops if op.type in ("MatMul", "BatchMatMulV2")]
  # Per layer: query, key, value, attention output, intermediate, output, and attention's
  # scores and context; then the pooler and the classifier. (Keras 3.15 writes a dense
  # layer over [B, S, H] as Reshape + MatMul, Keras 3.10 as one BatchMatMulV2.)
  assert len(products) == 8 * layers + 2
  assert {op.outputs[0].dtype for op in products} == {tf.bfloat16}
  assert {op.get_attr("T") for op in products} == {tf.bfloat16}
  softmax = [op for op in ops if op.type == "Softmax"]
  assert len(softmax) == softmax_count
  assert {op.get_attr("T") for op in softmax} == {tf.float32}
  _check_float32_norms(ops, 1 + 2 * layers)


def test_bfloat16_prediction_computes_in_bfloat16_with_float32_softmax_and_outputs():
  reference, model = _prediction_models()
  layers = CONFIG["num_hidden_layers"]
  assert model.get_layer("bert").compute_dtype == "bfloat16"
  assert model.get_layer("classifier").compute_dtype == "bfloat16"

  # evaluation.predict's traced forward pass, traced as it traces it (any batch shape).
  spec = {name: tf.TensorSpec([None, None], tf.int32)
          for name in ("input_ids", "input_mask", "segment_ids")}
  predict_forward = evaluation._predict_forward  # pylint: disable=protected-access
  forward = predict_forward(model).get_concrete_function(spec)
  _check_bfloat16_forward(_ops(forward), softmax_count=layers)
  assert forward.structured_outputs["logits"].dtype == tf.float32

  # The classifier's SavedModel signature (run_classifier --export_dir), token ids in:
  # the same bfloat16 encoder, the head's softmax and the probabilities in float32.
  endpoint = serving.classifier_endpoints(model, ["a", "b", "c"])[0]
  signature = tf.function(endpoint.fn, input_signature=endpoint.input_signature)
  concrete = signature.get_concrete_function()
  _check_bfloat16_forward(_ops(concrete), softmax_count=layers + 1)
  assert concrete.structured_outputs["probabilities"].dtype == tf.float32

  # The numbers: bfloat16 really rounds (a float32 forward pass would agree to about
  # 1e-7), and stays close to float32.
  batches = _prediction_batches()
  low = np.concatenate([b["logits"] for b in evaluation.predict(model, batches)])
  high = np.concatenate([b["logits"] for b in evaluation.predict(reference, batches)])
  assert low.dtype == np.float32 and low.shape == (48, 3)
  error = np.abs(low - high).max() / np.abs(high).max()
  assert 1e-4 < error < 3e-2, error
  served = signature(*[tf.constant(np.concatenate([b[k] for b in batches]))
                       for k in ("input_ids", "input_mask", "segment_ids")])
  np.testing.assert_allclose(served["probabilities"].numpy(), metrics.softmax(low),
                             atol=1e-6)


# docs/classifier.md: bfloat16 test_results.tsv within this of float32's on the tiny model
# (measured: 0.014 at most, no label moved).
BFLOAT16_PROBABILITY_TOLERANCE = 0.03


def test_bfloat16_prediction_files_within_tolerance_of_float32(tmp_path):
  """test_results.tsv as run_classifier writes it, float32 and bfloat16 weights alike;
  a head of standard deviation 10 spreads the probabilities over (0, 1)."""
  reference, model = _prediction_models(num_labels=3, head_scale=10.0)
  batches = _prediction_batches()
  files = {}
  for name, each in (("float32", reference), ("bfloat16", model)):
    logits = np.concatenate([b["logits"] for b in evaluation.predict(each, batches)])
    files[name] = tmp_path / f"{name}_test_results.tsv"
    classifier_examples.write_probabilities(str(files[name]), metrics.softmax(logits))
  high, low = (np.loadtxt(files[n], delimiter="\t") for n in ("float32", "bfloat16"))
  assert high.shape == low.shape == (48, 3)
  assert high.max() > 0.9 and high.min() < 0.05  # spread out, not all near 1/3
  moved = np.abs(low - high).max()
  assert 1e-4 < moved < BFLOAT16_PROBABILITY_TOLERANCE, moved
  # A label moves only where float32's top two classes are that close.
  top2 = np.sort(high, axis=1)[:, -2:]
  changed = low.argmax(1) != high.argmax(1)
  assert np.all(top2[changed, 1] - top2[changed, 0] < 2 * BFLOAT16_PROBABILITY_TOLERANCE)


def _classifier_data(n=24):
  rng = np.random.default_rng(1)
  ids = rng.integers(1, CONFIG["vocab_size"], (n, SEQ)).astype("int32")
  mask = np.ones_like(ids)
  mask[::3, -2:] = 0
  return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": np.zeros_like(ids),
          "label_ids": (ids[:, 1] % 2).astype("int32")}


def _train_classifier(strategy, steps=3, batch=4):
  keras.utils.set_random_seed(7)
  with strategy.scope():
    # One layer: a strategy trains any depth alike, and tracing the steps grows with it.
    model, _ = heads.build_classifier_model(
        modeling.BertConfig(**dict(CONFIG, num_hidden_layers=1)), 2)
    optimizer = optimization.create_optimizer(1e-3, 10, 1)

  def dataset_fn(context):
    return tf.data.Dataset.from_tensor_slices(_classifier_data()).repeat().batch(
        context.get_per_replica_batch_size(batch), drop_remainder=True)

  before = [v.numpy().copy() for v in model.trainable_variables]
  losses = train_steps(strategy, model, optimizer, heads.classifier_loss, dataset_fn,
                       batch, steps)
  return losses, before, [v.numpy() for v in model.trainable_variables]


def test_mirrored_over_one_device_trains_like_one_device():
  one, before_one, after_one = _train_classifier(tf.distribute.OneDeviceStrategy("/cpu:0"))
  mirrored, before_m, after_m = _train_classifier(
      tf.distribute.MirroredStrategy(["/cpu:0"]))
  for a, b in zip(before_one, before_m, strict=True):
    np.testing.assert_array_equal(a, b)
  moved = max(np.abs(a - b).max() for a, b in zip(before_one, after_one, strict=True))
  assert moved > 1e-4  # the steps did train (dropout on: the same masks both ways)
  for a, b in zip(after_one, after_m, strict=True):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(mirrored, one, rtol=1e-5)
  assert len(one) == 3 and all(np.isfinite(one))


# Runs in a fresh interpreter: two logical CPU devices before any op runs.
_SPLIT_CHILD = r'''
import json, os, sys
sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "support"))  # tiny, replica_steps
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import numpy as np
import keras
from bert import heads
from bert import modeling
from bert import optimization
from replica_steps import CONFIG, pretraining_batch, train_steps

GLOBAL = 6
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
inputs, labels = pretraining_batch(batch=4 * GLOBAL, seed=2)
data = {**inputs, **labels, "example_index": np.arange(4 * GLOBAL, dtype="int32")}
# Uneven label weights between the two halves of each global batch: a per-replica
# normaliser would give another loss than the global one.
data["masked_lm_weights"][::GLOBAL] = [1, 1, 1]
data["masked_lm_weights"][GLOBAL - 1::GLOBAL] = [1, 0, 0]

def dataset_fn(context):
  return tf.data.Dataset.from_tensor_slices(data).batch(
      context.get_per_replica_batch_size(GLOBAL), drop_remainder=True).repeat()

report = {"replicas": strategy.num_replicas_in_sync, "batches": []}
iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
for _ in range(2):
  batch = next(iterator)
  report["batches"].append([t.numpy().tolist() for t in
                            strategy.experimental_local_results(batch["example_index"])])

def loss_step(features):
  outputs = {"masked_lm_logits": tf.one_hot(features["masked_lm_ids"], 53) * 2.0
             + tf.cast(features["masked_lm_positions"][..., None], tf.float32) * 0.1,
             "next_sentence_logits": tf.zeros([tf.shape(features["example_index"])[0], 2])}
  per_example, metrics = heads.pretraining_loss(features, outputs)
  return per_example, metrics["masked_lm_loss"][0], metrics["masked_lm_loss"][1]

iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
per_example, numerator, denominator = strategy.run(loss_step, args=(next(iterator),))
report["per_example"] = np.concatenate(
    [t.numpy() for t in strategy.experimental_local_results(per_example)]).tolist()
report["mlm_sums"] = [float(strategy.reduce("SUM", numerator, axis=None)),
                      float(strategy.reduce("SUM", denominator, axis=None))]

def train(strategy):
  keras.utils.set_random_seed(11)
  config = modeling.BertConfig(**CONFIG, hidden_dropout_prob=0.0,
                               attention_probs_dropout_prob=0.0)
  with strategy.scope():
    model, _ = heads.build_pretraining_model(config)
    optimizer = optimization.create_optimizer(1e-3, 10, 1)
  losses = train_steps(strategy, model, optimizer, heads.pretraining_loss,
                          dataset_fn, GLOBAL, 2)
  return losses, [v.numpy() for v in model.trainable_variables]

one, one_weights = train(tf.distribute.OneDeviceStrategy("/cpu:0"))
two, two_weights = train(strategy)
report["losses"] = [one, two]
report["max_weight_difference"] = max(float(np.abs(a - b).max())
                                      for a, b in zip(one_weights, two_weights))
print("REPORT " + json.dumps(report))
'''


def _numpy_pretraining_loss(features):
  """The NumPy twin of _SPLIT_CHILD's loss_step over the whole global batch."""
  ids, positions = features["masked_lm_ids"], features["masked_lm_positions"]
  logits = np.eye(53)[ids] * 2.0 + positions[..., None] * 0.1
  logits = logits - logits.max(-1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  nll = -np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
  weights = features["masked_lm_weights"]
  batch = len(ids)
  return ((weights * nll).sum(1) * batch / (weights.sum() + 1e-5) + np.log(2.0),
          (weights * nll).sum(), weights.sum())


@pytest.mark.slow  # 47 s: two logical CPUs, a fresh process (make test-slow)
def test_global_batch_is_split_across_two_replicas():
  env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT}
  proc = subprocess.run([sys.executable, "-c", _SPLIT_CHILD], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=600)
  lines = [l for l in proc.stdout.splitlines() if l.startswith("REPORT ")]
  assert proc.returncode == 0 and lines, proc.stderr[-3000:]
  report = json.loads(lines[-1][len("REPORT "):])
  assert report["replicas"] == 2
  # train_batch_size=6 is the global batch: each replica takes 3 consecutive examples.
  assert report["batches"] == [[[0, 1, 2], [3, 4, 5]], [[6, 7, 8], [9, 10, 11]]]
  # The masked-LM loss is normalised by the label weights of the global batch.
  inputs, labels = pretraining_batch(batch=24, seed=2)
  features = {**inputs, **labels}
  features["masked_lm_weights"][::6] = [1, 1, 1]
  features["masked_lm_weights"][5::6] = [1, 0, 0]
  first = {k: v[:6] for k, v in features.items()}
  expected, numerator, denominator = _numpy_pretraining_loss(first)
  np.testing.assert_allclose(report["per_example"], expected, rtol=1e-5)
  np.testing.assert_allclose(report["mlm_sums"], [numerator, denominator], rtol=1e-5)
  # Two replicas on halves of the batch train to the single-device weights.
  np.testing.assert_allclose(report["losses"][1], report["losses"][0], rtol=1e-5)
  assert report["losses"][0][1] < report["losses"][0][0]  # it trained
  assert report["max_weight_difference"] < 1e-5
