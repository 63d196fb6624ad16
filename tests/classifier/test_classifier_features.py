"""classifier_features: in-graph token ids == the original conversion; padding."""
import numpy as np
import pytest

from bert.classifier import classifier_examples as ce
from bert.classifier import classifier_features as cf
from bert.classifier import classifier_data
from bert import fast_tokenization
from bert import tokenization
from conftest import UNCASED_VOCAB, shared_path


@pytest.fixture(scope="module")
def tokenizers():
  shared_path("vocab", "uncased_vocab.txt")
  return (fast_tokenization.FastTokenizer(UNCASED_VOCAB, True),
          tokenization.FullTokenizer(UNCASED_VOCAB, True))


def _collect(dataset):
  """example_index -> (ids, mask, segments, label) and the batch widths."""
  rows, widths = {}, []
  for batch in dataset:
    widths.append(int(batch["input_ids"].shape[1]))
    for i, index in enumerate(batch["example_index"].numpy()):
      assert index not in rows
      rows[int(index)] = tuple(batch[k][i].numpy() for k in
                               ("input_ids", "input_mask", "segment_ids", "label_ids"))
  return rows, widths


@pytest.mark.parametrize("task,folder,count,seq_length", [
    ("mrpc", "MRPC", 200, 40),    # pairs, many truncated by the longer-first rule
    ("sst2", "SST-2", 300, 128),  # single sentences
])
def test_fast_pipeline_ids_equal_original_conversion(tokenizers, task, folder, count,
                                                     seq_length):
  fast, full = tokenizers
  processor = classifier_data.get_processor(task)
  examples = processor.get_dev_examples(shared_path("glue", folder))[:count]
  labels = processor.get_labels()
  rows, widths = _collect(cf.make_dataset(examples, labels, fast, seq_length, 8,
                                          is_training=False))
  assert sorted(rows) == list(range(count))
  truncated = 0
  for index, example in enumerate(examples):
    expected = cf.convert_single_example(example, labels, seq_length, full)
    ids, mask, segments, label = rows[index]
    width = len(ids)
    assert list(ids) == expected.input_ids[:width], example.guid
    assert list(mask) == expected.input_mask[:width], example.guid
    assert list(segments) == expected.segment_ids[:width], example.guid
    assert sum(expected.input_mask) == int(mask.sum())  # nothing real cut by the trim
    assert label == expected.label_id
    truncated += sum(expected.input_mask) == seq_length
  if task == "mrpc":
    assert truncated > 25  # the truncation rule was really exercised
  assert max(widths) <= seq_length


def test_pair_rows_with_empty_text_b_are_single(tokenizers):
  fast, full = tokenizers
  examples = [ce.InputExample("a", "hello world", ""), ce.InputExample("b", "the cat", "sat")]
  rows, _ = _collect(cf.make_dataset(examples, ["0", "1"], fast, 40, 2, is_training=False))
  for index, example in enumerate(examples):
    expected = cf.convert_single_example(example, ["0", "1"], 40, full)
    assert list(rows[index][0]) == expected.input_ids[:len(rows[index][0])]
  assert list(rows[0][0][:4]) == [101, 7592, 2088, 102]


def test_per_batch_padding_and_fixed_padding(tokenizers):
  fast, _ = tokenizers
  examples = classifier_data.Sst2Processor().get_dev_examples(shared_path("glue", "SST-2"))[:200]
  dataset = cf.make_dataset(examples, ["0", "1"], fast, 128, 16, is_training=False,
                            window_batches=4)
  total_width = 0
  for batch in dataset:
    longest = int(batch["input_mask"].numpy().sum(axis=1).max())
    width = int(batch["input_ids"].shape[1])
    # Each batch is as wide as its longest row, not 128.
    assert width == longest
    total_width += width * len(batch["example_index"])
  assert total_width / len(examples) < 48  # SST-2 sentences are short
  fixed = cf.make_dataset(examples, ["0", "1"], fast, 128, 16, is_training=False,
                          fixed_padding=True)
  widths = {int(b["input_ids"].shape[1]) for b in fixed}
  assert widths == {128}
  # Fixed padding keeps the file order; sorted windows only reorder inside a window.
  order = np.concatenate([b["example_index"].numpy() for b in fixed])
  assert list(order) == list(range(200))


