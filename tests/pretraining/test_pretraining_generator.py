"""pretraining_generator.py and create_pretraining_data.py: faithfulness to the original algorithm, schema, statistics,
determinism across worker counts, whole-word masking, bad input."""
import itertools
import os
import random
import re
import subprocess
import sys
import unicodedata

import numpy as np
import pytest

import cli_harness
from conftest import CASED_VOCAB, ROOT, UNCASED_VOCAB, shared_path
import generator_options

from bert.pretraining import pretraining_records  # noqa: E402
from bert.pretraining import pretraining_corpus  # noqa: E402
from bert.pretraining import pretraining_generator as cpd  # noqa: E402
from bert.utils import atomic_output  # noqa: E402
from bert.utils import paths  # noqa: E402
from benchmarks.parts import pretraining_data_reference as reference  # noqa: E402
from bert.pretraining import pretraining_instances  # noqa: E402
from bert.pretraining import pretraining_tokenizer  # noqa: E402
from bert import tokenization  # noqa: E402
from bert.utils import errors  # noqa: E402

tf = pytest.importorskip("tensorflow")

CLS, SEP, MASK = 101, 102, 103


def _records(path):
  return list(tf.data.TFRecordDataset(path).as_numpy_iterator())


def _parse_all(paths, max_seq_length, max_predictions_per_seq):
  """Parses with fixed lengths, as run_pretraining does; wrong lengths fail here."""
  spec = {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
      "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
      "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }
  ds = tf.data.TFRecordDataset(paths).map(lambda r: tf.io.parse_single_example(r, spec))
  rows = list(ds.as_numpy_iterator())
  return {k: np.stack([r[k] for r in rows]) for k in spec}


def _generate(tmp_path, corpus, name="out.tfrecord", vocab=UNCASED_VOCAB, **kwargs):
  out = str(tmp_path / name)
  summary = generator_options.generate([corpus], [out], vocab, **kwargs)
  return out, summary


def _test_vocab(directory, words=()):
  """A vocabulary the test writes itself: BERT's special tokens at Google's ids 0 and
  100-103, the given words whole, and every printable ASCII character bare and as ##."""
  chars = [chr(c) for c in range(33, 127) if not chr(c).isupper()]
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(words) - set(chars)) +
            chars + ["##" + c for c in chars])
  path = os.path.join(str(directory), "test_vocab.txt")
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("\n".join(tokens) + "\n")
  return path


@pytest.fixture(params=["own", "shared"])
def vocab_dir(request, tmp_path_factory):
  """The folder of a vocabulary: one the test writes (runs everywhere) or, where
  ../shared exists, the real BERT-Base uncased one."""
  if request.param == "shared":
    return ("shared", shared_path("vocab", "uncased_vocab.txt"))
  return ("own", str(tmp_path_factory.mktemp("vocab")))


def _restored_tokens(row):
  """input_ids with the masked positions put back to their labels (the unmasked text)."""
  ids = row["input_ids"].copy()
  n = int(row["masked_lm_weights"].sum())
  ids[row["masked_lm_positions"][:n]] = row["masked_lm_ids"][:n]
  return ids


@pytest.fixture(scope="module")
def reuters_head(tmp_path_factory):
  """The first 120 documents of the real Reuters corpus."""
  source = shared_path("corpora", "reuters_docs.txt")
  path = tmp_path_factory.mktemp("corpus") / "reuters_head.txt"
  with open(source, encoding="utf-8") as handle:
    text = handle.read()
  path.write_text("\n\n".join(text.split("\n\n")[:120]) + "\n", encoding="utf-8")
  return str(path)


# --------------------------------------------------------------------------- pieces


def _example(ids, num_a, positions, labels, is_random_next, seq, preds):
  """The tf.train.Example the original writes, serialized deterministically."""
  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  n, k = len(ids), len(positions)
  return tf.train.Example(features=tf.train.Features(feature={
      "input_ids": ints(ids + [0] * (seq - n)),
      "input_mask": ints([1] * n + [0] * (seq - n)),
      "segment_ids": ints([0] * (num_a + 2) + [1] * (n - num_a - 2) + [0] * (seq - n)),
      "masked_lm_positions": ints(positions + [0] * (preds - k)),
      "masked_lm_ids": ints(labels + [0] * (preds - k)),
      "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
          value=[1.0] * k + [0.0] * (preds - k))),
      "next_sentence_labels": ints([int(is_random_next)]),
  })).SerializeToString(deterministic=True)


