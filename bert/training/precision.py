"""Precision: the value of --dtype as the model, the loop and the exports use it.

One frozen object made from the flag's name (a key of POLICIES; --dtype=auto is resolved
to one of them before, from the CPU table): the Keras dtype policy each
model is built with (`heads.build_*(..., dtype=precision.policy)`), the type its matmuls
compute in, whether the loop scales the loss, and what the export may write. The model
takes the policy as an argument; nothing sets Keras' process-wide policy, so a model
built in float32 beside it (an export, a reference) is float32 whatever the run's
precision. Light: no TensorFlow, so a bad value is refused before TensorFlow loads.
"""

import dataclasses

from bert.formats import litert_metadata
from bert.utils import cpu_choice
from bert.utils import errors

# The flag's names and the Keras policies they mean. Variables stay float32 under every
# policy; bfloat16/float16 compute in that type ("mixed" policies), and the model keeps
# its LayerNorms, softmax, residual stream and logits in float32 (modeling.py).
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
# The original's precision: --dtype's default.
DEFAULT = "float32"
# --dtype's values: a precision of POLICIES, or auto (what cpu_choice's table measured
# fastest, resolved before a run starts).
CHOICES = (*POLICIES, cpu_choice.AUTO)
# The one precision an export's LiteRT models convert from.
LITERT_SOURCE = "float32"


def needs_litert_source(litert):
  """Whether --litert's value asks for LiteRT models (None: the command has no --litert),
  which convert only from a LITERT_SOURCE model: Precision.check_litert refuses another
  precision, and --dtype=auto takes that one (flags_common.resolve_speed)."""
  return litert is not None and bool(litert_metadata.precisions_of(litert))


@dataclasses.dataclass(frozen=True)
class Precision:
  """name: --dtype's value, float32, bfloat16 or float16 (a UserError otherwise)."""
  name: str = DEFAULT

  def __post_init__(self):
    if self.name not in POLICIES:
      raise errors.UserError(
          f"--dtype={self.name}: use {', '.join(POLICIES)}"
          + (" (auto is resolved from the CPU table before a run starts)"
             if self.name == cpu_choice.AUTO else ""))

  @property
  def policy(self):
    """The Keras dtype policy name a model is built with: float32, mixed_bfloat16 or
    mixed_float16."""
    return POLICIES[self.name]

  @property
  def compute_dtype(self):
    """The type the matmuls run in."""
    return self.name

  @property
  def loss_scaling(self):
    """float16 only: its small exponent range needs dynamic loss scaling (loop.py);
    bfloat16 has float32's range."""
    return self.name == "float16"

  def check_litert(self, litert):
    """The export's LiteRT models (--litert other than none) convert only from a float32
    model: a UserError naming both flags otherwise, before any training."""
    if needs_litert_source(litert) and self.name != LITERT_SOURCE:
      raise errors.UserError(
          f"--export_dir with --dtype={self.name}: the export's LiteRT models "
          f"(--litert={litert}) convert only from a {LITERT_SOURCE} model; pass "
          f"--litert=none to export the SavedModels alone, or train in {LITERT_SOURCE}")
