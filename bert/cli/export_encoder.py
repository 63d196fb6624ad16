"""Exports a pretrained BERT: TF-Hub-style SavedModels, or a Hugging Face model directory.

--format picks the writer (bert/formats/writers.py, a row per format): tfhub (the
default: encoder, preprocessor and the encoder's LiteRT models), huggingface (the
encoder and the head the checkpoint holds, under the class transformers' pipeline()
picks) or keras_hub (a fine-tuned classifier as a keras-hub preset).
docs/export_encoder.md says what each writes, how to load it, and the command."""

from bert.cli import launch

# This module's own imports load TensorFlow: the process is set up for it first.
launch.prepare(__name__)

# pylint: disable=g-import-not-at-top,wrong-import-position
import time

from absl import flags
from absl import logging

from bert.cli import flags_common
from bert.formats import tfhub_modules
from bert.formats import writers
from bert.training import export_loading
from bert.training import model_config
from bert.utils import errors
from bert.utils import paths
from bert.utils import input_checks

flags_common.define_model_flags(max_seq_length=tfhub_modules.DEFAULT_SEQ_LENGTH,
                                require_vocab=True)
flags_common.define_runtime_flags()
flags_common.define_normalize_flag("in the preprocessor, before tokenizing (--format=tfhub)")
flags.DEFINE_enum("format", "tfhub", list(writers.WRITERS), writers.format_help())
flags_common.define_path(
    "export_dir", None,
    "Directory to write into: <export_dir>/encoder and <export_dir>/preprocessor "
    "(--format=tfhub), the Hugging Face files (--format=huggingface) or the keras-hub "
    "preset (--format=keras_hub). Must not exist or be empty, unless --overwrite.",
    output="folder")
flags.DEFINE_integer(
    "seq_length", None,
    "Sequence length of the preprocessor's default signature and the default of its "
    "bert_pack_inputs (--format=tfhub), or the keras-hub preprocessor's "
    "sequence_length (--format=keras_hub). Default: --max_seq_length (128).")
flags.DEFINE_bool("overwrite", False, "Replace an existing non-empty --export_dir.")
flags_common.define_litert_flag()
flags.mark_flag_as_required("export_dir")

FLAGS = flags.FLAGS


def main(_):
  flags_common.define_runtime_flags()
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    if FLAGS.verbose:
      logging.set_verbosity(logging.DEBUG)
    start = time.time()
    input_checks.check_input_file(FLAGS.vocab_file, "vocab_file")
    if not FLAGS.init_checkpoint:
      raise errors.UserError(
          "--init_checkpoint is required: the weights to export (a Google bert_model.ckpt "
          "prefix, one of our checkpoints, or a Hugging Face model.safetensors)")
    config = model_config.load_bert_config(FLAGS.bert_config_file)
    seq_length = export_loading.resolve_seq_length(
        FLAGS.format, FLAGS.seq_length, FLAGS.max_seq_length, FLAGS["seq_length"].present,
        FLAGS["max_seq_length"].present)
    normalize = flags_common.normalize_option(FLAGS.normalize)
    export_loading.check_export(
        FLAGS.format, FLAGS.export_dir, config, FLAGS.init_checkpoint, FLAGS.vocab_file,
        FLAGS.do_lower_case, seq_length, overwrite=FLAGS.overwrite, normalize=normalize,
        litert=FLAGS.litert if FLAGS["litert"].present else None)
    source = export_loading.source(config, FLAGS.init_checkpoint, FLAGS.vocab_file,
                                   FLAGS.do_lower_case, seq_length, normalize, FLAGS.litert)
    writer = writers.WRITERS[FLAGS.format]
    writer(FLAGS.export_dir, source, overwrite=FLAGS.overwrite)
    logging.info("Wrote %s in %.0f s",
                 " and ".join(map(paths.abspath, writer.paths(FLAGS.export_dir))),
                 time.time() - start)


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
