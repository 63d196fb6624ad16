"""export_encoder.py / tfhub_modules.py: TF-Hub-style encoder and preprocessor SavedModels.

The exports are reloaded in a fresh process that imports only tensorflow and
tensorflow_text, and compared with independent references: the original tokenizer
algorithm (FullTokenizer, BasicTokenizer + WordpieceTokenizer for the word grouping),
the original truncate_seq_pair loop for packing, and our in-process Keras encoder
loaded from the same checkpoint for the values (to 1e-5).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert.formats import checkpoint_files

from bert.training import checkpoints

from bert.formats import tfhub_modules
from bert.formats import writers
from bert import fast_tokenization
from bert import modeling
from bert import tokenization
from bert.training import export_loading
from bert.training import model_config
from bert.utils import errors
from conftest import MINILM_DIR, ROOT, shared_path
import tiny

SEQ_LENGTH = 16  # short, so that most pairs below are truncated


def _xnli_pairs():
  """The 15 languages of the real XNLI dev rows: (sentence1, sentence2) pairs."""
  path = shared_path("glue_format_samples", "XNLI-1.0", "xnli.dev.tsv")
  with open(path, encoding="utf-8") as handle:
    rows = [line.rstrip("\n").split("\t") for line in handle][1:]
  return [(row[6], row[7]) for row in rows]


EXTRA_TEXTS = ["The café in Zürich serves 北京 dumplings, naïvely priced at €5!", "",
               "Ünïcödé\u200b CAFÉ\tx" + "y" * 250]


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  env.pop("PYTHONPATH", None)
  return env


# --------------------------------------------------------------------------- references


def _original_truncate(tokens_a, tokens_b, max_length):
  tokens_a, tokens_b = list(tokens_a), list(tokens_b)
  while len(tokens_a) + len(tokens_b) > max_length:
    (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
  return tokens_a, tokens_b


def _reference_pack(ids_a, ids_b, seq_length, cls_id, sep_id):
  """The original's conversion of one example to (input_ids, input_mask, segment_ids).

  As its `if tokens_b:`, an empty second segment makes a single-segment example.
  """
  if not ids_b:
    a, b = list(ids_a)[:seq_length - 2], None
  else:
    a, b = _original_truncate(ids_a, ids_b, seq_length - 3)
  ids = [cls_id] + a + [sep_id]
  types = [0] * len(ids)
  if b is not None:
    ids += b + [sep_id]
    types += [1] * (len(b) + 1)
  pad = seq_length - len(ids)
  return ids + [0] * pad, [1] * len(ids) + [0] * pad, types + [0] * pad


def _reference_words(vocab_file, do_lower_case, text):
  """[[piece ids of one word], ...]: the original BasicTokenizer, then WordPiece a word."""
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
  words = []
  for word in tokenizer.basic_tokenizer.tokenize(text):
    words.append(tokenizer.convert_tokens_to_ids(
        tokenizer.wordpiece_tokenizer.tokenize(word)))
  return words


def _pack_reference_batch(tokenizer, pairs, seq_length):
  vocab = tokenizer.vocab
  rows = [_reference_pack(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(a)),
                          None if b is None else
                          tokenizer.convert_tokens_to_ids(tokenizer.tokenize(b)),
                          seq_length, vocab["[CLS]"], vocab["[SEP]"]) for a, b in pairs]
  return {name: np.array([row[i] for row in rows], np.int32)
          for i, name in enumerate(tfhub_modules.ENCODER_INPUT_NAMES)}


# --------------------------------------------------------------------------- packing


def test_pack_inputs_equals_original_truncation():
  """What the preprocessor's bert_pack_inputs runs (fast_tokenization.pack_inputs)."""
  rng = np.random.default_rng(7)
  lengths = [(0, 0), (0, 30), (30, 0), (5, 6), (6, 5), (13, 13), (14, 13), (40, 2),
             (2, 40), (9, 9), (1, 12), (12, 1)] + [tuple(rng.integers(0, 25, 2))
                                                    for _ in range(20)]
  a_rows = [list(range(1000, 1000 + la)) for la, _ in lengths]
  b_rows = [list(range(2000, 2000 + lb)) for _, lb in lengths]
  seg_a = tf.ragged.constant(a_rows, dtype=tf.int32, ragged_rank=1)
  seg_b = tf.ragged.constant(b_rows, dtype=tf.int32, ragged_rank=1)
  # A scalar tensor seq_length of unknown value, as the saved bert_pack_inputs gets it.
  pack_pair = tf.function(
      lambda seq_length: tfhub_modules._pack([seg_a, seg_b], seq_length, 101, 102),  # pylint: disable=protected-access
      input_signature=[tf.TensorSpec([], tf.int32)])
  for seq_length in (5, 16, 29):
    expected = [_reference_pack(a, b, seq_length, 101, 102) for a, b in zip(a_rows, b_rows)]
    for got in (pack_pair(tf.constant(seq_length)),
                tfhub_modules._pack([seg_a, seg_b], seq_length, 101, 102)):  # pylint: disable=protected-access
      for index, name in enumerate(tfhub_modules.ENCODER_INPUT_NAMES):
        assert got[name].numpy().tolist() == [row[index] for row in expected], (
            seq_length, name)
    single = tfhub_modules._pack([seg_a], seq_length, 101, 102)  # pylint: disable=protected-access
    expected = [_reference_pack(a, None, seq_length, 101, 102) for a in a_rows]
    assert single["input_word_ids"].numpy().tolist() == [row[0] for row in expected]
    assert single["input_mask"].numpy().tolist() == [row[1] for row in expected]
    assert not single["input_type_ids"].numpy().any()
  # [batch, (words), (pieces)] segments are merged before packing.
  words = tf.RaggedTensor.from_row_lengths(
      tf.RaggedTensor.from_row_lengths(tf.constant([7, 8, 9, 4], tf.int32), [2, 1, 1]),
      [2, 1])
  packed = fast_tokenization.pack_inputs([words], 6, 1, 2)
  assert packed["input_ids"].numpy().tolist() == [[1, 7, 8, 9, 2, 0], [1, 4, 2, 0, 0, 0]]
  with pytest.raises(ValueError, match="no room"):
    fast_tokenization.pack_inputs([seg_a, seg_b], tf.constant(4), 101, 102)
  with pytest.raises(tf.errors.InvalidArgumentError, match="no room"):
    pack_pair(tf.constant(4))


