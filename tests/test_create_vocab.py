"""create_vocab.py end to end on Korean text, the reserved-token layout, one-line errors."""
import json
import os
import random
import subprocess
import sys

import pytest

import tokenization
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
  return subprocess.run([sys.executable, os.path.join(ROOT, "create_vocab.py")] + args,
                        capture_output=True, text=True, cwd=ROOT,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)


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
  fast = tokenization.FastTokenizer(str(out), do_lower_case=False)
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
