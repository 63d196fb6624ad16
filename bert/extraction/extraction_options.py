"""The extraction commands' own settings: extract_features.py's and fill_mask.py's flags
are made from these fields (bert/utils/settings.setting), and each object checks itself
when it is made. No TensorFlow: a command's --help and its flag errors answer before
TensorFlow loads."""

import dataclasses

from bert import modeling_config
from bert.training import run_options
from bert.utils import errors
from bert.utils import settings


def _check_counts(options, names):
  """Each of the fields `names` a whole number of at least 1, as RunOptions' counts."""
  for name in names:
    value = getattr(options, name)
    if isinstance(value, bool) or not isinstance(value, int):
      raise errors.UserError(f"--{name}={value!r}: must be a whole number")
  run_options.check_positive(options, names)


@dataclasses.dataclass(frozen=True)
class ExtractionOptions:
  """What extract_features.py and fill_mask.py share: how many texts a call of the model
  takes."""
  batch_size: int = settings.setting(32, "Batch size for predictions.")

  def __post_init__(self):
    _check_counts(self, ("batch_size",))


@dataclasses.dataclass(frozen=True)
class FillMaskOptions(ExtractionOptions):
  """fill_mask.py's settings, its flags of the same names; max_seq_length is the model
  flags' (RunOptions' field, made by flags_common.define_model_flags)."""
  top_k: int = settings.setting(5, "How many predictions to give for each [MASK].")
  max_masks: int = settings.setting(
      5, "The most [MASK]s a line may hold; a line with more is refused.")
  max_seq_length: int = modeling_config.DEFAULT_MAX_SEQ_LENGTH

  def __post_init__(self):
    _check_counts(self, ("top_k", "max_masks", "max_seq_length", "batch_size"))
    modeling_config.check_max_seq_length(self.max_seq_length,
                                         needs="[CLS], one [MASK], [SEP]")