# --------------------------------------------------------------------------- tiny export


def _tiny_vocab(path, texts):
  """A cased vocabulary from the texts: short words whole, longer ones as a head and a
  '##' tail (so words span several pieces), every 7th word left out ([UNK])."""
  basic = tokenization.BasicTokenizer(do_lower_case=False)
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  seen = set(tokens)
  for index, word in enumerate(w for text in texts for w in basic.tokenize(text)):
    if index % 7 == 3:
      continue
    pieces = [word] if len(word) <= 3 else [word[:3], "##" + word[3:5]] + (
        ["##" + word[5:]] if len(word) > 5 else [])
    for piece in pieces:
      if piece not in seen:
        seen.add(piece)
        tokens.append(piece)
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("\n".join(tokens) + "\n")
  return len(tokens)


@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory):
  """A tiny cased model exported by the script from a Google-layout checkpoint."""
  tmp = tmp_path_factory.mktemp("tiny_export")
  pairs = _xnli_pairs()
  vocab_file = str(tmp / "vocab.txt")
  vocab_size = _tiny_vocab(vocab_file, [t for pair in pairs for t in pair] + EXTRA_TEXTS)
  config = tiny.tiny_config(vocab_size, max_position_embeddings=40)
  config.to_json_file(str(tmp / "bert_config.json"))
  model = modeling.BertModel(config)
  checkpoint_files.save_google_checkpoint(model, str(tmp / "bert_model.ckpt"))
  export_dir = tmp / "hub"
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, "export_encoder.py"),
       f"--bert_config_file={tmp}/bert_config.json", f"--vocab_file={vocab_file}",
       f"--init_checkpoint={tmp}/bert_model.ckpt", "--do_lower_case=False",
       f"--export_dir={export_dir}", f"--seq_length={SEQ_LENGTH}"],
      capture_output=True, text=True, env=_env(), timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  # litert/: the encoder's LiteRT models (--litert=both by default), checked against the
  # encoder SavedModel before the export landed (tests/formats/test_litert_convert.py).
  assert sorted(os.listdir(export_dir)) == ["encoder", "litert", "preprocessor"]
  assert sorted(os.listdir(export_dir / "litert")) == [
      "model.json", "model_float32.tflite", "model_int8.tflite", "vocab.txt"]
  assert not [n for n in os.listdir(tmp) if ".tmp-" in n]  # the temporary was renamed
  return {"dir": export_dir, "vocab_file": vocab_file, "pairs": pairs,
          "do_lower_case": False, "tmp": tmp}


