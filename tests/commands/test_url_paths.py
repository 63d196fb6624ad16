"""Every path flag of every command on a URL: the same run on ram:// as on local disk.

TensorFlow's in-memory filesystem (`ram://`) goes through the same `tf.io.gfile` calls as
`gs://`, but lives in one process. So each command runs in ONE process (its warm process,
tests/support/cli_harness.py): its inputs are uploaded to ram://, the command runs with every
path flag on ram://, and what it wrote is downloaded and compared with the same
command's run on local disk, byte for byte where the run is deterministic. The real GCS
client against a local emulator: tests/commands/test_gcs_pipeline.py.

The coverage test holds this file to `tools/maintainers/gen_flag_docs.py --path_flags` (the path
flags docs/FLAGS.md lists): a path flag without a URL case here fails it.
"""
import json
import os
import re
import subprocess
import sys

import pytest

import cli_harness
from conftest import ROOT
from tiny import tiny_config_dict
from url_run_inputs import CORPUS, MRPC_HEADER, MRPC_ROWS, WORDS

CONLL = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
         "German JJ B-NP B-MISC\ncall NN I-NP O\n. . O O\n\n"
         "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n")
SWAG = ("video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
        "ending3,label\n"
        'v1,0,"A man sits. He",A man sits.,He,gold,walks away.,eats a cake.,sings loudly.,'
        'reads a book.,0\n'
        'v2,1,"The cat jumps. It",The cat jumps.,It,gold,lands.,flies.,swims.,talks.,0\n')
SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
    "context": "the cat sat on the mat in the home of the man .",
    "qas": [{"id": "q1", "question": "where did the cat sit ?",
             "answers": [{"text": "on the mat", "answer_start": 12}]}]}]}]}
PRETRAINING_FEATURES = {
    "input_ids": ["int64", [2, 5, 6, 7, 4, 3, 8, 9, 10, 3] + [0] * 6],
    "input_mask": ["int64", [1] * 10 + [0] * 6],
    "segment_ids": ["int64", [0] * 6 + [1] * 4 + [0] * 6],
    "masked_lm_positions": ["int64", [4, 0, 0]],
    "masked_lm_ids": ["int64", [8, 0, 0]],
    "masked_lm_weights": ["float", [1.0, 0.0, 0.0]],
    "next_sentence_labels": ["int64", [1]]}
MODEL = ["--vocab_file={IN}/model/vocab.txt", "--bert_config_file={IN}/model/bert_config.json"]
GOOGLE = "--init_checkpoint={IN}/google/bert_model.ckpt"


def _write(path, content):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as handle:
    handle.write(content)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  """The local input folder every case uploads (tiny model, one data set per task)."""
  root = tmp_path_factory.mktemp("url-inputs")
  base = str(root / "in")
  _write(f"{base}/model/vocab.txt", "\n".join(WORDS) + "\n")
  _write(f"{base}/model/bert_config.json",
         json.dumps(tiny_config_dict(len(WORDS), num_hidden_layers=2)))
  for split in ("train", "dev"):
    _write(f"{base}/mrpc/{split}.tsv", MRPC_HEADER + "\n".join(MRPC_ROWS * 2) + "\n")
  _write(f"{base}/mrpc/test.tsv", "Index\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "".join(
      f"{i}\t1\t2\tthe cat sat .\tthe dog ran .\n" for i in range(3)))
  for split in ("train.txt", "valid.txt", "test.txt"):
    _write(f"{base}/conll/{split}", CONLL)
  for split in ("train.csv", "val.csv", "test.csv"):
    _write(f"{base}/swag/{split}", SWAG)
  _write(f"{base}/squad.json", json.dumps(SQUAD))
  _write(f"{base}/squad2.json", json.dumps(dict(SQUAD, version="v2.0")))
  _write(f"{base}/predictions.json", json.dumps({"q1": "on the mat"}))
  _write(f"{base}/null_odds.json", json.dumps({"q1": -3.0}))
  _write(f"{base}/ml/labels.txt", "animal\nperson\n")
  for split in ("train", "dev", "test"):
    _write(f"{base}/ml/{split}.tsv", "the cat sat .\tanimal\nthe man went home .\tperson\n"
           "the dog and the man ran .\tanimal,person\nit is no .\t\n")
  _write(f"{base}/corpus/a.txt", CORPUS)
  _write(f"{base}/corpus/b.txt", CORPUS.replace("cat", "dog"))
  _write(f"{base}/sentences.txt", "the cat sat on the mat . ||| the dog ran\nshe said no\n")
  _write(f"{base}/masks.txt", "the cat sat on the [MASK] .\nshe [MASK] no\n")
  # WORDS with [unusedN] entries after [PAD], for the new words of extend_vocab.
  _write(f"{base}/unused/vocab.txt", "\n".join(WORDS[:1] + ["[unused0]", "[unused1]"]
                                               + list(WORDS[1:])) + "\n")
  _write(f"{base}/unused/words.txt", "talked\nCats\nthe\n")
  return base


