"""Creates masked-LM / next-sentence pretraining TFRecords from plain text, fast.

  python create_pretraining_data.py \
    --input_file=../shared/data/corpora/sample_text.txt \
    --output_file=out/tf_examples.tfrecord \
    --vocab_file=../shared/data/vocab/uncased_vocab.txt \
    --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
    --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

Input: one sentence a line, a blank line between documents; several files comma-separated
or globbed. Output: tf.train.Examples with the original's seven features, round-robin over
the comma-separated `--output_file` list (or `--num_output_shards` files), readable by the
original run_pretraining.py and by ours.

The algorithm (the original's, restated for speed) lives in pretraining_data.py; its
docstring and docs/pretraining_data.md say what differs. The output bytes depend on the
seed only, not on --num_workers.

Before the run, a corpus check (corpus_check.py) prints a summary block of a sample: its
[UNK] rate with this vocabulary and case setting, caseless scripts under
--do_lower_case=True, decomposed (NFD) text, and paragraph-a-line corpora that would skew
the next-sentence pairs, each with a warning naming the likely cause. --check_only stops
there. Opt-in, not the original's: --normalize=nfc, --split_sentences=pysbd.

The command is bert/cli/create_pretraining_data.py.
"""

from absl import app

from bert.cli import create_pretraining_data

if __name__ == "__main__":
  app.run(create_pretraining_data.main)
