"""Learns a WordPiece vocab.txt (and a matching bert_config.json) from a text corpus.

The command is bert/cli/create_vocab.py (`--help` shows its flags; installed, it is also
`bert-create-vocab`).
"""

from bert.cli import create_vocab

if __name__ == "__main__":
  create_vocab.run()