def _substitute(argv, where_in, where_out):
  return [a.replace("{IN}", where_in).replace("{OUT}", where_out) for a in argv]


def _pair(name, inputs, tmp, argv, setup=()):
  """A local case and its ram:// twin: the same argv with {IN}/{OUT} on each side."""
  local_out = os.path.join(tmp, f"{name}-local")
  ram_in, ram_out = f"ram://in-{name}", f"ram://out-{name}"
  return [
      {"id": f"{name}-local", "setup": list(setup),
       "argv": _substitute(argv, inputs, local_out)},
      {"id": f"{name}-ram", "argv": _substitute(argv, ram_in, ram_out),
       "setup": [{"upload": inputs, "to": ram_in}],
       "after": [{"download": ram_out, "to": os.path.join(tmp, f"{name}-ram")},
                 {"list": ram_out}]}]


def _harness(script, cases, tmp):
  """{case id: result} of the cases, in order, in the script's warm process (ram:// is
  that process's memory: a case may read what an earlier one of the file wrote there)."""
  del tmp  # the results come back whole: nothing is written beside the cases' outputs
  return {case["id"]: cli_harness.run_case(script, case, timeout=900) for case in cases}


def _ok(results, case_id):
  result = results[case_id]
  assert result["exit"] == 0 and not result["crashed"], (case_id, result["stderr"][-3000:])
  return result


def _read(path):
  with open(path, "rb") as handle:
    return handle.read()


TEMPORARY = re.compile(r"(^|/)\.[^/]+\.(tmp-[0-9a-f]{8}|saving-[^/]+|lock)$|\.bert-run\.lock")


def _same_trees(tmp, name, files, inputs=None):
  """The local and ram:// outputs hold the same files; those listed are byte-equal; the
  ram:// output holds no temporary and no lock."""
  local, ram = os.path.join(tmp, f"{name}-local"), os.path.join(tmp, f"{name}-ram")
  def tree(root):
    found = set()
    for directory, _, names in os.walk(root):
      for entry in names:
        relative = os.path.relpath(os.path.join(directory, entry), root)
        # TensorBoard names its event files by host, time and pid; the NER feature
        # cache by a fingerprint of the checkpoint's path, size and time.
        relative = re.sub(r"events\.out\.tfevents\..*", "events", relative)
        found.add(re.sub(r"-[0-9a-f]{12}\.tfrecord$", "-FINGERPRINT.tfrecord", relative))
    return found
  local_files, ram_files = tree(local), tree(ram)
  assert local_files == ram_files, (sorted(local_files ^ ram_files))
  assert not [f for f in ram_files if TEMPORARY.search(f)], sorted(ram_files)
  for relative in files:
    assert _read(os.path.join(ram, relative)) == _read(os.path.join(local, relative)), relative
  return ram_files


