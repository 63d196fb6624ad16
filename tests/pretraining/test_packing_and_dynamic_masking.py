"""Packed rows and masks drawn as pretraining trains (create_pretraining_data.py
--pack_sequences / --dynamic_masking, run_pretraining.py reading either layout).

Every test writes its own corpus and vocabulary, so the file runs without ../shared."""
import hashlib
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import input_pipeline
from bert import masking
from bert import masking_graph
from bert import modeling
from bert.pretraining import pretraining_generator
from bert.pretraining import pretraining_options
from bert.pretraining import pretraining_packing
from bert.pretraining import pretraining_records
from bert.pretraining import pretraining_task
from bert.training import run_options
from bert.utils import errors
import generator_options
import tiny

# Words of a made-up language: some whole in the vocabulary, some only as pieces, so
# that whole-word masking has words of several pieces to join.
_WHOLE = ["alpha", "beta", "gamma", "delta", "river", "stone", "light", "north", "south",
          "market", "bank", "rate", "price", "share", "trade", "year", "week", "said"]
_PIECED = ["alphabeta", "stonelight", "northmarket", "ratesharetrade", "gammadelta"]


def _vocab(directory):
  """BERT's special tokens at Google's ids, the whole words, single letters bare and as
  "##" pieces, and "##" forms of the whole words (so pieced words split in 2-4 pieces)."""
  letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + _WHOLE + letters +
            ["##" + c for c in letters] + ["##" + w for w in _WHOLE])
  path = os.path.join(str(directory), "vocab.txt")
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("\n".join(tokens) + "\n")
  return path, len(tokens)


def _corpus(directory, documents=60, seed=0):
  rng = random.Random(seed)
  lines = []
  for _ in range(documents):
    for _ in range(rng.randint(2, 9)):
      words = [rng.choice(_WHOLE + _PIECED) for _ in range(rng.randint(3, 22))]
      lines.append(" ".join(words) + " .")
    lines.append("")
  path = os.path.join(str(directory), "corpus.txt")
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("\n".join(lines) + "\n")
  return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
  """The corpus, the vocabulary and the records of every layout, of the same instances."""
  directory = tmp_path_factory.mktemp("packing")
  vocab, vocab_size = _vocab(directory)
  corpus = _corpus(directory)
  files = {}
  for name, flags in {"plain": {}, "packed": dict(pack_sequences=True, max_sequences_per_row=4),
                      "unmasked": dict(dynamic_masking=True),
                      "unmasked_packed": dict(dynamic_masking=True, pack_sequences=True,
                                              max_sequences_per_row=4)}.items():
    out = str(directory / f"{name}.tfrecord")
    summary = pretraining_generator.generate(
        [corpus], [out], vocab, *generator_options.options(
            max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, random_seed=7,
            num_workers=0, **flags))
    files[name] = (out, summary)
  return {"dir": directory, "vocab": vocab, "vocab_size": vocab_size, "corpus": corpus,
          "files": files}


def _records(path):
  out = []
  for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
    example = tf.train.Example.FromString(record)
    assert example.SerializeToString(deterministic=True) == record
    out.append({k: np.array(v.int64_list.value if v.WhichOneof("kind") == "int64_list"
                            else v.float_list.value)
                for k, v in example.features.feature.items()})
  return out


def _instances_of_plain(rows):
  found = []
  for f in rows:
    n, m = int(f["input_mask"].sum()), int(f["masked_lm_weights"].sum())
    found.append((tuple(f["input_ids"][:n]), tuple(f["segment_ids"][:n]),
                  tuple(f["masked_lm_positions"][:m]), tuple(f["masked_lm_ids"][:m]),
                  int(f["next_sentence_labels"][0])))
  return sorted(found)