def test_eval_windows_default_to_one_eager_chunk(tokenizers, monkeypatch):
  # By default eval/predict rows are sorted by length over a whole eager chunk (here 64
  # rows, 8 batches of 8), not 32 batches, and each batch is exactly its longest row.
  fast, _ = tokenizers
  monkeypatch.setattr(cf, "EAGER_CHUNK_ROWS", 64)
  assert cf.eval_window_batches(8) == 8 and cf.eval_window_batches(100) == 1
  examples = classifier_data.Sst2Processor().get_dev_examples(shared_path("glue", "SST-2"))[:150]
  for batches in (list(cf.predict_batches(examples, ["0", "1"], fast, 128, 8)),
                  [{k: v.numpy() for k, v in b.items()} for b in
                   cf.make_dataset(examples, ["0", "1"], fast, 128, 8, is_training=False)]):
    lengths = np.concatenate([b["input_mask"].sum(axis=1) for b in batches])
    order = np.concatenate([b["example_index"] for b in batches])
    assert sorted(order) == list(range(150))
    for start in range(0, 150, 64):  # sorted inside each chunk, not across chunks
      assert list(lengths[start:start + 64]) == sorted(lengths[start:start + 64])
      assert set(order[start:start + 64]) == set(range(start, min(start + 64, 150)))
    assert lengths[64] < lengths[63]  # the second chunk starts short again
    for batch in batches:
      assert batch["input_ids"].shape[1] == batch["input_mask"].sum(axis=1).max()


def test_training_batches_full_length_grouped_and_seeded(tokenizers):
  fast, _ = tokenizers
  # Single sentences (MRPC's first texts), mostly shorter than 40 WordPieces, so the
  # batch widths tell the padding apart.
  examples = [ce.InputExample(e.guid, e.text_a, None, e.label)
              for e in classifier_data.MrpcProcessor().get_dev_examples(shared_path("glue", "MRPC"))[:50]]

  def first_batches(dataset):
    return [(b["example_index"].numpy(), b["input_ids"].numpy()) for b in dataset.take(12)]

  def build(seed):
    return cf.make_dataset(examples, ["0", "1"], fast, 40, 8, is_training=True, seed=seed)

  # Same seed, new pipeline (a rerun that resumes): the same batches.
  run1, run2, other = first_batches(build(7)), first_batches(build(7)), first_batches(build(8))
  for (index1, ids1), (index2, ids2) in zip(run1, run2):
    np.testing.assert_array_equal(index1, index2)
    np.testing.assert_array_equal(ids1, ids2)
  assert any(not np.array_equal(a[0], b[0]) for a, b in zip(run1, other))
  ranges, widths = [], set()
  for index, ids in run1:
    assert len(index) == 8  # drop_remainder: every training batch is full
    # The window (at most one epoch: 50 rows here) never holds one example twice.
    assert len(set(index)) == 8
    lengths = (ids != 0).sum(axis=1)
    assert ids.shape[1] == lengths.max()  # padded to its longest row, not rounded up
    ranges.append(lengths.max() - lengths.min())
    widths.add(ids.shape[1])
  # Cut from length-sorted windows: rows of a batch have similar lengths, while the
  # batches do not all have one length.
  all_lengths = np.concatenate([(ids != 0).sum(axis=1) for _, ids in run1])
  assert np.median(ranges) <= 0.25 * (all_lengths.max() - all_lengths.min()), ranges
  assert len(widths) > 3
  # 12 batches of 8 from 50 examples: the repeat crossed an epoch boundary.
  seen = np.concatenate([index for index, _ in run1])
  assert set(seen) <= set(range(50)) and len(seen) == 96


# --------------------------------------------------------------------------- no shared data

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on",
              "mat", "a", "b", "c", "d", "e", "##s", "."]