def test_encoded_examples_equal_protobuf_serialization():
  seq, preds = 300, 3
  encoder = pretraining_records.ExampleEncoder(max_seq_length=seq, max_predictions_per_seq=preds)
  # 131 tokens: positions >= 128 and ids >= 16384 take multi-byte varints; the second
  # instance is short, so cached per-length pieces must not leak between the two.
  long_ids = [CLS] + [20000 + i for i in range(64)] + [SEP] + list(range(5, 69)) + [SEP]
  instances = [(long_ids, 64, [7, 129], [30000, 3], True),
               ([CLS, 9, SEP, 10, 11, SEP], 1, [4], [11], False),
               ([CLS] + [2 ** 21 + 5] * 3 + [SEP, 7, SEP], 3, [1, 2, 3], [1, 2, 3], True)]
  input_ids = np.zeros((3, seq), np.int64)
  positions = np.zeros((3, preds), np.int64)
  labels = np.zeros((3, preds), np.int64)
  for i, (ids, _, pos, lab, _) in enumerate(instances):
    input_ids[i, :len(ids)] = ids
    positions[i, :len(pos)] = pos
    labels[i, :len(lab)] = lab
  batch = {"input_ids": input_ids, "positions": positions, "labels": labels,
           "length": np.array([len(x[0]) for x in instances]),
           "num_a": np.array([x[1] for x in instances]),
           "num_masked": np.array([len(x[2]) for x in instances]),
           "next_sentence_labels": np.array([int(x[4]) for x in instances])}
  records, sizes = encoder.encode(batch)
  expected = [_example(*x, seq, preds) for x in instances]
  assert sizes.tolist() == [len(e) for e in expected]
  assert records == b"".join(expected)


def test_varint_rows_match_protobuf_varints():
  values = np.array([[0, 1, 127, 128, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1]])
  packed, lengths = pretraining_records.varint_rows(values)
  expected = tf.train.Int64List(value=values[0].tolist()).SerializeToString()[2:]
  assert bytes(packed) == expected and lengths.tolist() == [len(expected)]
  with pytest.raises(ValueError):
    pretraining_records.varint_rows(np.array([[2 ** 28]]))


def _simulated_truncation(la, lb, max_num_tokens):
  """The original's truncate_seq_pair, counting the tokens each segment loses."""
  cut_a = cut_b = 0
  while la + lb > max_num_tokens:
    if la > lb:
      la, cut_a = la - 1, cut_a + 1
    else:
      lb, cut_b = lb - 1, cut_b + 1
  return cut_a, cut_b


def test_truncation_cuts_as_the_original_and_fronts_are_fair_coins():
  rng = np.random.default_rng(0)
  la = rng.integers(1, 200, 4000)
  lb = rng.integers(1, 200, 4000)
  a_start, b_start = rng.integers(0, 10 ** 6, 4000), rng.integers(0, 10 ** 6, 4000)
  new_a, new_la, new_b, new_lb = pretraining_instances.truncate_pairs(
      a_start, la, b_start, lb, 125, np.random.default_rng(1))
  cuts = np.array([_simulated_truncation(x, y, 125) for x, y in zip(la, lb, strict=True)])
  np.testing.assert_array_equal(la - new_la, cuts[:, 0])
  np.testing.assert_array_equal(lb - new_lb, cuts[:, 1])
  assert (new_la + new_lb <= 125).all() and (new_la >= 1).all() and (new_lb >= 1).all()
  front_a, front_b = new_a - a_start, new_b - b_start
  assert ((0 <= front_a) & (front_a <= cuts[:, 0])).all()
  assert ((0 <= front_b) & (front_b <= cuts[:, 1])).all()
  # Each lost token is the front one with probability 1/2: Binomial(cuts, 1/2).
  total = cuts.sum()
  assert abs((front_a.sum() + front_b.sum()) / total - 0.5) < 5 * 0.5 / np.sqrt(total)


class _ScriptedRandom:
  """The original's rng.random()/randint() calls, randint drawn as ours draws it."""

  def __init__(self, seed):
    self._rng = random.Random(seed)
    self.random = self._rng.random

  def randint(self, a, b):
    return a + int(self._rng.random() * (b - a + 1))


def test_pairing_is_the_originals_instance_by_instance(monkeypatch, reuters_head):
  """The reference's create_instances_from_document, its truncation and masking set
  aside, draws the same numbers as plan_instances; both must pair the same segments."""
  with open(reuters_head, encoding="utf-8") as handle:
    raw = [[l for l in b.split("\n") if l.strip()] for b in handle.read().split("\n\n")]
  raw = [d for d in raw if d]
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  documents = [[full.tokenize(l) for l in d] for d in raw]
  documents = [[s for s in d if s] for d in documents]
  documents = [d for d in documents if d]
  pairs = []
  monkeypatch.setattr(reference, "_truncate_pair",
                      lambda a, b, n, rng: pairs.append((list(a), list(b))))
  monkeypatch.setattr(reference, "_mask",
                      lambda tokens, *args: (tokens, [], []))
  for max_seq_length, short_seq_prob in [(128, 0.1), (40, 0.5)]:
    pairs.clear()
    rng = _ScriptedRandom(5)
    labels = []
    for _ in range(2):
      for index in range(len(documents)):
        labels.extend(i.is_random_next for i in reference._instances_from_document(
            documents, index, max_seq_length, short_seq_prob, 0.15, 20, [], rng, False))
    # Ours, over the same documents as flat ids.
    flat, prefixes, starts = [], [], []
    for d in documents:
      starts.append(len(flat))
      prefixes.append(list(itertools.accumulate((len(s) for s in d), initial=0)))
      for s in d:
        flat.extend(full.convert_tokens_to_ids(s))
    opt = pretraining_instances.InstanceOptions(max_seq_length, 20, 2, short_seq_prob, 0.15,
                                                0.8, 0.1, False, CLS, SEP, 103, [], b"")
    a_start, a_len, b_start, b_len, random_next = pretraining_instances.plan_instances(
        prefixes, starts, opt, random.Random(5))
    assert len(pairs) == len(a_start) > 500
    assert random_next == [int(x) for x in labels]
    for i, (a, b) in enumerate(pairs):
      assert flat[a_start[i]:a_start[i] + a_len[i]] == full.convert_tokens_to_ids(a)
      assert flat[b_start[i]:b_start[i] + b_len[i]] == full.convert_tokens_to_ids(b)


