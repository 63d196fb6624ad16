"""Growing a model (bert/adaptation/adaptation_growth.py): positions past the model's own
and words past its vocabulary, written in Google's layout, every other weight byte for
byte; read from Google's layout, a run of ours (packed rows) and Hugging Face's."""
import json

import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import modeling
from bert import optimization
from bert import tokenization
from bert.adaptation import adaptation_growth as growth
from bert.adaptation import adaptation_options
from bert.formats import checkpoint_files
from bert.formats import hugging_face
from bert.training import checkpoints
from bert.training import model_config
from bert.utils import errors
import tiny

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "block", "##chain", "bit",
         "##coin", "min", "##er", "##s", "a", "."]
VOCAB = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
         "[unused2]", *WORDS]
POSITIONS = 24


def _pretrained(tmp_path, packed=False):
  """A tiny pretraining model with every weight drawn at random; (model, config path)."""
  config = tiny.tiny_config(len(VOCAB), max_position_embeddings=POSITIONS)
  model, _ = heads.build_pretraining_model(config, packed=packed)
  rng = np.random.default_rng(7)
  for variable in model.weights:
    if "seed_generator" not in variable.path:
      variable.assign(rng.normal(size=variable.shape).astype("float32"))
  path = tmp_path / "bert_config.json"
  path.write_text(config.to_json_string())
  return model, str(path)


def _google(tmp_path):
  model, config = _pretrained(tmp_path)
  prefix = str(tmp_path / "google" / "bert_model.ckpt")
  checkpoint_files.save_google_checkpoint(
      model, prefix, global_step=9,
      extra={"bert/embeddings/word_embeddings/adam_m": np.ones((len(VOCAB), 32), "f")})
  return model, config, prefix


def _tensors(prefix):
  return checkpoint_files.read_google_checkpoint(prefix)


def _vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(VOCAB) + "\n")
  return str(path)


def _encode(config_path, prefix, ids, length):
  encoder = modeling.BertModel(model_config.load_bert_config(config_path))
  checkpoints.load_checkpoint(encoder, prefix)
  ids = tf.constant([ids[:length]], tf.int32)
  return encoder({"input_ids": ids, "input_mask": tf.ones_like(ids),
                  "segment_ids": tf.zeros_like(ids)})["sequence_output"].numpy()


@pytest.mark.parametrize("new_rows", ["copy", "random"])
def test_positions_grow_and_every_other_weight_stays_byte_for_byte(tmp_path, new_rows):
  _, config, prefix = _google(tmp_path)
  out = tmp_path / "long"
  options = adaptation_options.PositionOptions(seed=3, max_position_embeddings=60,
                                               new_rows=new_rows)
  summary = growth.extend_positions(prefix, model_config.load_bert_config(config), str(out),
                                    options, vocab_file=_vocab_file(tmp_path))
  assert summary["max_position_embeddings"] == 60
  assert summary["optimizer_slots_left_out"] == 1
  before, after = _tensors(prefix), _tensors(str(out / "bert_model.ckpt"))
  assert set(after) == set(before) - {"bert/embeddings/word_embeddings/adam_m"}
  for name in after:
    if name != growth.POSITION_EMBEDDINGS:
      assert after[name].tobytes() == before[name].tobytes(), name
  old, new = before[growth.POSITION_EMBEDDINGS], after[growth.POSITION_EMBEDDINGS]
  assert new.shape == (60, 32) and new[:POSITIONS].tobytes() == old.tobytes()
  if new_rows == "copy":  # rows 24..47 are rows 0..23, rows 48..59 rows 0..11
    np.testing.assert_array_equal(new[POSITIONS:2 * POSITIONS], old)
    np.testing.assert_array_equal(new[2 * POSITIONS:], old[:60 - 2 * POSITIONS])
  else:  # the original's initialiser: truncated normal, stddev initializer_range
    rows = new[POSITIONS:]
    assert np.abs(rows).max() <= 2 * 0.02 and 0.01 < rows.std() < 0.02
  grown = json.loads((out / "bert_config.json").read_text())
  assert grown == {**json.loads(open(config).read()), "max_position_embeddings": 60}
  assert (out / "vocab.txt").read_text() == "\n".join(VOCAB) + "\n"
  # A sequence within the old length computes what it did before the growth.
  ids = [4, 8, 9, 10, 11, 12, 5, 8, 9, 10, 13, 14, 15, 5] * 2
  np.testing.assert_allclose(_encode(config, prefix, ids, POSITIONS),
                             _encode(str(out / "bert_config.json"),
                                     str(out / "bert_model.ckpt"), ids, POSITIONS),
                             atol=1e-6)


