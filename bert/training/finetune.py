"""The task layer: one small `Task` class per task, and one driver (`run`) that runs any of them.

Every command is its flag definitions plus a main() that builds its Task and calls
`run`. The driver does what every task shares, in one order (docs/ARCHITECTURE.md walks
through it), so that a flag like --use_tpu or --init_checkpoint means the same in every
script, and every split is read and checked before a model is built: a bad file fails
in seconds, not after hours of training. docs/adding_a_task.md is the recipe for a new
Task."""

import math

from absl import logging

from bert.formats import litert_metadata
from bert.formats import serving
from bert import modeling_config
from bert import optimization
from bert import tokenization
from bert.formats import checkpoint_files
from bert.training import best_checkpoint
from bert.training import checkpoints
from bert.training import evaluation
from bert.training import loop
from bert.training import model_config
from bert.training import strategies
from bert.utils import atomic_output
from bert.utils import cpu_choice
from bert.utils import file_io
from bert.utils import paths
from bert.utils import output_lock
from bert.utils import errors
from bert.utils import input_checks


class Task:
  """What a task supplies to the driver. Subclass it; the defaults say what is optional.

  Attributes a subclass may set:
    name: a short label for logs ("MRPC", "SQuAD").
    loads_init_checkpoint: False when --init_checkpoint is not loaded into the trained
      model by the driver (feature-based NER loads it into its frozen encoder itself).
    needs_vocab: False for tasks that read no text (pretraining reads TFRecords).
    exports: True when the task writes a SavedModel for --export_dir.

  A subclass supplies (see each method's docstring) read_data, num_train_examples,
  build_model, loss, train_dataset, evaluate, predict, and optionally export and
  after_training; it keeps its own task-specific settings (constructor arguments).
  """

  name = "task"
  loads_init_checkpoint = True
  needs_vocab = True
  exports = False  # True where the script has --export_dir
  # The folders of output_dir the run writes into: a killed run's temporaries there are
  # removed as output_dir's own are, when the next run takes the lock.
  output_subfolders = (best_checkpoint.FOLDER,)

  def head_info(self):
    """What the trained head means, saved with every checkpoint (JSON-able dict):

      task    the task's name (self.name)
      head    one of HEAD_KINDS
      labels  the label names, in the order of the head's outputs (classifier,
              multi_label, token_classification); absent where outputs are not labels
    plus anything else the task's outputs depend on (num_choices, ...). The driver saves
    it in every checkpoint of the run (checkpoints.RunCheckpoint `head_info`):
    export_encoder.py --format=huggingface reads the task and label names from there,
    and two runs whose head_info differs never share an output_dir (a resume or an
    evaluation into the other's is refused in one line). None: nothing recorded.
    """
    return None

  def __init__(self, options):
    self.options = options

  def run(self):
    """Runs this task with the driver (`finetune.run(task, task.options)`)."""
    run(self, self.options)

  # ------------------------------------------------------------------ data

  def read_data(self, config):
    """Reads and checks every split this run needs (options.do_train/do_eval/do_predict).

    Called once, before any model is built. `config` is the modeling.BertConfig. Raise
    errors.UserError (one line naming the file and line) on bad input.
    """
    raise NotImplementedError

  def num_train_examples(self):
    """Training examples (windows, features) per epoch: num_train_epochs -> steps."""
    raise NotImplementedError

  def num_segments(self):
    """How many segment ids the inputs use (called after read_data): 2 for text pairs
    ([CLS] A [SEP] B [SEP]), 1 for single texts. The driver refuses a config whose
    type_vocab_size is smaller before building anything."""
    return 2

  def train_dataset(self, input_context, batch_size):
    """tf.data.Dataset of training batches for one input pipeline, repeated forever.

    input_context: tf.distribute.InputContext (shard by input_pipeline_id when
    num_input_pipelines > 1). batch_size: the per-replica batch size; drop_remainder.
    Each element is a dict holding the model's inputs by name and what `loss` needs.
    """
    raise NotImplementedError

  # ------------------------------------------------------------------ model

  def build_model(self, config):
    """The keras.Model to train (called inside the strategy's scope)."""
    raise NotImplementedError

  def loss(self, features, outputs):
    """(per_example_loss float32 [B], {metric: (numerator, denominator)}) of one batch.

    The loop minimises sum(per_example_loss) / global_batch_size; metric pairs are
    float32 scalars summed over the batch (see training/loop.py).
    """
    raise NotImplementedError

  # ------------------------------------------------------------------ outputs

  def evaluate(self, model, strategy):
    """Evaluates the dev set(s); returns {name: float} for eval_results.txt.

    Most tasks predict batch by batch with evaluation.predict (one device, input order);
    strategy is there for tasks that evaluate with evaluation.evaluate (pretraining).

    The keys, the one convention every task follows, are the original's: `eval_loss`,
    `eval_accuracy` where it means something (counted over the same units as
    eval_loss), and the task's own metrics beside them (f1, exact_match, eval_f1,
    eval_matthews_corrcoef, ...). A task does not add `loss`: the driver writes it (=
    eval_loss, as the original's Estimator did) into eval_results.txt. TensorBoard gets
    the same values under the tags of their training twins (`evaluation.eval_tags`), so
    it draws the train and eval curves on one card; a loss's metric pair is therefore named
    `accuracy`, never `<something>_accuracy`, when it is the twin of eval_accuracy.

    eval_loss is the training loss's twin on the dev set, in NumPy float64 without dropout
    (metrics.py), one definition per kind of task:
      * one label per example (classifier, multiple choice): the mean over the dev
        examples of the softmax cross-entropy (metrics.cross_entropy); a regression: the
        mean squared error;
      * several labels per example (multi-label): the mean over the dev examples of each
        example's mean sigmoid cross-entropy over the labels (metrics.sigmoid_cross_entropy);
      * one label per word (NER, tagging_task): the mean over the words scored of the
        softmax cross-entropy at each word's first WordPiece, in the one window that decodes
        the word (each word once: the words eval_accuracy counts);
      * pretraining: the mean per-example training loss over the eval batches
        (evaluation.evaluate).
    SQuAD reports its official scores only, no eval_loss.
    """
    raise errors.UserError(f"{self.name}: --do_eval is not supported")

  def eval_metric_names(self):
    """The keys `evaluate` will report for this run's dev set (called after read_data),
    the names --best_metric may take; None: not known before the first evaluation (the
    name is then checked there)."""
    return None

  def default_best_metric(self):
    """The metric that chooses the best checkpoint without --best_metric: the one the
    paper reports for the task (eval_accuracy unless a task says otherwise)."""
    return "eval_accuracy"

  def predict(self, model, global_step):
    """Writes the test-set predictions into options.output_dir (global_step: the step of
    the weights predicting, for files that record it).

    May return {name: float} scores (SQuAD scores a predict file that has answers, as
    the original did): the driver writes them like evaluate's.
    """
    raise NotImplementedError

  def export(self, model, export_dir):
    """Writes a SavedModel for serving into export_dir (through write_export)."""
    raise errors.UserError(f"{self.name}: --export_dir is not supported")

  def write_export(self, export_dir, endpoints, track, num_texts=2, **litert_fields):
    """The one writer of every task's export: what differs per task is handed in, the
    rest is this run's. endpoints: the task's signatures over its model
    (serving.Endpoint); track: the model and what the signatures use (a FastTokenizer);
    num_texts and litert_fields: what the LiteRT models' model.json says (litert_request).
    Written in the serving layout (serving.write_serving_models) with --export_version,
    --overwrite_export and the --litert models; the driver found the target free when the
    run started (check_export_target). Returns serving.serving_paths."""
    options = self.options
    return serving.write_serving_models(
        export_dir, endpoints, track=track, version=options.export_version,
        overwrite=options.overwrite_export, checked=True,
        litert=self.litert_request(num_texts, **litert_fields), log=logging.info)

  def litert_request(self, num_texts=2, **fields):
    """The LiteRT models --litert asks the export for (litert_metadata.Request; None for none),
    their model.json holding this run's head_info, how it tokenizes (max_seq_length,
    do_lower_case, normalize; the vocabulary is copied beside them) and `fields`.
    num_texts: 1 when every input is one text (the check then feeds one segment)."""
    options = self.options
    metadata = dict(recorded_head_info(self, options) or {"task": self.name})
    metadata.setdefault("ltr", bool(options.ltr))
    metadata.update(max_seq_length=options.max_seq_length,
                    do_lower_case=bool(options.do_lower_case),
                    normalize=options.normalize, num_texts=num_texts, **fields)
    if options.bert_config_file:  # the encoder's tables' sizes, which model.json records
      config = model_config.load_bert_config(options.bert_config_file)
      metadata.update(max_position_embeddings=config.max_position_embeddings,
                      type_vocab_size=config.type_vocab_size)
    return litert_metadata.request(options.litert, metadata, options.vocab_file,
                                 num_segments=num_texts)

  def eval_metric_names_before_data(self):
    """The keys `evaluate` may report, whatever the data, where the task knows them
    before read_data: a --best_metric outside them is refused before any file is read or
    written. None: known from the data only (eval_metric_names)."""
    return None

  def prepare_data(self):
    """Called once the run's checks of its data have passed (after read_data), before
    any model is built: writes what the run reads that no refused run may leave behind
    (SQuAD's train.tf_record, run_ner's cached activations); nothing by default."""

  def after_training(self, model, global_step):
    """Called once training has reached its last step (on the chief only)."""


