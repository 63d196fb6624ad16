"""The bad-input catalogue, faults many commands meet: each kind of fault (a config of
another vocabulary size, an unwritable output, a missing data file, a flag that cannot
work, ...) is one case function and a table of the commands that meet it, a row each with
what differs there (the bad content, the line named); each case spoils one place of a run
of its command that would otherwise work (catalogue.Command.run). Then every batch-size
flag's refusals, and every path flag typed as people type paths.

The catalogue's machinery and rules: tests/support/catalogue.py. What one command alone
meets: tests/reliability/test_each_command.py. The default run takes a representative
subset; the whole catalogue is marked slow (`make test-slow`, or
`pytest -m slow tests/reliability`).
"""
import os
import re
import subprocess
import sys

import pytest

import catalogue
from catalogue import A_FOLDER, CORPUS, GOOD_QA, MRPC_HEADER, PREDS, SEQ, SWAG_HEADER
from catalogue import conll_folder, data_folder, mrpc_folder, refused, row, squad_json
from catalogue import swag_folder
from conftest import ROOT
import path_forms

# The default subset's processes, one per script (run_swag.py's one-line errors are also
# tested by tests/commands/test_run_ner_swag.py, run_tagger.py's by
# tests/commands/test_run_tagger.py).
CATALOGUE = catalogue.Catalogue(default_scripts={
    "run_classifier.py", "run_squad.py", "run_ner.py", "extract_features.py",
    "create_pretraining_data.py", "create_vocab.py"})
case, table = CATALOGUE.case, CATALOGUE.table


# ---- the model's files, and the model in output_dir


def vocab_config_mismatch(ws, command, name):
  """The config's vocab_size (2001) is not the vocabulary's (2000 lines)."""
  config = ws.write_config(f"{name}-config.json", vocab_size=2001)
  return refused(ws, command, name, expect=[ws.vocab, "2001"], config=config)


table(vocab_config_mismatch,
      row("run_classifier.py"), row("run_squad.py"), row("run_ner.py"), row("run_swag.py"),
      row("extract_features.py"), row("export_encoder.py"))


def max_seq_length_over_positions(ws, command, name):
  """--max_seq_length=128 on a config of 64 positions (pretraining's records are 128 long:
  the flag is the one fault)."""
  return refused(ws, command, name, "--max_seq_length=128",
                  expect=["max_seq_length=128", "64"], length=128)


table(max_seq_length_over_positions,
      row("run_classifier.py"), row("run_pretraining.py"), row("run_ner.py"),
      row("run_swag.py"), row("extract_features.py"))


def type_vocab_size_one(ws, command, name, task):
  """A config of one segment (type_vocab_size 1) for a task of text pairs: refused once
  the data is read (the pairs say how many segments there are)."""
  config = ws.write_config(f"{name}-config.json", type_vocab_size=1)
  # Nothing written: SQuAD's train.tf_record waits for the checks (Task.prepare_data).
  return refused(ws, command, name, config=config,
                 expect=[config, f"type_vocab_size=1, but {task} packs 2 segments"])


table(type_vocab_size_one,
      row("run_classifier.py", "type_vocab_size_one_on_a_pair_task", True, task="Mrpc"),
      row("run_squad.py", task="SQuAD"))


def malformed_config_json(ws, command, name):
  config = ws.write(f"{name}-config.json", '{"vocab_size": 2000,\n "hidden_size": 32,,\n}')
  return refused(ws, command, name, expect=[config, "line 2"], config=config)


table(malformed_config_json, row("run_classifier.py"), row("export_encoder.py"))


def missing_vocab(ws, command, name):
  vocab = ws.path(f"{name}-vocab.txt")
  return refused(ws, command, name, expect=[vocab], vocab=vocab)


table(missing_vocab, row("create_pretraining_data.py"), row("export_encoder.py"))


def non_utf8_vocab(ws, command, name):
  vocab = ws.write(f"{name}-vocab.txt", "".join(ws.vocab_lines[:500]).encode() +
                   b"caf\xe9\n" + "".join(ws.vocab_lines[501:]).encode())
  return refused(ws, command, name, expect=[vocab], vocab=vocab)


table(non_utf8_vocab, row("run_classifier.py"), row("create_pretraining_data.py"))


def checkpoint_of_other_size(ws, command, name):
  """BERT's 6-layer, 384-wide checkpoint for the tiny config."""
  return refused(ws, command, name, expect=[ws.minilm], checkpoint=ws.minilm)


table(checkpoint_of_other_size,
      row("run_classifier.py", "init_checkpoint_of_other_size"),
      row("run_pretraining.py", "init_checkpoint_of_other_size"),
      row("extract_features.py"), row("export_encoder.py"))


def missing_checkpoint(ws, command, name):
  checkpoint = ws.path(f"{name}-nothing", "bert_model.ckpt")
  return refused(ws, command, name, expect=[checkpoint], checkpoint=checkpoint)


table(missing_checkpoint,
      row("run_classifier.py", "missing_init_checkpoint"), row("extract_features.py"),
      row("export_encoder.py"))


def checkpoint_dir_names_a_missing_ckpt(ws, command, name):
  """A run's folder whose 'checkpoint' file names a ckpt-N that is not there."""
  folder = ws.mkdir(f"{name}-checkpoint")
  ws.write(f"{name}-checkpoint/checkpoint", 'model_checkpoint_path: "ckpt-99"\n'
           'all_model_checkpoint_paths: "ckpt-99"\n')
  return refused(ws, command, name, checkpoint=folder, expect=[
      folder + ": its 'checkpoint' file names ckpt-99, which does not exist",
      os.path.join(folder, "ckpt-99.index") + " is missing"])


