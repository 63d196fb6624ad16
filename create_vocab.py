"""Learns a WordPiece vocab.txt (and a matching bert_config.json) from a text corpus.

The original release never shipped a way to make a vocabulary. This script learns one
with tensorflow-text's WordPiece vocabulary learner, from the pretraining corpus format
(one sentence a line, blank lines between documents; comma-separated files and globs):

  python create_vocab.py --input_file=corpus_ko.txt --output_file=ko/vocab.txt \
    --vocab_size=32000 --do_lower_case=False

Words are split by this project's BasicTokenizer (tokenization.py) with the same
--do_lower_case, so FullTokenizer and FastTokenizer split text exactly as the learner
saw it. The vocabulary is laid out like Google's: [PAD] (id 0), [unused0]..[unused98],
[UNK], [CLS], [SEP], [MASK] (ids 100-103 with the default --num_unused=99), any further
[unusedN] tokens, then the learned tokens (single characters first, both bare and ##).

A bert_config.json with BERT-Base's architecture (or that of --bert_config_template)
and the written vocab_size goes beside the vocabulary (--output_config_file).
Every --holdout_every-th line is kept out of learning; the summary reports the [UNK]
rate of the new vocabulary on those lines (with a warning above a few percent).

Before learning, a corpus check (corpus_check.py) prints a summary block of a sample:
caseless scripts under --do_lower_case=True (Hangul syllables come apart into jamo),
decomposed (NFD) text, paragraph-a-line corpora. --check_only stops there.
--normalize=nfc (opt-in; the original does not normalise) puts every line in NFC form
before counting; pass the same to create_pretraining_data.py.

The work is vocab_learning.py's (`create_vocab`); this script is its flags and main().

The command is bert/cli/create_vocab.py.
"""

from absl import app
from absl import flags

from bert.cli import create_vocab

if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  app.run(create_vocab.main)
