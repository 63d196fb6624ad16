"""BERT fine-tuning and prediction on SQuAD v1.1 and v2.0 (the original's run_squad.py).

SQuAD 2.0: --version_2_with_negative (and --null_score_diff_threshold, tuned on dev).
When the predict file has answers, eval_results.txt holds the official scores of the
predicted questions (no download needed). docs/squad.md shows the commands and the
outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.squad import squad_options
from bert.utils import errors

FLAGS = flags.FLAGS

# The original's SQuAD default: questions and their documents need longer sequences.
flags_common.define_training_flags(max_seq_length=squad_options.MAX_SEQ_LENGTH)

flags_common.define_flags(squad_options.SquadOptions)
flags_common.define_export_flags(
    "Write a SavedModel here (token ids -> start_logits, end_logits) after training.")
flags_common.define_finetuning_flags(eval_limit=False)

def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    # As the original: --do_predict predicts and, when the file has answers, scores
    # (eval_results.txt with the global step).
    options = flags_common.options_from_flags(FLAGS)
    settings = flags_common.settings_from_flags(squad_options.SquadOptions, FLAGS)
    from bert.squad import squad_task  # deferred: TensorFlow loads here, so --help stays fast
    squad_task.SquadTask(options, settings).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
