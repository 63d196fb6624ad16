"""The tagging tasks' own settings (run_tagger's and run_ner's flags are made from these
fields: bert/utils/settings.setting). No TensorFlow: a command's --help and its flag errors
answer before TensorFlow loads."""

import dataclasses
from typing import Optional, Sequence

from bert import modeling_config
from bert.tagging import tagging_conlleval
from bert.tagging import tagging_data
from bert.tagging import tagging_ner_data
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import settings

AUTO = "auto"

# --feature_layers choices: which encoder activations feed the BiLSTM.
LAYER_CHOICES = ("embeddings", "second_to_last", "last", "sum_last_four",
                 "concat_last_four", "sum_all")


@dataclasses.dataclass(frozen=True)
class TaggingOptions:
  """A tagging task's settings (run_tagger's and run_ner's flags).

  tag_column: the column holding the tags, counted from 1 (the word); None: the last.
  iob: the tags are IOB chunks (see tagging_task). label_scheme (IOB tags only): auto,
  iob1 or iob2, the scheme predictions are written in. labels: the label set in output
  order; None: the tags of the data files, sorted (NER passes its entity tags).
  data_dir's flag is the fine-tuning commands' (flags_common.define_finetuning_flags).
  """
  data_dir: str
  train_file: Optional[str] = settings.setting(
      None, "Training file (default: train.txt or eng.train in --data_dir).", path=True)
  dev_file: Optional[str] = settings.setting(
      None, "Dev file (default: valid.txt, dev.txt or eng.testa in --data_dir).", path=True)
  test_file: Optional[str] = settings.setting(
      None, "Test file (default: test.txt or eng.testb in --data_dir).", path=True)
  tag_column: Optional[int] = settings.setting(
      None, "The column holding the tags, counted from 1 (the word) as `cut -f` counts: "
      "CoNLL-2003's part of speech is 2, its chunk 3, its entity 4. Default: the last "
      "column.")
  iob: bool = settings.setting(
      tagging_data.IOB, "The tags are IOB chunks (B-X, I-X, O: chunks, entities): learned "
      "as IOB2, written back in the file's scheme, scored by span F1 as conlleval scores "
      "them. Without it each tag is a label as written, scored by accuracy.")
  label_scheme: str = settings.setting(
      AUTO, "Scheme of the files' IOB chunks (entities, or run_tagger.py's --iob tags): "
      "iob1 (the original CoNLL-2003 release), iob2 (B- on every chunk's first word) or "
      "auto (IOB1 when some chunk starts with I-). The model learns IOB2; predictions are "
      "written in the files' scheme.",
      choices=(AUTO, tagging_conlleval.IOB1, tagging_conlleval.IOB2))
  labels: Optional[Sequence[str]] = settings.setting(
      None, "The label set, in the order of the model's outputs (default: every tag of the "
      "train, dev and test files, sorted; with --iob, O first).")
  doc_stride: int = settings.setting(
      tagging_data.DOC_STRIDE, "A sentence longer than max_seq_length - 2 WordPieces is "
      "split into overlapping windows whose starts are about this many pieces apart.")
  dropout_rate: float = settings.setting(modeling_config.HEAD_DROPOUT_RATE,
                                         "Dropout before the token classifier.")

  def __post_init__(self):
    if self.labels:
      input_checks.check_label_list(self.labels, f"--labels={','.join(self.labels)}")
    tagging_data.check_tag_column(self.tag_column)
    if self.label_scheme not in (AUTO, tagging_conlleval.IOB1, tagging_conlleval.IOB2):
      raise errors.UserError(f"--label_scheme={self.label_scheme}: use auto, iob1 "
                             "or iob2")
    if not 0.0 <= self.dropout_rate < 1.0:  # NaN fails too
      raise errors.UserError(
          f"--dropout_rate={self.dropout_rate}: must be in [0, 1)")


@dataclasses.dataclass(frozen=True)
class NerOptions(TaggingOptions):
  """run_ner's task settings: the tagging settings with IOB entity tags in the last
  column, plus the entity types and the feature-based mode's."""
  iob: bool = True
  entity_types: Sequence[str] = settings.setting(
      tagging_ner_data.CONLL2003_ENTITY_TYPES,
      "Entity types of the data (labels O, B-<type>, I-<type>).")
  mode: str = settings.setting(
      "finetune", "finetune: train the encoder and a token classifier; feature: freeze the "
      "encoder and train a two-layer BiLSTM on cached activations.",
      choices=("finetune", "feature"))
  feature_layers: str = settings.setting(
      "concat_last_four", "--mode=feature: which activations feed the BiLSTM. sum_* are "
      "plain (equal-weight) sums of the layers' outputs.", choices=LAYER_CHOICES)
  lstm_units: int = settings.setting(
      768, "--mode=feature: units of each direction of each BiLSTM layer.")
  # The BiLSTM's rate: run_ner passes it to RunOptions as learning_rate in feature mode.
  feature_learning_rate: float = settings.setting(
      1e-3, "--mode=feature: peak learning rate of the BiLSTM (trained from scratch, so far "
      "above the fine-tuning rates); --learning_rate is not used there.")
  feature_cache_dir: Optional[str] = settings.setting(
      None, "--mode=feature: where the frozen activations are cached (default "
      "<output_dir>/feature_cache); runs that differ only in the BiLSTM's settings can "
      "share one.", path=True, output="folder")
  feature_batch_size: int = settings.setting(
      32, "--mode=feature: batch size of the frozen encoder pass.")

  def __post_init__(self):
    super().__post_init__()
    if self.feature_batch_size is not None and self.feature_batch_size < 1:
      # Checked whatever the mode.
      raise errors.UserError(
          f"--feature_batch_size={self.feature_batch_size}: must be at least 1")
    if self.mode == "feature" and not 0 < self.feature_learning_rate < float("inf"):
      raise errors.UserError(f"--feature_learning_rate={self.feature_learning_rate}: "
                             "must be a positive finite number")
