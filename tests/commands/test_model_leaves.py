"""Models leave whole (and another task's checkpoint is not taken for this one's):

* one tiny MRPC run (real rows) with --eval_every_steps and --export_dir, shared by:
  - eval every N steps: several eval steps in output_dir/eval under the training tags;
  - the ids-only SavedModel answers in a process where tensorflow_text cannot be
    imported, with the probabilities of the raw-text signature;
  - the Hugging Face export of its checkpoint writes the classifier, nothing left out;
  - a CoLA evaluation into that output_dir is refused in one line;
* a head with no Hugging Face counterpart (feature-based NER) is refused in one line.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file

import cli_harness
from conftest import UNCASED_VOCAB, shared_path
import serving_checks
from tiny import tiny_config_dict

TINY_CONFIG = tiny_config_dict(30522)


def _refusal_vocab(tmp_path):
  """A vocabulary of the config's size for the refusal tests (they need no real words, so
  they run without ../shared)."""
  path = tmp_path / "vocab.txt"
  special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  words = special + [f"w{i}" for i in range(TINY_CONFIG["vocab_size"] - len(special))]
  path.write_text("\n".join(words) + "\n", encoding="utf-8")
  return str(path)


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  env.pop("PYTHONPATH", None)
  return env


def _script(name, args, timeout=600):
  # The command line's real path in a warm process (no TensorFlow start-up per run).
  return cli_harness.run(name, args, timeout=timeout)


def _glue_subset(folder, task, rows):
  for split in ("train", "dev", "test"):
    with open(shared_path("glue", task, f"{split}.tsv"), "rb") as handle:
      lines = handle.read().split(b"\n")
    (folder / f"{split}.tsv").write_bytes(b"\n".join(lines[:rows + 1]) + b"\n")


# The tiny MRPC run (a minute) and the four tests that read it run with make test-slow;
# TensorBoard's eval curves by default: tests/commands/test_checkpoint_flows.py.
_THE_MRPC_RUN = pytest.mark.slow


@pytest.fixture(scope="module")
def mrpc_run(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("mrpc_run")
  data = tmp / "mrpc"
  data.mkdir()
  _glue_subset(data, "MRPC", 32)
  config = tmp / "bert_config.json"
  config.write_text(json.dumps(TINY_CONFIG))
  out, export_dir = tmp / "out", tmp / "export"
  result = _script("run_classifier.py", [
      "--task_name=MRPC", "--do_train", "--do_eval", f"--data_dir={data}",
      f"--vocab_file={UNCASED_VOCAB}", f"--bert_config_file={config}",
      "--max_seq_length=48", "--train_batch_size=8", "--learning_rate=1e-3",
      "--num_train_steps=9", "--eval_every_steps=3", "--log_every_steps=1",
      f"--output_dir={out}", f"--export_dir={export_dir}",
      "--litert=none"])  # LiteRT has tests of its own (tests/formats, tests/litert)
  assert result.returncode == 0, result.stderr[-3000:]
  return {"tmp": tmp, "data": data, "config": config, "out": out, "export": export_dir,
          "stderr": result.stderr}


def _scalars(folder):
  from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # pylint: disable=g-import-not-at-top
  accumulator = EventAccumulator(str(folder))
  accumulator.Reload()
  return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)]
          for tag in accumulator.Tags()["scalars"]}


@_THE_MRPC_RUN
def test_eval_every_steps_draws_eval_curves_under_the_training_tags(mrpc_run):
  train, evals = _scalars(mrpc_run["out"] / "train"), _scalars(mrpc_run["out"] / "eval")
  assert {"loss", "accuracy"} <= set(train)
  # Evaluated at 3, 6 and 9 (every 3 steps; 9 is the last): loss and accuracy on the
  # training twins' cards, the task's own metrics beside them, no duplicate loss tag.
  assert sorted(evals) == ["accuracy", "eval_acc_and_f1", "eval_f1", "loss"]
  assert [step for step, _ in evals["loss"]] == [3, 6, 9]
  assert [step for step, _ in evals["accuracy"]] == [3, 6, 9]
  assert [step for step, _ in evals["eval_f1"]] == [3, 6, 9]
  values = dict(line.split(" = ") for line in
                (mrpc_run["out"] / "eval_results.txt").read_text().splitlines())
  assert sorted(values) == ["eval_acc_and_f1", "eval_accuracy", "eval_f1", "eval_loss",
                            "global_step", "loss"]
  assert values["global_step"] == "9" and values["loss"] == values["eval_loss"]
  # eval_results.txt holds the final evaluation, the last point of each curve.
  assert float(values["eval_loss"]) == pytest.approx(evals["loss"][-1][1], rel=1e-6)
  assert float(values["eval_accuracy"]) == pytest.approx(evals["accuracy"][-1][1], rel=1e-6)
  # The evaluation at the last step is the final one: not run twice.
  assert mrpc_run["stderr"].count("***** Evaluation at step") == 3
  assert mrpc_run["stderr"].count("***** Running evaluation") == 0


# The reference for the ids model (tests/support/serving_checks.py loads that one where
# tensorflow_text cannot be imported): the text model, in another process.
_TEXT = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
texts = json.loads(sys.argv[2])
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serve_text"](text_a=tf.constant(texts[0]), text_b=tf.constant(texts[1]))
print(json.dumps(out["probabilities"].numpy().tolist()))
"""


