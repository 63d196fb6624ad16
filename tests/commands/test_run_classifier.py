"""run_classifier.py end to end on real MRPC rows with a tiny model; SavedModel reload;
one-line errors. The slow tests fine-tune the shared MiniLM checkpoint on GLUE."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cli_harness
from conftest import MINILM_DIR, UNCASED_VOCAB, shared_path
import tiny

# One layer: these runs check files against each other, the same for any depth, and most
# of their time is tracing and exporting the model, which grows with the layers.
TINY_CONFIG = tiny.tiny_config_dict(30522, num_hidden_layers=1)


def _env():
  env = dict(os.environ)
  env["TF_CPP_MIN_LOG_LEVEL"] = "3"
  return env


def _run(args, timeout=600):
  # The command line's real path in a warm process (no TensorFlow start-up per run).
  return cli_harness.run("run_classifier.py", args, timeout=timeout)


def _mrpc_subset(folder, rows):
  """The first `rows` data rows of each MRPC file, bytes unchanged (BOM and header kept)."""
  for split in ("train", "dev", "test"):
    with open(shared_path("glue", "MRPC", f"{split}.tsv"), "rb") as handle:
      lines = handle.read().split(b"\n")
    (folder / f"{split}.tsv").write_bytes(b"\n".join(lines[:rows + 1]) + b"\n")


# Runs in a fresh interpreter that imports nothing but TensorFlow and tensorflow_text.
_RELOAD = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
export_dir, texts_a, texts_b, ids = sys.argv[1], *json.loads(sys.argv[2:][0])
model = tf.saved_model.load(export_dir)
text = model.signatures["serve_text"](text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
by_ids = model.signatures["serving_default"](
    input_ids=tf.constant(ids[0], tf.int32), input_mask=tf.constant(ids[1], tf.int32),
    segment_ids=tf.constant(ids[2], tf.int32))
print(json.dumps({"text_probabilities": text["probabilities"].numpy().tolist(),
                  "text_labels": [x.decode() for x in text["label"].numpy()],
                  "ids_probabilities": by_ids["probabilities"].numpy().tolist(),
                  "modules": sorted(m for m in sys.modules
                                    if m == "bert" or m.startswith("bert."))}))
"""


def test_train_eval_predict_export_on_real_mrpc_rows(tmp_path):
  data = tmp_path / "mrpc"
  data.mkdir()
  _mrpc_subset(data, 24)
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(TINY_CONFIG))
  out, export_dir = tmp_path / "out", tmp_path / "export"
  result = _run([
      "--task_name=MRPC", "--do_train=true", "--do_eval=true", "--do_predict=true",
      f"--data_dir={data}", f"--vocab_file={UNCASED_VOCAB}", f"--bert_config_file={config}",
      "--max_seq_length=48", "--train_batch_size=8", "--learning_rate=1e-3",
      "--num_train_epochs=1", f"--output_dir={out}", f"--export_dir={export_dir}",
      "--litert=none"])  # LiteRT has tests of its own (tests/formats, tests/litert)
  assert result.returncode == 0, result.stderr[-3000:]
  assert "step 3/3" in result.stderr  # 24 examples / 8 per batch * 1 epoch

  values = {}
  for line in (out / "eval_results.txt").read_text().splitlines():
    key, value = line.split(" = ")
    values[key] = float(value)
  assert sorted(values) == ["eval_acc_and_f1", "eval_accuracy", "eval_f1", "eval_loss",
                            "global_step", "loss"]
  assert values["global_step"] == 3 and values["loss"] == values["eval_loss"]
  assert 0.0 < values["eval_loss"] < 2.0

  probabilities = np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2)
  assert probabilities.shape == (24, 2)
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
  submission = (out / "MRPC.tsv").read_text().splitlines()
  assert submission[0] == "index\tprediction" and len(submission) == 25
  assert [line.split("\t") for line in submission[1:]] == [
      [str(i), str(int(p[1] > p[0]))] for i, p in enumerate(probabilities)]
  # The dev accuracy is consistent with the dev predictions it was computed from.
  assert values["eval_accuracy"] * 24 == pytest.approx(round(values["eval_accuracy"] * 24))

  # The SavedModel in a process with only tensorflow + tensorflow_text: the raw-text
  # signature gives the probabilities the run wrote for the same test rows.
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  examples = classifier_data.MrpcProcessor().get_test_examples(str(data))
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  features = [classifier_features.convert_single_example(e, ["0", "1"], 48, full)
              for e in examples[:4]]
  ids = [[f.input_ids for f in features], [f.input_mask for f in features],
         [f.segment_ids for f in features]]
  payload = json.dumps([[e.text_a for e in examples], [e.text_b for e in examples], ids])
  reload = subprocess.run([sys.executable, "-c", _RELOAD, str(export_dir), payload],
                          capture_output=True, text=True, env=_env(), timeout=300)
  assert reload.returncode == 0, reload.stderr[-3000:]
  served = json.loads(reload.stdout.strip().splitlines()[-1])
  assert served["modules"] == []
  np.testing.assert_allclose(served["text_probabilities"], probabilities, atol=2e-6)
  np.testing.assert_allclose(served["ids_probabilities"], probabilities[:4], atol=2e-6)
  assert served["text_labels"] == [str(int(p[1] > p[0])) for p in probabilities]


