"""finetune.run in-process: a small fake Task (random rows, the tiny config) through the
whole driver: train, eval_results.txt, resume after a stop, predict, the refusals, and a
bug inside a Task that keeps its traceback. No script subprocess: seconds, not minutes.
"""
import os
import signal

import numpy as np
import pytest
import tensorflow as tf

from bert import heads
from bert import metrics
from bert import modeling
from bert.training import checkpoints
from bert.training import finetune
from bert.training import run_options
from bert.utils import atomic_output
from bert.utils import errors
import tiny
from bert.training import evaluation
from bert.training import loop

VOCAB, SEQ, ROWS, LABELS = 50, 12, 16, 2


def _rows(seed, count=ROWS):
  """Random token ids (lengths 4..SEQ), their masks, and a label per row."""
  rng = np.random.default_rng(seed)
  lengths = rng.integers(4, SEQ + 1, count)
  ids = np.zeros((count, SEQ), np.int32)
  for row, length in enumerate(lengths):
    ids[row, :length] = rng.integers(5, VOCAB, length)
  return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
          "segment_ids": np.zeros((count, SEQ), np.int32),
          "label_ids": rng.integers(0, LABELS, count).astype(np.int32)}


class ToyTask(finetune.Task):
  """A two-label classifier over random rows: the smallest complete Task."""

  name = "toy"
  needs_vocab = False

  def __init__(self, options, loss_bug=False, sigterm_at_batch=None):
    super().__init__(options)
    self.loss_bug = loss_bug
    self.sigterm_at_batch = sigterm_at_batch  # stop the run as a scheduler does
    self.splits = {}

  def read_data(self, config):
    del config
    for split, seed, needed in (("train", 1, self.options.do_train),
                                ("dev", 2, self.options.do_eval),
                                ("test", 2, self.options.do_predict)):
      if needed:
        self.splits[split] = _rows(seed)

  def num_train_examples(self):
    return ROWS

  def train_dataset(self, input_context, batch_size):
    del input_context
    dataset = tf.data.Dataset.from_tensor_slices(self.splits["train"])
    dataset = dataset.shuffle(ROWS, seed=self.options.seed).repeat().batch(
        batch_size, drop_remainder=True)
    if self.sigterm_at_batch is None:
      return dataset

    def sigterm(index):
      if int(index) == self.sigterm_at_batch:
        os.kill(os.getpid(), signal.SIGTERM)
      return index

    def with_sigterm(index, batch):
      index = tf.py_function(sigterm, [index], tf.int64)
      with tf.control_dependencies([index]):
        return tf.nest.map_structure(tf.identity, batch)

    return dataset.enumerate().map(with_sigterm)

  def build_model(self, config):
    model, _ = heads.build_classifier_model(config, LABELS)
    return model

  def loss(self, features, outputs):
    if self.loss_bug:  # a developer's shape bug: three classes against two logits
      logits = outputs["logits"]
      labels = tf.one_hot(features["label_ids"], LABELS + 1)
      return tf.reduce_sum(labels * tf.nn.log_softmax(logits), -1), {}
    return heads.classifier_loss(features, outputs)

  def evaluate(self, model, strategy):
    result = evaluation.evaluate(
        strategy, model, self.loss,
        lambda context: tf.data.Dataset.from_tensor_slices(self.splits["dev"]).batch(
            self.options.eval_batch_size))
    return {"eval_accuracy": result["accuracy"], "eval_loss": result["loss"],
            "loss": result["loss"], "num_examples": result["num_examples"]}

  def predict(self, model, global_step):
    del global_step
    dataset = tf.data.Dataset.from_tensor_slices(self.splits["test"]).batch(
        self.options.predict_batch_size)
    logits = np.concatenate([b["logits"] for b in evaluation.predict(model, dataset)])
    with atomic_output.atomic_open(os.path.join(self.options.output_dir,
                                                "test_results.tsv")) as handle:
      for row in metrics.softmax(logits.astype(np.float64)):
        handle.write("\t".join(repr(float(p)) for p in row) + "\n")


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
  # One layer: the driver does the same for any depth, and tracing each run's steps (most
  # of this file's time) grows with the layers.
  path = tmp_path_factory.mktemp("toy") / "bert_config.json"
  return tiny.write_tiny_config(path, VOCAB, max_position_embeddings=SEQ,
                                num_hidden_layers=1)


def _options(output_dir, config_file, **flags):
  values = dict(output_dir=str(output_dir), bert_config_file=config_file,
                max_seq_length=SEQ, train_batch_size=4, eval_batch_size=5,
                predict_batch_size=3, learning_rate=1e-3, num_warmup_steps=1,
                save_checkpoints_steps=2, log_every_steps=2, steps_per_loop=2, seed=7)
  values.update(flags)
  return run_options.RunOptions(**values)