def test_positions_grow_from_a_packed_run_and_from_hugging_face(tmp_path):
  model, config = _pretrained(tmp_path, packed=True)
  state = checkpoints.RunCheckpoint(str(tmp_path / "run"), model,
                                    optimizer=optimization.create_optimizer(1e-3, 10, 1))
  state.save()
  want = {name: variable.numpy() for name, variable in
          modeling.google_variable_map(model).items()}
  options = adaptation_options.PositionOptions(seed=1, max_position_embeddings=48)
  cfg = model_config.load_bert_config(config)
  growth.extend_positions(str(tmp_path / "run"), cfg, str(tmp_path / "from_run"), options)
  got = _tensors(str(tmp_path / "from_run" / "bert_model.ckpt"))
  assert set(got) == set(want)  # the masked-LM and next-sentence heads kept
  for name, value in want.items():
    expected = np.concatenate([value, value]) if name == growth.POSITION_EMBEDDINGS else value
    assert got[name].tobytes() == expected.tobytes(), name
  # The Hugging Face form of the same weights gives the same grown model.
  tensors = hugging_face.hugging_face_state_dict(want)
  from safetensors.numpy import save_file  # pylint: disable=g-import-not-at-top
  save_file(tensors, str(tmp_path / "model.safetensors"))
  growth.extend_positions(str(tmp_path / "model.safetensors"), cfg,
                          str(tmp_path / "from_hf"), options)
  hf = _tensors(str(tmp_path / "from_hf" / "bert_model.ckpt"))
  for name, value in hf.items():
    np.testing.assert_array_equal(value, got[name], err_msg=name)


def _grow_words(tmp_path, words, new_rows="mean_of_pieces"):
  model, config, prefix = _google(tmp_path)
  words_file = tmp_path / "words.txt"
  words_file.write_text("\n".join(words) + "\n")
  out = tmp_path / f"grown-{new_rows}"
  plan, summary = growth.extend_words(
      _vocab_file(tmp_path), str(words_file), prefix, model_config.load_bert_config(config),
      str(out), adaptation_options.WordRowsOptions(seed=2, new_rows=new_rows))
  return prefix, out, plan, summary


def test_new_words_fill_the_unused_entries_then_are_appended(tmp_path):
  prefix, out, plan, summary = _grow_words(
      tmp_path, ["blockchain", "bitcoin", "cat", "miners", "bits", "coins", "blocks"])
  assert [(w, line, unused) for w, line, unused in plan.added] == [
      ("blockchain", 2, "[unused0]"), ("bitcoin", 3, "[unused1]"),
      ("miners", 8, "[unused2]"), ("bits", 25, None), ("coins", 26, None),
      ("blocks", 27, None)]
  assert summary["skipped"] == 1 and summary["appended"] == 3
  assert summary["vocab_size"] == 27 and summary["unused_left"] == 0
  new_vocab = (out / "vocab.txt").read_text().splitlines()
  assert new_vocab == ["[PAD]", "blockchain", "bitcoin", "[UNK]", "[CLS]", "[SEP]",
                       "[MASK]", "miners", *WORDS, "bits", "coins", "blocks"]
  assert json.loads((out / "bert_config.json").read_text())["vocab_size"] == 27
  before, after = _tensors(prefix), _tensors(str(out / "bert_model.ckpt"))
  for name in set(after) - {growth.WORD_EMBEDDINGS, growth.OUTPUT_BIAS}:
    assert after[name].tobytes() == before[name].tobytes(), name
  table, bias = after[growth.WORD_EMBEDDINGS], after[growth.OUTPUT_BIAS]
  old_table, old_bias = before[growth.WORD_EMBEDDINGS], before[growth.OUTPUT_BIAS]
  assert table.shape == (27, 32) and bias.shape == (27,)
  kept = [i for i in range(len(VOCAB)) if i not in (1, 2, 7)]
  assert table[kept].tobytes() == old_table[kept].tobytes()
  assert bias[kept].tobytes() == old_bias[kept].tobytes()
  old_ids = {token: i for i, token in enumerate(VOCAB)}
  for word, pieces in [("blockchain", ["block", "##chain"]), ("bitcoin", ["bit", "##coin"]),
                       ("miners", ["min", "##er", "##s"]), ("bits", ["bit", "##s"]),
                       ("coins", ["[UNK]"]), ("blocks", ["block", "##s"])]:
    i = new_vocab.index(word)
    ids = [old_ids[p] for p in pieces]
    np.testing.assert_array_equal(table[i], old_table[ids].mean(axis=0), err_msg=word)
    np.testing.assert_array_equal(bias[i], old_bias[ids].mean(), err_msg=word)
  assert summary["new_words_from_unk"] == 1