def _instances_of_packed(rows, masked=True, max_sequences=4):
  found = []
  for f in rows:
    sid = f["sequence_ids"]
    assert f["next_sentence_weights"].tolist() == [1.0] * int(sid.max()) + [0.0] * (
        max_sequences - int(sid.max()))
    assert (f["input_mask"] == (sid > 0)).all()
    if masked:
      m = int(f["masked_lm_weights"].sum())
      positions, labels = f["masked_lm_positions"][:m], f["masked_lm_ids"][:m]
      assert positions.tolist() == sorted(positions.tolist())
    for k in range(1, int(sid.max()) + 1):
      where = np.nonzero(sid == k)[0]
      start, n = int(where[0]), len(where)
      assert where.tolist() == list(range(start, start + n))  # contiguous
      assert f["position_ids"][where].tolist() == list(range(n))  # restarts at 0
      assert f["next_sentence_positions"][k - 1] == start  # its [CLS]
      entry = (tuple(f["input_ids"][where]), tuple(f["segment_ids"][where]))
      if masked:
        inside = (positions >= start) & (positions < start + n)
        entry += (tuple(positions[inside] - start), tuple(labels[inside]))
      found.append(entry + (int(f["next_sentence_labels"][k - 1]),))
  return sorted(found)


# --------------------------------------------------------------------------- generator


def test_pack_places_every_instance_within_the_limits_and_leaves_little_padding():
  rng = np.random.default_rng(3)
  lengths = rng.integers(5, 129, 3000)
  predictions = masking.prediction_budget(lengths, 0.15, 20)
  row, offset, num_rows = pretraining_packing.pack(lengths, predictions, 128, 20, 3)
  again = pretraining_packing.pack(lengths, predictions, 128, 20, 3)
  assert (again[0] == row).all() and (again[1] == offset).all()  # deterministic
  for r in range(num_rows):
    members = np.nonzero(row == r)[0]
    spans = sorted((offset[i], offset[i] + lengths[i]) for i in members)
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert spans[-1][1] <= 128 and predictions[members].sum() <= 20 and len(members) <= 3
  padding = 1 - lengths.sum() / (num_rows * 128)
  assert padding < 0.03, padding  # one instance a row would leave 48% empty


def test_prediction_budget_is_the_originals():
  lengths = np.array([5, 6, 7, 10, 16, 17, 100, 125, 128])
  expected = [min(20, max(1, int(round(n * 0.15))), n - 3) for n in lengths.tolist()]
  assert masking.prediction_budget(lengths, 0.15, 20).tolist() == expected


def test_encoded_features_equal_protobuf_serialization():
  rng = np.random.default_rng(0)
  features = {"input_ids": rng.integers(0, 2**27, (5, 9)),
              "sequence_ids": rng.integers(0, 4, (5, 9)),
              "next_sentence_weights": rng.random((5, 3)).astype(np.float32),
              "max_predictions_per_seq": np.full((5, 1), 20)}
  records, sizes = pretraining_records.encode_features(features, ("next_sentence_weights",))
  offset = 0
  for r, size in enumerate(sizes.tolist()):
    feature = {k: (tf.train.Feature(float_list=tf.train.FloatList(value=v[r]))
                   if v.dtype.kind == "f" else
                   tf.train.Feature(int64_list=tf.train.Int64List(value=v[r])))
               for k, v in features.items()}
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    assert records[offset:offset + size] == example.SerializeToString(deterministic=True)
    offset += size
  assert offset == len(records)


def test_packed_records_hold_the_same_instances_and_masks(data):
  plain_path, plain = data["files"]["plain"]
  packed_path, packed = data["files"]["packed"]
  instances = _instances_of_plain(_records(plain_path))
  assert _instances_of_packed(_records(packed_path)) == instances
  assert packed["instances_written"] == plain["instances_written"] == len(instances)
  assert packed["rows_written"] < plain["instances_written"]
  assert packed["padding_fraction"] < plain["padding_fraction"] / 3
  # Without a cap the library's default is the command's, which packs.
  default_cap = str(data["dir"] / "default_cap.tfrecord")
  summary = pretraining_generator.generate(
      [data["corpus"]], [default_cap], data["vocab"], pretraining_generator.GeneratorOptions(
          max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, random_seed=7,
          num_workers=0, pack_sequences=True))
  assert summary["rows_written"] <= packed["rows_written"] < plain["instances_written"]
  assert max(
      int(r["sequence_ids"].max()) for r in _records(default_cap)) <= 8
  # The summary's padding is that of the records.
  rows = _records(packed_path)
  real = sum(int(r["input_mask"].sum()) for r in rows)
  assert packed["padding_fraction"] == pytest.approx(1 - real / (64 * len(rows)))


