"""tagging, conlleval and tagging_ner_data: CoNLL reading, IOB1/IOB2, first-WordPiece labels,
windows, conlleval scores, NER's label checks."""
import itertools
import random

import numpy as np
import pytest

from bert.tagging import tagging_conlleval
from bert.tagging import tagging_ner_data
from bert.tagging import tagging_data
from bert import tokenization
from bert.utils import errors
from conftest import CASED_VOCAB, shared_path

LABELS = tagging_ner_data.make_label_list()  # O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC, ...

SMALL_CONLL = """-DOCSTART- -X- -X- O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
visited VBD B-VP O
Reykjavik NNP B-NP B-LOC

-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
"""


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.FullTokenizer(shared_path("vocab", "cased_vocab.txt"),
                                    do_lower_case=False)


def write(tmp_path, text, name="data.txt"):
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_read_conll_sentences_columns_and_documents(tmp_path):
  examples = tagging_data.read_conll(write(tmp_path, SMALL_CONLL))
  assert [e.words for e in examples] == [["Peter", "Blackburn", "visited", "Reykjavik"],
                                         ["EU", "rejects"]]
  assert examples[0].labels == ["B-PER", "I-PER", "O", "B-LOC"]
  assert examples[0].columns[1] == ["NNP", "I-NP"]
  assert [e.document_start for e in examples] == [True, True]
  assert [e.line_number for e in examples] == [3, 10]


def test_read_conll_real_files_counts():
  examples = tagging_data.read_conll(shared_path("conll2003", "valid.txt"))
  assert len(examples) == 3250
  assert sum(e.document_start for e in examples) == 216
  assert tagging_conlleval.detect_scheme(examples) == tagging_conlleval.IOB2


def test_read_conll_bad_line_names_file_and_line(tmp_path):
  path = write(tmp_path, "EU NNP B-NP B-ORG\nrejects B-VP O\n")
  with pytest.raises(errors.UserError, match=r"data.txt:2: expected 4 columns"):
    tagging_data.read_conll(path)


def test_unknown_entity_type_names_line(tmp_path):
  path = write(tmp_path, "EU NNP B-NP B-ORG\n\nParis NNP B-NP B-GPE\n")
  examples = tagging_data.read_conll(path)
  with pytest.raises(errors.UserError, match=r"data.txt:3: tag 'B-GPE'"):
    tagging_ner_data.check_labels(examples, LABELS, path)


def test_chunks_iob1_start_with_i_and_b_between_same_type():
  # IOB1: I- starts a chunk after O or another type; B- only splits two same-type chunks.
  tags = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"]
  assert tagging_conlleval.get_chunks(tags) == [("PER", 0, 1), ("PER", 2, 2), ("LOC", 4, 4),
                                       ("ORG", 5, 6)]
  iob2 = tagging_conlleval.convert_tags(tags, tagging_conlleval.IOB2)
  assert iob2 == ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]
  assert tagging_conlleval.convert_tags(iob2, tagging_conlleval.IOB1) == tags
  assert tagging_conlleval.detect_scheme([tagging_data.TaggedSentence("a", ["x"] * 7, tags, [[]] * 7)]) == \
      tagging_conlleval.IOB1


def test_conlleval_hand_computed_multi_sentence():
  gold = [["B-PER", "I-PER", "O", "B-LOC"],             # PER(0-1), LOC(3)
          ["B-ORG", "I-ORG", "I-ORG", "O", "B-MISC"],   # ORG(0-2), MISC(4)
          ["B-LOC", "B-LOC"]]                           # LOC(0), LOC(1)
  guess = [["B-PER", "I-PER", "O", "B-ORG"],            # PER right, ORG wrong type
           ["B-ORG", "I-ORG", "O", "O", "B-MISC"],      # ORG too short, MISC right
           ["B-LOC", "I-LOC"]]                          # one LOC(0-1): wrong span
  m = tagging_conlleval.conll_evaluate(gold, guess)
  # gold chunks 6, guessed 5 (PER, ORG, ORG, MISC, LOC), correct 2 (PER, MISC).
  assert (m["found_correct"], m["found_guessed"], m["correct_chunks"]) == (6, 5, 2)
  assert m["precision"] == pytest.approx(2 / 5)
  assert m["recall"] == pytest.approx(2 / 6)
  assert m["f1"] == pytest.approx(2 * (2 / 5) * (2 / 6) / (2 / 5 + 2 / 6))
  # Tokens with identical tags: 3 + 4 + 1 of 11.
  assert m["tokens"] == 11
  assert m["accuracy"] == pytest.approx(8 / 11)
  assert m["per_type"]["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                  "found_guessed": 2}
  assert m["per_type"]["LOC"]["recall"] == 0.0 and m["per_type"]["LOC"]["found_guessed"] == 1
  assert m["per_type"]["PER"]["f1"] == 1.0
  report = tagging_conlleval.conlleval_report(m)
  assert report.splitlines()[0] == ("processed 11 tokens with 6 phrases; found: 5 phrases; "
                                    "correct: 2.")
  assert report.splitlines()[1] == ("accuracy:  72.73%; precision:  40.00%; "
                                    "recall:  33.33%; FB1:  36.36")
  assert report.splitlines()[2] == ("              LOC: precision:   0.00%; "
                                    "recall:   0.00%; FB1:   0.00  1")


def test_conlleval_iob1_chunks_starting_with_i_match_iob2_gold():
  # IOB1 guess (I- after O starts a chunk) scored against IOB2 gold: same chunks.
  gold = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]]
  guess = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]]
  m = tagging_conlleval.conll_evaluate(gold, guess)
  assert (m["found_correct"], m["found_guessed"], m["correct_chunks"]) == (3, 3, 3)
  assert m["f1"] == 1.0
  # Tag accuracy compares the strings: I-PER != B-PER and I-LOC != B-LOC.
  assert m["accuracy"] == pytest.approx(3 / 5)


