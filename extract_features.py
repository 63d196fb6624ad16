"""Extract pre-computed feature vectors from BERT: the original's extract_features.py.

The command is bert/cli/extract_features.py (`--help` shows its flags; installed, it is also
`bert-extract-features`).
"""

from bert.cli import extract_features

if __name__ == "__main__":
  extract_features.run()