# Slow (a minute): `make test` runs this command on gs:// right after the default suite
# (tests/commands/test_gcs_pipeline.py, the whole pipeline against a local GCS emulator); make test-slow
# runs it on ram://.
@pytest.mark.slow
def test_run_classifier_on_urls_equals_local(inputs, tmp_path):
  """The tiny MRPC run: data, vocabulary, config, Google checkpoint, output_dir and the
  export (SavedModels, LiteRT) on ram://, then a second run from that run's own
  checkpoint (our format) on ram://."""
  tmp = str(tmp_path)
  argv = ["--task_name=MRPC", "--data_dir={IN}/mrpc", *MODEL, GOOGLE,
          "--output_dir={OUT}/run", "--export_dir={OUT}/export", "--litert=float32",
          "--do_train", "--do_eval", "--do_predict", "--max_seq_length=16",
          "--train_batch_size=4", "--num_train_epochs=1", "--seed=3"]
  setup = [{"google_checkpoint": f"{inputs}/google/bert_model.ckpt",
            "bert_config": f"{inputs}/model/bert_config.json"}]
  cases = _pair("cls", inputs, tmp, argv, setup)
  again = ["--task_name=MRPC", "--data_dir=ram://in-cls/mrpc", "--vocab_file=ram://in-cls/model/vocab.txt",
           "--bert_config_file=ram://in-cls/model/bert_config.json",
           "--init_checkpoint=ram://out-cls/run", "--output_dir=ram://out-cls2",
           "--do_predict", "--max_seq_length=16"]
  cases.append({"id": "cls-ours", "argv": again,
                "after": [{"download": "ram://out-cls2", "to": f"{tmp}/cls2"}]})
  results = _harness("run_classifier.py", cases, tmp)
  for case_id in ("cls-local", "cls-ram", "cls-ours"):
    _ok(results, case_id)
  files = _same_trees(tmp, "cls", ["run/eval_results.txt", "run/test_results.tsv",
                                   "run/MRPC.tsv", "export/litert/model.json",
                                   "export/litert/vocab.txt"])
  assert {"run/ckpt-2.index", "export/ids/saved_model.pb", "export/saved_model.pb",
          "export/litert/model_float32.tflite", "run/train/events", "run/eval/events"} <= files
  # The run from its own checkpoint on ram:// predicts what the run itself predicted.
  assert _read(f"{tmp}/cls2/test_results.tsv") == _read(f"{tmp}/cls-ram/run/test_results.tsv")


def test_create_vocab_and_pretraining_data_on_urls_equal_local(inputs, tmp_path):
  tmp = str(tmp_path)
  vocab = ["--input_file={IN}/corpus/*.txt", "--output_file={OUT}/vocab.txt",
           "--vocab_size=120", "--num_unused=2",
           "--bert_config_template={IN}/model/bert_config.json"]
  results = _harness("create_vocab.py", _pair("vocab", inputs, tmp, vocab) + _pair(
      "vocab2", inputs, tmp, vocab[:-1] + ["--output_config_file={OUT}/cfg/config.json"]),
      tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "vocab", ["vocab.txt", "bert_config.json"])
  _same_trees(tmp, "vocab2", ["vocab.txt", "cfg/config.json"])

  data = ["--input_file={IN}/corpus/*.txt", "--output_file={OUT}/data/pt.tfrecord",
          "--vocab_file={IN}/model/vocab.txt", "--max_seq_length=24",
          "--max_predictions_per_seq=4", "--dupe_factor=2", "--random_seed=7"]
  results = _harness("create_pretraining_data.py", _pair("cpd", inputs, tmp, data), tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "cpd", ["data/pt.tfrecord"])
  assert os.path.getsize(f"{tmp}/cpd-ram/data/pt.tfrecord") > 1000