def test_bad_row_is_one_line_error_and_nothing_written(tmp_path):
  data = tmp_path / "rte"
  data.mkdir()
  header = "index\tsentence1\tsentence2\tlabel\n"
  (data / "train.tsv").write_text(header + "0\tA dog runs.\tAn animal runs.\tentailment\n")
  (data / "dev.tsv").write_text(header + "0\tA dog runs.\tAn animal runs.\tentailment\n"
                                "1\tA cat sleeps.\tnot_entailment\n")
  # A vocabulary and config of its own: the test needs no ../shared.
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog",
                              "runs", "an", "animal", "cat", "sleeps", "."]) + "\n")
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(dict(TINY_CONFIG, vocab_size=13)))
  out = tmp_path / "out"
  result = _run(["--task_name=rte", "--do_train=true", "--do_eval=true", f"--data_dir={data}",
                 f"--vocab_file={vocab}", f"--bert_config_file={config}",
                 "--max_seq_length=48", f"--output_dir={out}"])
  assert result.returncode == 2
  errors = [line for line in result.stderr.splitlines() if "error:" in line]
  assert errors == [f"run_classifier.py: error: {data / 'dev.tsv'}:3: too few columns: the "
                    "row has 3, the header (line 1) has 4; check the delimiter and that each "
                    "row is on one line"]
  assert result.stderr.strip().splitlines()[-1] == errors[0]
  assert "Traceback" not in result.stderr
  assert not (out / "eval_results.txt").exists() and not (out / "ckpt-1.index").exists()