table(checkpoint_dir_names_a_missing_ckpt,
      row("run_classifier.py", "init_checkpoint_dir_names_a_missing_ckpt"),
      row("extract_features.py", default=True))


def output_dir_holds_other_model(ws, command, name, extra=()):
  """output_dir holds a checkpoint of another model (hidden size 48, not 32): neither
  resumed from nor written over."""
  argv, out, setup = command.run(ws, name, *extra)
  return dict(argv=argv, expect=[out],
              setup=setup + [{"foreign_checkpoint": out, "bert_config": ws.other_config}],
              absent=[os.path.join(out, written) for written in
                      ("ckpt-1.index", "eval_results.txt", "pretrained")])


table(output_dir_holds_other_model,
      row("run_classifier.py", default=True, extra=("--do_eval",)),
      row("run_pretraining.py"), row("run_squad.py"), row("run_ner.py"), row("run_swag.py"))


def unwritable_output_dir(ws, command, name, names="output"):
  """An output that cannot be created; the line names it (names="folder": its folder)."""
  folder = ws.unwritable(name)
  out = os.path.join(folder, command.output) if command.output else folder
  return refused(ws, command, name, out=out,
                  expect=[out if names == "output" else os.path.dirname(out)])


table(unwritable_output_dir,
      row("run_classifier.py"), row("run_pretraining.py"), row("run_squad.py"),
      row("run_ner.py"), row("run_swag.py"),
      row("create_pretraining_data.py", "unwritable_output", default=True),
      row("extract_features.py", "unwritable_output"),
      row("create_vocab.py", "unwritable_output", names="folder"),
      row("export_encoder.py", "unwritable_export_dir"))


# ---- flags that cannot work: refused before anything is read or written


def refused_flags(ws, command, name, flags, expect=(), line=None):
  """`flags` on a run that would otherwise work."""
  return refused(ws, command, name, *flags, expect=expect, line=line)


table(refused_flags,
      # Flags that would train to a plausible wrong model.
      row("run_classifier.py", "negative_learning_rate", True, flags=["--learning_rate=-2e-5"],
          expect=["--learning_rate=-2e-05", "gradient ascent"]),
      row("run_classifier.py", "nan_learning_rate", flags=["--learning_rate=nan"],
          expect=["--learning_rate=nan"]),
      row("run_classifier.py", "infinite_learning_rate", flags=["--learning_rate=inf"],
          expect=["--learning_rate=inf"]),
      row("run_classifier.py", "nan_epochs", flags=["--num_train_epochs=nan"],
          expect=["--num_train_epochs=nan"]),
      row("run_classifier.py", "absurd_max_seq_length", flags=["--max_seq_length=1000000000"],
          expect=["--max_seq_length=1000000000", "8192"]),
      row("run_classifier.py", "zero_train_steps", flags=["--num_train_steps=0"],
          expect=["--num_train_steps=0"]),
      row("run_ner.py", "nan_dropout_rate", flags=["--dropout_rate=nan"],
          expect=["--dropout_rate=nan: must be in [0, 1)"]),
      row("run_squad.py", "nan_null_score_diff_threshold", True,
          flags=["--version_2_with_negative", "--null_score_diff_threshold=nan"],
          expect=["--null_score_diff_threshold=nan: must be a finite number"]),
      row("run_squad.py", "infinite_null_score_diff_threshold",
          flags=["--version_2_with_negative", "--null_score_diff_threshold=-inf"],
          expect=["--null_score_diff_threshold=-inf: must be a finite number"]),
      row("extract_features.py", "layer_out_of_range", flags=["--layers=-1,-7"],
          expect=["-7"]),
      row("run_tagger.py", "tag_column_of_the_words", flags=["--tag_column=1"],
          expect=["--tag_column=1: the tags are column 2 or later"]),
      # Lists that name an item twice.
      row("run_tagger.py", "labels_given_twice", flags=["--tag_column=2", "--labels=NNP,VBZ,NNP"],
          line="--labels=NNP,VBZ,NNP: 'NNP' is given 2 times; each label once, in label-id "
               "order"),
      row("run_ner.py", "entity_types_given_twice", flags=["--entity_types=PER,ORG,PER"],
          line="--entity_types=PER,ORG,PER: 'PER' is given 2 times; each entity type once"),
      # Accelerators and the cluster: asked for and not there, or not waited for.
      row("run_classifier.py", "tpu_asked_none_named", flags=["--use_tpu"],
          expect=["--use_tpu", "no local TPU and no --tpu_name"]),
      # Feature extraction has no TPU path (docs/pretraining.md's what-runs-where table).
      row("extract_features.py", "tpu_not_offered", flags=["--use_tpu"],
          line="--use_tpu: feature extraction runs on CPU/GPU here; drop --use_tpu"),
      row("run_classifier.py", "negative_multi_worker_timeout",
          flags=["--multi_worker_timeout=-1"],
          expect=["--multi_worker_timeout=-1.0: must be a finite number of seconds"]),
      # An export's version without the export.
      row("run_classifier.py", "export_version_without_export_dir", True,
          flags=["--export_version=3"], expect=["--export_version=3", "needs --export_dir"]),
      # Flags that act only with another (run_options.PARTNERS), typed without it: each
      # would do nothing, silently.
      row("create_pretraining_data.py", "rows_of_packing_without_packing", True,
          flags=["--max_sequences_per_row=4"],
          line="--max_sequences_per_row=4 sets the most instances a packed row holds: it "
               "needs --pack_sequences (without it the flag does nothing)"),
      row("create_pretraining_data.py", "masking_rule_with_dynamic_masking", True,
          flags=["--dynamic_masking", "--dupe_factor=1", "--mask_token_prob=0.8"],
          line="--mask_token_prob=0.8 shares out the masks the generator draws: not with "
               "--dynamic_masking (its records hold no masks: run_pretraining.py draws them "
               "as it trains; pass the flag to it instead)"),
      row("create_pretraining_data.py", "language_without_splitter",
          flags=["--sentence_language=de"], expect=["--sentence_language=de",
                                                    "needs --split_sentences"]),
      row("run_ner.py", "bilstm_size_when_fine_tuning", True, flags=["--lstm_units=8"],
          line="--lstm_units=8 sizes the BiLSTM: it needs --mode=feature (without it the "
               "flag does nothing)"),
      row("run_ner.py", "head_dropout_in_feature_mode",
          flags=["--mode=feature", "--dropout_rate=0.2"],
          expect=["--dropout_rate=0.2", "needs --mode=finetune"]),
      # Refused before the feature mode's encoder pass caches a split (Task.prepare_data).
      row("run_ner.py", "best_metric_of_another_spelling_in_feature_mode", True,
          flags=["--mode=feature", "--feature_layers=last", "--do_eval",
                 "--eval_every_steps=1", "--best_metric=F1"],
          expect=["--best_metric=F1: NER's dev evaluation reports eval_loss, eval_f1, "]),
      row("run_classifier.py", "column_of_a_glue_task", True, flags=["--label_column=2"],
          line="--label_column=2 describes the files of the tsv/csv task: it needs "
               "--task_name=tsv or --task_name=csv (without it the flag does nothing)"),
      row("run_classifier.py", "xnli_language_of_another_task",
          flags=["--xnli_language=de"], expect=["--xnli_language=de",
                                                "needs --task_name=xnli"]))