# --------------------------------------------------------------------------- the driver

# Task.head_info()["head"]: what the head computes (hugging_face.py exports each).
HEAD_KINDS = ("classifier", "regression", "multi_label", "squad", "token_classification",
              "multiple_choice", "pretraining", "feature_ner")
def run(task, options):
  """Runs `task` as `options` says: checks, data, strategy, weights, train, eval, predict
  (docs/ARCHITECTURE.md: the order, step by step)."""
  _check_requested(task, options)
  config = model_config.load_bert_config(options.bert_config_file)
  modeling_config.check_max_seq_length(options.max_seq_length, config)
  if task.needs_vocab:
    check_vocab(options, config)
  # Multi-worker strategies must start before any TensorFlow op runs; accelerators asked
  # for and not there stop the run before output_dir is created.
  strategy = strategies.create_strategy(
      options.distribution_strategy, options.tpu_name, options.tpu_zone,
      options.gcp_project, options.num_gpus, options.num_tpu_cores,
      peer_timeout=options.multi_worker_timeout)
  created = not file_io.isdir(options.output_dir)
  atomic_output.ensure_output_dir(options.output_dir)
  # One run at a time in output_dir (two would both save ckpt-N there); each worker of a
  # multi-worker run holds its own lock there, and only the chief's removes an
  # interrupted run's temporaries.
  chief = checkpoints.is_chief(strategy)
  resolver = getattr(strategy, "cluster_resolver", None)
  suffix = "" if chief or resolver is None else f".{resolver.task_type}-{resolver.task_id}"
  try:
    with output_lock.lock_output(options.output_dir, suffix=suffix, clean=chief,
                                 subfolders=task.output_subfolders):
      _run_locked(task, options, config, strategy)
  except BaseException:
    # A run refused before it wrote anything (a bad data file, say) leaves no empty
    # output_dir behind that it created itself.
    if created:
      atomic_output.remove_if_empty(options.output_dir)
    raise


