"""extract_features.py end to end on the shared real checkpoint, against an independent
implementation of the original: the original tokenizer algorithm (FullTokenizer) for the
tokens and the NumPy forward pass for the values, with weights read straight from the
checkpoint file by name (not through our loader)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import numpy_bert
from bert import tokenization
import cli_harness
from conftest import MINILM_DIR, shared_path
import tiny

LINES = [
    "Who was Jim Henson ? ||| Jim Henson was a puppeteer",
    "The café in Zürich serves 北京 dumplings, naïvely priced at €5!",
    "",
    "한국어 문장도 넣어 봅니다 ||| また日本語も",
    "a " * 40 + "||| " + "b " * 40,  # a pair truncated to max_seq_length
]


def _run(args, **kw):
  # The command line's real path in a warm process (no TensorFlow start-up per run).
  return cli_harness.run("extract_features.py", args, timeout=300, **kw)


def _reference(lines, layers, max_seq_length):
  prefix = os.path.join(MINILM_DIR, "bert_model.ckpt")
  reader = tf.train.load_checkpoint(prefix)
  weights = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
  with open(os.path.join(MINILM_DIR, "bert_config.json")) as f:
    cfg = json.load(f)
  tok = tokenization.FullTokenizer(os.path.join(MINILM_DIR, "vocab.txt"), True)
  out = []
  for line in lines:
    a, _, b = line.strip().partition(" ||| ")
    ta, tb = tok.tokenize(a), tok.tokenize(b) if b else []
    while len(ta) + len(tb) > max_seq_length - (3 if tb else 2):
      (ta if len(ta) > len(tb) else tb).pop()
    tokens = ["[CLS]"] + ta + ["[SEP]"] + (tb + ["[SEP]"] if tb else [])
    seg = [0] * (len(ta) + 2) + [1] * (len(tb) + 1 if tb else 0)
    ids = np.array([tok.convert_tokens_to_ids(tokens)])
    enc = numpy_bert.encoder(weights, cfg, ids, np.ones_like(ids), np.array([seg]))
    out.append((tokens, {i: enc["encoder_outputs"][i][0] for i in layers}))
  return out


def test_extract_features_matches_independent_original(tmp_path):
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  src = tmp_path / "in.txt"
  src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
  dst = tmp_path / "out.jsonl"
  result = _run([f"--input_file={src}", f"--output_file={dst}",
                 f"--vocab_file={MINILM_DIR}/vocab.txt",
                 f"--bert_config_file={MINILM_DIR}/bert_config.json",
                 f"--init_checkpoint={MINILM_DIR}/bert_model.ckpt",
                 "--layers=-1,-2,-6", "--max_seq_length=32", "--batch_size=2"])
  assert result.returncode == 0, result.stderr[-2000:]
  rows = [json.loads(line) for line in dst.read_text().splitlines()]
  assert [r["linex_index"] for r in rows] == list(range(len(LINES)))
  expected = _reference(LINES, [-1, -2, -6], 32)
  worst = 0.0
  for row, (tokens, layers) in zip(rows, expected):
    assert [f["token"] for f in row["features"]] == tokens
    for position, feature in enumerate(row["features"]):
      assert [l["index"] for l in feature["layers"]] == [-1, -2, -6]
      for layer in feature["layers"]:
        values = np.array(layer["values"])
        assert values.shape == (384,)
        worst = max(worst, float(np.abs(values - layers[layer["index"]][position]).max()))
  assert worst < 1e-4, worst
  assert len(rows[4]["features"]) == 32  # the long pair was truncated to max_seq_length
  print(f"largest difference to the NumPy reference: {worst:.2e}")


def test_extract_features_bad_inputs_fail_in_one_line(tmp_path):
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  src = tmp_path / "in.txt"
  src.write_bytes(b"fine line\nbad \xff\xfe bytes\n")
  dst = tmp_path / "out.jsonl"
  common = [f"--output_file={dst}", f"--bert_config_file={MINILM_DIR}/bert_config.json",
            f"--init_checkpoint={MINILM_DIR}/bert_model.ckpt"]
  result = _run([f"--input_file={src}", f"--vocab_file={MINILM_DIR}/vocab.txt"] + common)
  assert result.returncode == 2
  lines = result.stderr.strip().splitlines()
  assert f"{src}:2: not valid UTF-8" in lines[-1]
  assert "Traceback" not in result.stderr
  assert not dst.exists()


def test_empty_input_fails_in_one_line_and_writes_nothing(tmp_path):
  """Needs no shared data: a tiny config and vocabulary written here."""
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                               "the", "cat"]), encoding="utf-8")
  config = tmp_path / "bert_config.json"
  tiny.write_tiny_config(config, 7)
  src = tmp_path / "in.txt"
  src.write_bytes(b"")
  dst = tmp_path / "out.jsonl"
  result = _run([f"--input_file={src}", f"--output_file={dst}", f"--vocab_file={vocab}",
                 f"--bert_config_file={config}",
                 f"--init_checkpoint={tmp_path / 'model' / 'bert_model.ckpt'}",
                 "--max_seq_length=16", "--layers=-1,-3"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  assert result.stderr.strip().splitlines()[-1] == (
      f"extract_features.py: error: --input_file={src}: the file is empty; give one "
      "example a line ('text_a' or 'text_a ||| text_b')")
  assert sorted(os.listdir(tmp_path)) == ["bert_config.json", "in.txt", "vocab.txt"]


@pytest.mark.slow  # --normalize=nfc in the default suite: test_tfhub_modules, test_create_vocab
def test_normalize_nfc_composes_decomposed_input(tmp_path):
  """--normalize=nfc: NFD Hangul (as macOS writes it) gives the tokens and values of the
  NFC text, byte for byte; without it the decomposed syllables are [UNK]. Needs no
  shared data: a tiny random model and vocabulary written here."""
  import unicodedata  # pylint: disable=g-import-not-at-top
  from bert.extraction import extraction_activations  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                               "한국", "##어", "영화", "."]), encoding="utf-8")
  config_dict = tiny.tiny_config_dict(9)
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(config_dict))
  model = modeling.BertModel(modeling.BertConfig.from_dict(config_dict))
  prefix = str(tmp_path / "model" / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(model, prefix)
  nfc = "한국어 영화. ||| 영화.\n"
  (tmp_path / "nfc.txt").write_text(nfc, encoding="utf-8")
  (tmp_path / "nfd.txt").write_text(unicodedata.normalize("NFD", nfc), encoding="utf-8")
  common = [f"--vocab_file={vocab}", f"--bert_config_file={config}",
            f"--init_checkpoint={prefix}", "--do_lower_case=false", "--layers=-1",
            "--max_seq_length=16"]
  result = _run([f"--input_file={tmp_path / 'nfd.txt'}",
                 f"--output_file={tmp_path / 'nfd.jsonl'}", "--normalize=nfc"] + common)
  assert result.returncode == 0, result.stderr[-2000:]
  for name, normalize in (("nfc", None), ("nfd_plain", None)):
    source = tmp_path / ("nfc.txt" if name == "nfc" else "nfd.txt")
    extraction_activations.extract_file(str(source), str(tmp_path / f"{name}.jsonl"), str(vocab),
                                    False, str(config), prefix, "-1", 16, 8,
                                    normalize=normalize)
  assert (tmp_path / "nfd.jsonl").read_bytes() == (tmp_path / "nfc.jsonl").read_bytes()
  tokens = lambda name: [f["token"] for f in json.loads(  # noqa: E731
      (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8"))["features"]]
  assert tokens("nfd") == ["[CLS]", "한국", "##어", "영화", ".", "[SEP]", "영화", ".", "[SEP]"]
  assert tokens("nfd_plain") == ["[CLS]", "[UNK]", "[UNK]", ".", "[SEP]", "[UNK]", ".", "[SEP]"]
