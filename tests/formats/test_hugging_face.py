"""hugging_face.py and export_encoder.py --format=huggingface: BERT out to Hugging Face.

Default tests (no torch): the safetensors keys, shapes and values against the model's own
weights (dense kernels transposed), the config and tokenizer files, the name mapping as the
exact inverse of hugging_face.hugging_face_to_google_name, and the script's command line.

Slow tests: in the separate torch + transformers environment that `make bench-hf-setup`
builds (.venv-hf), transformers' own BertTokenizer, BertModel and BertForPreTraining load
the export and are compared with extract_features.py and our pretraining model, from the
shared Google checkpoint and from a checkpoint run_pretraining.py wrote.
"""

import json
import os
import subprocess
import textwrap

import numpy as np
import pytest
from safetensors.numpy import load_file

from bert.formats import checkpoint_files

from bert.training import checkpoints

from bert.formats import hugging_face
from bert import heads
from bert import modeling
from bert.training import model_config
import cli_harness
from conftest import MINILM_DIR, ROOT, shared_path
import tiny

HF_PYTHON = os.path.join(ROOT, ".venv-hf", "bin", "python")
HF_HINT = "torch + transformers environment absent: run make bench-hf-setup"


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  env.pop("PYTHONPATH", None)
  return env


def _tiny_config(hidden_act="gelu_exact", vocab_size=61):
  return tiny.tiny_config(vocab_size, hidden_act=hidden_act, max_position_embeddings=40)


def _randomize(model, seed=0):
  """Distinct random values in every weight (biases and LayerNorms included)."""
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    variable.assign(rng.normal(0.0, 0.5, variable.shape).astype(np.float32))


def _write_vocab(path, size):
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  tokens += [f"w{index}" for index in range(size - len(tokens))]
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path)


def _layer_names(index):
  prefix = f"bert.encoder.layer.{index}."
  return [prefix + name for name in (
      "attention.self.query.weight", "attention.self.query.bias",
      "attention.self.key.weight", "attention.self.key.bias",
      "attention.self.value.weight", "attention.self.value.bias",
      "attention.output.dense.weight", "attention.output.dense.bias",
      "attention.output.LayerNorm.weight", "attention.output.LayerNorm.bias",
      "intermediate.dense.weight", "intermediate.dense.bias",
      "output.dense.weight", "output.dense.bias",
      "output.LayerNorm.weight", "output.LayerNorm.bias")]


ENCODER_KEYS = (["bert.embeddings.word_embeddings.weight",
                 "bert.embeddings.position_embeddings.weight",
                 "bert.embeddings.token_type_embeddings.weight",
                 "bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.bias"]
                + [n for i in range(3) for n in _layer_names(i)]
                + ["bert.pooler.dense.weight", "bert.pooler.dense.bias"])
MLM_KEYS = ["cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
            "cls.predictions.transform.LayerNorm.weight",
            "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias"]
NSP_KEYS = ["cls.seq_relationship.weight", "cls.seq_relationship.bias"]


# --------------------------------------------------------------------------- names


def test_names_are_the_exact_inverse_of_the_reading_side():
  config = _tiny_config()
  names = set(modeling.google_variable_map(heads.build_pretraining_model(config)[0]))
  assert len(names) == len(ENCODER_KEYS) + len(MLM_KEYS) + len(NSP_KEYS)
  mapped = {hugging_face.google_to_hugging_face_name(n) for n in names}
  assert mapped == set(ENCODER_KEYS + MLM_KEYS + NSP_KEYS)
  for name in names:
    assert hugging_face.hugging_face_to_google_name(
        hugging_face.google_to_hugging_face_name(name)) == name
  assert (hugging_face.google_to_hugging_face_name("bert/encoder/layer_11/output/dense/kernel")
          == "bert.encoder.layer.11.output.dense.weight")
  # Heads of our fine-tuning tasks have no BertForPreTraining place.
  for other in modeling.google_variable_map(heads.build_squad_model(config)[0]):
    if not other.startswith("bert/"):
      assert hugging_face.google_to_hugging_face_name(other) is None, other
  assert hugging_face.google_to_hugging_face_name("output_weights") is None
  assert hugging_face.google_to_hugging_face_name("bert/encoder/layer_0/adam_m") is None


