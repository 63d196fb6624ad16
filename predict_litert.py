"""Prediction files from a LiteRT model of an export, without TensorFlow.

The command is bert/cli/predict_litert.py (`--help` shows its flags; installed, it is also
`bert-predict-litert`).
"""

from bert.cli import predict_litert

if __name__ == "__main__":
  predict_litert.run()
