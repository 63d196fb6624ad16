"""BERT fine-tuning on SWAG (multiple choice), as in the paper's Section 4.4 / Table 4.

Each example is four (context, ending) pairs; the encoder reads every pair, one learned
vector scores each pair's [CLS] vector, and a softmax over the four scores is trained
with cross-entropy. Reads SWAG's own CSV files from --data_dir: train.csv, val.csv (dev),
test.csv (no labels).

  python run_swag.py --data_dir=$SWAG_DIR --vocab_file=$BERT_DIR/vocab.txt     --bert_config_file=$BERT_DIR/bert_config.json     --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval     --learning_rate=2e-5 --num_train_epochs=3 --train_batch_size=16 --output_dir=/tmp/swag

Outputs in --output_dir: checkpoints, eval_results.txt (eval_accuracy, eval_loss,
global_step), dev_predictions.csv and, with --do_predict, test_predictions.csv (id,
predicted ending, the four probabilities).

The command is bert/cli/run_swag.py.
"""

from absl import app

from bert.cli import run_swag

if __name__ == "__main__":
  app.run(run_swag.main)