def test_chunks_keep_order_and_fold_a_tiny_last_chunk():
  docs = [[f"d{i}"] for i in range(11)]
  chunks = list(pretraining_corpus.chunk_documents(iter(docs), 4))
  assert [len(c) for c in chunks] == [4, 4, 3]
  chunks = list(pretraining_corpus.chunk_documents(iter(docs[:9]), 4))
  assert [len(c) for c in chunks] == [4, 5]  # a last chunk of 1 joins the one before
  assert [d for c in chunks for d in c] == docs[:9]
  chunk_seed = pretraining_instances.chunk_seed
  assert chunk_seed(7, 1) != chunk_seed(8, 1) != chunk_seed(8, 0)


def test_the_driver_and_its_workers_load_no_tensorflow_until_generate_needs_it():
  """A spawned worker imports the script's modules and pretraining_workers: NumPy only, so
  none of --num_workers processes pays TensorFlow's start-up; the parent imports it (with
  pretraining_tokenizer) only after the pool started."""
  code = ("import sys; from bert.pretraining import pretraining_corpus_check, pretraining_generator, "
          "pretraining_workers; print(sorted(m for m in ('tensorflow', 'bert.fast_tokenization', "
          "'bert.pretraining.pretraining_tokenizer')"
          " if m in sys.modules))")
  result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
  assert result.stdout == "[]\n"


# --------------------------------------------------------------------------- faithfulness


def _layout(rows):
  """Per instance: length, len(A), masked count, and what the masked positions show."""
  length = rows["input_mask"].sum(axis=1)
  restored = np.array([_restored_tokens({k: v[i] for k, v in rows.items()})
                       for i in range(len(length))])
  num_a = np.argmax(restored == SEP, axis=1) - 1
  real = rows["masked_lm_weights"] > 0
  shown = np.take_along_axis(rows["input_ids"], rows["masked_lm_positions"], 1)[real]
  labels = rows["masked_lm_ids"][real]
  return {"length": length, "num_a": num_a, "masked": real.sum(axis=1),
          "as_mask": np.mean(shown == MASK),
          "kept": np.mean((shown == labels) & (labels != MASK)),
          "random_next": rows["next_sentence_labels"][:, 0]}


@pytest.mark.parametrize("vocab,kwargs", [
    (UNCASED_VOCAB, dict(dupe_factor=3, random_seed=3)),
    pytest.param(CASED_VOCAB, dict(dupe_factor=2, random_seed=4, do_lower_case=False,
                                   do_whole_word_mask=True, max_seq_length=64,
                                   max_predictions_per_seq=10, short_seq_prob=0.3),
                 marks=pytest.mark.slow),
])
def test_output_is_statistically_the_originals(tmp_path, vocab, kwargs):
  """Ours against the plain reimplementation of the original on the Reuters corpus.

  The instance count varies by about 1% from seed to seed (whole document passes are
  short or not), so the bounds below are about 3 standard deviations of a difference.
  """
  corpus = shared_path("corpora", "reuters_docs.txt")
  ref_out = str(tmp_path / "ref.tfrecord")
  reference.generate([corpus], [ref_out], vocab, **kwargs)
  ours_out = str(tmp_path / "ours.tfrecord")
  summary = generator_options.generate([corpus], [ours_out], vocab, num_workers=0,
                                       **kwargs)
  seq = kwargs.get("max_seq_length", 128)
  preds = kwargs.get("max_predictions_per_seq", 20)
  theirs = _layout(_parse_all([ref_out], seq, preds))
  ours = _layout(_parse_all([ours_out], seq, preds))
  n_theirs, n_ours = len(theirs["length"]), len(ours["length"])
  assert n_ours == summary["instances_written"] and n_theirs > 10000
  assert abs(n_ours / n_theirs - 1) < 0.04
  for key in ("length", "num_a", "masked"):
    assert abs(ours[key].mean() / theirs[key].mean() - 1) < 0.03, key
  assert abs(ours["random_next"].mean() - theirs["random_next"].mean()) < 0.025
  # Shares of ~150k masked positions: standard error ~0.001.
  assert abs(ours["as_mask"] - theirs["as_mask"]) < 0.006
  assert abs(ours["kept"] - theirs["kept"]) < 0.005
  # The whole length distribution (full, short by short_seq_prob, document ends).
  grid = np.arange(5, seq + 1)
  cdf = lambda x: np.searchsorted(np.sort(x), grid, side="right") / len(x)  # noqa: E731
  assert np.abs(cdf(ours["length"]) - cdf(theirs["length"])).max() < 0.05


# --------------------------------------------------------------------------- output


