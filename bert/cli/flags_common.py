"""The commands' absl flags, made from the fields of the options objects that declare each
setting once (define_flags; bert/utils/settings.py), and the one step from parsed flags
back to those objects (options_from_flags, settings_from_flags).

Names and defaults are the original release's, so a command from the original README
runs unchanged. Nothing here loads TensorFlow, so that `--help` and flag errors answer
at once."""

import dataclasses
import os

from absl import flags
from absl import logging

from bert import masking
from bert.classifier import classifier_examples
from bert.tagging import tagging_options
from bert.training import precision
from bert.training import run_options
from bert.utils import atomic_output
from bert.utils import cpu_choice
from bert.utils import input_checks
from bert.utils import paths
from bert.utils import settings

_DEFINED = set()


def _once(group):
  # absl refuses to define a flag twice; a script that (wrongly) calls a group twice
  # must not crash with DuplicateFlagError, and tests may import several scripts.
  if group in _DEFINED:
    return False
  _DEFINED.add(group)
  return True


def expand_path(argument):
  """A path as typed with `~` expanded: in `--data_dir=~/glue` no shell expands it (only
  a word that starts with `~` is expanded), so a path that starts with `~` would
  otherwise name a folder called "~". A gs:// URL is read as gsutil reads it: `gs://b//x`
  is `gs://b/x` (paths.gsutil_form). Each comma-separated item of a list is read so.
  (The tools that take arguments through argparse use it as the arguments' type.)"""
  if argument is None:
    return None
  return ",".join(paths.gsutil_form(paths.expand(item) if item.lstrip().startswith("~")
                                    else item)
                  for item in str(argument).split(","))


# The path flags a command writes to (define_path's `output`): name -> "folder" or "file".
OUTPUTS = {}
# The gs:// values read with their repeated slashes collapsed: name -> (typed, read).
_COLLAPSED = {}


class PathParser(flags.ArgumentParser):
  """A path flag's value with `~` expanded (expand_path)."""

  def __init__(self, name=None):
    super().__init__()
    self.name = name

  def parse(self, argument):
    value = expand_path(argument)
    if self.name and value != argument and "gs://" in str(argument):
      _COLLAPSED[self.name] = (argument, value)
    return value

  def flag_type(self):
    return "string"


def define_path(name, default, help_text, output=None, **kwargs):
  """flags.DEFINE_string for a file or folder (or a comma-separated list of them, globs
  allowed): the same flag, with `~` at the start of a path expanded to the home folder.
  output: "folder" or "file" for a flag the command writes to (check_paths checks it
  before any work)."""
  if output:
    OUTPUTS[name] = output
  flags.DEFINE(PathParser(name), name, default, help_text,
               serializer=flags.ArgumentSerializer(), **kwargs)


def check_paths(flag_values):
  """What every command asks of its path flags before any work: each output checked once
  (atomic_output.check_output_path: local, no folder where the file goes nor file where
  a folder goes, the nearest existing folder writable; a URL's bucket there, its name
  valid, writable), one line naming the flag when it is not; and a note for each gs://
  value read without its repeated slashes. Nothing is checked under --check_only, which
  writes nothing."""
  for name, (typed, read) in sorted(_COLLAPSED.items()):
    if name in flag_values and flag_values[name].value == read:
      logging.warning("--%s=%s: read as %s (repeated slashes collapsed, as gsutil does)",
                      name, typed, read)
  if "check_only" in flag_values and flag_values["check_only"].value:
    return
  for name, kind in OUTPUTS.items():
    if name not in flag_values or not flag_values[name].value:
      continue
    value = str(flag_values[name].value)
    for item in (value.split(",") if kind == "file" else [value]):
      if item.strip():
        atomic_output.check_output_path(item.strip(), name, is_file=kind == "file")


_DEFINE = {"bool": flags.DEFINE_bool, "int": flags.DEFINE_integer,
           "float": flags.DEFINE_float, "str": flags.DEFINE_string, "list": flags.DEFINE_list}


