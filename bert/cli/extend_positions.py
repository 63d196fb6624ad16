"""Grows a pretrained model's positions: --max_position_embeddings=N past the model's own
(512 in Google's releases), for pretraining and fine-tuning on longer texts.

Writes --output_dir/bert_model.ckpt (Google's layout), bert_config.json with the new
max_position_embeddings and, given --vocab_file, a copy of the vocabulary: a folder every
script takes as --init_checkpoint/--bert_config_file/--vocab_file. The checkpoint is
read in any layout: Google's, a run's --output_dir or ckpt-N, Hugging Face's. By default
the new position rows repeat the trained ones in order (--new_rows=copy, Longformer's
recipe); every other weight is written byte for byte (optimizer slots are left out).
Then continue pretraining at the new length (run_pretraining.py --max_seq_length=N):
docs/pretraining.md#adapting-a-released-model."""

import json

from absl import flags
from absl import logging

from bert.adaptation import adaptation_options
from bert.cli import flags_common
from bert.cli import launch
from bert.training import run_options
from bert.utils import errors
from bert.utils import input_checks

flags_common.define_runtime_flags()
flags_common.define_flags(
    run_options.RunOptions, ("init_checkpoint", "bert_config_file", "vocab_file",
                             "output_dir", "seed"),
    helps={"init_checkpoint": "The model to grow: a Google TF1 checkpoint prefix "
                              "(bert_model.ckpt), a run's output_dir or ckpt-N, or a Hugging "
                              "Face model.safetensors file or folder.",
           "bert_config_file": "The model's bert_config.json.",
           "vocab_file": "Optional: the model's vocab.txt, copied into --output_dir beside "
                         "the grown model.",
           "output_dir": "Where to write bert_model.ckpt, bert_config.json (and vocab.txt): "
                         "a folder other than the checkpoint's.",
           "seed": "Random seed for --new_rows=random."},
    required=("init_checkpoint", "bert_config_file"))
flags_common.define_flags(adaptation_options.PositionOptions,
                          ("max_position_embeddings", "new_rows"))

FLAGS = flags.FLAGS


def main(_):
  logging.set_verbosity(logging.INFO)
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    for flag in ("bert_config_file",) + (("vocab_file",) if FLAGS.vocab_file else ()):
      input_checks.check_input_file(FLAGS[flag].value, flag)
    from bert.adaptation import adaptation_growth  # pylint: disable=g-import-not-at-top
    from bert.training import model_config  # pylint: disable=g-import-not-at-top
    options = flags_common.settings_from_flags(adaptation_options.PositionOptions, FLAGS)
    config = model_config.load_bert_config(FLAGS.bert_config_file)
    summary = adaptation_growth.extend_positions(
        FLAGS.init_checkpoint, config, FLAGS.output_dir, options,
        vocab_file=FLAGS.vocab_file)
    print(json.dumps(summary))


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