def test_conlleval_type_change_inside_chunk_and_empty_guess():
  m = tagging_conlleval.conll_evaluate([["B-LOC", "I-LOC"]], [["B-LOC", "I-ORG"]])
  # The type change ends LOC(0) and starts ORG(1): two guesses, none right.
  assert (m["found_correct"], m["found_guessed"], m["correct_chunks"]) == (1, 2, 0)
  m = tagging_conlleval.conll_evaluate([["B-LOC"]], [["O"]])
  assert (m["precision"], m["recall"], m["f1"]) == (0.0, 0.0, 0.0)


def test_conlleval_equals_exact_span_matching_on_random_iob2():
  rng = random.Random(7)
  tags = LABELS
  for _ in range(300):
    n = rng.randint(1, 12)
    gold = [rng.choice(tags) for _ in range(n)]
    guess = [rng.choice(tags) for _ in range(n)]
    m = tagging_conlleval.conll_evaluate([gold], [guess])
    gold_chunks, guess_chunks = set(tagging_conlleval.get_chunks(gold)), set(tagging_conlleval.get_chunks(guess))
    assert m["found_correct"] == len(gold_chunks)
    assert m["found_guessed"] == len(guess_chunks)
    assert m["correct_chunks"] == len(gold_chunks & guess_chunks)


def test_first_wordpiece_labelling(tokenizer):
  example = tagging_data.TaggedSentence(
      "s", ["Peter", "Johanson", "visited", "Reykjavik", "."],
      ["B-PER", "I-PER", "O", "B-LOC", "O"], [[]] * 5)
  (feature,) = tagging_data.convert_examples_to_features([example], LABELS, 16, tokenizer)
  tokens = tokenizer.convert_ids_to_tokens(feature.input_ids[feature.input_mask == 1])
  assert tokens == ["[CLS]", "Peter", "Johan", "##son", "visited", "Rey", "##k", "##ja",
                    "##vik", ".", "[SEP]"]
  ignore = tagging_data.IGNORE_LABEL_ID
  assert feature.label_ids.tolist() == [ignore, 1, 2, ignore, 0, 5, ignore, ignore, ignore,
                                        0] + [ignore] * 6
  assert feature.word_index.tolist()[:11] == [-1, 0, 1, 1, 2, 3, 3, 3, 3, 4, -1]
  assert feature.decode_mask.tolist() == [0, 1, 1, 0, 1, 1, 0, 0, 0, 1] + [0] * 6
  # Decoding the label ids back gives the word tags.
  predicted = np.where(feature.label_ids >= 0, feature.label_ids, 0)[None]
  assert tagging_data.decode_predictions([example], [feature], predicted, LABELS) == \
      [["B-PER", "I-PER", "O", "B-LOC", "O"]]


def test_iob1_input_is_learned_as_iob2_and_written_back_as_iob1(tmp_path, tokenizer):
  example = tagging_data.TaggedSentence("s", ["Peter", "Paul", "Mary"],
                                ["I-PER", "B-PER", "I-PER"], [["NNP"]] * 3)
  (feature,) = tagging_data.convert_examples_to_features([example], LABELS, 8, tokenizer,
                                                    iob=True)
  assert feature.label_ids[1:4].tolist() == [1, 1, 2]  # B-PER, B-PER, I-PER
  path = str(tmp_path / "pred.txt")
  tagging_data.write_conll_predictions(path, [example], [["B-PER", "B-PER", "I-PER"]],
                                   tagging_conlleval.IOB1)
  assert open(path, encoding="utf-8").read() == (
      "Peter NNP I-PER I-PER\nPaul NNP B-PER B-PER\nMary NNP I-PER I-PER\n\n")


