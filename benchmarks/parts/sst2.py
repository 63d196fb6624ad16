"""SST-2 and the shared MiniLM as the classifier and serving benchmarks use them.

The data (../shared/data: these benchmarks need it), the shapes every side runs (batch
32, max_seq_length 128), the sentences, and the prepared runs a comparison starts from:
our side's output_dir (the pretrained MiniLM with a seeded head, or a copy of a
fine-tuned run), its Hugging Face export, a fine-tuned SST-2 run and its export made as
docs/benchmarks.md's command makes them, and the rows as predict_litert.py encodes them.
"""

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data")
SST2 = os.path.join(DATA, "glue", "SST-2")
MODEL_DIR = os.path.join(DATA, "models", "uncased_L-6_H-384_A-12")
MODEL_VOCAB = os.path.join(MODEL_DIR, "vocab.txt")  # the model's own, as a user passes it
UNCASED_VOCAB = os.path.join(DATA, "vocab", "uncased_vocab.txt")
BATCH = 32
SEQ = 128
# The fine-tuning of bench_peers's model (docs/benchmarks.md): 0.05 epochs of SST-2 train.
FINETUNE_FLAGS = ("--task_name=sst2", "--do_train", "--do_eval", "--max_seq_length=128",
                  "--train_batch_size=32", "--learning_rate=5e-5", "--num_train_epochs=0.05",
                  "--litert=both")


def write_test_file(path, sentences):
  """The first `sentences` of SST-2 train.tsv as a GLUE test.tsv (index, sentence)."""
  texts, _ = read_sentences("train", sentences)
  if len(texts) < sentences:
    raise SystemExit(f"{SST2}/train.tsv has only {len(texts)} sentences")
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("index\tsentence\n")
    for i, text in enumerate(texts):
      handle.write(f"{i}\t{text}\n")
  return texts


def classifier_model(checkpoint, dtype="float32"):
  """run_classifier's two-label model of the shared MiniLM's config, weights from
  `checkpoint` (the MiniLM's, or an output_dir), built in --dtype's precision."""
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top
  from bert.training import precision  # pylint: disable=g-import-not-at-top
  config = model_config.load_bert_config(os.path.join(MODEL_DIR, "bert_config.json"))
  model, _ = heads.build_classifier_model(config, 2,
                                          dtype=precision.Precision(dtype).policy)
  checkpoints.load_checkpoint(model, checkpoint)
  return model


def save_head(model, head_file):
  """The classifier head (output_weights, output_bias: Google's names) as an .npz, which
  the other runtimes' sides load into their own model."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert import modeling  # pylint: disable=g-import-not-at-top
  np.savez(head_file, **{k.split("/")[-1]: v.numpy()
                         for k, v in modeling.google_variable_map(model).items()
                         if k.startswith("output_")})


def prepare_ours(output_dir, head_file):
  """output_dir holding a classifier checkpoint as run_classifier's training leaves it:
  the MiniLM encoder and a seeded random head (saved to head_file for the other sides)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from bert import modeling  # pylint: disable=g-import-not-at-top
  from bert.classifier import classifier_data  # pylint: disable=g-import-not-at-top
  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top

  tf.keras.utils.set_random_seed(7)
  model = classifier_model(os.path.join(MODEL_DIR, "bert_model.ckpt"))
  # A head with weights of standard deviation 1 (not the initialiser's 0.02): logits far
  # enough apart that "the same class" is a real check, not a coin toss at p = 0.5.
  for name, variable in modeling.google_variable_map(model).items():
    if name.startswith("output_weights"):
      variable.assign(tf.random.stateless_normal(variable.shape, [7, 7], dtype=variable.dtype))
  processor = classifier_data.Sst2Processor()
  head_info = {"task": type(processor).__name__.replace("Processor", ""),
               "head": "classifier", "labels": [str(l) for l in processor.get_labels()]}
  checkpoints.RunCheckpoint(output_dir, model, head_info=head_info).save()
  save_head(model, head_file)


def prepare_finetuned(finetuned_dir, output_dir, head_file):
  """Our side's output_dir: a copy of a fine-tuned SST-2 run's checkpoints (not its
  results, logs or TensorBoard events), and its head saved to head_file."""
  shutil.copytree(finetuned_dir, output_dir, ignore=shutil.ignore_patterns(
      "events.out.*", "train", "eval", "*.tsv", "eval_results.txt", ".bert-run.lock",
      "*.log"))
  save_head(classifier_model(output_dir), head_file)


def run_prepared(command, what):
  proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if proc.returncode != 0:
    raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n"
                       + (proc.stderr.strip() or proc.stdout.strip())[-1500:])


def prepare_hf_export(finetuned_dir, hf_dir):
  """The fine-tuned run's weights as a Hugging Face directory (export_encoder.py), for the
  HF and ORT sides."""
  run_prepared([sys.executable, os.path.join(ROOT, "export_encoder.py"),
                "--format=huggingface", f"--vocab_file={MODEL_VOCAB}",
                f"--bert_config_file={os.path.join(MODEL_DIR, 'bert_config.json')}",
                f"--init_checkpoint={finetuned_dir}", f"--export_dir={hf_dir}"],
               "export_encoder.py --format=huggingface")


def read_sentences(data, count):
  """(texts, labels): the first `count` SST-2 train sentences, or the whole dev set."""
  name = "dev.tsv" if data == "dev" else "train.tsv"
  with open(os.path.join(SST2, name), encoding="utf-8") as handle:
    rows = [r.split("\t") for r in handle.read().split("\n")[1:] if r]
  if data != "dev":
    rows = rows[:count]
  return [r[0] for r in rows], [int(r[1]) for r in rows]


def tokenize(model_file, texts, ids_file):
  """The rows as predict_litert.py encodes them (the export's vocab and max_seq_length),
  written to ids_file (`ids` concatenated, `offsets`); returns each row's length."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert.litert import predictor  # pylint: disable=g-import-not-at-top
  model = predictor.load_model(model_file, 1)
  rows = [model.encode(text)[0] for text in texts]
  offsets = np.cumsum([0] + [len(r) for r in rows])
  np.savez(ids_file, ids=np.concatenate([np.asarray(r, np.int32) for r in rows]),
           offsets=offsets)
  return [len(r) for r in rows]


def finetune_and_export(output_dir, export_dir):
  """The SST-2 model bench_peers.py compares (docs/benchmarks.md): run_classifier.py
  fine-tunes the shared MiniLM for 0.05 epochs and exports it with both LiteRT models.
  Leaves a run that is already there as it is."""
  if os.path.exists(os.path.join(export_dir, "litert", "model_int8.tflite")):
    return
  run_prepared([sys.executable, os.path.join(ROOT, "run_classifier.py"), *FINETUNE_FLAGS,
                f"--data_dir={SST2}", f"--vocab_file={MODEL_VOCAB}",
                f"--bert_config_file={os.path.join(MODEL_DIR, 'bert_config.json')}",
                f"--init_checkpoint={os.path.join(MODEL_DIR, 'bert_model.ckpt')}",
                f"--output_dir={output_dir}", f"--export_dir={export_dir}"],
               "run_classifier.py (the fine-tuned SST-2 model and its export)")
