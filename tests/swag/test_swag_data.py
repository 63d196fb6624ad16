"""swag_data: SWAG CSV reading, the four context/ending pairs, accuracy, predictions file."""
import csv

import numpy as np
import pytest

from bert.swag import swag_data
from bert import tokenization
from bert.utils import errors
from conftest import shared_path


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.FullTokenizer(shared_path("vocab", "cased_vocab.txt"),
                                    do_lower_case=False)


def test_read_real_sample_rows():
  examples = swag_data.read_swag_examples(shared_path("glue_format_samples", "SWAG", "val.csv"))
  assert [e.example_id for e in examples] == ["18313", "18419", "18418", "6588"]
  assert [e.label for e in examples] == [2, 2, 2, 2]
  first = examples[0]
  assert first.context_sentence == "Students lower their eyes nervously."
  assert first.start_ending == "She"
  # A quoted ending keeps its comma.
  assert first.endings[0] == "pats her shoulder, then saunters toward someone."
  test = swag_data.read_swag_examples(shared_path("glue_format_samples", "SWAG", "test.csv"))
  assert test[0].label is None and test[0].start_ending == "Then, the person"
  with pytest.raises(errors.UserError, match="no `label` column"):
    swag_data.read_swag_examples(shared_path("glue_format_samples", "SWAG", "test.csv"),
                                 require_label=True)


def test_bad_rows_name_file_and_line(tmp_path):
  path = tmp_path / "val.csv"
  path.write_text("sent1,sent2,ending0,ending1,ending2,ending3,label\n"
                  "A.,He,a,b,c,d,1\nB.,She,a,b,c,d,7\n", encoding="utf-8")
  with pytest.raises(errors.UserError, match=r"val.csv:3: label '7'"):
    swag_data.read_swag_examples(str(path))
  path.write_text("sent1,sent2,ending0,label\nA.,He,a,1\n", encoding="utf-8")
  with pytest.raises(errors.UserError, match=r"val.csv:1: header lacks .*ending1"):
    swag_data.read_swag_examples(str(path))


def test_four_pairs_context_and_ending(tokenizer):
  examples = swag_data.read_swag_examples(shared_path("glue_format_samples", "SWAG", "val.csv"))
  features = swag_data.convert_examples_to_features(examples[:1], 24, tokenizer)
  assert features["input_ids"].shape == (1, 4, 24)
  ids, mask, seg = (features[k][0] for k in ("input_ids", "input_mask", "segment_ids"))
  tokens = [tokenizer.convert_ids_to_tokens(ids[c][mask[c] == 1]) for c in range(4)]
  context = ["[CLS]", "Students", "lower", "their", "eyes", "nervously", ".", "[SEP]"]
  assert tokens[1] == context + ["She", "turns", "with", "two", "students", ".", "[SEP]"]
  assert tokens[0] == context + ["She", "pat", "##s", "her", "shoulder", ",", "then", "sa",
                                 "##unt", "##ers", "toward", "someone", ".", "[SEP]"]
  assert seg[1].tolist() == [0] * 8 + [1] * 7 + [0] * 9
  assert features["label_ids"].tolist() == [2]


def test_truncation_takes_tokens_from_the_longer_side(tokenizer):
  example = swag_data.SwagExample("x", "one two three four five six seven", "He",
                                  ["runs", "runs", "runs", "runs"], 0)
  features = swag_data.convert_examples_to_features([example], 8, tokenizer)
  row = features["input_ids"][0, 0]
  assert tokenizer.convert_ids_to_tokens(row) == [
      "[CLS]", "one", "two", "three", "[SEP]", "He", "runs", "[SEP]"]


def test_predictions_file(tmp_path):
  # float32 logits: the probabilities are still computed (and printed) in float64.
  logits = np.array([[0.0, 1.0, 2.0, 3.0], [5.0, 0.0, 0.0, 0.0], [1.0, 1.0, 4.0, 1.0]],
                    np.float32)
  e = np.exp([0.0, 1.0, 2.0, 3.0])
  examples = [swag_data.SwagExample(str(i), "c", "s", ["a"] * 4, label)
              for i, label in enumerate([3, 1, 2])]
  path = tmp_path / "predictions.csv"
  swag_data.write_predictions(str(path), examples, logits)
  rows = list(csv.reader(open(path, encoding="utf-8")))
  assert rows[0] == ["id", "prediction", "prob0", "prob1", "prob2", "prob3", "label"]
  assert rows[1] == ["0", "3"] + [f"{p:.6f}" for p in e / e.sum()] + ["3"]
  assert [r[1] for r in rows[1:]] == ["3", "0", "2"]


def test_swag_batches_exact_for_eval_multiples_of_32_for_training():
  from bert.swag import swag_task  # pylint: disable=g-import-not-at-top  (TensorFlow)
  lengths = [[5, 9, 3, 2], [40, 3, 3, 3], [7, 7, 7, 6]]  # [example, choice]
  seq = 64
  arrays = {k: np.zeros((3, swag_data.NUM_CHOICES, seq), np.int32)
            for k in ("input_ids", "input_mask", "segment_ids")}
  for i, row in enumerate(lengths):
    for c, n in enumerate(row):
      arrays["input_ids"][i, c, :n] = np.arange(1, n + 1)
      arrays["input_mask"][i, c, :n] = 1
  arrays["label_ids"] = np.array([0, 1, 2], np.int32)
  batches = list(swag_task.make_dataset(arrays, 2, False))
  # Examples (0, 1) then (2): each batch as wide as its longest choice, in file order.
  assert [b["input_ids"].shape[-1] for b in batches] == [40, 7]
  for batch, rows in zip(batches, ([0, 1], [2])):
    width = batch["input_ids"].shape[-1]
    np.testing.assert_array_equal(batch["input_ids"].numpy(),
                                  arrays["input_ids"][rows][..., :width])
    assert batch["label_ids"].numpy().tolist() == arrays["label_ids"][rows].tolist()
  for batch in swag_task.make_dataset(arrays, 2, True).take(4):
    width = int(batch["input_ids"].shape[-1])
    longest = int(batch["input_mask"].numpy().sum(axis=-1).max())
    assert width % 32 == 0 and longest <= width < longest + 32
