"""The original's masked-LM rules, declared once for the generator and the training input.

create_pretraining_data.py masks its instances with them (pretraining_instances, in
NumPy); with --dynamic_masking it writes them without masks, and run_pretraining.py
masks every batch as it reads it (masking_graph.mask_batch, in the graph) by the same
rules: of every sequence, `prediction_budget` positions, never [CLS], [SEP] or padding,
taken in a uniformly random order (whole words with do_whole_word_mask, a word that would
exceed the budget skipped); each becomes [MASK] (mask_token_prob), a random vocabulary
token (random_token_prob) or stays itself.

No TensorFlow: the generator's worker processes import this module.
"""

import dataclasses

import numpy as np

from bert import tokenization
from bert.utils import errors
from bert.utils import settings

# The original's cap on the masked positions of a sequence (--max_predictions_per_seq).
MAX_PREDICTIONS_PER_SEQ = 20


@dataclasses.dataclass(frozen=True)
class MaskingOptions:
  """The masking rules; each field is a flag of the same name (flags_common makes them
  from these fields: type, default and help; bert/utils/settings.py)."""
  masked_lm_prob: float = settings.setting(0.15, "Masked LM probability.")
  do_whole_word_mask: bool = settings.setting(
      False, "Whether to use whole word masking rather than per-WordPiece masking.")
  mask_token_prob: float = settings.setting(
      0.8, "Of the chosen positions, the share replaced by [MASK] (the paper's Table 8 "
      "ablation).")
  random_token_prob: float = settings.setting(
      0.1, "Of the chosen positions, the share replaced by a random vocabulary token; the "
      "rest (1 - mask_token_prob - random_token_prob) keep their token.")

  def __post_init__(self):
    if not 0.0 < self.masked_lm_prob <= 1.0:
      raise errors.UserError(f"--masked_lm_prob={self.masked_lm_prob}: must be in (0, 1]")
    if not (0.0 <= self.mask_token_prob <= 1.0 and 0.0 <= self.random_token_prob <= 1.0
            and self.mask_token_prob + self.random_token_prob <= 1.0 + 1e-9):
      raise errors.UserError(
          f"--mask_token_prob={self.mask_token_prob} and --random_token_prob="
          f"{self.random_token_prob}: must be in [0, 1] with a sum <= 1")

  def changed(self):
    """The names of the fields that differ from the original's defaults."""
    return [f.name for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default]


def prediction_budget(length, masked_lm_prob, max_predictions_per_seq):
  """How many positions the original masks in an instance of `length` tokens ([CLS] and
  [SEP]s included), int64 [n]: min(max_predictions_per_seq, max(1, round(length ×
  masked_lm_prob))), and never more than its length - 3 candidates. Rounds half to even,
  as Python's round()."""
  length = np.asarray(length, np.int64)
  budget = np.maximum(1, np.rint(length * masked_lm_prob).astype(np.int64))
  return np.minimum(np.minimum(budget, max_predictions_per_seq), length - 3)


@dataclasses.dataclass(frozen=True)
class Vocabulary:
  """What masking needs of the vocabulary: the special ids, every id in file order (the
  random replacements are drawn from them, as the original draws from its word list) and
  which ids are "##" pieces (whole-word masking joins them to the word before)."""
  cls_id: int
  sep_id: int
  mask_id: int
  vocab_ids: tuple
  is_subword: bytes  # is_subword[id] == 1 for a "##" piece

  @classmethod
  def from_vocab(cls, vocab, vocab_file):
    """vocab: tokenization.load_vocab's {token: id}; vocab_file names it in errors."""
    missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
      raise errors.UserError(
          f"--vocab_file={vocab_file}: has no {', '.join(missing)} token; use a BERT "
          "WordPiece vocabulary (one token a line)")
    ids = tuple(vocab.values())
    is_subword = bytearray(max(ids) + 1)
    for token, index in vocab.items():
      if token.startswith("##"):
        is_subword[index] = 1
    return cls(vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"], ids, bytes(is_subword))

  @classmethod
  def from_file(cls, vocab_file):
    return cls.from_vocab(tokenization.load_vocab(vocab_file), vocab_file)