# Runs in a fresh process that imports only tensorflow and tensorflow_text (and numpy
# to write the results): what a user of the exported SavedModels has.
_LOADER = textwrap.dedent(r"""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    export_dir, seq_length, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(sys.argv[4], encoding="utf-8") as handle:
      pairs = json.load(handle)
    ours = [m for m in sys.modules if m == "bert" or m.startswith("bert.")]
    assert not ours, ours
    pre = tf.saved_model.load(export_dir + "/preprocessor")
    enc = tf.saved_model.load(export_dir + "/encoder")
    a = tf.constant([p[0] for p in pairs])
    b = tf.constant([p[1] for p in pairs])
    result = {}
    words_a = pre.tokenize(a)
    json.dump({"words": words_a.to_list(), "do_lower_case": bool(pre.do_lower_case.numpy()),
               "vocab_file": pre.vocab_file.asset_path.numpy().decode()},
              open(out + ".json", "w"))
    packed = pre.bert_pack_inputs([words_a, pre.tokenize(b)], seq_length=seq_length)
    single = pre(a)
    sig_pair = pre.signatures["serve_pair"](text_a=a, text_b=b)
    long_pack = pre.bert_pack_inputs([words_a.merge_dims(1, 2)], seq_length=seq_length + 9)
    for prefix, values in (("pair", packed), ("single", single), ("sig_pair", sig_pair),
                           ("long", long_pack)):
      for name, value in values.items():
        result[f"{prefix}/{name}"] = value.numpy()
    outputs = enc(packed, training=False)
    result["pooled_output"] = outputs["pooled_output"].numpy()
    result["default"] = outputs["default"].numpy()
    result["sequence_output"] = outputs["sequence_output"].numpy()
    for index, layer in enumerate(outputs["encoder_outputs"]):
      result[f"encoder_outputs/{index}"] = layer.numpy()
    result["implicit_inference"] = enc(packed)["pooled_output"].numpy()
    result["training_1"] = enc(packed, training=True)["sequence_output"].numpy()
    result["training_2"] = enc(packed, training=True)["sequence_output"].numpy()
    result["num_trainable"] = np.array(len(enc.trainable_variables))
    signature = enc.signatures["serving_default"](**packed)
    result["signature/pooled_output"] = signature["pooled_output"].numpy()
    result["signature/last_layer"] = signature[
        "encoder_outputs_%d" % (len(outputs["encoder_outputs"]) - 1)].numpy()
    # What `saved_model_cli run` does: the TF1 loader in a session, by signature.
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
      meta = tf.compat.v1.saved_model.load(session, ["serve"], export_dir + "/encoder")
      signature = meta.signature_def["serving_default"]
      feeds = {signature.inputs[name].name: packed[name].numpy() for name in packed}
      result["session/pooled_output"] = session.run(
          signature.outputs["pooled_output"].name, feeds)
    np.savez(out, **result)
""")


@pytest.fixture(scope="module")
def tiny_reloaded(tiny_export):
  tmp = tiny_export["tmp"]
  script, pairs_file, out = tmp / "loader.py", tmp / "pairs.json", tmp / "reloaded.npz"
  script.write_text(_LOADER, encoding="utf-8")
  pairs = [list(p) for p in tiny_export["pairs"]] + [[EXTRA_TEXTS[0], EXTRA_TEXTS[2]],
                                                      [EXTRA_TEXTS[1], EXTRA_TEXTS[1]]]
  pairs_file.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
  result = subprocess.run(
      [sys.executable, str(script), str(tiny_export["dir"]), str(SEQ_LENGTH), str(out),
       str(pairs_file)], capture_output=True, text=True, env=_env(), timeout=600,
      cwd=str(tmp))
  assert result.returncode == 0, result.stderr[-3000:]
  with open(str(out) + ".json", encoding="utf-8") as handle:
    meta = json.load(handle)
  return dict(np.load(out)), meta, [tuple(p) for p in pairs]