def gpus_asked_none_visible(ws, command, name):
  """This machine has no GPU (the CPU-only wheel): --num_gpus=64 is more than any has."""
  return refused(ws, command, name, "--distribution_strategy=mirrored", "--num_gpus=64",
                  expect=["--num_gpus=64", "asks for 64 GPU(s), but TensorFlow sees",
                          "nvidia-smi", "tensorflow[and-cuda]"])


table(gpus_asked_none_visible,
      row("run_classifier.py", default=True), row("run_pretraining.py"))


# ---- a data folder with a file missing or wrong


def _spoiled_data(ws, command, name, split, content, *extra, line=None, names="file",
                  also=()):
  """A run whose data folder's `split` file is `content` (see data_folder); the line
  names that file (at `line`), or its folder (names="folder"), and `also`."""
  folder = data_folder(ws, command, name, **{split: content})
  path = os.path.join(folder, command.data_files[split][0])
  named = folder if names == "folder" else path if line is None else f"{path}:{line}"
  extra = ("--do_eval", *extra) if split == "dev" else extra  # a run that reads the dev file
  return refused(ws, command, name, *extra, inputs=folder, expect=[named, *also])


def missing_data_dir(ws, command, name):
  folder = ws.path(name)
  return refused(ws, command, name, inputs=folder, expect=[folder])


table(missing_data_dir, row("run_classifier.py"), row("run_ner.py"))


def missing_train_file(ws, command, name, split="train", names="file"):
  return _spoiled_data(ws, command, name, split, None, names=names)


table(missing_train_file,
      row("run_classifier.py"), row("run_ner.py", names="folder"),
      row("run_swag.py", "missing_val_file", split="dev"))


def empty_train_file(ws, command, name):
  return _spoiled_data(ws, command, name, "train", "")


table(empty_train_file,
      row("run_classifier.py", default=True), row("run_ner.py"), row("run_swag.py"))


def train_file_is_a_directory(ws, command, name, names="file"):
  return _spoiled_data(ws, command, name, "train", A_FOLDER, names=names)


table(train_file_is_a_directory,
      row("run_classifier.py"), row("run_ner.py", names="folder"), row("run_swag.py"))


def wrong_column_count(ws, command, name, content, line):
  return _spoiled_data(ws, command, name, "train", content, line=line)


table(wrong_column_count,
      row("run_classifier.py", default=True, line=3, content=MRPC_HEADER +
          "1\t1\t2\tthe cat .\tthe mat .\n0\t3\tonly three\n"),
      row("run_ner.py", line=2, content="EU NNP B-NP B-ORG\nrejects O\n\n"),
      row("run_swag.py", line=2, content=SWAG_HEADER + "v1,0,ctx,A man sits.,He,gold,x,y\n"))


def unknown_label(ws, command, name, content, line, label, split="train"):
  return _spoiled_data(ws, command, name, split, content, line=line, also=[label])


table(unknown_label,
      row("run_classifier.py", default=True, split="dev", line=2, label="7",
          content=MRPC_HEADER + "7\t1\t2\tthe cat .\tthe mat .\n"),
      row("run_ner.py", line=2, label="B-FOO",
          content="EU NNP B-NP B-ORG\nrejects VBZ B-VP B-FOO\n\n"),
      row("run_swag.py", line=2, label="4",
          content=SWAG_HEADER + "v1,0,ctx,A man sits.,He,gold,a,b,c,d,4\n"))


def non_utf8_row(ws, command, name, content, line=None, split="train", flags=()):
  """A Latin-1 byte in a row of the data; `line`: that row's, where the message names it."""
  return _spoiled_data(ws, command, name, split, content, *flags, line=line)


table(non_utf8_row,
      row("run_classifier.py", "non_utf8_dev_row", True, split="dev", line=3,
          content=MRPC_HEADER.encode() + b"1\t1\t2\tthe cat .\tthe mat .\n"
          b"0\t1\t2\tcaf\xe9 .\tthe mat .\n"),
      row("run_ner.py", default=True, line=2,
          content=b"EU NNP B-NP B-ORG\nCaf\xe9 NNP I-NP O\n\n"),
      row("run_tagger.py", line=2, flags=["--tag_column=2"],
          content=b"EU NNP B-NP B-ORG\nCaf\xe9 NNP I-NP O\n\n"),
      row("run_swag.py",
          content=SWAG_HEADER.encode() + b"v1,0,ctx,A man sits.,He,gold,caf\xe9,b,c,d,0\n"))