def test_exportable_names_pick_the_architecture_and_refuse_half_heads():
  model, _ = heads.build_pretraining_model(_tiny_config())
  names = list(modeling.google_variable_map(model))
  encoder = [n for n in names if n.startswith("bert/")]
  mlm = [n for n in names if n.startswith("cls/predictions/")]
  nsp = [n for n in names if n.startswith("cls/seq_relationship/")]
  assert hugging_face.exportable_names(names) == (sorted(names), "BertForPreTraining")
  assert hugging_face.exportable_names(encoder) == (sorted(encoder), "BertModel")
  assert hugging_face.exportable_names(encoder + mlm)[1] == "BertForMaskedLM"
  assert hugging_face.exportable_names(encoder + nsp)[1] == "BertForNextSentencePrediction"
  assert hugging_face.exportable_names(encoder + ["output_weights"])[0] == sorted(encoder)
  with pytest.raises(ValueError, match="incomplete cls/predictions head"):
    hugging_face.exportable_names(encoder + ["cls/predictions/output_bias"])


# --------------------------------------------------------------------------- writer


@pytest.fixture(scope="module")
def tiny_pretraining(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("hf")
  config = _tiny_config()
  model, encoder = heads.build_pretraining_model(config)
  _randomize(model)
  vocab_file = _write_vocab(tmp / "vocab.txt", config.vocab_size)
  export_dir = tmp / "hf"
  architecture = hugging_face.write_hugging_face(
      str(export_dir), hugging_face.model_weights(model), config, vocab_file,
      do_lower_case=False)
  return {"tmp": tmp, "config": config, "model": model, "encoder": encoder,
          "vocab_file": vocab_file, "dir": export_dir, "architecture": architecture}


def test_safetensors_hold_the_weights_under_hugging_face_names(tiny_pretraining):
  export_dir, model = tiny_pretraining["dir"], tiny_pretraining["model"]
  assert tiny_pretraining["architecture"] == "BertForPreTraining"
  assert sorted(os.listdir(export_dir)) == ["config.json", "model.safetensors",
                                            "tokenizer_config.json", "vocab.txt"]
  state = load_file(str(export_dir / "model.safetensors"))
  # transformers 5's own save_pretrained layout: no tied decoder weight or bias.
  assert sorted(state) == sorted(ENCODER_KEYS + MLM_KEYS + NSP_KEYS)
  assert all(value.dtype == np.float32 for value in state.values())
  google = {name: v.numpy() for name, v in modeling.google_variable_map(model).items()}
  layer = "bert/encoder/layer_1"
  assert state["bert.encoder.layer.1.intermediate.dense.weight"].shape == (37, 32)
  assert state["bert.encoder.layer.1.output.dense.weight"].shape == (32, 37)
  np.testing.assert_array_equal(state["bert.encoder.layer.1.intermediate.dense.weight"],
                                google[f"{layer}/intermediate/dense/kernel"].T)
  np.testing.assert_array_equal(state["bert.encoder.layer.1.attention.self.key.weight"],
                                google[f"{layer}/attention/self/key/kernel"].T)
  np.testing.assert_array_equal(state["bert.encoder.layer.1.output.LayerNorm.weight"],
                                google[f"{layer}/output/LayerNorm/gamma"])
  np.testing.assert_array_equal(state["bert.embeddings.word_embeddings.weight"],
                                tiny_pretraining["encoder"].embedding_table.numpy())
  assert state["bert.embeddings.position_embeddings.weight"].shape == (40, 32)
  np.testing.assert_array_equal(state["cls.seq_relationship.weight"],
                                google["cls/seq_relationship/output_weights"])
  assert state["cls.seq_relationship.weight"].shape == (2, 32)
  np.testing.assert_array_equal(state["cls.predictions.bias"],
                                google["cls/predictions/output_bias"])
  np.testing.assert_array_equal(state["bert.pooler.dense.weight"],
                                google["bert/pooler/dense/kernel"].T)
  # Every weight, by the mapping: each value appears once, transposed exactly for kernels.
  for name, value in google.items():
    expected = value.T if name.endswith("/kernel") else value
    np.testing.assert_array_equal(
        state[hugging_face.google_to_hugging_face_name(name)], expected, err_msg=name)


def test_config_and_tokenizer_files(tiny_pretraining):
  export_dir, config = tiny_pretraining["dir"], tiny_pretraining["config"]
  with open(export_dir / "config.json", encoding="utf-8") as handle:
    written = json.load(handle)
  assert written == {
      "add_cross_attention": False, "architectures": ["BertForPreTraining"],
      "attention_probs_dropout_prob": 0.1, "classifier_dropout": None, "dtype": "float32",
      "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 32,
      "initializer_range": 0.02, "intermediate_size": 37, "is_decoder": False,
      "layer_norm_eps": 1e-12, "max_position_embeddings": 40, "model_type": "bert",
      "num_attention_heads": 4, "num_hidden_layers": 3, "pad_token_id": 0,
      "tie_word_embeddings": True, "type_vocab_size": 2, "use_cache": True,
      "vocab_size": 61}
  # Our gelu_exact is their "gelu"; read back by our reader, the same config.
  assert model_config.load_bert_config(str(export_dir / "config.json")) == config
  tanh = hugging_face.hugging_face_config(_tiny_config("gelu"), "BertModel", pad_token_id=3)
  assert (tanh["hidden_act"], tanh["architectures"], tanh["pad_token_id"]) == (
      "gelu_new", ["BertModel"], 3)
  assert hugging_face.config_from_hugging_face(tanh) == _tiny_config("gelu")
  with open(export_dir / "tokenizer_config.json", encoding="utf-8") as handle:
    assert json.load(handle) == {
        "tokenizer_class": "BertTokenizer", "do_lower_case": False, "strip_accents": None,
        "tokenize_chinese_chars": True, "model_max_length": 40, "unk_token": "[UNK]",
        "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
        "mask_token": "[MASK]"}
  with open(tiny_pretraining["vocab_file"], "rb") as a, open(export_dir / "vocab.txt",
                                                              "rb") as b:
    assert a.read() == b.read()


def test_export_reads_back_into_the_same_model(tiny_pretraining):
  """Our Hugging Face reader (checkpoints.py) restores every weight and output exactly."""
  config, model = tiny_pretraining["config"], tiny_pretraining["model"]
  fresh, _ = heads.build_pretraining_model(config)
  report = checkpoints.load_checkpoint(fresh, str(tiny_pretraining["dir"]))
  assert report["format"] == checkpoint_files.HUGGING_FACE and not report["missing"]
  for name, variable in modeling.google_variable_map(fresh).items():
    np.testing.assert_array_equal(variable.numpy(),
                                  modeling.google_variable_map(model)[name].numpy())
  rng = np.random.default_rng(1)
  inputs = {"input_ids": rng.integers(0, 61, (2, 9)).astype(np.int32),
            "input_mask": np.ones((2, 9), np.int32),
            "segment_ids": np.zeros((2, 9), np.int32),
            "masked_lm_positions": np.array([[1, 4], [2, 8]], np.int32)}
  expected, got = model(inputs, training=False), fresh(inputs, training=False)
  for key in ("masked_lm_logits", "next_sentence_logits"):
    np.testing.assert_array_equal(got[key], expected[key])


def test_refusals_leave_nothing_behind(tiny_pretraining, tmp_path):
  config, model = tiny_pretraining["config"], tiny_pretraining["model"]
  weights = hugging_face.model_weights(model)
  occupied = tmp_path / "occupied"
  occupied.mkdir()
  (occupied / "keep.txt").write_text("mine")
  with pytest.raises(Exception, match="exists and is not empty"):
    hugging_face.write_hugging_face(str(occupied), weights, config,
                                    tiny_pretraining["vocab_file"], True)
  assert os.listdir(occupied) == ["keep.txt"]
  # A missing vocabulary, a config the weights do not fit, a weight with no Hugging
  # Face name: refused, and nothing is left, neither the target nor a temporary.
  with pytest.raises(Exception, match="no_vocab.txt"):
    hugging_face.write_hugging_face(str(tmp_path / "out"), weights, config,
                                    str(tmp_path / "no_vocab.txt"), True)
  wrong = _tiny_config(vocab_size=70)
  with pytest.raises(ValueError, match=r"word_embeddings.weight: shape \[61, 32\] does not"):
    hugging_face.write_hugging_face(str(tmp_path / "out"), weights, wrong,
                                    tiny_pretraining["vocab_file"], True)
  with pytest.raises(ValueError, match="output_weights: no Hugging Face"):
    hugging_face.write_hugging_face(str(tmp_path / "out"), {**weights, "output_weights":
                                                            np.zeros((2, 32))}, config,
                                    tiny_pretraining["vocab_file"], True)
  assert sorted(os.listdir(tmp_path)) == ["occupied"]


# --------------------------------------------------------------------------- the script


def _export(args):
  # The command line's real path in a warm process (no TensorFlow start-up per run).
  return cli_harness.run("export_encoder.py", ["--format=huggingface", *args], timeout=600)


def test_script_exports_a_google_checkpoint_with_heads(tmp_path):
  config = _tiny_config("gelu", vocab_size=50)
  model, _ = heads.build_pretraining_model(config)
  _randomize(model, seed=5)
  config.to_json_file(str(tmp_path / "bert_config.json"))
  checkpoint_files.save_google_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
  vocab_file = _write_vocab(tmp_path / "vocab.txt", 50)
  common = [f"--bert_config_file={tmp_path}/bert_config.json", f"--vocab_file={vocab_file}",
            f"--init_checkpoint={tmp_path}/bert_model.ckpt", "--do_lower_case=True"]
  refused = _export(common + [f"--export_dir={tmp_path}/refused", "--seq_length=16"])
  assert refused.returncode == 2, refused.stderr[-2000:]
  errors = [line for line in refused.stderr.splitlines() if ": error: " in line]
  assert errors == ["export_encoder.py: error: --seq_length=16 applies to --format=tfhub "
                    "only; a Hugging Face export takes the model's max_position_embeddings "
                    "as model_max_length"], refused.stderr[-2000:]
  result = _export(common + [f"--export_dir={tmp_path}/hf"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert not (tmp_path / "refused").exists()
  assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]
  state = load_file(str(tmp_path / "hf" / "model.safetensors"))
  assert sorted(state) == sorted(ENCODER_KEYS + MLM_KEYS + NSP_KEYS)
  for name, variable in modeling.google_variable_map(model).items():
    value = variable.numpy()
    np.testing.assert_array_equal(state[hugging_face.google_to_hugging_face_name(name)],
                                  value.T if name.endswith("/kernel") else value)
  with open(tmp_path / "hf" / "config.json", encoding="utf-8") as handle:
    written = json.load(handle)
  assert (written["architectures"], written["hidden_act"]) == (["BertForPreTraining"],
                                                               "gelu_new")
  with open(tmp_path / "hf" / "tokenizer_config.json", encoding="utf-8") as handle:
    assert json.load(handle)["do_lower_case"] is True


# --------------------------------------------------------------------------- transformers

# Runs in the torch + transformers environment: what a Hugging Face user has. Writes the
# tokens, ids and last_hidden_state of every example (and BertForPreTraining's logits
# on the first MLM_POSITIONS positions when the export has the heads).
_HF_DRIVER = textwrap.dedent(r"""
    import json, sys
    import numpy as np
    import torch
    from transformers import BertForPreTraining, BertModel, BertTokenizer

    export_dir, examples_file, out, positions = sys.argv[1:5]
    positions = int(positions)
    with open(examples_file, encoding="utf-8") as handle:
      examples = json.load(handle)
    tokenizer = BertTokenizer.from_pretrained(export_dir)
    model, info = BertModel.from_pretrained(export_dir, output_loading_info=True)
    heads = None
    if positions:
      heads, heads_info = BertForPreTraining.from_pretrained(export_dir,
                                                             output_loading_info=True)
      heads.eval()
    model.eval()
    meta = {"tokens": [], "class": type(tokenizer).__name__,
            "hidden_act": model.config.hidden_act,
            "loading_info": {k: sorted(map(str, v)) for k, v in info.items()}}
    if heads is not None:
      meta["heads_loading_info"] = {k: sorted(map(str, v)) for k, v in heads_info.items()}
    arrays = {}
    with torch.no_grad():
      for index, (a, b) in enumerate(examples):
        encoded = tokenizer(a, b, return_tensors="pt") if b is not None else tokenizer(
            a, return_tensors="pt")
        ids = encoded["input_ids"][0]
        meta["tokens"].append(tokenizer.convert_ids_to_tokens(ids.tolist()))
        arrays[f"ids/{index}"] = ids.numpy()
        arrays[f"types/{index}"] = encoded["token_type_ids"][0].numpy()
        arrays[f"hidden/{index}"] = model(**encoded).last_hidden_state[0].numpy()
        if heads is not None:
          output = heads(**encoded)
          arrays[f"mlm/{index}"] = output.prediction_logits[0, :positions].numpy()
          arrays[f"nsp/{index}"] = output.seq_relationship_logits[0].numpy()
    with open(out + ".json", "w", encoding="utf-8") as handle:
      json.dump(meta, handle, ensure_ascii=False)
    np.savez(out, **arrays)
""")
MAX_SEQ_LENGTH = 256  # no example below comes near it: nothing is truncated
MLM_POSITIONS = 6


def _hf_python():
  if not os.path.exists(HF_PYTHON):
    pytest.skip(HF_HINT)
  return HF_PYTHON


def _multilingual_examples():
  """Real text: the 15 XNLI languages as pairs and single sentences, plus the original
  release's sample text (CJK, Bengali, modifier letters) and Korean reviews."""
  path = shared_path("glue_format_samples", "XNLI-1.0", "xnli.dev.tsv")
  with open(path, encoding="utf-8") as handle:
    rows = [line.rstrip("\n").split("\t") for line in handle][1:]
  examples = [(row[6], row[7]) for row in rows] + [(row[7], None) for row in rows]
  for name in (("corpora", "sample_text.txt"), ("korean", "corpus", "nsmc_reviews.txt")):
    with open(shared_path(*name), encoding="utf-8") as handle:
      lines = [line.strip() for _, line in zip(range(40), handle) if line.strip()]
    examples += [(line, None) for line in lines[:6]]
  examples.append(("The café in Zürich serves 北京 dumplings, naïvely priced at €5!",
                   "Ünïcödé CAFÉ\tx ﬁne"))
  return examples


def _extract_features(tmp_path, model_dir, init_checkpoint, examples, do_lower_case):
  """extract_features.py's last layer: [(tokens, float [tokens, hidden])] per example."""
  input_file, output_file = tmp_path / "input.txt", tmp_path / "features.jsonl"
  input_file.write_text("".join((a if b is None else f"{a} ||| {b}") + "\n"
                                for a, b in examples), encoding="utf-8")
  result = cli_harness.run(
      "extract_features.py",
      [f"--input_file={input_file}", f"--output_file={output_file}",
       f"--vocab_file={model_dir}/vocab.txt", f"--bert_config_file={model_dir}/bert_config.json",
       f"--init_checkpoint={init_checkpoint}", f"--do_lower_case={do_lower_case}",
       "--layers=-1", f"--max_seq_length={MAX_SEQ_LENGTH}", "--batch_size=8"], timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  features = []
  with open(output_file, encoding="utf-8") as handle:
    for line in handle:
      tokens = json.loads(line)["features"]
      features.append(([t["token"] for t in tokens],
                       np.array([t["layers"][0]["values"] for t in tokens], np.float32)))
  assert len(features) == len(examples)
  return features


def _export_and_run_transformers(tmp_path, model_dir, init_checkpoint, do_lower_case,
                                 examples, positions):
  export_dir = tmp_path / "hf"
  result = _export([f"--bert_config_file={model_dir}/bert_config.json",
                    f"--vocab_file={model_dir}/vocab.txt",
                    f"--init_checkpoint={init_checkpoint}",
                    f"--do_lower_case={do_lower_case}", f"--export_dir={export_dir}"])
  assert result.returncode == 0, result.stderr[-3000:]
  script, examples_file, out = tmp_path / "hf_driver.py", tmp_path / "ex.json", tmp_path / "hf"
  script.write_text(_HF_DRIVER, encoding="utf-8")
  examples_file.write_text(json.dumps(examples, ensure_ascii=False), encoding="utf-8")
  env = dict(_env(), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
  ran = subprocess.run([_hf_python(), str(script), str(export_dir), str(examples_file),
                        str(out) + "-out", str(positions)], capture_output=True, text=True,
                       env=env, timeout=900, cwd=str(tmp_path))
  assert ran.returncode == 0, ran.stderr[-3000:]
  with open(str(out) + "-out.json", encoding="utf-8") as handle:
    meta = json.load(handle)
  return meta, dict(np.load(str(out) + "-out.npz"))


def _compare_with_extract_features(meta, arrays, features, heads=()):
  """Same tokens; last_hidden_state equal to 1e-4. Returns the max abs difference.

  heads: the head weights BertModel is expected to leave unused (and say so).
  """
  assert meta["class"] == "BertTokenizer"
  assert meta["loading_info"] == {"missing_keys": [], "unexpected_keys": sorted(heads),
                                  "mismatched_keys": [], "error_msgs": []}
  worst = 0.0
  for index, (tokens, values) in enumerate(features):
    assert len(tokens) < MAX_SEQ_LENGTH  # not truncated: both sides see the whole text
    assert meta["tokens"][index] == tokens, index
    hidden = arrays[f"hidden/{index}"]
    assert hidden.shape == values.shape
    worst = max(worst, float(np.abs(hidden - values).max()))
  assert worst < 1e-4, worst
  return worst


@pytest.mark.slow
def test_transformers_loads_the_google_checkpoint_export(tmp_path):
  shared_path("models", "uncased_L-6_H-384_A-12", "bert_model.ckpt.index")
  _hf_python()
  examples = _multilingual_examples()
  checkpoint = os.path.join(MINILM_DIR, "bert_model.ckpt")
  features = _extract_features(tmp_path, MINILM_DIR, checkpoint, examples, True)
  meta, arrays = _export_and_run_transformers(tmp_path, MINILM_DIR, checkpoint, True,
                                              examples, positions=0)
  assert meta["hidden_act"] == "gelu_new"  # the original's tanh GELU
  assert any("[UNK]" in tokens for tokens, _ in features)
  worst = _compare_with_extract_features(meta, arrays, features)
  print(f"Google checkpoint: {len(examples)} examples, max |HF - ours| = {worst:.2e}")


def _pretrain_tiny(tmp_path):
  """A tiny uncased BERT (exact GELU) pretrained a few steps by our scripts."""
  vocab_file = shared_path("vocab", "uncased_vocab.txt")
  corpus = shared_path("corpora", "sample_text.txt")
  model_dir = tmp_path / "model"
  model_dir.mkdir()
  config = tiny.tiny_config(30522, hidden_act="gelu_exact",
                            max_position_embeddings=MAX_SEQ_LENGTH)
  config.to_json_file(str(model_dir / "bert_config.json"))
  with open(vocab_file, "rb") as source:
    (model_dir / "vocab.txt").write_bytes(source.read())
  data = tmp_path / "data.tfrecord"
  for script, args in (
      ("create_pretraining_data.py",
       [f"--input_file={corpus}", f"--output_file={data}", f"--vocab_file={vocab_file}",
        "--do_lower_case=True", "--max_seq_length=32", "--max_predictions_per_seq=5",
        "--dupe_factor=1", "--num_workers=0"]),
      ("run_pretraining.py",
       [f"--input_file={data}", f"--bert_config_file={model_dir}/bert_config.json",
        f"--output_dir={tmp_path}/run", "--do_train", "--max_seq_length=32",
        "--max_predictions_per_seq=5", "--train_batch_size=8", "--num_train_steps=6",
        "--num_warmup_steps=2", "--learning_rate=1e-2", "--save_checkpoints_steps=6",
        "--steps_per_loop=1"])):
    result = cli_harness.run(script, args, timeout=900)
    assert result.returncode == 0, (script, result.stderr[-3000:])
  prefix = tmp_path / "run" / "pretrained" / "bert_model.ckpt"
  assert os.path.exists(str(prefix) + ".index")
  return config, model_dir, str(prefix)


@pytest.mark.slow
def test_transformers_loads_a_checkpoint_our_pretraining_wrote(tmp_path):
  _hf_python()
  examples = _multilingual_examples()
  config, model_dir, checkpoint = _pretrain_tiny(tmp_path)
  features = _extract_features(tmp_path, model_dir, checkpoint, examples, True)
  meta, arrays = _export_and_run_transformers(tmp_path, model_dir, checkpoint, True,
                                              examples, positions=MLM_POSITIONS)
  assert meta["hidden_act"] == "gelu"  # our gelu_exact: the erf form
  assert meta["heads_loading_info"] == {"missing_keys": [], "unexpected_keys": [],
                                        "mismatched_keys": [], "error_msgs": []}
  worst = _compare_with_extract_features(meta, arrays, features, MLM_KEYS + NSP_KEYS)
  # The heads: our pretraining model's masked-LM and next-sentence logits.
  model, _ = heads.build_pretraining_model(config)
  report = checkpoints.load_checkpoint(model, checkpoint)
  assert not report["missing"]
  pretrained = {n: v.numpy() for n, v in modeling.google_variable_map(model).items()}
  assert np.abs(pretrained["cls/predictions/output_bias"]).max() > 0  # trained, not zeros
  assert sum(len(arrays[f"mlm/{i}"]) == MLM_POSITIONS for i in range(len(examples))) > 30
  worst_heads = 0.0
  for index in range(len(examples)):
    ids = arrays[f"ids/{index}"][None].astype(np.int32)
    ours = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                  "segment_ids": arrays[f"types/{index}"][None].astype(np.int32),
                  # The first positions (all of a shorter example's), as HF's side kept.
                  "masked_lm_positions": np.arange(
                      len(arrays[f"mlm/{index}"]), dtype=np.int32)[None]},
                 training=False)
    for key, theirs in (("masked_lm_logits", arrays[f"mlm/{index}"]),
                        ("next_sentence_logits", arrays[f"nsp/{index}"])):
      worst_heads = max(worst_heads, float(np.abs(ours[key].numpy()[0] - theirs).max()))
  assert worst_heads < 1e-4, worst_heads
  print(f"our pretrained checkpoint: max |HF - ours| last layer {worst:.2e}, "
        f"MLM/NSP logits {worst_heads:.2e}")