def _run_locked(task, options, config, strategy):
  """run(), from the data on, while this process holds output_dir's lock."""
  # Fail on a bad path, or a --best_metric the task never reports, before reading data.
  if options.init_checkpoint:
    checkpoint_files.resolve_checkpoint(options.init_checkpoint)
  tracks_best = options.do_train and options.eval_every_steps
  if tracks_best and options.best_metric:
    names = task.eval_metric_names_before_data()
    if names is not None:
      best_checkpoint.check_metric(options.best_metric, names, task.name)
  task.read_data(config)
  check_segments(task, config, options)
  # --best_metric checked against what the dev evaluation reports, before any training.
  metric = best_checkpoint.best_metric(task, options) if tracks_best else None
  if not options.do_train:  # before building anything: eval/predict needs trained weights
    checkpoints.check_trained_weights_exist(
        options.output_dir, options.init_checkpoint if task.loads_init_checkpoint else None)
    if options.use_best_checkpoint:
      best_checkpoint.check_kept(options.output_dir)
  num_train_steps, num_warmup_steps = train_steps(task, options)
  # Every check of the data has passed: what the run writes of it may be written now.
  task.prepare_data()
  strategies.setup_determinism(options.seed, options.deterministic)
  with strategy.scope():
    model = task.build_model(config)
    optimizer = None
    if options.do_train:
      optimizer = optimization.create_optimizer(options.learning_rate, num_train_steps,
                                                num_warmup_steps, options.optimizer,
                                                schedule=options.lr_schedule)
  if options.speed_choice:  # what runs, the optimizer's update included (its model known)
    logging.info("%s", options.speed_choice if optimizer is None else cpu_choice.with_update(
        options.speed_choice,
        *optimization.compiled_update(optimizer, model.trainable_variables)))
  state = checkpoints.RunCheckpoint(options.output_dir, model, optimizer, strategy,
                                    keep=options.keep_checkpoint_max,
                                    loss_scaling=options.precision.loss_scaling,
                                    head_info=recorded_head_info(task, options))
  # A bucket that stops answering from here on: one line naming the flag, the step and
  # the checkpoint a rerun resumes from.
  outputs = {"output_dir": options.output_dir, "export_dir": options.export_dir}
  with checkpoints.naming_storage_failures(state, outputs):
    global_step = checkpoints.start_weights(
        state, options.init_checkpoint if task.loads_init_checkpoint else None,
        for_training=options.do_train)

    chief = checkpoints.is_chief(strategy)
    tracker = None
    if metric is not None:
      tracker = best_checkpoint.best_tracker(options, state, chief, metric)
    periodic = best_checkpoint.PeriodicEval(task, model, strategy, options, chief,
                                            num_train_steps, tracker)
    if options.do_train:
      global_step = _train(task, options, model, optimizer, strategy, state, global_step,
                           periodic, (num_train_steps, num_warmup_steps))
      if chief:
        task.after_training(model, global_step)
    if best_checkpoint.uses_best_checkpoint(options) and (
        options.do_eval or options.do_predict or options.export_dir):
      global_step = best_checkpoint.use_best(options, model, periodic,
                                             recorded_head_info(task, options))
    if options.do_eval:
      # The last periodic evaluation may be of these very weights: not evaluated twice.
      reuse = periodic.last_step is not None and periodic.last_step == global_step
      metrics = periodic.last if reuse else None
      if metrics is None:
        logging.info("***** Running evaluation: %s *****", task.name)
        metrics = task.evaluate(model, strategy)
      if chief:
        write_eval_results(options.output_dir, metrics, global_step, scalars=not reuse)
    if options.do_predict:
      logging.info("***** Running prediction: %s *****", task.name)
      scores = task.predict(model, global_step)
      if scores and chief:  # a predict file with answers (SQuAD) is scored too
        write_eval_results(options.output_dir, scores, global_step)
    if options.export_dir:
      task.export(model, options.export_dir)
      logging.info("Exported a SavedModel to %s%s", options.export_dir,
                   "" if options.litert == "none" or not task.exports else
                   f" (and LiteRT models: --litert={options.litert})")


