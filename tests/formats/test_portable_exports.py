"""Exports traced on this CPU run on any device: no SavedModel they write holds an op that
TensorFlow or this package chose for the CPU it was traced on (a fused batch norm standing
for a LayerNorm, oneDNN's _Mkl ops, grappler's _Fused ops), in any function of the file:
every signature's graph and every function of its library, read from saved_model.pb.

Written by the commands themselves, through their command lines (each in its warm
process, tests/support/cli_harness.py): run_classifier.py --export_dir (the token-id and
raw-text SavedModels) and export_encoder.py --format=tfhub (the encoder and the
preprocessor). The keras-hub preset only where keras_hub is installed.
"""
import importlib.util
import json
import os

import pytest

from bert import modeling
from bert.formats import checkpoint_files
import cli_harness
import tiny

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
         "a", "dog", "ran", "far", "away"]
ROWS = [("the cat sat on the mat", "0"), ("a dog ran far away", "1"),
        ("the dog sat on a mat", "0"), ("a cat ran away", "1")] * 2


def cpu_chosen(op):
  """Whether an op type is one a CPU's trace chose: a GPU or a TPU has no kernel for it,
  or runs it as another function (a batch norm over one channel per token)."""
  return "BatchNorm" in op or op.startswith(("_Mkl", "_Fused", "_MklNative"))


def saved_model_ops(saved_model_dir):
  """{function or graph name: sorted op types} of every graph a SavedModel holds: each
  meta graph's own nodes and each function of its library (the signatures' functions and
  every function they call)."""
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as handle:
    proto.ParseFromString(handle.read())
  found = {}
  for meta in proto.meta_graphs:
    found["graph"] = sorted({node.op for node in meta.graph_def.node})
    for function in meta.graph_def.library.function:
      found[function.signature.name] = sorted({node.op for node in function.node_def})
  return found


def saved_models(root):
  """Every folder under root that holds a saved_model.pb."""
  return sorted(directory for directory, _, names in os.walk(root)
                if "saved_model.pb" in names)


def assert_portable(root, expected_models):
  models = saved_models(root)
  assert [os.path.relpath(m, root) for m in models] == expected_models
  every_op = set()
  for model in models:
    ops = saved_model_ops(model)
    every_op.update(op for kinds in ops.values() for op in kinds)
    chosen = {name: [op for op in kinds if cpu_chosen(op)] for name, kinds in ops.items()}
    assert {name: kinds for name, kinds in chosen.items() if kinds} == {}, model
  # The LayerNorms are there, as their statistics: the walk read the model's graphs.
  assert "Rsqrt" in every_op


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("portable")
  vocab = tmp / "vocab.txt"
  vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
  # One layer: every kind of op an export holds is in one layer as in three, and tracing
  # and saving the exports (most of this file's time) grows with the layers.
  config = tiny.tiny_config(len(VOCAB), max_position_embeddings=40, num_hidden_layers=1)
  config.to_json_file(str(tmp / "bert_config.json"))
  return tmp, vocab


def test_run_classifier_export_holds_no_cpu_chosen_op(tiny_files, tmp_path):
  tmp, vocab = tiny_files
  data = tmp_path / "data"
  data.mkdir()
  for split in ("train", "test"):
    (data / f"{split}.tsv").write_text("".join(f"{t}\t{l}\n" for t, l in ROWS),
                                       encoding="utf-8")
  export_dir = tmp_path / "export"
  # The export of a run's output_dir (a classifier checkpoint with its head, as training
  # leaves it): the ops an export holds are those of its traced signatures, trained
  # weights or not, and tracing a training step first would double this run.
  out = tmp_path / "out"
  result = cli_harness.run_case("run_classifier.py", {"argv": [
      "--task_name=tsv", "--do_lower_case=true", f"--data_dir={data}",
      f"--vocab_file={vocab}", f"--bert_config_file={tmp}/bert_config.json",
      "--max_seq_length=16", "--label_list=0,1", f"--output_dir={out}",
      f"--export_dir={export_dir}", "--litert=none"], "setup": [
          {"foreign_checkpoint": str(out), "bert_config": f"{tmp}/bert_config.json",
           "num_labels": 2, "head_info": json.dumps(
               {"task": "DelimitedFile", "head": "classifier", "labels": ["0", "1"]})}]},
                                  timeout=600)
  assert result["exit"] == 0 and not result["crashed"], result["stderr"][-3000:]
  models = [os.path.relpath(m, export_dir) for m in saved_models(export_dir)]
  assert models  # the token-id model and the raw-text one
  assert_portable(export_dir, models)


def _checkpoint(tmp):
  prefix = tmp / "bert_model.ckpt"
  if not os.path.exists(f"{prefix}.index"):
    model = modeling.BertModel(modeling.BertConfig.from_json_file(
        str(tmp / "bert_config.json")))
    checkpoint_files.save_google_checkpoint(model, str(prefix))
  return prefix


@pytest.mark.parametrize("export_format,expected", [
    ("tfhub", ["encoder", "preprocessor"]),
    pytest.param("keras_hub", None, marks=pytest.mark.skipif(
        importlib.util.find_spec("keras_hub") is None, reason="keras_hub is not installed")),
])
def test_export_encoder_holds_no_cpu_chosen_op(tiny_files, tmp_path, export_format,
                                               expected):
  tmp, vocab = tiny_files
  export_dir = tmp_path / "export"
  result = cli_harness.run(
      "export_encoder.py",
      [f"--format={export_format}", f"--bert_config_file={tmp}/bert_config.json",
       f"--vocab_file={vocab}", f"--init_checkpoint={_checkpoint(tmp)}",
       "--do_lower_case=true", f"--export_dir={export_dir}", "--seq_length=16",
       "--litert=none"], timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  if expected is None:  # keras-hub: whatever SavedModels its preset holds, if any
    expected = [os.path.relpath(m, export_dir) for m in saved_models(export_dir)]
    if not expected:
      pytest.skip("the keras-hub preset holds no SavedModel")
  assert_portable(export_dir, expected)


def test_the_check_finds_what_the_old_layer_norm_left_in_an_export(tmp_path):
  # The fused-batch-norm LayerNorm this package once traced on a CPU, saved as an export
  # saves it (here, in this process: saving needs no command): the walk through the
  # function library finds it.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  class M(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, None, 8], tf.float32)])
    def serve(self, x):
      s = tf.shape(x)
      rows = tf.reduce_prod(s[:-1], keepdims=True)
      image = tf.reshape(x, tf.concat([[1], rows, s[-1:], [1]], 0))
      e = tf.constant([], tf.float32)
      y = tf.raw_ops.FusedBatchNormV3(x=image, scale=tf.ones(rows), offset=tf.zeros(rows),
                                      mean=e, variance=e, epsilon=1e-12, data_format="NCHW",
                                      is_training=True)[0]
      return {"y": tf.math.rsqrt(tf.reshape(y, s) ** 2 + 1.0)}

  m = M()
  tf.saved_model.save(m, str(tmp_path / "old"), signatures={"serving_default": m.serve})
  ops = saved_model_ops(str(tmp_path / "old"))
  assert [name for name, kinds in ops.items() if "FusedBatchNormV3" in kinds]
  with pytest.raises(AssertionError):
    assert_portable(str(tmp_path), ["old"])
  assert json.dumps(sorted(ops))  # every function has a name
