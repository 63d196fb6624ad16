"""BERT tagging any column of a CoNLL file, one tag per word: part of speech, chunks, ...

One output layer on top of every token, fine-tuned with the encoder; a word's label and
prediction sit on its first WordPiece, long sentences are cut into overlapping windows
(each word predicted once, where it has the most context). --tag_column picks the column
(counted from 1, the word; CoNLL-2003: 2 part of speech, 3 chunk, 4 entity), --iob says
its tags are IOB chunks (chunks, entities: learned as IOB2, written back in the file's
scheme, scored by span F1 as conlleval scores them); otherwise every tag is a label as
written, scored by accuracy per word.

  python run_tagger.py --data_dir=../shared/data/conll2003 --tag_column=2     --vocab_file=$BERT_DIR/vocab.txt --bert_config_file=$BERT_DIR/bert_config.json     --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval --do_predict     --output_dir=/tmp/pos

Reads <data_dir>/train.txt, valid.txt, test.txt (or CoNLL's eng.train, eng.testa,
eng.testb). The labels are the tags found in those files (or --labels). Writes
eval_results.txt (eval_accuracy, eval_loss, eval_sentences; with --iob also eval_f1,
eval_precision, eval_recall, eval_f1_<TYPE>), dev_predictions.txt and
test_predictions.txt in conlleval's input format (word, the file's other columns, gold
tag, predicted tag), with --iob dev_conlleval.txt / test_conlleval.txt, and for a
labelled test file test_results.txt. Entities with the paper's feature-based mode:
run_ner.py.

The command is bert/cli/run_tagger.py.
"""

from absl import app

from bert.cli import run_tagger

if __name__ == "__main__":
  app.run(run_tagger.main)