# ---- an input file missing or wrong


def missing_input(ws, command, name):
  path = ws.path(f"{name}-input.txt")
  return refused(ws, command, name, inputs=path, expect=[path])


table(missing_input,
      row("create_pretraining_data.py"), row("extract_features.py"), row("create_vocab.py"))


def empty_input(ws, command, name):
  path = ws.write(f"{name}-input.txt", "")
  return refused(ws, command, name, inputs=path, expect=[path])


table(empty_input,
      row("create_pretraining_data.py"), row("run_pretraining.py"), row("create_vocab.py"))


def directory_as_input(ws, command, name):
  path = ws.mkdir(f"{name}-input")
  return refused(ws, command, name, inputs=path, expect=[path])


table(directory_as_input,
      row("create_pretraining_data.py"), row("run_pretraining.py"),
      row("extract_features.py"), row("create_vocab.py"))


def non_utf8_input(ws, command, name, content, line):
  """A Latin-1 byte on `line`."""
  path = ws.write(f"{name}-input.txt", content)
  return refused(ws, command, name, inputs=path, expect=[f"{path}:{line}"])


table(non_utf8_input,
      row("create_pretraining_data.py", default=True, line=7,
          content=CORPUS.encode() + b"caf\xe9 au lait .\n"),
      row("extract_features.py", default=True, line=2,
          content=b"the cat sat .\ncaf\xe9 ||| au lait\n"),
      row("create_vocab.py", default=True, line=7,
          content=CORPUS.encode() + b"caf\xe9 au lait .\n"))


# ---- every batch-size flag of every script and tool refuses 0 and negatives


def _batch_size_flags():
  """{script: [its flags named *batch_size*]} from docs/FLAGS.md (tests/project/test_docs.py
  keeps it current), and the tools' batch-size flags (none elsewhere:
  test_every_batch_size_flag_has_its_refusals)."""
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    text = handle.read().split("\n## Path flags\n", 1)[0]
  found = {}
  for section in text.split("\n## ")[1:]:
    script = section.split("\n", 1)[0].strip()
    rows = re.findall(r"^\| `--([a-z_]+)` \|[^|]*\| (yes)? *\|", section, re.MULTILINE)
    found[script] = ([name for name, _ in rows if "batch_size" in name],
                     [name for name, required in rows if required])
  found["tools/linear_probe.py"] = (["batch_size"], ["bert_config_file", "vocab_file", "data_dir"])
  found["tools/litert_accuracy.py"] = (["batch_size"], ["litert_dir", "data_dir", "task_name"])
  return found


BATCH_SIZE_FLAGS = _batch_size_flags()


def _register_batch_size_cases():
  for script, (names, required) in BATCH_SIZE_FLAGS.items():
    for name in names:
      for value in (0, -2):
        def builder(ws, script=script, name=name, value=value, required=required):
          out = ws.path(f"bs-{script[:-3].replace('/', '-')}-{name}-{value}")
          argv = [f"--{flag}={'MRPC' if flag == 'task_name' else out}" for flag in required]
          return dict(argv=argv + [f"--{name}={value}"], absent=[out],
                      line=f"--{name}={value}: must be at least 1")
        builder.__name__ = f"{name}_{'zero' if value == 0 else 'negative'}"
        case(script)(builder)


_register_batch_size_cases()


# ---- paths as people type them: every form of every path flag gives the absolute
# path's result. Per family (a script, and the flags and data of one small run): the
# absolute-path reference run first, then the same run with the paths typed another way,
# in one process (cli_harness); every output it writes must be byte for byte the
# reference's. The slow matrix: each form applied to every path flag of the family at
# once (one run per form and family), and for the classifier also every (flag, form) pair
# alone; the checkpoint as a folder, a ckpt-N prefix and its .index file. Lists and globs
# are typed item by item in the form (tests/support/path_forms.py).
# test_every_path_flag_has_a_path_forms_family holds the families to every path flag of
# every script. Default: a few cheap forms.

# The default suite's subset (about 2 s a run on 2 busy cores): the form people type most
# (`--init_checkpoint=run` from the folder that holds it), `../`, `~`, and a folder name
# with a space and non-ASCII letters.
DEFAULT_PATH_FORMS = ("relative", "dotdot", "home", "non_ascii")


def _classifier_materials(ws, folder):
  mrpc_folder(ws, f"{folder}/data", train="good", dev="good")


def _extract_materials(ws, folder):
  ws.write(f"{folder}/data/input.txt", "the cat sat on the mat .\nit was a good day .\n")


def _fill_mask_materials(ws, folder):
  ws.write(f"{folder}/data/input.txt", "the cat sat on the [MASK] .\nit was a [MASK] day .\n")


def _extend_vocab_materials(ws, folder):
  ws.write(f"{folder}/data/words.txt", "bitcoin\nMiner\nthe\n")
  ws.write(f"{folder}/data/corpus.txt", "the bitcoin miners sat .\nthe miner was good .\n")


def _squad_materials(ws, folder):
  context = "The cat sat on the mat in the house of the old man ."
  second = {"id": "q2", "question": "whose house was it ?",
            "answers": [{"text": "the old man", "answer_start": context.index("the old man")}]}
  ws.write(f"{folder}/data/train.json", squad_json([GOOD_QA, second]))
  ws.write(f"{folder}/data/dev.json", squad_json([GOOD_QA, second]))


def _conll_materials(ws, folder):
  conll_folder(ws, f"{folder}/data", train="good", valid="good")
  with open(ws.path(folder, "data", "train.txt"), encoding="utf-8") as handle:
    ws.write(f"{folder}/data/test.txt", handle.read())