@pytest.fixture(scope="module")
def reuters_run(tmp_path_factory):
  corpus = shared_path("corpora", "reuters_docs.txt")
  out = str(tmp_path_factory.mktemp("reuters") / "reuters.tfrecord")
  summary = generator_options.generate([corpus], [out], UNCASED_VOCAB, dupe_factor=2,
                                       num_workers=0, documents_per_chunk=300)
  return _parse_all([out], 128, 20), summary


def test_schema_layout_and_padding(reuters_run):
  rows, summary = reuters_run
  n = len(rows["input_ids"])
  assert n == summary["instances_written"] > 5000
  for key in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
              "masked_lm_ids", "next_sentence_labels"):
    assert rows[key].dtype == np.int64
  assert rows["masked_lm_weights"].dtype == np.float32
  for i in range(n):
    mask = rows["input_mask"][i]
    length = int(mask.sum())
    assert 5 <= length <= 128
    assert (mask[:length] == 1).all() and (mask[length:] == 0).all()
    ids, segments = rows["input_ids"][i], rows["segment_ids"][i]
    assert (ids[length:] == 0).all() and (segments[length:] == 0).all()
    restored = _restored_tokens({k: v[i] for k, v in rows.items()})
    seps = np.flatnonzero(restored[:length] == SEP)
    assert restored[0] == CLS and len(seps) == 2 and seps[1] == length - 1
    assert (restored[1:length] != CLS).all()
    # [CLS] A [SEP] -> segment 0; B [SEP] -> segment 1.
    assert (segments[:seps[0] + 1] == 0).all() and (segments[seps[0] + 1:length] == 1).all()
    assert seps[0] >= 2 and length - seps[0] >= 3  # A and B are never empty
    weights = rows["masked_lm_weights"][i]
    k = int(weights.sum())
    expected_k = min(20, max(1, int(round(length * 0.15))))
    assert k == expected_k
    assert (weights[:k] == 1.0).all() and (weights[k:] == 0.0).all()
    positions = rows["masked_lm_positions"][i]
    assert (np.diff(positions[:k]) > 0).all() and (positions[k:] == 0).all()
    assert (rows["masked_lm_ids"][i][k:] == 0).all()
    assert not np.isin(positions[:k], [0, seps[0], seps[1]]).any()
    assert rows["next_sentence_labels"][i][0] in (0, 1)


def test_masking_statistics_on_real_corpus(reuters_run):
  rows, summary = reuters_run
  n_real = rows["input_mask"].sum()
  weights = rows["masked_lm_weights"]
  n_masked = int(weights.sum())
  assert n_masked > 100_000
  real = weights > 0
  positions = rows["masked_lm_positions"]
  shown = np.take_along_axis(rows["input_ids"], positions, axis=1)[real]
  labels = rows["masked_lm_ids"][real]
  as_mask = np.mean(shown == MASK)
  kept = np.mean((shown == labels) & (labels != MASK))
  randomised = 1.0 - as_mask - kept
  # Binomial standard errors at n ~ 130k are ~0.001; 5 sigma is ~0.005.
  assert abs(as_mask - 0.8) < 0.005 and abs(kept - 0.1) < 0.004
  assert abs(randomised - 0.1) < 0.004
  # 15% of the tokens, rounded per sequence and capped at 20.
  assert abs(n_masked / n_real - 0.15) < 0.003
  assert summary["masked_fraction"] == pytest.approx(n_masked / n_real)
  assert summary["mask_token_fraction"] == pytest.approx(as_mask, abs=2e-5)
  random_next = rows["next_sentence_labels"].mean()
  assert summary["random_next_fraction"] == pytest.approx(random_next)
  # Half the pairs are random by the coin, plus chunks of one sentence, which the
  # original always pairs with a random document: the fraction is just above 0.5.
  assert 0.5 < random_next < 0.62
  assert summary["unk_rate"] < 0.001 and summary["documents"] == 946


def test_random_next_fraction_matches_hand_computed_value(tmp_path, vocab_dir):
  # Documents of two 10-token sentences, target 125 tokens: the chunk is the whole
  # document; half the time B is the second sentence (label 0), half the time B is random
  # and the second sentence is put back, making a one-sentence chunk, random again.
  # Expected: (0.5*0 + 0.5*2) / (0.5*1 + 0.5*2) = 2/3 of the instances are random-next.
  rng = random.Random(0)
  words = ["market", "shares", "bank", "oil", "price", "rose", "fell", "said", "trade",
           "year"]
  lines = []
  for _ in range(600):
    for _ in range(2):
      lines.append(" ".join(rng.choice(words) for _ in range(10)))
    lines.append("")
  corpus = tmp_path / "pairs.txt"
  corpus.write_text("\n".join(lines), encoding="utf-8")
  kind, where = vocab_dir
  vocab = _test_vocab(where, words) if kind == "own" else where
  out, summary = _generate(tmp_path, str(corpus), vocab=vocab, dupe_factor=3,
                           short_seq_prob=0.0, num_workers=0, documents_per_chunk=200)
  assert summary["unk_rate"] == 0.0 and summary["corpus_tokens"] == 12000
  rows = _parse_all([out], 128, 20)
  n = len(rows["input_ids"])
  # 1800 document passes, each 1 or 2 instances with probability 1/2.
  assert abs(n - 2700) < 5 * np.sqrt(1800 * 0.25)
  # Each pass that made two instances made two random-next ones, and no other pass did.
  assert rows["next_sentence_labels"].sum() == 2 * (n - 1800)
  fraction = rows["next_sentence_labels"].mean()
  assert abs(fraction - 2 / 3) < 0.05  # standard error 0.44 / sqrt(1800) = 0.0105
  not_random = rows["next_sentence_labels"][:, 0] == 0
  # An actual-next pair is the whole document: 1 + 10 + 1 + 10 + 1 tokens.
  assert (rows["input_mask"][not_random].sum(axis=1) == 23).all()