def _eval_results(output_dir):
  with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as handle:
    lines = handle.read().splitlines()
  return dict(line.split(" = ") for line in lines), lines


def _weights(output_dir, config_file, step):
  """The classifier's weights in output_dir's ckpt-<step>, by Google name."""
  model = heads.build_classifier_model(modeling.BertConfig.from_json_file(config_file),
                                       LABELS)[0]
  state = checkpoints.RunCheckpoint(str(output_dir), model)
  assert state.restore(os.path.join(output_dir, f"ckpt-{step}"), whole_state=False) == step
  return {k: v.numpy() for k, v in modeling.google_variable_map(model).items()}


# 50 s; stop and resume by default: tests/training/test_loop.py's resume-equals-uninterrupted (make test-
# slow)
@pytest.mark.slow
def test_train_stop_resume_eval_predict(tmp_path, config_file):
  out, straight = tmp_path / "run", tmp_path / "straight"
  # A SIGTERM while the second batch is read: the loop saves and exits (at step 1 or 2).
  # The same command again resumes there and ends where an unbroken run ends, bit for bit.
  options = _options(out, config_file, do_train=True, num_train_steps=4)
  with pytest.raises(SystemExit) as stop:
    finetune.run(ToyTask(options, sigterm_at_batch=1), options)
  assert stop.value.code == loop.PREEMPTED_EXIT_CODE
  saved = checkpoints.RunCheckpoint(str(out), heads.build_classifier_model(
      modeling.BertConfig.from_json_file(config_file), LABELS)[0]).latest()
  assert os.path.basename(saved) in ("ckpt-1", "ckpt-2")
  resumed = _options(out, config_file, do_train=True, do_eval=True, num_train_steps=4)
  finetune.run(ToyTask(resumed), resumed)
  unbroken = _options(straight, config_file, do_train=True, num_train_steps=4)
  finetune.run(ToyTask(unbroken), unbroken)
  after_resume = _weights(out, config_file, 4)
  for name, value in _weights(straight, config_file, 4).items():
    np.testing.assert_array_equal(after_resume[name], value, err_msg=name)
  values, lines = _eval_results(out)
  assert [line.split(" = ")[0] for line in lines] == [
      "eval_accuracy", "eval_loss", "global_step", "loss", "num_examples"]
  assert values["global_step"] == "4" and values["num_examples"] == "16"
  assert values["loss"] == values["eval_loss"]
  assert os.path.isdir(out / "eval") and os.listdir(out / "eval")

  # Eval and predict with nothing to train: the driver restores ckpt-4; the predicted
  # probabilities (one pass, in order) give the evaluation's figures (another pass,
  # through the strategy) in NumPy.
  again = _options(out, config_file, do_eval=True, do_predict=True)
  finetune.run(ToyTask(again), again)
  assert _eval_results(out)[0] == values
  probabilities = np.loadtxt(out / "test_results.tsv", delimiter="\t")
  assert probabilities.shape == (ROWS, LABELS)
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-12)
  labels = _rows(2)["label_ids"]
  assert float(values["eval_accuracy"]) == pytest.approx(
      np.mean(probabilities.argmax(axis=1) == labels), abs=1e-6)
  assert float(values["eval_loss"]) == pytest.approx(
      -np.mean(np.log(probabilities[np.arange(ROWS), labels])), rel=1e-5)


def test_nothing_trained_to_evaluate_is_refused_before_building(tmp_path, config_file):
  options = _options(tmp_path / "empty", config_file, do_eval=True)
  task = ToyTask(options)
  task.build_model = None  # refused before any model is built
  with pytest.raises(errors.UserError, match="nothing trained to evaluate: "
                     f"--output_dir={tmp_path / 'empty'} holds no checkpoint"):
    finetune.run(task, options)
  # The refused run leaves no output_dir of its own making; one the user made stays.
  assert not os.path.exists(tmp_path / "empty")
  (tmp_path / "given").mkdir()
  options = _options(tmp_path / "given", config_file, do_eval=True)
  with pytest.raises(errors.UserError, match="nothing trained to evaluate"):
    finetune.run(ToyTask(options), options)
  assert os.path.isdir(tmp_path / "given") and not os.listdir(tmp_path / "given")