def define_flags(cls, names=None, defaults=None, helps=None, required=(), note=""):
  """Makes the flags `names` (default: every one it declares) from the fields of the
  options class `cls` that declare them (bert/utils/settings.setting): each flag with its
  field's type, default and help.

  defaults: {field: default} where this command's default differs from the field's (the
  one place that value is written); helps: {field: help} where the field leaves the help
  to the command (or the command says it its own way); required: fields whose flag this
  command requires (a field without a default is required wherever the command gives it
  none); note: words added
  to every help text."""
  declared = settings.declared(cls)
  names = declared if names is None else names
  defaults = defaults or {}
  helps = helps or {}
  for name in names:
    field, annotation, meta = declared[name]
    flag = meta["flag_name"] or name
    if name in defaults:
      default = defaults[name]
    else:
      default = None if field.default is dataclasses.MISSING else field.default
      if meta["flag_form"]:
        default = meta["flag_form"](default)
    help_text = helps.get(name, meta["help"])
    if help_text is None:
      raise ValueError(f"--{flag}: {cls.__name__}.{name} leaves its help to the command")
    help_text += (meta["help_when_unset"] if default is None else "") + note
    kind = settings.value_kind(annotation)
    if meta["path"]:
      define_path(flag, default, help_text, output=meta["output"])
    elif meta["choices"]:
      flags.DEFINE_enum(flag, default, list(meta["choices"]), help_text)
    else:
      _DEFINE[kind](flag, list(default) if isinstance(default, tuple) else default,
                    help_text)
    # A field without a default is required, unless this command gives it one.
    if ((field.default is dataclasses.MISSING and name not in defaults) or meta["required"]
        or name in required):
      flags.mark_flag_as_required(flag)


def define_model_flags(max_seq_length=None, require_vocab=True, require_config=True):
  """bert_config_file, vocab_file, init_checkpoint, do_lower_case, max_seq_length
  (RunOptions' fields). max_seq_length: this command's default where it is not
  RunOptions' (run_squad's 384)."""
  if not _once("model"):
    return
  define_flags(
      run_options.RunOptions, ("bert_config_file", "vocab_file", "init_checkpoint",
                               "do_lower_case", "max_seq_length"),
      defaults={} if max_seq_length is None else {"max_seq_length": max_seq_length},
      required=(("bert_config_file",) if require_config else ())
      + (("vocab_file",) if require_vocab else ()))


def define_extraction_flags(cls, names, input_help):
  """The flags of the commands that run a checkpoint over a text file into JSON lines
  (extract_features.py, fill_mask.py): the model's, --normalize, the runtime's,
  --input_file (input_help: what a line holds), --output_file and the fields `names` of
  the options class `cls` (extraction_options); --input_file, --output_file and
  --init_checkpoint are required. Read them back with extraction_inputs."""
  define_model_flags()
  define_normalize_flag("before tokenizing")
  define_runtime_flags()
  define_path("input_file", None, input_help)
  define_path("output_file", None, "Output JSON-lines file.", output="file")
  define_flags(cls, names)
  flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint"])


def extraction_inputs(flag_values, cls, allow_empty=False):
  """What an extraction command's main() reads first: its options object `cls`, built
  and checked from the flags, and --input_file (allow_empty: it may hold no line) and
  --vocab_file checked, before TensorFlow loads."""
  options = settings_from_flags(cls, flag_values)
  input_checks.check_input_file(flag_values.input_file, "input_file",
                                allow_empty=allow_empty)
  input_checks.check_input_file(flag_values.vocab_file, "vocab_file")
  return options


def define_masking_flags(applies_to=None):
  """The masking rules: masked_lm_prob, do_whole_word_mask (the original's flags of
  create_pretraining_data.py), mask_token_prob and random_token_prob (ours).

  applies_to: a note added to each help text (run_pretraining.py applies them only to
  records without masks)."""
  if not _once("masking"):
    return
  # Made from the fields (type, default, help), declared once in bert/masking.py.
  define_flags(masking.MaskingOptions, note=f" {applies_to}" if applies_to else "")


def masking_options(flag_values):
  """The masking flags' values as a bert.masking.MaskingOptions (checked)."""
  return settings_from_flags(masking.MaskingOptions, flag_values)


def define_normalize_flag(applies_to="before tokenizing"):
  """--normalize: none (the original) or nfc, the same choice at every step of a run.

  A model whose vocabulary was learned with create_vocab.py --normalize=nfc must see NFC
  text everywhere after: in its pretraining data, its fine-tuning, its exported
  preprocessing. `options_from_flags` reads it as None or "nfc"."""
  if not _once("normalize"):
    return
  help_text = settings.declared(run_options.RunOptions)["normalize"][2]["help"]
  define_flags(run_options.RunOptions, ("normalize",),
               helps={"normalize": help_text.format(applies_to=applies_to)})


