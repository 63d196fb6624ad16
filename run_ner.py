"""BERT on CoNLL-2003 named-entity recognition, fine-tuned or feature-based (paper Table 7).

The command is bert/cli/run_ner.py (`--help` shows its flags; installed, it is also
`bert-run-ner`).
"""

from bert.cli import run_ner

if __name__ == "__main__":
  run_ner.run()
