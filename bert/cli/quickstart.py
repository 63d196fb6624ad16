"""The whole BERT pipeline, end to end, on data any Python has offline (`make demo`).

A corpus from the Python documentation that ships with the standard library, then
create_vocab, create_pretraining_data, run_pretraining and run_classifier as a user
types them (each command printed before it runs), and a fresh process that loads the
exported SavedModel with only tensorflow and tensorflow_text: a worked example of every
script."""

import dataclasses
import json
import math
import sys
import time

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.training import run_options
from bert.cli.demo_pipeline import (QUICKSTART_DATA, QUERIES, QUERY_PROGRAM, read_key_values,
                              run_filtered, run_step, write_corpus)
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import output_lock
from bert.utils import errors

flags_common.define_flags(run_options.RunOptions, ("output_dir",),
                          defaults={"output_dir": "out/quickstart"},
                          helps={"output_dir": "Where every output of the run goes."})
flags.DEFINE_integer("vocab_size", 4000, "Size of the WordPiece vocabulary to learn.")
flags.DEFINE_integer("pretrain_steps", 500, "Pretraining steps.")
# Declared with the model settings (RunOptions); the demo's model is short.
flags_common.define_flags(run_options.RunOptions, ("max_seq_length",),
                          defaults={"max_seq_length": 64}, helps={
    "max_seq_length": "Sequence length for pretraining and fine-tuning."})
flags.DEFINE_float("finetune_epochs", 6.0, "Fine-tuning epochs on bert/cli/quickstart_data.")
flags_common.define_runtime_flags()
FLAGS = flags.FLAGS

# A small BERT (Table 6's small end): trains a few hundred steps in about a minute on
# 2 CPU cores. type_vocab_size 2 and the other keys as in Google's bert_config.json.
SMALL_CONFIG = {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 512, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 128,
                "type_vocab_size": 2, "initializer_range": 0.02}

@dataclasses.dataclass(frozen=True)
class DemoOptions:
  """The demo's settings, read from FLAGS once in main()."""
  vocab_size: int
  max_seq_length: int
  pretrain_steps: int
  finetune_epochs: float

  def __post_init__(self):
    check_flags(self)  # before any step writes a file


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output path, before any work
    started = time.time()
    options = flags_common.settings_from_flags(DemoOptions, FLAGS)  # checked as it is made
    out = paths.abspath(FLAGS.output_dir)
    if paths.scheme(out) == "ram":
      # Each step is a process of its own, and ram:// lives inside one process.
      raise errors.UserError(
          f"--output_dir={FLAGS.output_dir}: ram:// is memory of one process, and each "
          "step of the quickstart is a process of its own; use a local folder or a bucket "
          "(gs://...)")
    atomic_output.ensure_output_dir(out)
    with output_lock.lock_output(out):
      run_demo(out, started, options)


def check_flags(options):
  """Every flag value a later step would refuse, refused now in one line."""
  if options.pretrain_steps < 1:
    raise errors.UserError(
        f"--pretrain_steps={options.pretrain_steps}: must be at least 1")
  if options.vocab_size < 200:
    raise errors.UserError(
        f"--vocab_size={options.vocab_size}: must be at least 200 (the special tokens, "
        "the characters and some words)")
  if not 8 <= options.max_seq_length <= SMALL_CONFIG["max_position_embeddings"]:
    raise errors.UserError(
        f"--max_seq_length={options.max_seq_length}: must be between 8 and "
        f"{SMALL_CONFIG['max_position_embeddings']} (the small model's positions)")
  epochs = options.finetune_epochs
  if not (math.isfinite(epochs) and epochs > 0):
    raise errors.UserError(
        f"--finetune_epochs={epochs}: must be a positive finite number")


