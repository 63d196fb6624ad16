"""Exports a pretrained BERT: TF-Hub-style SavedModels, or a Hugging Face model directory.

The command is bert/cli/export_encoder.py (`--help` shows its flags; installed, it is also
`bert-export-encoder`).
"""

from bert.cli import export_encoder

if __name__ == "__main__":
  export_encoder.run()
