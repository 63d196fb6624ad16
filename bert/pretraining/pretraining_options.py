"""run_pretraining.py's own settings, beside the run's (RunOptions) and the masking rules
(masking.MaskingOptions): its flags are made from these fields (bert/utils/settings), and
the object checks itself when it is made. No TensorFlow: the command's --help and its
flag errors answer before TensorFlow loads."""

import dataclasses
from typing import Optional

from bert import masking
from bert.training import run_options
from bert.utils import settings


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
  """The records a pretraining run reads and what it computes.

  input_file, eval_input_file: the flags' TFRecord files (globs or comma-separated;
  eval_input_file None: input_file, as the original). max_predictions_per_seq: the
  records' (its flag is made from GeneratorOptions' field, declared with the data's
  other instance settings).
  """
  input_file: str
  eval_input_file: Optional[str] = None
  max_predictions_per_seq: int = masking.MAX_PREDICTIONS_PER_SEQ
  max_eval_steps: int = settings.setting(100, "Maximum number of eval steps.")
  no_nsp: bool = settings.setting(
      False, "Ablation: train the masked LM only, without next sentence prediction.")
  no_dropout: bool = settings.setting(
      False, "Pretrain with both dropout rates at 0 (short budgets learn faster without "
      "it); the config's rates are kept in pretrained/bert_config.json for fine-tuning.")

  def __post_init__(self):
    run_options.check_positive(self, ("max_predictions_per_seq", "max_eval_steps"))
