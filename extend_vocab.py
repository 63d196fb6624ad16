"""Puts new words into a vocab.txt in place of its [unusedN] entries, in order.

The command is bert/cli/extend_vocab.py (`--help` shows its flags; installed, it is also
`bert-extend-vocab`).
"""

from bert.cli import extend_vocab

if __name__ == "__main__":
  extend_vocab.run()