def test_text_without_new_words_reads_as_before(tmp_path):
  prefix, out, _, _ = _grow_words(tmp_path, ["blockchain", "bitcoin", "miners", "bits"])
  old = tokenization.FullTokenizer(_vocab_file(tmp_path), do_lower_case=True)
  new = tokenization.FullTokenizer(str(out / "vocab.txt"), do_lower_case=True)
  text = "the cat sat on the mat . a dog ran"
  assert new.tokenize(text) == old.tokenize(text)
  ids = new.convert_tokens_to_ids(["[CLS]", *new.tokenize(text), "[SEP]"])
  assert ids == old.convert_tokens_to_ids(["[CLS]", *old.tokenize(text), "[SEP]"])
  np.testing.assert_array_equal(
      _encode(str(out / "bert_config.json"), str(out / "bert_model.ckpt"), ids, len(ids)),
      _encode(str(tmp_path / "bert_config.json"), prefix, ids, len(ids)))
  assert new.tokenize("the bitcoin miners") == ["the", "bitcoin", "miners"]


def test_random_rows_are_drawn_as_the_original_initialises(tmp_path):
  prefix, out, _, _ = _grow_words(tmp_path, ["blockchain", "bits"], new_rows="random")
  after = _tensors(str(out / "bert_model.ckpt"))
  rows = after[growth.WORD_EMBEDDINGS][[1, 2]]
  assert np.abs(rows).max() <= 0.04 and rows.std() > 0.005
  np.testing.assert_array_equal(after[growth.OUTPUT_BIAS][[1, 2]], [0.0, 0.0])


def test_a_checkpoint_and_a_config_of_different_vocabularies_are_refused(tmp_path):
  _, config, prefix = _google(tmp_path)
  other = tiny.tiny_config(len(VOCAB) + 1, max_position_embeddings=POSITIONS)
  with pytest.raises(errors.UserError, match=r"holds a vocabulary of 24 rows .* says "
                     r"vocab_size=25"):
    growth.read_weights(other, prefix)


def test_a_grown_model_fine_tunes_fills_masks_and_exports_to_hugging_face(tmp_path):
  from bert.extraction import extraction_fill_mask  # pylint: disable=g-import-not-at-top
  from bert.extraction import extraction_options  # pylint: disable=g-import-not-at-top
  from bert.training import export_loading  # pylint: disable=g-import-not-at-top
  _, out, _, _ = _grow_words(tmp_path, ["blockchain", "bitcoin", "miners", "bits", "blocks"])
  config_path, vocab, prefix = (str(out / "bert_config.json"), str(out / "vocab.txt"),
                                str(out / "bert_model.ckpt"))
  config = model_config.load_bert_config(config_path)
  assert config.vocab_size == 26
  model, _ = heads.build_classifier_model(config, 2)
  report = checkpoints.load_checkpoint(model, prefix)
  assert report["missing"] == ["output_bias", "output_weights"]
  filler = extraction_fill_mask.MaskFiller(config_path, vocab, prefix, True,
                                          extraction_options.FillMaskOptions(top_k=26, max_seq_length=16))
  (result,) = filler.fill(["the [MASK] sat on the bitcoin"])
  assert result["tokens"] == ["the", "[MASK]", "sat", "on", "the", "bitcoin"]
  assert {p["token"] for p in result["masks"][0]["predictions"]} >= {"bits", "blocks"}
  hf_dir = tmp_path / "hf"
  hugging_face.export(str(hf_dir), export_loading.source(config, prefix, vocab, True))
  assert json.loads((hf_dir / "config.json").read_text())["vocab_size"] == 26
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  weights = load_file(str(hf_dir / "model.safetensors"))
  table = _tensors(prefix)[growth.WORD_EMBEDDINGS]
  np.testing.assert_array_equal(
      weights[next(k for k in weights if k.endswith("word_embeddings.weight"))], table)
