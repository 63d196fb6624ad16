"""create_vocab.py and create_pretraining_data.py are flags + main() over library
functions: pretraining_vocab and pretraining_data, tested here in-process (plus one real
subprocess: `--check_only` needs no `--output_file`)."""
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from bert import masking
from bert.pretraining import pretraining_generator
from bert.pretraining import pretraining_vocab
from bert import tokenization
from bert.utils import errors
from conftest import ROOT

CORPUS = ("the cat sat on the mat .\nthe dog sat on the log .\n\n"
          "a cat and a dog met on the mat .\nthey sat there .\n")


def _corpus(tmp_path, text=CORPUS):
  path = tmp_path / "corpus.txt"
  path.write_text(text * 3, encoding="utf-8")
  return str(path)


def _vocab(tmp_path):
  """Special tokens at Google's ids, the corpus words, and the characters bare and ##."""
  words = sorted(set(CORPUS.split()))
  chars = sorted(set("".join(words)))
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [w for w in words if w not in chars] +
            chars + ["##" + c for c in chars])
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path)


def test_an_option_the_learner_cannot_run_with_names_its_flag():
  with pytest.raises(errors.UserError, match=r"^--num_unused=-1: must be >= 0$"):
    pretraining_vocab.check_options(pretraining_vocab.LearnOptions(num_unused=-1))
  with pytest.raises(errors.UserError,
                     match=r"^--upper_thresh=5: must be at least --lower_thresh=10$"):
    pretraining_vocab.check_options(pretraining_vocab.LearnOptions(upper_thresh=5))
  with pytest.raises(errors.UserError, match=r"^--vocab_size=104: must exceed the 104 "):
    pretraining_vocab.check_options(pretraining_vocab.LearnOptions(vocab_size=104))
  assert pretraining_vocab.check_options(pretraining_vocab.LearnOptions(num_unused=2)) == [
      "[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_create_vocab_in_process_learns_every_corpus_word(tmp_path):
  out = tmp_path / "model" / "vocab.txt"
  options = pretraining_vocab.LearnOptions(vocab_size=60, num_unused=3, holdout_every=0,
                                        lower_thresh=1)
  summary = pretraining_vocab.create_vocab(_corpus(tmp_path), str(out), options)
  tokens = out.read_text(encoding="utf-8").splitlines()
  assert tokens[:7] == ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]",
                        "[SEP]"] and tokens[7] == "[MASK]"
  assert summary["vocab_size"] == len(tokens) and summary["reserved_tokens"] == 8
  assert summary["lines"] == 12 and summary["unk_rate"] == 0.0
  full = tokenization.FullTokenizer(str(out), do_lower_case=True)
  assert full.tokenize("The cat sat on the mat.") == ["the", "cat", "sat", "on", "the",
                                                      "mat", "."]
  config = (tmp_path / "model" / "bert_config.json").read_text(encoding="utf-8")
  assert f'"vocab_size": {len(tokens)}' in config and '"hidden_size": 768' in config


def test_check_only_needs_no_output_file(tmp_path):
  corpus = _corpus(tmp_path)
  assert pretraining_vocab.create_vocab(corpus, None, pretraining_vocab.LearnOptions(),
                                     check_only=True) is None
  with pytest.raises(errors.UserError, match="--output_file is required"):
    pretraining_vocab.create_vocab(corpus, None, pretraining_vocab.LearnOptions())
  # The script itself: absl no longer demands the flag for a dry run.
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, "create_vocab.py"), f"--input_file={corpus}",
       "--check_only"], capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-2000:]
  assert "corpus check on the first 12 lines (4 documents)" in result.stderr
  assert sorted(os.listdir(tmp_path)) == ["corpus.txt"]


def test_check_run_names_the_flag_before_anything_is_read(tmp_path):
  options = (pretraining_generator.GeneratorOptions(
      max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1, num_workers=0,
      documents_per_chunk=10, random_seed=1), masking.MaskingOptions())
  corpus, vocab = _corpus(tmp_path), _vocab(tmp_path)
  out = tmp_path / "new" / "out.tfrecord"
  with pytest.raises(errors.UserError, match=r"^--vocab_file is required$"):
    pretraining_generator.check_run(corpus, str(out), None, *options)
  with pytest.raises(errors.UserError, match=r"^--dupe_factor=0: must be at least 1"):
    pretraining_generator.GeneratorOptions(dupe_factor=0)  # checked as it is made
  with pytest.raises(errors.UserError,
                     match=r"^--mask_token_prob=0.5 shares out .*: not with --dynamic_masking"):
    pretraining_generator.check_run(
        corpus, str(out), vocab, pretraining_generator.GeneratorOptions(dynamic_masking=True),
        masking.MaskingOptions(mask_token_prob=0.5))
  # The same table as the command's flags: a packing setting without packing.
  with pytest.raises(errors.UserError,
                     match=r"^--max_sequences_per_row=4 .*: it needs --pack_sequences"):
    pretraining_generator.check_run(
        corpus, str(out), vocab,
        pretraining_generator.GeneratorOptions(max_sequences_per_row=4), masking.MaskingOptions())
  assert pretraining_generator.check_run(corpus, str(out), vocab, *options,
                                         prepare_outputs=False) == ([corpus], [str(out)])
  assert not os.path.exists(tmp_path / "new")
  assert pretraining_generator.check_run(corpus, str(out), vocab, *options,
                                         num_output_shards=2) == (
      [corpus], [f"{out}-00000-of-00002", f"{out}-00001-of-00002"])
  assert os.path.isdir(tmp_path / "new")


class _FullDiskWriter:
  """tf.io.TFRecordWriter on a disk that fills up at the second record."""

  def __init__(self, path):
    self.handle, self.count = open(path, "wb"), 0

  def write(self, record):
    self.count += 1
    if self.count == 2:
      raise tf.errors.ResourceExhaustedError(
          None, None, "Failed to append to file; No space left on device")
    self.handle.write(record)

  def __enter__(self):
    return self

  def __exit__(self, *args):
    self.handle.close()


def test_a_full_disk_while_writing_records_is_one_line_and_leaves_nothing(
    tmp_path, monkeypatch):
  corpus, vocab = _corpus(tmp_path), _vocab(tmp_path)
  out = tmp_path / "out" / "records.tfrecord"
  out.parent.mkdir()
  monkeypatch.setattr(tf.io, "TFRecordWriter", _FullDiskWriter)
  with pytest.raises(errors.UserError) as info:
    pretraining_generator.generate([corpus], [str(out)], vocab,
                                   pretraining_generator.GeneratorOptions(
                                       max_seq_length=32, max_predictions_per_seq=5,
                                       dupe_factor=2, num_workers=0))
  assert str(info.value) == (f"could not write {out}: the disk is full (No space left on "
                             "device); nothing was written under that name; free space and "
                             "rerun")
  assert os.listdir(out.parent) == []  # no temporary, no final name
