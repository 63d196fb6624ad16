"""The training step the commands run, on synthetic batches: what the benchmarks time.

`build` makes what finetune.run makes for run_pretraining.py (or run_squad.py,
run_classifier.py): the model under the strategy's scope in --dtype's precision,
optimization.create_optimizer's AdamWeightDecay, a RunCheckpoint whose loop state holds
float16's dynamic loss scale; and the step and loop loop.train trains with
(loop.make_train_step, loop.make_train_loop, its input iterator). The batches are
synthetic and held in memory. `Run.loop(n)` is one loop call of n steps, as each of
loop.train's calls is, without its logging and checkpoints; the first call traces (and
with XLA compiles), so a caller times a later one.

The synthetic examples (`synthetic_features`): token ids drawn from [5, vocab) (no
[PAD]/[CLS]/[SEP]-like ids), every position real, the second half segment 1; pretraining:
`predictions` distinct masked positions per row (sorted, never position 0), masked ids
drawn like the tokens, all weights 1, random next-sentence labels; SQuAD: random start
and end positions; the classifier: random labels of two classes.
"""

import time

# The encoder sizes the benchmarks train (Google's BERT-Base and BERT-Large, a small one).
CONFIGS = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                  intermediate_size=1024),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                  intermediate_size=4096),
}
# run_pretraining's defaults and BERT's English vocabulary.
SEQ, PREDICTIONS, VOCAB = 128, 20, 30522
TASKS = ("pretrain", "squad", "classifier")


def synthetic_features(task, num_examples, seq, predictions, vocab, seed=0):
  """{feature: numpy array} of `num_examples` examples (see the module docstring)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  n = num_examples
  features = {"input_ids": rng.integers(5, vocab, (n, seq)).astype("int32"),
              "input_mask": np.ones((n, seq), "int32"),
              "segment_ids": np.repeat([[0] * (seq // 2) + [1] * (seq - seq // 2)], n, 0
                                       ).astype("int32")}
  if task == "pretrain":
    features.update(
        masked_lm_positions=np.sort(np.stack([rng.choice(np.arange(1, seq), predictions,
                                                         replace=False)
                                              for _ in range(n)]), 1).astype("int32"),
        masked_lm_ids=rng.integers(5, vocab, (n, predictions)).astype("int32"),
        masked_lm_weights=np.ones((n, predictions), "float32"),
        next_sentence_labels=rng.integers(0, 2, (n, 1)).astype("int32"))
  elif task == "squad":
    features.update(start_positions=rng.integers(0, seq, (n,)).astype("int32"),
                    end_positions=rng.integers(0, seq, (n,)).astype("int32"))
  elif task == "classifier":
    features.update(label_ids=rng.integers(0, 2, (n,)).astype("int32"))
  else:
    raise ValueError(f"task={task!r}: one of {', '.join(TASKS)}")
  return features


class Run:
  """One model, optimizer and compiled loop on its input; `loop(n)` runs n steps."""

  def __init__(self, train_loop, iterator, batch, state):
    self._loop, self._iterator, self.batch, self.state = train_loop, iterator, batch, state

  def loop(self, steps):
    """One loop call of `steps` steps; the mean loss (read back: the steps have ended)."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    loss, _, _ = self._loop(self._iterator, tf.constant(steps, tf.int32))
    return float(loss)

  def rate(self, steps):
    """Examples/s over one loop call of `steps` steps."""
    started = time.perf_counter()
    self.loop(steps)
    return steps * self.batch / (time.perf_counter() - started)

  @property
  def loss_scale(self):
    """float16's dynamic loss scale now (2**15 at the start; the loop halves and doubles it)."""
    return float(self.state.loop.loss_scale.numpy())


def build(config, task="pretrain", seq=SEQ, predictions=PREDICTIONS, batch=8,
          dtype="float32", xla=False, strategy=None, seed=0, learning_rate=1e-4):
  """A Run of `task` for a BERT of `config` (modeling.BertConfig's keyword arguments,
  vocab_size among them) at global batch `batch`, as the commands train it: --dtype
  `dtype`, --enable_xla `xla`, on `strategy` (default run_pretraining's one_device)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert import optimization  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  from bert.training import precision as precisions  # pylint: disable=g-import-not-at-top
  from bert.training import strategies  # pylint: disable=g-import-not-at-top

  strategy = strategy or strategies.create_strategy("one_device")
  precision = precisions.Precision(dtype)
  strategies.setup_determinism(1, False)
  bert_config = modeling.BertConfig(
      **{"max_position_embeddings": max(512, seq), "type_vocab_size": 2, **config})
  data = synthetic_features(task, 4 * batch, seq, predictions, bert_config.vocab_size, seed)

  def dataset_fn(input_context, per_replica_batch):
    del input_context  # one synthetic dataset, the same on every replica
    return tf.data.Dataset.from_tensor_slices(data).repeat().batch(
        per_replica_batch, drop_remainder=True).prefetch(2)

  with strategy.scope():
    if task == "pretrain":
      model, _ = heads.build_pretraining_model(bert_config, dtype=precision.policy)
      loss_fn = heads.pretraining_loss
    elif task == "squad":
      model, _ = heads.build_squad_model(bert_config, dtype=precision.policy)
      loss_fn = heads.squad_loss
    else:
      model, _ = heads.build_classifier_model(bert_config, 2, dtype=precision.policy)
      loss_fn = heads.classifier_loss
    optimizer = optimization.create_optimizer(learning_rate, 10000, 100)
  # finetune.run's state (without an output_dir: nothing is saved).
  state = checkpoints.RunCheckpoint(None, model, optimizer, strategy,
                                    loss_scaling=precision.loss_scaling)
  train_config = loop.TrainConfig(global_batch_size=batch, num_train_steps=10**9,
                                  jit_compile=xla, loss_scaling=precision.loss_scaling)
  names = loop.loss_metric_names(model, loss_fn,
                                 dataset_fn(tf.distribute.InputContext(), 1).element_spec)
  step = loop.make_train_step(model, optimizer, loss_fn, names, train_config, state.loop)
  train_loop = loop.make_train_loop(strategy, step, names)
  iterator = loop._train_iterator(  # pylint: disable=protected-access
      strategy, dataset_fn, train_config, 0)
  return Run(train_loop, iterator, batch, state)
