"""Pretrains BERT: masked LM + next sentence prediction, on any tf.distribute strategy.

The original's command line works unchanged (same flags and defaults):

  python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \\
    --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \\
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \\
    --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

Outputs in --output_dir: TF2 checkpoints `ckpt-<step>` (a rerun resumes from the newest),
TensorBoard logs in train/, eval_results.txt (masked_lm_accuracy, masked_lm_loss,
next_sentence_accuracy, next_sentence_loss, global_step, loss) and, after training, the
model in Google's TF1 layout in pretrained/ (bert_model.ckpt.* + bert_config.json), which
every other script accepts as --init_checkpoint / --bert_config_file.

Losses, as the original: masked LM = sum(w * nll) / (sum(w) + 1e-5) over the masked
positions (w = masked_lm_weights; the sum runs over the global batch here, over a TPU
core's batch in the original); next sentence = mean cross-entropy; total = their sum.
Ablations (paper, Table 5): --no_nsp drops the next-sentence loss; --ltr trains a
left-to-right model (causal attention mask) to predict the next token at every position,
without NSP, on the same TFRecords (the masked tokens are put back first).
Short budgets (docs/new_language.md): --no_dropout, --no_nsp, --lr_schedule=one_cycle and
--gradient_accumulation_steps; none of them is on by default, so the original's commands
keep the original's numbers.
"""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

flags_common.define_model_flags(max_seq_length=128, require_vocab=False)
flags_common.define_run_flags(train_batch_size=32, eval_batch_size=8, learning_rate=5e-5,
                              do_predict=False, num_train_steps=100000,
                              num_warmup_steps=10000)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_path(
    "input_file", None,
    "Input TF example files (can be a glob or comma separated).")
flags_common.define_path(
    "eval_input_file", None,
    "Files for --do_eval (glob or comma separated); default: --input_file, as the original.")
flags.DEFINE_integer(
    "max_predictions_per_seq", 20,
    "Maximum number of masked LM predictions per sequence. Must match data generation.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("no_nsp", False,
                  "Ablation: train the masked LM only, without next sentence prediction.")
flags.DEFINE_bool("ltr", False,
                  "Ablation: left-to-right LM (causal mask, next-token prediction, no NSP).")
flags.DEFINE_bool(
    "no_dropout", False,
    "Pretrain with both dropout rates at 0 (short budgets learn faster without it); the "
    "config's rates are kept in pretrained/bert_config.json for fine-tuning.")

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    options = flags_common.options_from_flags(FLAGS, phase="pretraining")
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.pretraining import pretraining_task
    pretraining_task.PretrainingTask(
        options, FLAGS.input_file, FLAGS.eval_input_file, FLAGS.max_predictions_per_seq,
        FLAGS.max_eval_steps, no_nsp=FLAGS.no_nsp, no_dropout=FLAGS.no_dropout).run()


flags.mark_flag_as_required("input_file")


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
