"""The commands' shared absl flags, defined here once, and the one step from parsed flags to
the settings a command runs with (options_from_flags, settings_from_flags).

Names and defaults are the original release's, so a command from the original README
runs unchanged. Nothing here loads TensorFlow, so that `--help` and flag errors answer
at once."""

import dataclasses
import os

from absl import flags
from absl import logging

from bert import masking
from bert.formats import litert_metadata
from bert.training import run_options
from bert.utils import atomic_output
from bert.utils import cpu_choice
from bert.utils import errors
from bert.utils import paths

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
  """What every command asks of its path flags before any work: each output URL checked
  once (atomic_output.check_output_url: the bucket there, its name valid, writable, no
  file where a folder goes), one line naming the flag when it is not; and a note for
  each gs:// value read without its repeated slashes. Nothing is checked under
  --check_only, which writes nothing."""
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
        atomic_output.check_output_url(item.strip(), name, is_file=kind == "file")


def define_model_flags(max_seq_length=128, require_vocab=True, require_config=True):
  """bert_config_file, vocab_file, init_checkpoint, do_lower_case, max_seq_length."""
  if not _once("model"):
    return
  define_path(
      "bert_config_file", None,
      "The config json file corresponding to the pre-trained BERT model. "
      "This specifies the model architecture.")
  define_path(
      "vocab_file", None,
      "The vocabulary file that the BERT model was trained on.")
  define_path(
      "init_checkpoint", None,
      "Initial checkpoint: a Google TF1 checkpoint prefix (bert_model.ckpt), one of "
      "ours, or a Hugging Face model.safetensors file or directory.")
  flags.DEFINE_bool(
      "do_lower_case", True,
      "Whether to lower case the input text. Should be True for uncased models and "
      "False for cased models.")
  flags.DEFINE_integer(
      "max_seq_length", max_seq_length,
      "The maximum total input sequence length after WordPiece tokenization. "
      "Sequences longer than this will be truncated, and sequences shorter than this "
      "will be padded.")
  if require_config:
    flags.mark_flag_as_required("bert_config_file")
  if require_vocab:
    flags.mark_flag_as_required("vocab_file")


def define_masking_flags(applies_to=None):
  """The masking rules: masked_lm_prob, do_whole_word_mask (the original's flags of
  create_pretraining_data.py), mask_token_prob and random_token_prob (ours).

  applies_to: a note added to each help text (run_pretraining.py applies them only to
  records without masks)."""
  if not _once("masking"):
    return
  note = f" {applies_to}" if applies_to else ""
  define = {bool: flags.DEFINE_bool, float: flags.DEFINE_float}
  # Made from the fields (type, default, help), declared once in bert/masking.py.
  for field in dataclasses.fields(masking.MaskingOptions):
    define[field.type](field.name, field.default, field.metadata["help"] + note)


def masking_options(flag_values):
  """The masking flags' values as a bert.masking.MaskingOptions (checked)."""
  return masking.MaskingOptions(**{f.name: flag_values[f.name].value
                                   for f in dataclasses.fields(masking.MaskingOptions)})


def define_normalize_flag(applies_to="before tokenizing"):
  """--normalize: none (the original) or nfc, the same choice at every step of a run.

  A model whose vocabulary was learned with create_vocab.py --normalize=nfc must see NFC
  text everywhere after: in its pretraining data, its fine-tuning, its exported
  preprocessing. `options_from_flags` reads it as None or "nfc"."""
  if not _once("normalize"):
    return
  flags.DEFINE_enum(
      "normalize", "none", ["none", "nfc"],
      f"nfc: put every line in Unicode NFC (composed) form {applies_to} (for decomposed "
      "text, e.g. Hangul copied from macOS); use the same setting as create_vocab.py and "
      "create_pretraining_data.py. The original does not normalise.")


def normalize_option(value):
  """--normalize's value as the tokenizers take it: None (the original) or "nfc"."""
  return None if value in (None, "none") else value


def define_check_only_flag(checked, skipped):
  """--check_only, for the commands that check a corpus before their work
  (pretraining_corpus_check): print the check and stop.

  checked: what the check looks at; skipped: what is then not done."""
  flags.DEFINE_bool("check_only", False,
                    f"Print the corpus check ({checked}) and stop without {skipped}.")


