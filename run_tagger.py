"""BERT tagging any column of a CoNLL file, one tag per word: part of speech, chunks, ...

The command is bert/cli/run_tagger.py (`--help` shows its flags; installed, it is also
`bert-run-tagger`).
"""

from bert.cli import run_tagger

if __name__ == "__main__":
  run_tagger.run()