def test_records_without_masks_hold_the_same_instances_once(data):
  plain = _instances_of_plain(_records(data["files"]["plain"][0]))
  unmasked = _records(data["files"]["unmasked"][0])
  assert sorted(unmasked[0]) == ["input_ids", "input_mask", "masked_lm_prob",
                                 "max_predictions_per_seq", "next_sentence_labels",
                                 "segment_ids"]
  assert unmasked[0]["max_predictions_per_seq"].tolist() == [10]
  assert unmasked[0]["masked_lm_prob"].tolist() == pytest.approx([0.15])
  # Unmasked: each instance's tokens are the masked instance's with the labels put back.
  restored = []
  for ids, segments, positions, labels, label in plain:
    ids = list(ids)
    for p, l in zip(positions, labels):
      ids[p] = l
    restored.append((tuple(ids), segments, label))
  got = sorted((tuple(f["input_ids"][:int(f["input_mask"].sum())]),
                tuple(f["segment_ids"][:int(f["input_mask"].sum())]),
                int(f["next_sentence_labels"][0])) for f in unmasked)
  assert got == sorted(restored)
  packed = [(e[0], e[1], e[2]) for e in _instances_of_packed(
      _records(data["files"]["unmasked_packed"][0]), masked=False)]
  assert sorted(packed) == sorted(restored)


# The sha256 of the generator's output for this test's corpus and vocabulary, written by
# the tree before packing and dynamic masking existed: without the new flags, the bytes
# stay those.
_DEFAULT_BYTES = {
    "per_piece": "1d23f85a1aa596eeb2b2b0af52d525cf5498f394bb4064809be5fbaedbe1cb82",
    "whole_word": "e0a39b81a1542763fb3b9dfe25bf6340e4717ac2dee6be804f9a7b1fb9b89839",
}


@pytest.mark.parametrize("kind", ["per_piece", "whole_word"])
def test_default_bytes_are_unchanged(data, tmp_path, kind):
  out = str(tmp_path / "out.tfrecord")
  pretraining_generator.generate(
      [data["corpus"]], [out], data["vocab"], pretraining_generator.GeneratorOptions(
          max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, random_seed=7,
          num_workers=0),
      masking.MaskingOptions(do_whole_word_mask=kind == "whole_word"))
  with open(out, "rb") as handle:
    assert hashlib.sha256(handle.read()).hexdigest() == _DEFAULT_BYTES[kind]


