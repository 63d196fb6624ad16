"""Start-up time of the scripts: process start to the first training step / first output.

Each script runs as a user would start it (a fresh `python script.py ...` process), on
tiny inputs made here, with `--log_every_steps=1`; the clock stops when the first
progress line of a training step appears on stderr (or, for scripts without training,
when the process exits). The target is under 10 s on 2 CPU cores.

  python -m benchmarks.bench_startup
"""

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_CONFIG = {"vocab_size": 0, "hidden_size": 32, "num_hidden_layers": 2,
               "num_attention_heads": 2, "intermediate_size": 37, "hidden_act": "gelu",
               "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
               "max_position_embeddings": 64, "type_vocab_size": 2,
               "initializer_range": 0.02}


def _time_until(command, marker=None, timeout=300):
  """Seconds from spawning `command` to the first stderr line containing `marker`."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
  start = time.perf_counter()
  proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          text=True, env=env, cwd=ROOT)
  seen = None
  tail = []
  try:
    for line in proc.stderr:
      tail = (tail + [line])[-20:]
      if marker and seen is None and marker in line:
        seen = time.perf_counter() - start
        proc.kill()
        break
    proc.wait(timeout=timeout)
  finally:
    if proc.poll() is None:
      proc.kill()
  total = time.perf_counter() - start
  if marker and seen is None:
    raise RuntimeError(f"{command[1]}: no line with {marker!r}; last output:\n"
                       + "".join(tail))
  if not marker and proc.returncode != 0:
    raise RuntimeError(f"{command[1]} failed:\n" + "".join(tail))
  return seen if marker else total


def _write_vocab(path):
  # A vocabulary from the quickstart task's own words: small, and needs nothing else.
  words = set()
  with open(os.path.join(ROOT, "bert", "cli", "quickstart_data", "train.tsv"), encoding="utf-8") as f:
    for line in f:
      words.update(w.strip(".,;:()'\"").lower() for w in line.split())
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(w for w in words if w)
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return len(tokens)


def run(quick=False):
  del quick  # always small
  rows = []
  py = sys.executable
  with tempfile.TemporaryDirectory() as tmp:
    vocab = os.path.join(tmp, "vocab.txt")
    config = os.path.join(tmp, "bert_config.json")
    with open(config, "w") as f:
      json.dump({**TINY_CONFIG, "vocab_size": _write_vocab(vocab)}, f)
    rows.append({"name": "python -c 'import tensorflow'", "unit": "s", "note": "the floor",
                 "value": _time_until([py, "-c", "import tensorflow"])})
    classifier = [py, "run_classifier.py", "--task_name=tsv",
                  "--data_dir=bert/cli/quickstart_data", "--has_header=True",
                  "--text_a_column=sentence", "--label_column=label",
                  f"--vocab_file={vocab}", f"--bert_config_file={config}",
                  "--do_train=True", "--max_seq_length=64", "--train_batch_size=8",
                  "--log_every_steps=1", f"--output_dir={tmp}/clf"]
    rows.append({"name": "run_classifier.py to first step", "unit": "s",
                 "note": "tiny model, bert/cli/quickstart_data",
                 "value": _time_until(classifier, marker="step 1/")})
    corpus = os.path.join(tmp, "corpus.txt")
    with open(os.path.join(ROOT, "bert", "cli", "quickstart_data", "train.tsv"), encoding="utf-8") as f:
      lines = [line.split("\t", 1)[1].strip() for line in f.read().splitlines()[1:]]
    with open(corpus, "w", encoding="utf-8") as f:
      for i in range(0, len(lines), 8):
        f.write("\n".join(lines[i:i + 8]) + "\n\n")
    records = os.path.join(tmp, "data.tfrecord")
    rows.append({"name": "create_pretraining_data.py (whole run)", "unit": "s",
                 "note": f"{len(lines)} sentences, dupe_factor 1",
                 "value": _time_until([py, "create_pretraining_data.py",
                                       f"--input_file={corpus}", f"--output_file={records}",
                                       f"--vocab_file={vocab}", "--max_seq_length=64",
                                       "--max_predictions_per_seq=10", "--dupe_factor=1",
                                       "--num_workers=0"])})
    rows.append({"name": "run_pretraining.py to first step", "unit": "s",
                 "note": "tiny model",
                 "value": _time_until([py, "run_pretraining.py", f"--input_file={records}",
                                       f"--bert_config_file={config}", "--do_train=True",
                                       "--max_seq_length=64", "--max_predictions_per_seq=10",
                                       "--train_batch_size=8", "--num_train_steps=50",
                                       "--num_warmup_steps=5", "--log_every_steps=1",
                                       f"--output_dir={tmp}/pre"], marker="step 1/")})
  return rows


if __name__ == "__main__":
  for row in run():
    print(f"{row['name']:45s} {row['value']:8.2f} {row['unit']}  {row['note']}")
