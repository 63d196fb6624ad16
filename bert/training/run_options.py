"""RunOptions: every setting the fine-tuning driver (finetune.py) and the training loop
read, in one frozen object, checked when it is made.

Each setting is declared here once (type, default, help); the commands' flags are made
from these fields, and a command's main() builds the object once from its parsed flags
(cli/flags_common.options_from_flags). Code of your own builds it directly,
`run_options.RunOptions(output_dir=..., do_train=True, ...)`: the field names are the
flags' names (steps_per_loop: --iterations_per_loop), the defaults the original's. A value that cannot work
is a UserError naming the flag (one line, exit status 2 in a command). Light: no TensorFlow,
so a command's --help and its flag errors answer before TensorFlow loads.
"""

import dataclasses
import math
import typing

from bert import modeling_config
from bert import tokenization
from bert.formats import litert_metadata
from bert.training import precision
from bert.utils import errors
from bert.utils import settings


@dataclasses.dataclass(frozen=True)
class RunOptions:
  """Every setting the shared driver (finetune.py) and training loop read, built once.

  Each field is declared here once, with its type, the original's default and its help;
  the commands' flags of the same names are made from these fields
  (cli/flags_common.define_flags), and a command's main() builds this object once from
  its parsed flags (flags_common.options_from_flags, which also resolves --dtype=auto and
  an unset --enable_xla from cpu_choice's table) and passes it down; no library reads
  absl FLAGS. Task-specific settings (SQuAD's doc_stride, a GLUE task name, ...) are not
  here: each task has its own options object.
  """
  output_dir: str = settings.setting(
      help="The output directory where the model checkpoints and results will be written.",
      path=True, output="folder")
  bert_config_file: str = settings.setting(
      None, "The config json file corresponding to the pre-trained BERT model. "
      "This specifies the model architecture.", path=True)
  vocab_file: str = settings.setting(
      None, "The vocabulary file that the BERT model was trained on.", path=True)
  init_checkpoint: str = settings.setting(
      None, "Initial checkpoint: a Google TF1 checkpoint prefix (bert_model.ckpt), one of "
      "ours, or a Hugging Face model.safetensors file or directory.", path=True)
  do_lower_case: bool = settings.setting(
      tokenization.DO_LOWER_CASE, "Whether to lower case the input text. Should be True for uncased models and "
      "False for cased models.")
  # None (the original) or "nfc"; the flag spells None "none". The help is completed by
  # each command with where it normalises (flags_common.define_normalize_flag).
  normalize: str = settings.setting(
      None, "nfc: put every line in Unicode NFC (composed) form {applies_to} (for "
      "decomposed text, e.g. Hangul copied from macOS); use the same setting as "
      "create_vocab.py and create_pretraining_data.py. The original does not normalise.",
      choices=("none", "nfc"), flag_form=lambda value: "none" if value is None else value)
  max_seq_length: int = settings.setting(
      modeling_config.DEFAULT_MAX_SEQ_LENGTH, "The maximum total input sequence length after WordPiece tokenization. "
      "Sequences longer than this will be truncated, and sequences shorter than this "
      "will be padded.")
  do_train: bool = settings.setting(False, "Whether to run training.")
  do_eval: bool = settings.setting(False, "Whether to run eval on the dev set.")
  do_predict: bool = settings.setting(
      False, "Whether to run the model in inference mode on the test set.")
  # What an export holds differs by command: each says it where it makes the flag.
  export_dir: str = settings.setting(None, path=True, output="folder")
  export_version: int = settings.setting(
      0, "With --export_dir: 0 writes export_dir/ (every signature) and, when there is a "
      "raw-text signature, export_dir/ids/ (token-id signatures only, stock TensorFlow ops "
      "that tensorflow_model_server and saved_model_cli load); N >= 1 writes TF Serving's "
      "layout instead: export_dir/ids/N/ and export_dir/text/N/ (each of export_dir/ids "
      "and export_dir/text is a --model_base_path), beside the versions already there. "
      "An existing version N, or a non-empty export_dir with 0, is refused before the run "
      "starts unless --overwrite_export.")
  overwrite_export: bool = settings.setting(
      False, "Replace what --export_dir already holds at this --export_version: the folder "
      "of version N only (the other versions stay), or with 0 the unversioned export "
      "(never a folder that holds versions).")
  litert: str = settings.setting(
      "both", "With --export_dir: also write the token-id model (export_encoder.py: the "
      "encoder of --format=tfhub) for the LiteRT runtime (TensorFlow Lite without "
      "TensorFlow; predict_litert.py runs it) in export_dir/litert/ (or litert/N/ with "
      "--export_version=N): both = model_float32.tflite and "
      "model_int8.tflite (dynamic-range int8, faster on CPUs), or one of them, or none. "
      "Each is checked against the SavedModel after conversion; one that disagrees stops "
      "the export (nothing is written).", choices=litert_metadata.CHOICES)
  train_batch_size: int = settings.setting(32, "Total batch size for training.")
  eval_batch_size: int = settings.setting(8, "Total batch size for eval.")
  predict_batch_size: int = settings.setting(8, "Total batch size for predict.")
  learning_rate: float = settings.setting(5e-5, "The initial learning rate for Adam.")
  num_train_epochs: float = settings.setting(3.0, "Total number of training epochs to perform.")
  num_train_steps: int = settings.setting(
      None, "Number of training steps (optimizer updates).",
      help_when_unset=" Overrides --num_train_epochs when set.")
  num_warmup_steps: int = settings.setting(
      None, "Number of linear learning-rate warmup steps.",
      help_when_unset=" Overrides --warmup_proportion when set.")
  warmup_proportion: float = settings.setting(
      0.1, "Proportion of training to perform linear learning rate warmup for. "
      "E.g., 0.1 = 10% of training.")
  optimizer: str = settings.setting(
      "adamw", "adamw: the original AdamWeightDecay; lamb: LAMB for large batches.",
      choices=("adamw", "lamb"))
  lr_schedule: str = settings.setting(
      "original", "original: warmup, then the release's linear decay to 0 measured from "
      "step 0 (so the rate right after warmup is learning_rate * (1 - warmup / steps)); "
      "one_cycle: warmup to learning_rate, then linear decay to 0 over the remaining steps "
      "(with --warmup_proportion=0.5, a triangle; for short pretraining budgets).",
      choices=("original", "one_cycle"))
  save_checkpoints_steps: int = settings.setting(1000, "How often to save the model checkpoint.")
  keep_checkpoint_max: int = settings.setting(
      3, "How many of the newest checkpoints to keep in output_dir.")
  seed: int = settings.setting(12345, "Random seed for initialisation, dropout and shuffling.")
  distribution_strategy: str = settings.setting(
      "one_device", "tf.distribute strategy. mirrored: all local GPUs; "
      "multi_worker_mirrored: several hosts, configured by the TF_CONFIG environment "
      "variable; tpu: --tpu_name (--use_tpu implies tpu).",
      choices=("one_device", "mirrored", "multi_worker_mirrored", "tpu"))
  tpu_name: str = settings.setting(
      None, "The Cloud TPU to use for training. This should be either the name used when "
      "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.")
  tpu_zone: str = settings.setting(
      None, "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we "
      "will attempt to automatically detect the GCE project from metadata.")
  gcp_project: str = settings.setting(
      None, "[Optional] Project name for the Cloud TPU-enabled project. If not specified, "
      "we will attempt to automatically detect the GCE project from metadata.")
  num_gpus: int = settings.setting(None, "mirrored: how many local GPUs to use (default: all).")
  multi_worker_timeout: float = settings.setting(
      0, "multi_worker_mirrored: stop (exit status 2, naming the tasks that did not "
      "connect) when the other tasks of TF_CONFIG's cluster have not all connected after "
      "this many seconds. 0: wait as long as it takes (it says first for whom it waits).")
  # Counted only on a TPU: the flags leave it unset (None) without --use_tpu.
  num_tpu_cores: int = settings.setting(
      8, "Only used if `use_tpu` is True. Total number of TPU cores to use; the run "
      "stops if the TPU has a different number of cores.")
  # Resolved before it gets here: never "auto" (flags_common.resolve_speed).
  dtype: str = settings.setting(
      precision.DEFAULT, "Compute precision; variables stay float32. float16 uses loss scaling. "
      "auto: what docs/cpu.md's table measured fastest for this CPU and phase (float32 or "
      "bfloat16, never float16; float32 on a CPU not in the table); the choice is logged.",
      choices=precision.CHOICES)
  # Unset (None) is resolved by the flags from cpu_choice's table; built directly, off.
  enable_xla: bool = settings.setting(
      None, "Compile the training step with XLA. Unset: what docs/cpu.md's table measured "
      "fastest for this CPU and phase (off on a CPU not in the table), logged; "
      "--enable_xla / --noenable_xla decide.")
  gradient_accumulation_steps: int = settings.setting(
      1, "Accumulate gradients over this many micro-batches per optimizer step. "
      "train_batch_size is the micro-batch size.")
  # The original's flag name; --steps_per_loop is its alias (flags_common).
  steps_per_loop: int = settings.setting(
      1000, "How many steps to make in each estimator call (the original's name; here: "
      "steps run in one tf.function call between host-side logging).",
      flag_name="iterations_per_loop")
  log_every_steps: int = settings.setting(10, "How often to log progress (steps).")
  deterministic: bool = settings.setting(
      None, "Switch on TensorFlow op determinism (same seed, same numbers). "
      "Default: on for CPU runs, off on accelerators.")
  ltr: bool = settings.setting(
      False, "Left-to-right (causal) attention mask, for a model pretrained with "
      "run_pretraining.py --ltr (the paper's Table 5 LTR ablation).")
  max_train_examples: int = settings.setting(0, "Use only the first N training examples (0: all).")
  max_eval_examples: int = settings.setting(
      0, "Evaluate/predict only the first N examples of dev/test (0: all).")
  eval_every_steps: int = settings.setting(
      0, "With --do_train and --do_eval: also evaluate the dev set every N training steps, "
      "its metrics into output_dir/eval under the training curves' tags (loss, "
      "accuracy, ...); eval_results.txt keeps the final evaluation. 0: evaluate once, "
      "at the end. The checkpoint with the best dev metric (--best_metric) is kept in "
      "output_dir/best beside the newest ones.")
  best_metric: str = settings.setting(
      None, "With --eval_every_steps: the dev metric (a key of eval_results.txt) that "
      "chooses the best checkpoint; a loss is better lower, every other metric higher. "
      "Default: the task's (the paper's): eval_accuracy; eval_f1 for MRPC, QQP and NER; "
      "eval_matthews_corrcoef for CoLA; eval_spearman for STS-B and regression; micro_f1 "
      "for multi-label; f1 for SQuAD.")
  early_stopping_patience: int = settings.setting(
      0, "With --eval_every_steps: stop training after N evaluations without improvement "
      "of --best_metric (the run ends cleanly, and the same command run again trains no "
      "further); --do_eval, --do_predict and --export_dir then use the best checkpoint. "
      "0: never stop early.")
  use_best_checkpoint: bool = settings.setting(
      False, "--do_eval, --do_predict and --export_dir use the best checkpoint on dev that "
      "a run with --eval_every_steps kept in output_dir/best, not the newest (the log says "
      "which step and why); with --do_train, it needs --eval_every_steps.")
  verbose: bool = settings.setting(
      errors.VERBOSE, "Show full Python tracebacks and detailed logs on errors.")
  # The log line naming the CPU and why dtype/enable_xla are what they are (not a flag).
  speed_choice: str = ""

  def __post_init__(self):
    if self.enable_xla is None:  # built directly, not through the flags' resolution
      object.__setattr__(self, "enable_xla", False)
    _check_options(self)
    self.validate()

  def validate(self):
    """The rules that join two settings (PARTNERS), on the values: a setting changed from
    its default while its partner is unset is refused, one line naming both. The flags
    are held to the same table as they are typed (flags_common.check_partners)."""
    defaults = {field.name: field.default for field in dataclasses.fields(self)}
    broken = unmet_partner(
        lambda name: name in defaults and getattr(self, name) != defaults[name],
        lambda name: getattr(self, name) if name in defaults else None,
        lambda name: name in defaults)
    if broken:
      raise partner_error(typed(broken.setting, getattr(self, broken.setting)), broken)

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
  modeling_config.check_max_seq_length(options.max_seq_length)
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
  """The export flags' own values (what needs --export_dir is in PARTNERS)."""
  if options.export_version < 0:
    raise errors.UserError(f"--export_version={options.export_version}: must be >= 0 (0: "
                           "no version folder)")
  litert_metadata.precisions_of(options.litert)  # the one check of --litert's value



