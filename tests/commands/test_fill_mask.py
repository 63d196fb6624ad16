"""fill_mask.py on a tiny model pretrained a few steps by run_pretraining.py: its top-k
tokens and probabilities against an independent NumPy forward pass of the encoder and
the masked-LM head (weights read from the checkpoint file by Google's names, not through
our loader); the training folder, the Google-layout twin and the Hugging Face export give
the same numbers; checkpoints without the head and texts that cannot be filled are
refused in one line."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import numpy_bert
from bert import input_pipeline
from bert import modeling
from bert import tokenization
from bert.extraction import extraction_fill_mask
from bert.extraction import extraction_options
from bert.formats import checkpoint_files
from bert.formats import hugging_face
from bert.training import export_loading
from bert.training import model_config
from bert.utils import errors
from conftest import MINILM_DIR, shared_path
from script_runs import run_script
import tiny

WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "in", "mat", "house", "man",
         "went", "home", "walk", "play", "good", "day", "it", "was", "."]
VOCAB = (["[PAD]"] + [f"[unused{i}]" for i in range(3)] + ["[UNK]", "[CLS]", "[SEP]",
                                                           "[MASK]"]
         + WORDS + ["##s", "##ed", "##ing"])
SEQ, PREDS = 16, 3
LINES = ["the cat sat on the [MASK] .", "", "a [MASK] went home , it was a good [MASK] .",
         "The Dog [MASK]ed in the house."]


def _records(count):
  """Masked-LM records over the tiny vocabulary: a few fixed sentences, one position
  masked each."""
  ids = {t: i for i, t in enumerate(VOCAB)}
  sentences = [["the", "cat", "sat", "on", "the", "mat", "."],
               ["a", "man", "went", "home", "."], ["it", "was", "a", "good", "day", "."],
               ["the", "dog", "walk", "##ed", "in", "the", "house", "."]]
  for i in range(count):
    words = sentences[i % len(sentences)]
    tokens = [ids["[CLS]"]] + [ids[w] for w in words] + [ids["[SEP]"]]
    position = 1 + (i // len(sentences)) % len(words)
    original = tokens[position]
    tokens[position] = ids["[MASK]"]
    pad = SEQ - len(tokens)
    yield {"input_ids": tokens + [0] * pad, "input_mask": [1] * len(tokens) + [0] * pad,
           "segment_ids": [0] * SEQ, "masked_lm_positions": [position, 0, 0],
           "masked_lm_ids": [original, 0, 0], "masked_lm_weights": [1.0, 0.0, 0.0],
           "next_sentence_labels": [i % 2]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  """A tiny model pretrained 6 steps: out/ (ours), out/pretrained/ (Google's layout), the
  Hugging Face export of it, and the input file."""
  base = tmp_path_factory.mktemp("fill_mask")
  vocab = base / "vocab.txt"
  vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
  # One layer: the NumPy reference computes any depth the same way, and pretraining and
  # exporting (most of this file's time) grow with the layers.
  config = tiny.write_tiny_config(base / "bert_config.json", len(VOCAB),
                                  max_position_embeddings=SEQ, num_hidden_layers=1)
  data = str(base / "data.tfrecord")
  input_pipeline.write_examples(data, _records(32))
  out = base / "out"
  run_script("run_pretraining.py", f"--input_file={data}", f"--bert_config_file={config}",
             f"--output_dir={out}", "--do_train", f"--max_seq_length={SEQ}",
             f"--max_predictions_per_seq={PREDS}", "--train_batch_size=8",
             "--num_train_steps=6", "--num_warmup_steps=1", "--learning_rate=1e-2",
             "--save_checkpoints_steps=6", "--steps_per_loop=1")
  source = export_loading.source(model_config.load_bert_config(config),
                                 str(out / "pretrained" / "bert_model.ckpt"), str(vocab),
                                 do_lower_case=True)
  architecture, _, left_out = hugging_face.export(str(base / "hf"), source)
  assert (architecture, left_out) == ("BertForPreTraining", [])
  (base / "input.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
  return base


def _reference(base, lines, top_k):
  """Per text: [(tokens, probabilities)] of each mask, computed in NumPy (float64) from
  the Google-layout checkpoint's tensors read by name."""
  reader = tf.train.load_checkpoint(str(base / "out" / "pretrained" / "bert_model.ckpt"))
  weights = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
  cfg = json.loads((base / "bert_config.json").read_text())
  tokenizer = tokenization.FullTokenizer(str(base / "vocab.txt"), True)
  found = []
  for line in lines:
    tokens = []
    for index, part in enumerate(line.split("[MASK]")):
      tokens += (["[MASK]"] if index else []) + tokenizer.tokenize(part)
    pieces = ["[CLS]", *tokens, "[SEP]"]
    ids = np.array([tokenizer.convert_tokens_to_ids(pieces)])
    sequence = numpy_bert.encoder(weights, cfg, ids, np.ones_like(ids),
                                  np.zeros_like(ids))["sequence_output"]
    positions = [i for i, t in enumerate(pieces) if t == "[MASK]"]
    logits = numpy_bert.masked_lm_logits(weights, cfg, sequence, [positions])[0]
    probabilities = numpy_bert.softmax(logits)
    masks = []
    for row in probabilities:
      order = np.argsort(-row, kind="stable")[:top_k]
      masks.append((tokenizer.convert_ids_to_tokens(order.tolist()), row[order]))
    found.append((tokens, masks))
  return found


def _read(path):
  return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_the_command_equals_numpy_on_googles_names(run, tmp_path):
  prefix = run / "out" / "pretrained" / "bert_model.ckpt"
  names = set(checkpoint_files.checkpoint_variables(str(prefix)))
  assert {"cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
          "cls/predictions/transform/LayerNorm/gamma",
          "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias"} <= names
  output = tmp_path / "masks.jsonl"
  run_script("fill_mask.py", f"--input_file={run / 'input.txt'}",
             f"--output_file={output}", f"--vocab_file={run / 'vocab.txt'}",
             f"--bert_config_file={run / 'bert_config.json'}",
             f"--init_checkpoint={prefix}", "--top_k=4", f"--max_seq_length={SEQ}")
  got = _read(output)
  texts = [line for line in LINES if line]
  assert [g["line"] for g in got] == [1, 3, 4]  # the blank line 2 is skipped
  assert [g["text"] for g in got] == texts
  reference = _reference(run, texts, 4)
  for result, (tokens, masks) in zip(got, reference):
    assert result["tokens"] == tokens
    assert [m["position"] for m in result["masks"]] == [
        i for i, t in enumerate(tokens) if t == "[MASK]"]
    for mask, (top, probabilities) in zip(result["masks"], masks):
      assert mask["predictions"][0]["token"] == top[0]
      np.testing.assert_allclose([p["probability"] for p in mask["predictions"]],
                                 probabilities, atol=2e-6)
  # "[MASK]ed": the literal token, then the rest of the word as its own word.
  assert got[2]["tokens"] == ["the", "dog", "[MASK]", "[UNK]", "in", "the", "house", "."]
  # The filled line holds each mask's top-1, pieces joined into words.
  first = got[0]
  assert first["filled"] == extraction_fill_mask.join_pieces(
      [first["masks"][0]["predictions"][0]["token"] if t == "[MASK]" else t
       for t in first["tokens"]])


def test_the_training_folder_and_the_hugging_face_export_give_the_same_numbers(run,
                                                                              tmp_path):
  settings = extraction_options.FillMaskOptions(top_k=6, max_seq_length=SEQ)
  texts = [line for line in LINES if line]

  def fill(config, vocab, checkpoint):
    return extraction_fill_mask.MaskFiller(str(config), str(vocab), str(checkpoint), True,
                                       settings).fill(texts)

  google = fill(run / "bert_config.json", run / "vocab.txt",
                run / "out" / "pretrained" / "bert_model.ckpt")
  ours = fill(run / "bert_config.json", run / "vocab.txt", run / "out")
  hf = fill(run / "hf" / "config.json", run / "hf" / "vocab.txt", run / "hf")
  for other in (ours, hf):
    assert [[[p["token"] for p in m["predictions"]] for m in r["masks"]] for r in other] == \
        [[[p["token"] for p in m["predictions"]] for m in r["masks"]] for r in google]
    np.testing.assert_allclose(
        [p["probability"] for r in other for m in r["masks"] for p in m["predictions"]],
        [p["probability"] for r in google for m in r["masks"] for p in m["predictions"]],
        atol=2e-6)


def test_a_checkpoint_without_the_masked_lm_head_is_refused(run, tmp_path):
  config = model_config.load_bert_config(str(run / "bert_config.json"))
  encoder = modeling.BertModel(config)
  prefix = str(tmp_path / "encoder" / "bert_model.ckpt")
  os.makedirs(os.path.dirname(prefix))
  checkpoint_files.save_google_checkpoint(encoder, prefix)
  filler = extraction_fill_mask.MaskFiller(str(run / "bert_config.json"),
                                       str(run / "vocab.txt"), prefix, True,
                                       extraction_options.FillMaskOptions(max_seq_length=SEQ))
  with pytest.raises(errors.UserError) as error:
    filler.fill(["the [MASK] sat ."])
  assert str(error.value).startswith(
      f"--init_checkpoint={prefix}: it holds no masked-LM head "
      "(cls/predictions/transform/dense/kernel is not in it): it is an encoder without its "
      "pretraining heads; filling masks needs the masked-LM head")


def test_texts_that_cannot_be_filled_are_refused_naming_the_line(run, tmp_path):
  def refusal(lines, **settings):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(errors.UserError) as error:
      extraction_fill_mask.fill_mask_file(
          str(source), str(tmp_path / "out.jsonl"), str(run / "vocab.txt"), True,
          str(run / "bert_config.json"), str(run / "out"),
          extraction_options.FillMaskOptions(max_seq_length=SEQ, **settings))
    assert not (tmp_path / "out.jsonl").exists()
    return str(error.value)

  source = tmp_path / "in.txt"
  assert refusal(["the [MASK] sat .", "the cat [mask] sat ."]) == (
      f"{source}:2: the text has no [MASK]; write [MASK] (in capitals) where a word should "
      "be predicted")
  assert refusal(["[MASK] [MASK] [MASK] ."], max_masks=2) == (
      f"{source}:1: the text has 3 [MASK]s, more than --max_masks=2; give fewer, or raise "
      "--max_masks")
  assert refusal(["the [MASK] " + "cat " * 14]) == (
      f"{source}:1: the text is 16 WordPieces, more than --max_seq_length=16 holds with "
      "[CLS] and [SEP] (14); shorten it or raise --max_seq_length")
  assert refusal(["", "  "]) == (
      f"--input_file={source}: the file holds no text; give one text a line, with [MASK] "
      "where a word should be predicted")


def test_the_shared_minilm_has_no_masked_lm_head(tmp_path):
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  prefix = os.path.join(MINILM_DIR, "bert_model.ckpt")
  filler = extraction_fill_mask.MaskFiller(os.path.join(MINILM_DIR, "bert_config.json"),
                                       os.path.join(MINILM_DIR, "vocab.txt"), prefix)
  with pytest.raises(errors.UserError, match=r"it holds no masked-LM head \(cls/predictions"):
    filler.fill(["paris is the [MASK] of france ."])


def test_whole_words_join_the_pieces_around_a_prediction():
  tokens = ["the", "dog", "walk", "##ed", "in", "play", "##ing", "##s"]
  assert extraction_fill_mask.whole_word(tokens, 3) == "walked"
  assert extraction_fill_mask.whole_word(tokens, 2) == "walked"
  assert extraction_fill_mask.whole_word(tokens, 6) == "playings"
  assert extraction_fill_mask.whole_word(tokens, 0) == "the"
  assert extraction_fill_mask.whole_word(["##s", "dog"], 0) == "s"
  assert extraction_fill_mask.join_pieces(tokens) == "the dog walked in playings"
  # A mask written after a space: its "##" piece starts no word and joins none.
  assert extraction_fill_mask.whole_word(tokens, 3, apart={3}) == "##ed"
  assert extraction_fill_mask.whole_word(tokens, 2, apart={3}) == "walk"
  assert extraction_fill_mask.join_pieces(tokens, apart={3}) == "the dog walk ##ed in playings"
  text = "the dog walk [MASK] in play[MASK][MASK] . [MASK]"
  masked = ["the", "dog", "walk", "[MASK]", "in", "play", "[MASK]", "[MASK]", ".", "[MASK]"]
  assert extraction_fill_mask.glued_masks(masked, text) == {3, 9}
  assert extraction_fill_mask.glued_masks(["[MASK]", "sat"], "[MASK]sat") == {0}