# Slow (a minute): `make test` runs this command on gs:// right after the default suite
# (tests/commands/test_gcs_pipeline.py, the whole pipeline against a local GCS emulator); make test-slow
# runs it on ram://.
@pytest.mark.slow
def test_run_pretraining_on_urls_equals_local(inputs, tmp_path):
  tmp = str(tmp_path)
  records = {"tfrecord": f"{inputs}/pt/train.tfrecord", "features": PRETRAINING_FEATURES,
             "count": 16}
  google = {"google_checkpoint": f"{inputs}/google/bert_model.ckpt",
            "bert_config": f"{inputs}/model/bert_config.json"}
  argv = ["--input_file={IN}/pt/*.tfrecord", "--eval_input_file={IN}/pt/train.tfrecord",
          *MODEL, GOOGLE, "--output_dir={OUT}/pt", "--do_train", "--do_eval",
          "--train_batch_size=4", "--eval_batch_size=4", "--max_seq_length=16",
          "--max_predictions_per_seq=3", "--num_train_steps=2", "--num_warmup_steps=1",
          "--max_eval_steps=2", "--save_checkpoints_steps=1", "--seed=5"]
  results = _harness("run_pretraining.py",
                     _pair("pt", inputs, tmp, argv, setup=[records, google]), tmp)
  for case_id in results:
    _ok(results, case_id)
  files = _same_trees(tmp, "pt", ["pt/eval_results.txt", "pt/pretrained/bert_config.json",
                                  "pt/pretrained/checkpoint"])
  assert {"pt/pretrained/bert_model.ckpt.index", "pt/ckpt-2.index"} <= files


# Slow (minutes): its commands on both filesystems; `make test-slow` runs it, and `make
# test`'s gs:// pipeline covers the same flags' code paths on a bucket.
@pytest.mark.slow
def test_task_families_on_urls_equal_local(inputs, tmp_path):
  """SQuAD, NER (fine-tuned and feature-based, with its feature cache), the tagger, SWAG
  and multi-label: every path flag on ram://, results byte-equal to the local run's."""
  tmp = str(tmp_path)
  google = {"google_checkpoint": f"{inputs}/google/bert_model.ckpt",
            "bert_config": f"{inputs}/model/bert_config.json"}
  short = ["--train_batch_size=2", "--num_train_epochs=1", "--seed=2"]
  runs = {
      "run_squad.py": [("squad", [*MODEL, GOOGLE, "--output_dir={OUT}/sq", "--do_train",
                                  "--do_predict", "--train_file={IN}/squad.json",
                                  "--predict_file={IN}/squad.json", "--max_seq_length=32",
                                  "--doc_stride=8", "--max_query_length=8",
                                  "--export_dir={OUT}/sqx", "--litert=none", *short,
                                  "--train_batch_size=1"],
                        ["sq/predictions.json", "sq/nbest_predictions.json"])],
      "run_ner.py": [("ner", ["--data_dir={IN}/conll", *MODEL, GOOGLE, "--output_dir={OUT}/ner",
                              "--do_train", "--do_eval", "--do_predict",
                              "--max_seq_length=16", "--doc_stride=8", *short],
                      ["ner/eval_results.txt", "ner/test_results.txt"]),
                     ("nerf", ["--data_dir={IN}/swag", *MODEL, GOOGLE, "--train_file={IN}/conll/train.txt",
                               "--dev_file={IN}/conll/valid.txt",
                               "--test_file={IN}/conll/test.txt", "--mode=feature", "--feature_layers=last",
                               "--feature_cache_dir={OUT}/cache", "--output_dir={OUT}/ner",
                               "--do_train", "--do_eval", "--max_seq_length=16",
                               "--doc_stride=8", "--lstm_units=4", *short],
                      ["ner/eval_results.txt"])],
      "run_tagger.py": [("tag", ["--data_dir={IN}/conll", "--train_file={IN}/conll/train.txt",
                                 "--dev_file={IN}/conll/valid.txt",
                                 "--test_file={IN}/conll/test.txt", *MODEL, GOOGLE,
                                 "--output_dir={OUT}/tag", "--do_train", "--do_eval",
                                 "--do_predict", "--max_seq_length=16", *short],
                         ["tag/eval_results.txt"])],
      "run_swag.py": [("swag", ["--data_dir={IN}/swag", *MODEL, GOOGLE,
                                "--output_dir={OUT}/swag", "--do_train", "--do_eval",
                                "--do_predict", "--max_seq_length=24", *short],
                       ["swag/eval_results.txt", "swag/test_predictions.csv"])],
      "run_multilabel.py": [("ml", ["--data_dir={IN}/ml", "--labels_file={IN}/ml/labels.txt",
                                    *MODEL, GOOGLE, "--output_dir={OUT}/ml",
                                    "--export_dir={OUT}/mlx", "--litert=none", "--do_train",
                                    "--do_eval", "--do_predict", "--max_seq_length=16",
                                    *short],
                             ["ml/eval_results.txt", "ml/test_results.tsv"])],
  }
  for script, pairs in runs.items():
    cases = []
    for name, argv, _ in pairs:
      cases += _pair(name, inputs, tmp, argv, setup=[google])
    results = _harness(script, cases, tmp)
    for case_id in results:
      _ok(results, case_id)
    for name, _, files in pairs:
      _same_trees(tmp, name, files)


