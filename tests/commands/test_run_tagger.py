"""Part-of-speech tagging and chunking through the driver, in-process: the options object
run_tagger.py's main() builds (run_options.RunOptions) and finetune.run, on the tiny
config. Train a few steps, evaluate, predict; every figure is recomputed from the files
written; the training and evaluation accuracies share one TensorBoard tag."""
import os

import numpy as np
import pytest

from bert.tagging import tagging_conlleval
from bert.tagging import tagging_data
from bert.tagging import tagging_task
from bert.training import finetune
from bert.training import run_options
from bert.utils import errors
import tiny
from conftest import shared_path

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##aff", "##able",
         "eu", "commission", "said", "peter", "john", "##son", "visited", "paris", "london",
         "and", "in", ".", ","]

SENTENCES = [
    "The DT B-NP|unaffable JJ I-NP|EU NNP I-NP|commission NN I-NP|said VBD B-VP|. . O",
    "Peter NNP B-NP|Johnson NNP I-NP|visited VBD B-VP|Paris NNP B-NP|and CC O|"
    "London NNP B-NP|. . O",
    "The DT B-NP|commission NN I-NP|said VBD B-VP|Peter NNP B-NP|visited VBD B-VP|"
    "London NNP B-NP|in IN B-PP|the DT B-NP|unaffable JJ I-NP|EU NNP I-NP|, , O|"
    "said VBD B-VP|John NNP B-NP|. . O",
]


