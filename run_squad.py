"""BERT fine-tuning and prediction on SQuAD v1.1 and v2.0 (the original's run_squad.py).

  python run_squad.py --vocab_file=$BERT_DIR/vocab.txt \
    --bert_config_file=$BERT_DIR/bert_config.json \
    --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --train_file=train-v1.1.json \
    --do_predict --predict_file=dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
    --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad

SQuAD 2.0: add --version_2_with_negative (and --null_score_diff_threshold, tuned on dev).

Outputs in --output_dir: train.tf_record and eval.tf_record (the features, as the
original), checkpoints, predictions.json, nbest_predictions.json, null_odds.json (v2.0)
and, when the predict file has answers, eval_results.txt with the official scores of the
predicted questions (squad_metrics, no download needed). --export_dir writes a SavedModel
whose serving signature maps input_ids/input_mask/segment_ids int32 [batch, seq] to
start_logits/end_logits float32 [batch, seq]. The work is done by squad_task.SquadTask,
run by the shared driver (finetune.py).

The command is bert/cli/run_squad.py.
"""

from absl import app

from bert.cli import run_squad

if __name__ == "__main__":
  app.run(run_squad.main)
