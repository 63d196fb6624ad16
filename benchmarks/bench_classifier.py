"""Classifier speed: per-batch padding against fixed padding to 128, on SST-2 dev.

  python -m benchmarks.bench_classifier [--quick] [--hf_only] [--command_rounds=N]
      [--command_fixed_padding]

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
On a CPU with bfloat16 units (AVX512-BF16 or AMX) each of those is also run in bfloat16
(ours --dtype=bfloat16, built as finetune.run builds it; theirs under torch.autocast,
length-grouped for fine-tuning as ours is), with each runtime's bfloat16/float32 ratio
and ours against theirs in bfloat16; elsewhere a row says bfloat16 is left out.
Last, run_classifier.py itself (--command_rounds=N, default 3, 1 with --quick, 0 for
none): --do_train on SST-2 from the shared MiniLM, float32 and bfloat16 alternately, the
seconds of 50 steps of 32 after the first 10 (the loop's own examples/s) and of the whole
process; --command_fixed_padding runs those rounds once more with --fixed_padding (every
step at 128 positions, the original's shapes: where the matmuls' share, and so
bfloat16's gain, is largest), as rows of their own.
After the fine-tuning rows, the matmul floor (benchmarks/parts/matmul_floor.py, in this process):
the training ceiling at the subset's unpadded mean length, and its ratio to HF grouped.
--quick: 256 sentences and fewer training steps (30 fine-tuning steps: too few for the
two optimizers to reach the same accuracy; the full run's 200 do). --hf_only: only the
comparisons.
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from benchmarks.parts import command_runs
from benchmarks.parts import hugging_face_launcher
from benchmarks.parts import machine
from benchmarks.parts import sst2
from benchmarks.parts import matmul_floor

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
                learning_rate=2e-5, steps_per_loop=None, init_checkpoint=None,
                dtype="float32"):
  """run_classifier's training path (make_dataset, loop.train) on `examples`; returns
  loop.train's result and the model. Its rate is that of the last loop call. dtype: the
  --dtype the model is built in (its Precision's policy, as finetune.run does)."""
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import optimization  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import loop  # pylint: disable=g-import-not-at-top
  from bert.training import precision  # pylint: disable=g-import-not-at-top
  from bert.training import strategies  # pylint: disable=g-import-not-at-top

  strategy = strategies.create_strategy("one_device")
  with strategy.scope():
    model, _ = heads.build_classifier_model(config, 2,
                                            dtype=precision.Precision(dtype).policy)
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


def _precisions():
  """The --dtype values this CPU compares: bfloat16 beside float32 only with its units."""
  from bert.utils import cpu_choice  # pylint: disable=g-import-not-at-top
  return ("float32", "bfloat16") if cpu_choice.this_cpu().has_bfloat16 else ("float32",)


def _no_bfloat16_rows(what):
  return [{"name": f"classifier_{what}_bfloat16", "value": "skipped", "unit": "",
           "note": f"{machine.cpu_model()} has no bfloat16 units (AVX512-BF16 or AMX): "
                   "bfloat16 would run emulated; the float32 rows stand"}]


def _suffix(dtype):
  return "" if dtype == "float32" else "_bf16"


def _hf_predict_rows(tf, config, tokenizer, examples, workdir):
  """Prediction on the same texts with the same weights, ours against transformers', in
  float32 and, on a CPU with bfloat16 units, in bfloat16 on both sides (ours --dtype, theirs
  torch.autocast); every batch padded to its own longest row on both sides."""
  import numpy as np  # pylint: disable=g-import-not-at-top

  del config  # the shared MiniLM's, which sst2.classifier_model reads
  dtypes = _precisions()
  models = {}
  for dtype in dtypes:  # the same weights and head under each precision
    tf.keras.utils.set_random_seed(2)
    models[dtype] = sst2.classifier_model(os.path.join(MODEL_DIR, "bert_model.ckpt"), dtype)
  sst2.save_head(models["float32"], os.path.join(workdir, "head.npz"))
  texts = [e.text_a for e in examples]
  with open(os.path.join(workdir, "texts.json"), "w", encoding="utf-8") as handle:
    json.dump(texts, handle)

  first, seconds, logits = {}, {d: float("inf") for d in dtypes}, {}
  for dtype in dtypes:
    _, first[dtype] = _our_predict(models[dtype], tokenizer, examples)  # warm-up: traces
  for _ in range(PREDICT_REPEATS):  # the precisions alternate, so load falls on both
    for dtype in dtypes:
      logits[dtype], elapsed = _our_predict(models[dtype], tokenizer, examples)
      seconds[dtype] = min(seconds[dtype], elapsed)
  load = machine.load_average()
  n = len(examples)
  timing = f"best of {PREDICT_REPEATS} passes after a warm-up pass"
  rows = []
  for dtype in dtypes:
    rows.append({"name": "classifier_predict_ours" + _suffix(dtype),
                 "value": round(n / seconds[dtype], 1), "unit": "examples/s",
                 "note": f"run_classifier path (predict_batches + evaluation.predict), "
                         f"--dtype={dtype}, texts to logits, {timing}; first pass "
                         f"{n / first[dtype]:.1f}/s; {load}"})
  if "bfloat16" in dtypes:
    diff = float(np.max(np.abs(logits["bfloat16"] - logits["float32"])))
    rows.append({"name": "classifier_predict_ours_bf16_speedup",
                 "value": round(seconds["float32"] / seconds["bfloat16"], 2), "unit": "x",
                 "note": f"the same passes, the same weights; max |logit diff| against "
                         f"float32 {diff:.1e}"})
  else:
    rows += _no_bfloat16_rows("predict")
  hf = {}
  for dtype in dtypes:
    result, why = hugging_face_launcher.run_hf("predict", {
        "threads": machine.threads(), "vocab_file": VOCAB,
        "head_file": os.path.join(workdir, "head.npz"),
        "texts_file": os.path.join(workdir, "texts.json"), "batch_size": BATCH,
        "max_seq_length": SEQ, "logits_file": os.path.join(workdir, f"hf_{dtype}.npy"),
        "repeats": PREDICT_REPEATS, "precision": dtype}, workdir)
    if result is None:
      rows.append({"name": "classifier_predict_hf" + _suffix(dtype), "value": "failed",
                   "unit": "", "note": why})
      continue
    hf[dtype] = result
    theirs = np.load(os.path.join(workdir, f"hf_{dtype}.npy"))
    diff = float(np.max(np.abs(theirs - logits[dtype])))
    agree = float(np.mean(theirs.argmax(1) == logits[dtype].argmax(1)))
    hf_rate, our_rate = n / result["seconds"], n / seconds[dtype]
    how = "inference_mode" + (", torch.autocast bfloat16" if dtype == "bfloat16" else "")
    rows += [
        {"name": "classifier_predict_hf" + _suffix(dtype), "value": round(hf_rate, 1),
         "unit": "examples/s",
         "note": f"BertForSequenceClassification, DataCollatorWithPadding, {how}, "
                 f"{result['threads']} threads, texts to logits, {timing}; first pass "
                 f"{n / result['first_seconds']:.1f}/s; {result['versions']}; "
                 f"{machine.load_average()}"},
        {"name": "classifier_predict_ours_vs_hf" + _suffix(dtype),
         "value": round(our_rate / hf_rate, 2), "unit": "x",
         "note": f"{dtype} on both sides; same weights (max |logit diff| {diff:.1e}, same "
                 f"class on {agree:.1%}), batch {BATCH}"
                 + ("; target >= 2x" if dtype == "float32" else "")}]
  if len(hf) == 2:
    rows.append({"name": "classifier_predict_hf_bf16_speedup",
                 "value": round(hf["float32"]["seconds"] / hf["bfloat16"]["seconds"], 2),
                 "unit": "x", "note": "HF float32 / HF bfloat16 (torch.autocast), same passes"})
  return rows


def _our_finetune(tf, config, tokenizer, train, dev, steps, timed_steps, workdir,
                  dtype="float32"):
  """(examples/s of the last loop call, dev accuracy, final loss): run_classifier's
  training path (make_dataset, loop.train) from the shared MiniLM, in --dtype=dtype."""
  from bert import metrics  # pylint: disable=g-import-not-at-top

  tf.keras.utils.set_random_seed(3)
  # Loop calls of 1 (traces; untimed), steps - timed_steps, then the rest, whose rate
  # train() reports.
  result, model = _loop_train(
      tf, config, train, tokenizer, steps, os.path.join(workdir, f"ours-finetune-{dtype}"),
      learning_rate=FINETUNE_LEARNING_RATE, steps_per_loop=steps - timed_steps,
      init_checkpoint=os.path.join(MODEL_DIR, "bert_model.ckpt"), dtype=dtype)
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
  ours = {}
  rows = []
  for dtype in _precisions():
    ours[dtype] = _our_finetune(tf, config, tokenizer, train, dev, steps, timed, workdir,
                                dtype)
    rate, accuracy, loss = ours[dtype]
    rows.append({"name": "classifier_finetune_ours" + _suffix(dtype),
                 "value": round(rate, 1), "unit": "examples/s",
                 "note": f"loop.train + make_dataset (length-sorted windows), AdamWeightDecay, "
                         f"--dtype={dtype}; dev accuracy {accuracy:.4f} ({len(dev)}), loss "
                         f"{loss:.3f}; {scope}; {machine.load_average()}"})
  if "bfloat16" in ours:
    rows.append({"name": "classifier_finetune_ours_bf16_speedup",
                 "value": round(ours["bfloat16"][0] / ours["float32"][0], 2), "unit": "x",
                 "note": f"dev accuracy float32 {ours['float32'][1]:.4f}, bfloat16 "
                         f"{ours['bfloat16'][1]:.4f}"})
  else:
    rows += _no_bfloat16_rows("finetune")
  rate, accuracy, loss = ours["float32"]
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
    hf, why = hugging_face_launcher.run_hf("finetune", {
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
  if "bfloat16" in ours:
    hf, why = hugging_face_launcher.run_hf("finetune", {
        "threads": machine.threads(), "vocab_file": VOCAB, "seed": 3, "group_by_length": True,
        "data_file": os.path.join(workdir, "finetune.json"), "batch_size": BATCH,
        "steps": steps, "timed_steps": timed, "warmup_steps": steps // 10,
        "learning_rate": FINETUNE_LEARNING_RATE, "max_seq_length": SEQ,
        "precision": "bfloat16"}, workdir)
    if hf is None:
      rows.append({"name": "classifier_finetune_hf_grouped_bf16", "value": "failed",
                   "unit": "", "note": why})
    else:
      bf16_rate, bf16_accuracy, _ = ours["bfloat16"]
      rows += [
          {"name": "classifier_finetune_hf_grouped_bf16",
           "value": round(hf["examples_per_second"], 1), "unit": "examples/s",
           "note": f"as classifier_finetune_hf_grouped, forward passes under torch.autocast "
                   f"bfloat16; dev accuracy {hf['accuracy']:.4f}; {machine.load_average()}"},
          {"name": "classifier_finetune_ours_bf16_vs_hf_grouped_bf16",
           "value": round(bf16_rate / hf["examples_per_second"], 2), "unit": "x",
           "note": f"both bfloat16, both length-grouped; dev accuracy ours "
                   f"{bf16_accuracy:.4f} vs HF {hf['accuracy']:.4f}"}]
      if grouped_rate:
        rows.append({"name": "classifier_finetune_hf_bf16_speedup",
                     "value": round(hf["examples_per_second"] / grouped_rate, 2), "unit": "x",
                     "note": "HF grouped bfloat16 / HF grouped float32"})
  if grouped_rate:
    rows += _finetune_ceiling_rows(tokenizer, train, grouped_rate)
  return rows


def _finetune_ceiling_rows(tokenizer, train, grouped_rate):
  """What stands in the way of 2x HF grouped (the target): matmul_floor's training ceiling
  at the subset's mean length without padding, the least work any implementation does."""
  pieces = tokenizer.tokenize_batch([e.text_a for e in train])
  lengths = [min(len(ids) + 2, SEQ) for ids in pieces]
  mean = sum(lengths) / len(lengths)
  out = matmul_floor.ceiling_at(mean, BATCH)
  notes = "; ".join(f"{name} {value:.1f} {unit} ({note})"
                    for name, value, unit, note in matmul_floor.describe(out, BATCH, round(mean, 2))
                    if not name.endswith("ceiling"))
  return [
      {"name": "classifier_finetune_ceiling", "value": round(out["train_ceiling"], 1),
       "unit": "examples/s",
       "note": f"benchmarks/parts/matmul_floor.py: batch {BATCH} / (the step's matmuls alone + "
               f"the optimizer update) at {mean:.2f} tokens a row, no padding; {notes}; "
               f"{machine.load_average()}"},
      {"name": "classifier_finetune_ceiling_vs_hf_grouped",
       "value": round(out["train_ceiling"] / grouped_rate, 2), "unit": "x",
       "note": "the most any step built on this machine's matmul kernels could reach "
               "against HF grouped in this run; below 2 the target cannot be met"}]


# run_classifier.py's own fine-tuning, whole command: these many steps timed, after these
# many in the first loop calls (tracing, warm-up), each loop call COMMAND_LOOP steps.
COMMAND_TIMED_STEPS, COMMAND_WARMUP_STEPS, COMMAND_LOOP = 50, 10, 10


def _command_finetune_rows(rounds, fixed_padding=False):
  """run_classifier.py --do_train on SST-2 from the shared MiniLM, as a user runs it, in
  float32 and bfloat16 alternately: the seconds of COMMAND_TIMED_STEPS steps after the
  first COMMAND_WARMUP_STEPS (from the loop's own examples/s, logged to TensorBoard every
  loop call) and of the whole process. fixed_padding: with --fixed_padding, rows named
  classifier_command_fixed128_*."""
  dtypes = _precisions()
  what_ran = "command_fixed128" if fixed_padding else "command"
  steps = COMMAND_WARMUP_STEPS + COMMAND_TIMED_STEPS
  def command_of(dtype, output_dir):
    return [sys.executable, os.path.join(sst2.ROOT, "run_classifier.py"),
            "--task_name=sst2", "--do_train", f"--data_dir={SST2}",
            f"--vocab_file={sst2.MODEL_VOCAB}",
            f"--bert_config_file={os.path.join(MODEL_DIR, 'bert_config.json')}",
            f"--init_checkpoint={os.path.join(MODEL_DIR, 'bert_model.ckpt')}",
            f"--max_seq_length={SEQ}", f"--train_batch_size={BATCH}",
            "--learning_rate=2e-5", f"--num_train_steps={steps}",
            f"--steps_per_loop={COMMAND_LOOP}", f"--log_every_steps={COMMAND_LOOP}",
            f"--save_checkpoints_steps={10 * steps}", f"--output_dir={output_dir}",
            f"--dtype={dtype}"] + (["--fixed_padding"] if fixed_padding else [])

  with tempfile.TemporaryDirectory(prefix="bench-classifier-command-") as work:
    timed, wall = command_runs.alternate(command_of, dtypes, rounds, work,
                                         COMMAND_WARMUP_STEPS, steps, COMMAND_LOOP, BATCH)
  scope = (f"run_classifier.py --task_name=sst2 --do_train from the shared MiniLM, batch "
           f"{BATCH}, --max_seq_length={SEQ}"
           f"{' --fixed_padding' if fixed_padding else ''}, {steps} steps (--steps_per_loop="
           f"{COMMAND_LOOP}); {machine.cpu_model()}; {machine.load_average()}")
  rows = []
  for dtype in dtypes:
    rows += [
        {"name": f"classifier_{what_ran}_finetune_steps" + _suffix(dtype),
         "value": round(statistics.median(timed[dtype]), 2), "unit": "s (median)",
         "note": f"--dtype={dtype}: {COMMAND_TIMED_STEPS} steps after the first "
                 f"{COMMAND_WARMUP_STEPS}, per round " + ", ".join(
                     f"{s:.2f}" for s in timed[dtype]) + f"; {scope}"},
        {"name": f"classifier_{what_ran}_finetune_process" + _suffix(dtype),
         "value": round(statistics.median(wall[dtype]), 1), "unit": "s (median)",
         "note": f"--dtype={dtype}, the whole process, per round " + ", ".join(
             f"{s:.1f}" for s in wall[dtype])}]
  if "bfloat16" in dtypes:
    for what, seconds in (("steps", timed), ("process", wall)):
      ratios = [a / b for a, b in zip(seconds["float32"], seconds["bfloat16"])]
      rows.append({"name": f"classifier_{what_ran}_finetune_{what}_bf16_speedup",
                   "value": round(statistics.median(ratios), 2), "unit": "x",
                   "note": f"float32 s / bfloat16 s per round: median "
                           f"{machine.spread(ratios, '{:.2f}')}"})
  else:
    rows += _no_bfloat16_rows(f"{what_ran}_finetune")
  return rows


def _hf_rows(tf, config, tokenizer, examples, quick):
  if hugging_face_launcher.hf_python() is None:
    return [{"name": "classifier_hf_comparison", "value": "skipped", "unit": "",
             "note": hugging_face_launcher.HF_HINT}]
  with tempfile.TemporaryDirectory(prefix="bench-classifier-hf-") as workdir:
    return (_hf_predict_rows(tf, config, tokenizer, examples, workdir)
            + _hf_finetune_rows(tf, config, tokenizer, quick, workdir))


def run(quick=False, hf_only=False, command_rounds=None, command_fixed_padding=False):
  """Returns [{name, value, unit, note}]. hf_only: only the comparisons with transformers.
  command_rounds: rounds of run_classifier.py's own fine-tuning in each precision (0: none;
  default 1 with quick, else 3); command_fixed_padding: those rounds once more with
  --fixed_padding."""
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
  rounds = (1 if quick else 3) if command_rounds is None else command_rounds
  if rounds and not hf_only:
    rows += _command_finetune_rows(rounds)
    if command_fixed_padding:
      rows += _command_finetune_rows(rounds, fixed_padding=True)
  return rows


if __name__ == "__main__":
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  rounds = [int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--command_rounds=")]
  for row in run(quick="--quick" in sys.argv, hf_only="--hf_only" in sys.argv,
                 command_rounds=rounds[-1] if rounds else None,
                 command_fixed_padding="--command_fixed_padding" in sys.argv):
    print(f"{row['name']:50s} {row['value']!s:>10} {row['unit']:12s} {row['note']}")