@pytest.mark.parametrize("options,message", [
    (dict(pack_sequences=True, max_sequences_per_row=0),
     "--max_sequences_per_row=0: must be at least 1"),
    (dict(dynamic_masking=True, do_whole_word_mask=True),
     "--do_whole_word_mask chooses the masks the generator draws: not with "
     "--dynamic_masking (its records hold no masks: run_pretraining.py draws them as it "
     "trains; pass the flag to it instead)"),
    (dict(dynamic_masking=True, mask_token_prob=0.5),
     "--mask_token_prob=0.5 shares out the masks the generator draws: not with "
     "--dynamic_masking"),
    # The partner table holds the library's values as the command's flags (a setting
    # changed from its default without the flag it acts with).
    (dict(max_sequences_per_row=4),
     "--max_sequences_per_row=4 sets the most instances a packed row holds: it needs "
     "--pack_sequences (without it the flag does nothing)"),
])
def test_generator_refusals_name_the_flag(data, tmp_path, options, message):
  out = tmp_path / "out.tfrecord"
  with pytest.raises(errors.UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
    generator_options.generate([data["corpus"]], [str(out)], data["vocab"], num_workers=0,
                               **options)
  assert not os.listdir(tmp_path)  # nothing written


# --------------------------------------------------------------------------- the model


def _packed_row(rng, lengths, seq, vocab_size):
  ids = np.zeros((1, seq), np.int32)
  positions = np.zeros((1, seq), np.int32)
  sequences = np.zeros((1, seq), np.int32)
  segments = np.zeros((1, seq), np.int32)
  alone, start = [], 0
  for k, n in enumerate(lengths):
    tokens = rng.integers(5, vocab_size, n)
    segment = (np.arange(n) >= n // 2).astype(np.int32)
    ids[0, start:start + n], segments[0, start:start + n] = tokens, segment
    positions[0, start:start + n], sequences[0, start:start + n] = np.arange(n), k + 1
    alone.append((start, tokens, segment))
    start += n
  return ids, positions, sequences, segments, alone


@pytest.mark.parametrize("lengths", [[9], [6, 8, 5, 4], [24]], ids=["one", "several", "full"])
def test_a_packed_row_gives_each_sequence_its_outputs_alone(lengths):
  seq, vocab_size = 24, 60
  config = tiny.tiny_config(vocab_size, max_position_embeddings=seq)
  keras_seed = 5
  tf.keras.utils.set_random_seed(keras_seed)
  plain, _ = heads.build_pretraining_model(config)
  packed, _ = heads.build_pretraining_model(config, packed=True)
  packed.set_weights(plain.get_weights())
  rng = np.random.default_rng(len(lengths))
  ids, positions, sequences, segments, alone = _packed_row(rng, lengths, seq, vocab_size)
  starts = [start for start, _, _ in alone]
  # Two masked positions in each sequence (its second and last tokens).
  masked = np.array([[p for start, t, _ in alone for p in (start + 1, start + len(t) - 1)]],
                    np.int32)
  out = packed({"input_ids": ids, "input_mask": (sequences > 0).astype(np.int32),
                "segment_ids": segments, "position_ids": positions,
                "sequence_ids": sequences, "masked_lm_positions": masked,
                "next_sentence_positions": np.array([starts], np.int32)})
  encoder = modeling.find_encoder(packed)
  whole = encoder({"input_ids": ids, "input_mask": (sequences > 0).astype(np.int32),
                   "segment_ids": segments, "position_ids": positions,
                   "sequence_ids": sequences})["sequence_output"].numpy()
  assert out["next_sentence_logits"].shape == (1, len(lengths), 2)
  for k, (start, tokens, segment) in enumerate(alone):
    n = len(tokens)
    row = np.zeros((1, seq), np.int32)
    row[0, :n] = tokens
    row_segments = np.zeros((1, seq), np.int32)
    row_segments[0, :n] = segment
    mask = (np.arange(seq) < n)[None].astype(np.int32)
    single = plain({"input_ids": row, "input_mask": mask, "segment_ids": row_segments,
                    "masked_lm_positions": np.array([[1, n - 1]], np.int32)})
    sequence_output = modeling.find_encoder(plain)(
        {"input_ids": row, "input_mask": mask, "segment_ids": row_segments})
    np.testing.assert_allclose(whole[0, start:start + n],
                               sequence_output["sequence_output"].numpy()[0, :n], atol=1e-5)
    np.testing.assert_allclose(out["masked_lm_logits"].numpy()[0, 2 * k:2 * k + 2],
                               single["masked_lm_logits"].numpy()[0], atol=1e-5)
    np.testing.assert_allclose(out["next_sentence_logits"].numpy()[0, k],
                               single["next_sentence_logits"].numpy()[0], atol=1e-5)


def test_packed_attention_bias_is_block_diagonal():
  bias = modeling.packed_attention_bias(np.array([[1, 1, 2, 2, 2, 0]], np.int32)).numpy()
  allowed = np.zeros((6, 6), bool)
  allowed[:2, :2] = allowed[2:5, 2:5] = True
  assert bias.shape == (1, 1, 6, 6)
  assert (bias[0, 0][allowed] == 0).all() and (bias[0, 0][~allowed] == -10000).all()


def test_packed_loss_is_per_masked_token_and_per_sequence():
  rng = np.random.default_rng(1)
  logits = rng.normal(size=(2, 3, 7)).astype("float32")
  labels = np.array([[1, 2, 0], [3, 3, 6]], "int32")
  weights = np.array([[1, 1, 0], [1, 1, 1]], "float32")
  ns_logits = rng.normal(size=(2, 3, 2)).astype("float32")
  ns_labels = np.array([[0, 1, 0], [1, 0, 0]], "int32")
  ns_weights = np.array([[1, 1, 0], [1, 0, 0]], "float32")
  per_example, metrics = heads.pretraining_loss(
      {"masked_lm_ids": labels, "masked_lm_weights": weights,
       "next_sentence_labels": ns_labels, "next_sentence_weights": ns_weights},
      {"masked_lm_logits": logits, "next_sentence_logits": ns_logits})

  def nll(x, y):
    x = x - x.max(-1, keepdims=True)
    log_probs = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, y[..., None], -1)[..., 0]

  mlm = (weights * nll(logits, labels)).sum() / (weights.sum() + 1e-5)
  nsp = (ns_weights * nll(ns_logits, ns_labels)).sum() / ns_weights.sum()
  np.testing.assert_allclose(per_example.numpy().mean(), mlm + nsp, rtol=1e-5)
  np.testing.assert_allclose(metrics["next_sentence_loss"][0] / metrics["next_sentence_loss"][1],
                             nsp, rtol=1e-5)
  correct = (ns_logits.argmax(-1) == ns_labels) * ns_weights
  assert float(metrics["next_sentence_accuracy"][0]) == correct.sum()
  assert float(metrics["next_sentence_accuracy"][1]) == 3.0


# --------------------------------------------------------------------------- run_pretraining


def _task(data, name, tmp_path, **options):
  masking_options = options.pop("masking_options", masking.MaskingOptions())
  config = tiny.write_tiny_config(tmp_path / "bert_config.json", data["vocab_size"],
                                  max_position_embeddings=64)
  task = pretraining_task.PretrainingTask(
      run_options.RunOptions(output_dir=str(tmp_path / name), bert_config_file=config,
                             vocab_file=data["vocab"], do_eval=True, max_seq_length=64,
                             eval_batch_size=8, **options),
      pretraining_options.PretrainingOptions(data["files"][name][0],
                                             max_predictions_per_seq=10,
                                             max_eval_steps=1000),
      masking_options)
  config = modeling.BertConfig.from_json_file(config)
  task.read_data(config)
  return task, config


def test_eval_on_packed_rows_equals_eval_on_the_same_instances_unpacked(data, tmp_path):
  results = {}
  weights = None
  for name in ("plain", "packed"):
    task, config = _task(data, name, tmp_path)
    tf.keras.utils.set_random_seed(3)
    model = task.build_model(config)
    if weights is None:
      weights = {k: v.numpy() for k, v in modeling.google_variable_map(model).items()}
    for key, variable in modeling.google_variable_map(model).items():
      variable.assign(weights[key])
    results[name] = task.evaluate(model, tf.distribute.OneDeviceStrategy("/cpu:0"))
  assert task.packed and isinstance(model.get_layer("bert"), modeling.BertModel)
  plain, packed = results["plain"], results["packed"]
  assert sorted(plain) == sorted(packed) == [
      "loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
      "next_sentence_loss"]
  for key in ("masked_lm_accuracy", "next_sentence_accuracy"):
    assert packed[key] == pytest.approx(plain[key], abs=1e-6)
  for key in ("masked_lm_loss", "next_sentence_loss", "loss"):
    assert packed[key] == pytest.approx(plain[key], rel=1e-5)


def test_layout_refusals_are_one_line(data, tmp_path):
  config = modeling.BertConfig.from_json_file(tiny.write_tiny_config(
      tmp_path / "c.json", data["vocab_size"], max_position_embeddings=64))
  cases = [
      (dict(max_seq_length=32), "packed", None,
       "record 0 has input_ids of length 64, but --max_seq_length is 32"),
      (dict(), "unmasked", 12,
       "made for --max_predictions_per_seq=10, but --max_predictions_per_seq is 12"),
      (dict(vocab_file=None), "unmasked", None,
       "records without masks (create_pretraining_data.py --dynamic_masking): "
       "run_pretraining.py masks them as it trains and needs --vocab_file"),
      (dict(ltr=True), "packed", None, "--ltr: --input_file holds packed rows"),
      (dict(masking_options=masking.MaskingOptions(masked_lm_prob=0.2)), "unmasked_packed",
       None, "made for --masked_lm_prob=0.15"),
      (dict(masking_options=masking.MaskingOptions(do_whole_word_mask=True)), "plain", None,
       "apply to records without masks"),
  ]
  for options, name, predictions, message in cases:
    masking_options = options.pop("masking_options", masking.MaskingOptions())
    run = dict(output_dir=str(tmp_path / "o"), do_eval=True, vocab_file=data["vocab"],
               max_seq_length=64)
    run.update(options)
    task = pretraining_task.PretrainingTask(
        run_options.RunOptions(**run), pretraining_options.PretrainingOptions(
            data["files"][name][0], max_predictions_per_seq=predictions or 10),
        masking_options)
    with pytest.raises(errors.UserError) as raised:
      task.read_data(config)
    assert message in str(raised.value) and "\n" not in str(raised.value)


# --------------------------------------------------------------------------- dynamic masks


def _masked_batches(data, name, options, seed=12345, batches=None, training=False,
                    batch_size=16):
  path = data["files"][name][0]
  layout = input_pipeline.check_pretraining_files([path], 64, 10)
  vocabulary = masking.Vocabulary.from_file(data["vocab"])
  dataset = input_pipeline.pretraining_dataset(
      [path], 64, 10, batch_size, training, seed=seed, layout=layout,
      masking=(vocabulary, options))
  if batches:
    dataset = dataset.take(batches)
  return [{k: v.numpy() for k, v in b.items()} for b in dataset], vocabulary


@pytest.mark.parametrize("name", ["unmasked", "unmasked_packed"])
@pytest.mark.parametrize("whole_words", [False, True])
def test_dynamic_masks_follow_the_originals_rules(data, name, whole_words):
  batches, vocabulary = _masked_batches(
      data, name, masking.MaskingOptions(do_whole_word_mask=whole_words))
  subword = np.frombuffer(vocabulary.is_subword, np.uint8).astype(bool)
  chosen = as_mask = kept = real = 0
  whole_word_checked = 0
  for b in batches:
    sequences = b.get("sequence_ids", b["input_mask"])
    positions_of = b.get("position_ids", np.broadcast_to(np.arange(64), sequences.shape))
    for r in range(len(b["input_ids"])):
      n = int(b["masked_lm_weights"][r].sum())
      positions, labels = b["masked_lm_positions"][r, :n], b["masked_lm_ids"][r, :n]
      assert positions.tolist() == sorted(set(positions.tolist()))
      assert not np.isin(labels, [vocabulary.cls_id, vocabulary.sep_id, 0]).any()
      assert (b["masked_lm_weights"][r, n:] == 0).all()
      original = b["input_ids"][r].copy()
      original[positions] = labels
      # Each sequence gets the original's budget, exactly (the corpus has words enough).
      for k in set(sequences[r][sequences[r] > 0].tolist()):
        length = int((sequences[r] == k).sum())
        inside = int((sequences[r][positions] == k).sum())
        budget = min(10, max(1, int(round(length * 0.15))), length - 3)
        if whole_words:
          assert inside <= budget
        else:
          assert inside == budget
      if whole_words:  # a chosen "##" piece comes with the candidate before it
        for p in positions.tolist():
          if subword[original[p]] and positions_of[r, p] > 1:
            before = p - 1
            if original[before] == vocabulary.sep_id:  # the original joins across it
              before -= 1
            assert before in positions.tolist()
            whole_word_checked += 1
      chosen += n
      as_mask += int((b["input_ids"][r, positions] == vocabulary.mask_id).sum())
      kept += int((b["input_ids"][r, positions] == labels).sum())
      real += int((sequences[r] > 0).sum())
  assert chosen / real == pytest.approx(0.15, abs=0.02)
  assert as_mask / chosen == pytest.approx(0.8, abs=0.04)
  # Kept: the 10% left alone plus random draws that hit the same token.
  assert kept / chosen == pytest.approx(0.1, abs=0.04)
  if whole_words:  # the corpus's pieced words were masked, with their first pieces
    assert whole_word_checked > 20


def test_dynamic_masks_are_new_each_epoch_and_the_same_for_a_seed(data):
  options = masking.MaskingOptions()
  first, _ = _masked_batches(data, "unmasked", options, batches=3)
  again, _ = _masked_batches(data, "unmasked", options, batches=3)
  other_seed, _ = _masked_batches(data, "unmasked", options, seed=1, batches=3)
  for a, b in zip(first, again):
    assert all((a[k] == b[k]).all() for k in a)
  assert any((a["masked_lm_positions"] != b["masked_lm_positions"]).any()
             for a, b in zip(first, other_seed))
  # The same records, batch 0 and batch N of the stream: masked differently.
  vocabulary = masking.Vocabulary.from_file(data["vocab"])
  features = {k: tf.constant(v) for k, v in first[0].items()
              if k in ("input_mask", "segment_ids", "next_sentence_labels")}
  original = first[0]["input_ids"].copy()
  for r in range(len(original)):
    n = int(first[0]["masked_lm_weights"][r].sum())
    original[r, first[0]["masked_lm_positions"][r, :n]] = first[0]["masked_lm_ids"][r, :n]
  features["input_ids"] = tf.constant(original)
  epoch_one = masking_graph.mask_batch(features, 0, 10, vocabulary, options, 12345 + 7919)
  np.testing.assert_array_equal(epoch_one["masked_lm_positions"],
                                first[0]["masked_lm_positions"])
  epoch_two = masking_graph.mask_batch(features, 40, 10, vocabulary, options, 12345 + 7919)
  assert (epoch_two["masked_lm_positions"].numpy() !=
          first[0]["masked_lm_positions"]).any()


def test_a_resumed_stream_draws_the_masks_of_an_uninterrupted_one(data):
  # A resumed run skips the batches it has trained on (loop._train_iterator); the masks
  # of the batches after must be those the uninterrupted run draws.
  path = data["files"]["unmasked_packed"][0]
  layout = input_pipeline.check_pretraining_files([path], 64, 10)
  vocabulary = masking.Vocabulary.from_file(data["vocab"])

  def stream():
    return input_pipeline.pretraining_dataset(
        [path], 64, 10, 8, True, seed=3, layout=layout,
        masking=(vocabulary, masking.MaskingOptions(do_whole_word_mask=True)))

  uninterrupted = [b for b in stream().take(7)]
  resumed = [b for b in stream().skip(4).take(3)]
  for a, b in zip(uninterrupted[4:], resumed):
    for key in ("input_ids", "masked_lm_positions", "masked_lm_ids", "sequence_ids"):
      np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())