def _train(task, options, model, optimizer, strategy, state, global_step, periodic, steps):
  """--do_train from `global_step` (periodic: the PeriodicEval, with its best-checkpoint
  tracker when one is kept; steps: (train, warmup)); returns the step training ended
  at. A run early stopping has already stopped trains no further."""
  num_train_steps, num_warmup_steps = steps
  tracker = periodic.tracker
  if tracker is not None:
    tracker.start()
    periodic.catch_up(global_step)
  if tracker is not None and tracker.stopped_at(global_step):
    logging.info("Early stopping already stopped this run at step %d (%d evaluations "
                 "without improvement of %s, --early_stopping_patience=%d): nothing "
                 "to train; a larger --early_stopping_patience, or 0, trains on",
                 global_step, tracker.record.without_improvement(global_step),
                 tracker.metric, options.early_stopping_patience)
  else:
    logging.info("***** Running training: %s *****", task.name)
    logging.info("  Num steps = %d (warmup %d), batch size %d", num_train_steps,
                 num_warmup_steps, options.train_batch_size)
    result = loop.train(strategy, model, optimizer, task.loss, task.train_dataset,
                        state, training_config(options, num_train_steps),
                        after_loop=periodic if options.eval_every_steps else None)
    global_step = result["global_step"]
  if tracker is not None:
    tracker.cleanup()
  return global_step


def recorded_head_info(task, options):
  """task.head_info(), plus `"ltr": true` for a left-to-right (causal-mask) run: the
  exports must know that the model attends one way only."""
  info = task.head_info()
  if info is not None and options.ltr:
    info = dict(info, ltr=True)
  return info