def test_reloaded_preprocessor_equals_original_tokenizer(tiny_export, tiny_reloaded):
  arrays, meta, pairs = tiny_reloaded
  vocab_file = tiny_export["vocab_file"]
  assert meta["do_lower_case"] is False
  assert meta["vocab_file"].endswith("vocab.txt")
  assert os.path.exists(meta["vocab_file"])
  # tokenize: [batch, (words), (pieces)], words as the original splits them.
  expected_words = [_reference_words(vocab_file, False, a) for a, _ in pairs]
  assert meta["words"] == expected_words
  assert any(len(word) > 1 for row in expected_words for word in row)  # "##" pieces
  assert any(word == [1] for row in expected_words for word in row)  # [UNK] words
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=False)
  pair = _pack_reference_batch(tokenizer, pairs, SEQ_LENGTH)
  # Most pairs are longer than seq_length: trimmed as the original's truncate_seq_pair.
  assert (pair["input_mask"].sum(axis=1) == SEQ_LENGTH).sum() >= 10
  for name in tfhub_modules.ENCODER_INPUT_NAMES:
    assert arrays[f"pair/{name}"].tolist() == pair[name].tolist(), name
    assert arrays[f"sig_pair/{name}"].tolist() == pair[name].tolist(), name
  single = _pack_reference_batch(tokenizer, [(a, None) for a, _ in pairs], SEQ_LENGTH)
  for name in tfhub_modules.ENCODER_INPUT_NAMES:
    assert arrays[f"single/{name}"].tolist() == single[name].tolist(), name
  longer = _pack_reference_batch(tokenizer, [(a, None) for a, _ in pairs], SEQ_LENGTH + 9)
  assert arrays["long/input_word_ids"].tolist() == longer["input_word_ids"].tolist()


def _in_process_outputs(tiny_export, pairs):
  """Our Keras encoder, loaded from the checkpoint the script exported, on `pairs` packed
  by the reference packer: (the packed inputs, the model, its outputs)."""
  tokenizer = tokenization.FullTokenizer(tiny_export["vocab_file"], do_lower_case=False)
  inputs = _pack_reference_batch(tokenizer, pairs, SEQ_LENGTH)
  config = model_config.load_bert_config(str(tiny_export["tmp"] / "bert_config.json"))
  model = modeling.BertModel(config)
  checkpoints.load_checkpoint(model, str(tiny_export["tmp"] / "bert_model.ckpt"))
  outputs = model({"input_ids": inputs["input_word_ids"], "input_mask": inputs["input_mask"],
                   "segment_ids": inputs["input_type_ids"]}, training=False)
  return inputs, model, outputs


def test_reloaded_encoder_equals_in_process_model(tiny_export, tiny_reloaded):
  arrays, _, pairs = tiny_reloaded
  _, model, expected = _in_process_outputs(tiny_export, pairs)
  pooled = expected["pooled_output"].numpy()
  np.testing.assert_allclose(arrays["pooled_output"], pooled, atol=1e-5)
  np.testing.assert_allclose(arrays["sequence_output"], expected["sequence_output"], atol=1e-5)
  for index, layer in enumerate(expected["encoder_outputs"]):
    np.testing.assert_allclose(arrays[f"encoder_outputs/{index}"], layer, atol=1e-5)
  for key in ("default", "implicit_inference", "signature/pooled_output",
              "session/pooled_output"):
    np.testing.assert_allclose(arrays[key], pooled, atol=1e-5, err_msg=key)
  np.testing.assert_allclose(arrays["signature/last_layer"], expected["sequence_output"],
                             atol=1e-5)
  assert int(arrays["num_trainable"]) == len(model.trainable_variables)
  # training=True: dropout on (a fresh mask each call), so the outputs move.
  assert np.abs(arrays["training_1"] - expected["sequence_output"]).max() > 1e-2
  assert np.abs(arrays["training_1"] - arrays["training_2"]).max() > 1e-2


def test_litert_encoder_answers_as_the_in_process_model(tiny_export, tiny_reloaded):
  """export_dir/litert: the encoder as LiteRT models, float32 to 1e-5 on the same pairs,
  int8 within the export's documented bound (mean |difference| <= 0.1 x scale)."""
  interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
  from bert.formats import litert_convert  # pylint: disable=g-import-not-at-top
  from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
  _, _, pairs = tiny_reloaded
  folder = tiny_export["dir"] / "litert"
  with open(folder / "model.json", encoding="utf-8") as handle:
    metadata = json.load(handle)
  assert {k: metadata[k] for k in ("task", "head", "max_seq_length", "do_lower_case",
                                   "inputs")} == {
      "task": "encoder", "head": "encoder", "max_seq_length": SEQ_LENGTH,
      "do_lower_case": False, "inputs": ["input_mask", "input_type_ids", "input_word_ids"]}
  inputs, _, expected = _in_process_outputs(tiny_export, pairs)
  feed = {name: np.asarray(inputs[name], np.int32) for name in metadata["inputs"]}
  for precision in litert_metadata.PRECISIONS:
    runner = interpreter_module.Interpreter(
        model_path=str(folder / f"model_{precision}.tflite")).get_signature_runner()
    got = runner(**feed)
    assert sorted(got) == sorted(metadata["outputs"])
    for name in ("pooled_output", "sequence_output"):
      want = expected[name].numpy()
      if precision == "float32":
        np.testing.assert_allclose(got[name], want, rtol=0, atol=1e-5, err_msg=name)
      else:
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(got[name] - want).mean() <= litert_convert.INT8_TOLERANCE * scale, name