@_THE_MRPC_RUN
def test_ids_saved_model_answers_without_tensorflow_text(mrpc_run):
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  export = mrpc_run["export"]
  assert sorted(os.listdir(export / "ids")) == ["assets", "fingerprint.pb",
                                                "saved_model.pb", "variables"]
  examples = classifier_data.MrpcProcessor().get_dev_examples(str(mrpc_run["data"]))[:6]
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  features = [classifier_features.convert_single_example(e, ["0", "1"], 48, full)
              for e in examples]
  ids = [[f.input_ids for f in features], [f.input_mask for f in features],
         [f.segment_ids for f in features]]
  answer, signatures, imported = serving_checks.answer_without_tensorflow_text(
      export / "ids", ids, _env())
  assert signatures == ["serving_default"] and not imported
  text = subprocess.run([sys.executable, "-c", _TEXT, str(export), json.dumps(
      [[e.text_a for e in examples], [e.text_b for e in examples]])],
                        capture_output=True, text=True, env=_env(), timeout=300)
  assert text.returncode == 0, text.stderr[-2000:]
  probabilities = np.array(answer["probabilities"])
  np.testing.assert_allclose(probabilities, np.array(json.loads(text.stdout.splitlines()[-1])),
                             atol=1e-6)
  assert answer["label_id"] == probabilities.argmax(axis=1).tolist()
  # And the two differ from a constant answer: the head was trained (not all the same).
  assert probabilities.shape == (6, 2)


