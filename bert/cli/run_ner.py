"""BERT on CoNLL-2003 named-entity recognition, fine-tuned or feature-based (paper Table 7).

--mode=finetune trains the whole encoder with one output layer on every token;
--mode=feature freezes it, caches its activations (--feature_layers) once per split in
<output_dir>/feature_cache and trains a two-layer BiLSTM on them. docs/ner_swag.md shows
the command and the outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.tagging import tagging_options
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_training_flags()

flags_common.define_conll_file_flags(data_dir_help="Folder with the CoNLL-2003 files.")
flags_common.define_flags(
    tagging_options.NerOptions,
    ("entity_types", "mode", "feature_layers", "lstm_units", "feature_learning_rate",
     "feature_cache_dir", "feature_batch_size", "dropout_rate"),
    helps={"dropout_rate": "--mode=finetune: dropout before the token classifier."})


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    settings = flags_common.settings_from_flags(tagging_options.NerOptions, FLAGS)
    # The BiLSTM is trained from scratch at its own rate (--feature_learning_rate).
    options = flags_common.options_from_flags(
        FLAGS, **({"learning_rate": settings.feature_learning_rate}
                  if settings.mode == "feature" else {}))
    from bert.tagging import tagging_ner_task  # deferred: TensorFlow loads here, so --help stays fast
    tagging_ner_task.NerTask(options, settings).run()

run = launch.entry_point(main)

if __name__ == "__main__":
  run()