def define_run_flags(train_batch_size=32, eval_batch_size=8, predict_batch_size=8,
                     learning_rate=5e-5, num_train_epochs=3.0, do_predict=True,
                     num_train_steps=None, num_warmup_steps=None):
  """output_dir, do_train/do_eval/do_predict, batch sizes, learning rate, schedule, saving."""
  if not _once("run"):
    return
  define_path(
      "output_dir", None,
      "The output directory where the model checkpoints and results will be written.",
      output="folder")
  flags.mark_flag_as_required("output_dir")
  flags.DEFINE_bool("do_train", False, "Whether to run training.")
  flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
  if do_predict:
    flags.DEFINE_bool("do_predict", False,
                      "Whether to run the model in inference mode on the test set.")
  flags.DEFINE_integer("train_batch_size", train_batch_size, "Total batch size for training.")
  flags.DEFINE_integer("eval_batch_size", eval_batch_size, "Total batch size for eval.")
  if do_predict:
    flags.DEFINE_integer("predict_batch_size", predict_batch_size,
                         "Total batch size for predict.")
  flags.DEFINE_float("learning_rate", learning_rate, "The initial learning rate for Adam.")
  flags.DEFINE_float("num_train_epochs", num_train_epochs,
                     "Total number of training epochs to perform.")
  flags.DEFINE_integer(
      "num_train_steps", num_train_steps,
      "Number of training steps (optimizer updates)."
      + ("" if num_train_steps else " Overrides --num_train_epochs when set."))
  flags.DEFINE_integer(
      "num_warmup_steps", num_warmup_steps,
      "Number of linear learning-rate warmup steps."
      + ("" if num_warmup_steps is not None else
         " Overrides --warmup_proportion when set."))
  flags.DEFINE_float(
      "warmup_proportion", 0.1,
      "Proportion of training to perform linear learning rate warmup for. "
      "E.g., 0.1 = 10% of training.")
  flags.DEFINE_integer("save_checkpoints_steps", 1000,
                       "How often to save the model checkpoint.")
  flags.DEFINE_integer("keep_checkpoint_max", 3,
                       "How many of the newest checkpoints to keep in output_dir.")
  flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"],
                    "adamw: the original AdamWeightDecay; lamb: LAMB for large batches.")
  flags.DEFINE_enum(
      "lr_schedule", "original", ["original", "one_cycle"],
      "original: warmup, then the release's linear decay to 0 measured from step 0 (so "
      "the rate right after warmup is learning_rate * (1 - warmup / steps)); one_cycle: "
      "warmup to learning_rate, then linear decay to 0 over the remaining steps (with "
      "--warmup_proportion=0.5, a triangle; for short pretraining budgets).")
  flags.DEFINE_integer("seed", 12345, "Random seed for initialisation, dropout and shuffling.")


def define_tpu_flags():
  """The original's TPU flags; they map onto tf.distribute.TPUStrategy."""
  if not _once("tpu"):
    return
  flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
  flags.DEFINE_string(
      "tpu_name", None,
      "The Cloud TPU to use for training. This should be either the name used when "
      "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.")
  flags.DEFINE_string(
      "tpu_zone", None,
      "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we will "
      "attempt to automatically detect the GCE project from metadata.")
  flags.DEFINE_string(
      "gcp_project", None,
      "[Optional] Project name for the Cloud TPU-enabled project. If not specified, we "
      "will attempt to automatically detect the GCE project from metadata.")
  flags.DEFINE_string("master", None,
                      "[Optional] TensorFlow master URL; with --use_tpu, used as the TPU "
                      "address when --tpu_name is not given.")
  flags.DEFINE_integer(
      "num_tpu_cores", 8,
      "Only used if `use_tpu` is True. Total number of TPU cores to use; the run "
      "stops if the TPU has a different number of cores.")