def run_demo(out, started, options):
  """The steps, while this process holds output_dir's lock."""
  files = {name: paths.join(out, name) for name in (
      "corpus.txt", "vocab.txt", "bert_config.json", "pretraining.tfrecord", "pretrain",
      "classifier", "export")}
  log = []

  print("=== Building a pretraining corpus from the standard library's documentation")
  documents = write_corpus(files["corpus.txt"])
  print(f"{documents} documents, {file_io.getsize(files['corpus.txt']) / 1e3:.0f} KB "
        f"-> {files['corpus.txt']}")

  run_step("Learn a WordPiece vocabulary", "create_vocab.py", [
      f"--input_file={files['corpus.txt']}", f"--output_file={files['vocab.txt']}",
      f"--vocab_size={options.vocab_size}", "--do_lower_case=True"], log)
  with file_io.open(files["vocab.txt"], encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  with atomic_output.atomic_open(files["bert_config.json"]) as f:
    json.dump({"vocab_size": vocab_size, **SMALL_CONFIG}, f, indent=2, sort_keys=True)

  seq = options.max_seq_length
  run_step("Create masked-LM / next-sentence pretraining data",
           "create_pretraining_data.py", [
               f"--input_file={files['corpus.txt']}",
               f"--output_file={files['pretraining.tfrecord']}",
               f"--vocab_file={files['vocab.txt']}", "--do_lower_case=True",
               f"--max_seq_length={seq}", "--max_predictions_per_seq=10",
               "--masked_lm_prob=0.15", "--dupe_factor=5", "--random_seed=12345"], log)

  run_step("Pretrain a small BERT", "run_pretraining.py", [
      f"--input_file={files['pretraining.tfrecord']}", f"--output_dir={files['pretrain']}",
      "--do_train=True", "--do_eval=True",
      f"--bert_config_file={files['bert_config.json']}", "--train_batch_size=32",
      f"--max_seq_length={seq}", "--max_predictions_per_seq=10",
      f"--num_train_steps={options.pretrain_steps}",
      f"--num_warmup_steps={options.pretrain_steps // 10}", "--learning_rate=3e-4",
      "--max_eval_steps=20", "--save_checkpoints_steps=200", "--log_every_steps=50"], log)

  run_step("Fine-tune, evaluate and export a classifier", "run_classifier.py", [
      "--task_name=tsv", f"--data_dir={QUICKSTART_DATA}",
      "--has_header=True", "--text_a_column=sentence", "--label_column=label",
      f"--vocab_file={files['vocab.txt']}", "--do_lower_case=True",
      f"--bert_config_file={files['bert_config.json']}",
      f"--init_checkpoint={paths.join(files['pretrain'], 'pretrained', 'bert_model.ckpt')}",
      "--do_train=True", "--do_eval=True", f"--max_seq_length={seq}",
      "--train_batch_size=32", "--learning_rate=3e-4",
      f"--num_train_epochs={options.finetune_epochs}", f"--output_dir={files['classifier']}",
      f"--export_dir={files['export']}", "--overwrite_export"], log)

  print("\n=== Raw-text queries through the exported SavedModel, in a fresh process "
        "(imports only tensorflow and tensorflow_text)")
  start = time.time()
  returncode = run_filtered([sys.executable, "-c", QUERY_PROGRAM, files["export"],
                             json.dumps(QUERIES)])
  log.append(("Query the SavedModel", time.time() - start))
  if returncode != 0:
    raise errors.UserError("querying the exported SavedModel failed; see above")

  pretrain = read_key_values(paths.join(files["pretrain"], "eval_results.txt"))
  classifier = read_key_values(paths.join(files["classifier"], "eval_results.txt"))
  print("\n" + "=" * 72)
  print(f"Done in {time.time() - started:.0f} s.")
  for title, seconds in log:
    print(f"  {seconds:6.0f} s  {title}")
  print("\nPretraining eval (held-in data, as the original's --do_eval):")
  for key in ("masked_lm_accuracy", "next_sentence_accuracy", "loss", "global_step"):
    if key in pretrain:
      print(f"  {key} = {pretrain[key]}")
  print("Classifier on bert/cli/quickstart_data/dev.tsv:")
  for key, value in sorted(classifier.items()):
    print(f"  {key} = {value}")
  print(f"\nOutputs under {out}:\n"
        f"  vocab.txt, bert_config.json, pretraining.tfrecord\n"
        f"  pretrain/    checkpoints, pretrained/bert_model.ckpt (Google layout), eval_results.txt\n"
        f"  classifier/  checkpoints, eval_results.txt\n"
        f"  export/      SavedModel (signatures serving_default, serve_text)\n"
        f"TensorBoard:  tensorboard --logdir {out}")


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
