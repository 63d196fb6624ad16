"""Fills in each [MASK] of raw text: the top-k tokens and probabilities, as JSON lines.

The predictions are a pretrained model's masked-LM head's. One text a line in
--input_file, with [MASK] written literally (in capitals) where a word should be
predicted; blank lines are skipped. The checkpoint must hold the
masked-LM head: run_pretraining.py's output_dir or its pretrained/bert_model.ckpt,
Google's pretrained release (cls/predictions), or a Hugging Face BertForMaskedLM /
BertForPreTraining folder. Each [MASK] is one WordPiece; each prediction is also shown
as the whole word it makes with the pieces around it (bert/extraction/extraction_fill_mask.py
gives the output's format)."""

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors
from bert.utils import input_checks

flags_common.define_model_flags()
flags_common.define_normalize_flag("before tokenizing")
flags_common.define_runtime_flags()
flags_common.define_path("input_file", None,
                         "Input text: one text a line, with [MASK] where a word should be "
                         "predicted.")
flags_common.define_path("output_file", None, "Output JSON-lines file.", output="file")
flags.DEFINE_integer("top_k", 5, "How many predictions to give for each [MASK].")
flags.DEFINE_integer("max_masks", 5,
                     "The most [MASK]s a line may hold; a line with more is refused.")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.mark_flags_as_required(["input_file", "output_file", "init_checkpoint"])

FLAGS = flags.FLAGS


def main(_):
  logging.set_verbosity(logging.INFO)
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    flags_common.check_positive(FLAGS, ("top_k", "max_masks", "batch_size"))
    input_checks.check_input_file(FLAGS.input_file, "input_file")
    input_checks.check_input_file(FLAGS.vocab_file, "vocab_file")
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.extraction import extraction_fill_mask  # pylint: disable=g-import-not-at-top
    settings = extraction_fill_mask.Settings(top_k=FLAGS.top_k, max_masks=FLAGS.max_masks,
                                         max_seq_length=FLAGS.max_seq_length,
                                         batch_size=FLAGS.batch_size)
    count = extraction_fill_mask.fill_mask_file(
        FLAGS.input_file, FLAGS.output_file, FLAGS.vocab_file, FLAGS.do_lower_case,
        FLAGS.bert_config_file, FLAGS.init_checkpoint, settings,
        normalize=flags_common.normalize_option(FLAGS.normalize))
    logging.info("Wrote %d texts to %s", count, FLAGS.output_file)


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
