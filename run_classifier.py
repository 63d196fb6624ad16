"""BERT fine-tuning runner for sentence (pair) classification: GLUE, XNLI, your own TSV/CSV.

The original's command line works unchanged, e.g. (README):

  python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true     --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt     --bert_config_file=$BERT_BASE_DIR/bert_config.json     --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128     --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0     --output_dir=/tmp/mrpc_output/

Tasks: cola, sst2 (sst-2), mrpc, stsb (sts-b, regression), qqp, mnli, qnli, rte, wnli,
xnli (--xnli_language), and tsv/csv for users' files (--text_a_column, --label_column, ...).

Outputs in --output_dir: checkpoints (ckpt-N, resumable), eval_results.txt (`key = value`:
the task's GLUE metrics as eval_*, eval_loss, global_step, loss), test_results.tsv (class
probabilities per test row, as the original) and the GLUE submission file (CoLA.tsv, ...).
--export_dir writes a SavedModel with a token-id and a raw-text serving signature.

The command is bert/cli/run_classifier.py.
"""

from absl import app

from bert.cli import run_classifier

if __name__ == "__main__":
  app.run(run_classifier.main)
