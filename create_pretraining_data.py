"""Creates masked-LM / next-sentence pretraining TFRecords from plain text, fast.

The command is bert/cli/create_pretraining_data.py (`--help` shows its flags; installed, it is also
`bert-create-pretraining-data`).
"""

from bert.cli import create_pretraining_data

if __name__ == "__main__":
  create_pretraining_data.run()
