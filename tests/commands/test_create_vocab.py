"""create_vocab.py end to end on Korean text, the reserved-token layout, one-line errors."""
import json
import os
import random
import re
import subprocess
import sys

import pytest

from bert import fast_tokenization
from bert import tokenization
import cli_harness
from conftest import ROOT

NOUNS = ["학생", "선생님", "어머니", "아버지", "친구", "의사", "아이", "회사원", "할아버지",
         "할머니", "동생", "고양이", "강아지", "가족", "사람", "요리사", "경찰", "가수",
         "운동선수", "대학생", "기자", "농부", "화가", "간호사", "손님"]
OBJECTS = ["사과", "책", "영화", "음악", "커피", "편지", "숙제", "김치", "신문", "사진",
           "노래", "그림", "물", "빵", "옷", "자전거", "컴퓨터", "우산", "선물", "케이크",
           "라면", "비빔밥", "소설", "잡지", "꽃"]
PLACES = ["학교", "도서관", "시장", "공원", "식당", "병원", "회사", "집", "서울", "부산",
          "카페", "바다", "산", "교회", "역", "백화점", "대학교", "극장", "호텔", "공항"]
VERBS = ["먹", "읽", "보", "좋아하", "사", "만들", "마시", "찾", "기다리", "보내", "배우",
         "가르치", "그리", "팔", "빌리"]
ENDINGS = ["었습니다", "습니다", "고 싶어요", "는 중이에요", "었어요", "을 거예요", "지 않았다"]
TIMES = ["어제", "오늘", "내일", "주말에", "아침에", "저녁에", "작년에", "매일", "가끔", "항상"]


# A pair is (after a final consonant, after a vowel).
PARTICLES = [("은", "는"), ("이", "가"), ("을", "를"), ("과", "와"), "의", "에게", "도", "만",
             "까지", "부터", "처럼", "보다"]


def _josa(word, pair):
  if isinstance(pair, str):
    return word + pair
  has_final_consonant = (ord(word[-1]) - 0xAC00) % 28 != 0
  return word + (pair[0] if has_final_consonant else pair[1])


def _korean_sentence(rng):
  """A sentence from templates: nouns with any particle, verb stems with any ending, so
  that words recombine and the learner has to find stems and ##endings."""
  noun, obj, place = rng.choice(NOUNS), rng.choice(OBJECTS), rng.choice(PLACES)
  return (f"{rng.choice(TIMES)} {_josa(noun, rng.choice(PARTICLES))} "
          f"{place}{rng.choice(['에서', '에', '으로', '까지'])} "
          f"{_josa(obj, rng.choice(PARTICLES))} {rng.choice(VERBS)}{rng.choice(ENDINGS)}"
          f"{rng.choice(['.', '!', '?', ','])}")


def _korean_corpus(path, seed, documents, sentences):
  rng = random.Random(seed)
  with open(path, "w", encoding="utf-8") as handle:
    for _ in range(documents):
      for _ in range(sentences):
        handle.write(_korean_sentence(rng) + "\n")
      handle.write("\n")


def _run(args):
  # The command line's real path (flags, errors, exit status) in a warm process: what
  # a user sees of these runs needs no TensorFlow start-up each.
  return cli_harness.run("create_vocab.py", args, timeout=300)


