"""Pretrains BERT: masked LM + next sentence prediction, on any tf.distribute strategy.

The original's command line works unchanged (same flags and defaults):

  python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \
    --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
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

The command is bert/cli/run_pretraining.py.
"""

from absl import app
from absl import flags

from bert.cli import run_pretraining

if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  app.run(run_pretraining.main)
