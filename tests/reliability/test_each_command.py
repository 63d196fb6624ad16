"""The bad-input catalogue, what one command alone meets: a `# ---- <script>` section of
cases per command (a new command adds its own).

Each case must end with exit status 2, ONE error line on stderr (`<script>: error: ...`)
that names the offending file (and line or record), no Python traceback, and no output
left behind that looks complete (nor a half-written temporary file); a case that must
work says so (works=True). The cases of one script run in one process through
tests/support/cli_harness.py (tests/support/catalogue.py); one true subprocess
(test_real_subprocess_matches_the_harness) checks that the harness sees what a user sees.
Faults many commands meet, one table of commands each: test_across_commands.py.
"""
import json
import os
import subprocess
import sys

import pytest

import catalogue
from catalogue import CORPUS, GOOD_QA, SEQ, TINY_CONFIG
from catalogue import classifier_args, conll_folder, cpd_args, export_args, extract_args
from catalogue import google_checkpoint, litert_folder, mrpc_folder, ner_args
from catalogue import pretraining_args, pretraining_features, records_input, squad_args
from catalogue import squad_json, tagger_args, vocab_args
from catalogue import extend_vocab_args, fill_mask_args, pretraining_checkpoint
from conftest import ROOT

CATALOGUE = catalogue.Catalogue(default_scripts={
    "run_classifier.py", "run_pretraining.py", "run_squad.py", "fill_mask.py",
    "extend_vocab.py", "extend_positions.py"})
case = CATALOGUE.case


# Scripts of bert.cli.COMMANDS whose bad inputs are tested in their own files instead of
# in the catalogue (none today: every script has a case; tests/project/test_recipe.py
# reads this set).
TESTED_ELSEWHERE = set()


# ---- run_classifier.py


@case("run_classifier.py", default=True)
def unknown_label_with_verbose(ws):
  """--verbose: the same one error line, after the traceback a bug report needs."""
  d = mrpc_folder(ws, "cls-label-v", dev=["7\t1\t2\tthe cat .\tthe mat ."])
  return dict(argv=classifier_args(ws, d, ws.path("cls-o7v"), "--do_eval", "--verbose"),
              expect=[os.path.join(d, "dev.tsv") + ":2", "7"], verbose=True)


@case("run_classifier.py")
def eval_only_output_dir_holds_other_model(ws):
  d = mrpc_folder(ws, "cls-foreign2", dev="good")
  out = ws.path("cls-o12")
  return dict(argv=classifier_args(ws, d, out, "--do_eval"), expect=[out],
              setup=[{"foreign_checkpoint": out, "bert_config": ws.other_config}],
              absent=[os.path.join(out, "eval_results.txt")])


@case("run_classifier.py", default=True)
def eval_only_with_nothing_trained(ws):
  d = mrpc_folder(ws, "cls-untrained", dev="good")
  out = ws.path("cls-o26")
  return dict(argv=classifier_args(ws, d, out, "--do_eval"),
              expect=["nothing trained to evaluate", f"--output_dir={out}", "--do_train"],
              absent=[os.path.join(out, "eval_results.txt")])


@case("run_classifier.py", default=True)
def eval_only_from_a_pretrained_encoder(ws):
  d = mrpc_folder(ws, "cls-untrained2", dev="good")
  out = ws.path("cls-o27")
  prefix = ws.path("cls-google", "bert_model.ckpt")
  return dict(argv=classifier_args(ws, d, out, "--do_eval", f"--init_checkpoint={prefix}"),
              expect=[prefix, "no trained weights for output_bias"],
              setup=[{"google_checkpoint": prefix, "bert_config": ws.config}],
              absent=[os.path.join(out, "eval_results.txt")])


@case("run_classifier.py", default=True)
def truncated_init_checkpoint(ws):
  d = mrpc_folder(ws, "cls-trunc", train="good")
  out = ws.path("cls-o28")
  prefix = ws.path("cls-trunc-ckpt", "bert_model.ckpt")
  return dict(argv=classifier_args(ws, d, out, "--do_train", f"--init_checkpoint={prefix}"),
              expect=[prefix, "truncated"],
              setup=[{"google_checkpoint": prefix, "bert_config": ws.config},
                     {"truncate": prefix + ".data-00000-of-00001", "by": 4096}],
              absent=[os.path.join(out, "ckpt-1.index")])


@case("run_classifier.py")
def config_missing_a_key(ws):
  d = mrpc_folder(ws, "cls-key", train="good")
  config = ws.write("cls-nokey.json", json.dumps(
      {k: v for k, v in TINY_CONFIG.items() if k != "num_attention_heads"}))
  return dict(argv=classifier_args(ws, d, ws.path("cls-o29"), "--do_train", config=config),
              expect=[config, "num_attention_heads"])


@case("run_classifier.py")
def directory_as_vocab(ws):
  vocab = ws.mkdir("cls-vocab-dir")
  d = mrpc_folder(ws, "cls-vocab2", train="good")
  return dict(argv=classifier_args(ws, d, ws.path("cls-o17"), "--do_train", vocab=vocab),
              expect=[vocab])


