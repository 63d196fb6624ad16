"""Classifier speed: per-batch padding against fixed padding to 128, on SST-2 dev.

  python -m benchmarks.bench_classifier [--quick] [--hf_only]

Builds run_classifier's model for the shared MiniLM config (6 layers, hidden 384; the
weights do not matter for speed, so they stay random) and feeds it SST-2 dev sentences
(872, median about 25 WordPieces) through classifier_features (predict_batches for
prediction, make_dataset for training, as run_classifier), once with per-batch padding
(the default) and once with --fixed_padding (every batch 128 long), in the same process:
  * prediction examples/s (batch 32; the whole dev set, after one warm-up pass so that
    tracing is not timed);
  * training examples/s (batch 32: run_classifier's training, make_dataset and
    loop.train, the step the command runs; one loop call timed after a traced first step
    and an untimed call as long).
Then, where the Hugging Face side is installed (`make bench-hf-setup`: a venv of its own,
never this project's dependency; else one row says how to get it), the same work with
transformers' BertForSequenceClassification (PyTorch, CPU, as many threads as TF uses),
each in its own process, both from the shared MiniLM weights:
  * prediction: the same SST-2 dev texts to logits, batch 32, per-batch padding on both
    sides (theirs DataCollatorWithPadding under torch.inference_mode), same classifier
    head, so the logits are compared too; a warm-up pass is untimed on both sides;
  * fine-tuning: the same random SST-2 train subset, same steps, batch, learning rate,
    warm-up and clipping; examples/s over the second half of the steps (the first half
    traces / warms up), then each side's dev accuracy. Ours groups batches by length;
    theirs are shuffled and padded per batch (their default), and once more grouped by
    length (Trainer's group_by_length style) for information.
After the fine-tuning rows, the matmul floor (benchmarks/parts/step_floor.py, in this process):
the training ceiling at the subset's unpadded mean length, and its ratio to HF grouped.
--quick: 256 sentences and fewer training steps (30 fine-tuning steps: too few for the
two optimizers to reach the same accuracy; the full run's 200 do). --hf_only: only the
comparisons.
"""

import json
import os
import shutil
import sys
import tempfile
import time

from benchmarks.parts import hf_bridge
from benchmarks.parts import machine
from benchmarks.parts import sst2
from benchmarks.parts import step_floor

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SST2, MODEL_DIR, VOCAB = sst2.SST2, sst2.MODEL_DIR, sst2.UNCASED_VOCAB
BATCH, SEQ = sst2.BATCH, sst2.SEQ


def _predict_rate(tf, model, batches, num_examples):
  """Examples/s of a second pass over batches() (tokenizing included); the first traces."""
  names = [t.name for t in model.inputs]

  @tf.function(reduce_retracing=True)
  def forward(features):
    return model({n: features[n] for n in names}, training=False)["logits"]

  def one_pass():
    for batch in batches():
      forward({n: batch[n] for n in names}).numpy()

  one_pass()  # warm-up: traces
  started = time.perf_counter()
  one_pass()
  return num_examples / (time.perf_counter() - started)