def _swag_materials(ws, folder):
  swag_folder(ws, f"{folder}/data", train="good", val="good")


def _multilabel_materials(ws, folder):
  ws.write(f"{folder}/data/labels.txt", "PER\nLOC\n")
  rows = "the cat sat .\tPER\nthe mat in paris .\tLOC,PER\na good day .\t\n"
  for split in ("train", "dev", "test"):
    ws.write(f"{folder}/data/{split}.tsv", rows)


def _text_materials(ws, folder):
  """Two raw-text files for create_pretraining_data.py and create_vocab.py."""
  ws.write(f"{folder}/data/a.txt", "the cat sat on the mat .\nit was a good day .\n\n"
           "a man went home .\nshe said no .\nthe sun set .\n")
  ws.write(f"{folder}/data/b.txt", "the dog ran in the house .\nthe old man sat .\n\n"
           "it was a cat .\nthe mat was good .\n")


def _squad_eval_materials(ws, folder):
  ws.write(f"{folder}/data/dev.json", squad_json([GOOD_QA]))
  ws.write(f"{folder}/data/predictions.json", '{"q1": "the mat"}')
  ws.write(f"{folder}/data/null_odds.json", '{"q1": 0.25}')


_MRPC_TEST = ("Index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
              "0\t1\t2\tthe cat sat on the mat .\tthe cat is on the mat .\n"
              "1\t3\t4\ta man went home .\tshe said no .\n")


def _litert_materials(ws, folder):
  """MRPC test rows and a tiny classifier's float32 LiteRT export (export/litert/), made
  once per workspace in this process (TensorFlow) and copied into each folder."""
  mrpc_folder(ws, f"{folder}/data")
  ws.write(f"{folder}/data/test.tsv", _MRPC_TEST)
  made = ws.path("litert-export")
  if not os.path.isdir(made):
    from bert import heads  # pylint: disable=g-import-not-at-top  (TensorFlow: only here)
    from bert.formats import litert_metadata  # pylint: disable=g-import-not-at-top
    from bert.formats import serving  # pylint: disable=g-import-not-at-top
    from bert.training import model_config  # pylint: disable=g-import-not-at-top
    model, _ = heads.build_classifier_model(model_config.load_bert_config(ws.config), 2)
    serving.export_classifier(made, model, ["0", "1"], litert=litert_metadata.request(
        "float32", {"task": "Mrpc", "task_name": "mrpc", "head": "classifier",
                    "labels": ["0", "1"], "num_texts": 2, "max_seq_length": 32,
                    "do_lower_case": True, "normalize": None}, ws.vocab))
  import shutil  # pylint: disable=g-import-not-at-top
  shutil.copytree(made, ws.path(folder, "export"))


_MODEL_FLAGS = {"vocab_file": ("model/vocab.txt", False),
                "bert_config_file": ("model/bert_config.json", False),
                "init_checkpoint": ("run", True)}
_TRAIN = ["--do_train", "--train_batch_size=2", "--num_train_epochs=1"]


