"""absl flag definitions shared by the scripts, defined here once and never copied.

Ground floor: imports nothing of ours. Each script calls the `define_*` groups it needs,
at import time, before `app.run`. Names and defaults are the original release's, so a
command from the original README runs unchanged; a script passes its own default where
the original's script differed (run_squad's max_seq_length is 384, for example).
"""

from absl import flags

_DEFINED = set()


def _once(group):
  # absl refuses to define a flag twice; a script that (wrongly) calls a group twice
  # must not crash with DuplicateFlagError, and tests may import several scripts.
  if group in _DEFINED:
    return False
  _DEFINED.add(group)
  return True


def define_model_flags(max_seq_length=128, require_vocab=True, require_config=True):
  """bert_config_file, vocab_file, init_checkpoint, do_lower_case, max_seq_length."""
  if not _once("model"):
    return
  flags.DEFINE_string(
      "bert_config_file", None,
      "The config json file corresponding to the pre-trained BERT model. "
      "This specifies the model architecture.")
  flags.DEFINE_string(
      "vocab_file", None,
      "The vocabulary file that the BERT model was trained on.")
  flags.DEFINE_string(
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


def define_run_flags(train_batch_size=32, eval_batch_size=8, predict_batch_size=8,
                     learning_rate=5e-5, num_train_epochs=3.0, do_predict=True):
  """output_dir, do_train/do_eval/do_predict, batch sizes, learning rate, schedule, saving."""
  if not _once("run"):
    return
  flags.DEFINE_string(
      "output_dir", None,
      "The output directory where the model checkpoints and results will be written.")
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
  flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
  flags.DEFINE_integer(
      "num_tpu_cores", 8,
      "Only used if `use_tpu` is True. Total number of TPU cores to use.")


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
  flags.DEFINE_integer("num_gpus", None,
                       "mirrored: how many local GPUs to use (default: all).")
  flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16", "float16"],
                    "Compute precision; variables stay float32. float16 uses loss scaling.")
  flags.DEFINE_bool("enable_xla", False, "Compile the training step with XLA.")
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
  """verbose: show tracebacks; the default is a one-line message for user errors."""
  if not _once("runtime"):
    return
  flags.DEFINE_bool("verbose", False,
                    "Show full Python tracebacks and detailed logs on errors.")


def steps_per_loop(flag_values):
  """The effective loop length from --steps_per_loop / --iterations_per_loop."""
  return flag_values.steps_per_loop or flag_values.iterations_per_loop


def define_finetuning_flags(data_dir_help=None, train_limit=True, eval_limit=True):
  """Flags the fine-tuning scripts share: data_dir, ltr, example limits.

  data_dir_help: what the task's data folder holds (None: the script has no data_dir).
  """
  if not _once("finetuning"):
    return
  if data_dir_help:
    flags.DEFINE_string("data_dir", None, data_dir_help)
    flags.mark_flag_as_required("data_dir")
  flags.DEFINE_bool(
      "ltr", False,
      "Left-to-right (causal) attention mask, for a model pretrained with "
      "run_pretraining.py --ltr (the paper's Table 5 LTR ablation).")
  if train_limit:
    flags.DEFINE_integer("max_train_examples", 0,
                         "Use only the first N training examples (0: all).")
  if eval_limit:
    flags.DEFINE_integer("max_eval_examples", 0,
                         "Evaluate/predict only the first N examples of dev/test (0: all).")
