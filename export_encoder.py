"""Exports a pretrained BERT as a TF-Hub-style encoder SavedModel and its preprocessor.

Writes, side by side:
  <export_dir>/encoder       dict(input_word_ids, input_mask, input_type_ids) ->
                             dict(pooled_output, sequence_output, encoder_outputs,
                             default); fine-tunable (training=True: dropout on)
  <export_dir>/preprocessor  tokenize, bert_pack_inputs(segments, seq_length) and a
                             default signature: strings -> encoder inputs at
                             --seq_length

Both load with `tf.saved_model.load` in a process that imports only tensorflow and
tensorflow_text (see docs/export_encoder.md and hub_export.py for the interface).

  python export_encoder.py \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --do_lower_case=True --export_dir=/tmp/bert_hub
"""

import os
import time

from absl import app
from absl import flags
from absl import logging

import checkpoints
import flags_common
import hub_export
import modeling
import script_utils
import tokenization

flags_common.define_model_flags(max_seq_length=hub_export.DEFAULT_SEQ_LENGTH,
                                require_vocab=True)
flags_common.define_runtime_flags()
flags.DEFINE_string(
    "export_dir", None,
    "Directory to write the two SavedModels into, as <export_dir>/encoder and "
    "<export_dir>/preprocessor. Must not exist or be empty, unless --overwrite.")
flags.DEFINE_integer(
    "seq_length", None,
    "Sequence length of the preprocessor's default signature and the default of its "
    "bert_pack_inputs. Default: --max_seq_length (128).")
flags.DEFINE_bool("overwrite", False, "Replace an existing non-empty --export_dir.")
flags.mark_flag_as_required("export_dir")

FLAGS = flags.FLAGS


def _seq_length():
  max_seq_length_set = FLAGS["max_seq_length"].present
  if FLAGS.seq_length is None:
    return FLAGS.max_seq_length
  if max_seq_length_set and FLAGS.seq_length != FLAGS.max_seq_length:
    raise script_utils.UserError(
        f"--seq_length={FLAGS.seq_length} and --max_seq_length={FLAGS.max_seq_length} "
        "disagree; pass only one of them")
  return FLAGS.seq_length


def main(_):
  flags_common.define_runtime_flags()
  with script_utils.report_user_errors(FLAGS.verbose):
    if FLAGS.verbose:
      logging.set_verbosity(logging.DEBUG)
    start = time.time()
    script_utils.check_input_file(FLAGS.vocab_file, "vocab_file")
    if not FLAGS.init_checkpoint:
      raise script_utils.UserError(
          "--init_checkpoint is required: the weights to export (a Google bert_model.ckpt "
          "prefix, one of our checkpoints, or a Hugging Face model.safetensors)")
    config = checkpoints.load_bert_config(FLAGS.bert_config_file)
    seq_length = _seq_length()
    checkpoints.check_max_seq_length(seq_length, config, flag="seq_length")
    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case,
                                                  FLAGS.init_checkpoint)
    vocab = tokenization.load_vocab(FLAGS.vocab_file)
    checkpoints.check_vocab_matches_config(len(vocab), config, FLAGS.vocab_file)
    hub_export.check_export_dir(FLAGS.export_dir, FLAGS.overwrite)

    encoder = modeling.BertModel(config)
    report = checkpoints.load_checkpoint(encoder, FLAGS.init_checkpoint)
    logging.info("Loaded %d encoder variables (%s)", len(report["loaded"]),
                 report["format"])
    encoder_path, preprocessor_path = hub_export.export_encoder_and_preprocessor(
        FLAGS.export_dir, encoder, FLAGS.vocab_file, FLAGS.do_lower_case,
        seq_length=seq_length, overwrite=FLAGS.overwrite, log=logging.info)
    logging.info("Wrote %s and %s in %.0f s", os.path.abspath(encoder_path),
                 os.path.abspath(preprocessor_path), time.time() - start)


if __name__ == "__main__":
  app.run(main)