# Slow (minutes): its commands on both filesystems; `make test-slow` runs it, and `make
# test`'s gs:// pipeline covers the same flags' code paths on a bucket.
@pytest.mark.slow
def test_features_export_and_scorer_on_urls_equal_local(inputs, tmp_path):
  tmp = str(tmp_path)
  google = {"google_checkpoint": f"{inputs}/google/bert_model.ckpt",
            "bert_config": f"{inputs}/model/bert_config.json"}
  os.makedirs(f"{tmp}/feat-local/f")  # extract_features writes into an existing folder
  features = ["--input_file={IN}/sentences.txt", "--output_file={OUT}/f/features.jsonl",
              *MODEL, GOOGLE, "--layers=-1,-2", "--max_seq_length=16", "--batch_size=2"]
  results = _harness("extract_features.py", _pair("feat", inputs, tmp, features, [google]),
                     tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "feat", ["f/features.jsonl"])

  # Hugging Face out to ram://, then that safetensors file (on ram://) as the checkpoint
  # of the TF-Hub export, in the same process.
  os.makedirs(f"{tmp}/hf-local")  # an export's parent folder exists on local disk
  hf = [*MODEL, GOOGLE, "--format=huggingface", "--export_dir={OUT}/hf"]
  cases = _pair("hf", inputs, tmp, hf, [google])
  cases.append({"id": "hub-from-hf", "argv": [
      "--vocab_file=ram://in-hf/model/vocab.txt",
      "--bert_config_file=ram://in-hf/model/bert_config.json",
      "--init_checkpoint=ram://out-hf/hf/model.safetensors", "--export_dir=ram://out-hub",
      "--seq_length=16", "--litert=none"], "after": [{"list": "ram://out-hub"}]})
  results = _harness("export_encoder.py", cases, tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "hf", ["hf/model.safetensors", "hf/config.json", "hf/vocab.txt",
                          "hf/tokenizer_config.json"])
  hub = set(results["hub-from-hf"]["after"][0])
  assert {"encoder/saved_model.pb", "preprocessor/saved_model.pb"} <= hub, sorted(hub)

  for name in ("score-local", "score2-local"):  # the scorer writes into an existing folder
    os.makedirs(f"{tmp}/{name}")
  scorer = ["{IN}/squad.json", "{IN}/predictions.json", "--out-file={OUT}/scores.json"]
  scorer2 = ["{IN}/squad2.json", "{IN}/predictions.json", "--na-prob-file={IN}/null_odds.json",
             "--out-file={OUT}/scores.json"]
  results = _harness("squad_evaluate.py", _pair("score", inputs, tmp, scorer)
                     + _pair("score2", inputs, tmp, scorer2), tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "score", ["scores.json"])
  _same_trees(tmp, "score2", ["scores.json"])
  assert json.loads(_read(f"{tmp}/score-ram/scores.json")) == {"exact_match": 100.0,
                                                                 "f1": 100.0}