def test_whole_word_masking_never_splits_a_word(tmp_path, reuters_head):
  out, _ = _generate(tmp_path, reuters_head, dupe_factor=2, do_whole_word_mask=True,
                     num_workers=0, documents_per_chunk=40, random_seed=5)
  rows = _parse_all([out], 128, 20)
  vocab = list(tokenization.load_vocab(UNCASED_VOCAB))
  subword = np.array([t.startswith("##") for t in vocab])
  multi_piece_words_masked = 0
  for i in range(len(rows["input_ids"])):
    row = {k: v[i] for k, v in rows.items()}
    restored = _restored_tokens(row)
    length = int(row["input_mask"].sum())
    k = int(row["masked_lm_weights"].sum())
    masked = set(row["masked_lm_positions"][:k].tolist())
    # Words as the original groups them: a ## piece joins the previous candidate.
    words, current = [], None
    for p in range(1, length - 1):
      if restored[p] == SEP:
        continue
      if current is not None and subword[restored[p]]:
        current.append(p)
      else:
        current = [p]
        words.append(current)
    for word in words:
      hit = sum(p in masked for p in word)
      assert hit in (0, len(word)), (i, word, sorted(masked))
      multi_piece_words_masked += hit > 1
    assert sum(len(w) for w in words if w[0] in masked) == k
  assert multi_piece_words_masked > 50


def test_ablation_switches_change_the_replacement_mix(tmp_path):
  corpus = shared_path("corpora", "sample_text.txt")
  for mask_p, random_p, expect in [(0.0, 0.0, "kept"), (1.0, 0.0, "mask")]:
    out, summary = _generate(tmp_path, corpus, name=f"abl{mask_p}", dupe_factor=3,
                             num_workers=0, mask_token_prob=mask_p,
                             random_token_prob=random_p)
    rows = _parse_all([out], 128, 20)
    real = rows["masked_lm_weights"] > 0
    shown = np.take_along_axis(rows["input_ids"], rows["masked_lm_positions"], 1)[real]
    if expect == "kept":
      assert (shown == rows["masked_lm_ids"][real]).all()
      assert summary["kept_fraction"] == 1.0
    else:
      assert (shown == MASK).all() and summary["mask_token_fraction"] == 1.0


# --------------------------------------------------------------------------- determinism


def test_same_bytes_whatever_the_number_of_workers(tmp_path, reuters_head):
  common = dict(dupe_factor=2, documents_per_chunk=25, random_seed=11)
  outs = {}
  for workers in (0, 2):
    paths = [str(tmp_path / f"w{workers}-{s}") for s in range(3)]
    generator_options.generate([reuters_head], paths, UNCASED_VOCAB, num_workers=workers,
                               **common)
    outs[workers] = [open(p, "rb").read() for p in paths]
  assert outs[0] == outs[2]
  assert min(len(b) for b in outs[0]) > 100_000
  other = str(tmp_path / "seed12")
  generator_options.generate([reuters_head], [other], UNCASED_VOCAB, num_workers=0,
                             **dict(common, random_seed=12))
  assert _records(other)[:50] != _records(str(tmp_path / "w0-0"))[:50]


# --------------------------------------------------------------------------- bad input


def test_documents_too_short_or_too_few_are_rejected(tmp_path, vocab_dir):
  kind, where = vocab_dir
  vocab = _test_vocab(where) if kind == "own" else where
  single = tmp_path / "single.txt"
  single.write_text("one sentence.\n\nanother sentence.\n\na third.\n", encoding="utf-8")
  one_doc = tmp_path / "one_doc.txt"
  one_doc.write_text("first sentence.\nsecond sentence.\n", encoding="utf-8")
  for corpus, words in [(single, "single sentence"), (one_doc, "only one document")]:
    out = tmp_path / f"{corpus.stem}.tfrecord"
    with pytest.raises(errors.UserError, match=words):
      generator_options.generate([str(corpus)], [str(out)], vocab, num_workers=0)
    assert not out.exists()
  assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f]


def _run_script(*args, vocab=UNCASED_VOCAB):
  # The command line's real path in a warm process (TensorFlow, which writing loads, is
  # loaded once for the file's runs).
  return cli_harness.run("create_pretraining_data.py", [f"--vocab_file={vocab}", *args],
                         timeout=240)


def _last_line(result):
  return result.stderr.strip().splitlines()[-1]