def test_korean_vocab_end_to_end(tmp_path):
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=1, documents=80, sentences=10)
  out = tmp_path / "ko" / "vocab.txt"
  result = _run([f"--input_file={corpus}", f"--output_file={out}", "--do_lower_case=False",
                 "--vocab_size=1000", "--lower_thresh=2", "--holdout_every=20",
                 "--num_unused=120"])
  assert result.returncode == 0, result.stderr
  summary = json.loads(result.stdout.strip().splitlines()[-1])
  assert summary["lines"] == 800 and summary["reserved_tokens"] == 125

  vocab = tokenization.load_vocab(str(out))
  tokens = list(vocab)
  # Google's layout: [PAD], 99 [unused], [UNK] [CLS] [SEP] [MASK], then the other unused.
  assert tokens[0] == "[PAD]" and tokens[1] == "[unused0]" and tokens[99] == "[unused98]"
  assert tokens[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  assert tokens[104] == "[unused99]" and tokens[124] == "[unused119]"
  assert "[unused120]" not in vocab
  # 937: the threshold search bottoms out at --lower_thresh before reaching 1000.
  assert summary["vocab_size"] == len(tokens) == 937
  config = json.loads((tmp_path / "ko" / "bert_config.json").read_text())
  assert config["vocab_size"] == len(tokens) and config["hidden_size"] == 768
  # Hangul syllables are kept whole (no lower-casing, so no NFD into jamo), and the
  # learner made multi-syllable pieces, stems and ##particles.
  assert "할아버지처럼" in vocab and "##를" in vocab and "##부터" in vocab

  # Held-out text: new sentences from the same words, tokenized with the new vocabulary.
  heldout = tmp_path / "heldout.txt"
  _korean_corpus(heldout, seed=99, documents=20, sentences=10)
  lines = [l for l in heldout.read_text(encoding="utf-8").splitlines() if l]
  full = tokenization.FullTokenizer(str(out), do_lower_case=False)
  pieces = [full.tokenize(line) for line in lines]
  num_tokens = sum(map(len, pieces))
  unknown = sum(t == "[UNK]" for p in pieces for t in p)
  words = sum(len(tokenization.BasicTokenizer(False).tokenize(line)) for line in lines)
  # Measured: 0 [UNK] in 1,717 tokens, 1.31 tokens a word (1 would be whole words,
  # 3 or more the syllable-by-syllable fallback); unseen words split into pieces.
  assert unknown / num_tokens < 0.001
  assert num_tokens / words < 1.5
  assert full.tokenize("잡지부터") == ["잡", "##지", "##부터"]
  assert summary["unk_rate"] < 0.001
  # The same ids from the in-graph tokenizer.
  fast = fast_tokenization.FastTokenizer(str(out), do_lower_case=False)
  assert fast.tokenize_batch(lines) == [full.convert_tokens_to_ids(p) for p in pieces]
  assert (fast.cls_id, fast.sep_id, fast.mask_id, fast.unk_id) == (101, 102, 103, 100)


def test_missing_input_is_a_one_line_error(tmp_path):
  result = _run([f"--input_file={tmp_path}/nope*.txt", f"--output_file={tmp_path}/v.txt"])
  assert result.returncode == 2
  # TensorFlow's C++ start-up lines may come first; ours is the one last line.
  assert result.stderr.strip().splitlines()[-1] == (
      f"create_vocab.py: error: --input_file: no file matches '{tmp_path}/nope*.txt'")
  assert "Traceback" not in result.stderr
  assert not os.path.exists(tmp_path / "v.txt")


def _last_line(result):
  return result.stderr.strip().splitlines()[-1]


# One process each (8 s): the first case runs by default, the others with make test-slow.
@pytest.mark.parametrize("args,message", [
    (["--num_iterations=0"], "--num_iterations=0: must be at least 1"),
    pytest.param(["--vocab_size=1000000000"],
                 "--vocab_size=1000000000: more than 1,000,000, beyond any sane vocabulary",
                 marks=pytest.mark.slow),
    pytest.param(["--lower_thresh=0"], "--lower_thresh=0: must be at least 1",
                 marks=pytest.mark.slow),
    pytest.param(["--slack_ratio=1.5"], "--slack_ratio=1.5: must be in [0, 1)",
                 marks=pytest.mark.slow),
])
def test_flag_errors_are_one_line_before_learning(tmp_path, args, message):
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=1, documents=3, sentences=3)
  out = tmp_path / "v" / "vocab.txt"
  result = _run([f"--input_file={corpus}", f"--output_file={out}", *args])
  assert result.returncode == 2, result.stderr[-2000:]
  assert _last_line(result) == f"create_vocab.py: error: {message}"
  assert "Traceback" not in result.stderr and sorted(os.listdir(tmp_path)) == ["ko.txt"]