def normalize_option(value):
  """--normalize's value as the tokenizers take it: None (the original) or "nfc"."""
  return None if value in (None, "none") else value


def define_check_only_flag(checked, skipped):
  """--check_only, for the commands that check a corpus before their work
  (pretraining_corpus_check): print the check and stop.

  checked: what the check looks at; skipped: what is then not done."""
  flags.DEFINE_bool("check_only", False,
                    f"Print the corpus check ({checked}) and stop without {skipped}.")


def define_run_flags(do_predict=True, **defaults):
  """output_dir, do_train/do_eval/do_predict, batch sizes, learning rate, schedule, saving
  (RunOptions' fields). defaults: {field: default} where this command's differs from
  RunOptions' (run_swag's train_batch_size=16, run_pretraining's num_train_steps, ...)."""
  if not _once("run"):
    return
  define_flags(
      run_options.RunOptions,
      ("output_dir", "do_train", "do_eval") + (("do_predict",) if do_predict else ())
      + ("train_batch_size", "eval_batch_size")
      + (("predict_batch_size",) if do_predict else ())
      + ("learning_rate", "num_train_epochs", "num_train_steps", "num_warmup_steps",
         "warmup_proportion", "save_checkpoints_steps", "keep_checkpoint_max", "optimizer",
         "lr_schedule", "seed"),
      defaults=defaults)


def define_training_flags(max_seq_length=None, require_vocab=True, **run_defaults):
  """The flags every training command shares: the model's (define_model_flags;
  max_seq_length: this command's default where it is not RunOptions'), the run's
  (define_run_flags; run_defaults: this command's, do_predict=False for one without
  prediction), the distribution's and the runtime's."""
  define_model_flags(max_seq_length, require_vocab=require_vocab)
  define_run_flags(**run_defaults)
  define_distribution_flags()
  define_runtime_flags()


def define_tpu_flags():
  """The original's TPU flags; they map onto tf.distribute.TPUStrategy."""
  if not _once("tpu"):
    return
  flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
  define_flags(run_options.RunOptions, ("tpu_name", "tpu_zone", "gcp_project"))
  flags.DEFINE_string("master", None,
                      "[Optional] TensorFlow master URL; with --use_tpu, used as the TPU "
                      "address when --tpu_name is not given.")
  define_flags(run_options.RunOptions, ("num_tpu_cores",))


def define_distribution_flags():
  """tf.distribute strategy, precision, XLA, gradient accumulation, loop length."""
  if not _once("distribution"):
    return
  define_tpu_flags()
  define_flags(run_options.RunOptions, (
      "distribution_strategy", "multi_worker_timeout", "num_gpus", "dtype", "enable_xla",
      "gradient_accumulation_steps", "steps_per_loop"))
  flags.DEFINE_integer("steps_per_loop", None,
                       "Alias of --iterations_per_loop; wins when set.")
  define_flags(run_options.RunOptions, ("log_every_steps", "deterministic"))


def define_runtime_flags():
  """verbose: show tracebacks; runtime_log: TensorFlow's own C++ log lines."""
  if not _once("runtime"):
    return
  define_flags(run_options.RunOptions, ("verbose",))
  flags.DEFINE_bool(
      "runtime_log", False,
      "Show TensorFlow's runtime log (C++ lines such as cuInit, cpu_feature_guard, "
      "oneDNN), which is filtered out by default; for debugging the runtime itself. "
      "Read before flag parsing (see runtime_log.py); BERT_RUNTIME_LOG=1 does the same.")


def steps_per_loop(flag_values):
  """The effective loop length from --steps_per_loop / --iterations_per_loop."""
  return flag_values.steps_per_loop or flag_values.iterations_per_loop


def define_conll_file_flags(data_dir_help):
  """The flags of the CoNLL token tasks (run_ner.py, run_tagger.py): the fine-tuning
  commands' (define_finetuning_flags; data_dir_help: what --data_dir holds), and
  train_file, dev_file, test_file (each defaulting to its usual names in --data_dir),
  label_scheme (the files' IOB scheme) and doc_stride (windows over long sentences),
  made from tagging_options.TaggingOptions' fields."""
  define_finetuning_flags(data_dir_help=data_dir_help)
  if not _once("conll_files"):
    return
  define_flags(tagging_options.TaggingOptions,
               ("train_file", "dev_file", "test_file", "label_scheme", "doc_stride"))


