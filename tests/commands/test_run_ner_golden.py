"""NER's outputs, byte for byte, against files the code before the tagging module wrote.

A fake model whose logits are a fixed table looked up by token id (no arithmetic, so the
same on every CPU) is run through NerTask's evaluate and predict: windows over long
sentences (max_seq_length 12), batches of different widths (sorted by length), IOB2 dev
and IOB1 test files. The files under tests/support/golden/ner/ were written by NerTask at commit
e470752 (before tagging_data.py existed) with this very fake model; any change to windowing,
first-WordPiece labelling, the max-context rule, decoding, IOB re-tagging, the order
predictions come back in, or the writers shows up here as a byte difference.
"""
import os

import keras
import numpy as np
import pytest

from bert.tagging import tagging_conlleval
from bert.tagging import tagging_ner_task
from bert import tokenization
from bert.training import run_options

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "golden", "ner")

# Words and pieces: "un", "##aff", "##able" make a word of three WordPieces.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "blackburn", "visited",
         "reykjavik", "eu", "rejects", "german", "call", "to", "boycott", "british",
         "lamb", ".", "the", "un", "##aff", "##able", "commission", "in", "brussels", ",",
         "said", "on", "thursday", "it", "disagreed", "with", "advice", "of", "franz",
         "fischler", "##s", "john", "##son", "and", "paris", "london"]

DEV = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
to TO B-VP O
boycott VB I-VP O
British JJ B-NP B-MISC
lamb NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

The DT B-NP O
European NNP I-NP B-ORG
Commission NNP I-NP I-ORG
said VBD B-VP O
on IN B-PP O
Thursday NNP B-NP O
it PRP B-NP O
disagreed VBD B-VP O
with IN B-PP O
German JJ B-NP B-MISC
advice NN I-NP O
to TO B-PP O
consumers NNS B-NP O
to TO B-VP O
shun VB I-VP O
British JJ B-NP B-MISC
lamb NN I-NP O
until IN B-SBAR O
scientists NNS B-NP O
determine VBP B-VP O
whether IN B-SBAR O
mad JJ B-NP O
cow NN I-NP O
disease NN I-NP O
can MD B-VP O
be VB I-VP O
transmitted VBN I-VP O
to TO B-PP O
sheep NN B-NP O
. . O O

Franz NNP B-NP B-PER
Fischler NNP I-NP I-PER
unaffable JJ B-NP O
Johnson NNP I-NP B-PER
visited VBD B-VP O
Paris NNP B-NP B-LOC
and CC O O
London NNP B-NP B-LOC
in IN B-PP O
the DT B-NP O
EU NNP I-NP B-ORG
commission NN I-NP O
, , O O
said VBD B-VP O
Peter NNP B-NP B-PER
Johnsons NNP I-NP I-PER
. . O O
"""

# IOB1 (entities start with I-; B- only between two of the same type), no DOCSTART.
TEST = """Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER
John NNP I-NP B-PER
visited VBD B-VP O
Reykjavik NNP B-NP I-LOC
. . O O

the DT B-NP O
unaffable JJ I-NP O
EU NNP I-NP I-ORG
commission NN I-NP O
said VBD B-VP O
it PRP B-NP O
disagreed VBD B-VP O
with IN B-PP O
Fischler NNP B-NP I-PER
on IN B-PP O
Thursday NNP B-NP O
in IN B-PP O
Brussels NNP B-NP I-LOC
and CC O O
London NNP B-NP I-LOC
, , O O
said VBD B-VP O
Johnson NNP B-NP I-PER
. . O O