def _keras_classifier(encoder_path):
  """A Keras 3 model around the reloaded encoder (tfhub_modules.KerasEncoder), ids in."""
  import keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(3)
  encoder = tfhub_modules.KerasEncoder(encoder_path)
  inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in tfhub_modules.ENCODER_INPUT_NAMES}
  logits = keras.layers.Dense(2)(encoder(inputs)["pooled_output"])
  rng = np.random.default_rng(0)
  labels = np.arange(32, dtype=np.int32) % 2
  # Label 0 texts use tokens 5-29, label 1 texts tokens 30-54: learnable in a few steps.
  ids = (rng.integers(5, 30, size=(32, 12)) + 25 * labels[:, None]).astype(np.int32)
  ids[:, 0] = 2
  x = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
       "input_type_ids": np.zeros_like(ids)}
  return keras.Model(inputs, logits), encoder.encoder, x, labels


# 12 s: make test-slow; the reloaded encoder's numbers and trainable variables are checked
# by default above (test_reloaded_encoder_equals_in_process_model).
@pytest.mark.slow
def test_keras_model_fine_tunes_the_reloaded_encoder(tiny_export):
  import keras  # pylint: disable=g-import-not-at-top
  model, reloaded, x, labels = _keras_classifier(str(tiny_export["dir"] / "encoder"))
  assert len(model.trainable_variables) == len(reloaded.trainable_variables) + 2
  before = [v.numpy().copy() for v in reloaded.trainable_variables]
  loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
  optimizer = keras.optimizers.Adam(1e-2)
  # Measured in inference mode (no dropout noise) before and after 12 steps.
  loss_before = float(loss_fn(labels, model(x, training=False)))
  for step in range(12):
    batch = slice(step % 4 * 8, step % 4 * 8 + 8)
    with tf.GradientTape() as tape:
      loss = loss_fn(labels[batch], model({k: v[batch] for k, v in x.items()},
                                          training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None for g in grads)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
  loss_after = float(loss_fn(labels, model(x, training=False)))
  print(f"fine-tuning loss {loss_before:.3f} -> {loss_after:.3f}")
  assert loss_after < 0.6 * loss_before, (loss_before, loss_after)
  # Every weight of the reloaded encoder itself was tuned (not a copy of it).
  moved = [np.abs(v.numpy() - b).max() for v, b in zip(reloaded.trainable_variables, before)]
  assert min(moved) > 0, moved


@pytest.mark.slow
def test_keras_fit_fine_tunes_the_reloaded_encoder(tiny_export):
  import keras  # pylint: disable=g-import-not-at-top
  model, _, x, labels = _keras_classifier(str(tiny_export["dir"] / "encoder"))
  model.compile(optimizer=keras.optimizers.Adam(1e-2),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  loss_before = model.evaluate(x, labels, batch_size=32, verbose=0)
  model.fit(x, labels, epochs=5, batch_size=8, verbose=0)
  loss_after = model.evaluate(x, labels, batch_size=32, verbose=0)
  assert loss_after < 0.5 * loss_before, (loss_before, loss_after)


_KERAS_EXPORT_LOADER = textwrap.dedent(r"""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the preprocessor's ops)

    path, texts_file, out = sys.argv[1:4]
    with open(texts_file, encoding="utf-8") as handle:
      texts = json.load(handle)
    ours = [m for m in sys.modules if m == "bert" or m.startswith("bert.")]
    assert not ours, ours
    loaded = tf.saved_model.load(path)
    np.save(out, loaded.serve(tf.constant(texts)).numpy())
""")


def _word_texts(vocab_file, count, seed):
  """Texts of whole vocabulary words: label 0 from one half of them, 1 from the other."""
  words = [w for w in tokenization.load_vocab(vocab_file)
           if w.isalpha() and not w.startswith("##") and len(w) > 1]
  half = len(words) // 2
  rng = np.random.default_rng(seed)
  labels = np.arange(count, dtype=np.int32) % 2
  texts = [" ".join(rng.choice(words[half * label:half * (label + 1)], 6))
           for label in labels]
  return texts, labels


@pytest.mark.slow  # 29 s: fit, export and a fresh-process reload (make test-slow)
def test_keras3_classifier_fine_tunes_exports_and_reloads(tiny_export, tmp_path):
  """Text in, logits out: fit() tunes the encoder's own weights; model.export serves."""
  import keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(5)
  model, encoder = tfhub_modules.build_keras_classifier(str(tiny_export["dir"]), 2,
                                                     seq_length=SEQ_LENGTH)
  reloaded = encoder.encoder
  assert len(model.trainable_variables) == len(reloaded.trainable_variables) + 2
  texts, labels = _word_texts(tiny_export["vocab_file"], 32, seed=2)
  dataset = tf.data.Dataset.from_tensor_slices((tf.constant(texts), labels)).batch(8)
  model.compile(optimizer=keras.optimizers.Adam(1e-2),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  before = [v.numpy().copy() for v in reloaded.trainable_variables]
  loss_before = model.evaluate(dataset, verbose=0)
  model.fit(dataset, epochs=3, verbose=0)
  loss_after = model.evaluate(dataset, verbose=0)
  print(f"Keras 3 fine-tuning loss {loss_before:.3f} -> {loss_after:.3f}")
  assert loss_after < 0.6 * loss_before, (loss_before, loss_after)
  moved = [np.abs(v.numpy() - b).max() for v, b in zip(reloaded.trainable_variables, before)]
  assert min(moved) > 0, moved
  # The preprocessor layer packs as the original (single texts at SEQ_LENGTH).
  tokenizer = tokenization.FullTokenizer(tiny_export["vocab_file"], do_lower_case=False)
  expected = _pack_reference_batch(tokenizer, [(t, None) for t in texts], SEQ_LENGTH)
  packed = model.get_layer("preprocessor")(tf.constant(texts))
  for name in tfhub_modules.ENCODER_INPUT_NAMES:
    assert packed[name].numpy().tolist() == expected[name].tolist(), name
  # And pairs, trimmed to SEQ_LENGTH as truncate_seq_pair does.
  pairs = list(zip(texts[:16], texts[16:]))
  expected = _pack_reference_batch(tokenizer, pairs, SEQ_LENGTH)
  packed = model.get_layer("preprocessor")([tf.constant([p[0] for p in pairs]),
                                            tf.constant([p[1] for p in pairs])])
  for name in tfhub_modules.ENCODER_INPUT_NAMES:
    assert packed[name].numpy().tolist() == expected[name].tolist(), name
  # model.export, then a fresh process with only tensorflow + tensorflow_text.
  logits = model(tf.constant(texts), training=False).numpy()
  path = tmp_path / "keras_export"
  model.export(str(path), verbose=False)
  script, texts_file = tmp_path / "loader.py", tmp_path / "texts.json"
  script.write_text(_KERAS_EXPORT_LOADER, encoding="utf-8")
  texts_file.write_text(json.dumps(texts), encoding="utf-8")
  result = subprocess.run([sys.executable, str(script), str(path), str(texts_file),
                           str(tmp_path / "logits.npy")], capture_output=True, text=True,
                          env=_env(), timeout=600, cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr[-3000:]
  np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), logits, atol=1e-5)


def test_keras3_preprocessor_pairs_and_default_length(tiny_export, tiny_reloaded):
  _, _, pairs = tiny_reloaded
  tokenizer = tokenization.FullTokenizer(tiny_export["vocab_file"], do_lower_case=False)
  a = tf.constant([p[0] for p in pairs])
  b = tf.constant([p[1] for p in pairs])
  # seq_length None: the export's default (SEQ_LENGTH), through its saved signatures.
  # (An explicit seq_length goes through tokenize + bert_pack_inputs: the test above.)
  layer = tfhub_modules.KerasPreprocessor(str(tiny_export["dir"] / "preprocessor"))
  expected = _pack_reference_batch(tokenizer, pairs, SEQ_LENGTH)
  got = layer([a, b])
  for name in tfhub_modules.ENCODER_INPUT_NAMES:
    assert got[name].numpy().tolist() == expected[name].tolist(), name
  single = _pack_reference_batch(tokenizer, [(t, None) for t, _ in pairs], SEQ_LENGTH)
  assert layer(a)["input_word_ids"].numpy().tolist() == single["input_word_ids"].tolist()
  frozen = tfhub_modules.KerasEncoder(str(tiny_export["dir"] / "encoder"), trainable=False)
  assert not frozen.trainable_weights and frozen.non_trainable_weights


# --------------------------------------------------------------------------- bad input


def _export(capsys, export_format, export_dir, config_file, vocab_file, init_checkpoint,
            seq_length=None, litert=None):
  """export_encoder.py's work through the library it calls: the checks before any weight
  is read (export_loading), then the format's writer (writers.WRITERS), under the one-line
  report of bad input; returns (exit status, stderr)."""
  try:
    with errors.report_user_errors(program="export_encoder.py"):
      config = model_config.load_bert_config(config_file)
      seq_length = export_loading.resolve_seq_length(
          export_format, seq_length, tfhub_modules.DEFAULT_SEQ_LENGTH,
          seq_length is not None, False)
      export_loading.check_export(export_format, export_dir, config, init_checkpoint,
                                  vocab_file, True, seq_length, litert=litert)
      writers.WRITERS[export_format](export_dir, export_loading.source(
          config, init_checkpoint, vocab_file, True, seq_length, litert=litert or "both"))
    code = 0
  except SystemExit as exc:
    code = exc.code
  return code, capsys.readouterr().err


def test_bad_input_fails_with_one_line(tiny_export, tmp_path, capsys):
  tmp = tiny_export["tmp"]
  config, vocab = f"{tmp}/bert_config.json", tiny_export["vocab_file"]
  checkpoint = f"{tmp}/bert_model.ckpt"
  full_vocab = shared_path("vocab", "cased_vocab.txt")
  not_a_checkpoint = tmp_path / "weights.bin"
  not_a_checkpoint.write_bytes(b"\x00" * 64)
  occupied = tmp_path / "occupied"
  occupied.mkdir()
  (occupied / "keep.txt").write_text("mine")
  cases = [
      ("tfhub", str(occupied), config, vocab, checkpoint, SEQ_LENGTH, None),
      ("tfhub", f"{tmp_path}/a", config, full_vocab, checkpoint, SEQ_LENGTH, None),
      ("tfhub", f"{tmp_path}/b", config, vocab, str(not_a_checkpoint), SEQ_LENGTH, None),
      ("tfhub", f"{tmp_path}/c", config, vocab, checkpoint, 41, None),
      ("huggingface", f"{tmp_path}/d", config, vocab, checkpoint, None, "int8"),
  ]
  expected = ["exists and is not empty", "vocab_size=", "not a checkpoint",
              "max_position_embeddings=40",
              "--litert=int8 with --format=huggingface: the LiteRT models are the encoder's"]
  for case, words in zip(cases, expected):
    code, stderr = _export(capsys, *case)
    lines = [line for line in stderr.splitlines() if ": error: " in line]
    assert code == 2, stderr
    assert len(lines) == 1 and words in lines[0], stderr
    assert "Traceback" not in stderr
  assert (occupied / "keep.txt").read_text() == "mine"  # refused: left untouched
  assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
  assert not (tmp_path / "d").exists()
  assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_the_tfhub_row_names_the_folders_it_writes():
  assert writers.WRITERS["tfhub"].parts == (tfhub_modules.ENCODER_DIR,
                                            tfhub_modules.PREPROCESSOR_DIR)


def test_check_export_dir(tmp_path):
  tfhub_modules.check_export_dir(str(tmp_path / "new"))  # does not exist: fine
  tfhub_modules.check_export_dir(str(tmp_path))  # exists, empty: fine
  (tmp_path / "x").write_text("x")
  with pytest.raises(Exception, match="not empty"):
    tfhub_modules.check_export_dir(str(tmp_path))
  tfhub_modules.check_export_dir(str(tmp_path), overwrite=True)
  with pytest.raises(Exception, match="not a directory"):
    tfhub_modules.check_export_dir(str(tmp_path / "x"), overwrite=True)


def test_preprocessor_normalize_nfc_composes_decomposed_hangul(tmp_path):
  """export_encoder.py --normalize=nfc: the preprocessor tokenizes NFD Hangul (macOS) as
  the NFC text; without it (the original) the decomposed syllables are [UNK]."""
  import unicodedata  # pylint: disable=g-import-not-at-top
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "한국", "##어",
                              "영화", "."]) + "\n", encoding="utf-8")
  nfc = ["한국어 영화.", "영화."]
  nfd = [unicodedata.normalize("NFD", t) for t in nfc]
  composed, _ = tfhub_modules.build_preprocessor_module(str(vocab), False, 16, normalize="nfc")
  expected = [[[5, 6], [7], [8]], [[7], [8]]]  # [batch, words, pieces]
  assert composed.tokenize(tf.constant(nfd)).to_list() == expected
  assert composed.tokenize(tf.constant(nfc)).to_list() == expected
  # The original's tokenizer (the default module's) has no token for decomposed syllables.
  plain = fast_tokenization.FastTokenizer(str(vocab), do_lower_case=False)
  assert plain.tokenize(tf.constant(nfd)).flat_values.numpy().tolist() == [1, 1, 8, 1, 8]