PAD, UNK, CLS, SEP = 0, 1, 2, 3
# Second texts that yield no tokens: spaces, a tab, control characters (Cc), format
# characters (Cf: zero-width space, zero-width joiner, BOM); NUL and U+FFFD are dropped.
EMPTY_B = ["", " ", "\t \n", "\x00", "\x7f\x01", "\u200b", "\u200d \ufeff", "\ufffd"]


@pytest.fixture(scope="module")
def tiny_tokenizers(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("".join(t + "\n" for t in TINY_VOCAB), encoding="utf-8")
  return (fast_tokenization.FastTokenizer(str(path), True),
          tokenization.FullTokenizer(str(path), True))


def test_second_text_without_tokens_is_a_single_text_on_both_paths(tiny_tokenizers):
  """The original's `if tokens_b:`: [CLS] a [SEP] with a's full budget, no second [SEP]."""
  fast, full = tiny_tokenizers
  seq = 6
  # text_a of 5 tokens: a single text keeps seq-2 = 4, a pair only seq-3 = 3.
  examples = [ce.InputExample(f"x{i}", "a b c d e", b, "1") for i, b in enumerate(EMPTY_B)]
  examples.append(ce.InputExample("pair", "a b c d e", "the cat", "0"))
  for example in examples[:-1]:
    assert full.tokenize(example.text_b) == []
    expected = cf.convert_single_example(example, ["0", "1"], seq, full)
    assert expected.input_ids == [CLS, 10, 11, 12, 13, SEP], repr(example.text_b)
    assert expected.segment_ids == [0] * 6 and expected.input_mask == [1] * 6
  pair = cf.convert_single_example(examples[-1], ["0", "1"], seq, full)
  assert pair.input_ids == [CLS, 10, 11, SEP, 5, SEP] and pair.segment_ids == [0] * 4 + [1] * 2
  # The graph path, with pair and tokenless rows mixed in one batch, and a batch of pairs.
  rows, _ = _collect(cf.make_dataset(examples, ["0", "1"], fast, seq, 4, is_training=False))
  for index, example in enumerate(examples):
    expected = cf.convert_single_example(example, ["0", "1"], seq, full)
    ids, mask, segments, label = rows[index]
    assert list(ids) == expected.input_ids, repr(example.text_b)
    assert list(mask) == expected.input_mask and list(segments) == expected.segment_ids
    assert label == expected.label_id
  packed = cf.pack_texts(fast, tf_strings(["the cat", "a"]), tf_strings(["sat", "b"]), seq)
  assert packed["input_ids"].numpy().tolist() == [[CLS, 5, 6, SEP, 7, SEP],
                                                  [CLS, 10, SEP, 11, SEP, PAD]]
  assert packed["length"].numpy().tolist() == [6, 5]


def tf_strings(values):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.constant(values, tf.string)


def test_batches_trimmed_to_longest_row_in_multiples(tiny_tokenizers):
  fast, full = tiny_tokenizers
  texts = ["the cat sat on the mat . " * 2, "a", "the cats", "b c d e a b c d e a"]
  examples = [ce.InputExample(str(i), t, None, "0") for i, t in enumerate(texts)]
  batches = list(cf.make_dataset(examples, ["0", "1"], fast, 20, 2, is_training=False,
                                 window_batches=1, pad_to_multiple_of=4))
  # Windows of 2 rows, sorted by length inside: rows (1, 0) then (2, 3).
  assert [b["example_index"].numpy().tolist() for b in batches] == [[1, 0], [2, 3]]
  # Row lengths ([CLS] and [SEP] included): 16, 3, 5 (the, cat, ##s), 12. Each batch is
  # its longest row rounded up to a multiple of 4: 16 and 12, not 20.
  assert [b["input_ids"].shape[1] for b in batches] == [16, 12]
  for batch in batches:
    for row, index in zip(batch["input_ids"].numpy(), batch["example_index"].numpy()):
      expected = cf.convert_single_example(examples[index], ["0", "1"], 20, full)
      assert list(row) == expected.input_ids[:len(row)]
      assert sum(expected.input_mask) <= len(row)


def test_export_text_packer_trims_to_the_longest_row(tiny_tokenizers):
  """serving.TextPacker (the serve_text signature's packing): the original's ids, each
  batch cut to its longest row by input_pipeline.trim_to_longest (no rounding)."""
  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  fast, full = tiny_tokenizers
  packer = serving.TextPacker(fast, 12, fast.cls_id, fast.sep_id)
  texts_a, texts_b = ["the cat sat", "a"], ["on the mat .", "b c"]
  packed = packer(tf_strings(texts_a), tf_strings(texts_b))
  assert packed["input_ids"].shape == (2, 10)  # 3 + 4 + 3 special tokens
  for row, (a, b) in enumerate(zip(texts_a, texts_b)):
    expected = cf.convert_single_example(ce.InputExample("x", a, b), ["0"], 12, full)
    for name in cf.FEATURE_NAMES:
      assert packed[name][row].numpy().tolist() == getattr(expected, name)[:10]
  untrimmed = serving.TextPacker(fast, 12, fast.cls_id, fast.sep_id, trim_to_longest=False)
  assert untrimmed(tf_strings(["a"]))["input_ids"].numpy().tolist() == [
      [CLS, 10, SEP] + [PAD] * 9]
  assert packer(tf_strings([""]))["input_ids"].numpy().tolist() == [[CLS, SEP]]


@pytest.mark.parametrize("task,folder,count,batch_size,window_batches,fixed", [
    ("mrpc", "MRPC", 150, 8, 32, False),   # pairs; one window of 256 rows, part-filled
    ("sst2", "SST-2", 300, 7, 4, False),   # many windows, a partial last batch
    ("sst2", "SST-2", 100, 16, 32, True),  # fixed padding: file order, 128 wide
])
def test_predict_batches_equal_make_dataset_element_for_element(
    tokenizers, monkeypatch, task, folder, count, batch_size, window_batches, fixed):
  # predict_batches (eager, NumPy; run_classifier's eval/predict path) promises the very
  # batches of make_dataset(is_training=False): same rows, order, widths and values, so
  # predictions stay byte-identical. Small eager chunks exercise chunk boundaries too.
  fast, _ = tokenizers
  monkeypatch.setattr(cf, "EAGER_CHUNK_ROWS", 64)
  processor = classifier_data.get_processor(task)
  examples = processor.get_dev_examples(shared_path("glue", folder))[:count]
  labels = processor.get_labels()
  expected = list(cf.make_dataset(examples, labels, fast, 128, batch_size,
                                  is_training=False, fixed_padding=fixed,
                                  window_batches=window_batches))
  got = list(cf.predict_batches(examples, labels, fast, 128, batch_size,
                                fixed_padding=fixed, window_batches=window_batches))
  assert len(got) == len(expected) == -(-count // batch_size)
  for mine, theirs in zip(got, expected):
    assert sorted(mine) == sorted(theirs)
    for key, value in theirs.items():
      assert mine[key].dtype == value.numpy().dtype, key
      np.testing.assert_array_equal(mine[key], value.numpy(), err_msg=key)
  order = np.concatenate([b["example_index"] for b in got])
  assert sorted(order) == list(range(count))
  assert (list(order) == list(range(count))) == fixed  # sorted windows reorder rows


def test_predict_batches_tokenless_second_texts_and_regression(tiny_tokenizers):
  fast, _ = tiny_tokenizers
  examples = [ce.InputExample(f"x{i}", "a b c d e", b, "0.5") for i, b in enumerate(EMPTY_B)]
  examples.append(ce.InputExample("pair", "a b c d e", "the cat", "2.0"))
  # label_list None: regression, float labels.
  expected = list(cf.make_dataset(examples, None, fast, 6, 3, is_training=False))
  got = list(cf.predict_batches(examples, None, fast, 6, 3))
  assert len(got) == len(expected) == -(-len(examples) // 3)
  for mine, theirs in zip(got, expected):
    assert sorted(mine) == sorted(theirs)
    for key, value in theirs.items():
      np.testing.assert_array_equal(mine[key], value.numpy(), err_msg=key)
      assert mine[key].dtype == value.numpy().dtype
  assert got[0]["label_ids"].dtype == np.float32
