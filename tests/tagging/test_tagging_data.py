"""tagging: any CoNLL column, first-WordPiece labels with IOB re-tagging on and off, windows
over long sentences, decoding in input order, the two baselines. Hand-made sentences and
a hand-made vocabulary, exact lists."""
import numpy as np
import pytest

from bert.tagging import tagging_conlleval
from bert.tagging import tagging_data
from bert import tokenization
from bert.utils import errors

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "un", "##aff", "##able", "eu",
         "commission", "said", "peter", "john", "##son", "visited", "paris", "."]

CONLL = """-DOCSTART- -X- -X- O

The DT B-NP O
unaffable JJ I-NP O
EU NNP I-NP B-ORG
commission NN I-NP O
said VBD B-VP O
. . O O

Peter NNP B-NP B-PER
Johnson NNP I-NP I-PER
visited VBD B-VP O
Paris NNP B-NP B-LOC
"""


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("".join(f"{token}\n" for token in VOCAB), encoding="utf-8")
  return tokenization.FullTokenizer(str(path), do_lower_case=True)


@pytest.fixture
def conll(tmp_path):
  path = tmp_path / "train.txt"
  path.write_text(CONLL, encoding="utf-8")
  return str(path)


@pytest.mark.parametrize("column,tags,columns", [
    (2, ["NNP", "NNP", "VBD", "NNP"], [["B-NP", "B-PER"], ["I-NP", "I-PER"],
                                       ["B-VP", "O"], ["B-NP", "B-LOC"]]),
    (3, ["B-NP", "I-NP", "B-VP", "B-NP"], [["NNP", "B-PER"], ["NNP", "I-PER"],
                                           ["VBD", "O"], ["NNP", "B-LOC"]]),
    (None, ["B-PER", "I-PER", "O", "B-LOC"], [["NNP", "B-NP"], ["NNP", "I-NP"],
                                              ["VBD", "B-VP"], ["NNP", "B-NP"]]),
])
def test_any_column_is_the_tags_and_the_others_are_kept_in_order(conll, column, tags,
                                                                  columns):
  examples = tagging_data.read_conll(conll, tag_column=column)
  assert [e.words for e in examples] == [
      ["The", "unaffable", "EU", "commission", "said", "."],
      ["Peter", "Johnson", "visited", "Paris"]]
  assert examples[1].labels == tags
  assert examples[1].columns == columns
  assert [e.line_number for e in examples] == [3, 10]


def test_a_column_past_the_last_is_refused_naming_file_and_flag(conll):
  with pytest.raises(errors.UserError) as error:
    tagging_data.read_conll(conll, tag_column=5)
  assert str(error.value) == (f"{conll}:3: 4 columns, no column 5 to take the tags from "
                              "(--tag_column=5)")


def test_labels_from_examples_plain_and_iob(conll):
  pos = tagging_data.read_conll(conll, tag_column=2)
  assert tagging_data.label_list_from(pos, iob=False) == [".", "DT", "JJ", "NN", "NNP", "VBD"]
  chunks = tagging_data.read_conll(conll, tag_column=3)
  assert tagging_data.label_list_from(chunks, iob=True) == ["O", "B-NP", "B-VP", "I-NP"]


def test_first_wordpiece_labels_with_iob_on_and_off(tokenizer):
  # IOB1 chunk tags: "I-NP I-NP B-NP" is two chunks, learned as B-NP I-NP B-NP with iob.
  example = tagging_data.TaggedSentence("s", ["the", "unaffable", "Johnson", "."],
                                   ["I-NP", "I-NP", "B-NP", "O"], [[]] * 4)
  labels = ["O", "B-NP", "I-NP"]
  (on,) = tagging_data.convert_examples_to_features([example], labels, 12, tokenizer, iob=True)
  tokens = tokenizer.convert_ids_to_tokens(on.input_ids[on.input_mask == 1])
  assert tokens == ["[CLS]", "the", "un", "##aff", "##able", "john", "##son", ".", "[SEP]"]
  ignore = tagging_data.IGNORE_LABEL_ID
  assert on.label_ids.tolist() == [ignore, 1, 2, ignore, ignore, 1, ignore, 0] + [ignore] * 4
  assert on.decode_mask.tolist() == [0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0]
  # Without iob each tag is a label as written: I-NP stays I-NP.
  (off,) = tagging_data.convert_examples_to_features([example], labels, 12, tokenizer)
  assert off.label_ids.tolist() == [ignore, 2, 2, ignore, ignore, 1, ignore, 0] + [ignore] * 4
  # POS-like tags that look like nothing IOB are kept whole (IOB would read them as O).
  pos = tagging_data.TaggedSentence("p", ["the", "Johnson"], ["DT", "NNP"], [[]] * 2)
  (feature,) = tagging_data.convert_examples_to_features([pos], ["DT", "NNP"], 8, tokenizer)
  assert feature.label_ids.tolist()[:5] == [ignore, 0, 1, ignore, ignore]
  assert tagging_conlleval.convert_tags(["DT", "NNP"], tagging_conlleval.IOB2) == ["O", "O"]


