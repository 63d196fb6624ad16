"""CoNLL-2003 named-entity recognition (paper Table 7) as a finetune.Task.

NER is tagging of IOB chunk tags (tagging_task.TaggingTask with iob=True, the entity tags
in the last column), in two modes: "finetune" trains the whole encoder with one output
layer on every token; "feature" freezes it, computes its activations once per split in
`read_data` (loading --init_checkpoint itself: loads_init_checkpoint is False) and trains
only a BiLSTM and an output layer on them (tagging_ner_features.py). docs/ner_swag.md
lists the outputs."""

from absl import logging
import keras

from bert import input_pipeline
from bert import modeling
from bert.tagging import tagging_ner_data
from bert.tagging import tagging_ner_features
from bert.tagging import tagging_options
from bert.tagging import tagging_task
from bert.training import checkpoints
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks


# Declared in tagging_options (no TensorFlow there: run_ner makes its flags from it).
NerOptions = tagging_options.NerOptions


class NerTask(tagging_task.TaggingTask):
  """Entity tagging of CoNLL files, fine-tuned or feature-based (NerOptions.mode)."""

  name = "NER"

  def __init__(self, options, settings):
    super().__init__(options, settings)
    self.feature_mode = settings.mode == "feature"
    self.loads_init_checkpoint = not self.feature_mode
    types = input_checks.check_label_list(
        [t.strip() for t in settings.entity_types if t.strip()],
        f"--entity_types={','.join(settings.entity_types)}", "each entity type once")
    self.label_list = tagging_ner_data.make_label_list(types)
    self.feature_dim = None  # feature mode: width of the cached activations

  # ------------------------------------------------------------------ data

  def read_data(self, config):
    settings = self.settings
    if settings.mode not in ("finetune", "feature"):
      raise errors.UserError(f"--mode={settings.mode}: use finetune or feature")
    if self.feature_mode:
      for flag in ("lstm_units", "feature_batch_size"):
        if getattr(settings, flag) < 1:
          raise errors.UserError(f"--{flag}={getattr(settings, flag)}: must be at "
                                       "least 1")
      tagging_ner_features.check_layer_choice(settings.feature_layers, config.num_hidden_layers)
      self.feature_dim = tagging_ner_features.feature_dim(settings.feature_layers,
                                                  config.hidden_size)
    super().read_data(config)
    self.config = config

  def prepare_data(self):
    # After the driver's checks of the data and flags: the cache costs an encoder pass.
    if self.feature_mode:
      self._cache_activations(self.config)

  not_chunk_tags_remedy = ("run_ner.py learns entity tags (O, B-<type>, I-<type>) from "
                           "the last column; run_tagger.py --tag_column learns other tags")

  def check_labels(self, examples, path):
    tagging_ner_data.check_labels(examples, self.label_list, path)

  def _cache_activations(self, config):
    """Feature mode: every split's frozen activations, written once to the cache."""
    settings, options = self.settings, self.options
    cache_dir = settings.feature_cache_dir or paths.join(options.output_dir,
                                                           "feature_cache")
    atomic_output.ensure_output_dir(cache_dir, "feature_cache_dir")
    # Seeded as the driver seeds the trained model: a random encoder (no checkpoint)
    # gives the same activations on every run.
    keras.utils.set_random_seed(int(options.seed))
    # float32, as the features always were (they are read before the run's precision
    # applies, and the cache's name does not depend on it).
    encoder = modeling.BertModel(config, causal=options.ltr, dtype="float32")
    if options.init_checkpoint:
      checkpoints.load_checkpoint(encoder, options.init_checkpoint)
    else:
      logging.warning("No --init_checkpoint: features come from a random encoder")
    for split in self.splits.values():
      split.cache = tagging_ner_features.cache_path(cache_dir, split.name, settings.feature_layers,
                                            self._fingerprint(split, config))
      if file_io.exists(split.cache):
        logging.info("Using cached %s features: %s", split.name, split.cache)
        continue
      dataset = tagging_task.make_dataset(split.arrays, settings.feature_batch_size, False,
                                          multiple=input_pipeline.TRAINING_LENGTH_MULTIPLE)
      tagging_ner_features.write_feature_cache(split.cache, encoder, dataset,
                                       settings.feature_layers, len(split.features),
                                       label=f"{split.name} features")
      logging.info("Cached %s features in %s", split.name, split.cache)

  def _fingerprint(self, split, config):
    """Hash of everything that determines a split's cached activations."""
    settings, options = self.settings, self.options
    return tagging_ner_data.settings_fingerprint(
        data=tagging_ner_features.file_identity(split.path),
        checkpoint=tagging_ner_features.checkpoint_identity(options.init_checkpoint),
        config=config.to_dict(), vocab=file_io.realpath(options.vocab_file),
        lower=options.do_lower_case, max_seq_length=options.max_seq_length,
        doc_stride=settings.doc_stride,
        limit=(options.max_train_examples, options.max_eval_examples),
        layers=settings.feature_layers, ltr=options.ltr, types=tuple(self.label_list))

  def dataset(self, split, batch_size, training_data, input_context=None):
    if self.feature_mode:
      return tagging_ner_features.feature_dataset(split.cache, self.feature_dim, batch_size,
                                          training_data, seed=self.options.seed,
                                          input_context=input_context)
    return super().dataset(split, batch_size, training_data, input_context)

  # ------------------------------------------------------------------ model

  def head_info(self):
    info = super().head_info()
    if self.feature_mode:
      info["head"] = "feature_ner"
    return info

  def build_model(self, config):
    if self.feature_mode:
      return tagging_ner_features.build_bilstm_tagger(
          self.feature_dim, len(self.label_list), self.settings.lstm_units,
          dtype=self.options.precision.policy)
    return super().build_model(config)