@_THE_MRPC_RUN
def test_hugging_face_export_writes_the_classifier_and_drops_nothing(mrpc_run):
  target = mrpc_run["tmp"] / "hf"
  result = _script("export_encoder.py", [
      "--format=huggingface", f"--init_checkpoint={mrpc_run['out']}",
      f"--bert_config_file={mrpc_run['config']}", f"--vocab_file={UNCASED_VOCAB}",
      f"--export_dir={target}"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Not exported" not in result.stderr
  assert "BertForSequenceClassification" in result.stderr
  config = json.loads((target / "config.json").read_text())
  assert config["architectures"] == ["BertForSequenceClassification"]
  assert config["id2label"] == {"0": "0", "1": "1"} and config["label2id"] == {"0": 0, "1": 1}
  assert config["problem_type"] == "single_label_classification"
  assert config["finetuning_task"] == "Mrpc"
  state = load_file(str(target / "model.safetensors"))
  assert state["classifier.weight"].shape == (2, 32)
  assert state["classifier.bias"].shape == (2,)
  assert "bert.pooler.dense.weight" in state
  # 5 embedding tensors, 16 per layer, the pooler's 2 and the head's 2.
  assert len(state) == 5 + 16 * 3 + 2 + 2
  # The weights are the checkpoint's: the head equals what the run trained.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import heads
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  model, _ = heads.build_classifier_model(modeling.BertConfig.from_dict(TINY_CONFIG), 2)
  prefix = tf.train.latest_checkpoint(str(mrpc_run["out"]))
  checkpoints.load_checkpoint(model, prefix)
  variables = modeling.google_variable_map(model)
  np.testing.assert_array_equal(state["classifier.weight"],
                                variables["output_weights"].numpy())
  np.testing.assert_array_equal(state["bert.encoder.layer.2.output.dense.weight"],
                                variables["bert/encoder/layer_2/output/dense/kernel"].numpy().T)


@_THE_MRPC_RUN
def test_the_best_checkpoint_on_dev_exports_to_hugging_face(mrpc_run):
  """MRPC's best is chosen by eval_f1 (the paper's metric); output_dir/best as
  --init_checkpoint exports that step's weights and head."""
  record = json.loads((mrpc_run["out"] / "best" / "best.json").read_text())
  assert record["metric"] == "eval_f1" and record["higher_is_better"] is True
  evaluations = dict(record["evaluations"])
  assert sorted(evaluations) == [3, 6, 9]
  best = max(sorted(evaluations), key=lambda s: (evaluations[s], -s))
  assert (record["best_step"], record["best_value"]) == (best, evaluations[best])
  target = mrpc_run["tmp"] / "hf-best"
  result = _script("export_encoder.py", [
      "--format=huggingface", f"--init_checkpoint={mrpc_run['out'] / 'best'}",
      f"--bert_config_file={mrpc_run['config']}", f"--vocab_file={UNCASED_VOCAB}",
      f"--export_dir={target}"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads((target / "config.json").read_text())["architectures"] == [
      "BertForSequenceClassification"]
  state = load_file(str(target / "model.safetensors"))
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  model, _ = heads.build_classifier_model(modeling.BertConfig.from_dict(TINY_CONFIG), 2)
  report = checkpoints.load_checkpoint(model, str(mrpc_run["out"] / "best" / f"ckpt-{best}"))
  assert report["global_step"] == best and report["whole_model"]
  np.testing.assert_array_equal(
      state["classifier.weight"],
      modeling.google_variable_map(model)["output_weights"].numpy())


@_THE_MRPC_RUN
def test_another_tasks_evaluation_into_the_output_dir_is_refused(mrpc_run):
  cola = mrpc_run["tmp"] / "cola"
  cola.mkdir()
  for split in ("train", "dev"):  # CoLA's layout, a few real rows
    with open(shared_path("glue", "CoLA", f"{split}.tsv"), "rb") as handle:
      lines = handle.read().split(b"\n")
    (cola / f"{split}.tsv").write_bytes(b"\n".join(lines[:9]) + b"\n")
  before = sorted(os.listdir(mrpc_run["out"]))
  eval_results = (mrpc_run["out"] / "eval_results.txt").read_bytes()
  result = _script("run_classifier.py", [
      "--task_name=CoLA", "--do_eval", f"--data_dir={cola}",
      f"--vocab_file={UNCASED_VOCAB}", f"--bert_config_file={mrpc_run['config']}",
      "--max_seq_length=48", f"--output_dir={mrpc_run['out']}"])
  assert result.returncode == 2
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith("run_classifier.py: error: --output_dir=") and "Traceback" not in result.stderr
  assert "Mrpc's classifier (labels 0, 1), not this run's Cola's classifier" in last
  assert "--init_checkpoint" in last
  assert sorted(os.listdir(mrpc_run["out"])) == before
  assert (mrpc_run["out"] / "eval_results.txt").read_bytes() == eval_results
  # As --init_checkpoint the run gives its encoder only: evaluating CoLA with it would
  # score an untrained head, which is refused too.
  result = _script("run_classifier.py", [
      "--task_name=CoLA", "--do_eval", f"--data_dir={cola}",
      f"--vocab_file={UNCASED_VOCAB}", f"--bert_config_file={mrpc_run['config']}",
      "--max_seq_length=48", f"--output_dir={mrpc_run['tmp'] / 'cola_out'}",
      f"--init_checkpoint={mrpc_run['out']}"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert "holds no trained weights for output_bias" in result.stderr.strip().splitlines()[-1]


def test_a_head_without_hugging_face_counterpart_is_refused_in_one_line(tmp_path):
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(TINY_CONFIG))
  model, _ = heads.build_token_classifier_model(modeling.BertConfig.from_dict(TINY_CONFIG), 3)
  out = tmp_path / "out"
  out.mkdir()
  state = checkpoints.RunCheckpoint(str(out), model, head_info={
      "task": "NER", "head": "feature_ner", "labels": ["O", "B-PER", "I-PER"]})
  state.save()
  target = tmp_path / "hf"
  result = _script("export_encoder.py", [
      "--format=huggingface", f"--init_checkpoint={out}", f"--bert_config_file={config}",
      f"--vocab_file={_refusal_vocab(tmp_path)}", f"--export_dir={target}"])
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert lines[-1].startswith("export_encoder.py: error: cannot export a feature_ner head "
                              "to Hugging Face: feature-based NER's BiLSTM")
  assert "Traceback" not in result.stderr
  assert not target.exists() and sorted(os.listdir(tmp_path)) == [
      "bert_config.json", "out", "vocab.txt"]


def test_a_left_to_right_model_is_refused_by_the_hugging_face_export(tmp_path):
  """An --ltr run records ltr with its head: Hugging Face's BERT attends both ways, so an
  export would compute other numbers than the model; one line, nothing written."""
  import types  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import finetune  # pylint: disable=g-import-not-at-top

  class Pretraining(finetune.Task):
    def head_info(self):
      return {"task": "pretraining", "head": "pretraining", "next_sentence": False}

  info = finetune.recorded_head_info(Pretraining(None), types.SimpleNamespace(ltr=True))
  assert info == {"task": "pretraining", "head": "pretraining", "next_sentence": False,
                  "ltr": True}
  assert "ltr" not in finetune.recorded_head_info(Pretraining(None),
                                                  types.SimpleNamespace(ltr=False))
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(TINY_CONFIG))
  model, _ = heads.build_pretraining_model(modeling.BertConfig.from_dict(TINY_CONFIG),
                                           use_next_sentence=False)
  out = tmp_path / "out"
  out.mkdir()
  checkpoints.RunCheckpoint(str(out), model, head_info=info).save()
  target = tmp_path / "hf"
  result = _script("export_encoder.py", [
      "--format=huggingface", f"--init_checkpoint={out}", f"--bert_config_file={config}",
      f"--vocab_file={_refusal_vocab(tmp_path)}", f"--export_dir={target}"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert result.stderr.strip().splitlines()[-1] == (
      "export_encoder.py: error: cannot export a left-to-right (--ltr) model to Hugging "
      "Face: its attention is causal, and Hugging Face's BERT classes attend in both "
      "directions, so they would compute other numbers than this model; use it with this "
      "project's scripts (--ltr)")
  assert not target.exists()


def test_eval_tags_follow_the_training_twins():
  from bert.training import evaluation  # pylint: disable=g-import-not-at-top
  assert evaluation.eval_tags({"eval_loss": 0.5, "eval_accuracy": 0.75, "eval_f1": 0.8,
                               "loss": 0.5, "num_examples": 12, "note": "x"}) == {
                                 "loss": 0.5, "accuracy": 0.75, "eval_f1": 0.8,
                                 "num_examples": 12.0}
  # Pretraining's evaluation has no eval_loss: its own loss is the loss tag.
  assert evaluation.eval_tags({"loss": 2.5, "masked_lm_accuracy": 0.1}) == {
      "loss": 2.5, "masked_lm_accuracy": 0.1}


def test_full_disk_in_the_hugging_face_writer_leaves_nothing(tmp_path, monkeypatch):
  import errno  # pylint: disable=g-import-not-at-top
  from bert.formats import hugging_face  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  config = modeling.BertConfig.from_dict(dict(TINY_CONFIG, vocab_size=40))
  model, _ = heads.build_classifier_model(config, 2)
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(f"[PAD]\n" if i == 0 else f"w{i}\n" for i in range(40)))

  real_write = hugging_face.file_io.write_bytes

  def full(path, data):  # the disk fills up while the weights are written
    if path.endswith(hugging_face.WEIGHTS_NAME):
      real_write(path, data[:100])
      raise OSError(errno.ENOSPC, "No space left on device", path)
    real_write(path, data)

  monkeypatch.setattr(hugging_face.file_io, "write_bytes", full)
  target = tmp_path / "hf"
  with pytest.raises(OSError) as caught:
    hugging_face.write_hugging_face(
        str(target), hugging_face.model_weights(model), config, str(vocab), True,
        head_info={"task": "MRPC", "head": "classifier", "labels": ["0", "1"]})
  assert caught.value.errno == errno.ENOSPC and str(target) in str(caught.value)
  assert sorted(os.listdir(tmp_path)) == ["vocab.txt"]  # no temporary directory left
