"""BERT fine-tuning for multi-label classification: any number of labels per text.

One sigmoid per label on the pooled [CLS] vector (the classifier's head and weights),
trained with sigmoid cross-entropy; a label is predicted where its probability reaches
--threshold. For tagging data sets such as GoEmotions or toxic-comment data, and the
entity types of CoNLL-2003 sentences (tools/conll_entity_types.py writes them).

--data_dir holds labels.txt (one label per line), train.tsv, dev.tsv and test.tsv, each
line `text<TAB>labels` with the labels comma-separated (empty: no label); test.tsv may
hold the text alone. See docs/multilabel.md.

  python run_multilabel.py --data_dir=$DATA --vocab_file=$BERT_DIR/vocab.txt     --bert_config_file=$BERT_DIR/bert_config.json     --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval --do_predict     --max_seq_length=64 --learning_rate=5e-5 --num_train_epochs=3 --output_dir=/tmp/ml

Outputs in --output_dir: checkpoints, eval_results.txt (eval_loss, eval_accuracy =
subset accuracy, micro/macro F1, F1 per label, global_step), test_results.tsv (predicted
labels and each label's probability per test line). --export_dir writes a SavedModel
with a token-id and a raw-text serving signature, and export_dir/ids/ with the token-id
signature alone (stock ops); --export_version=N writes TF Serving's versioned layout.

The command is bert/cli/run_multilabel.py.
"""

from absl import app

from bert.cli import run_multilabel

if __name__ == "__main__":
  app.run(run_multilabel.main)