def define_distribution_flags():
  """tf.distribute strategy, precision, XLA, gradient accumulation, loop length."""
  if not _once("distribution"):
    return
  define_tpu_flags()
  flags.DEFINE_enum(
      "distribution_strategy", "one_device",
      ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
      "tf.distribute strategy. mirrored: all local GPUs; multi_worker_mirrored: several "
      "hosts, configured by the TF_CONFIG environment variable; tpu: --tpu_name "
      "(--use_tpu implies tpu).")
  flags.DEFINE_float(
      "multi_worker_timeout", 0,
      "multi_worker_mirrored: stop (exit status 2, naming the tasks that did not connect) "
      "when the other tasks of TF_CONFIG's cluster have not all connected after this many "
      "seconds. 0: wait as long as it takes (it says first for whom it waits).")
  flags.DEFINE_integer("num_gpus", None,
                       "mirrored: how many local GPUs to use (default: all).")
  flags.DEFINE_enum(
      "dtype", "float32", ["float32", "bfloat16", "float16", "auto"],
      "Compute precision; variables stay float32. float16 uses loss scaling. auto: what "
      "docs/cpu.md's table measured fastest for this CPU and phase (float32 or bfloat16, "
      "never float16; float32 on a CPU not in the table); the choice is logged.")
  flags.DEFINE_bool(
      "enable_xla", None,
      "Compile the training step with XLA. Unset: what docs/cpu.md's table measured "
      "fastest for this CPU and phase (off on a CPU not in the table), logged; "
      "--enable_xla / --noenable_xla decide.")
  flags.DEFINE_integer(
      "gradient_accumulation_steps", 1,
      "Accumulate gradients over this many micro-batches per optimizer step. "
      "train_batch_size is the micro-batch size.")
  flags.DEFINE_integer(
      "iterations_per_loop", 1000,
      "How many steps to make in each estimator call (the original's name; here: "
      "steps run in one tf.function call between host-side logging).")
  flags.DEFINE_integer("steps_per_loop", None,
                       "Alias of --iterations_per_loop; wins when set.")
  flags.DEFINE_integer("log_every_steps", 10, "How often to log progress (steps).")
  flags.DEFINE_bool(
      "deterministic", None,
      "Switch on TensorFlow op determinism (same seed, same numbers). "
      "Default: on for CPU runs, off on accelerators.")


def define_runtime_flags():
  """verbose: show tracebacks; runtime_log: TensorFlow's own C++ log lines."""
  if not _once("runtime"):
    return
  flags.DEFINE_bool("verbose", False,
                    "Show full Python tracebacks and detailed logs on errors.")
  flags.DEFINE_bool(
      "runtime_log", False,
      "Show TensorFlow's runtime log (C++ lines such as cuInit, cpu_feature_guard, "
      "oneDNN), which is filtered out by default; for debugging the runtime itself. "
      "Read before flag parsing (see runtime_log.py); BERT_RUNTIME_LOG=1 does the same.")


def steps_per_loop(flag_values):
  """The effective loop length from --steps_per_loop / --iterations_per_loop."""
  return flag_values.steps_per_loop or flag_values.iterations_per_loop


def define_conll_file_flags():
  """The flags of the CoNLL token tasks (run_ner.py, run_tagger.py): train_file,
  dev_file, test_file (each defaulting to its usual names in --data_dir), label_scheme
  (the files' IOB scheme) and doc_stride (windows over long sentences)."""
  if not _once("conll_files"):
    return
  define_path("train_file", None,
              "Training file (default: train.txt or eng.train in --data_dir).")
  define_path("dev_file", None,
              "Dev file (default: valid.txt, dev.txt or eng.testa in --data_dir).")
  define_path("test_file", None,
              "Test file (default: test.txt or eng.testb in --data_dir).")
  flags.DEFINE_enum("label_scheme", "auto", ["auto", "iob1", "iob2"],
                    "Scheme of the files' IOB chunks (entities, or run_tagger.py's --iob "
                    "tags): iob1 (the original CoNLL-2003 release), iob2 (B- on every "
                    "chunk's first word) or auto (IOB1 when some chunk starts with I-). "
                    "The model learns IOB2; predictions are written in the files' scheme.")
  flags.DEFINE_integer("doc_stride", 64,
                       "A sentence longer than max_seq_length - 2 WordPieces is split into "
                       "overlapping windows whose starts are about this many pieces apart.")


def define_finetuning_flags(data_dir_help=None, train_limit=True, eval_limit=True):
  """Flags the fine-tuning scripts share: data_dir, ltr, example limits.

  data_dir_help: what the task's data folder holds (None: the script has no data_dir).
  """
  if not _once("finetuning"):
    return
  if data_dir_help:
    define_path("data_dir", None, data_dir_help)
    flags.mark_flag_as_required("data_dir")
  flags.DEFINE_bool(
      "ltr", False,
      "Left-to-right (causal) attention mask, for a model pretrained with "
      "run_pretraining.py --ltr (the paper's Table 5 LTR ablation).")
  if train_limit:
    flags.DEFINE_integer("max_train_examples", 0,
                         "Use only the first N training examples (0: all).")
  flags.DEFINE_integer(
      "eval_every_steps", 0,
      "With --do_train and --do_eval: also evaluate the dev set every N training steps, "
      "its metrics into output_dir/eval under the training curves' tags (loss, "
      "accuracy, ...); eval_results.txt keeps the final evaluation. 0: evaluate once, "
      "at the end. The checkpoint with the best dev metric (--best_metric) is kept in "
      "output_dir/best beside the newest ones.")
  flags.DEFINE_string(
      "best_metric", None,
      "With --eval_every_steps: the dev metric (a key of eval_results.txt) that chooses "
      "the best checkpoint; a loss is better lower, every other metric higher. Default: "
      "the task's (the paper's): eval_accuracy; eval_f1 for MRPC, QQP and NER; "
      "eval_matthews_corrcoef for CoLA; eval_spearman for STS-B and regression; micro_f1 "
      "for multi-label; f1 for SQuAD.")
  flags.DEFINE_integer(
      "early_stopping_patience", 0,
      "With --eval_every_steps: stop training after N evaluations without improvement of "
      "--best_metric (the run ends cleanly, and the same command run again trains no "
      "further); --do_eval, --do_predict and --export_dir then use the best checkpoint. "
      "0: never stop early.")
  flags.DEFINE_bool(
      "use_best_checkpoint", False,
      "--do_eval, --do_predict and --export_dir use the best checkpoint on dev that a run "
      "with --eval_every_steps kept in output_dir/best, not the newest (the log says "
      "which step and why); with --do_train, it needs --eval_every_steps.")
  if eval_limit:
    flags.DEFINE_integer("max_eval_examples", 0,
                         "Evaluate/predict only the first N examples of dev/test (0: all).")


