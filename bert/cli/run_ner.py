"""BERT on CoNLL-2003 named-entity recognition, fine-tuned or feature-based (paper Table 7).

--mode=finetune trains the whole encoder with one output layer on every token;
--mode=feature freezes it, caches its activations (--feature_layers) once per split in
<output_dir>/feature_cache and trains a two-layer BiLSTM on them. docs/ner_swag.md shows
the command and the outputs."""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=128)
flags_common.define_run_flags(train_batch_size=32, learning_rate=5e-5, num_train_epochs=3.0)
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

# tagging_ner_features.LAYER_CHOICES (not imported here: --help answers without TensorFlow).
LAYER_CHOICES = ("embeddings", "second_to_last", "last", "sum_last_four",
                 "concat_last_four", "sum_all")

flags_common.define_conll_file_flags()
flags.DEFINE_list("entity_types", ["PER", "ORG", "LOC", "MISC"],
                  "Entity types of the data (labels O, B-<type>, I-<type>).")
flags.DEFINE_enum("mode", "finetune", ["finetune", "feature"],
                  "finetune: train the encoder and a token classifier; feature: freeze the "
                  "encoder and train a two-layer BiLSTM on cached activations.")
flags.DEFINE_enum("feature_layers", "concat_last_four", list(LAYER_CHOICES),
                  "--mode=feature: which activations feed the BiLSTM. sum_* are plain "
                  "(equal-weight) sums of the layers' outputs.")
flags.DEFINE_integer("lstm_units", 768,
                     "--mode=feature: units of each direction of each BiLSTM layer.")
flags.DEFINE_float("feature_learning_rate", 1e-3,
                   "--mode=feature: peak learning rate of the BiLSTM (trained from scratch, "
                   "so far above the fine-tuning rates); --learning_rate is not used there.")
flags_common.define_path("feature_cache_dir", None,
                         "--mode=feature: where the frozen activations are cached (default "
                         "<output_dir>/feature_cache); runs that differ only in the BiLSTM's "
                         "settings can share one.", output="folder")
flags.DEFINE_integer("feature_batch_size", 32,
                     "--mode=feature: batch size of the frozen encoder pass.")
flags.DEFINE_float("dropout_rate", 0.1,
                   "--mode=finetune: dropout before the token classifier.")
flags_common.define_finetuning_flags(data_dir_help="Folder with the CoNLL-2003 files.")


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    flags_common.check_positive(FLAGS, ("feature_batch_size",))  # whatever the mode
    feature_mode = FLAGS.mode == "feature"
    if feature_mode and not 0 < FLAGS.feature_learning_rate < float("inf"):
      raise errors.UserError(f"--feature_learning_rate={FLAGS.feature_learning_rate}: "
                                   "must be a positive finite number")
    # The BiLSTM is trained from scratch at its own rate (--feature_learning_rate).
    options = flags_common.options_from_flags(
        FLAGS, **({"learning_rate": FLAGS.feature_learning_rate} if feature_mode else {}))
    from bert.tagging import tagging_ner_task  # deferred: TensorFlow loads here, so --help stays fast
    settings = flags_common.settings_from_flags(
        tagging_ner_task.NerSettings, FLAGS, entity_types=tuple(FLAGS.entity_types))
    tagging_ner_task.NerTask(options, settings).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