def _write_conll(path, sentences):
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("-DOCSTART- -X- -X-\n\n")
    for sentence in sentences:
      handle.write("".join(f"{line}\n" for line in sentence.split("|")) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
  root = tmp_path_factory.mktemp("tagger")
  data = root / "data"
  data.mkdir()
  _write_conll(data / "train.txt", SENTENCES * 3)
  _write_conll(data / "valid.txt", SENTENCES[::-1])
  _write_conll(data / "test.txt", SENTENCES[1:])
  (root / "vocab.txt").write_text("".join(f"{t}\n" for t in VOCAB), encoding="utf-8")
  # One layer: what is checked is recomputed from the files whatever the depth, and
  # tracing each run's steps (most of this file's time) grows with the layers.
  config = tiny.write_tiny_config(root / "bert_config.json", len(VOCAB), num_hidden_layers=1)
  return str(data), str(root / "vocab.txt"), config


def _options(out, files, **flags):
  _, vocab, config = files
  # max_seq_length 12: the long sentence (16 pieces) is read over several windows. The
  # tiny config has 64 positions; the scripts' default --max_seq_length is 128.
  values = dict(output_dir=str(out), vocab_file=vocab, bert_config_file=config,
                max_seq_length=12, do_train=True, do_eval=True, do_predict=True,
                num_train_steps=6, train_batch_size=4, eval_batch_size=2,
                predict_batch_size=3, learning_rate=1e-3, num_warmup_steps=1,
                log_every_steps=2, steps_per_loop=2, seed=3)
  values.update(flags)
  return run_options.RunOptions(**values)


def _key_values(path):
  with open(path, encoding="utf-8") as handle:
    return dict(line.split(" = ") for line in handle.read().splitlines())


def _predictions(path):
  """Sentences of the written file, each a list of its lines' fields."""
  with open(path, encoding="utf-8") as handle:
    blocks = handle.read().split("\n\n")
  return [[line.split() for line in block.splitlines()] for block in blocks if block]


def _scalars(folder):
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  accumulator = event_accumulator.EventAccumulator(str(folder))
  accumulator.Reload()
  return set(accumulator.Tags()["scalars"])


def test_pos_tagging_trains_evaluates_and_predicts(files, tmp_path):
  data, _, _ = files
  options = _options(tmp_path, files)
  task = tagging_task.TaggingTask(options, tagging_task.TaggingOptions(data, tag_column=2))
  finetune.run(task, options)
  assert task.label_list == [",", ".", "CC", "DT", "IN", "JJ", "NN", "NNP", "VBD"]
  assert len(task.splits["dev"].features) > len(task.splits["dev"].examples)  # windows
  values = _key_values(tmp_path / "eval_results.txt")
  assert sorted(values) == ["eval_accuracy", "eval_loss", "eval_sentences", "global_step",
                            "loss"]
  assert values["global_step"] == "6" and values["eval_sentences"] == "3"
  # --best_metric takes what eval_results.txt scores (counts left out); accuracy chooses.
  assert task.eval_metric_names() == ["eval_loss", "eval_accuracy"]
  assert task.default_best_metric() == "eval_accuracy"
  dev = _predictions(tmp_path / "dev_predictions.txt")
  # word, chunk (the other column, kept), gold POS, predicted POS; dev is SENTENCES reversed
  assert [[f[:3] for f in sentence] for sentence in dev] == [
      [line.split()[:1] + line.split()[2:] + line.split()[1:2] for line in s.split("|")]
      for s in SENTENCES[::-1]]
  words = [f for sentence in dev for f in sentence]
  assert float(values["eval_accuracy"]) == np.mean([f[2] == f[3] for f in words])
  assert float(values["eval_loss"]) > 0 and values["loss"] == values["eval_loss"]
  test = _key_values(tmp_path / "test_results.txt")
  written = [f for sentence in _predictions(tmp_path / "test_predictions.txt")
             for f in sentence]
  assert len(written) == 21
  assert float(test["test_accuracy"]) == np.mean([f[2] == f[3] for f in written])
  assert not os.path.exists(tmp_path / "dev_conlleval.txt")  # no chunks, no conlleval
  # Training and evaluation accuracy on one TensorBoard card.
  assert {"loss", "accuracy"} <= _scalars(tmp_path / "train")
  assert {"loss", "accuracy"} <= _scalars(tmp_path / "eval")


def test_chunking_is_scored_by_span_f1(files, tmp_path):
  data, _, _ = files
  options = _options(tmp_path, files, do_predict=False)
  task = tagging_task.TaggingTask(
      options, tagging_task.TaggingOptions(data, tag_column=3, iob=True))
  finetune.run(task, options)
  assert task.label_list == ["O", "B-NP", "B-PP", "B-VP", "I-NP"]
  assert task.head_info() == {"task": "tagger", "head": "token_classification",
                              "labels": task.label_list}
  values = _key_values(tmp_path / "eval_results.txt")
  dev = _predictions(tmp_path / "dev_predictions.txt")
  scores = tagging_conlleval.conll_evaluate([[f[-2] for f in s] for s in dev],
                                    [[f[-1] for f in s] for s in dev])
  for key in ("f1", "precision", "recall", "accuracy"):
    assert float(values[f"eval_{key}"]) == pytest.approx(scores[key], abs=1e-15), key
  # --best_metric takes every score eval_results.txt holds (span F1 by default).
  assert sorted(task.eval_metric_names()) == sorted(
      k for k in values if k not in ("global_step", "loss", "eval_sentences"))
  assert task.default_best_metric() == "eval_f1"
  with open(tmp_path / "dev_conlleval.txt", encoding="utf-8") as handle:
    assert handle.read() == tagging_conlleval.conlleval_report(scores)
  assert scores["tokens"] == 27


def test_a_tag_column_the_files_do_not_have_is_one_line(files, tmp_path):
  data, _, _ = files
  options = _options(tmp_path / "out", files)
  task = tagging_task.TaggingTask(options, tagging_task.TaggingOptions(data, tag_column=4))
  with pytest.raises(errors.UserError) as error:
    finetune.run(task, options)
  assert str(error.value) == (f"{os.path.join(data, 'train.txt')}:3: 3 columns, no column "
                              "4 to take the tags from (--tag_column=4)")
  with pytest.raises(errors.UserError, match=r"^--tag_column=1: the tags are column 2"):
    tagging_task.TaggingOptions(data, tag_column=1)


@pytest.mark.slow  # about 2 minutes on 2 cores
def test_minilm_pos_beats_the_word_baseline(tmp_path):
  """The shared MiniLM on the first 500 training sentences, 80 steps of 16, scored on the
  first 500 dev sentences (5,700 words): docs/tagging.md's row. The baselines learned
  from the same sentences: majority tag 0.2393, each word's most frequent tag 0.7537."""
  minilm = shared_path("models", "uncased_L-6_H-384_A-12")
  data = shared_path("conll2003")
  options = run_options.RunOptions(
      output_dir=str(tmp_path), vocab_file=f"{minilm}/vocab.txt",
      bert_config_file=f"{minilm}/bert_config.json",
      init_checkpoint=f"{minilm}/bert_model.ckpt", do_train=True, do_eval=True,
      max_train_examples=500, num_train_steps=80, train_batch_size=16,
      max_eval_examples=500, eval_batch_size=32)
  task = tagging_task.TaggingTask(options, tagging_task.TaggingOptions(data, tag_column=2))
  finetune.run(task, options)
  train = tagging_data.read_conll(os.path.join(data, "train.txt"), 2)[:500]
  dev = tagging_data.read_conll(os.path.join(data, "valid.txt"), 2)[:500]
  gold = [tag for example in dev for tag in example.labels]
  for per_word, expected in ((False, 0.2393), (True, 0.7537)):
    guessed = [t for tags in tagging_data.baseline_tags(train, dev, per_word) for t in tags]
    assert np.mean([g == p for g, p in zip(gold, guessed)]) == pytest.approx(expected,
                                                                               abs=1e-4)
  values = _key_values(tmp_path / "eval_results.txt")
  assert float(values["eval_accuracy"]) > 0.7537 + 0.04
