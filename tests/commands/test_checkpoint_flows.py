"""One restore policy for every script: a run's own checkpoints, saved WITH
their optimizer by the real scripts, used as --init_checkpoint by the others, with the
numbers equal to loading the Google-layout twin; and the runs that must refuse.

Everything is made here (tiny vocabulary, config, TFRecords, TSV files), so the tests
need no ../shared. Each script runs through its real command line, in its warm process
(tests/support/cli_harness.py).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert.training import checkpoints

from bert import input_pipeline
from bert import modeling
from bert import tokenization
from bert.training import model_config
import cli_harness
import tiny

WORDS = ["the", "cat", "dog", "sat", "on", "a", "mat", "ran", "fast", "slow", "good",
         "bad", "movie", "was", "very", "not", "is", "it", "and", "but"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, ".", ",", "##s"]
# One layer: what passes between the commands is the same for any depth, and tracing each
# run's steps (most of this file's time) grows with the layers.
CONFIG = tiny.tiny_config_dict(len(VOCAB), max_position_embeddings=32, num_hidden_layers=1)
SEQ, PRED = 16, 3


def _run(script, args, expect=0):
  result = cli_harness.run(script, args, timeout=900)
  assert result.returncode == expect, result.stderr[-3000:]
  return result


def _record(i, rng):
  ids = [2] + [int(x) for x in rng.integers(5, len(VOCAB), SEQ - 2)] + [3]
  return {"input_ids": ids, "input_mask": [1] * SEQ, "segment_ids": [0] * SEQ,
          "masked_lm_positions": [1, 2, 3], "masked_lm_ids": ids[1:4],
          "masked_lm_weights": [1.0, 1.0, 1.0], "next_sentence_labels": [i % 2]}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
  """run_pretraining.py for 4 steps: output_dir with ckpt-4 (weights + optimizer slots)
  and its Google-layout twin in output_dir/pretrained/."""
  root = tmp_path_factory.mktemp("flows")
  (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
  (root / "bert_config.json").write_text(json.dumps(CONFIG))
  rng = np.random.default_rng(0)
  input_pipeline.write_examples(str(root / "data.tfrecord"),
                                (_record(i, rng) for i in range(16)))
  out = root / "pretrain"
  _run("run_pretraining.py", [
      f"--input_file={root / 'data.tfrecord'}", f"--bert_config_file={root / 'bert_config.json'}",
      f"--output_dir={out}", "--do_train", "--do_eval", "--max_eval_steps=2",
      f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PRED}", "--train_batch_size=4",
      "--num_train_steps=4", "--num_warmup_steps=1", "--learning_rate=1e-2",
      "--log_every_steps=2"])
  names = [n for n, _ in tf.train.list_variables(str(out / "ckpt-4"))]
  assert any(n.startswith("optimizer/") for n in names)  # saved with its slots
  data = root / "tsv"
  data.mkdir()
  rows = ["the movie was good\t1", "the movie was bad\t0", "a good cat\t1",
          "a bad dog\t0", "it is not good\t0", "it is very good\t1", "the cat sat\t1",
          "the dog ran\t0"]
  for split in ("train", "dev", "test"):
    (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
  return root


def _common(root):
  return [f"--vocab_file={root / 'vocab.txt'}",
          f"--bert_config_file={root / 'bert_config.json'}", f"--max_seq_length={SEQ}"]


def _classify(root, out, init, *extra):
  return _run("run_classifier.py", [
      *_common(root), "--task_name=tsv", f"--data_dir={root / 'tsv'}", f"--output_dir={out}",
      f"--init_checkpoint={init}", "--do_train", "--do_eval", "--num_train_steps=3",
      "--train_batch_size=4", "--eval_batch_size=4", "--learning_rate=1e-3", *extra])


def _eval_results(out):
  return (out / "eval_results.txt").read_text()


@pytest.mark.slow  # 62 s: five command runs (make test-slow)
def test_classifier_from_a_pretraining_run_equals_its_google_twin(pretrained, tmp_path):
  root = pretrained
  _classify(root, tmp_path / "from_google", root / "pretrain" / "pretrained" / "bert_model.ckpt")
  _classify(root, tmp_path / "from_dir", root / "pretrain")
  _classify(root, tmp_path / "from_ckpt", root / "pretrain" / "ckpt-4.index")
  google = _eval_results(tmp_path / "from_google")
  assert "eval_accuracy" in google and "global_step = 3" in google
  # The same weights loaded three ways, the same seed: the same fine-tuning, to the byte.
  assert _eval_results(tmp_path / "from_dir") == google
  assert _eval_results(tmp_path / "from_ckpt") == google


def _scalars(folder):
  """{tag: [(step, value)]} of the classic scalar summaries in one TensorBoard folder."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  accumulator = event_accumulator.EventAccumulator(str(folder))
  accumulator.Reload()
  return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)]
          for tag in accumulator.Tags()["scalars"]}


