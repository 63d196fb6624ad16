"""Extract pre-computed feature vectors from BERT: the original's extract_features.py.

Reads one example a line (`text_a` or `text_a ||| text_b`), runs the encoder, and writes
one JSON line per example with the activations of the requested layers for every real
token ([CLS] and [SEP] included), values rounded to 6 decimals, in the original's format:

  {"linex_index": 0, "features": [{"token": "[CLS]", "layers": [{"index": -1,
   "values": [...]}, ...]}, ...]}

Example (the original README's command runs unchanged):

  python extract_features.py     --input_file=/tmp/input.txt --output_file=/tmp/output.jsonl     --vocab_file=$BERT_BASE_DIR/vocab.txt     --bert_config_file=$BERT_BASE_DIR/bert_config.json     --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt     --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

Batches are padded to their own longest example, not to max_seq_length: padded positions
get -10000 in the attention mask and so change nothing in the real tokens' values.

The command is bert/cli/extract_features.py.
"""

from absl import app

from bert.cli import extract_features

if __name__ == "__main__":
  app.run(extract_features.main)