# Silent wrong answers and unhelpful messages.


def _tsv_task(ws, name, train):
  directory = ws.mkdir(name)
  ws.write(f"{name}/train.tsv", train)
  return ["--task_name=tsv", f"--data_dir={directory}", *ws.model_flags(),
          f"--output_dir={ws.path(name + '-out')}", "--max_seq_length=32",
          "--train_batch_size=2", "--num_train_epochs=1", "--do_train"]


@case("run_classifier.py", default=True)
def header_read_as_data(ws):
  # Without --has_header, "label" would become a third class of a two-class file.
  argv = _tsv_task(ws, "cls-header", "sentence\tlabel\nthe cat sat .\t0\na dog ran .\t1\n"
                   "the sun set .\t1\n")
  path = ws.path("cls-header", "train.tsv")
  return dict(argv=argv, expect=[path + ":1: the first row looks like a header",
                                 "'label' is not a number", "pass --has_header",
                                 "--has_header=false"],
              absent=[ws.path("cls-header-out", "checkpoint")])


@case("run_classifier.py")
def header_of_word_labels_read_as_data(ws):
  argv = _tsv_task(ws, "cls-header2", "text\tsentiment\nthe cat sat .\tpositive\n"
                   "a dog ran .\tnegative\nthe sun set .\tpositive\n")
  return dict(argv=argv, expect=[ws.path("cls-header2", "train.tsv") + ":1:",
                                 "'sentiment' is a column name", "--has_header=false"])


@case("run_classifier.py")
def label_list_given_twice(ws):
  argv = _tsv_task(ws, "cls-twice", "good film\tpos\nbad film\tneg\n")
  return dict(argv=argv + ["--has_header=false", "--label_list=pos,neg,pos"],
              absent=[ws.path("cls-twice-out")],
              line="--label_list=pos,neg,pos: 'pos' is given 2 times; each label once, in "
                   "label-id order")


# ---- run_multilabel.py


@case("run_multilabel.py")
def training_data_without_any_label(ws):
  d = ws.mkdir("ml-nolabel")
  ws.write("ml-nolabel/labels.txt", "PER\nLOC\n")
  train = ws.write("ml-nolabel/train.tsv", "the cat sat .\t\nthe mat .\t\n")
  out = ws.path("ml-nolabel-out")
  return dict(argv=[f"--data_dir={d}", *ws.model_flags(), "--do_train",
                    "--max_seq_length=32", f"--output_dir={out}"],
              expect=[f"{train}: no line of the training data has a label"], absent=[out])


@case("run_multilabel.py")
def labels_file_lists_a_label_twice(ws):
  d = ws.mkdir("ml-twice")
  labels = ws.write("ml-twice/labels.txt", "PER\nLOC\nPER\n")
  ws.write("ml-twice/train.tsv", "the cat sat .\tPER\n")
  out = ws.path("ml-twice-out")
  return dict(argv=[f"--data_dir={d}", *ws.model_flags(), "--do_train",
                    "--max_seq_length=32", f"--output_dir={out}"], absent=[out],
              line=f"{labels}:3: label 'PER' is listed twice (first on line 1)")


# ---- create_pretraining_data.py


@case("create_pretraining_data.py")
def vocab_without_mask_token(ws):
  path = ws.write("cpd-ok.txt", CORPUS)
  vocab = ws.write("cpd-vocab-nomask.txt",
                   "".join(l for l in ws.vocab_lines if l.strip() != "[MASK]"))
  out = ws.path("cpd-o7.tfrecord")
  return dict(argv=cpd_args(ws, path, out, vocab=vocab), expect=[vocab, "[MASK]"], absent=[out])


@case("create_pretraining_data.py")
def output_is_a_directory(ws):
  path = ws.write("cpd-ok.txt", CORPUS)
  out = ws.mkdir("cpd-o9.tfrecord")
  return dict(argv=cpd_args(ws, path, out), expect=[out])


# ---- run_pretraining.py


@case("run_pretraining.py")
def no_input_matches(ws):
  pattern = ws.path("rp-none", "*.tfrecord")
  return dict(argv=pretraining_args(ws, pattern, ws.path("rp-o1")), expect=[pattern])


@case("run_pretraining.py", default=True)
def text_file_as_input(ws):
  path = ws.write("rp-text.tfrecord", CORPUS * 20)
  return dict(argv=pretraining_args(ws, path, ws.path("rp-o4")), expect=[path])


@case("run_pretraining.py", default=True)
def wrong_feature_length(ws):
  path = ws.path("rp-len.tfrecord")
  setup = {"tfrecord": path, "features": pretraining_features(input_ids=SEQ * 2),
           "count": 4}
  return dict(argv=pretraining_args(ws, path, ws.path("rp-o5")), expect=[path, "input_ids"],
              setup=[setup])


@case("run_pretraining.py")
def missing_feature(ws):
  path = ws.path("rp-nofeature.tfrecord")
  setup = {"tfrecord": path, "features": pretraining_features(drop=("next_sentence_labels",)),
           "count": 4}
  return dict(argv=pretraining_args(ws, path, ws.path("rp-o6")),
              expect=[path, "next_sentence_labels"], setup=[setup])