def test_non_utf8_and_empty_input_are_reported_before_anything_is_written(tmp_path,
                                                                          vocab_dir):
  kind, where = vocab_dir
  vocab = _test_vocab(where) if kind == "own" else where
  bad = tmp_path / "latin1.txt"
  bad.write_bytes(b"good line one.\ngood line two.\n\ncaf\xe9 au lait.\nmore.\n")
  out = tmp_path / "out.tfrecord"
  with pytest.raises(errors.UserError, match=f"{bad}:4: not valid UTF-8"):
    generator_options.generate([str(bad)], [str(out)], vocab, num_workers=0)
  with pytest.raises(errors.UserError, match="empty corpus"):
    generator_options.generate([_write(tmp_path, "blank.txt", "\n  \n\n")], [str(out)],
                               vocab, num_workers=0)
  assert sorted(os.listdir(tmp_path)) == ["blank.txt", "latin1.txt"]


def _write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_cli_missing_input_is_one_line_exit_2(tmp_path):
  vocab = _test_vocab(tmp_path)
  out = tmp_path / "out" / "out.tfrecord"
  result = _run_script(f"--input_file={tmp_path / 'missing.txt'}", f"--output_file={out}",
                       vocab=vocab)
  assert result.returncode == 2, result.stderr[-2000:]
  assert _last_line(result) == (f"create_pretraining_data.py: error: --input_file: no file "
                                f"matches '{tmp_path / 'missing.txt'}'")
  assert "Traceback" not in result.stderr and os.listdir(tmp_path) == ["test_vocab.txt"]


_DEFAULT_OPTIONS = dict(  # create_pretraining_data.py's flag defaults
    do_whole_word_mask=False, max_seq_length=128, max_predictions_per_seq=20,
    random_seed=12345, dupe_factor=10, masked_lm_prob=0.15, short_seq_prob=0.1,
    mask_token_prob=0.8, random_token_prob=0.1, num_workers=None, documents_per_chunk=1000)


@pytest.mark.parametrize("flag,message", [
    ("num_output_shards=0", "--num_output_shards=0: must be at least 1"),
    ("max_seq_length=1000000000",
     "--max_seq_length=1000000000: must be between 5 and 8192 (no BERT has more "
     "positions)"),
    ("max_predictions_per_seq=100000",
     "--max_predictions_per_seq=100000: more than 8,192, beyond any sane run"),
    ("dupe_factor=0", "--dupe_factor=0: must be at least 1"),
    ("dupe_factor=1000000", "--dupe_factor=1000000: more than 1,000, beyond any sane run"),
    ("num_workers=-1", "--num_workers=-1: must be 0 or more"),
    ("split_sentences=nltk", "--split_sentences=nltk: unknown; choose one of pysbd"),
])
def test_flag_errors_are_one_line_before_any_work(tmp_path, flag, message):
  """The checks main() runs before reading the corpus, in this process; the command-line
  test below shows one of them reaching the user as one line and exit 2."""
  corpus = _write(tmp_path, "corpus.txt", "a b.\nc d.\n\ne f.\ng h.\n")
  out = str(tmp_path / "new" / "out.tfrecord")  # a folder check_run would create
  vocab = _test_vocab(tmp_path)
  name, value = flag.split("=")
  with pytest.raises(errors.UserError) as raised:
    if name == "split_sentences":  # main() builds the splitter before check_run
      pretraining_corpus.sentence_splitter(value)
    elif name == "num_output_shards":
      cpd.check_run(corpus, out, vocab, *generator_options.options(**_DEFAULT_OPTIONS),
                    num_output_shards=int(value))
    else:
      cpd.check_run(corpus, out, vocab, *generator_options.options(
          **dict(_DEFAULT_OPTIONS, **{name: int(value)})))
  assert str(raised.value) == message
  assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "test_vocab.txt"]


def test_cli_flag_error_is_one_line_exit_2_before_any_work(tmp_path):
  """Also: the output's new folder is not created (--split_sentences was checked after
  check_run had made it, which left an empty folder behind)."""
  corpus = _write(tmp_path, "corpus.txt", "a b.\nc d.\n\ne f.\ng h.\n")
  out = tmp_path / "new" / "out.tfrecord"
  result = _run_script(f"--input_file={corpus}", f"--output_file={out}",
                       "--split_sentences=nltk", vocab=_test_vocab(tmp_path))
  assert result.returncode == 2, result.stderr[-2000:]
  assert _last_line(result) == ("create_pretraining_data.py: error: --split_sentences=nltk: "
                                "unknown; choose one of pysbd")
  assert "Traceback" not in result.stderr
  assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "test_vocab.txt"]


def test_cli_output_under_a_regular_file_is_one_line(tmp_path):
  corpus = _write(tmp_path, "corpus.txt", "a b.\nc d.\n\ne f.\ng h.\n")
  blocker = _write(tmp_path, "blocker", "a file\n")
  out = os.path.join(blocker, "sub", "out.tfrecord")
  result = _run_script(f"--input_file={corpus}", f"--output_file={out}",
                       vocab=_test_vocab(tmp_path))
  assert result.returncode == 2, result.stderr[-2000:]
  assert _last_line(result) == (f"create_pretraining_data.py: error: --output_file={out}: "
                                f"{blocker} is a file, not a directory")
  assert sorted(os.listdir(tmp_path)) == ["blocker", "corpus.txt", "test_vocab.txt"]