def test_more_steps_continue_and_another_models_output_dir_is_refused(tmp_path, config_file):
  out = tmp_path / "run"
  options = _options(out, config_file, do_train=True, num_train_steps=2)
  finetune.run(ToyTask(options), options)
  first = (out / "ckpt-2.data-00000-of-00001").read_bytes()
  # A second run asking for more steps continues from ckpt-2 (it trains step 3 only:
  # ckpt-2 is left as the first run wrote it).
  more = _options(out, config_file, do_train=True, num_train_steps=3)
  finetune.run(ToyTask(more), more)
  assert (out / "ckpt-2.data-00000-of-00001").read_bytes() == first
  assert checkpoints.RunCheckpoint(str(out), heads.build_classifier_model(
      modeling.BertConfig.from_json_file(config_file), LABELS)[0]).latest() == str(
          out / "ckpt-3")
  wider = tiny.write_tiny_config(tmp_path / "wider.json", VOCAB, hidden_size=48,
                                 max_position_embeddings=SEQ, num_hidden_layers=1)
  other = _options(out, wider, do_train=True, num_train_steps=4)
  with pytest.raises(errors.UserError, match=f"--output_dir={out} holds a checkpoint "
                     r"\(ckpt-3\) of "):
    finetune.run(ToyTask(other), other)
  assert not os.path.exists(out / "ckpt-4.index")


def test_a_bug_in_a_task_keeps_its_traceback(tmp_path, config_file, capsys):
  """A shape error in a Task's loss is a bug: not a one-line user error, not exit 2."""
  options = _options(tmp_path / "bug", config_file, do_train=True, num_train_steps=2)
  with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2") as info:
    with errors.report_user_errors(program="toy.py"):
      finetune.run(ToyTask(options, loss_bug=True), options)
  assert not isinstance(info.value, errors.UserError)
  assert "toy.py: error:" not in capsys.readouterr().err
  assert any(entry.name == "run" and entry.path.name == "finetune.py"
             for entry in info.traceback)


def test_a_config_without_segment_one_is_refused_for_pairs(tmp_path):
  """type_vocab_size 1 cannot embed a pair's segment id 1: one line before any model, not
  an InvalidArgumentError from the first step."""
  config = tiny.write_tiny_config(tmp_path / "one_segment.json", VOCAB,
                                  max_position_embeddings=SEQ, type_vocab_size=1,
                                  num_hidden_layers=1)
  options = _options(tmp_path / "out", config, do_train=True, num_train_steps=2)
  task = ToyTask(options)
  task.build_model = None  # refused before any model is built
  with pytest.raises(errors.UserError) as info:
    finetune.run(task, options)
  assert str(info.value) == (
      f"--bert_config_file={config}: type_vocab_size=1, but toy packs 2 segments (segment "
      "ids 0 to 1); use a config with type_vocab_size >= 2 (Google's have 2)")
  single = ToyTask(options)
  single.num_segments = lambda: 1  # a single-text task runs with it
  finetune.run(single, options)
  assert os.path.exists(tmp_path / "out" / "ckpt-2.index")


def test_the_loop_state_says_what_a_checkpoint_holds_of_the_loop():
  """loop.LoopState owns the loop's variables; RunCheckpoint tracks what it lists."""
  model = heads.build_classifier_model(tiny.tiny_config(VOCAB), LABELS)[0]
  plain, scaled = loop.LoopState(model), loop.LoopState(model, loss_scaling=True)
  assert sorted(plain.trackables(with_optimizer=False)) == ["step"]
  assert sorted(plain.trackables(with_optimizer=True)) == ["rng_states", "step"]
  assert sorted(scaled.trackables(with_optimizer=True)) == [
      "good_steps", "loss_scale", "rng_states", "step"]
  assert (int(scaled.step.numpy()), float(scaled.loss_scale.numpy()),
          int(scaled.good_steps.numpy())) == (0, 2.0 ** 15, 0)
  # The dropout layers' seed-generator states, which Keras 3 does not track itself.
  assert len(plain.rng_states) == len([v for v in model.non_trainable_variables
                                       if "seed_generator" in v.path]) > 0
  state = checkpoints.RunCheckpoint("unused", model, loop=scaled, loss_scaling=True)
  assert state.loop is scaled and state.step is scaled.step


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_an_export_with_litert_models_in_low_precision_is_refused_before_training(
    tmp_path, config_file, dtype):
  """The LiteRT converter takes only a float32 model; a bfloat16 run's export used to fail
  after the training. Now the run stops at once, saying what works; --litert=none exports
  the SavedModels in that precision."""
  options = _options(tmp_path / "run", config_file, do_train=True, num_train_steps=2,
                     dtype=dtype, export_dir=str(tmp_path / "export"))
  task = ToyTask(options)
  task.exports = True
  task.build_model = None  # refused before any model is built
  with pytest.raises(errors.UserError, match=(
      f"--export_dir with --dtype={dtype}: the export's LiteRT models \\(--litert=both\\) "
      "convert only from a float32 model; pass --litert=none")):
    finetune.run(task, options)
  assert not os.path.exists(tmp_path / "run") and not os.path.exists(tmp_path / "export")
