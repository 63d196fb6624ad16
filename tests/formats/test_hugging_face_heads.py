"""Every fine-tuned head leaves for Hugging Face: fine-tune a tiny model a few
steps on real rows (MRPC, STS-B, a SQuAD slice, a CoNLL slice, SWAG), export it with
export_encoder.py --format=huggingface, and compare transformers' AutoModelFor* (and for
MRPC its pipeline) with our own predictions of the same examples.

Slow (five fine-tuning runs); needs the torch + transformers environment (.venv-hf,
`make bench-hf-setup`) and ../shared/data, and skips with a hint without them.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ROOT, UNCASED_VOCAB, shared_path

HF_PYTHON = os.path.join(ROOT, ".venv-hf", "bin", "python")
HF_HINT = "torch + transformers environment absent: run make bench-hf-setup"
SEQ = 64
TINY_CONFIG = {
    "vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 3,
    "num_attention_heads": 4, "intermediate_size": 37, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02,
}
pytestmark = pytest.mark.slow

# Runs in .venv-hf: loads the export with the class its config.json names, runs the
# arrays of a .npz, writes the outputs (and the config's labels) to another .npz.
_HF_RUN = textwrap.dedent(r"""
    import json, sys
    import numpy as np, torch, transformers
    model_dir, inputs, output = sys.argv[1:4]
    config = transformers.AutoConfig.from_pretrained(model_dir)
    cls = getattr(transformers, config.architectures[0])
    auto = {"BertForSequenceClassification": transformers.AutoModelForSequenceClassification,
            "BertForTokenClassification": transformers.AutoModelForTokenClassification,
            "BertForQuestionAnswering": transformers.AutoModelForQuestionAnswering,
            "BertForMultipleChoice": transformers.AutoModelForMultipleChoice}[cls.__name__]
    model = auto.from_pretrained(model_dir).eval()
    assert type(model).__name__ == cls.__name__, type(model)
    data = np.load(inputs)
    with torch.no_grad():
      out = model(input_ids=torch.tensor(data["input_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(data["input_mask"], dtype=torch.long),
                  token_type_ids=torch.tensor(data["segment_ids"], dtype=torch.long))
    arrays = {k: v.numpy() for k, v in out.items() if hasattr(v, "numpy")}
    if "texts_a" in data:  # the pipeline, on raw text, as a user would call it
      # truncated to our max_seq_length, as a user of a model fine-tuned at it would
      length = data["input_ids"].shape[1]
      pipe = transformers.pipeline("text-classification", model=model_dir, top_k=None)
      pairs = list(zip(data["texts_a"].tolist(), data["texts_b"].tolist()))
      answers = pipe([{"text": a, "text_pair": b} for a, b in pairs], truncation=True,
                     max_length=length)
      arrays["same_tokens"] = np.array([
          pipe.tokenizer(a, b, truncation=True, max_length=length)["input_ids"]
          == row[mask == 1].tolist()
          for (a, b), row, mask in zip(pairs, data["input_ids"], data["input_mask"])])
      arrays["pipeline"] = np.array([[{d["label"]: d["score"] for d in row}[l]
                                      for l in ("0", "1")] for row in answers])
    arrays["meta"] = np.array(json.dumps({"id2label": config.id2label,
                                          "problem_type": config.problem_type,
                                          "architecture": cls.__name__}))
    np.savez(output, **arrays)
""")


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  env.pop("PYTHONPATH", None)
  return env


def _run(script, args, timeout=900):
  result = subprocess.run([sys.executable, os.path.join(ROOT, script)] + args,
                          capture_output=True, text=True, env=_env(), timeout=timeout,
                          cwd=ROOT)
  assert result.returncode == 0, result.stderr[-3000:]
  return result


@pytest.fixture
def tiny(tmp_path):
  if not os.path.exists(HF_PYTHON):
    pytest.skip(HF_HINT)
  config = tmp_path / "bert_config.json"
  config.write_text(json.dumps(TINY_CONFIG))
  common = [f"--vocab_file={UNCASED_VOCAB}", f"--bert_config_file={config}",
            f"--max_seq_length={SEQ}", "--learning_rate=2e-3", "--train_batch_size=8"]
  return tmp_path, config, common


def _export_and_run(tmp_path, config, out, arrays):
  """HF export of `out`'s checkpoint; transformers' outputs on `arrays` (and its meta)."""
  target = tmp_path / "hf"
  result = _run("export_encoder.py", [
      "--format=huggingface", f"--init_checkpoint={out}", f"--bert_config_file={config}",
      f"--vocab_file={UNCASED_VOCAB}", f"--export_dir={target}"])
  np.savez(tmp_path / "inputs.npz", **arrays)
  hf = subprocess.run([HF_PYTHON, "-c", _HF_RUN, str(target), str(tmp_path / "inputs.npz"),
                       str(tmp_path / "hf_out.npz")], capture_output=True, text=True,
                      env=_env(), timeout=600)
  assert hf.returncode == 0, hf.stderr[-3000:]
  outputs = dict(np.load(tmp_path / "hf_out.npz"))
  return outputs, json.loads(str(outputs.pop("meta"))), result.stderr, target


def _ours(out, build):
  """Our model, as the run left it, from its checkpoint in `out`."""
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  model = build(modeling.BertConfig.from_dict(TINY_CONFIG))[0]
  report = checkpoints.load_checkpoint(model, str(out))
  assert report["whole_model"]
  return model


def _predict(model, arrays):
  outputs = model({k: arrays[k].astype(np.int32) for k in
                   ("input_ids", "input_mask", "segment_ids")}, training=False)
  return {k: np.asarray(v) for k, v in outputs.items()}


def _glue(folder, task, rows):
  folder.mkdir()
  for split in ("train", "dev", "test"):
    with open(shared_path("glue", task, f"{split}.tsv"), "rb") as handle:
      lines = handle.read().split(b"\n")
    (folder / f"{split}.tsv").write_bytes(b"\n".join(lines[:rows + 1]) + b"\n")


def _pair_features(examples, labels):
  from bert.classifier import classifier_features  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  features = [classifier_features.convert_single_example(e, labels, SEQ, full)
              for e in examples]
  return {"input_ids": np.array([f.input_ids for f in features]),
          "input_mask": np.array([f.input_mask for f in features]),
          "segment_ids": np.array([f.segment_ids for f in features])}


def test_mrpc_classifier(tiny):
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  tmp_path, config, common = tiny
  data, out = tmp_path / "mrpc", tmp_path / "out"
  _glue(data, "MRPC", 32)
  _run("run_classifier.py", ["--task_name=MRPC", "--do_train", "--do_predict",
                             f"--data_dir={data}", "--num_train_steps=8",
                             f"--output_dir={out}"] + common)
  examples = classifier_data.MrpcProcessor().get_test_examples(str(data))[:16]
  arrays = _pair_features(examples, ["0", "1"])
  arrays.update(texts_a=np.array([e.text_a for e in examples]),
                texts_b=np.array([e.text_b for e in examples]))
  hf, meta, stderr, _ = _export_and_run(tmp_path, config, out, arrays)
  assert "Not exported" not in stderr
  assert meta == {"id2label": {"0": "0", "1": "1"}, "architecture":
                  "BertForSequenceClassification", "problem_type": "single_label_classification"}
  ours = np.loadtxt(out / "test_results.tsv", delimiter="\t")[:16]  # the run's own output
  hf_probs = np.exp(hf["logits"]) / np.exp(hf["logits"]).sum(1, keepdims=True)
  diff = np.abs(hf_probs - ours).max()
  # The pipeline tokenizes the raw pairs itself: rows it tokenizes as the original may
  # differ only at the documented tie (equal segments: Hugging Face trims the first).
  same = hf["same_tokens"]
  segment_a = (arrays["segment_ids"] == 0) & (arrays["input_mask"] == 1)
  segment_b = arrays["segment_ids"] == 1
  # Trimmed through a tie: the original ends with the first segment one token longer
  # ([CLS] a [SEP] b [SEP] filling the length), Hugging Face with the second.
  ties = ((arrays["input_mask"].sum(1) == SEQ)
          & (segment_a.sum(1) - 2 == segment_b.sum(1) - 1 + 1))
  assert not (~same & ~ties).any(), np.nonzero(~same)
  pipe_diff = np.abs(hf["pipeline"] - ours)[same].max()
  print(f"MRPC: AutoModel probabilities max diff {diff:.2e}; pipeline on raw text "
        f"{pipe_diff:.2e} over the {same.sum()} of {len(same)} pairs it tokenizes as "
        f"the original ({(~same).sum()} differ at the trimming tie)")
  assert diff < 1e-5 and pipe_diff < 1e-5 and same.sum() >= 12
  assert (hf_probs.argmax(1) == ours.argmax(1)).all()


def test_stsb_regression(tiny):
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  tmp_path, config, common = tiny
  data, out = tmp_path / "stsb", tmp_path / "out"
  _glue(data, "STS-B", 32)
  _run("run_classifier.py", ["--task_name=STS-B", "--do_train", f"--data_dir={data}",
                             "--num_train_steps=8", f"--output_dir={out}"] + common)
  examples = classifier_data.StsbProcessor().get_dev_examples(str(data))[:16]
  arrays = _pair_features(examples, None)
  hf, meta, stderr, _ = _export_and_run(tmp_path, config, out, arrays)
  assert "Not exported" not in stderr
  assert meta["problem_type"] == "regression" and hf["logits"].shape == (16, 1)
  ours = _predict(_ours(out, lambda c: heads.build_classifier_model(c, 1)), arrays)
  diff = np.abs(hf["logits"] - ours["logits"]).max()
  print(f"STS-B: score max diff {diff:.2e}")
  assert diff < 1e-5 and np.std(ours["logits"]) > 0


def test_squad_span_head(tiny):
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.squad import squad_data  # pylint: disable=g-import-not-at-top
  from bert.squad import squad_features  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  tmp_path, config, common = tiny
  out = tmp_path / "out"
  train = shared_path("squad", "dev-v1.1.json")
  _run("run_squad.py", ["--do_train", f"--train_file={train}", "--train_articles=0:1",
                        "--max_train_examples=24", "--num_train_steps=6", "--doc_stride=32",
                        "--max_query_length=16", f"--output_dir={out}"] + common)
  data = squad_data.load_squad_json(train)["data"][1:2]
  examples = squad_data.parse_squad_examples(data, False, False, path=train)[:8]
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  features = squad_features.convert_examples_to_features(examples, full, SEQ, 32, 16,
                                                         is_training=False)[:16]
  arrays = {"input_ids": np.array([f.input_ids for f in features]),
            "input_mask": np.array([f.input_mask for f in features]),
            "segment_ids": np.array([f.segment_ids for f in features])}
  hf, meta, stderr, _ = _export_and_run(tmp_path, config, out, arrays)
  # BertForQuestionAnswering has no pooler: the only weights left out, and named.
  assert ("Not exported (no place in Hugging Face's BertForQuestionAnswering): "
          "bert/pooler/dense/bias, bert/pooler/dense/kernel") in stderr
  assert meta["architecture"] == "BertForQuestionAnswering"
  ours = _predict(_ours(out, heads.build_squad_model), arrays)
  diffs = [np.abs(hf[f"{k}_logits"] - ours[f"{k}_logits"]).max() for k in ("start", "end")]
  print(f"SQuAD: start logits max diff {diffs[0]:.2e}, end {diffs[1]:.2e}")
  assert max(diffs) < 1e-4
  for name in ("start", "end"):
    masked = lambda x: np.where(arrays["segment_ids"] == 1, x, -1e9)  # noqa: E731
    assert (masked(hf[f"{name}_logits"]).argmax(1)
            == masked(ours[f"{name}_logits"]).argmax(1)).all()


def test_conll_token_head(tiny):
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.tagging import tagging_ner_data  # pylint: disable=g-import-not-at-top
  from bert.tagging import tagging_data  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  tmp_path, config, common = tiny
  data, out = tmp_path / "conll", tmp_path / "out"
  data.mkdir()
  for name in ("train.txt", "valid.txt"):  # the first 600 lines of each file
    with open(shared_path("conll2003", name), encoding="utf-8") as handle:
      (data / name).write_text("".join(handle.readlines()[:600]), encoding="utf-8")
  _run("run_ner.py", ["--do_train", f"--data_dir={data}", "--num_train_steps=8",
                      f"--output_dir={out}"] + common)
  examples = tagging_data.read_conll(str(data / "valid.txt"))[:16]
  labels = tagging_ner_data.make_label_list(["PER", "ORG", "LOC", "MISC"])
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  features = tagging_data.features_to_arrays(
      tagging_data.convert_examples_to_features(examples, labels, SEQ, full))
  arrays = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
  hf, meta, stderr, _ = _export_and_run(tmp_path, config, out, arrays)
  assert "bert/pooler/dense/bias, bert/pooler/dense/kernel" in stderr
  assert meta["architecture"] == "BertForTokenClassification"
  assert list(meta["id2label"].values()) == list(labels)
  ours = _predict(_ours(out, lambda c: heads.build_token_classifier_model(
      c, len(labels))), arrays)
  real = arrays["input_mask"] == 1
  ours_tags = np.array(labels)[ours["logits"].argmax(-1)][real]
  hf_tags = np.array([meta["id2label"][str(i)] for i in hf["logits"].argmax(-1)[real]])
  diff = np.abs(hf["logits"] - ours["logits"])[real].max()
  print(f"CoNLL: {real.sum()} tokens, tags identical: {(ours_tags == hf_tags).all()}, "
        f"logits max diff {diff:.2e}")
  assert (ours_tags == hf_tags).all() and diff < 1e-4


def test_swag_choice_head(tiny):
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.swag import swag_data  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  tmp_path, config, common = tiny
  data, out = tmp_path / "swag", tmp_path / "out"
  data.mkdir()
  source = os.path.dirname(shared_path("glue_format_samples", "SWAG", "val.csv"))
  for name in os.listdir(source):
    with open(os.path.join(source, name), "rb") as handle:
      (data / name).write_bytes(handle.read())
  _run("run_swag.py", ["--do_train", f"--data_dir={data}", "--num_train_steps=4",
                       f"--output_dir={out}"] + common)
  examples = swag_data.read_swag_examples(str(data / "val.csv"))[:8]
  full = tokenization.FullTokenizer(UNCASED_VOCAB, True)
  features = swag_data.convert_examples_to_features(examples, SEQ, full)
  arrays = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
  hf, meta, stderr, _ = _export_and_run(tmp_path, config, out, arrays)
  assert "Not exported" not in stderr and meta["architecture"] == "BertForMultipleChoice"
  ours = _predict(_ours(out, lambda c: heads.build_multiple_choice_model(c, 4)), arrays)
  diff = np.abs(hf["logits"] - ours["logits"]).max()
  print(f"SWAG: choice logits max diff {diff:.2e}")
  assert diff < 1e-5