def _check_requested(task, options):
  """What the task is asked to do, before any work (the rules that join two settings are
  RunOptions' own: run_options.PARTNERS)."""
  if not (options.do_train or options.do_eval or options.do_predict or options.export_dir):
    raise errors.UserError(
        "At least one of --do_train, --do_eval or --do_predict"
        + (" (or --export_dir)" if task.exports else "") + " must be True.")
  if options.export_dir and task.exports:
    # Before any training: an export that would replace a version is refused now, not
    # after hours of work.
    serving.check_export_target(options.export_dir, options.export_version,
                                options.overwrite_export)
    options.precision.check_litert(options.litert)


def check_segments(task, config, options):
  """A config without a row for segment id 1 cannot embed a pair (the lookup would fail
  deep in the first step): one line naming the config."""
  needed = task.num_segments()
  if config.type_vocab_size < needed:
    raise errors.UserError(
        f"--bert_config_file={options.bert_config_file}: type_vocab_size="
        f"{config.type_vocab_size}, but {task.name} packs {needed} segments (segment ids "
        f"0 to {needed - 1}); use a config with type_vocab_size >= {needed} (Google's have 2)")


def check_vocab(options, config):
  """vocab_file exists, fits the config's vocab_size, and fits --do_lower_case."""
  input_checks.check_input_file(options.vocab_file, "vocab_file")
  tokenization.validate_case_matches_checkpoint(options.do_lower_case,
                                                options.init_checkpoint)
  vocab = tokenization.load_vocab(options.vocab_file)
  model_config.check_vocab_matches_config(len(vocab), config, options.vocab_file)
  message = tokenization.vocab_case_warning(vocab, options.do_lower_case)
  if message:
    logging.warning("%s: %s", options.vocab_file, message)


def train_steps(task, options):
  """(num_train_steps, num_warmup_steps): --num_train_steps, else epochs over the data."""
  if not options.do_train:
    return 0, 0
  steps = options.num_train_steps
  if steps is None:
    examples = task.num_train_examples()
    steps = int(examples / options.train_batch_size * options.num_train_epochs)
    if steps < 1:
      raise errors.UserError(
          f"{examples} training examples at --train_batch_size={options.train_batch_size} "
          f"and --num_train_epochs={options.num_train_epochs} make no training step; "
          "lower the batch size, raise the epochs or set --num_train_steps")
  warmup = options.num_warmup_steps
  if warmup is None:
    warmup = int(steps * options.warmup_proportion)
  return steps, warmup


def training_config(options, num_train_steps):
  return loop.TrainConfig(
      global_batch_size=options.train_batch_size, num_train_steps=num_train_steps,
      steps_per_loop=options.steps_per_loop,
      gradient_accumulation_steps=options.gradient_accumulation_steps,
      save_checkpoints_steps=options.save_checkpoints_steps,
      log_every_steps=options.log_every_steps, jit_compile=options.enable_xla,
      loss_scaling=options.precision.loss_scaling,
      eval_every_steps=options.eval_every_steps)


def write_eval_results(output_dir, metrics, global_step, scalars=True):
  """eval_results.txt (the original's `key = value` lines, with `loss` = eval_loss and
  global_step) and TensorBoard scalars in output_dir/eval at `global_step` under the
  training twins' tags (evaluation.eval_tags), so eval curves overlay the training
  curves."""
  values = dict(metrics)
  bad = sorted(k for k, v in values.items()
               if isinstance(v, (int, float)) and not math.isfinite(v))
  if bad:  # a diverged model: its figures must not look like results
    raise errors.UserError(
        f"evaluation at step {global_step} gives {', '.join(f'{k} = {values[k]}' for k in bad)}"
        f": the model's outputs are not finite (the weights diverged); {output_dir}/"
        "eval_results.txt is not written; resume from an earlier checkpoint with a lower "
        "--learning_rate")
  if "eval_loss" in values:
    values["loss"] = values["eval_loss"]  # the original's Estimator wrote both
  values["global_step"] = global_step
  logging.info("***** Eval results *****")
  path = paths.join(output_dir, "eval_results.txt")
  with errors.disk_full_names(path):  # a full disk: one line naming the file
    atomic_output.write_key_values(path, values, log=lambda line: logging.info("  %s", line))
  if scalars:  # False: already written at this step (PeriodicEval)
    loop.write_scalars(paths.join(output_dir, "eval"), evaluation.eval_tags(metrics),
                       global_step)
