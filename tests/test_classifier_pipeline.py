"""classifier_data.make_dataset: in-graph token ids == the original conversion; padding."""
import numpy as np
import pytest

import classifier_data as cd
import tokenization
from conftest import UNCASED_VOCAB, shared_path


@pytest.fixture(scope="module")
def tokenizers():
  shared_path("vocab", "uncased_vocab.txt")
  return (tokenization.FastTokenizer(UNCASED_VOCAB, True),
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
  processor = cd.get_processor(task)
  examples = processor.get_dev_examples(shared_path("glue", folder))[:count]
  labels = processor.get_labels()
  rows, widths = _collect(cd.make_dataset(examples, labels, fast, seq_length, 8,
                                          is_training=False))
  assert sorted(rows) == list(range(count))
  truncated = 0
  for index, example in enumerate(examples):
    expected = cd.convert_single_example(example, labels, seq_length, full)
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
  examples = [cd.InputExample("a", "hello world", ""), cd.InputExample("b", "the cat", "sat")]
  rows, _ = _collect(cd.make_dataset(examples, ["0", "1"], fast, 40, 2, is_training=False))
  for index, example in enumerate(examples):
    expected = cd.convert_single_example(example, ["0", "1"], 40, full)
    assert list(rows[index][0]) == expected.input_ids[:len(rows[index][0])]
  assert list(rows[0][0][:4]) == [101, 7592, 2088, 102]


def test_per_batch_padding_and_fixed_padding(tokenizers):
  fast, _ = tokenizers
  examples = cd.Sst2Processor().get_dev_examples(shared_path("glue", "SST-2"))[:200]
  dataset = cd.make_dataset(examples, ["0", "1"], fast, 128, 16, is_training=False,
                            window_batches=4)
  total_width = 0
  for batch in dataset:
    longest = int(batch["input_mask"].numpy().sum(axis=1).max())
    width = int(batch["input_ids"].shape[1])
    # Each batch is its longest row rounded up to a multiple of 8, not 128.
    assert width == -(-longest // 8) * 8
    total_width += width * len(batch["example_index"])
  assert total_width / len(examples) < 48  # SST-2 sentences are short
  fixed = cd.make_dataset(examples, ["0", "1"], fast, 128, 16, is_training=False,
                          fixed_padding=True)
  widths = {int(b["input_ids"].shape[1]) for b in fixed}
  assert widths == {128}
  # Fixed padding keeps the file order; sorted windows only reorder inside a window.
  order = np.concatenate([b["example_index"].numpy() for b in fixed])
  assert list(order) == list(range(200))


def test_training_batches_full_bucketed_and_seeded(tokenizers):
  fast, _ = tokenizers
  examples = cd.MrpcProcessor().get_dev_examples(shared_path("glue", "MRPC"))[:50]

  def first_batches(dataset):
    return [(b["example_index"].numpy(), b["input_ids"].numpy()) for b in dataset.take(12)]

  def build(seed):  # max_seq_length 40 shares the traced packer of the MRPC test above
    return cd.make_dataset(examples, ["0", "1"], fast, 40, 8, is_training=True, seed=seed)

  # Same seed, new pipeline (a rerun that resumes): the same batches.
  run1, run2, other = first_batches(build(7)), first_batches(build(7)), first_batches(build(8))
  for (index1, ids1), (index2, ids2) in zip(run1, run2):
    np.testing.assert_array_equal(index1, index2)
    np.testing.assert_array_equal(ids1, ids2)
  assert any(not np.array_equal(a[0], b[0]) for a, b in zip(run1, other))
  for index, ids in run1:
    assert len(index) == 8  # drop_remainder: every training batch is full
    lengths = (ids != 0).sum(axis=1)
    # Bucketed: all rows of a batch fall in one bucket (1-8, 9-16, 17-24, 25-32, 33-40).
    buckets = {min((length - 1) // 8, 4) for length in lengths}
    assert len(buckets) == 1
    assert ids.shape[1] == min(-(-lengths.max() // 8) * 8, 40)
  # 12 batches of 8 from 50 examples: the repeat crossed an epoch boundary.
  seen = np.concatenate([index for index, _ in run1])
  assert set(seen) <= set(range(50)) and len(seen) == 96
