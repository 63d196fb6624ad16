"""RunOptions: every setting the fine-tuning driver (finetune.py) and the training loop
read, in one frozen object, checked when it is made.

A command's main() builds it once from its flags (cli/flags_common.options_from_flags); code of
your own builds it directly, `run_options.RunOptions(output_dir=..., do_train=True, ...)`:
the field names are the flags' names, the defaults the original's. A value that cannot work
is a UserError naming the flag (one line, exit status 2 in a command). Light: no TensorFlow,
so a command's --help and its flag errors answer before TensorFlow loads.
"""

import dataclasses
import math

from bert.formats import litert_metadata
from bert.training import precision
from bert.utils import errors


@dataclasses.dataclass(frozen=True)
class RunOptions:
  """Every setting the shared driver (finetune.py) and training loop read, built once.

  A script's main() calls `run_options(FLAGS)` once and passes the result down; no
  library reads absl FLAGS. Task-specific settings (SQuAD's doc_stride, a GLUE task
  name, ...) are not here: each script hands them to its Task's constructor.
  """
  output_dir: str
  bert_config_file: str = None
  vocab_file: str = None
  init_checkpoint: str = None
  do_lower_case: bool = True
  normalize: str = None            # None (the original) or "nfc"
  max_seq_length: int = 128
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  export_dir: str = None
  export_version: int = 0          # >0: TF Serving's layout, export_dir/{ids,text}/N
  overwrite_export: bool = False   # replace that version (or the unversioned export)
  litert: str = "both"             # LiteRT models beside the export: both/float32/int8/none
  train_batch_size: int = 32
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  learning_rate: float = 5e-5
  num_train_epochs: float = 3.0
  num_train_steps: int = None      # None: from num_train_epochs
  num_warmup_steps: int = None     # None: from warmup_proportion
  warmup_proportion: float = 0.1
  optimizer: str = "adamw"
  lr_schedule: str = "original"    # or "one_cycle" (optimization.create_optimizer)
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 3
  seed: int = 12345
  distribution_strategy: str = "one_device"  # "tpu" when --use_tpu
  tpu_name: str = None
  tpu_zone: str = None
  gcp_project: str = None
  num_gpus: int = None
  multi_worker_timeout: float = 0  # seconds to wait for the peers (0: as long as it takes)
  num_tpu_cores: int = None
  dtype: str = "float32"           # resolved: never "auto" (run_options asks cpu_choice)
  enable_xla: bool = False         # resolved: never None
  gradient_accumulation_steps: int = 1
  steps_per_loop: int = 1000
  log_every_steps: int = 10
  deterministic: bool = None
  ltr: bool = False
  max_train_examples: int = 0
  max_eval_examples: int = 0
  eval_every_steps: int = 0        # 0: evaluate once, after training
  best_metric: str = None          # None: the task's default (Task.default_best_metric)
  early_stopping_patience: int = 0  # evaluations without improvement; 0: never stops
  use_best_checkpoint: bool = False  # eval/predict/export the best on dev, not the newest
  verbose: bool = False
  # The log line naming the CPU and why dtype/enable_xla are what they are (run_options).
  speed_choice: str = ""

  def __post_init__(self):
    _check_options(self)

  @property
  def precision(self):
    """--dtype as the model and the loop take it: precision.Precision (its Keras policy,
    whether the loss is scaled)."""
    return precision.Precision(self.dtype)


def check_positive(values, names):
  """Fails on the first of the flags `names` (attributes of `values`: options, or absl's
  FLAGS) whose value is below 1, naming it: a batch size of 0 would divide by zero or
  loop for ever, a negative one means nothing."""
  for name in names:
    value = getattr(values, name)
    if value is not None and value < 1:
      raise errors.UserError(f"--{name}={value}: must be at least 1")


def _check_options(options):
  """Fails on flag values that cannot work, naming the flag (exit status 2 in scripts)."""
  lr = options.learning_rate
  if not (math.isfinite(lr) and lr > 0):
    raise errors.UserError(f"--learning_rate={lr}: must be a positive finite number (a "
                           "negative rate trains by gradient ascent)")
  epochs = options.num_train_epochs
  if not math.isfinite(epochs) or (options.do_train and options.num_train_steps is None
                                   and epochs <= 0):
    raise errors.UserError(f"--num_train_epochs={epochs}: must be a positive finite number")
  if not (0.0 <= options.warmup_proportion <= 1.0):
    raise errors.UserError(
        f"--warmup_proportion={options.warmup_proportion}: must be in [0, 1]")
  if options.num_warmup_steps is not None and options.num_warmup_steps < 0:
    raise errors.UserError(f"--num_warmup_steps={options.num_warmup_steps}: must be >= 0")
  check_positive(options, (
      "train_batch_size", "eval_batch_size", "predict_batch_size", "num_train_steps",
      "save_checkpoints_steps", "keep_checkpoint_max", "gradient_accumulation_steps",
      "steps_per_loop", "log_every_steps", "num_gpus", "num_tpu_cores"))
  if not 3 <= options.max_seq_length <= MAX_SEQ_LENGTH_BOUND:
    raise errors.UserError(f"--max_seq_length={options.max_seq_length}: must be between 3 "
                           f"and {MAX_SEQ_LENGTH_BOUND}")
  if options.max_train_examples < 0 or options.max_eval_examples < 0:
    raise errors.UserError("--max_train_examples/--max_eval_examples: must be >= 0")
  _check_export(options)
  timeout = options.multi_worker_timeout
  if not (math.isfinite(timeout) and timeout >= 0):
    raise errors.UserError(f"--multi_worker_timeout={timeout}: must be a finite number of "
                           "seconds >= 0 (0: wait as long as it takes)")
  precision.Precision(options.dtype)  # the one check of --dtype's value
  if options.eval_every_steps < 0:
    raise errors.UserError(f"--eval_every_steps={options.eval_every_steps}: must be >= 0 "
                           "(0: evaluate once, at the end)")
  if options.early_stopping_patience < 0:
    raise errors.UserError(
        f"--early_stopping_patience={options.early_stopping_patience}: must be >= 0 (0: "
        "never stop early)")


def _check_export(options):
  """The export flags: a version or an overwrite needs an export, and --litert a choice."""
  if options.export_version < 0:
    raise errors.UserError(f"--export_version={options.export_version}: must be >= 0 (0: "
                           "no version folder)")
  if options.export_version and not options.export_dir:
    raise errors.UserError(f"--export_version={options.export_version} names the version "
                           "folder of an export: it needs --export_dir")
  if options.overwrite_export and not options.export_dir:
    raise errors.UserError(
        "--overwrite_export replaces part of an export: it needs --export_dir")
  if options.litert not in litert_metadata.CHOICES:
    raise errors.UserError(f"--litert={options.litert}: choose one of "
                           f"{', '.join(litert_metadata.CHOICES)}")


# No BERT checkpoint has more positions than this; a larger --max_seq_length is a typo.
MAX_SEQ_LENGTH_BOUND = 8192