# Slow: two more commands on both filesystems (make test-slow).
@pytest.mark.slow
def test_fill_mask_and_extend_vocab_on_urls_equal_local(inputs, tmp_path):
  tmp = str(tmp_path)
  pretrained = {"google_checkpoint": f"{inputs}/mlm/bert_model.ckpt",
                "bert_config": f"{inputs}/model/bert_config.json", "head": "pretraining"}
  os.makedirs(f"{tmp}/masks-local")  # the command writes into an existing folder
  masks = ["--input_file={IN}/masks.txt", "--output_file={OUT}/masks.jsonl", *MODEL,
           "--init_checkpoint={IN}/mlm/bert_model.ckpt", "--max_seq_length=16", "--top_k=3"]
  results = _harness("fill_mask.py", _pair("masks", inputs, tmp, masks, [pretrained]), tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "masks", ["masks.jsonl"])

  os.makedirs(f"{tmp}/vocab-local")
  vocab = ["--vocab_file={IN}/unused/vocab.txt", "--words_file={IN}/unused/words.txt",
           "--corpus_file={IN}/corpus/a.txt", "--output_file={OUT}/vocab.txt"]
  results = _harness("extend_vocab.py", _pair("vocab", inputs, tmp, vocab), tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "vocab", ["vocab.txt"])
  assert _read(f"{tmp}/vocab-ram/vocab.txt").split(b"\n")[1:3] == [b"talked", b"cats"]


# Slow: two more commands on both filesystems (make test-slow).
@pytest.mark.slow
def test_grown_models_on_urls_equal_local(inputs, tmp_path):
  tmp = str(tmp_path)
  pretrained = {"google_checkpoint": f"{inputs}/grow/bert_model.ckpt",
                "bert_config": f"{inputs}/model/bert_config.json", "head": "pretraining"}
  longer = ["--init_checkpoint={IN}/grow/bert_model.ckpt", *MODEL,
            "--max_position_embeddings=80", "--output_dir={OUT}"]
  results = _harness("extend_positions.py", _pair("long", inputs, tmp, longer, [pretrained]),
                     tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "long", ["bert_config.json", "vocab.txt", "bert_model.ckpt.index",
                            "bert_model.ckpt.data-00000-of-00001"])
  assert json.loads(_read(f"{tmp}/long-ram/bert_config.json"))[
      "max_position_embeddings"] == 80

  grown = ["--vocab_file={IN}/unused/vocab.txt", "--words_file={IN}/unused/words.txt",
           "--init_checkpoint={IN}/grow-unused/bert_model.ckpt",
           "--bert_config_file={IN}/unused/bert_config.json", "--output_dir={OUT}",
           "--corpus_file={IN}/corpus/a.txt"]
  _write(f"{inputs}/unused/bert_config.json",
         json.dumps(tiny_config_dict(len(WORDS) + 2, num_hidden_layers=2)))
  setup = {"google_checkpoint": f"{inputs}/grow-unused/bert_model.ckpt",
           "bert_config": f"{inputs}/unused/bert_config.json", "head": "pretraining"}
  results = _harness("extend_vocab.py", _pair("grown", inputs, tmp, grown, [setup]), tmp)
  for case_id in results:
    _ok(results, case_id)
  _same_trees(tmp, "grown", ["vocab.txt", "bert_config.json", "bert_model.ckpt.index",
                             "bert_model.ckpt.data-00000-of-00001"])


