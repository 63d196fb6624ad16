"""Exports a pretrained BERT: TF-Hub-style SavedModels, or a Hugging Face model directory.

--format=tfhub (the default) writes, side by side:
  <export_dir>/encoder       dict(input_word_ids, input_mask, input_type_ids) ->
                             dict(pooled_output, sequence_output, encoder_outputs,
                             default); fine-tunable (training=True: dropout on)
  <export_dir>/preprocessor  tokenize, bert_pack_inputs(segments, seq_length) and a
                             default signature: strings -> encoder inputs at
                             --seq_length

Both load with `tf.saved_model.load` in a process that imports only tensorflow and
tensorflow_text (see docs/export_encoder.md and tfhub_modules.py for the interface).

--format=huggingface writes <export_dir>/model.safetensors, config.json, vocab.txt and
tokenizer_config.json, for transformers' `BertModel.from_pretrained(export_dir)` and
`BertTokenizer.from_pretrained(export_dir)`: the encoder with its pooler, and the
masked-LM and next-sentence heads when the checkpoint holds them (hugging_face.py).

  python export_encoder.py \\
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \\
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \\
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \\
    --do_lower_case=True --export_dir=/tmp/bert_hub
"""

import runtime_log  # first: quiets TensorFlow's runtime log before TensorFlow loads

runtime_log.quiet()

# pylint: disable=g-import-not-at-top,wrong-import-position
import os
import time

from absl import app
from absl import flags
from absl import logging

import checkpoints
import flags_common
import tfhub_modules
import hugging_face
import modeling
import script_utils
import tokenization

flags_common.define_model_flags(max_seq_length=tfhub_modules.DEFAULT_SEQ_LENGTH,
                                require_vocab=True)
flags_common.define_runtime_flags()
flags_common.define_normalize_flag("in the preprocessor, before tokenizing (--format=tfhub)")
flags.DEFINE_enum(
    "format", "tfhub", ["tfhub", "huggingface"],
    "tfhub: the encoder and preprocessor SavedModels (TF Hub's BERT API). huggingface: "
    "model.safetensors, config.json, vocab.txt and tokenizer_config.json that "
    "transformers' BertModel / BertForPreTraining and BertTokenizer load.")
flags.DEFINE_string(
    "export_dir", None,
    "Directory to write into: <export_dir>/encoder and <export_dir>/preprocessor "
    "(--format=tfhub), or the Hugging Face files (--format=huggingface). Must not exist "
    "or be empty, unless --overwrite.")
flags.DEFINE_integer(
    "seq_length", None,
    "Sequence length of the preprocessor's default signature and the default of its "
    "bert_pack_inputs. Default: --max_seq_length (128).")
flags.DEFINE_bool("overwrite", False, "Replace an existing non-empty --export_dir.")
flags.mark_flag_as_required("export_dir")

FLAGS = flags.FLAGS


def _seq_length():
  max_seq_length_set = FLAGS["max_seq_length"].present
  if FLAGS.format == "huggingface":
    for name in ("seq_length", "max_seq_length"):
      if FLAGS[name].present:
        raise script_utils.UserError(
            f"--{name}={FLAGS[name].value} applies to --format=tfhub only; a Hugging Face "
            "export takes the model's max_position_embeddings as model_max_length")
    return None
  if FLAGS.seq_length is None:
    return FLAGS.max_seq_length
  if max_seq_length_set and FLAGS.seq_length != FLAGS.max_seq_length:
    raise script_utils.UserError(
        f"--seq_length={FLAGS.seq_length} and --max_seq_length={FLAGS.max_seq_length} "
        "disagree; pass only one of them")
  return FLAGS.seq_length


def _export_hugging_face(config):
  """Loads the checkpoint with both pretraining heads' places; writes what it holds."""
  model, _ = modeling.build_pretraining_model(config)
  report = checkpoints.load_checkpoint(model, FLAGS.init_checkpoint)
  names, architecture = hugging_face.exportable_names(report["loaded"])
  # BertModel: no pretraining head in the checkpoint (the encoder and pooler only).
  logging.info("Exporting %d weights as Hugging Face %s", len(names), architecture)
  left_out = sorted(set(report["loaded"]) - set(names)) + report["unused"]
  if left_out:
    logging.warning("Not exported (no place in Hugging Face's %s): %s", architecture,
                    ", ".join(left_out))
  hugging_face.write_hugging_face(
      FLAGS.export_dir, hugging_face.model_weights(model, names), config,
      FLAGS.vocab_file, FLAGS.do_lower_case, overwrite=FLAGS.overwrite, log=logging.info)


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
    if seq_length is not None:
      checkpoints.check_max_seq_length(seq_length, config, flag="seq_length")
    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case,
                                                  FLAGS.init_checkpoint)
    vocab = tokenization.load_vocab(FLAGS.vocab_file)
    checkpoints.check_vocab_matches_config(len(vocab), config, FLAGS.vocab_file)
    tfhub_modules.check_export_dir(FLAGS.export_dir, FLAGS.overwrite)
    if FLAGS.format == "huggingface":
      if flags_common.normalize_option(FLAGS.normalize):
        raise script_utils.UserError(
            f"--normalize={FLAGS.normalize} with --format=huggingface: Hugging Face's "
            "BertTokenizer has no NFC step, so the export would tokenize decomposed text "
            "differently from training; normalise the text before it reaches the tokenizer "
            "or export --format=tfhub")
      _export_hugging_face(config)
      logging.info("Wrote %s in %.0f s", os.path.abspath(FLAGS.export_dir),
                   time.time() - start)
      return

    encoder = modeling.BertModel(config)
    report = checkpoints.load_checkpoint(encoder, FLAGS.init_checkpoint)
    logging.info("Loaded %d encoder variables (%s)", len(report["loaded"]),
                 report["format"])
    encoder_path, preprocessor_path = tfhub_modules.export_encoder_and_preprocessor(
        FLAGS.export_dir, encoder, FLAGS.vocab_file, FLAGS.do_lower_case,
        seq_length=seq_length, overwrite=FLAGS.overwrite, log=logging.info,
        normalize=flags_common.normalize_option(FLAGS.normalize))
    logging.info("Wrote %s and %s in %.0f s", os.path.abspath(encoder_path),
                 os.path.abspath(preprocessor_path), time.time() - start)


if __name__ == "__main__":
  app.run(main)