def _run_pretraining(args):
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  from conftest import ROOT  # pylint: disable=g-import-not-at-top
  return subprocess.Popen([sys.executable, os.path.join(ROOT, "run_pretraining.py"), *args],
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow  # about a minute: three runs of run_pretraining.py (make test-slow)
def test_kill_9_then_resume_on_packed_rows_masked_as_they_train(data, tmp_path):
  import signal  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  config = tiny.write_tiny_config(tmp_path / "bert_config.json", data["vocab_size"],
                                  max_position_embeddings=64)

  def args(out):
    return [f"--input_file={data['files']['unmasked_packed'][0]}",
            f"--bert_config_file={config}", f"--vocab_file={data['vocab']}",
            f"--output_dir={out}", "--do_train", "--max_seq_length=64",
            "--max_predictions_per_seq=10", "--do_whole_word_mask", "--train_batch_size=4",
            "--num_train_steps=24", "--num_warmup_steps=2", "--learning_rate=2e-3",
            "--save_checkpoints_steps=4", "--steps_per_loop=1", "--log_every_steps=4"]

  full = _run_pretraining(args(tmp_path / "full"))
  assert full.wait(timeout=600) == 0, full.stderr.read()[-2000:]
  killed = _run_pretraining(args(tmp_path / "killed"))
  deadline = time.time() + 300
  while not os.path.exists(tmp_path / "killed" / "ckpt-8.index"):
    assert time.time() < deadline and killed.poll() is None
    time.sleep(0.02)
  killed.send_signal(signal.SIGKILL)
  killed.wait()
  resumed = _run_pretraining(args(tmp_path / "killed"))
  assert resumed.wait(timeout=600) == 0
  assert "Resumed from" in resumed.stderr.read()
  a = tf.train.load_checkpoint(str(tmp_path / "full" / "pretrained" / "bert_model.ckpt"))
  b = tf.train.load_checkpoint(str(tmp_path / "killed" / "pretrained" / "bert_model.ckpt"))
  names = [n for n, _ in tf.train.list_variables(
      str(tmp_path / "full" / "pretrained" / "bert_model.ckpt"))]
  assert "cls/seq_relationship/output_weights" in names
  for name in names:
    np.testing.assert_allclose(a.get_tensor(name), b.get_tensor(name), rtol=1e-5, atol=1e-6,
                               err_msg=name)