def test_a_best_metric_the_task_does_not_report_is_one_line_before_training(tmp_path):
  data = tmp_path / "rte"
  data.mkdir()
  header = "index\tsentence1\tsentence2\tlabel\n"
  for split in ("train", "dev"):
    (data / f"{split}.tsv").write_text(header + "0\tA dog runs.\tAn animal runs.\t"
                                       "entailment\n")
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog",
                              "runs", "an", "animal", "."]) + "\n")
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(dict(TINY_CONFIG, vocab_size=11)))
  out = tmp_path / "out"
  common = ["--task_name=rte", "--do_train=true", "--do_eval=true", f"--data_dir={data}",
            f"--vocab_file={vocab}", f"--bert_config_file={config}",
            "--max_seq_length=16", f"--output_dir={out}"]
  result = _run(common + ["--eval_every_steps=2", "--best_metric=eval_f1"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert result.stderr.strip().splitlines()[-1] == (
      "run_classifier.py: error: --best_metric=eval_f1: Rte's dev evaluation reports "
      "eval_accuracy, eval_loss; name one of them")
  assert "Traceback" not in result.stderr and not out.exists()
  # Without --eval_every_steps there is nothing to choose from.
  result = _run(common + ["--early_stopping_patience=3"])
  assert result.returncode == 2
  assert result.stderr.strip().splitlines()[-1] == (
      "run_classifier.py: error: --early_stopping_patience=3 counts the evaluations during "
      "training: it needs --eval_every_steps (without it the flag does nothing)")


_HANGUL_WORDS = ["정말", "재미", "##있다", "지루", "##하다", "최악", "영화", "배우", "연기",
                 "좋다", "별로", "."]
_NFC_ROWS = [("정말 재미있다.", "1"), ("지루하다 최악.", "0"), ("배우 연기 좋다.", "1"),
             ("영화 별로.", "0"), ("정말 좋다.", "1"), ("연기 최악.", "0")]


@pytest.mark.slow  # --normalize=nfc in the default suite: test_tfhub_modules, test_create_vocab
def test_normalize_nfc_reads_decomposed_text_as_composed_in_training_and_export(tmp_path):
  """--normalize=nfc: Hangul written decomposed (NFD, as macOS copies it) is tokenized as
  the composed text both when the run reads its files and in the exported serve_text
  signature. Without it, the same NFD text is [UNK]s (the original's behaviour)."""
  import unicodedata  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + _HANGUL_WORDS)
                   + "\n", encoding="utf-8")
  nfd = [unicodedata.normalize("NFD", text) for text, _ in _NFC_ROWS]
  assert nfd[0] != _NFC_ROWS[0][0]
  plain = fast_tokenization.FastTokenizer(str(vocab), do_lower_case=False)
  composed = fast_tokenization.FastTokenizer(str(vocab), do_lower_case=False, normalize="nfc")
  assert plain.tokenize(tf.constant(nfd[:1])).flat_values.numpy().tolist() == [1, 1, 16]
  assert composed.tokenize(tf.constant(nfd[:1])).flat_values.numpy().tolist() == [5, 6, 7, 16]

  data = tmp_path / "data"
  data.mkdir()
  for split in ("train", "test"):
    (data / f"{split}.tsv").write_text(
        "".join(f"{text}\t{label}\n" for text, (_, label) in zip(nfd, _NFC_ROWS)),
        encoding="utf-8")
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(dict(TINY_CONFIG, vocab_size=5 + len(_HANGUL_WORDS))))
  out, export_dir = tmp_path / "out", tmp_path / "export"
  result = _run(["--task_name=tsv", "--do_train=true", "--do_predict=true",
                 "--do_lower_case=false", "--normalize=nfc", f"--data_dir={data}",
                 f"--vocab_file={vocab}", f"--bert_config_file={config}",
                 "--max_seq_length=16", "--train_batch_size=3", "--learning_rate=1e-2",
                 "--num_train_epochs=2", "--label_list=0,1", f"--output_dir={out}",
                 f"--export_dir={export_dir}", "--litert=none"])
  assert result.returncode == 0, result.stderr[-3000:]
  probabilities = np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2)
  serve = tf.saved_model.load(str(export_dir)).signatures["serve_text"]
  from_nfd = serve(text_a=tf.constant(nfd))["probabilities"].numpy()
  from_nfc = serve(text_a=tf.constant([text for text, _ in _NFC_ROWS]))["probabilities"]
  # The run predicted its NFD test file as the export predicts NFC text: both composed it.
  np.testing.assert_allclose(from_nfd, probabilities, atol=2e-6)
  np.testing.assert_allclose(from_nfc.numpy(), probabilities, atol=2e-6)
  # ... and what it learned depends on the words, which [UNK]s would have hidden.
  assert np.ptp(probabilities[:, 1]) > 1e-3


# --------------------------------------------------------------------------- slow: real runs


def _finetune(tmp_path, task, folder, learning_rate, epochs=3.0):
  out = tmp_path / task
  result = _run([
      f"--task_name={task}", "--do_train=true", "--do_eval=true",
      f"--data_dir={shared_path('glue', folder)}",
      f"--vocab_file={os.path.join(MINILM_DIR, 'vocab.txt')}",
      f"--bert_config_file={os.path.join(MINILM_DIR, 'bert_config.json')}",
      f"--init_checkpoint={os.path.join(MINILM_DIR, 'bert_model.ckpt')}",
      "--max_seq_length=128", "--train_batch_size=32", f"--learning_rate={learning_rate}",
      f"--num_train_epochs={epochs}", "--log_every_steps=50", f"--output_dir={out}"],
      timeout=4 * 3600)
  assert result.returncode == 0, result.stderr[-3000:]
  values = {}
  for line in (out / "eval_results.txt").read_text().splitlines():
    key, value = line.split(" = ")
    values[key] = float(value)
  return values


@pytest.mark.slow
def test_minilm_mrpc(tmp_path):
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  values = _finetune(tmp_path, "mrpc", "MRPC", 5e-5)
  assert values["eval_accuracy"] > 0.75 and values["eval_f1"] > 0.83


@pytest.mark.slow
def test_minilm_rte(tmp_path):
  values = _finetune(tmp_path, "rte", "RTE", 5e-5)
  assert values["eval_accuracy"] > 0.55


@pytest.mark.slow
def test_minilm_stsb(tmp_path):
  values = _finetune(tmp_path, "stsb", "STS-B", 5e-5)
  assert values["eval_pearson"] > 0.80 and values["eval_spearman"] > 0.80


@pytest.mark.slow
def test_minilm_cola(tmp_path):
  values = _finetune(tmp_path, "cola", "CoLA", 5e-5)
  assert values["eval_matthews_corrcoef"] > 0.2
