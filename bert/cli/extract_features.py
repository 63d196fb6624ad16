"""Extract pre-computed feature vectors from BERT: the original's extract_features.py.

One JSON line per input line with the requested layers' activations for every real
token, in the original's format (bert/extraction); the original README's command runs
unchanged. Batches are padded to their own longest example: padded positions get -10000
in the attention mask, so they change nothing in the real tokens' values."""

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors
from bert.utils import input_checks

flags_common.define_model_flags()
flags_common.define_normalize_flag("before tokenizing")
flags_common.define_tpu_flags()
flags_common.define_runtime_flags()
flags_common.define_path("input_file", None,
                         "Input text: one example per line, a pair as 'text_a ||| text_b'.")
flags_common.define_path("output_file", None, "Output JSON-lines file.", output="file")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma-separated encoder layers to output (-1 is the last).")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Accepted for compatibility with the original; lookups are gathers here.")
flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint"])

FLAGS = flags.FLAGS


def main(_):
  logging.set_verbosity(logging.INFO)
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    flags_common.check_positive(FLAGS, ("batch_size",))
    if FLAGS.use_tpu:
      raise errors.UserError(
          "--use_tpu: feature extraction runs on CPU/GPU here; drop --use_tpu")
    input_checks.check_input_file(FLAGS.input_file, "input_file", allow_empty=True)
    input_checks.check_input_file(FLAGS.vocab_file, "vocab_file")
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.extraction import extraction_activations
    count = extraction_activations.extract_file(
        FLAGS.input_file, FLAGS.output_file, FLAGS.vocab_file, FLAGS.do_lower_case,
        FLAGS.bert_config_file, FLAGS.init_checkpoint, FLAGS.layers, FLAGS.max_seq_length,
        FLAGS.batch_size, normalize=flags_common.normalize_option(FLAGS.normalize))
    logging.info("Wrote %d examples to %s", count, FLAGS.output_file)


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
