"""run_multilabel.py end to end: a tiny random BERT on real CoNLL-2003 sentences' entity
types (train, eval, predict, export), its one-line refusals, and (slow) the shared MiniLM
against the majority baseline."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert import metrics
from bert.multilabel import multilabel_data
import cli_harness
import serving_checks
from bert import tokenization
from tiny import tiny_config_dict
from conftest import MINILM_DIR, ROOT, shared_path

# One layer: the run's files are checked against each other and the export, the same for
# any depth, and most of the run's time is tracing and exporting, which grows with layers.
TINY_CONFIG = tiny_config_dict(2000, num_hidden_layers=1)
LABELS = ["LOC", "MISC", "ORG", "PER"]


def run(args, expect=0, script="run_multilabel.py"):
  if script.startswith("tools/"):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, script), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  else:  # the command line's real path in a warm process (no TensorFlow start-up each)
    proc = cli_harness.run(script, args, timeout=1800)
  assert proc.returncode == expect, proc.stderr[-3000:]
  return proc


def read_key_values(path):
  return {k: float(v) for k, _, v in
          (line.strip().partition(" = ") for line in open(path, encoding="utf-8"))}


@pytest.fixture(scope="module")
def entity_types(tmp_path_factory):
  """tools/conll_entity_types.py on the shared CoNLL-2003 (all of it)."""
  out = tmp_path_factory.mktemp("conll_types")
  run([shared_path("conll2003"), str(out)], script="tools/conll_entity_types.py")
  return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, entity_types):
  """A tiny model (hidden 32, 3 layers, the first 2000 uncased WordPieces) and a data
  folder of the first 40 train / 12 dev sentences; test.tsv = dev.tsv (with labels)."""
  root = tmp_path_factory.mktemp("tiny")
  with open(shared_path("vocab", "uncased_vocab.txt"), encoding="utf-8") as handle:
    (root / "vocab.txt").write_text("".join(next(handle) for _ in range(2000)),
                                    encoding="utf-8")
  (root / "bert_config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
  data = root / "data"
  data.mkdir()
  lines = {name: open(entity_types / name, encoding="utf-8").readlines()
           for name in ("train.tsv", "dev.tsv")}
  (data / "train.tsv").write_text("".join(lines["train.tsv"][:40]), encoding="utf-8")
  for name in ("dev.tsv", "test.tsv"):
    (data / name).write_text("".join(lines["dev.tsv"][:12]), encoding="utf-8")
  (data / "labels.txt").write_text((entity_types / "labels.txt").read_text())
  return root


def model_flags(root):
  return [f"--vocab_file={root}/vocab.txt", f"--bert_config_file={root}/bert_config.json"]


def test_train_eval_predict_export(tiny, tmp_path):
  out = tmp_path / "out"
  run([f"--data_dir={tiny}/data", *model_flags(tiny), "--do_train", "--do_eval",
       "--do_predict", "--max_seq_length=32", "--train_batch_size=8",
       "--num_train_epochs=2", "--learning_rate=1e-3", f"--output_dir={out}",
       f"--export_dir={out}/export", "--litert=none"])  # LiteRT has tests of its own (tests/formats, tests/litert)
  results = read_key_values(out / "eval_results.txt")
  keys = {"eval_loss", "eval_accuracy", "micro_precision", "micro_recall", "micro_f1",
          "macro_f1", "f1_LOC", "f1_MISC", "f1_ORG", "f1_PER", "num_examples", "global_step"}
  # The driver may add the original's `loss` (= eval_loss); the Task does not.
  assert keys <= set(results) and set(results) - keys <= {"loss"}
  assert results.get("loss", results["eval_loss"]) == results["eval_loss"]
  assert results["global_step"] == int(40 / 8 * 2) and results["num_examples"] == 12
  # test.tsv is dev.tsv: its written probabilities give eval's figures again.
  rows = [line.rstrip("\n").split("\t") for line in open(out / "test_results.tsv")]
  assert rows[0] == ["labels"] + LABELS and len(rows) == 13
  probs = np.array([[float(p) for p in row[1:]] for row in rows[1:]])
  gold = multilabel_data.label_matrix(
      multilabel_data.read_examples(str(tiny / "data" / "dev.tsv"), LABELS), LABELS)
  predicted = (probs >= 0.5).astype(int)
  assert [row[0] for row in rows[1:]] == [
      ",".join(n for n, on in zip(LABELS, p) if on) for p in predicted]
  expected = metrics.multi_label_metrics(predicted, gold, LABELS)
  for key in ("micro_f1", "macro_f1", "f1_PER", "micro_precision"):
    assert results[key] == pytest.approx(expected[key])
  assert results["eval_accuracy"] == pytest.approx(expected["subset_accuracy"])
  loss = -np.mean(gold * np.log(probs) + (1 - gold) * np.log(1 - probs))
  assert results["eval_loss"] == pytest.approx(loss, abs=1e-5)
  # export/ids: the token-id signature alone, answering where tensorflow_text cannot be
  # imported, with the same probabilities on the original's token ids; then, in the same
  # fresh interpreter (one start-up, not two), the SavedModel with only TensorFlow and
  # tensorflow_text imported.
  texts = [line.split("\t")[0] for line in open(tiny / "data" / "test.tsv")]
  examples = multilabel_data.read_examples(str(tiny / "data" / "test.tsv"), LABELS)
  tokenizer = tokenization.FullTokenizer(str(tiny / "vocab.txt"), True)
  features = multilabel_data.convert_examples_to_features(examples, LABELS, 32, tokenizer)
  ids = [np.asarray(features[k]).tolist() for k in ("input_ids", "input_mask",
                                                    "segment_ids")]
  served_text = (
      "import json; import tensorflow as tf; import tensorflow_text\n"
      f"m = tf.saved_model.load({str(out / 'export')!r})\n"
      f"o = m.signatures['serve_text'](text_a=tf.constant({texts!r}))\n"
      "print(json.dumps({'p': o['probabilities'].numpy().tolist(), "
      "'l': [x.decode() for x in o['labels'].numpy()]}))")
  outputs, signatures, imported, served = serving_checks.answer_without_tensorflow_text(
      out / "export" / "ids", ids, dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
      then=served_text)
  assert signatures == ["serving_default"] and not imported
  np.testing.assert_allclose(outputs["probabilities"], probs, atol=2e-6)
  answer = json.loads(served)
  np.testing.assert_allclose(answer["p"], probs, atol=2e-6)
  assert answer["l"] == [row[0] for row in rows[1:]]
  assert outputs["predictions"] == predicted.tolist()


def test_bad_inputs_are_one_line(tiny, tmp_path):
  (tmp_path / "labels.txt").write_text("PER\nLOC\n")
  (tmp_path / "dev.tsv").write_text("Peter Blackburn\tPER\nBRUSSELS\tLOC,ORG\n")
  common = [f"--data_dir={tmp_path}", *model_flags(tiny), "--do_eval",
            "--max_seq_length=32", f"--output_dir={tmp_path}/out"]
  proc = run(common, expect=2)
  assert proc.stderr.strip().splitlines()[-1] == (
      f"run_multilabel.py: error: {tmp_path}/dev.tsv:2: unknown label 'ORG'; labels_file "
      "has PER, LOC")
  proc = run(common + ["--threshold=1.5"], expect=2)
  assert proc.stderr.strip().splitlines()[-1] == (
      "run_multilabel.py: error: --threshold=1.5: must be between 0 and 1")
  assert "Traceback" not in proc.stderr
  assert not os.path.exists(f"{tmp_path}/out/eval_results.txt")


@pytest.mark.slow
def test_minilm_beats_the_majority_baseline(entity_types, tmp_path):
  """MiniLM fine-tuned on 4,000 training sentences for 2 epochs, scored on all of dev
  (3,250 sentences). The majority baseline (each label's majority in train: absent)
  has micro/macro F1 0 and subset accuracy 0.198; predicting every label gives micro F1
  0.480, macro F1 0.476 (docs/multilabel.md)."""
  minilm = shared_path("models", "uncased_L-6_H-384_A-12")
  assert minilm == MINILM_DIR
  out = tmp_path / "out"
  run([f"--data_dir={entity_types}", f"--vocab_file={minilm}/vocab.txt",
       f"--bert_config_file={minilm}/bert_config.json",
       f"--init_checkpoint={minilm}/bert_model.ckpt", "--do_train", "--do_eval",
       "--max_seq_length=64", "--train_batch_size=32", "--eval_batch_size=64",
       "--learning_rate=5e-5", "--num_train_epochs=2", "--max_train_examples=4000",
       f"--output_dir={out}"])
  results = read_key_values(out / "eval_results.txt")
  gold = multilabel_data.label_matrix(multilabel_data.read_examples(
      str(entity_types / "dev.tsv"), LABELS), LABELS)
  majority = metrics.multi_label_metrics(np.zeros_like(gold), gold, LABELS)
  every = metrics.multi_label_metrics(np.ones_like(gold), gold, LABELS)
  assert majority["subset_accuracy"] == pytest.approx(0.198, abs=1e-3)
  assert results["num_examples"] == 3250
  assert results["micro_f1"] > every["micro_f1"] + 0.2
  assert results["macro_f1"] > every["macro_f1"] + 0.2
  assert results["eval_accuracy"] > majority["subset_accuracy"] + 0.2