def test_a_long_sentence_over_several_windows_decodes_every_word_once(tokenizer):
  # 9 words, 14 pieces: windows of at most 6 pieces (max_seq_length 8), each ending on
  # the last word boundary that fits, the next starting on the first boundary at least
  # 2 pieces after its start.
  words = ["the", "unaffable", "Johnson", "said", "the", "unaffable", "Peter", "visited",
           "Paris"]
  tags = ["DT", "JJ", "NNP", "VBD", "DT", "JJ", "NNP", "VBD", "NNP"]
  example = tagging_data.TaggedSentence("long", words, tags, [[]] * 9)
  labels = ["DT", "JJ", "NNP", "VBD"]
  features = tagging_data.convert_examples_to_features([example], labels, 8, tokenizer,
                                                  doc_stride=2)
  pieces = [tokenizer.convert_ids_to_tokens(f.input_ids[f.input_mask == 1])[1:-1]
            for f in features]
  assert pieces == [["the", "un", "##aff", "##able", "john", "##son"],
                    ["john", "##son", "said", "the"],
                    ["said", "the", "un", "##aff", "##able", "peter"],
                    ["un", "##aff", "##able", "peter", "visited", "paris"]]
  # Each word from the window where it has the most context on its worse side (ties:
  # the earlier window): "Johnson" has 1 piece of context on its right in window 0 and
  # none on its left in window 1.
  rows, positions = tagging_data.decode_positions([example], features)
  assert rows.tolist() == [0, 0, 0, 1, 2, 2, 3, 3, 3]
  assert positions.tolist() == [1, 2, 5, 3, 2, 3, 4, 5, 6]
  # Perfect predictions (the label ids) decode back to the tags, in input order.
  predicted = np.stack([np.maximum(f.label_ids, 0) for f in features])
  assert tagging_data.decode_predictions([example], features, predicted, labels) == [tags]
  gold = tagging_data.gold_label_ids([example], labels, iob=False)
  assert gold.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 2]


def test_predictions_are_in_input_order_across_sentences(tokenizer):
  examples = [tagging_data.TaggedSentence(str(i), words, None, [[]] * len(words))
              for i, words in enumerate([["Paris", "."], ["the"], ["Peter", "said", "."]])]
  features = tagging_data.convert_examples_to_features(examples, ["x"], 8, tokenizer)
  rows, positions = tagging_data.decode_positions(examples, features)
  assert rows.tolist() == [0, 0, 1, 2, 2, 2]
  assert positions.tolist() == [1, 2, 1, 1, 2, 3]
  assert tagging_data.split_by_sentence(examples, list("abcdef")) == [["a", "b"], ["c"],
                                                                 ["d", "e", "f"]]


def test_baselines_majority_and_most_frequent_tag_per_word():
  train = [tagging_data.TaggedSentence("a", ["the", "can", "can", "run"], ["DT", "MD", "NN", "VB"],
                                  [[]] * 4),
           tagging_data.TaggedSentence("b", ["the", "can", "."], ["DT", "MD", "."], [[]] * 3)]
  dev = [tagging_data.TaggedSentence("d", ["the", "can", "fly", "run"], None, [[]] * 4)]
  # DT 2, MD 2 (ties go to the tag that sorts first: DT), NN 1, VB 1, . 1
  assert tagging_data.baseline_tags(train, dev, per_word=False) == [["DT"] * 4]
  assert tagging_data.baseline_tags(train, dev, per_word=True) == [["DT", "MD", "DT", "VB"]]


def test_write_predictions_plain_tags_as_they_are(tmp_path, conll):
  examples = tagging_data.read_conll(conll, tag_column=2)
  path = str(tmp_path / "pred.txt")
  tagging_data.write_conll_predictions(path, examples[1:],
                                  [["NNP", "NN", "VBD", "NNP"]])
  assert open(path, encoding="utf-8").read() == (
      "Peter B-NP B-PER NNP NNP\nJohnson I-NP I-PER NNP NN\nvisited B-VP O VBD VBD\n"
      "Paris B-NP B-LOC NNP NNP\n\n")
