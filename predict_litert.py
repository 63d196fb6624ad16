"""Prediction files from a LiteRT model of an export (--export_dir's litert/ folder),
without TensorFlow: the same test_results.tsv as run_classifier.py / run_multilabel.py
--do_predict, from the pure-Python tokenizer and the ai-edge-litert runtime.

  python predict_litert.py --model=/tmp/mrpc_export/litert/model_int8.tflite \
    --task_name=mrpc --data_dir=$GLUE_DIR/MRPC --output_dir=/tmp/mrpc_litert

The command is bert/cli/predict_litert.py.
"""

from absl import app

from bert.cli import predict_litert

if __name__ == "__main__":
  app.run(predict_litert.main)