def _loop_train(tf, config, examples, tokenizer, steps, output_dir, fixed_padding=False,
                learning_rate=2e-5, steps_per_loop=None, init_checkpoint=None):
  """run_classifier's training path (make_dataset, loop.train) on `examples`; returns
  loop.train's result and the model. Its rate is that of the last loop call."""
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import optimization  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  from bert.training import strategies  # pylint: disable=g-import-not-at-top

  strategy = strategies.create_strategy("one_device")
  with strategy.scope():
    model, _ = heads.build_classifier_model(config, 2)
    optimizer = optimization.create_optimizer(learning_rate, steps, max(steps // 10, 1))
  if init_checkpoint:
    checkpoints.load_checkpoint(model, init_checkpoint)

  def dataset_fn(context, batch_size):
    return classifier_features.make_dataset(
        examples, ["0", "1"], tokenizer, SEQ, batch_size, is_training=True,
        fixed_padding=fixed_padding, seed=1, input_context=context)

  state = checkpoints.RunCheckpoint(output_dir, model, optimizer, strategy)
  result = loop.train(
      strategy, model, optimizer, heads.classifier_loss, dataset_fn, state,
      loop.TrainConfig(global_batch_size=BATCH, num_train_steps=steps,
                       steps_per_loop=steps_per_loop or steps, log_every_steps=steps,
                       save_checkpoints_steps=10**9))
  return result, model


def _train_rate(tf, config, examples, tokenizer, fixed_padding, steps, workdir):
  """Examples/s of run_classifier's training over one loop call of `steps` steps, after
  the traced first step and an untimed call as long (loop.train's calls: 1, steps,
  steps)."""
  result, _ = _loop_train(tf, config, examples, tokenizer, 1 + 2 * steps,
                          os.path.join(workdir, f"train-{int(fixed_padding)}"),
                          fixed_padding=fixed_padding, steps_per_loop=steps)
  return result["examples_per_second"]


# --------------------------------------------------------------------------- Hugging Face

# Fine-tuning comparison: a fixed random subset of SST-2 train, the same for both sides.
FINETUNE_EXAMPLES = {False: 4000, True: 1000}
FINETUNE_TIMED_STEPS = {False: 100, True: 15}  # after as many untimed steps
FINETUNE_LEARNING_RATE = 5e-5
# Dev accuracies this close count as matching (872 sentences: one point is 9 of them).
ACCURACY_MATCH = 0.02
PREDICT_REPEATS = 3  # timed passes on each side, the best kept (the machine is shared)


def _our_predict(model, tokenizer, examples):
  """(logits float32 [n, 2] in example order, seconds): run_classifier's predict path,
  from the texts (classifier_features.predict_batches) to the logits."""
  from bert.classifier import classifier_task  # pylint: disable=g-import-not-at-top
  started = time.perf_counter()
  logits = classifier_task.predict_logits(model, examples, ["0", "1"], tokenizer, SEQ,
                                          BATCH, what="bench")
  return logits, time.perf_counter() - started


def _hf_predict_rows(tf, config, tokenizer, examples, workdir):
  """Prediction on the same texts with the same weights, ours against transformers'."""
  import numpy as np  # pylint: disable=g-import-not-at-top

  del config  # the shared MiniLM's, which sst2.classifier_model reads
  tf.keras.utils.set_random_seed(2)
  model = sst2.classifier_model(os.path.join(MODEL_DIR, "bert_model.ckpt"))
  sst2.save_head(model, os.path.join(workdir, "head.npz"))
  texts = [e.text_a for e in examples]
  with open(os.path.join(workdir, "texts.json"), "w", encoding="utf-8") as handle:
    json.dump(texts, handle)

  _, first_seconds = _our_predict(model, tokenizer, examples)  # warm-up: traces
  seconds = float("inf")
  for _ in range(PREDICT_REPEATS):
    ours, elapsed = _our_predict(model, tokenizer, examples)
    seconds = min(seconds, elapsed)
  load = machine.load_average()
  hf, why = hf_bridge.run_hf("predict", {
      "threads": machine.threads(), "vocab_file": VOCAB, "head_file": os.path.join(workdir, "head.npz"),
      "texts_file": os.path.join(workdir, "texts.json"), "batch_size": BATCH,
      "max_seq_length": SEQ, "logits_file": os.path.join(workdir, "hf_logits.npy"),
      "repeats": PREDICT_REPEATS}, workdir)
  n = len(examples)
  timing = f"best of {PREDICT_REPEATS} passes after a warm-up pass"
  rows = [{"name": "classifier_predict_ours", "value": round(n / seconds, 1),
           "unit": "examples/s",
           "note": f"run_classifier path (predict_batches + evaluation.predict), texts to logits, "
                   f"{timing}; first pass {n / first_seconds:.1f}/s; {load}"}]
  if hf is None:
    return rows + [{"name": "classifier_predict_hf", "value": "failed", "unit": "",
                    "note": why}]
  theirs = np.load(os.path.join(workdir, "hf_logits.npy"))
  diff = float(np.max(np.abs(theirs - ours)))
  agree = float(np.mean(theirs.argmax(1) == ours.argmax(1)))
  hf_rate = n / hf["seconds"]
  return rows + [
      {"name": "classifier_predict_hf", "value": round(hf_rate, 1), "unit": "examples/s",
       "note": f"BertForSequenceClassification, DataCollatorWithPadding, inference_mode, "
               f"{hf['threads']} threads, texts to logits, {timing}; first pass "
               f"{n / hf['first_seconds']:.1f}/s; {hf['versions']}; {machine.load_average()}"},
      {"name": "classifier_predict_ours_vs_hf", "value": round((n / seconds) / hf_rate, 2),
       "unit": "x", "note": f"same weights (max |logit diff| {diff:.1e}, same class on "
                            f"{agree:.1%}), batch {BATCH}; target >= 2x"}]


def _our_finetune(tf, config, tokenizer, train, dev, steps, timed_steps, workdir):
  """(examples/s of the last loop call, dev accuracy, final loss): run_classifier's
  training path (make_dataset, loop.train) from the shared MiniLM."""
  from bert import metrics  # pylint: disable=g-import-not-at-top

  tf.keras.utils.set_random_seed(3)
  # Loop calls of 1 (traces; untimed), steps - timed_steps, then the rest, whose rate
  # train() reports.
  result, model = _loop_train(
      tf, config, train, tokenizer, steps, os.path.join(workdir, "ours-finetune"),
      learning_rate=FINETUNE_LEARNING_RATE, steps_per_loop=steps - timed_steps,
      init_checkpoint=os.path.join(MODEL_DIR, "bert_model.ckpt"))
  logits, _ = _our_predict(model, tokenizer, dev)
  accuracy = metrics.accuracy(logits.argmax(1), [int(e.label) for e in dev])
  return result["examples_per_second"], accuracy, result["loss"]


def _hf_finetune_rows(tf, config, tokenizer, quick, workdir):
  """Fine-tuning the MiniLM on the same SST-2 train subset, same steps, batch, lr."""
  import random  # pylint: disable=g-import-not-at-top

  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  processor = classifier_data.Sst2Processor()
  train = random.Random(0).sample(processor.get_train_examples(SST2), FINETUNE_EXAMPLES[quick])
  dev = processor.get_dev_examples(SST2)
  timed = FINETUNE_TIMED_STEPS[quick]
  steps = 2 * timed
  scope = (f"{len(train)} SST-2 train sentences, {steps} steps of {BATCH}, lr "
           f"{FINETUNE_LEARNING_RATE:g} (warm-up {steps // 10}, linear decay), clip 1.0; "
           f"rate over the last {timed} steps")
  rate, accuracy, loss = _our_finetune(tf, config, tokenizer, train, dev, steps, timed,
                                       workdir)
  rows = [{"name": "classifier_finetune_ours", "value": round(rate, 1), "unit": "examples/s",
           "note": f"loop.train + make_dataset (length-sorted windows), AdamWeightDecay; dev "
                   f"accuracy {accuracy:.4f} ({len(dev)}), loss {loss:.3f}; {scope}; "
                   f"{machine.load_average()}"}]
  with open(os.path.join(workdir, "finetune.json"), "w", encoding="utf-8") as handle:
    json.dump({"train_texts": [e.text_a for e in train],
               "train_labels": [int(e.label) for e in train],
               "dev_texts": [e.text_a for e in dev],
               "dev_labels": [int(e.label) for e in dev]}, handle)
  # HF's default batches (shuffled, padded to their longest row) are the target's
  # comparison; its length-grouped batches (Trainer's group_by_length, off by default) show
  # how much of the gap our length grouping makes.
  grouped_rate = None
  for group, suffix in ((False, ""), (True, "_grouped")):
    hf, why = hf_bridge.run_hf("finetune", {
        "threads": machine.threads(), "vocab_file": VOCAB, "seed": 3, "group_by_length": group,
        "data_file": os.path.join(workdir, "finetune.json"), "batch_size": BATCH,
        "steps": steps, "timed_steps": timed, "warmup_steps": steps // 10,
        "learning_rate": FINETUNE_LEARNING_RATE, "max_seq_length": SEQ}, workdir)
    if hf is None:
      rows.append({"name": f"classifier_finetune_hf{suffix}", "value": "failed", "unit": "",
                   "note": why})
      continue
    batches = ("batches grouped by length (group_by_length style)" if group else
               "shuffled batches (its default)")
    rows += [
        {"name": f"classifier_finetune_hf{suffix}",
         "value": round(hf["examples_per_second"], 1), "unit": "examples/s",
         "note": f"BertForSequenceClassification, torch AdamW, DataCollatorWithPadding on "
                 f"{batches}, {hf['threads']} threads; dev accuracy {hf['accuracy']:.4f}, "
                 f"loss {hf['final_loss']:.3f}; {hf['versions']}; {machine.load_average()}"},
        {"name": f"classifier_finetune_ours_vs_hf{suffix}",
         "value": round(rate / hf["examples_per_second"], 2), "unit": "x",
         "note": f"dev accuracy ours {accuracy:.4f} vs HF {hf['accuracy']:.4f} ("
                 + ("within" if abs(accuracy - hf["accuracy"]) <= ACCURACY_MATCH else
                    "NOT within") + f" {100 * ACCURACY_MATCH:g} points); " + (
             "target >= 2x at matching accuracy" if group else
             "target >= 1.3x at matching accuracy")}]
    if group:
      grouped_rate = hf["examples_per_second"]
  if grouped_rate:
    rows += _finetune_ceiling_rows(tokenizer, train, grouped_rate)
  return rows


def _finetune_ceiling_rows(tokenizer, train, grouped_rate):
  """What stands in the way of 2x HF grouped (the target): step_floor's training ceiling
  at the subset's mean length without padding, the least work any implementation does."""
  pieces = tokenizer.tokenize_batch([e.text_a for e in train])
  lengths = [min(len(ids) + 2, SEQ) for ids in pieces]
  mean = sum(lengths) / len(lengths)
  out = step_floor.ceiling_at(mean, BATCH)
  notes = "; ".join(f"{name} {value:.1f} {unit} ({note})"
                    for name, value, unit, note in step_floor.describe(out, BATCH, round(mean, 2))
                    if not name.endswith("ceiling"))
  return [
      {"name": "classifier_finetune_ceiling", "value": round(out["train_ceiling"], 1),
       "unit": "examples/s",
       "note": f"benchmarks/parts/step_floor.py: batch {BATCH} / (the step's matmuls alone + "
               f"the optimizer update) at {mean:.2f} tokens a row, no padding; {notes}; "
               f"{machine.load_average()}"},
      {"name": "classifier_finetune_ceiling_vs_hf_grouped",
       "value": round(out["train_ceiling"] / grouped_rate, 2), "unit": "x",
       "note": "the most any step built on this machine's matmul kernels could reach "
               "against HF grouped in this run; below 2 the target cannot be met"}]


def _hf_rows(tf, config, tokenizer, examples, quick):
  if hf_bridge.hf_python() is None:
    return [{"name": "classifier_hf_comparison", "value": "skipped", "unit": "",
             "note": hf_bridge.HF_HINT}]
  with tempfile.TemporaryDirectory(prefix="bench-classifier-hf-") as workdir:
    return (_hf_predict_rows(tf, config, tokenizer, examples, workdir)
            + _hf_finetune_rows(tf, config, tokenizer, quick, workdir))


def run(quick=False, hf_only=False):
  """Returns [{name, value, unit, note}]. hf_only: only the comparisons with transformers."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top

  tf.keras.utils.set_random_seed(1)
  config_file = os.path.join(MODEL_DIR, "bert_config.json")
  config = model_config.load_bert_config(config_file)
  tokenizer = fast_tokenization.FastTokenizer(VOCAB, True)
  examples = classifier_data.Sst2Processor().get_dev_examples(SST2)
  if quick:
    examples = examples[:256]
  lengths = [len(ids) + 2 for ids in tokenizer.tokenize_batch([e.text_a for e in examples])]
  scope = (f"SST-2 dev, {len(examples)} sentences (median {sorted(lengths)[len(lengths) // 2]}"
           f" tokens), L{config.num_hidden_layers} H{config.hidden_size}, batch {BATCH}")
  rows = []
  rates = {}
  workdir = tempfile.mkdtemp(prefix="bench-classifier-")
  for fixed in (() if hf_only else (False, True)):
    label = "fixed128" if fixed else "per_batch"
    model, _ = heads.build_classifier_model(config, 2)
    # The batches run_classifier's eval and predict feed, made anew in each pass.
    rates[("predict", fixed)] = _predict_rate(
        tf, model, lambda: classifier_features.predict_batches(
            examples, ["0", "1"], tokenizer, SEQ, BATCH, fixed_padding=fixed), len(examples))
    rates[("train", fixed)] = _train_rate(tf, config, examples, tokenizer, fixed,
                                          4 if quick else 12, workdir)
    for mode in ("predict", "train"):
      rows.append({"name": f"classifier_{mode}_{label}",
                   "value": round(rates[(mode, fixed)], 1), "unit": "examples/s",
                   "note": scope})
  for mode in (() if hf_only else ("predict", "train")):
    rows.append({"name": f"classifier_{mode}_speedup_per_batch_vs_fixed128",
                 "value": round(rates[(mode, False)] / rates[(mode, True)], 2), "unit": "x",
                 "note": "same run, same model; target >= 2x for prediction"})
  shutil.rmtree(workdir, ignore_errors=True)
  rows += _hf_rows(tf, config, tokenizer, examples, quick)
  return rows


if __name__ == "__main__":
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  for row in run(quick="--quick" in sys.argv, hf_only="--hf_only" in sys.argv):
    print(f"{row['name']:50s} {row['value']!s:>10} {row['unit']:12s} {row['note']}")