def test_cli_creates_the_output_folder_and_removes_killed_runs_temporaries(tmp_path):
  """A run killed with SIGKILL leaves atomic_path's hidden temporary; the next run of the
  same output removes it (and only it: other files that look alike stay)."""
  words = ["market", "shares", "bank", "oil", "price"]
  text = "\n\n".join("\n".join(" ".join(words[(d + s) % 5:]) + " ." for s in range(3))
                     for d in range(6))
  corpus = _write(tmp_path, "corpus.txt", text + "\n")
  out_dir = tmp_path / "new" / "folder"
  out = out_dir / "out.tfrecord"
  out_dir.mkdir(parents=True)
  leftovers = [paths.temporary_sibling(str(out)) for _ in range(2)]
  others = [str(out_dir / ".out.tfrecord.tmp-notours"), str(out_dir / ".other.tmp-12345678"),
            str(out_dir / "out.tfrecord.tmp-12345678")]
  for path in leftovers + others:
    with open(path, "wb") as handle:
      handle.write(b"partial")
  result = _run_script(f"--input_file={corpus}", f"--output_file={out}", "--dupe_factor=1",
                       "--num_workers=0", "--max_seq_length=16",
                       vocab=_test_vocab(tmp_path, words))
  assert result.returncode == 0, result.stderr[-3000:]
  assert sorted(os.listdir(out_dir)) == sorted(
      ["out.tfrecord"] + [os.path.basename(p) for p in others])
  assert len(_records(str(out))) == int(
      result.stdout.split("instances_written = ")[1].split()[0])
  # And a folder that does not exist yet is created (as every other script does).
  fresh = tmp_path / "missing" / "dir" / "x.tfrecord"
  result = _run_script(f"--input_file={corpus}", f"--output_file={fresh}",
                       "--dupe_factor=1", "--num_workers=0", "--max_seq_length=16",
                       vocab=_test_vocab(tmp_path, words))
  assert result.returncode == 0, result.stderr[-3000:]
  assert _records(str(fresh)) == _records(str(out))


def test_cli_check_only_warns_on_decomposed_text_and_writes_nothing(tmp_path):
  nfc = ["스크린샷 화면을 찍었다 .", "영화가 정말 좋았다 ."]
  vocab_words = sorted({w for line in nfc for w in line.split()} | set("".join(nfc)))
  vocab = _test_vocab(tmp_path, vocab_words)
  nfd = [unicodedata.normalize("NFD", line) for line in nfc]
  corpus = _write(tmp_path, "nfd.txt", "\n\n".join("\n".join(nfd) for _ in range(4)) + "\n")
  out = tmp_path / "o" / "out.tfrecord"
  result = _run_script(f"--input_file={corpus}", f"--output_file={out}", "--check_only",
                       "--do_lower_case=False", vocab=vocab)
  assert result.returncode == 0, result.stderr[-3000:]
  warnings = [l.split("] ", 1)[1] for l in result.stderr.splitlines()
              if "] WARNING: " in l]
  assert len(warnings) == 2, result.stderr
  assert "pass --normalize=nfc" in warnings[0] and "8 of 8 lines hold decomposed" in warnings[1]
  assert "[UNK] rate 0.7500 (24 of 32 tokens)" in result.stderr  # 3 words of 4 a line
  assert not (tmp_path / "o").exists()
  result = _run_script(f"--input_file={corpus}", f"--output_file={out}", "--check_only",
                       "--do_lower_case=False", "--normalize=nfc", vocab=vocab)
  assert result.returncode == 0 and re.search(r"\]   no warnings$", result.stderr, re.M)
  assert "[UNK] rate 0.0000 (0 of 32 tokens)" in result.stderr


def test_cli_skips_bad_lines_and_writes_shards(tmp_path):
  corpus = shared_path("corpora", "sample_text.txt")
  bad = tmp_path / "corpus.txt"
  bad.write_bytes(open(corpus, "rb").read() + b"\n\nbad \xff line.\nfine line.\nok.\n")
  base = tmp_path / "shard.tfrecord"
  result = _run_script(f"--input_file={bad}", f"--output_file={base}",
                       "--num_output_shards=2", "--on_encoding_error=skip",
                       "--dupe_factor=2", "--num_workers=1")
  assert result.returncode == 0, result.stderr[-3000:]
  assert "skipped_lines = 1" in result.stdout and "documents = 4" in result.stdout
  shards = sorted(p for p in os.listdir(tmp_path) if p.startswith("shard"))
  assert shards == ["shard.tfrecord-00000-of-00002", "shard.tfrecord-00001-of-00002"]
  counts = [len(_records(str(tmp_path / s))) for s in shards]
  written = int(result.stdout.split("instances_written = ")[1].split()[0].replace(",", ""))
  assert sum(counts) == written and abs(counts[0] - counts[1]) <= 1


