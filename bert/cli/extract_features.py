"""Extract pre-computed feature vectors from BERT: the original's extract_features.py.

One JSON line per input line with the requested layers' activations for every real
token, in the original's format (bert/extraction); the original README's command runs
unchanged. Batches are padded to their own longest example: padded positions get -10000
in the attention mask, so they change nothing in the real tokens' values."""

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.cli import launch
from bert.extraction import extraction_options
from bert.utils import errors

flags_common.define_extraction_flags(
    extraction_options.ExtractionOptions, ("batch_size",),
    "Input text: one example per line, a pair as 'text_a ||| text_b'.")
flags_common.define_tpu_flags()
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma-separated encoder layers to output (-1 is the last).")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Accepted for compatibility with the original; lookups are gathers here.")

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    if FLAGS.use_tpu:
      raise errors.UserError(
          "--use_tpu: feature extraction runs on CPU/GPU here; drop --use_tpu")
    options = flags_common.extraction_inputs(FLAGS, extraction_options.ExtractionOptions,
                                             allow_empty=True)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.extraction import extraction_activations
    count = extraction_activations.extract_file(
        FLAGS.input_file, FLAGS.output_file, FLAGS.vocab_file, FLAGS.do_lower_case,
        FLAGS.bert_config_file, FLAGS.init_checkpoint, FLAGS.layers, FLAGS.max_seq_length,
        options.batch_size, normalize=flags_common.normalize_option(FLAGS.normalize))
    logging.info("Wrote %d examples to %s", count, FLAGS.output_file)


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