def define_finetuning_flags(data_dir_help=None, train_limit=True, eval_limit=True):
  """Flags the fine-tuning scripts share: data_dir, ltr, example limits.

  data_dir_help: what the task's data folder holds (None: the script has no data_dir).
  """
  if not _once("finetuning"):
    return
  if data_dir_help:
    define_path("data_dir", None, data_dir_help)
    flags.mark_flag_as_required("data_dir")
  define_flags(run_options.RunOptions, ("ltr",) + (
      ("max_train_examples",) if train_limit else ()) + (
          "eval_every_steps", "best_metric", "early_stopping_patience",
          "use_best_checkpoint") + (("max_eval_examples",) if eval_limit else ()))


def define_litert_flag():
  """--litert: which TensorFlow Lite (LiteRT) models an export writes beside its
  SavedModels (bert/formats/litert_convert.py); every script with --export_dir has it."""
  if not _once("litert"):
    return
  define_flags(run_options.RunOptions, ("litert",))


def define_delimited_file_flags():
  """The columns of a user's own tab-separated files (run_classifier.py's tsv/csv task,
  tools/linear_probe.py): text_a_column, text_b_column, label_column, has_header,
  regression, made from classifier_examples.DelimitedFileOptions' fields; read them back with
  settings_from_flags(DelimitedFileOptions, ...)."""
  if not _once("delimited_files"):
    return
  define_flags(classifier_examples.DelimitedFileOptions, (
      "text_a_column", "text_b_column", "label_column", "has_header", "regression"))


def define_generic_task_flags():
  """run_classifier.py's tsv/csv task flags: define_delimited_file_flags' columns, plus
  the test file's columns, the label list and the delimiter; predict_litert.py reads the
  same files with them."""
  define_delimited_file_flags()
  if not _once("generic_task"):
    return
  define_flags(classifier_examples.DelimitedFileOptions, (
      "test_text_a_column", "test_text_b_column", "label_list", "delimiter"))


# A script's own count flags (a batch size) are checked as RunOptions checks its own:
# `check_positive(FLAGS, ("batch_size",))`, one line naming the flag, exit status 2.
check_positive = run_options.check_positive


def has_header_option(flag_values):
  """--has_header as the readers take it: True, False, or None when it was not given at
  all (then a first row that looks like a header is refused rather than read as data:
  its label, "label" say, would silently become a class of its own)."""
  return None if flag_values["has_header"].using_default_value else flag_values.has_header


def define_export_version_flag():
  """--export_version, for the scripts with --export_dir (TF Serving's layout), and
  --litert (define_litert_flag), which every such script has too."""
  define_litert_flag()
  if not _once("export_version"):
    return
  define_flags(run_options.RunOptions, ("export_version", "overwrite_export"))


def define_export_flags(export_help):
  """--export_dir (export_help: what this command's export holds), --export_version,
  --overwrite_export and --litert: the export flags of the fine-tuning commands."""
  define_flags(run_options.RunOptions, ("export_dir",), helps={"export_dir": export_help})
  define_export_version_flag()


# --------------------------------------------------------------------------- partners

# The rules that join two flags: run_options.PARTNERS, the one table (RunOptions.validate
# holds the values to it as well).
PARTNERS = run_options.PARTNERS


def check_partners(flag_values):
  """Refuses a flag given on the command line without the partner it acts with
  (run_options.PARTNERS), even at its default value: one line, errors.UserError."""
  broken = run_options.unmet_partner(
      lambda name: flag_values[name].present,
      lambda name: flag_values[name].value,
      lambda name: name in flag_values)
  if broken:
    raise run_options.partner_error(
        run_options.typed(broken.setting, flag_values[broken.setting].value), broken)


# --------------------------------------------------------------------------- options

def given_or_none(name):
  """The value of --name, or None when it was not given at all (the settings field then
  says "not given": a default the flag cannot spell)."""
  return lambda flag_values: (None if flag_values[name].using_default_value
                              else flag_values[name].value)


# The flags whose settings field takes their value in another form than absl parses it:
# --normalize=none is None (the original's tokenizers); --has_header and --regression not
# given are None (see classifier_examples.DelimitedFileOptions).
_FIELD_VALUES = {
    "normalize": lambda flag_values: normalize_option(flag_values.normalize),
    "has_header": has_header_option,
    "regression": given_or_none("regression"),
}