def test_unwritable_outputs_fail_before_learning(tmp_path):
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=1, documents=3, sentences=3)
  blocker = tmp_path / "blocker"
  blocker.write_text("a file\n")
  under_file = blocker / "sub" / "vocab.txt"
  result = _run([f"--input_file={corpus}", f"--output_file={under_file}"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert _last_line(result) == (f"create_vocab.py: error: --output_file={under_file}: "
                                f"{blocker} is a file, not a directory")
  directory = tmp_path / "a_dir"
  directory.mkdir()
  result = _run([f"--input_file={corpus}", f"--output_file={directory}"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert _last_line(result) == (f"create_vocab.py: error: --output_file={directory}: is a "
                                "directory, expected a file")
  # Named up front: no learning ran (it logs "counted ... words" when it does).
  assert "counted" not in result.stderr and os.listdir(directory) == []
  config_dir = tmp_path / "cfg"
  config_dir.mkdir()
  result = _run([f"--input_file={corpus}", f"--output_file={tmp_path / 'v.txt'}",
                 f"--output_config_file={config_dir}"])
  assert result.returncode == 2 and _last_line(result) == (
      f"create_vocab.py: error: --output_config_file={config_dir}: is a directory, "
      "expected a file")
  assert sorted(os.listdir(tmp_path)) == ["a_dir", "blocker", "cfg", "ko.txt"]


def test_decomposed_hangul_trap_and_normalize_nfc(tmp_path):
  """Text copied from macOS holds NFD Hangul: learned as is (the original's behaviour),
  the vocabulary is conjoining jamo and NFC text becomes [UNK]; --normalize=nfc learns
  syllables. The corpus check names the trap before learning."""
  import unicodedata  # pylint: disable=g-import-not-at-top
  corpus = tmp_path / "nfc.txt"
  _korean_corpus(corpus, seed=1, documents=80, sentences=10)
  nfd = tmp_path / "nfd.txt"
  nfd.write_text(unicodedata.normalize("NFD", corpus.read_text(encoding="utf-8")),
                 encoding="utf-8")
  common = ["--do_lower_case=False", "--vocab_size=1000", "--lower_thresh=2",
            "--holdout_every=20"]
  raw = tmp_path / "raw" / "vocab.txt"
  result = _run([f"--input_file={nfd}", f"--output_file={raw}", *common])
  assert result.returncode == 0, result.stderr[-2000:]
  assert "WARNING: 800 of 800 lines hold decomposed (NFD) text" in result.stderr
  vocab = tokenization.load_vocab(str(raw))
  jamo = [t for t in vocab if "\u1100" <= t.lstrip("#")[:1] <= "\u11ff"]
  assert len(jamo) > 20 and "학생" not in vocab
  full = tokenization.FullTokenizer(str(raw), do_lower_case=False)
  assert full.tokenize("학생") == ["[UNK]"]

  fixed = tmp_path / "fixed" / "vocab.txt"
  result = _run([f"--input_file={nfd}", f"--output_file={fixed}", "--normalize=nfc",
                 *common])
  assert result.returncode == 0, result.stderr[-2000:]
  assert "lines hold decomposed" not in result.stderr
  vocab = tokenization.load_vocab(str(fixed))
  assert not [t for t in vocab if "\u1100" <= t.lstrip("#")[:1] <= "\u11ff"]
  assert "할아버지처럼" in vocab and "##를" in vocab and "##부터" in vocab
  assert json.loads(result.stdout.strip().splitlines()[-1])["unk_rate"] < 0.001


def test_check_only_names_hangul_under_lower_casing_and_writes_nothing(tmp_path):
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=1, documents=10, sentences=5)
  out = tmp_path / "v" / "vocab.txt"
  result = _run([f"--input_file={corpus}", f"--output_file={out}", "--check_only",
                 "--do_lower_case=True"])
  assert result.returncode == 0, result.stderr[-2000:]
  warnings = [l for l in result.stderr.splitlines()
              if "] WARNING: --do_lower_case=True changes" in l]
  assert len(warnings) == 1 and "(HANGUL)" in warnings[0]
  assert "Hangul syllables come apart into jamo" in warnings[0]
  assert sorted(os.listdir(tmp_path)) == ["ko.txt"]
  result = _run([f"--input_file={corpus}", f"--output_file={out}", "--check_only",
                 "--do_lower_case=False"])
  assert result.returncode == 0 and re.search(r"\]   no warnings$", result.stderr, re.M)


def test_the_command_and_its_counting_workers_load_no_tensorflow(tmp_path):
  """Two spawned workers count the words (each imports the command's modules again):
  none of the three processes imports TensorFlow, and the vocabulary is the one a single
  process learns."""
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=2, documents=30, sentences=10)
  common = [f"--input_file={corpus}", "--do_lower_case=False", "--vocab_size=400",
            "--lower_thresh=2", "--output_config_file="]
  result = subprocess.run(
      [sys.executable, "-X", "importtime", os.path.join(ROOT, "create_vocab.py"),
       f"--output_file={tmp_path}/two.txt", "--num_workers=2", *common],
      capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
      timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
              if line.startswith("import time:")]
  assert imported.count("bert.pretraining.pretraining_vocab") == 3  # this one and 2 workers
  assert not [m for m in imported if m.split(".")[0] in ("tensorflow", "tensorflow_text",
                                                          "keras")]
  one = _run([f"--output_file={tmp_path}/one.txt", "--num_workers=0", *common])
  assert one.returncode == 0, one.stderr[-2000:]
  assert (tmp_path / "two.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()
  assert json.loads(result.stdout.splitlines()[-1])["words"] == json.loads(
      one.stdout.splitlines()[-1])["words"]


def test_learner_tokenizers_end_to_end(tmp_path):
  """Hugging Face's trainer: Google's layout, the same summary keys, read alike by
  FullTokenizer and FastTokenizer."""
  pytest.importorskip("tokenizers", reason="--learner=tokenizers needs the tokenizers "
                      "package (requirements.txt pins it)")
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=1, documents=80, sentences=10)
  out = tmp_path / "ko" / "vocab.txt"
  result = _run([f"--input_file={corpus}", f"--output_file={out}", "--do_lower_case=False",
                 "--vocab_size=500", "--holdout_every=20", "--learner=tokenizers"])
  assert result.returncode == 0, result.stderr[-2000:]
  summary = json.loads(result.stdout.strip().splitlines()[-1])
  assert list(summary) == ["learner", "lines", "words", "distinct_words", "vocab_size",
                           "reserved_tokens", "unk_rate", "pieces_per_word",
                           "unk_rate_measured_on", "learn_seconds", "total_seconds"]
  assert summary["learner"] == "tokenizers" and summary["lines"] == 800
  tokens = list(tokenization.load_vocab(str(out)))
  assert tokens[:104] == (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
                          ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])
  assert summary["vocab_size"] == len(tokens) == 500
  assert "##를" in tokens and summary["unk_rate"] < 0.001
  heldout = tmp_path / "heldout.txt"
  _korean_corpus(heldout, seed=99, documents=5, sentences=10)
  lines = [l for l in heldout.read_text(encoding="utf-8").splitlines() if l]
  full = tokenization.FullTokenizer(str(out), do_lower_case=False)
  fast = fast_tokenization.FastTokenizer(str(out), do_lower_case=False)
  assert fast.tokenize_batch(lines) == [full.convert_tokens_to_ids(full.tokenize(line))
                                        for line in lines]


def test_learner_tokenizers_without_the_package_is_one_line(tmp_path):
  """Where tokenizers is not installed (here: its import fails as a missing package's
  does), the flag is refused before the corpus is read, naming the install."""
  shadow = tmp_path / "shadow" / "tokenizers"
  shadow.mkdir(parents=True)
  (shadow / "__init__.py").write_text(
      "raise ModuleNotFoundError(\"No module named 'tokenizers'\", name='tokenizers')\n")
  corpus = tmp_path / "ko.txt"
  _korean_corpus(corpus, seed=1, documents=2, sentences=3)
  result = subprocess.run(
      [sys.executable, os.path.join(ROOT, "create_vocab.py"), f"--input_file={corpus}",
       f"--output_file={tmp_path}/v/vocab.txt", "--learner=tokenizers"],
      capture_output=True, text=True, cwd=ROOT, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(tmp_path / "shadow")))
  assert result.returncode == 2
  assert _last_line(result) == (
      "create_vocab.py: error: --learner=tokenizers needs the Hugging Face tokenizers "
      "package, which is not installed here: pip install tokenizers (or the training "
      'install, which holds it: pip install "bert-tensorflow2[tensorflow]")')
  assert "Traceback" not in result.stderr and "counted" not in result.stderr
  assert sorted(os.listdir(tmp_path)) == ["ko.txt", "shadow"]