def test_round_trip_segments_come_from_the_documents(tmp_path):
  """Decoded A and B are runs of the corpus; an actual-next B follows A in its document."""
  corpus = shared_path("corpora", "sample_text.txt")
  out, _ = _generate(tmp_path, corpus, dupe_factor=4, num_workers=0, random_seed=2)
  rows = _parse_all([out], 128, 20)
  # Our run_pretraining's reader accepts the file and batches it unchanged.
  from bert import input_pipeline  # pylint: disable=g-import-not-at-top
  input_pipeline.check_pretraining_files([out], 128, 20)
  batch = next(iter(input_pipeline.pretraining_dataset([out], 128, 20, 4, False)))
  np.testing.assert_array_equal(batch["input_ids"].numpy(), rows["input_ids"][:4])
  np.testing.assert_array_equal(batch["masked_lm_weights"].numpy(),
                                rows["masked_lm_weights"][:4])
  tokenizer = pretraining_tokenizer.get_tokenizer(UNCASED_VOCAB, True)
  with open(corpus, encoding="utf-8") as handle:
    blocks = [b.split("\n") for b in handle.read().split("\n\n")]
  streams = []
  for block in blocks:
    flat, _ = tokenizer.tokenize([l.strip() for l in block if l.strip()])
    streams.append(" " + " ".join(map(str, flat.tolist())) + " ")
  labels = rows["next_sentence_labels"][:, 0]
  assert 0 < labels.sum() < len(labels)
  for i in range(len(labels)):
    restored = _restored_tokens({k: v[i] for k, v in rows.items()})
    length = int(rows["input_mask"][i].sum())
    sep = int(np.flatnonzero(restored == SEP)[0])
    a = " " + " ".join(map(str, restored[1:sep])) + " "
    b = " " + " ".join(map(str, restored[sep + 1:length - 1])) + " "
    homes_a = [d for d, s in enumerate(streams) if a in s]
    homes_b = [d for d, s in enumerate(streams) if b in s]
    assert homes_a and homes_b, i
    if labels[i] == 0:
      assert any(streams[d].index(a) < streams[d].index(b) for d in homes_a if d in homes_b)


# --------------------------------------------------------------------------- opt-in steps


def _korean_pairs_corpus(path, form):
  rng = random.Random(3)
  words = ["스크린샷", "화면을", "찍었다", "영화가", "정말", "좋았다", "배우", "연기"]
  documents = ["\n".join(" ".join(rng.choice(words) for _ in range(6)) + " ."
                         for _ in range(4)) for _ in range(60)]
  text = unicodedata.normalize(form, "\n\n".join(documents) + "\n")
  path.write_text(text, encoding="utf-8")
  return str(path), words


def test_normalize_nfc_makes_decomposed_text_the_composed_texts_bytes(tmp_path):
  nfc_corpus, words = _korean_pairs_corpus(tmp_path / "nfc.txt", "NFC")
  nfd_corpus, _ = _korean_pairs_corpus(tmp_path / "nfd.txt", "NFD")
  vocab = _test_vocab(tmp_path, words)
  common = dict(vocab=vocab, do_lower_case=False, dupe_factor=2, num_workers=0,
                max_seq_length=32, max_predictions_per_seq=5)
  reference, summary = _generate(tmp_path, nfc_corpus, name="nfc.tfrecord", **common)
  assert summary["unk_rate"] == 0.0 and summary["instances_written"] > 100
  raw, raw_summary = _generate(tmp_path, nfd_corpus, name="raw.tfrecord", **common)
  assert raw_summary["unk_rate"] > 0.8  # the original (no normalisation): words are [UNK]
  fixed, _ = _generate(tmp_path, nfd_corpus, name="fixed.tfrecord", normalize="nfc",
                       **common)
  assert open(fixed, "rb").read() == open(reference, "rb").read()


def test_split_sentences_turns_paragraph_lines_into_sentences(tmp_path):
  pytest.importorskip("pysbd")
  rng = random.Random(4)
  words = ["market", "shares", "bank", "oil", "price", "rose", "fell", "said", "trade"]
  paragraphs = []
  for _ in range(150):
    sentences = [" ".join(rng.choice(words) for _ in range(8)).capitalize() + "."
                 for _ in range(6)]
    paragraphs.append(" ".join(sentences))
  corpus = _write(tmp_path, "paragraphs.txt",
                  "\n\n".join("\n".join(paragraphs[i:i + 3]) for i in range(0, 150, 3)) + "\n")
  vocab = _test_vocab(tmp_path, words + [w.capitalize() for w in words])
  common = dict(vocab=vocab, dupe_factor=2, num_workers=0, max_seq_length=40,
                short_seq_prob=0.0)
  _, as_lines = _generate(tmp_path, corpus, name="lines.tfrecord", **common)
  _, split = _generate(tmp_path, corpus, name="split.tfrecord",
                       split_sentences=pretraining_corpus.sentence_splitter("pysbd", "en"),
                       **common)
  # 3 paragraph lines a document, each of 6 sentences: as lines, 150 sentences; split,
  # 900, and the same tokens.
  assert (as_lines["sentences"], split["sentences"]) == (150, 900)
  assert as_lines["corpus_tokens"] == split["corpus_tokens"] == 150 * 6 * 9
  # A 55-token paragraph exceeds the 37-token target alone: each instance is one line
  # paired with a random document. Split into 9-token sentences, pairs are mostly real.
  assert as_lines["random_next_fraction"] == 1.0
  assert split["random_next_fraction"] < 0.6