# --------------------------------------------------------------------------- partners


class Partner(typing.NamedTuple):
  """A setting that acts only together with another: `setting` does `what`, and needs
  `partner` set (not empty, not false; "name=a|b": set to one of those values, in any
  case); with `only_with`, only where that one is set. With `apart`, the other way
  round: the setting is refused where `partner` is set (the partner takes its work)."""
  setting: str
  partner: str
  what: str
  only_with: str = None
  otherwise: str = "without it the flag does nothing"
  apart: bool = False

  @property
  def partner_name(self):
    return self.partner.partition("=")[0]

  def met(self, value):
    """Whether the partner is as this rule needs it; value(name): a setting's value."""
    name, _, wanted = self.partner.partition("=")
    got = value(name)
    if wanted:
      got = str(got).lower() in wanted.lower().split("|")
    return not got if self.apart else bool(got)


# What --dynamic_masking does to the generator's masking flags: its records hold no masks.
_DRAWN_LATER = ("its records hold no masks: run_pretraining.py draws them as it trains; "
                "pass the flag to it instead")
# run_ner.py's two modes.
_FEATURE_MODE = "mode=feature"

# Every rule that joins two settings, in one table. Given while its partner is unset, the
# setting would do nothing, silently; it is refused instead: by RunOptions.validate on the
# values, by the data generator's check_options on its own, and by
# flags_common.check_partners on the flags as typed (also those that are not fields here,
# --use_tpu; a rule applies to a command that has both flags). tests/core/test_argument_checks.py
# lists, from the flags' help texts, every flag whose help says it acts "With --X", "Only
# used if" or "--X: ..." and checks that it is here.
PARTNERS = (
    Partner("litert", "export_dir", "writes the LiteRT models of an export"),
    Partner("export_version", "export_dir", "names the version folder of an export"),
    Partner("overwrite_export", "export_dir", "replaces part of an export"),
    Partner("eval_every_steps", "do_train", "evaluates during training"),
    Partner("eval_every_steps", "do_eval", "evaluates during training"),
    Partner("best_metric", "eval_every_steps",
            "chooses the best of the evaluations during training"),
    Partner("early_stopping_patience", "eval_every_steps",
            "counts the evaluations during training"),
    # Refused before the training, not after it: no evaluation would choose a best.
    Partner("use_best_checkpoint", "eval_every_steps",
            "takes the best of the evaluations during training", only_with="do_train",
            otherwise="without it no evaluation chooses one"),
    Partner("num_tpu_cores", "use_tpu", "counts the TPU's cores"),
    # The data generator's (create_pretraining_data.py).
    Partner("max_sequences_per_row", "pack_sequences",
            "sets the most instances a packed row holds"),
    Partner("sentence_language", "split_sentences",
            "names the language the sentence splitter splits"),
    Partner("do_whole_word_mask", "dynamic_masking", "chooses the masks the generator draws",
            otherwise=_DRAWN_LATER, apart=True),
    Partner("mask_token_prob", "dynamic_masking", "shares out the masks the generator draws",
            otherwise=_DRAWN_LATER, apart=True),
    Partner("random_token_prob", "dynamic_masking",
            "shares out the masks the generator draws", otherwise=_DRAWN_LATER, apart=True),
    # run_ner.py: the feature-based mode's settings, and the fine-tuning head's.
    Partner("feature_layers", _FEATURE_MODE, "chooses the activations that feed the BiLSTM"),
    Partner("lstm_units", _FEATURE_MODE, "sizes the BiLSTM"),
    Partner("feature_learning_rate", _FEATURE_MODE, "sets the BiLSTM's learning rate"),
    Partner("feature_cache_dir", _FEATURE_MODE, "caches the frozen encoder's activations"),
    Partner("feature_batch_size", _FEATURE_MODE, "batches the frozen encoder's pass"),
    Partner("dropout_rate", "mode=finetune", "sets the dropout before the token classifier"),
    # run_classifier.py and predict_litert.py: a task's own flags, where --task_name names
    # another (predict_litert.py without --task_name takes the model's task).
    *(Partner(name, "task_name=tsv|csv", "describes the files of the tsv/csv task",
              only_with="task_name")
      for name in ("text_a_column", "text_b_column", "label_column", "has_header",
                   "regression", "test_text_a_column", "test_text_b_column", "label_list",
                   "delimiter")),
    Partner("xnli_language", "task_name=xnli", "chooses the language of the XNLI task",
            only_with="task_name"),
)