def test_make_windows_cover_overlap_and_respect_word_boundaries():
  lengths = [1, 3, 2, 1, 4, 1, 1, 2, 1]  # 16 pieces, starts 0,1,4,6,7,11,12,13,15
  windows = tagging_data.make_windows(lengths, max_tokens=6, doc_stride=3)
  assert windows == [(0, 6), (4, 7), (7, 13), (11, 16)]
  assert tagging_data.make_windows([2, 2], max_tokens=6, doc_stride=3) == [(0, 4)]
  # A word longer than a window is cut; every piece is still covered.
  assert tagging_data.make_windows([1, 9, 1], max_tokens=4, doc_stride=2) == \
      [(0, 1), (1, 5), (5, 9), (9, 11)]


@pytest.mark.parametrize("max_seq_length,doc_stride", [(6, 2), (8, 3), (12, 5), (7, 100)])
def test_long_sentences_reassemble_every_word_once(tokenizer, max_seq_length, doc_stride):
  rng = random.Random(max_seq_length)
  words = ("Peter Johanson visited Reykjavik on 1996-08-22 with the unaffable "
           "EU commissioner Franz Fischler in Brussels .").split()
  examples = []
  for index in range(5):
    sentence = [rng.choice(words) for _ in range(rng.randint(3, 30))]
    tags = [rng.choice(LABELS) for _ in sentence]
    examples.append(tagging_data.TaggedSentence(f"e{index}", sentence,
                                        tagging_conlleval.convert_tags(tags, tagging_conlleval.IOB2),
                                        [[]] * len(sentence)))
  features = tagging_data.convert_examples_to_features(examples, LABELS, max_seq_length,
                                                   tokenizer, doc_stride=doc_stride)
  assert len(features) > len(examples)
  owned = {}
  for feature in features:
    assert feature.input_mask.sum() <= max_seq_length
    for position in np.flatnonzero(feature.decode_mask):
      key = (feature.example_index, int(feature.word_index[position]))
      assert key not in owned
      owned[key] = feature.window_index
  assert set(owned) == {(i, w) for i, e in enumerate(examples) for w in range(len(e.words))}
  # Perfect predictions (the label ids) decode back to the gold tags word for word.
  predicted = np.stack([np.maximum(f.label_ids, 0) for f in features])
  decoded = tagging_data.decode_predictions(examples, features, predicted, LABELS)
  assert decoded == [e.labels for e in examples]
  m = tagging_conlleval.evaluate_examples(examples, decoded, tagging_conlleval.IOB2)
  assert m["correct_chunks"] == m["found_correct"] == m["found_guessed"] > 0


def test_word_dropped_by_tokenizer_becomes_unk(tokenizer):
  assert tagging_data.tokenize_words(["\u200b", "EU"], tokenizer) == [["[UNK]"], ["EU"]]


def test_write_predictions_is_conlleval_input(tmp_path):
  examples = tagging_data.read_conll(write(tmp_path, SMALL_CONLL))
  guessed = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "O"]]
  path = str(tmp_path / "predictions.txt")
  tagging_data.write_conll_predictions(path, examples, guessed, tagging_conlleval.IOB2)
  text = open(path, encoding="utf-8").read()
  assert text.splitlines()[:5] == ["Peter NNP B-NP B-PER B-PER", "Blackburn NNP I-NP I-PER O",
                                   "visited VBD B-VP O O", "Reykjavik NNP B-NP B-LOC B-LOC", ""]
  # Re-reading the file's last two columns gives the same scores.
  gold_again, guess_again, g, p = [], [], [], []
  for line in itertools.chain(text.splitlines(), [""]):
    if not line:
      if g:
        gold_again.append(g)
        guess_again.append(p)
      g, p = [], []
      continue
    g.append(line.split()[-2])
    p.append(line.split()[-1])
  assert tagging_conlleval.conll_evaluate(gold_again, guess_again) == \
      tagging_conlleval.evaluate_examples(examples, guessed, tagging_conlleval.IOB2)
  m = tagging_conlleval.evaluate_examples(examples, guessed, tagging_conlleval.IOB2)
  assert (m["found_correct"], m["found_guessed"], m["correct_chunks"]) == (3, 3, 2)