def define_litert_flag():
  """--litert: which TensorFlow Lite (LiteRT) models an export writes beside its
  SavedModels (bert/formats/litert_convert.py); every script with --export_dir has it."""
  if not _once("litert"):
    return
  flags.DEFINE_enum(
      "litert", "both", list(litert_metadata.CHOICES),
      "With --export_dir: also write the token-id model (export_encoder.py: the encoder of "
      "--format=tfhub) for the LiteRT runtime (TensorFlow Lite without TensorFlow; "
      "predict_litert.py runs it) in export_dir/litert/ (or litert/N/ with "
      "--export_version=N): both = model_float32.tflite and "
      "model_int8.tflite (dynamic-range int8, faster on CPUs), or one of them, or none. "
      "Each is checked against the SavedModel after conversion; one that disagrees stops "
      "the export (nothing is written).")


def define_delimited_file_flags():
  """The columns of a user's own tab-separated files (run_classifier.py's tsv/csv task,
  tools/linear_probe.py): text_a_column, text_b_column, label_column, has_header,
  regression. Read --has_header through has_header_option."""
  if not _once("delimited_files"):
    return
  flags.DEFINE_string("text_a_column", "0",
                      "tsv/csv task: column of the first text (0-based number, or a header "
                      "name).")
  flags.DEFINE_string("text_b_column", None,
                      "tsv/csv task: column of the second text, for sentence-pair tasks.")
  flags.DEFINE_string("label_column", "1", "tsv/csv task: column of the label.")
  flags.DEFINE_bool("has_header", False,
                    "tsv/csv task: the files start with a header line. Not given: a first "
                    "row that looks like a header stops the run; --has_header=false: it is "
                    "data.")
  flags.DEFINE_bool("regression", False,
                    "tsv/csv task: the label is a number; one output trained with mean "
                    "squared error, evaluated with Pearson/Spearman.")


def define_generic_task_flags():
  """run_classifier.py's tsv/csv task flags: define_delimited_file_flags' columns, plus
  the test file's columns, the label list and the delimiter; predict_litert.py reads the
  same files with them."""
  define_delimited_file_flags()
  if not _once("generic_task"):
    return
  flags.DEFINE_string("test_text_a_column", None,
                      "tsv/csv task: text_a column in test.* (default: --text_a_column).")
  flags.DEFINE_string("test_text_b_column", None,
                      "tsv/csv task: text_b column in test.* (default: --text_b_column).")
  flags.DEFINE_list("label_list", None,
                    "tsv/csv task: the labels, comma-separated, in label-id order (default: "
                    "the sorted distinct labels of train.*, else dev.*).")
  flags.DEFINE_string("delimiter", None,
                      "tsv/csv task: field delimiter (default: tab for tsv, comma for csv).")


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
  flags.DEFINE_integer(
      "export_version", 0,
      "With --export_dir: 0 writes export_dir/ (every signature) and, when there is a "
      "raw-text signature, export_dir/ids/ (token-id signatures only, stock TensorFlow ops "
      "that tensorflow_model_server and saved_model_cli load); N >= 1 writes TF Serving's "
      "layout instead: export_dir/ids/N/ and export_dir/text/N/ (each of export_dir/ids "
      "and export_dir/text is a --model_base_path), beside the versions already there. "
      "An existing version N, or a non-empty export_dir with 0, is refused before the run "
      "starts unless --overwrite_export.")
  flags.DEFINE_bool(
      "overwrite_export", False,
      "Replace what --export_dir already holds at this --export_version: the folder of "
      "version N only (the other versions stay), or with 0 the unversioned export (never "
      "a folder that holds versions).")