def flag_value(flag_values, name):
  """The value of --name as a settings field of the same name takes it (a list as a
  tuple: the settings objects are frozen)."""
  convert = _FIELD_VALUES.get(name)
  value = convert(flag_values) if convert else flag_values[name].value
  return tuple(value) if isinstance(value, list) else value


def values_of(flag_values, names, flag_names=None):
  """{name: flag_value} of those of the named flags that this command defines.
  flag_names: {field: flag} where a field's flag has another name."""
  flag_names = flag_names or {}
  found = {}
  for name in names:
    flag = flag_names.get(name, name)
    if flag in flag_values:
      found[name] = flag_value(flag_values, flag)
  return found


def _flag_names(cls):
  """{field: flag} of the fields of `cls` whose flag has another name."""
  return {name: meta["flag_name"] for name, (_, _, meta) in settings.declared(cls).items()
          if meta["flag_name"]}


def settings_from_flags(cls, flag_values, **overrides):
  """A settings dataclass from parsed absl flags: each field from its flag (of the same
  name, or the one its declaration names), unless overrides gives it; a field with
  neither keeps its default."""
  names = [field.name for field in dataclasses.fields(cls) if field.name not in overrides]
  return cls(**values_of(flag_values, names, _flag_names(cls)), **overrides)


def options_from_flags(flag_values, phase=None, cpu=None, **overrides):
  """RunOptions (bert/training/run_options.py) from parsed absl flags (the ones this script
  defines), plus overrides.

  phase: "pretraining", "fine-tuning" or "prediction" (default: fine-tuning with
  --do_train, else prediction): which cell of cpu_choice's table an unset --enable_xla
  and --dtype=auto take. cpu: a cpu_choice.Cpu (default: this machine's).
  """
  check_partners(flag_values)
  values = values_of(flag_values, [f.name for f in dataclasses.fields(run_options.RunOptions)],
                     _flag_names(run_options.RunOptions))
  # The original's --use_tpu/--master/--num_tpu_cores mean the same in every script.
  if "use_tpu" in flag_values and flag_values.use_tpu:
    values["distribution_strategy"] = "tpu"
    values["tpu_name"] = values.get("tpu_name") or flag_values.master
  else:
    values["num_tpu_cores"] = None
  if "iterations_per_loop" in flag_values:
    values["steps_per_loop"] = steps_per_loop(flag_values)
  values.update(overrides)
  values.update(resolve_speed(values, phase, cpu))
  return run_options.RunOptions(**values)


def resolve_speed(values, phase=None, cpu=None):
  """{dtype, enable_xla, speed_choice}: the one place --enable_xla unset and --dtype=auto
  become values, from cpu_choice's table where it applies (one device, no GPU)."""
  if phase is None:
    phase = "fine-tuning" if values.get("do_train") else "prediction"
  strategy = values.get("distribution_strategy", "one_device")
  reason = ""
  if os.environ.get("BERT_CPU_TABLE") == "0":  # the same choice on every CPU (tests)
    reason = "BERT_CPU_TABLE=0 turns the table off"
  elif strategy != "one_device":
    reason = f"--distribution_strategy={strategy}: the table describes one-device CPU runs"
  elif cpu_choice.accelerator_visible():
    reason = "a GPU or a TPU is visible: the table describes CPU runs"
  on_cpu = strategy != "tpu" and not cpu_choice.accelerator_visible()
  override = None
  if (values.get("dtype") == cpu_choice.AUTO and values.get("export_dir")
      and precision.needs_litert_source(values.get("litert"))):
    # auto must not pick a precision that fails the export after the training.
    source = precision.LITERT_SOURCE
    override = (source, f"--export_dir's LiteRT models (--litert={values['litert']}) "
                f"convert only from a {source} model, so --dtype=auto takes {source} "
                "(--litert=none leaves it to the table)")
  choice = cpu_choice.choose(
      cpu if cpu is not None else cpu_choice.this_cpu(), phase,
      dtype=values.get("dtype", precision.DEFAULT), enable_xla=values.get("enable_xla"),
      table_applies=not reason, not_applies_reason=reason, on_cpu=on_cpu,
      auto_dtype_override=override)
  dtype, line = choice.dtype, choice.line
  return {"dtype": dtype, "enable_xla": choice.enable_xla, "speed_choice": line}
