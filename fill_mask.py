"""Fills in each [MASK] of raw text: the top-k tokens and probabilities, as JSON lines.

The command is bert/cli/fill_mask.py (`--help` shows its flags; installed, it is also
`bert-fill-mask`).
"""

from bert.cli import fill_mask

if __name__ == "__main__":
  fill_mask.run()