# The path flags each test above puts on ram:// (command -> flags), held to the flags
# docs/FLAGS.md lists by the coverage test below.
COVERED = {
    "run_classifier": {"data_dir", "vocab_file", "bert_config_file", "init_checkpoint",
                       "output_dir", "export_dir"},
    "create_vocab": {"input_file", "output_file", "bert_config_template",
                     "output_config_file"},
    "create_pretraining_data": {"input_file", "output_file", "vocab_file"},
    "run_pretraining": {"input_file", "eval_input_file", "vocab_file", "bert_config_file",
                        "init_checkpoint", "output_dir"},
    "run_squad": {"vocab_file", "bert_config_file", "init_checkpoint", "output_dir",
                  "train_file", "predict_file", "export_dir"},
    "run_ner": {"data_dir", "vocab_file", "bert_config_file", "init_checkpoint", "output_dir",
                "train_file", "dev_file", "test_file", "feature_cache_dir"},
    "run_tagger": {"data_dir", "train_file", "dev_file", "test_file", "vocab_file",
                   "bert_config_file", "init_checkpoint", "output_dir"},
    "run_swag": {"data_dir", "vocab_file", "bert_config_file", "init_checkpoint",
                 "output_dir"},
    "run_multilabel": {"data_dir", "labels_file", "vocab_file", "bert_config_file",
                       "init_checkpoint", "output_dir", "export_dir"},
    "extract_features": {"input_file", "output_file", "vocab_file", "bert_config_file",
                         "init_checkpoint"},
    "fill_mask": {"input_file", "output_file", "vocab_file", "bert_config_file",
                  "init_checkpoint"},
    "extend_vocab": {"vocab_file", "words_file", "corpus_file", "output_file",
                     "init_checkpoint", "bert_config_file", "output_dir"},
    "extend_positions": {"init_checkpoint", "bert_config_file", "vocab_file", "output_dir"},
    "export_encoder": {"vocab_file", "bert_config_file", "init_checkpoint", "export_dir"},
    "squad_evaluate": {"out-file", "na-prob-file"},
    # Refused in one line (tests/reliability/test_litert_folders_and_flag_pairs.py's
    # url_as_* cases, test_quickstart_refuses_ram_in_one_line below): the TensorFlow-free
    # predictor reads local paths only, and the quickstart's steps are separate processes,
    # which ram:// does not reach.
    "predict_litert": {"model", "data_dir", "output_dir"},
    "quickstart": {"output_dir"},
}


def test_every_path_flag_has_a_url_case():
  listed = json.loads(subprocess.run(
      [sys.executable, os.path.join(ROOT, "tools", "maintainers", "gen_flag_docs.py"), "--path_flags"],
      cwd=ROOT, check=True, capture_output=True, text=True, timeout=300).stdout)
  missing = {command: sorted(set(flags) - COVERED.get(command, set()))
             for command, flags in listed.items()}
  assert not {c: f for c, f in missing.items() if f}, missing


def _error_line(result):
  lines = [l for l in result["stderr"].splitlines() if l.strip()
           and not re.match(r"^([IWEF]\d{4} |WARNING: All log messages|To enable)", l)]
  assert result["exit"] == 2 and not result["crashed"], result["stderr"][-3000:]
  return lines[-1]


def test_a_scheme_no_filesystem_knows_is_one_line(inputs, tmp_path):
  """`foo://` (or s3:// without its plugin): one line naming the URL and the scheme."""
  tmp = str(tmp_path)
  cases = [
      {"id": "output", "argv": [f"--input_file={inputs}/corpus/a.txt",
                                "--output_file=foo://bucket/x.tfrecord",
                                f"--vocab_file={inputs}/model/vocab.txt"]},
      {"id": "input", "argv": ["--input_file=foo://bucket/a.txt",
                               f"--output_file={tmp}/x.tfrecord",
                               f"--vocab_file={inputs}/model/vocab.txt"]}]
  results = _harness("create_pretraining_data.py", cases, tmp)
  for case_id, flag in (("output", "output_file"), ("input", "input_file")):
    line = _error_line(results[case_id])
    assert line.startswith(f"create_pretraining_data.py: error: --{flag}=foo://bucket/"), line
    assert "no filesystem knows the scheme 'foo://'" in line, line
  assert os.listdir(tmp) == []


def test_quickstart_refuses_ram_in_one_line(tmp_path):
  results = _harness("quickstart.py", [{"id": "ram", "argv": ["--output_dir=ram://q"]}],
                     str(tmp_path))
  assert _error_line(results["ram"]) == (
      "quickstart.py: error: --output_dir=ram://q: ram:// is memory of one process, and "
      "each step of the quickstart is a process of its own; use a local folder or a "
      "bucket (gs://...)")