def test_tensorboard_shows_train_and_eval_curves(pretrained, tmp_path):
  """TensorBoard's curves: scalars (not tensors) in output_dir/train and output_dir/eval, the eval
  ones at the step they were measured, for run_pretraining and run_classifier; and the
  `tensorboard` command installed beside this Python."""
  train = _scalars(pretrained / "pretrain" / "train")
  assert {"loss", "learning_rate", "examples_per_second", "global_norm",
          "masked_lm_accuracy", "next_sentence_accuracy"} <= set(train)
  assert [step for step, _ in train["loss"]] == [2, 4]
  evaluation = _scalars(pretrained / "pretrain" / "eval")
  assert sorted(evaluation) == ["loss", "masked_lm_accuracy", "masked_lm_loss",
                                "next_sentence_accuracy", "next_sentence_loss"]
  results = dict(line.split(" = ") for line in
                 (pretrained / "pretrain" / "eval_results.txt").read_text().splitlines())
  assert evaluation["masked_lm_accuracy"] == [
      (4, pytest.approx(float(results["masked_lm_accuracy"]), rel=1e-6))]
  out = tmp_path / "classifier"
  _classify(pretrained, out, pretrained / "pretrain")
  assert {"loss", "accuracy", "learning_rate"} <= set(_scalars(out / "train"))
  evaluation = _scalars(out / "eval")
  # eval_accuracy / eval_loss under the training twins' tags (one card each).
  assert {"accuracy", "loss"} <= set(evaluation)
  assert not {"eval_accuracy", "eval_loss"} & set(evaluation)
  assert [step for step, _ in evaluation["accuracy"]] == [3]
  tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
  version = subprocess.run([tensorboard, "--version"], capture_output=True, text=True,
                           timeout=120)
  assert version.returncode == 0 and version.stdout.strip()[0].isdigit(), version.stderr


def _encode(root, prefix_or_dir, text):
  config = model_config.load_bert_config(str(root / "bert_config.json"))
  encoder = modeling.BertModel(config)
  report = checkpoints.load_checkpoint(encoder, str(prefix_or_dir))
  tokenizer = tokenization.FullTokenizer(str(root / "vocab.txt"), True)
  tokens = ["[CLS]"] + tokenizer.tokenize(text) + ["[SEP]"]
  ids = np.array([tokenizer.convert_tokens_to_ids(tokens)], np.int32)
  out = encoder({"input_ids": ids, "input_mask": np.ones_like(ids),
                 "segment_ids": np.zeros_like(ids)}, training=False)
  return report, np.asarray(out["sequence_output"])[0]


def _features(root, init, out_file):
  _run("extract_features.py", [
      *_common(root), f"--input_file={root / 'lines.txt'}", f"--output_file={out_file}",
      f"--init_checkpoint={init}", "--layers=-1", "--batch_size=2"])
  line = json.loads(out_file.read_text().splitlines()[0])
  return np.array([f["layers"][0]["values"] for f in line["features"]])