@case("run_pretraining.py")
def truncated_last_record(ws):
  path = ws.path("rp-truncated.tfrecord")
  setup = {"tfrecord": path, "features": pretraining_features(), "count": 8,
           "truncate_by": 30}
  out = ws.path("rp-o7")
  return dict(argv=pretraining_args(ws, path, out), expect=[path], setup=[setup],
              absent=[os.path.join(out, "pretrained")])


@case("run_pretraining.py")
def non_utf8_config(ws):
  config = ws.write("rp-config-latin1.json",
                    json.dumps(TINY_CONFIG).encode().replace(b'"gelu"', b'"g\xe9lu"'))
  path, setup = records_input(ws, "rp-ok-a", SEQ)
  return dict(argv=pretraining_args(ws, path, ws.path("rp-o9"), config=config), expect=[config],
              setup=setup)


@case("run_pretraining.py", default=True)
def one_packed_file_among_fifty_one(ws):
  """A glob of 50 files of the original's layout and a 51st of packed rows, for
  evaluation: every file's first record is read, not only the first 50 files'."""
  packed = dict(pretraining_features(next_sentence_labels=2),
                position_ids=["int64", list(range(SEQ))],
                sequence_ids=["int64", [1] * (SEQ // 2) + [2] * (SEQ - SEQ // 2)],
                next_sentence_positions=["int64", [0, SEQ // 2]],
                next_sentence_weights=["float", [1.0, 1.0]])
  folder = ws.path("rp-glob51")
  setup = [{"tfrecord": os.path.join(folder, f"part-{i:05d}"), "count": 2,
            "features": packed if i == 50 else pretraining_features()} for i in range(51)]
  out = ws.path("rp-o51")
  argv = pretraining_args(ws, os.path.join(folder, "part-*"), out)
  argv = [a for a in argv if a != "--do_train"] + ["--do_eval"]
  return dict(argv=argv, setup=setup, absent=[out], line=(
      f"--input_file: {folder}/part-00050 holds packed rows (up to 2 sequences a row), "
      f"masked, but {folder}/part-00000 holds one sequence a row, masked; pass files of "
      "one create_pretraining_data.py layout"))


# ---- run_squad.py


@case("run_squad.py")
def missing_predict_file(ws):
  path = ws.path("sq-none.json")
  return dict(argv=squad_args(ws, ws.path("sq-o1"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def empty_predict_file(ws):
  path = ws.write("sq-empty.json", "")
  return dict(argv=squad_args(ws, ws.path("sq-o2"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def directory_as_train_file(ws):
  path = ws.mkdir("sq-dir.json")
  return dict(argv=squad_args(ws, ws.path("sq-o3"), "--do_train", f"--train_file={path}"),
              expect=[path])


@case("run_squad.py", default=True)
def truncated_json(ws):
  path = ws.write("sq-trunc.json", squad_json([GOOD_QA])[:-20])
  out = ws.path("sq-o4")
  return dict(argv=squad_args(ws, out, "--do_predict", f"--predict_file={path}"), expect=[path],
              absent=[os.path.join(out, "predictions.json")])


@case("run_squad.py")
def non_utf8_json(ws):
  path = ws.write("sq-latin1.json", squad_json([GOOD_QA]).encode().replace(b"cat", b"c\xe0t"))
  return dict(argv=squad_args(ws, ws.path("sq-o5"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def data_not_a_list(ws):
  path = ws.write("sq-struct.json", json.dumps({"version": "1.1", "data": {"x": 1}}))
  return dict(argv=squad_args(ws, ws.path("sq-o6"), "--do_predict", f"--predict_file={path}"),
              expect=[path])


@case("run_squad.py")
def question_without_id(ws):
  path = ws.write("sq-noid.json", squad_json([{"question": "who ?", "answers": []}]))
  return dict(argv=squad_args(ws, ws.path("sq-o7"), "--do_predict", f"--predict_file={path}"),
              expect=[path, "id"])


@case("run_squad.py")
def training_question_without_answer(ws):
  path = ws.write("sq-noans.json", squad_json([{"id": "q1", "question": "who ?"}]))
  return dict(argv=squad_args(ws, ws.path("sq-o8"), "--do_train", f"--train_file={path}"),
              expect=[path, "q1"])


@case("run_squad.py", default=True)
def best_metric_of_another_spelling(ws):
  """F1 for f1: refused before any file is read or written (train.tf_record included)."""
  path = ws.write("sq-f1.json", squad_json([GOOD_QA]))
  out = ws.path("sq-o10")
  return dict(argv=squad_args(ws, out, "--do_train", "--do_eval", f"--train_file={path}",
                              f"--predict_file={path}", "--eval_every_steps=1",
                              "--best_metric=F1"),
              absent=[out], line="--best_metric=F1: SQuAD's dev evaluation reports "
                                 "exact_match, f1; name one of them")


@case("run_squad.py", default=True)
def default_max_seq_length_over_positions(ws):
  path = ws.write("sq-ok.json", squad_json([GOOD_QA]))
  argv = [*ws.model_flags(), f"--output_dir={ws.path('sq-o9')}", "--do_predict",
          f"--predict_file={path}"]   # run_squad's default max_seq_length is 384
  return dict(argv=argv, expect=["max_seq_length=384", "64"])


@case("run_squad.py", default=True)
def predict_into_a_classifier_output_dir(ws):
  # The classifier's checkpoint (same BERT size) must not be scored as SQuAD.
  path = ws.write("sq-ok.json", squad_json([GOOD_QA]))
  out = ws.path("sq-o13")
  return dict(argv=squad_args(ws, out, "--do_predict", f"--predict_file={path}"),
              expect=[f"--output_dir={out}", "different model"],
              setup=[{"foreign_checkpoint": out, "bert_config": ws.config}],
              absent=[os.path.join(out, "predictions.json"),
                      os.path.join(out, "eval_results.txt")])


@case("run_squad.py", default=True)
def answer_start_is_a_string(ws):
  qa = dict(GOOD_QA, answers=[{"text": "on the mat", "answer_start": "12"}])
  path = ws.write("sq-start.json", squad_json([qa]))
  return dict(argv=squad_args(ws, ws.path("sq-start-out"), "--do_train", f"--train_file={path}"),
              expect=[path + ": article 0 paragraph 0 question 0 (id q1)",
                      "\"answer_start\" is a str ('12'), not an integer"])


# ---- run_ner.py


@case("run_ner.py")
def last_column_of_other_tags(ws):
  d = conll_folder(ws, "ner-pos", train="EU NNP\nrejects VBZ\n\n")
  out = ws.path("ner-pos-out")
  return dict(argv=ner_args(ws, d, out, "--do_train"), absent=[out],
              line=f"{d}/train.txt:1: the last column holds tags that are not IOB chunk "
                   "tags (B-X, I-X or O): 'NNP', 'VBZ'; run_ner.py learns entity tags (O, "
                   "B-<type>, I-<type>) from the last column; run_tagger.py --tag_column "
                   "learns other tags")


# ---- run_tagger.py


@case("run_tagger.py")
def tag_column_past_the_last(ws):
  d = conll_folder(ws, "tag-column", train="good")
  return dict(argv=tagger_args(ws, d, ws.path("tag-o1"), "--do_train", "--tag_column=5"),
              expect=[os.path.join(d, "train.txt") + ":3", "--tag_column=5"])


@case("run_tagger.py")
def tag_outside_the_given_labels(ws):
  d = conll_folder(ws, "tag-labels", train="good")
  return dict(argv=tagger_args(ws, d, ws.path("tag-o3"), "--do_train", "--tag_column=2",
                           "--labels=NNP,VBZ,NN,."),
              expect=[os.path.join(d, "train.txt") + ":5", "'JJ'", "--labels"])


@case("run_tagger.py")
def iob_on_a_column_of_other_tags(ws):
  """The part-of-speech column read as IOB chunks used to become all O: one label, a
  one-output model, F1 0.0 and exit 0."""
  d = conll_folder(ws, "tag-iob-pos", train="good", valid="good")
  out = ws.path("tag-iob-pos-out")
  return dict(argv=tagger_args(ws, d, out, "--do_train", "--do_eval", "--tag_column=2",
                           "--iob"), absent=[out],
              line=f"{d}/train.txt:3: column 2 holds tags that are not IOB chunk tags (B-X, "
                   "I-X or O): 'NNP', 'VBZ', 'JJ', 'NN', '.'; pick the chunk column with "
                   "--tag_column (CoNLL-2003: 3 chunks, 4 entities), or drop --iob to learn "
                   "the tags as written")


_CONLL_DEV = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
              "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n")


@case("run_tagger.py")
def conll_without_a_byte_order_mark_reference(ws):
  d = conll_folder(ws, "tag-bom-ref", train="good", valid=_CONLL_DEV)
  return dict(argv=tagger_args(ws, d, ws.path("tag-bom-ref-out"), "--do_train", "--do_eval",
                           "--iob"), works=True)


@case("run_tagger.py")
def conll_with_a_byte_order_mark(ws):
  """valid.txt saved by a Windows editor: "\\ufeff-DOCSTART-" used to be a word (one
  sentence too many) and -X- a label; the same run as without the mark, byte for byte."""
  d = conll_folder(ws, "tag-bom", train="good", valid="\ufeff" + _CONLL_DEV)
  out, reference = ws.path("tag-bom-out"), ws.path("tag-bom-ref-out")
  return dict(argv=tagger_args(ws, d, out, "--do_train", "--do_eval", "--iob"), works=True,
              same=[(os.path.join(out, name), os.path.join(reference, name))
                    for name in ("eval_results.txt", "dev_predictions.txt")],
              lines_in={os.path.join(out, "eval_results.txt"): ["eval_sentences = 2"]})


# ---- extract_features.py


@case("extract_features.py")
def pair_on_type_vocab_size_one(ws):
  config = ws.write_config("ef-tv1.json", type_vocab_size=1)
  path = ws.write("ef-pair.txt", "the cat sat .\nthe cat ||| sat .\n")
  out = ws.path("ef-o11.jsonl")
  return dict(argv=extract_args(ws, path, out, config=config),
              expect=[path + ":2: the line is a pair", "type_vocab_size 1"], absent=[out])


@case("extract_features.py")
def output_under_a_regular_file_before_the_model(ws):
  path = ws.write("ef-in12.txt", "the cat sat .\n")
  out = os.path.join(ws.blocker, "ef-o12.jsonl")
  return dict(argv=extract_args(ws, path, out, checkpoint=ws.path("ef-none", "bert_model.ckpt")),
              line=f"--output_file={out}: {ws.blocker} is a file, not a directory")


# ---- fill_mask.py


@case("fill_mask.py", default=True)
def encoder_without_masked_lm_head(ws):
  """Google's layout with the encoder alone (as the shared MiniLM)."""
  path = ws.write("fm-in.txt", "the cat sat on the [MASK] .\n")
  prefix = ws.path("fm-encoder", "bert_model.ckpt")
  out = ws.path("fm-o1.jsonl")
  return dict(argv=fill_mask_args(ws, path, out, checkpoint=prefix),
              expect=[f"--init_checkpoint={prefix}: it holds no masked-LM head "
                      "(cls/predictions/transform/dense/kernel is not in it)"],
              setup=[google_checkpoint(ws, "fm-encoder")], absent=[out])


@case("fill_mask.py", default=True)
def line_without_mask(ws):
  path = ws.write("fm-nomask.txt", "the cat sat on the [MASK] .\nthe cat sat [mask] .\n")
  out = ws.path("fm-o2.jsonl")
  return dict(argv=fill_mask_args(ws, path, out),
              expect=[f"{path}:2: the text has no [MASK]"],
              setup=[pretraining_checkpoint(ws, "fm-tiny")], absent=[out])


@case("fill_mask.py", default=True)
def more_masks_than_allowed(ws):
  path = ws.write("fm-many.txt", "the [MASK] sat on the [MASK] .\n")
  out = ws.path("fm-o3.jsonl")
  return dict(argv=fill_mask_args(ws, path, out, "--max_masks=1"),
              expect=[f"{path}:1: the text has 2 [MASK]s, more than --max_masks=1"],
              setup=[pretraining_checkpoint(ws, "fm-tiny")], absent=[out])


@case("fill_mask.py")
def fine_tuned_classifier(ws):
  path = ws.write("fm-in4.txt", "the cat sat on the [MASK] .\n")
  run = ws.path("fm-mrpc")
  out = ws.path("fm-o4.jsonl")
  return dict(argv=fill_mask_args(ws, path, out, checkpoint=run),
              expect=[f"--init_checkpoint={run}: it holds no masked-LM head",
                      "it is a fine-tuned model (MRPC's classifier (labels 0, 1))"],
              setup=[{"foreign_checkpoint": run, "bert_config": ws.config,
                      "head_info": '{"task": "MRPC", "head": "classifier", '
                                   '"labels": ["0", "1"]}'}], absent=[out])


@case("fill_mask.py")
def shared_minilm_without_masked_lm_head(ws):
  path = ws.write("fm-in5.txt", "paris is the [MASK] of france .\n")
  folder = os.path.dirname(ws.minilm)
  out = ws.path("fm-o5.jsonl")
  return dict(argv=fill_mask_args(ws, path, out, checkpoint=ws.minilm,
                                  config=os.path.join(folder, "bert_config.json"),
                                  vocab=os.path.join(folder, "vocab.txt")),
              expect=[f"--init_checkpoint={ws.minilm}: it holds no masked-LM head",
                      "an encoder without its pretraining heads"], absent=[out])


@case("fill_mask.py", default=True)
def output_under_a_regular_file(ws):
  """Refused before the model loads: this checkpoint (no masked-LM head) would be
  refused there, so the line naming the output says the output was checked first."""
  path = ws.write("fm-in6.txt", "the cat sat on the [MASK] .\n")
  out = os.path.join(ws.blocker, "fm-o6.jsonl")
  return dict(argv=fill_mask_args(ws, path, out, checkpoint=ws.minilm),
              line=f"--output_file={out}: {ws.blocker} is a file, not a directory")


@case("fill_mask.py", default=True)
def output_in_an_existing_folder(ws):
  path = ws.write("fm-in7.txt", "the cat sat on the [MASK] .\n")
  out = ws.path("fm-o7.jsonl")
  return dict(argv=fill_mask_args(ws, path, out), works=True, exists=[out],
              setup=[pretraining_checkpoint(ws, "fm-tiny")])


@case("fill_mask.py", default=True)
def output_in_a_folder_not_made_yet(ws):
  """Created, as create_pretraining_data.py and extend_vocab.py create theirs: the
  same bytes as in a folder that was there."""
  path = ws.write("fm-in7.txt", "the cat sat on the [MASK] .\n")
  out = ws.path("fm-new", "deeper", "fm-o7.jsonl")
  # The checkpoint output_in_an_existing_folder's setup made (a setup draws new weights).
  return dict(argv=fill_mask_args(ws, path, out), works=True,
              same=[(out, ws.path("fm-o7.jsonl"))])


# ---- extend_vocab.py


@case("extend_vocab.py", default=True)
def word_the_tokenizer_splits(ws):
  words = ws.write("xv-words.txt", "bitcoin\ne-mail\n")
  out = ws.path("xv-o1.txt")
  return dict(argv=extend_vocab_args(ws, words, out),
              expect=[f"{words}:2: 'e-mail' cannot be one piece", "'e', '-', 'mail'",
                      "punctuation"], absent=[out])


@case("extend_vocab.py", default=True)
def more_words_than_unused_entries(ws):
  vocab = ws.write("xv-vocab.txt", "[PAD]\n[unused0]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
                   "[unused1]\nthe\n")
  words = ws.write("xv-words2.txt", "bitcoin\nminer\nthe\nblockchain\n")
  out = ws.path("xv-o2.txt")
  return dict(argv=extend_vocab_args(ws, words, out, vocab=vocab),
              expect=[f"--words_file={words}: 3 new words", "only 2 [unusedN] entries"],
              absent=[out])


@case("extend_vocab.py")
def cjk_word(ws):
  words = ws.write("xv-words3.txt", "東京\n")
  out = ws.path("xv-o3.txt")
  return dict(argv=extend_vocab_args(ws, words, out),
              expect=[f"{words}:1: '東京' cannot be one piece", "CJK ideograph"], absent=[out])


def _growth_args(ws, out, *extra, checkpoint=None, config=None, vocab=None):
  """extend_vocab.py --init_checkpoint's model flags, with the tiny Google checkpoint."""
  return [f"--init_checkpoint={checkpoint or ws.path('grow-tiny', 'bert_model.ckpt')}",
          f"--bert_config_file={config or ws.config}", f"--vocab_file={vocab or ws.vocab}",
          f"--output_dir={out}", *extra]


@case("extend_vocab.py", default=True)
def growth_flag_without_a_checkpoint(ws):
  words = ws.write("xv-words4.txt", "bitcoin\n")
  out = ws.path("xv-o4.txt")
  return dict(argv=extend_vocab_args(ws, words, out, "--new_rows=random"),
              expect=["--new_rows acts with --init_checkpoint"], absent=[out])


@case("extend_vocab.py", default=True)
def output_file_with_a_checkpoint(ws):
  words = ws.write("xv-words5.txt", "bitcoin\n")
  out, folder = ws.path("xv-o5.txt"), ws.path("xv-o5")
  return dict(argv=[*_growth_args(ws, folder), f"--words_file={words}",
                    f"--output_file={out}"],
              setup=[google_checkpoint(ws, "grow-tiny")],
              expect=[f"--output_file={out} with --init_checkpoint", "--output_dir"],
              absent=[out, folder])


@case("extend_vocab.py", default=True)
def vocabulary_and_checkpoint_of_different_sizes(ws):
  vocab = ws.write("xv-vocab6.txt", "".join(ws.vocab_lines[:-3]))
  words = ws.write("xv-words6.txt", "bitcoin\n")
  out = ws.path("xv-o6")
  return dict(argv=[*_growth_args(ws, out, vocab=vocab), f"--words_file={words}"],
              setup=[google_checkpoint(ws, "grow-tiny")],
              expect=[f"--vocab_file={vocab}: 1997 tokens", "vocab_size=2000"], absent=[out])


@case("extend_vocab.py", default=True)
def grown_model_over_its_checkpoint(ws):
  words = ws.write("xv-words7.txt", "bitcoin\n")
  folder = ws.path("grow-tiny7")
  return dict(argv=[*_growth_args(ws, folder, checkpoint=ws.path(
      "grow-tiny7", "bert_model.ckpt")), f"--words_file={words}"],
              setup=[google_checkpoint(ws, "grow-tiny7")],
              expect=[f"--output_dir={folder} holds --init_checkpoint", "a new folder"],
              absent=[ws.path("grow-tiny7", "vocab.txt"),
                      ws.path("grow-tiny7", "bert_config.json")])


# ---- extend_positions.py


def _positions_args(ws, out, *extra, checkpoint=None, config=None):
  return [f"--init_checkpoint={checkpoint or ws.path('pos-tiny', 'bert_model.ckpt')}",
          f"--bert_config_file={config or ws.config}", f"--output_dir={out}", *extra]


@case("extend_positions.py", default=True)
def length_not_above_the_model(ws):
  out = ws.path("xp-o1")
  length = TINY_CONFIG["max_position_embeddings"]
  return dict(argv=_positions_args(ws, out, f"--max_position_embeddings={length}"),
              setup=[google_checkpoint(ws, "pos-tiny")],
              expect=[f"--max_position_embeddings={length} is not more than the model's "
                      f"{length} positions"], absent=[out])


@case("extend_positions.py", default=True)
def checkpoint_of_another_size(ws):
  out = ws.path("xp-o2")
  return dict(argv=_positions_args(ws, out, "--max_position_embeddings=128",
                                   config=ws.other_config),
              setup=[google_checkpoint(ws, "pos-tiny")],
              expect=["--init_checkpoint=", "--bert_config_file makes it", "[64, 48]"],
              absent=[out])


@case("extend_positions.py", default=True)
def positions_over_the_checkpoint(ws):
  folder = ws.path("pos-tiny3")
  return dict(argv=_positions_args(ws, folder, "--max_position_embeddings=128",
                                   checkpoint=ws.path("pos-tiny3", "bert_model.ckpt")),
              setup=[google_checkpoint(ws, "pos-tiny3")],
              expect=[f"--output_dir={folder} holds --init_checkpoint"],
              absent=[ws.path("pos-tiny3", "bert_config.json")])


@case("extend_positions.py")
def vocabulary_of_another_size(ws):
  vocab = ws.write("xp-vocab4.txt", "".join(ws.vocab_lines[:-1]))
  out = ws.path("xp-o4")
  return dict(argv=_positions_args(ws, out, "--max_position_embeddings=128",
                                   f"--vocab_file={vocab}"),
              setup=[google_checkpoint(ws, "pos-tiny")],
              expect=[f"--vocab_file={vocab}: 1999 tokens", "vocab_size=2000"], absent=[out])


# ---- squad_evaluate.py


@case("squad_evaluate.py")
def data_file_without_questions(ws):
  data = ws.write("se-empty.json", json.dumps({"version": "1.1", "data": [
      {"title": "t", "paragraphs": [{"context": "a b c", "qas": []}]}]}))
  preds = ws.write("se-preds.json", "{}")
  return dict(argv=[data, preds], expect=[data + ": the SQuAD file has no questions"])


@case("squad_evaluate.py")
def nan_na_prob_thresh(ws):
  data = ws.write("se-data.json", squad_json([GOOD_QA]))
  preds = ws.write("se-preds2.json", '{"q1": "on the mat"}')
  return dict(argv=[data, preds, "--na-prob-thresh=nan"],
              expect=["--na-prob-thresh=nan: must be a finite number"])


# ---- quickstart.py


@case("quickstart.py")
def zero_pretrain_steps(ws):
  out = ws.path("qs-out")
  return dict(argv=[f"--output_dir={out}", "--pretrain_steps=0"],
              expect=["--pretrain_steps=0: must be at least 1"], absent=[out])


@case("quickstart.py")
def nan_finetune_epochs(ws):
  out = ws.path("qs-out2")
  return dict(argv=[f"--output_dir={out}", "--finetune_epochs=nan"],
              expect=["--finetune_epochs=nan: must be a positive finite number"], absent=[out])


# ---- create_vocab.py


@case("create_vocab.py")
def malformed_config_template(ws):
  path = ws.write("cv-ok.txt", CORPUS * 5)
  template = ws.write("cv-template.json", '{"hidden_size": 32,,}')
  out = ws.path("cv-o6", "vocab.txt")
  return dict(argv=vocab_args(ws, path, out, f"--bert_config_template={template}"),
              expect=[template], absent=[os.path.join(ws.path("cv-o6"), "bert_config.json"), out])


# What create_vocab refuses with its default learner it refuses with --learner=tokenizers,
# in the same line; where the tokenizers package is missing, a refusal found after the
# flags are checked is the one line naming its install instead (found before any input is
# read).
_TOKENIZERS_MISSING = "--learner=tokenizers needs the Hugging Face tokenizers package"


def _with_tokenizers(spec, checked_before_the_learner=False):
  import importlib.util  # pylint: disable=g-import-not-at-top
  spec["argv"] = spec["argv"] + ["--learner=tokenizers"]
  if importlib.util.find_spec("tokenizers") is None and not checked_before_the_learner:
    spec["expect"] = [_TOKENIZERS_MISSING]
  return spec


@case("create_vocab.py")
def tokenizers_missing_input(ws):
  path = ws.path("cv-tk-none.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, ws.path("cv-tk1", "vocab.txt")),
                               expect=[path], absent=[ws.path("cv-tk1")]),
                          checked_before_the_learner=True)


@case("create_vocab.py")
def tokenizers_empty_input(ws):
  path = ws.write("cv-tk-empty.txt", "\n\n")
  out = ws.path("cv-tk2", "vocab.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, out),
                               expect=[path, "no words to learn from"], absent=[out]))


@case("create_vocab.py")
def tokenizers_non_utf8_input(ws):
  path = ws.write("cv-tk-latin.txt", CORPUS.encode() + b"caf\xe9 au lait .\n")
  out = ws.path("cv-tk3", "vocab.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, out), expect=[f"{path}:7"],
                               absent=[out]))


@case("create_vocab.py")
def tokenizers_malformed_config_template(ws):
  path = ws.write("cv-tk-ok.txt", CORPUS * 5)
  template = ws.write("cv-tk-template.json", '{"hidden_size": 32,,}')
  out = ws.path("cv-tk4", "vocab.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, out,
                                               f"--bert_config_template={template}"),
                               expect=[template], absent=[out]))


@case("create_vocab.py")
def tokenizers_output_under_a_file(ws):
  path = ws.write("cv-tk-ok2.txt", CORPUS * 5)
  out = os.path.join(ws.blocker, "vocab.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, out),
                               expect=[out, "is a file, not a directory"], absent=[out]))


@case("create_vocab.py")
def tokenizers_vocab_size_within_the_reserved(ws):
  path = ws.write("cv-tk-ok3.txt", CORPUS * 5)
  out = ws.path("cv-tk6", "vocab.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, out, "--vocab_size=10"),
                               line="--vocab_size=10: must exceed the 10 reserved tokens "
                                    "(lower --num_unused or raise --vocab_size)",
                               absent=[out]), checked_before_the_learner=True)


@case("create_vocab.py")
def tokenizers_with_a_setting_of_tensorflow_texts_learner(ws):
  path = ws.write("cv-tk-ok4.txt", CORPUS * 5)
  out = ws.path("cv-tk7", "vocab.txt")
  return _with_tokenizers(dict(argv=vocab_args(ws, path, out, "--num_iterations=2"),
                               line="--num_iterations=2: a setting of "
                                    "--learner=tensorflow_text; --learner=tokenizers does "
                                    "not use it", absent=[out]),
                          checked_before_the_learner=True)


# ---- export_encoder.py


@case("export_encoder.py")
def seq_length_over_positions(ws):
  out = ws.path("ee-o4")
  argv = [a for a in export_args(ws, out) if not a.startswith("--max_seq_length")]
  return dict(argv=argv + ["--seq_length=128"], expect=["seq_length=128", "64"],
              absent=[out])


@case("export_encoder.py")
def export_dir_is_a_file(ws):
  out = ws.write("ee-o6", "not a directory\n")
  return dict(argv=export_args(ws, out), expect=[out], setup=[google_checkpoint(ws, "ee-tiny")])


@case("export_encoder.py")
def normalize_with_hugging_face_format(ws):
  # Hugging Face's BertTokenizer has no NFC step: the export would tokenize differently.
  out = ws.path("ee-o9")
  argv = [a for a in export_args(ws, out) if not a.startswith("--max_seq_length")]
  return dict(argv=argv + ["--format=huggingface", "--normalize=nfc"],
              expect=["--normalize=nfc", "--format=huggingface"], absent=[out],
              setup=[google_checkpoint(ws, "ee-tiny")])


# ---- predict_litert.py (the refusals that need a model that loads, and a data file in
# the wrong format, are tests/litert/test_predictor.py's: here those decided before the runtime
# loads the model)


def _predict_litert(ws, model, data, out, *extra):
  return [f"--model={model}", f"--data_dir={data}", f"--output_dir={out}", *extra]


@case("predict_litert.py")
def missing_model(ws):
  model, out = ws.path("pl-nowhere", "model_int8.tflite"), ws.path("pl-o1")
  return dict(argv=_predict_litert(ws, model, mrpc_folder(ws, "pl-data1"), out),
              expect=[f"--model={model}: no such file"], absent=[out])


@case("predict_litert.py")
def model_without_its_description(ws):
  model, out = litert_folder(ws, "pl-bare", describe=False), ws.path("pl-o2")
  return dict(argv=_predict_litert(ws, model, mrpc_folder(ws, "pl-data2"), out),
              expect=[f"{model}: no model.json beside it"], absent=[out])


@case("predict_litert.py")
def model_of_another_task(ws):
  model, out = litert_folder(ws, "pl-mrpc"), ws.path("pl-o3")
  return dict(argv=_predict_litert(ws, model, mrpc_folder(ws, "pl-data3"), out, "--task_name=sst2"),
              expect=[f"--model={model} is Mrpc's classifier (labels 0, 1), not "
                      "--task_name=sst2's Sst2"], absent=[out])


@case("predict_litert.py")
def model_that_is_not_a_model(ws):
  # Without ai-edge-litert installed the line says so instead; either names the model.
  model, out = litert_folder(ws, "pl-broken"), ws.path("pl-o4")
  return dict(argv=_predict_litert(ws, model, mrpc_folder(ws, "pl-data4"), out),
              expect=[f"--model={model}"], absent=[out])


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


def test_real_subprocess_matches_the_harness(ws):
  """One true `python run_classifier.py` run: what a user sees, exit status included."""
  d = mrpc_folder(ws, "cls-real", train="good", dev=["7\t1\t2\tthe cat .\tthe mat ."])
  out = ws.path("cls-real-out")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(
      [sys.executable, os.path.join(ROOT, "run_classifier.py"),
       *classifier_args(ws, d, out, "--do_eval")],
      capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("run_classifier.py: error: " + os.path.join(d, "dev.tsv") + ":2:")
  assert not os.path.exists(os.path.join(out, "eval_results.txt"))
