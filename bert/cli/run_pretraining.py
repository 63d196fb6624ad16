"""Pretrains BERT: masked LM + next sentence prediction, on any tf.distribute strategy.

The original's command line works unchanged (same flags and defaults) and gives the
original's numbers: the ablations (--no_nsp, --ltr) and the short-budget options
(--no_dropout, --lr_schedule=one_cycle, --gradient_accumulation_steps) are off by
default. After training the model is also written in Google's TF1 layout to
output_dir/pretrained/, which every other script reads. docs/pretraining.md shows the
commands and the outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.pretraining import pretraining_generator
from bert.pretraining import pretraining_options
from bert.training import run_options
from bert.utils import errors

# The original's pretraining schedule: a fixed number of steps, not epochs.
flags_common.define_training_flags(require_vocab=False, do_predict=False,
                                   num_train_steps=100000, num_warmup_steps=10000)

flags_common.define_path(
    "input_file", None,
    "Input TF example files (can be a glob or comma separated).")
flags_common.define_path(
    "eval_input_file", None,
    "Files for --do_eval (glob or comma separated); default: --input_file, as the original.")
# Declared once, with the data's other instance settings (GeneratorOptions).
flags_common.define_flags(
    pretraining_generator.GeneratorOptions, ("max_predictions_per_seq",), helps={
        "max_predictions_per_seq": "Maximum number of masked LM predictions per sequence. "
                                   "Must match data generation."})
flags_common.define_flags(pretraining_options.PretrainingOptions,
                          ("max_eval_steps", "no_nsp", "no_dropout"))
flags_common.define_flags(
    run_options.RunOptions, ("ltr",), helps={
        "ltr": "Ablation: left-to-right LM (causal mask, next-token prediction, no NSP)."})
flags_common.define_masking_flags(
    "Applies to records made without masks (create_pretraining_data.py "
    "--dynamic_masking), which are masked as they are read, anew each epoch; they also "
    "need --vocab_file.")

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    options = flags_common.options_from_flags(FLAGS, phase="pretraining")
    pretraining = flags_common.settings_from_flags(pretraining_options.PretrainingOptions,
                                                   FLAGS)
    masking_options = flags_common.masking_options(FLAGS)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.pretraining import pretraining_task
    pretraining_task.PretrainingTask(options, pretraining, masking_options).run()


flags.mark_flag_as_required("input_file")


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
