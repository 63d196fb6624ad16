"""SQuAD's own settings: run_squad's task flags are made from these fields
(bert/utils/settings.setting), with the original's defaults. No TensorFlow: the command's
--help and its flag errors answer before TensorFlow loads."""

import dataclasses
import math
from typing import Optional

from bert.utils import errors
from bert.utils import settings

# The original's SQuAD defaults, each read by its field below and by the functions that
# take the setting as a keyword (squad_data, squad_features, squad_decoding,
# squad_metrics, which import this module for them).
MAX_SEQ_LENGTH = 384  # run_squad.py's --max_seq_length: questions with their documents
DOC_STRIDE = 128
MAX_QUERY_LENGTH = 64
N_BEST_SIZE = 20
MAX_ANSWER_LENGTH = 30
VERBOSE_LOGGING = False
VERSION_2_WITH_NEGATIVE = False  # SQuAD 1.1: every question has an answer
NULL_SCORE_DIFF_THRESHOLD = 0.0


@dataclasses.dataclass(frozen=True)
class SquadOptions:
  """SQuAD's own flags (run_squad.py's), with the original's defaults."""
  train_file: Optional[str] = settings.setting(
      None, "SQuAD json for training. E.g., train-v1.1.json", path=True)
  predict_file: Optional[str] = settings.setting(
      None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json", path=True)
  doc_stride: int = settings.setting(
      DOC_STRIDE, "When splitting up a long document into chunks, how much stride to take "
      "between chunks.")
  max_query_length: int = settings.setting(
      MAX_QUERY_LENGTH, "The maximum number of tokens for the question. Questions longer "
      "than this will be truncated to this length.")
  n_best_size: int = settings.setting(
      N_BEST_SIZE, "The total number of n-best predictions to generate in the "
      "nbest_predictions.json output file.")
  max_answer_length: int = settings.setting(
      MAX_ANSWER_LENGTH, "The maximum length of an answer that can be generated. This is "
      "needed because the start and end predictions are not conditioned on one another.")
  verbose_logging: bool = settings.setting(
      VERBOSE_LOGGING, "If true, all of the warnings related to data processing will be "
      "printed. A number of warnings are expected for a normal SQuAD evaluation.")
  version_2_with_negative: bool = settings.setting(
      VERSION_2_WITH_NEGATIVE,
      "If true, the SQuAD examples contain some that do not have an answer.")
  null_score_diff_threshold: float = settings.setting(
      NULL_SCORE_DIFF_THRESHOLD,
      "If null_score - best_non_null is greater than the threshold predict null.")
  fast_tokenization: bool = settings.setting(
      True, "Tokenize the SQuAD words and questions in batches with "
      "tokenization.FastTokenizer (tensorflow-text; the same tokens as the Python "
      "tokenizer, faster: docs/squad.md). --nofast_tokenization uses the original's "
      "pure-Python tokenizer only.")
  max_predict_examples: int = settings.setting(
      0, "Predict only the first N questions of --predict_file (0: all).")
  train_articles: Optional[str] = settings.setting(
      None, "Python-style slice START:END of the articles of --train_file to use (e.g. "
      "0:40), to split one file by article.")
  predict_articles: Optional[str] = settings.setting(
      None, "Slice START:END of the articles of --predict_file to use (e.g. 40:48).")

  def __post_init__(self):
    # Every comparison with NaN is false: a NaN threshold would silently never (or, as
    # inf, always) predict "no answer".
    if not math.isfinite(self.null_score_diff_threshold):
      raise errors.UserError(
          f"--null_score_diff_threshold={self.null_score_diff_threshold}: must be a finite "
          "number (0.0, or the best_f1_thresh of a dev-set evaluation)")
