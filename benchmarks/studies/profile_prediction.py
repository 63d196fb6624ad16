"""Profile: where run_classifier's prediction time goes in float32 and bfloat16, per op
type, and what freezing the weights into constants would change.

  python -m benchmarks.studies.profile_prediction [--sentences=1000] [--frozen]
      [--fixed_padding]

For each --dtype (bfloat16 only on a CPU with its units) builds run_classifier's model of
the shared MiniLM as finetune.run builds it (in that --dtype's precision), predicts
the first --sentences SST-2 train sentences through classifier_task.predict_logits
(predict_batches, evaluation.predict: batch 32, per-batch padding, file order) once to
trace, times the best of two more passes, then records one pass with TensorFlow's
profiler and sums the op time of each op type over the threads that run ops.
--fixed_padding: every batch padded to 128, as run_classifier.py --fixed_padding.
--frozen: also the same batches through the forward pass with its variables converted to
constants (convert_variables_to_constants_v2: no per-batch weight casts, oneDNN's weight
cache), with the time the freezing itself takes.
"""

import argparse
import os
import time

from benchmarks.parts import machine
from benchmarks.parts import profiler_trace
from benchmarks.parts import sst2
from bert.utils import cpu_choice


def profile(dtype, sentences, frozen, fixed_padding=False):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_task  # pylint: disable=g-import-not-at-top
  model = sst2.classifier_model(os.path.join(sst2.MODEL_DIR, "bert_model.ckpt"), dtype)
  tokenizer = fast_tokenization.FastTokenizer(sst2.MODEL_VOCAB, True)
  examples = classifier_data.Sst2Processor().get_train_examples(sst2.SST2)[:sentences]

  def run():
    classifier_task.predict_logits(model, examples, ["0", "1"], tokenizer, sst2.SEQ,
                                   sst2.BATCH, fixed_padding=fixed_padding, what="profile")

  run()  # traces
  best = float("inf")
  for _ in range(2):
    started = time.perf_counter()
    run()
    best = min(best, time.perf_counter() - started)
  print(f"--dtype={dtype}: {sentences:,} sentences in {best:.2f} s "
        f"({sentences / best:.0f} sentences/s, best of 2 after a traced pass)")
  profiler_trace.print_op_times(profiler_trace.op_times(run))
  if frozen:
    from tensorflow.python.framework import convert_to_constants  # pylint: disable=g-import-not-at-top
    names = sorted(t.name for t in model.inputs)
    forward = tf.function(lambda inputs: model(inputs, training=False))
    concrete = forward.get_concrete_function(
        {n: tf.TensorSpec([None, None], tf.int32) for n in names})
    batches = list(classifier_features.predict_batches(
        examples, ["0", "1"], tokenizer, sst2.SEQ, sst2.BATCH, fixed_padding=fixed_padding))
    started = time.perf_counter()
    constants = convert_to_constants.convert_variables_to_constants_v2(concrete)
    constants(*[tf.convert_to_tensor(batches[0][n]) for n in names])
    freeze = time.perf_counter() - started

    def passes(call):
      fastest = float("inf")
      for _ in range(3):
        started = time.perf_counter()
        for batch in batches:
          call(batch)
        fastest = min(fastest, time.perf_counter() - started)
      return fastest

    variables = passes(lambda b: forward({n: tf.convert_to_tensor(b[n]) for n in names}))
    consts = passes(lambda b: constants(*[tf.convert_to_tensor(b[n]) for n in names]))
    print(f"  forward alone: variables {variables:.2f} s, frozen constants {consts:.2f} s "
          f"({variables / consts:.2f}x); freezing and its first call {freeze:.1f} s")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sentences", type=int, default=1000)
  parser.add_argument("--frozen", action="store_true")
  parser.add_argument("--fixed_padding", action="store_true")
  args = parser.parse_args()
  print(f"{machine.cpu_model()}; {machine.load_average()}")
  dtypes = ["float32"] + (["bfloat16"] if cpu_choice.this_cpu().has_bfloat16 else [])
  for dtype in dtypes:
    profile(dtype, args.sentences, args.frozen, args.fixed_padding)


if __name__ == "__main__":
  main()
