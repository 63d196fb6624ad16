"""Prediction files from an export's LiteRT model, without TensorFlow (--do_predict's files).

The command is bert/cli/predict_litert.py (`--help` shows its flags; installed, it is also
`bert-predict-litert`).
"""

from bert.cli import predict_litert

if __name__ == "__main__":
  predict_litert.run()
