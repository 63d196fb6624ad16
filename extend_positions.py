"""Grows a pretrained model's positions: --max_position_embeddings=N past the model's own
(512 in Google's releases), for pretraining and fine-tuning on longer texts.

The command is bert/cli/extend_positions.py (`--help` shows its flags; installed, it is also
`bert-extend-positions`).
"""

from bert.cli import extend_positions

if __name__ == "__main__":
  extend_positions.run()