# --------------------------------------------------------------------------- partners

# Flags that act only together with another: (flag, partner, what the flag does). Given
# on the command line while its partner is unset (empty, false), the flag would do
# nothing, silently; it is refused instead (check_partners), in every command that
# defines both. tests/core/test_argument_checks.py lists, from the flag definitions, every
# flag whose help says it acts "With --X" or "Only used if" and checks that it is here
# (test_every_flag_that_acts_only_with_another_is_in_the_partner_table).
PARTNERS = (
    ("litert", "export_dir", "writes the LiteRT models of an export"),
    ("export_version", "export_dir", "names the version folder of an export"),
    ("overwrite_export", "export_dir", "replaces part of an export"),
    ("eval_every_steps", "do_train", "evaluates during training"),
    ("eval_every_steps", "do_eval", "evaluates during training"),
    ("best_metric", "eval_every_steps", "chooses the best of the evaluations during training"),
    ("early_stopping_patience", "eval_every_steps",
     "counts the evaluations during training"),
    ("num_tpu_cores", "use_tpu", "counts the TPU's cores"),
)


def _typed(flag_values, name):
  """--name as typed (`--name=value`, or `--name` for a true boolean)."""
  value = flag_values[name].value
  if isinstance(value, bool):
    return f"--{name}" if value else f"--no{name}"
  return f"--{name}={value}"


def check_partners(flag_values):
  """Refuses a flag given without the partner it acts with (PARTNERS): one line,
  errors.UserError."""
  for name, partner, what in PARTNERS:
    if name in flag_values and partner in flag_values and flag_values[name].present \
        and not flag_values[partner].value:
      raise errors.UserError(f"{_typed(flag_values, name)} {what}: it needs --{partner}"
                               " (without it the flag does nothing)")


# --------------------------------------------------------------------------- options

# The flags whose settings field takes their value in another form than absl parses it:
# --normalize=none is None (the original's tokenizers), --has_header not given is None.
_FIELD_VALUES = {
    "normalize": lambda flag_values: normalize_option(flag_values.normalize),
    "has_header": has_header_option,
}


def flag_value(flag_values, name):
  """The value of --name as a settings field of the same name takes it."""
  convert = _FIELD_VALUES.get(name)
  return convert(flag_values) if convert else flag_values[name].value


def values_of(flag_values, names):
  """{name: flag_value} of those of the named flags that this command defines."""
  return {name: flag_value(flag_values, name) for name in names if name in flag_values}


def settings_from_flags(cls, flag_values, **overrides):
  """A settings dataclass from parsed absl flags: each field from the flag of the same
  name, unless overrides gives it; a field with neither keeps its default."""
  names = [field.name for field in dataclasses.fields(cls) if field.name not in overrides]
  return cls(**values_of(flag_values, names), **overrides)


def options_from_flags(flag_values, phase=None, cpu=None, **overrides):
  """RunOptions (bert/training/run_options.py) from parsed absl flags (the ones this script
  defines), plus overrides.

  phase: "pretraining", "fine-tuning" or "prediction" (default: fine-tuning with
  --do_train, else prediction): which cell of cpu_choice's table an unset --enable_xla
  and --dtype=auto take. cpu: a cpu_choice.Cpu (default: this machine's).
  """
  check_partners(flag_values)
  values = values_of(flag_values, [f.name for f in dataclasses.fields(run_options.RunOptions)])
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
    reason = "a GPU is visible: the table describes CPU runs"
  on_cpu = strategy != "tpu" and not cpu_choice.accelerator_visible()
  override = None
  if (values.get("dtype") == "auto" and values.get("export_dir")
      and values.get("litert", "none") != "none"):
    # An export's LiteRT models convert only from a float32 model; auto must not pick a
    # precision that fails the export after the training.
    override = ("float32", f"--export_dir's LiteRT models (--litert={values['litert']}) "
                "convert only from a float32 model, so --dtype=auto takes float32 "
                "(--litert=none leaves it to the table)")
  choice = cpu_choice.choose(
      cpu if cpu is not None else cpu_choice.this_cpu(), phase,
      dtype=values.get("dtype", "float32"), enable_xla=values.get("enable_xla"),
      table_applies=not reason, not_applies_reason=reason, on_cpu=on_cpu,
      auto_dtype_override=override)
  dtype, line = choice.dtype, choice.line
  return {"dtype": dtype, "enable_xla": choice.enable_xla, "speed_choice": line}