FORM_FAMILIES = {
    # Evaluation from one of our runs, every flag also typed alone in every form.
    "classifier": path_forms.FormFamily(
        "run_classifier.py", _classifier_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        ("--task_name=MRPC", "--do_eval", "--max_seq_length=32", "--eval_batch_size=2"),
        ("out-{name}/eval_results.txt",), default_forms=DEFAULT_PATH_FORMS,
        every_flag_alone=True),
    # A run that trains and exports.
    "classifier_export": path_forms.FormFamily(
        "run_classifier.py", _classifier_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True),
         "export_dir": ("exp-{name}", True)},
        ("--task_name=MRPC", *_TRAIN, "--do_eval", "--max_seq_length=32",
         "--eval_batch_size=2"), ("out-{name}", "exp-{name}")),
    "extract": path_forms.FormFamily(
        "extract_features.py", _extract_materials,
        {"input_file": ("data/input.txt", False), "output_file": ("out-{name}.jsonl", False),
         **_MODEL_FLAGS},
        ("--max_seq_length=16", "--layers=-1"), ("out-{name}.jsonl",),
        default_forms=("relative",)),
    # The checkpoint is one of ours with the masked-LM head.
    "fill_mask": path_forms.FormFamily(
        "fill_mask.py", _fill_mask_materials,
        {"input_file": ("data/input.txt", False), "output_file": ("out-{name}.jsonl", False),
         **_MODEL_FLAGS},
        ("--max_seq_length=16", "--top_k=3"), ("out-{name}.jsonl",),
        checkpoint_head="pretraining"),
    "extend_vocab": path_forms.FormFamily(
        "extend_vocab.py", _extend_vocab_materials,
        {"vocab_file": ("model/vocab.txt", False), "words_file": ("data/words.txt", False),
         "corpus_file": ("data/corpus.txt", False), "output_file": ("out-{name}.txt", False)},
        (), ("out-{name}.txt",)),
    # The model grown with its vocabulary: the checkpoint, config and output folder too.
    "extend_vocab_model": path_forms.FormFamily(
        "extend_vocab.py", _extend_vocab_materials,
        {"vocab_file": ("model/vocab.txt", False), "words_file": ("data/words.txt", False),
         "init_checkpoint": ("run", True), "bert_config_file": ("model/bert_config.json", False),
         "output_dir": ("out-{name}", True)},
        (), ("out-{name}",)),
    "extend_positions": path_forms.FormFamily(
        "extend_positions.py", lambda ws, folder: None,
        {**_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        ("--max_position_embeddings=128",), ("out-{name}",)),
    "export": path_forms.FormFamily(
        "export_encoder.py", lambda ws, folder: None,
        {**_MODEL_FLAGS, "export_dir": ("out-{name}", True)},
        ("--format=huggingface",), ("out-{name}",)),
    "squad": path_forms.FormFamily(
        "run_squad.py", _squad_materials,
        {"train_file": ("data/train.json", False), "predict_file": ("data/dev.json", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True), "export_dir": ("exp-{name}", True)},
        (*_TRAIN, "--do_predict", "--max_seq_length=48", "--doc_stride=16",
         "--max_query_length=12", "--predict_batch_size=2"), ("out-{name}", "exp-{name}")),
    "ner": path_forms.FormFamily(
        "run_ner.py", _conll_materials,
        {"data_dir": ("data", True), "train_file": ("data/train.txt", False),
         "dev_file": ("data/valid.txt", False), "test_file": ("data/test.txt", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        (*_TRAIN, "--do_eval", "--do_predict", "--max_seq_length=16", "--doc_stride=8"),
        ("out-{name}",)),
    # The feature-based mode: its activation cache.
    "ner_feature": path_forms.FormFamily(
        "run_ner.py", _conll_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True),
         "feature_cache_dir": ("cache-{name}", True)},
        (*_TRAIN, "--do_eval", "--max_seq_length=16", "--doc_stride=8", "--mode=feature",
         "--feature_layers=last", "--lstm_units=8", "--feature_batch_size=2"),
        ("out-{name}", "cache-{name}")),
    "tagger": path_forms.FormFamily(
        "run_tagger.py", _conll_materials,
        {"data_dir": ("data", True), "train_file": ("data/train.txt", False),
         "dev_file": ("data/valid.txt", False), "test_file": ("data/test.txt", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        (*_TRAIN, "--do_eval", "--do_predict", "--max_seq_length=16", "--tag_column=2"),
        ("out-{name}",)),
    "swag": path_forms.FormFamily(
        "run_swag.py", _swag_materials,
        {"data_dir": ("data", True), **_MODEL_FLAGS, "output_dir": ("out-{name}", True)},
        (*_TRAIN, "--do_eval", "--max_seq_length=32"), ("out-{name}",)),
    "multilabel": path_forms.FormFamily(
        "run_multilabel.py", _multilabel_materials,
        {"data_dir": ("data", True), "labels_file": ("data/labels.txt", False),
         **_MODEL_FLAGS, "output_dir": ("out-{name}", True), "export_dir": ("exp-{name}", True)},
        (*_TRAIN, "--do_eval", "--do_predict", "--max_seq_length=32"),
        ("out-{name}", "exp-{name}")),
    # The training files as a comma-separated list.
    "pretraining": path_forms.FormFamily(
        "run_pretraining.py", lambda ws, folder: None,
        {"input_file": ("records/a.tfrecord,records/b.tfrecord", False),
         "eval_input_file": ("records/eval.tfrecord", False), **_MODEL_FLAGS,
         "output_dir": ("out-{name}", True)},
        ("--do_train", "--do_eval", f"--max_seq_length={SEQ}",
         f"--max_predictions_per_seq={PREDS}", "--train_batch_size=2", "--num_train_steps=2",
         "--num_warmup_steps=1", "--max_eval_steps=1", "--eval_batch_size=2"),
        ("out-{name}/eval_results.txt",), records=True),
    # ... and as a glob.
    "pretraining_glob": path_forms.FormFamily(
        "run_pretraining.py", lambda ws, folder: None,
        {"input_file": ("records/[ab].tfrecord", False), **_MODEL_FLAGS,
         "output_dir": ("out-{name}", True)},
        ("--do_train", "--do_eval", f"--max_seq_length={SEQ}",
         f"--max_predictions_per_seq={PREDS}", "--train_batch_size=2", "--num_train_steps=2",
         "--num_warmup_steps=1", "--max_eval_steps=1", "--eval_batch_size=2"),
        ("out-{name}/eval_results.txt",), records=True),
    # Inputs as a list, outputs as a list (written round-robin).
    "pretraining_data": path_forms.FormFamily(
        "create_pretraining_data.py", _text_materials,
        {"input_file": ("data/a.txt,data/b.txt", False),
         "output_file": ("out-{name}-0.tfrecord,out-{name}-1.tfrecord", False),
         "vocab_file": ("model/vocab.txt", False)},
        ("--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=2"),
        ("out-{name}-0.tfrecord", "out-{name}-1.tfrecord"), default_forms=("home",)),
    # Inputs as a glob.
    "pretraining_data_glob": path_forms.FormFamily(
        "create_pretraining_data.py", _text_materials,
        {"input_file": ("data/*.txt", False), "output_file": ("out-{name}.tfrecord", False),
         "vocab_file": ("model/vocab.txt", False)},
        ("--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=2"),
        ("out-{name}.tfrecord",)),
    "vocab": path_forms.FormFamily(
        "create_vocab.py", _text_materials,
        {"input_file": ("data/a.txt,data/b.txt", False), "output_file": ("out-{name}.txt", False),
         "output_config_file": ("out-{name}.json", False),
         "bert_config_template": ("model/bert_config.json", False)},
        ("--vocab_size=200", "--num_unused=5"), ("out-{name}.txt", "out-{name}.json"),
        default_forms=("dotdot",)),
    "vocab_glob": path_forms.FormFamily(
        "create_vocab.py", _text_materials,
        {"input_file": ("data/*.txt", False), "output_file": ("out-{name}/vocab.txt", False)},
        ("--vocab_size=200", "--num_unused=5"), ("out-{name}",)),
    # The LiteRT predictor (no TensorFlow in its process): the model, its data, its output.
    "predict_litert": path_forms.FormFamily(
        "predict_litert.py", _litert_materials,
        {"model": ("export/litert/model_float32.tflite", False), "data_dir": ("data", True),
         "output_dir": ("out-{name}", True)},
        ("--task_name=mrpc", "--num_threads=1"), ("out-{name}",)),
    "squad_evaluate": path_forms.FormFamily(
        "squad_evaluate.py", _squad_eval_materials,
        {"<data_file>": ("data/dev.json", False), "<pred_file>": ("data/predictions.json", False),
         "na-prob-file": ("data/null_odds.json", False), "out-file": ("out-{name}.json", False)},
        (), ("out-{name}.json",)),
    # The whole pipeline, as small as it goes (about 50 s a run).
    "quickstart": path_forms.FormFamily(
        "quickstart.py", lambda ws, folder: None, {"output_dir": ("out-{name}", True)},
        ("--pretrain_steps=1", "--vocab_size=200", "--finetune_epochs=0.1",
         "--max_seq_length=16"), ("out-{name}",)),
}

# The checkpoint typed as a folder (the families' "run"), as a ckpt-N prefix and as its
# .index file (path_forms.CHECKPOINT_KINDS): for every form, in these families.
CHECKPOINT_KIND_FAMILIES = ("classifier", "pretraining")
path_forms.register(CATALOGUE, FORM_FAMILIES, CHECKPOINT_KIND_FAMILIES)


# --------------------------------------------------------------------------- running


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
  return catalogue.Workspace(tmp_path_factory.mktemp("catalogue"))


@pytest.mark.parametrize("case_id", CATALOGUE.ids(default=True))
def test_bad_input_default(ws, case_id):
  CATALOGUE.check(ws, case_id)


@pytest.mark.slow
@pytest.mark.parametrize("case_id", CATALOGUE.ids(default=False))
def test_bad_input_catalogue(ws, case_id):
  CATALOGUE.check(ws, case_id)


def test_every_batch_size_flag_has_its_refusals():
  """Every flag named *batch_size* of every script (docs/FLAGS.md) and tool has a case
  for 0 and for a negative value; a tool's batch-size flag is found in its source."""
  for path in sorted(catalogue.tools_users_run()):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
      names = set(re.findall(r"[\"'](?:--)?([a-z_]*batch_size)[\"']", handle.read()))
    assert names == set(BATCH_SIZE_FLAGS.get(path, ([], []))[0]), path
  # FLAGS.md's batch-size flags were read (the cases are generated from them).
  assert BATCH_SIZE_FLAGS["extract_features.py"][0] == ["batch_size"]
  assert BATCH_SIZE_FLAGS["run_ner.py"][0] == ["eval_batch_size", "feature_batch_size",
                                               "predict_batch_size", "train_batch_size"]


def test_every_path_flag_has_a_path_forms_family():
  """The path-forms matrix covers every path flag of every script: each flag of
  docs/FLAGS.md's "Path flags" table (tools/maintainers/gen_flag_docs.py lists there every flag
  defined through flags_common.define_path or named *_file, *_dir, *_checkpoint, and
  tests/project/test_docs.py keeps the file current) is typed by a family, and every family runs
  every form (the checkpoint also as a ckpt-N prefix and its .index file). A new path
  flag without a family fails here, and so does a script without one: every script of
  bert.cli.COMMANDS has cases here."""
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    table = handle.read().split("\n## Path flags\n", 1)[1]
  defined = {(row.group(1), flag) for row in re.finditer(r"^\| (\S+\.py) \| (.*) \|$",
                                                         table, re.MULTILINE)
             for flag in re.findall(r"`--([^`]+)`", row.group(2))}
  covered = {(spec.script, flag) for spec in FORM_FAMILIES.values() for flag in spec.flags
             if not flag.startswith("<")}
  assert ("run_classifier.py", "export_dir") in defined  # the table was read
  assert {spec.script for spec in FORM_FAMILIES.values()} == catalogue.listed_scripts()
  assert sorted(defined - covered) == []
  assert sorted(covered - defined) == []  # a family's flag that is not a path flag
  for family, spec in FORM_FAMILIES.items():
    for form in path_forms.PATH_FORMS:
      assert f"{spec.script[:-3]}-path_form_{family}_{form}_for_every_flag" in CATALOGUE.cases
      for kind, _ in path_forms.CHECKPOINT_KINDS if family in CHECKPOINT_KIND_FAMILIES else ():
        assert (f"{spec.script[:-3]}-path_form_{family}_{form}_for_init_checkpoint_{kind}"
                in CATALOGUE.cases)


# ---- absl's own flag errors: one line naming the flag, exit status 2, in every command
# and tool (bert/cli/launch.py's parse_flags; the argparse tools' launch.ArgumentParser)

_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _started(script, *argv):
  return subprocess.run([sys.executable, script, *argv], capture_output=True, text=True,
                        cwd=ROOT, env=_ENV, timeout=300)


def _one_line_refusal(proc, program):
  assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stderr)
  lines = proc.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith(f"{program}: error: "), proc.stderr
  return lines[0][len(f"{program}: error: "):]


RUN_CLASSIFIER_REQUIRED = ["--task_name=MRPC", "--data_dir=d", "--vocab_file=v",
                           "--bert_config_file=c", "--output_dir=o"]


@pytest.mark.parametrize("argv, line", [
    (["--max_seq_length=abc"], "--max_seq_length=abc: not an integer"),
    (["--max_seq_lenght=128"], "--max_seq_lenght: no such flag (did you mean "
                               "--max_seq_length?)"),
    (["--task_name=MRPC"], "missing the required flags --bert_config_file, --vocab_file, "
                           "--output_dir, --data_dir"),
    (["--learning_rate=fast"], "--learning_rate=fast: not a number"),
    (["--do_train=maybe"], "--do_train=maybe: not true or false (a boolean flag: "
                           "--do_train, --do_train=false or --nodo_train)"),
    (["--nodo_train=1"], "--nodo_train=1: a boolean flag's --no form takes no value"),
    (["--max_seq_length"], "Missing value for flag --max_seq_length"),
    # absl sets --do_lower_case and would drop the word "False": refused.
    (RUN_CLASSIFIER_REQUIRED + ["--do_lower_case", "False"],
     "'False' after --do_lower_case: this command takes flags only, each --name=value (a "
     "boolean flag: --name, --name=false or --noname)"),
], ids=["wrong_type", "misspelt", "missing_required", "not_a_float", "not_a_boolean",
        "no_form_with_a_value", "no_value", "a_word_after_a_boolean"])
def test_absl_flag_errors_are_one_line(argv, line):
  """Refused by the parse, before any work: nothing is read or written (the paths here
  do not exist), and absl's own two lines and status 1 are gone."""
  said = _one_line_refusal(_started("run_classifier.py", *argv), "run_classifier.py")
  assert said == f"{line}; --helpshort lists the flags"


def test_help_exits_0_with_the_commands_flags():
  for flag in ("--help", "--helpfull"):
    proc = _started("run_classifier.py", flag)
    assert proc.returncode == 0 and proc.stderr == "", (flag, proc.stderr)
    assert "--task_name" in proc.stdout and "--max_seq_length" in proc.stdout, flag


def test_argparse_tools_and_reproduce_refuse_in_one_line():
  for script, argv, line in (
      ("tools/tagging_baselines.py", ["--tag_column=x"],
       "argument --tag_column: invalid int value: 'x'; --help shows the usage"),
      ("tools/pretraining_curve.py", [],
       "the following arguments are required: runs, --output; --help shows the usage"),
      ("reproduce/aggregate.py", ["--smoke"],
       "--smoke: no such option; usage: python reproduce/aggregate.py RUN_DIR [RUN_DIR ...] "
       "(--help says more)")):
    said = _one_line_refusal(_started(script, *argv), os.path.basename(script))
    assert said == line, script
  proc = subprocess.run(["bash", "reproduce/table1_glue.sh", "--smok", "b", "g"],
                        capture_output=True, text=True, cwd=ROOT, env=_ENV, timeout=60)
  assert _one_line_refusal(proc, "table1_glue.sh") == (
      "--smok: no such option (the one option is --smoke; --help shows the usage)")


def test_flag_error_line_says_each_of_abseils_errors_in_one_line():
  """In process, on flags of its own: the line for each kind of absl error."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from bert.cli import launch  # pylint: disable=g-import-not-at-top
  values = flags.FlagValues()
  flags.DEFINE_integer("steps", 1, "", lower_bound=1, flag_values=values)
  flags.DEFINE_float("rate", 0.1, "", flag_values=values)
  flags.DEFINE_enum("kind", "a", ["a", "b"], "", flag_values=values)
  flags.DEFINE_string("model", None, "", flag_values=values)
  flags.DEFINE_string("data", None, "", flag_values=values)
  flags.mark_flags_as_required(["model", "data"], flag_values=values)

  def said(*argv):
    values.unparse_flags()
    with pytest.raises(flags.Error) as caught:
      values(["tool", *argv])
    return launch.flag_error_line(caught.value, values)

  tail = "; --helpshort lists the flags"
  assert said("--steps=0") == "--steps=0: 0 is not a positive integer" + tail
  assert said("--steps=1.5") == "--steps=1.5: not an integer" + tail
  assert said("--rate=x") == "--rate=x: not a number" + tail
  assert said("--kind=c") == "--kind=c: value should be one of <a|b>" + tail
  assert said("--stesp=2") == "--stesp: no such flag (did you mean --steps?)" + tail
  assert said("--zzz") == "--zzz: no such flag" + tail
  assert said() == "missing the required flags --model, --data" + tail
  assert said("--model=m") == "missing the required flag --data" + tail
  assert said("--model=m", "--data=d", "--steps=-3") == (
      "--steps=-3: -3 is not a positive integer" + tail)


@pytest.mark.slow  # a process per command and tool (about a second each, two with TensorFlow)
def test_every_command_and_tool_says_abseils_errors_in_one_line():
  """Every command of bert.cli.COMMANDS, `python -m bert <command>` and every absl tool
  users run: a misspelt flag, a value of the wrong type and (where it has one) a missing
  required flag are each one line, status 2."""
  from bert import cli  # pylint: disable=g-import-not-at-top
  scripts = [f"{name}.py" for name in cli.COMMANDS] + sorted(
      t for t in catalogue.tools_users_run() if t in ("tools/linear_probe.py",
                                                      "tools/litert_accuracy.py"))
  assert len(scripts) == len(cli.COMMANDS) + 2
  for script in scripts:
    program = os.path.basename(script)
    said = _one_line_refusal(_started(script, "--vebose"), program)
    assert said.startswith("--vebose: no such flag (did you mean --verbose"), (script, said)
    said = _one_line_refusal(_started(script, "--verbose=perhaps"), program)
    assert said.startswith("--verbose=perhaps: not true or false"), (script, said)
    required = BATCH_SIZE_FLAGS.get(script, ([], []))[1]
    if required and script != "create_pretraining_data.py":
      said = _one_line_refusal(_started(script), program)
      assert said.startswith("missing the required flag"), (script, said)
      assert sorted(re.findall(r"--(\w+)", said.split(";")[0])) == sorted(required), script
  for name in cli.COMMANDS:
    proc = subprocess.run([sys.executable, "-m", "bert", name, "--vebose"],
                          capture_output=True, text=True, cwd=ROOT, env=_ENV, timeout=300)
    said = _one_line_refusal(proc, cli.console_name(name))
    assert said.startswith("--vebose: no such flag"), (name, said)
