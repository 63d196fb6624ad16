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
from bert.extraction import extraction_options
from bert.utils import errors

flags_common.define_extraction_flags(
    extraction_options.FillMaskOptions, ("top_k", "max_masks", "batch_size"),
    "Input text: one text a line, with [MASK] where a word should be predicted.")

FLAGS = flags.FLAGS


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    options = flags_common.extraction_inputs(FLAGS, extraction_options.FillMaskOptions)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.extraction import extraction_fill_mask  # pylint: disable=g-import-not-at-top
    count = extraction_fill_mask.fill_mask_file(
        FLAGS.input_file, FLAGS.output_file, FLAGS.vocab_file, FLAGS.do_lower_case,
        FLAGS.bert_config_file, FLAGS.init_checkpoint, options,
        normalize=flags_common.normalize_option(FLAGS.normalize))
    logging.info("Wrote %d texts to %s", count, FLAGS.output_file)


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
