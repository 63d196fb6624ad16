"""BERT fine-tuning on SWAG (multiple choice), as in the paper's Section 4.4 / Table 4.

The command is bert/cli/run_swag.py (`--help` shows its flags; installed, it is also
`bert-run-swag`).
"""

from bert.cli import run_swag

if __name__ == "__main__":
  run_swag.run()