# --------------------------------------------------------------------------- real model


@pytest.mark.slow
def test_real_checkpoint_round_trip(tmp_path):
  """The shared real 6-layer uncased checkpoint, on real multilingual text."""
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  export_dir = tmp_path / "hub"
  export_dir.mkdir()  # an empty existing directory is accepted
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, "export_encoder.py"),
       f"--bert_config_file={MINILM_DIR}/bert_config.json",
       f"--vocab_file={MINILM_DIR}/vocab.txt",
       f"--init_checkpoint={MINILM_DIR}/bert_model.ckpt", f"--export_dir={export_dir}",
       "--max_seq_length=48"], capture_output=True, text=True, env=_env(), timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  pairs = _xnli_pairs() + [(EXTRA_TEXTS[0], EXTRA_TEXTS[2])]
  script, pairs_file, out = tmp_path / "loader.py", tmp_path / "pairs.json", tmp_path / "r.npz"
  script.write_text(_LOADER, encoding="utf-8")
  pairs_file.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
  loaded = subprocess.run([sys.executable, str(script), str(export_dir), "48", str(out),
                           str(pairs_file)], capture_output=True, text=True, env=_env(),
                          timeout=900, cwd=str(tmp_path))
  assert loaded.returncode == 0, loaded.stderr[-3000:]
  arrays = dict(np.load(out))
  with open(str(out) + ".json", encoding="utf-8") as handle:
    meta = json.load(handle)
  vocab_file = os.path.join(MINILM_DIR, "vocab.txt")
  assert meta["do_lower_case"] is True
  assert meta["words"] == [_reference_words(vocab_file, True, a) for a, _ in pairs]
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  inputs = _pack_reference_batch(tokenizer, pairs, 48)
  for name in tfhub_modules.ENCODER_INPUT_NAMES:
    assert arrays[f"pair/{name}"].tolist() == inputs[name].tolist(), name
  single = _pack_reference_batch(tokenizer, [(a, None) for a, _ in pairs], 48)
  assert arrays["single/input_word_ids"].tolist() == single["input_word_ids"].tolist()
  config = model_config.load_bert_config(os.path.join(MINILM_DIR, "bert_config.json"))
  model = modeling.BertModel(config)
  checkpoints.load_checkpoint(model, os.path.join(MINILM_DIR, "bert_model.ckpt"))
  expected = model({"input_ids": inputs["input_word_ids"], "input_mask": inputs["input_mask"],
                    "segment_ids": inputs["input_type_ids"]}, training=False)
  # The reloaded graph and the eager model sum in float32 in different orders (oneDNN's
  # blocking follows the threads it gets): activations of 2-3 move by a few ulps, so the
  # bound is relative as well as absolute (seen: 1.07e-5 at 2.53 under a parallel run).
  np.testing.assert_allclose(arrays["pooled_output"], expected["pooled_output"], atol=1e-5)
  np.testing.assert_allclose(arrays["sequence_output"], expected["sequence_output"],
                             atol=1e-5, rtol=1e-5)
  for index, layer in enumerate(expected["encoder_outputs"]):
    np.testing.assert_allclose(arrays[f"encoder_outputs/{index}"], layer, atol=1e-5,
                               rtol=1e-5)
  np.testing.assert_allclose(arrays["session/pooled_output"], expected["pooled_output"],
                             atol=1e-5)
