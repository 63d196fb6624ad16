"""BERT on CoNLL-2003 named-entity recognition, fine-tuned or feature-based (paper Table 7).

--mode=finetune (Table 7, top): the whole encoder is trained with one output layer on
top of every token; a word's label and prediction sit on its first WordPiece.

--mode=feature (Table 7, bottom): the encoder is frozen. Its activations (a choice of
layers, --feature_layers) are computed once per split and cached as TFRecords in
<output_dir>/feature_cache; a randomly initialised two-layer BiLSTM (--lstm_units per
direction) and an output layer are trained on them.

  python run_ner.py --data_dir=../shared/data/conll2003     --vocab_file=$BERT_DIR/vocab.txt --bert_config_file=$BERT_DIR/bert_config.json     --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval --do_predict     --learning_rate=5e-5 --num_train_epochs=3 --output_dir=/tmp/ner

Reads <data_dir>/train.txt, valid.txt, test.txt (or CoNLL's eng.train, eng.testa,
eng.testb), IOB1 or IOB2. Writes eval_results.txt (eval_f1, eval_precision, eval_recall,
eval_accuracy, eval_loss, per-type eval_f1_<TYPE>, global_step), dev_predictions.txt and
test_predictions.txt in conlleval's input format (word, the file's other columns, gold
tag, predicted tag), dev_conlleval.txt / test_conlleval.txt (conlleval's report) and,
for a labelled test file, test_results.txt (test_f1, ...).

The command is bert/cli/run_ner.py.
"""

from absl import app

from bert.cli import run_ner

if __name__ == "__main__":
  app.run(run_ner.main)