German JJ B-NP I-MISC
lamb NN I-NP O
"""

OUTPUT_FILES = ("dev_predictions.txt", "dev_conlleval.txt", "test_predictions.txt",
                "test_conlleval.txt")


def _zero(inputs):
  """0.0 of shape [B, S, 1] from input_mask and segment_ids: Keras before 3.11 refuses a
  functional model with an input that reaches no output."""
  unused = inputs["input_mask"] * 0 + inputs["segment_ids"] * 0
  return keras.ops.expand_dims(keras.ops.cast(unused, "float32"), -1)


def table_model(num_labels, seed=36):
  """A keras.Model {input_ids, input_mask, segment_ids} -> {"logits": [B, S, labels]}
  whose logits are row input_id of a fixed random table: exact on every machine."""
  table = np.random.default_rng(seed).normal(size=(len(VOCAB), num_labels))
  inputs = {name: keras.Input((None,), dtype="int32", name=name)
            for name in ("input_ids", "input_mask", "segment_ids")}
  lookup = keras.layers.Embedding(len(VOCAB), num_labels, name="table")
  logits = lookup(inputs["input_ids"]) + _zero(inputs)
  model = keras.Model(inputs=inputs, outputs={"logits": logits})
  lookup.set_weights([table.astype(np.float32)])
  return model, table.astype(np.float32)


def run_fake_ner(directory):
  """Writes the data and vocabulary into `directory`, runs NerTask's evaluate and
  predict with the table model; returns (evaluate's values, the output folder)."""
  data = os.path.join(directory, "data")
  out = os.path.join(directory, "out")
  os.makedirs(data)
  os.makedirs(out)
  for name, text in (("valid.txt", DEV), ("test.txt", TEST)):
    with open(os.path.join(data, name), "w", encoding="utf-8") as handle:
      handle.write(text)
  vocab = os.path.join(directory, "vocab.txt")
  with open(vocab, "w", encoding="utf-8") as handle:
    handle.write("".join(f"{token}\n" for token in VOCAB))
  options = run_options.RunOptions(
      output_dir=out, vocab_file=vocab, max_seq_length=12, do_eval=True, do_predict=True,
      eval_batch_size=3, predict_batch_size=2)
  task = tagging_ner_task.NerTask(options, tagging_ner_task.NerOptions(data_dir=data, doc_stride=4))
  task.read_data(None)
  model, _ = table_model(len(task.label_list))
  values = task.evaluate(model, None)
  task.predict(model, 7)
  return task, values, out


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
  return run_fake_ner(str(tmp_path_factory.mktemp("ner_golden")))


@pytest.mark.parametrize("name", OUTPUT_FILES)
def test_outputs_are_byte_identical_to_the_golden_files(fake_run, name):
  _, _, out = fake_run
  with open(os.path.join(out, name), "rb") as handle:
    written = handle.read()
  with open(os.path.join(GOLDEN, name), "rb") as handle:
    assert written == handle.read()


def test_the_slice_spans_several_windows_and_batch_widths(fake_run):
  task, _, _ = fake_run
  dev = task.splits["dev"]
  assert (len(dev.examples), len(dev.features)) == (4, 12)
  # Sorted by length in batches of 3: batches 4, 11 and 12 positions wide.
  assert sorted(set(dev.arrays["input_mask"].sum(axis=1).tolist())) == [4, 11, 12]


def test_eval_loss_and_accuracy_are_per_word_from_the_table(fake_run):
  """eval_loss: the mean over the dev words of -log softmax(logits)[gold], the logits of
  each word's first WordPiece (the table's row of its id); eval_accuracy: the words whose
  predicted tag, as written (the argmax tags re-encoded as IOB2 chunks, so an I-X after O
  is written B-X), equals the gold tag: conlleval's accuracy."""
  task, values, _ = fake_run
  _, table = table_model(len(task.label_list))
  tokenizer = tokenization.FullTokenizer(task.options.vocab_file, do_lower_case=True)
  losses, correct = [], []
  for example in task.splits["dev"].examples:
    argmax_tags = []
    for word, tag in zip(example.words, example.labels):
      row = table[tokenizer.convert_tokens_to_ids(tokenizer.tokenize(word)[:1])[0]]
      row = row.astype(np.float64)
      log_probs = row - row.max() - np.log(np.exp(row - row.max()).sum())
      gold = task.label_list.index(tag)
      losses.append(-log_probs[gold])
      argmax_tags.append(task.label_list[int(np.argmax(row))])
    written = tagging_conlleval.convert_tags(argmax_tags, tagging_conlleval.IOB2)
    correct += [p == g for p, g in zip(written, example.labels)]
  assert len(losses) == 58  # dev_conlleval.txt: "processed 58 tokens"
  assert values["eval_loss"] == pytest.approx(np.mean(losses), rel=1e-12)
  assert values["eval_accuracy"] == sum(correct) / len(correct)
  assert values["eval_sentences"] == 4
