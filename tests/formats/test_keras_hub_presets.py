"""export_encoder.py --format=keras_hub: a fine-tuned classifier as a keras-hub preset.

keras-hub is not among the project's requirements. The round trip (slow) runs where it is
installed, e.g. a separate virtual environment with requirements.txt and
keras-hub==0.32.0; elsewhere it is skipped with that hint. Without keras-hub the export is
one line saying how to install it (default suite).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert import heads
from bert import tokenization
from bert.formats import keras_hub_presets
from bert.training import checkpoints
from bert.utils import errors
from conftest import ROOT
from tiny import tiny_config, write_tiny_config

TEXTS = [
    ("The quick brown fox jumps over the lazy dog.", "A fox jumped over a dog."),
    ("Stocks fell sharply on Tuesday.", "Shares dropped on Tuesday, traders said."),
    ("He said the pie business does not fit.", "The pie business doesn't fit, he said."),
    ("Rain.", "It rained all day long in the small town by the river, and nobody went "
     "out at all."),
    ("Zebras are unknown here.", "Quokkas too."),  # words outside the vocabulary: [UNK]
    ("Café owners in Zürich said so.", "Naïve traders sold."),  # accents stripped
    # Equally long and cut: the original trims the second text first at a tie.
    ("Traders said stocks fell on a rainy day in the town.",
     "Nobody went out by the river on Tuesday, he said."),
]
SEQ_LENGTH = 16  # short enough that the long pairs are truncated, as the original does


def _vocab(path):
  words = sorted({token for pair in TEXTS for text in pair
                  for token in tokenization.BasicTokenizer(True).tokenize(text)}
                 - {"zebras", "quokkas"})
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + ["##s", "##ed"]
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path), len(tokens)


def _randomize(model, seed=4):
  # Far from the initializer's 0.02, so that each pair gets its own probabilities.
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    variable.assign(rng.normal(0, 0.5, variable.shape).astype("float32"))


def _ours(model, vocab_file):
  """Our model's outputs on TEXTS, packed by the original's rules at SEQ_LENGTH."""
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  rows = {"input_ids": [], "input_mask": [], "segment_ids": []}
  for text_a, text_b in TEXTS:
    tokens, segments = tokenization.pack_tokens(tokenizer.tokenize(text_a),
                                                tokenizer.tokenize(text_b), SEQ_LENGTH)
    padding = [0] * (SEQ_LENGTH - len(tokens))
    rows["input_ids"].append(tokenizer.convert_tokens_to_ids(tokens) + padding)
    rows["input_mask"].append([1] * len(tokens) + padding)
    rows["segment_ids"].append(segments + padding)
  rows = {name: np.array(value, np.int32) for name, value in rows.items()}
  return rows, np.asarray(model(rows, training=False)["logits"])


def test_the_keras_hub_format_without_keras_hub_is_one_line(monkeypatch):
  monkeypatch.setitem(sys.modules, "keras_hub", None)  # import keras_hub raises ImportError
  with pytest.raises(errors.UserError) as error:
    keras_hub_presets.import_keras_hub()
  assert str(error.value) == (
      "--format=keras_hub needs the keras-hub package, which this project does not "
      "install: pip install keras-hub==0.32.0")


@pytest.mark.slow
@pytest.mark.parametrize("head,labels", [("classifier", ["neg", "neutral", "pos"]),
                                         ("multi_label", ["sports", "finance"]),
                                         ("regression", None)])
def test_keras_hub_preset_loads_with_its_head_and_gives_our_numbers(tmp_path, head, labels):
  keras_hub = pytest.importorskip(
      "keras_hub", reason="keras-hub not installed: a venv with requirements.txt and "
      "keras-hub==0.32.0 runs this test")
  import keras  # pylint: disable=g-import-not-at-top
  vocab_file, vocab_size = _vocab(tmp_path / "vocab.txt")
  config_file = write_tiny_config(tmp_path / "bert_config.json", vocab_size)
  model, _ = heads.build_classifier_model(tiny_config(vocab_size),
                                          len(labels) if labels else 1)
  _randomize(model)
  run = tmp_path / "run"
  info = {"task": "Toy", "head": head, **({"labels": labels} if labels else {})}
  checkpoints.RunCheckpoint(str(run), model, head_info=info).save()
  export_dir = tmp_path / "preset"
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, "export_encoder.py"), "--format=keras_hub",
       f"--init_checkpoint={run}", f"--bert_config_file={config_file}",
       f"--vocab_file={vocab_file}", "--do_lower_case=True", f"--seq_length={SEQ_LENGTH}",
       f"--export_dir={export_dir}"],
      capture_output=True, text=True, timeout=600, cwd=str(tmp_path),
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  assert sorted(os.listdir(export_dir)) == [
      "assets", "config.json", "metadata.json", "model.weights.h5", "preprocessor.json",
      "task.json", "task.weights.h5", "tokenizer.json"]
  metadata = json.loads((export_dir / "metadata.json").read_text(encoding="utf-8"))
  assert (metadata["finetuning_task"], metadata["head"], metadata["labels"]) == (
      "Toy", head, labels)

  classifier = keras_hub.models.BertTextClassifier.from_preset(str(export_dir))
  assert classifier.num_classes == (len(labels) if labels else 1)
  assert classifier.preprocessor.sequence_length == SEQ_LENGTH
  rows, expected = _ours(model, vocab_file)
  pairs = ([a for a, _ in TEXTS], [b for _, b in TEXTS])
  # keras-hub's preprocessor packs the raw pairs as the original does, truncation included.
  packed = classifier.preprocessor(x=pairs)  # x=: a positional tuple would be (x, y)
  np.testing.assert_array_equal(np.asarray(packed["token_ids"]), rows["input_ids"])
  np.testing.assert_array_equal(np.asarray(packed["segment_ids"]), rows["segment_ids"])
  np.testing.assert_array_equal(np.asarray(packed["padding_mask"]), rows["input_mask"] == 1)
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  assert (rows["input_ids"] == 1).any()  # [UNK] is among them
  assert len(tokenizer.tokenize(TEXTS[3][1])) > SEQ_LENGTH  # and a pair that is cut
  assert [len(tokenizer.tokenize(text)) for text in TEXTS[6]] == [12, 12]
  assert tokenizer.tokenize(TEXTS[5][0])[:2] == ["cafe", "owners"]
  logits = classifier.predict(pairs, verbose=0)
  if head == "classifier":  # compared as probabilities; the other heads' logits as they are
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(expected))
    logits = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
    assert np.ptp(expected, axis=0).max() > 5e-3  # each pair its own answer
  np.testing.assert_allclose(logits, expected, rtol=0, atol=2e-6)