@pytest.mark.slow  # 45 s: four command runs (make test-slow)
def test_extract_features_reads_pretraining_and_classifier_runs(pretrained, tmp_path):
  root = pretrained
  (root / "lines.txt").write_text("the cat sat on a mat\n")
  twin = _features(root, root / "pretrain" / "pretrained" / "bert_model.ckpt",
                   tmp_path / "google.jsonl")
  ours = _features(root, root / "pretrain", tmp_path / "ours.jsonl")
  np.testing.assert_array_equal(ours, twin)
  # A fine-tuned classifier's output_dir (checkpoint saved with optimizer and head): the
  # encoder it trained, equal to what our loader reads from it in-process.
  classifier = tmp_path / "classifier"
  _classify(root, classifier, root / "pretrain")
  tuned = _features(root, classifier, tmp_path / "tuned.jsonl")
  report, expected = _encode(root, classifier, "the cat sat on a mat")
  assert not report["whole_model"] and report["missing"] == []
  np.testing.assert_allclose(tuned, expected, atol=1.5e-6)  # JSON keeps 6 decimals
  assert np.abs(tuned - twin).max() > 1e-3  # fine-tuning moved the encoder


@pytest.mark.slow  # the default run has these refusals in the catalogue's harness
def test_runs_that_must_refuse(pretrained, tmp_path):
  root = pretrained
  classifier = tmp_path / "classifier"
  _classify(root, classifier, root / "pretrain")
  # Eval-only in an empty output_dir, no --init_checkpoint: nothing trained to score.
  result = _run("run_classifier.py", [
      *_common(root), "--task_name=tsv", f"--data_dir={root / 'tsv'}", "--do_eval",
      f"--output_dir={tmp_path / 'empty'}"], expect=2)
  assert result.stderr.strip().splitlines()[-1] == (
      f"run_classifier.py: error: nothing trained to evaluate: --output_dir="
      f"{tmp_path / 'empty'} holds no checkpoint and no --init_checkpoint was given; pass "
      "--do_train, or --output_dir (or --init_checkpoint) of a trained run")
  assert not (tmp_path / "empty" / "eval_results.txt").exists()
  # Eval-only from a pretrained encoder: the classifier head would be random.
  result = _run("run_classifier.py", [
      *_common(root), "--task_name=tsv", f"--data_dir={root / 'tsv'}", "--do_eval",
      f"--output_dir={tmp_path / 'empty2'}",
      f"--init_checkpoint={root / 'pretrain' / 'pretrained' / 'bert_model.ckpt'}"], expect=2)
  assert "holds no trained weights for output_bias" in result.stderr.splitlines()[-1]
  # A `checkpoint` file naming a checkpoint that is gone.
  broken = tmp_path / "broken"
  broken.mkdir()
  (broken / "checkpoint").write_text('model_checkpoint_path: "ckpt-9"\n')
  result = _run("run_classifier.py", [
      *_common(root), "--task_name=tsv", f"--data_dir={root / 'tsv'}", "--do_eval",
      f"--output_dir={broken}"], expect=2)
  assert "names ckpt-9, which does not exist" in result.stderr.splitlines()[-1]
  # Eval-only of the trained classifier works, and writes its own step.
  before = _eval_results(classifier)
  (classifier / "eval_results.txt").unlink()
  _run("run_classifier.py", [*_common(root), "--task_name=tsv", f"--data_dir={root / 'tsv'}",
                             "--do_eval", f"--output_dir={classifier}"])
  again = dict(line.split(" = ") for line in _eval_results(classifier).splitlines())
  first = dict(line.split(" = ") for line in before.splitlines())
  assert again.keys() == first.keys() and again["global_step"] == first["global_step"] == "3"
  assert again["eval_accuracy"] == first["eval_accuracy"]
  # The same weights in another process: equal up to float32 rounding in the kernels.
  assert float(again["eval_loss"]) == pytest.approx(float(first["eval_loss"]), rel=1e-6)
  # The classifier's output_dir given to run_pretraining (another model): one line.
  result = _run("run_pretraining.py", [
      f"--input_file={root / 'data.tfrecord'}", f"--bert_config_file={root / 'bert_config.json'}",
      f"--output_dir={classifier}", "--do_eval", f"--max_seq_length={SEQ}",
      f"--max_predictions_per_seq={PRED}"], expect=2)
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith(f"run_pretraining.py: error: --output_dir={classifier} holds a "
                         "checkpoint (ckpt-3) of a different model")
  assert "Traceback" not in result.stderr
