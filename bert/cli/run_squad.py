"""BERT fine-tuning and prediction on SQuAD v1.1 and v2.0 (the original's run_squad.py).

SQuAD 2.0: --version_2_with_negative (and --null_score_diff_threshold, tuned on dev).
When the predict file has answers, eval_results.txt holds the official scores of the
predicted questions (no download needed). docs/squad.md shows the commands and the
outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=384)
flags_common.define_run_flags(train_batch_size=32, predict_batch_size=8, learning_rate=5e-5,
                              num_train_epochs=3.0)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_path("train_file", None,
                         "SQuAD json for training. E.g., train-v1.1.json")
flags_common.define_path(
    "predict_file", None,
    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_integer(
    "doc_stride", 128,
    "When splitting up a long document into chunks, how much stride to take between chunks.")
flags.DEFINE_integer(
    "max_query_length", 64,
    "The maximum number of tokens for the question. Questions longer than this will be "
    "truncated to this length.")
flags.DEFINE_integer(
    "n_best_size", 20,
    "The total number of n-best predictions to generate in the nbest_predictions.json "
    "output file.")
flags.DEFINE_integer(
    "max_answer_length", 30,
    "The maximum length of an answer that can be generated. This is needed because the "
    "start and end predictions are not conditioned on one another.")
flags.DEFINE_bool(
    "verbose_logging", False,
    "If true, all of the warnings related to data processing will be printed. A number of "
    "warnings are expected for a normal SQuAD evaluation.")
flags.DEFINE_bool(
    "version_2_with_negative", False,
    "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0,
    "If null_score - best_non_null is greater than the threshold predict null.")
flags_common.define_path(
    "export_dir", None,
    "Write a SavedModel here (token ids -> start_logits, end_logits) after training.",
    output="folder")
flags_common.define_export_version_flag()
flags.DEFINE_bool(
    "fast_tokenization", True,
    "Tokenize the SQuAD words and questions in batches with tokenization.FastTokenizer "
    "(tensorflow-text; the same tokens as the Python tokenizer, faster: docs/squad.md). "
    "--nofast_tokenization uses the original's pure-Python tokenizer only.")
flags_common.define_finetuning_flags(eval_limit=False)
flags.DEFINE_integer("max_predict_examples", 0,
                     "Predict only the first N questions of --predict_file (0: all).")
flags.DEFINE_string(
    "train_articles", None,
    "Python-style slice START:END of the articles of --train_file to use (e.g. 0:40), to "
    "split one file by article.")
flags.DEFINE_string(
    "predict_articles", None,
    "Slice START:END of the articles of --predict_file to use (e.g. 40:48).")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    # As the original: --do_predict predicts and, when the file has answers, scores
    # (eval_results.txt with the global step).
    options = flags_common.options_from_flags(FLAGS)
    from bert.squad import squad_task  # deferred: TensorFlow loads here, so --help stays fast
    squad_task.SquadTask(
        options, flags_common.settings_from_flags(squad_task.SquadSettings, FLAGS)).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