def unmet_partner(is_given, value, has):
  """The first rule of PARTNERS that the settings break, or None.

  is_given(name): the setting was given (typed, or changed from its default); value(name):
  a setting's value; has(name): this command (or object) has that setting at all (a rule
  whose settings it lacks does not apply)."""
  for rule in PARTNERS:
    if not (has(rule.setting) and has(rule.partner_name)):
      continue
    if rule.only_with and not (has(rule.only_with) and value(rule.only_with)):
      continue
    if is_given(rule.setting) and not rule.met(value):
      return rule
  return None


def typed(name, value):
  """--name as typed (`--name=value`, or `--name` / `--noname` for a boolean)."""
  if isinstance(value, bool):
    return f"--{name}" if value else f"--no{name}"
  return f"--{name}={value}"


def partner_error(typed_setting, rule):
  """The one line that refuses a setting given without its partner (or, `apart`, with
  it)."""
  if rule.apart:
    return errors.UserError(f"{typed_setting} {rule.what}: not with --{rule.partner} "
                            f"({rule.otherwise})")
  given = typed_setting
  if rule.only_with and rule.only_with != rule.partner_name:
    given += f" with --{rule.only_with}"
  partner = rule.partner.replace("|", " or --" + rule.partner_name + "=")
  return errors.UserError(f"{given} {rule.what}: it needs --{partner} "
                          f"({rule.otherwise})")
