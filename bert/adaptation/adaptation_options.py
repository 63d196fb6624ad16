"""The settings of growing a model (extend_positions.py, extend_vocab.py
--init_checkpoint), each declared once; no TensorFlow, so the commands make their flags
from them before it loads."""

import dataclasses

from bert.utils import settings


@dataclasses.dataclass(frozen=True)
class PositionOptions:
  """How extend_positions.py grows the position table. seed: --new_rows=random's draw
  (the command's --seed)."""
  seed: int
  max_position_embeddings: int = settings.setting(
      help="The new number of positions: more than the model's max_position_embeddings.")
  new_rows: str = settings.setting(
      "copy", "How the new position rows start: copy (the trained rows repeated in order, "
      "Longformer's recipe) or random (truncated normal with the config's "
      "initializer_range, as the original initialises, for comparison).",
      choices=("copy", "random"))


@dataclasses.dataclass(frozen=True)
class WordRowsOptions:
  """How extend_vocab.py --init_checkpoint starts the new words' rows. seed:
  --new_rows=random's draw (the command's --seed)."""
  seed: int
  new_rows: str = settings.setting(
      "mean_of_pieces", "How each new word's embedding row and masked-LM output bias start "
      "when --init_checkpoint grows the model: mean_of_pieces (the mean of the rows of the pieces the "
      "old vocabulary split the word into) or random (truncated normal with the config's "
      "initializer_range and a zero bias, as the original initialises, for comparison).",
      choices=("mean_of_pieces", "random"))
