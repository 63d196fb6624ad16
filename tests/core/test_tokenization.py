"""tokenization.py: exact token lists, error messages, slow == fast on real text, packing."""
import json
import os
import random
import subprocess
import sys
import unicodedata

import numpy as np
import pytest

from bert import fast_tokenization
from bert import tokenization
from conftest import CASED_VOCAB, UNCASED_VOCAB, shared_path

# A tiny vocabulary whose every expected split can be checked by hand.
TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "want", "##want", "##ed", "wa",
              "un", "runn", "##ing", ",", "low", "lowest", "a", "##a", "e", "##e", "[", "]",
              "mask", "MASK", "!", "?", "hello", "straße", "ﬁne", "istanbul", "안녕하세요",
              "##ᅡ", "ᄋ", "##ᆫ"]


@pytest.fixture(scope="module")
def tiny_vocab_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("".join(t + "\n" for t in TINY_VOCAB), encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def fast_tiny(tiny_vocab_file):
  return {lower: fast_tokenization.FastTokenizer(tiny_vocab_file, do_lower_case=lower)
          for lower in (True, False)}


def _tokenizer_pairs(configs):
  return [(tokenization.FullTokenizer(v, lower), fast_tokenization.FastTokenizer(v, lower))
          for v, lower in configs]


@pytest.fixture(scope="module")
def real_tokenizers():
  """(FullTokenizer, FastTokenizer): uncased vocab lower-cased, cased vocab cased."""
  return _tokenizer_pairs([(shared_path("vocab", "uncased_vocab.txt"), True),
                           (shared_path("vocab", "cased_vocab.txt"), False)])


# --------------------------------------------------------------------------- BasicTokenizer

BASIC_CASES = [
    # text, tokens with do_lower_case=True, tokens with do_lower_case=False
    (" \tHeLLo!how  \n Are yoU?  ", ["hello", "!", "how", "are", "you", "?"],
     ["HeLLo", "!", "how", "Are", "yoU", "?"]),
    ("H\u00e9llo", ["hello"], ["H\u00e9llo"]),
    ("Cr\u00e8me br\u00fbl\u00e9e", ["creme", "brulee"], ["Cr\u00e8me", "br\u00fbl\u00e9e"]),
    ("ah\u535a\u63a8zz", ["ah", "\u535a", "\u63a8", "zz"], ["ah", "\u535a", "\u63a8", "zz"]),
    # Hangul and kana are not spaced out like CJK ideographs: words stay whole. When
    # lower-casing, NFD splits Hangul syllables into conjoining jamo (Lo, not Mn: kept).
    ("안녕하세요, 세계!", [unicodedata.normalize("NFD", "안녕하세요"), ",",
                      unicodedata.normalize("NFD", "세계"), "!"],
     ["안녕하세요", ",", "세계", "!"]),
    ("東京タワーへ行く", ["東", "京", unicodedata.normalize("NFD", "タワーへ"), "行", "く"],
     ["東", "京", "タワーへ", "行", "く"]),
    # NUL, U+FFFD and format characters vanish (joining their neighbours); tab is a space.
    ("a\x00b\ufffdc\u200bd\te\u00adf", ["abcd", "ef"], ["abcd", "ef"]),
    ("x\x85y\u2028z", ["xy", "z"], ["xy", "z"]),
    ("I \u2764\ufe0f \U0001f917!", ["i", "\u2764", "\U0001f917", "!"],
     ["I", "\u2764\ufe0f", "\U0001f917", "!"]),
    ("the [MASK] dog", ["the", "[", "mask", "]", "dog"], ["the", "[", "MASK", "]", "dog"]),
    ("$5^`~|", ["$", "5", "^", "`", "~", "|"], ["$", "5", "^", "`", "~", "|"]),
    ("\u00abhi\u00bb\u2014ok \u00bfqu\u00e9?", ["\u00ab", "hi", "\u00bb", "\u2014", "ok", "\u00bf",
                                               "que", "?"],
     ["\u00ab", "hi", "\u00bb", "\u2014", "ok", "\u00bf", "qu\u00e9", "?"]),
    # Not NFKC: ligatures, full-width letters and sharp s survive lower-casing.
    ("\ufb01ne \uff21\uff22 Stra\u00dfe", ["\ufb01ne", "\uff41\uff42", "stra\u00dfe"],
     ["\ufb01ne", "\uff21\uff22", "Stra\u00dfe"]),
    ("\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3",
     ["\u03bf\u03b4\u03c5\u03c3\u03c3\u03b5\u03c5\u03c2"],
     ["\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3"]),
    ("\u0130stanbul", ["istanbul"], ["\u0130stanbul"]),
    ("\u0645\u0631\u062d\u0628\u0627\u064b \u061f", ["\u0645\u0631\u062d\u0628\u0627", "\u061f"],
     ["\u0645\u0631\u062d\u0628\u0627\u064b", "\u061f"]),
    ("\u3000full\u00a0width\u2009", ["full", "width"], ["full", "width"]),
    ("", [], []),
    (" \x00\u200b ", [], []),
]


@pytest.mark.parametrize("text,lower,cased", BASIC_CASES)
def test_basic_tokenizer_exact(text, lower, cased):
  assert tokenization.BasicTokenizer(do_lower_case=True).tokenize(text) == lower
  assert tokenization.BasicTokenizer(do_lower_case=False).tokenize(text) == cased


def test_basic_tokenizer_accepts_utf8_bytes():
  assert tokenization.BasicTokenizer().tokenize("Caf\u00e9 ok".encode("utf-8")) == ["cafe", "ok"]


# --------------------------------------------------------------------------- WordPiece


def test_wordpiece_greedy_longest_match():
  vocab = {t: i for i, t in enumerate(TINY_VOCAB)}
  wordpiece = tokenization.WordpieceTokenizer(vocab=vocab)
  assert wordpiece.tokenize("") == []
  assert wordpiece.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
  assert wordpiece.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
  # "lowest" is one piece although "low" matches first: longest match wins.
  assert wordpiece.tokenize("lowest") == ["lowest"]


def test_full_tokenizer_and_ids(tiny_vocab_file):
  tokenizer = tokenization.FullTokenizer(tiny_vocab_file)
  tokens = tokenizer.tokenize("UNwant\u00e9d,running")
  assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
  assert tokenizer.convert_tokens_to_ids(tokens) == [9, 6, 7, 12, 10, 11]
  assert tokenizer.convert_ids_to_tokens([9, 6, 7, 12, 10, 11]) == tokens
  assert list(tokenizer.vocab) == TINY_VOCAB and tokenizer.inv_vocab[5] == "want"


def test_words_longer_than_200_characters_are_unk(tiny_vocab_file):
  tokenizer = tokenization.FullTokenizer(tiny_vocab_file, do_lower_case=True)
  assert tokenizer.tokenize("a" * 200) == ["a"] + ["##a"] * 199
  assert tokenizer.tokenize("a" * 201 + " a") == ["[UNK]", "a"]
  # The limit counts characters after lower-casing and accent stripping.
  accented = "a" * 200 + "\u0301"
  assert tokenizer.tokenize(accented) == ["a"] + ["##a"] * 199
  assert tokenization.FullTokenizer(tiny_vocab_file, False).tokenize(accented) == ["[UNK]"]


def test_module_functions():
  assert tokenization.convert_to_unicode(b"caf\xc3\xa9") == "caf\u00e9"
  assert tokenization.convert_to_unicode(b"a\xffb") == "ab"
  assert tokenization.printable_text(b"x") == "x"
  with pytest.raises(ValueError, match="Unsupported string type"):
    tokenization.convert_to_unicode(3)
  assert tokenization.whitespace_tokenize("  a b\tc \n") == ["a", "b", "c"]
  assert tokenization.whitespace_tokenize(" \n ") == []
  assert tokenization.convert_by_vocab({"a": 1, "b": 2}, ["b", "a"]) == [2, 1]


# --------------------------------------------------------------------------- load_vocab


def test_load_vocab_ids_are_line_numbers(tmp_path):
  path = tmp_path / "v.txt"
  path.write_bytes(b"[PAD]\r\n  hello \nworld")
  assert list(tokenization.load_vocab(str(path)).items()) == [
      ("[PAD]", 0), ("hello", 1), ("world", 2)]


def test_load_vocab_real_special_ids():
  vocab = tokenization.load_vocab(shared_path("vocab", "uncased_vocab.txt"))
  assert len(vocab) == 30522
  assert [vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
      0, 100, 101, 102, 103]
  assert len(tokenization.load_vocab(shared_path("vocab", "cased_vocab.txt"))) == 28996


def test_load_vocab_errors_name_file_and_line(tmp_path):
  missing = tmp_path / "nope.txt"
  with pytest.raises(ValueError, match=r"nope\.txt: no such file"):
    tokenization.load_vocab(str(missing))
  bad = tmp_path / "bad.txt"
  bad.write_bytes(b"[PAD]\nok\nbad\xff\n")
  with pytest.raises(ValueError, match=r"bad\.txt:3: not valid UTF-8"):
    tokenization.load_vocab(str(bad))
  dup = tmp_path / "dup.txt"
  dup.write_text("[PAD]\nfoo\nbar\nfoo\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"dup\.txt:4: token 'foo' duplicates line 2"):
    tokenization.load_vocab(str(dup))
  with pytest.raises(ValueError, match="is a directory"):
    tokenization.load_vocab(str(tmp_path))


def test_validate_case_matches_checkpoint():
  check = tokenization.validate_case_matches_checkpoint
  check(True, "/m/uncased_L-12_H-768_A-12/bert_model.ckpt")
  check(False, "/m/cased_L-12_H-768_A-12/bert_model.ckpt")
  check(False, "/m/my_korean_bert/bert_model.ckpt")
  check(False, None)
  check(True, "no_slash_bert_model.ckpt")
  with pytest.raises(ValueError, match=r"`--do_lower_case=False`.*uncased_L-12_H-768_A-12"
                                       r".*lowercased.*`--do_lower_case=True`"):
    check(False, "gs://b/uncased_L-12_H-768_A-12/bert_model.ckpt")
  with pytest.raises(ValueError, match=r"multi_cased_L-12_H-768_A-12` seems to be a cased"):
    check(True, "multi_cased_L-12_H-768_A-12/bert_model.ckpt-1000")
  with pytest.raises(ValueError, match="chinese_L-12_H-768_A-12"):
    check(False, "chinese_L-12_H-768_A-12/bert_model.ckpt")


GOOGLE_NAMES = [  # (directory name, lower-cased when pretrained)
    ("uncased_L-6_H-384_A-12", True), ("uncased_L-4_H-256_A-4", True),
    ("wwm_uncased_L-24_H-1024_A-16", True), ("multilingual_L-12_H-768_A-12", True),
    ("chinese_L-12_H-768_A-12", True), ("uncased_L-2_H-128_A-2", True),
    ("cased_L-4_H-256_A-4", False), ("wwm_cased_L-24_H-1024_A-16", False),
    ("multi_cased_L-12_H-768_A-12", False), ("cased_L-24_H-1024_A-16", False),
]


@pytest.mark.parametrize("name,lower", GOOGLE_NAMES)
def test_validate_case_any_google_style_name(name, lower):
  check = tokenization.validate_case_matches_checkpoint
  paths = [f"/m/{name}/bert_model.ckpt", f"gs://b/{name}/model.ckpt-1000",
           f"{name}/bert_model.ckpt.index", f"C:\\m\\{name}\\bert_model.ckpt",
           f"/m/{name}/finetuned/ckpt-3"]
  for path in paths:
    check(lower, path)
    wanted, kind = ("True", "lowercased") if lower else ("False", "cased")
    with pytest.raises(ValueError) as error:
      check(not lower, path)
    assert str(error.value) == (
        f"You passed in `--do_lower_case={not lower}` with `--init_checkpoint={path}`. "
        f"However, `{name}` seems to be a {kind} model, so you should pass in "
        f"`--do_lower_case={wanted}` so that the fine-tuning matches how the model was "
        "pre-training. If this error is wrong, please just comment out this check.")


def test_validate_case_ignores_other_names():
  check = tokenization.validate_case_matches_checkpoint
  for path in ("/m/cased_experiments/bert_model.ckpt", "/m/uncased/bert_model.ckpt",
               "/m/bert-base-uncased/model.ckpt", "/m/my_uncased_L-12_H-768_A-12/x.ckpt",
               "/m/Uncased_L-12_H-768_A-12/bert_model.ckpt", "", None):
    check(True, path)
    check(False, path)
  # The innermost Google-style directory decides: a cased model fine-tuned from files
  # kept under an uncased model's directory.
  check(False, "/m/uncased_L-12_H-768_A-12/cased_L-12_H-768_A-12/bert_model.ckpt")
  with pytest.raises(ValueError, match="`cased_L-12_H-768_A-12` seems to be a cased"):
    check(True, "/m/uncased_L-12_H-768_A-12/cased_L-12_H-768_A-12/bert_model.ckpt")


def _cased_share(vocab_file):
  tokens = tokenization.load_vocab(vocab_file)
  words = [t for t in tokens if t.isalpha() and t[0].lower() != t[0].upper()]
  return sum(t[0].isupper() for t in words) / len(words), len(words)


def test_vocab_case_warning_on_real_vocabularies():
  uncased = shared_path("vocab", "uncased_vocab.txt")
  cased = shared_path("vocab", "cased_vocab.txt")
  # The measured shares the thresholds (5% and 1%) sit between, with wide margins.
  assert _cased_share(uncased) == (0.0, 21887)
  assert _cased_share(cased) == (pytest.approx(0.3778, abs=1e-4), 21054)
  warn = tokenization.vocab_case_warning
  assert warn(uncased, True) is None and warn(cased, False) is None
  assert warn(cased, True) == (
      "the vocabulary looks cased: 7,954 of its 21,054 whole-word entries that begin "
      "with a cased letter (37.8%) are capitalised, which text lower-cased by "
      "do_lower_case=True never matches; use do_lower_case=False with this vocabulary, "
      "or an uncased vocabulary")
  assert warn(uncased, False) == (
      "the vocabulary looks uncased: only 0 of its 21,887 whole-word entries that begin "
      "with a cased letter (0.0%) are capitalised, so with do_lower_case=False "
      "capitalised words become other pieces or [UNK]; use do_lower_case=True with this "
      "vocabulary, or a cased one")
  assert warn(tokenization.load_vocab(cased), True) == warn(cased, True)


def test_vocab_case_warning_on_made_up_vocabularies(tmp_path):
  warn = tokenization.vocab_case_warning
  lower_words = ["w" + "abcdefghij"[i % 10] * (1 + i // 10) for i in range(40)]
  specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##ing", "##s", ",", "1990"]
  uncased = specials + lower_words
  assert warn(uncased, True) is None
  assert warn(uncased, False).startswith("the vocabulary looks uncased: only 0 of its 40 ")
  # 3 of 43 capitalised (7.0%): cased; 1 of 100 (1.0%): neither warning fires.
  three = uncased + ["Paris", "London", "Seoul"]
  assert warn(three, True).startswith("the vocabulary looks cased: 3 of its 43 ")
  assert warn(three, False) is None
  one_in_100 = specials + ["x" * (i + 1) for i in range(99)] + ["Paris"]
  assert warn(one_in_100, True) is None and warn(one_in_100, False) is None
  assert warn(one_in_100[:-2] + ["Paris"], False) is None
  assert warn(one_in_100 + ["xyz"], False).startswith("the vocabulary looks uncased: only 1 "
                                                       "of its 101 ")
  # Fewer than 20 entries that begin with a cased letter: not judged.
  assert warn(specials + lower_words[:19], False) is None
  assert warn(specials + ["Paris"] * 1 + lower_words[:18], True) is None
  # A Korean vocabulary with a few lower-case Latin words: not a Latin-script one.
  korean = specials + [chr(0xAC00 + i) for i in range(200)] + lower_words
  assert warn(korean, False) is None and warn(korean, True) is None
  # Pieces, specials and non-letters do not count; a file path works like a list.
  pieces_only = specials + ["##" + w for w in lower_words] + ["Über-", "A1"]
  assert warn(pieces_only, False) is None
  path = tmp_path / "vocab.txt"
  path.write_text("".join(t + "\n" for t in three), encoding="utf-8")
  assert warn(str(path), True) == warn(three, True)


def test_import_does_not_load_tensorflow():
  code = ("import sys; from bert import tokenization; "
          "tokenization.BasicTokenizer().tokenize('x'); "
          "print('tensorflow' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(tokenization.__file__))),
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), check=True)
  assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- FastTokenizer


@pytest.mark.parametrize("text,lower,cased", BASIC_CASES)
def test_fast_equals_full_on_hand_cases(text, lower, cased, tiny_vocab_file, fast_tiny,
                                        real_tokenizers):
  for do_lower in (True, False):
    full = tokenization.FullTokenizer(tiny_vocab_file, do_lower)
    assert fast_tiny[do_lower].tokenize_to_pieces([text]).to_list() == [
        [t.encode("utf-8") for t in full.tokenize(text)]]
  for full, fast in real_tokenizers:
    assert fast.tokenize_batch([text]) == [full.convert_tokens_to_ids(full.tokenize(text))]


def test_fast_tokenizer_exact_ids_on_real_vocab(real_tokenizers):
  _, fast = real_tokenizers[0]  # uncased vocabulary, lower-cased
  ids = fast.tokenize_batch(["Hello, World!", "the [MASK] dog", "unaffable", "", "a" * 201])
  # Ids read off the uncased vocab.txt (line numbers).
  assert ids == [[7592, 1010, 2088, 999], [1996, 1031, 7308, 1033, 3899],
                 [14477, 20961, 3468], [], [100]]
  assert (fast.vocab_size, fast.pad_id, fast.unk_id, fast.cls_id, fast.sep_id,
          fast.mask_id) == (30522, 0, 100, 101, 102, 103)
  assert fast.do_lower_case and fast.vocab_file.endswith("uncased_vocab.txt")


def test_fast_tokenizer_long_words_count_characters(tiny_vocab_file, fast_tiny):
  # 200 four-byte characters are within the limit (tensorflow-text counts bytes).
  texts = ["a" * 200, "a" * 201 + "!a", "\U0001f917" * 200, "a" * 200 + "\u0301",
           "x " * 150 + "a" * 300 + " " + "a" * 5]
  for lower in (True, False):
    full = tokenization.FullTokenizer(tiny_vocab_file, lower)
    expected = [full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]
    assert fast_tiny[lower].tokenize_batch(texts) == expected
  assert fast_tiny[True].tokenize_batch(["a" * 201 + "!a"]) == [[1, 23, 15]]


def test_fast_tokenizer_in_tf_data_and_saved_model(tmp_path, fast_tiny):
  import tensorflow as tf
  fast = fast_tiny[True]
  ds = tf.data.Dataset.from_tensor_slices(["unwanted running", "Lowest!", "x"]).batch(2)
  ds = ds.map(lambda s: fast.tokenize(s).to_tensor(-1))
  batches = [b.numpy().tolist() for b in ds]
  assert batches == [[[9, 6, 7, 10, 11], [14, 23, -1, -1, -1]], [[1]]]
  path = str(tmp_path / "tok")
  tf.saved_model.save(fast, path)
  loaded = tf.saved_model.load(path)
  out = loaded.tokenize(tf.constant(["UNwant\u00e9d,running", "\u0130stanbul"]))
  assert out.to_list() == [[9, 6, 7, 12, 10, 11], [28]]


def test_fast_tokenizer_rejects_vocab_without_specials(tmp_path):
  path = tmp_path / "v.txt"
  path.write_text("[PAD]\n[UNK]\nhello\n", encoding="utf-8")
  with pytest.raises(ValueError, match=r"lacks \[CLS\], \[SEP\]"):
    fast_tokenization.FastTokenizer(str(path))


# --------------------------------------------------------------------------- real text

# Hand-written lines in many scripts, with the traps the normalisation must get right.
MULTILINGUAL_LINES = [
    "서울은 대한민국의 수도이며, 인구는 약 천만 명이다.",
    "한국어 형태소 분석기는 '은/는/이/가' 같은 조사를 분리합니다!",
    "北京是中华人民共和国的首都，也是全国的政治、文化中心。",
    "東京は日本の首都です。ラーメンを食べに行きましょう！",
    "カタカナとひらがな、そして漢字が混ざった文章。",
    "العربية لغة سامية، يتحدث بها أكثر من ٤٠٠ مليون شخص.",
    "Здравствуйте! Как дела? Ёлка и ёжик.",
    "Ελληνικά: ΟΔΥΣΣΕΥΣ, Σίσυφος, ἀρχή.",
    "Crème brûlée, naïve café, façade, Ångström, Øresund, Łódź, Dvořák.",
    "Straße, ﬁnancial ﬂow, ＦＵＬＬ－ＷＩＤＴＨ ｔｅｘｔ １２３, ½ ² ℌ ℡ ㎏.",
    "İstanbul'da IŞIK ılık; DŽ ǅ ǆ.",
    "emoji 😀👍🏽 👨‍👩‍👧‍👦 🇰🇷 ❤️ #hashtag @user",
    "zero\u200bwidth\u200c\u200djoiner\u2060word\ufeffbom and soft\u00adhyphen",
    "control\x01chars\x07and\x1bescape\x7fdel\x85nel\x0bvt\x0cff",
    "tab\tnew\nline\r\ncarriage\u2028sep\u2029para\u00a0nbsp\u3000ideo",
    "replacement \ufffd char and nul \x00 char",
    "private \ue000 use \U000f0000 and unassigned \u0378 \U000e0001 tags",
    "combining e\u0301 a\u0308 n\u0303 \u0915\u093f \u0e01\u0e34 hangul jamo \u1100\u1161\u11a8",
    "देवनागरी लिपि में हिंदी। ภาษาไทยไม่มีช่องว่าง עברית",
    "mathematical \U0001d400\U0001d401 ∑∫√∞ ≠ ≤ → ⇒ ° € £ ¥ ₩ © ® ™",
    "long " + "pneumonoultramicroscopicsilicovolcanoconiosis" * 5 + " word",
    "[CLS] [SEP] [MASK] [UNK] [PAD] <s> </s> ##ing",
]


def _real_lines(limit_per_source=400):
  """A few thousand real lines from every corpus in ../shared/data."""
  lines = []
  with open(shared_path("corpora", "reuters_docs.txt"), encoding="utf-8") as handle:
    lines += [l for l in handle if l.strip()][:1000]
  with open(shared_path("corpora", "sample_text.txt"), encoding="utf-8") as handle:
    lines += [l for l in handle if l.strip()]
  for task, columns in (("MRPC", (3, 4)), ("CoLA", (3,)), ("SST-2", (0,)),
                        ("STS-B", (7, 8)), ("RTE", (1, 2))):
    with open(shared_path("glue", task, "train.tsv"), encoding="utf-8-sig") as handle:
      rows = [l.rstrip("\n").split("\t") for l in handle][1:limit_per_source + 1]
    lines += [row[c] for row in rows for c in columns if c < len(row)]
  sentence, count = [], 0
  with open(shared_path("conll2003", "train.txt"), encoding="utf-8") as handle:
    for line in handle:
      if line.strip() and not line.startswith("-DOCSTART-"):
        sentence.append(line.split(" ")[0])
      elif sentence and count < limit_per_source:
        lines.append(" ".join(sentence))
        sentence, count = [], count + 1
  with open(shared_path("squad", "dev-v1.1.json"), encoding="utf-8") as handle:
    squad = json.load(handle)["data"]
  paragraphs = [p for article in squad for p in article["paragraphs"]]
  lines += [p["context"] for p in paragraphs[:150]]
  lines += [q["question"] for p in paragraphs[:60] for q in p["qas"]]
  return lines + MULTILINGUAL_LINES


def test_fast_equals_full_on_real_text(real_tokenizers):
  lines = _real_lines()
  assert len(lines) > 3000
  for full, fast in real_tokenizers:
    fast_ids = fast.tokenize_batch(lines)
    mismatches = [line for line, ids in zip(lines, fast_ids)
                  if full.convert_tokens_to_ids(full.tokenize(line)) != ids]
    assert mismatches == []


@pytest.mark.slow
def test_fast_equals_full_on_all_real_text(real_tokenizers):
  # The whole corpora, and the cased vocabulary with lower-casing as a third setting.
  real_tokenizers = real_tokenizers + _tokenizer_pairs(
      [(shared_path("vocab", "cased_vocab.txt"), True)])
  with open(shared_path("corpora", "reuters_docs.txt"), encoding="utf-8") as handle:
    lines = [l for l in handle if l.strip()]
  with open(shared_path("squad", "dev-v1.1.json"), encoding="utf-8") as handle:
    lines += [p["context"] for a in json.load(handle)["data"] for p in a["paragraphs"]]
  for full, fast in real_tokenizers:
    fast_ids = fast.tokenize_batch(lines)
    assert all(full.convert_tokens_to_ids(full.tokenize(line)) == ids
               for line, ids in zip(lines, fast_ids))


# --------------------------------------------------------------------------- packing


def _reference_pack(a, b, seq_length, cls_id=101, sep_id=102):
  """The original's convert_single_example layout, written out in Python.

  As the original's `if tokens_b:`, an empty b (like None) makes a single segment.
  """
  a = list(a)
  if not b:
    a = a[:seq_length - 2]
    ids, types = [cls_id] + a + [sep_id], [0] * (len(a) + 2)
  else:
    b = list(b)
    tokenization.truncate_seq_pair(a, b, seq_length - 3)
    ids = [cls_id] + a + [sep_id] + b + [sep_id]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
  pad = seq_length - len(ids)
  return ids + [0] * pad, [1] * len(ids) + [0] * pad, types + [0] * pad


def test_truncate_seq_pair_pops_from_the_longer():
  a, b = list("abcdefg"), list("xyz")
  tokenization.truncate_seq_pair(a, b, 6)
  assert (a, b) == (list("abc"), list("xyz"))
  a, b = list("abcde"), list("vwxyz")
  tokenization.truncate_seq_pair(a, b, 7)  # tie -> B pops first, A keeps the odd one
  assert (a, b) == (list("abcd"), list("vwx"))
  a, b = list("ab"), list("c")
  tokenization.truncate_seq_pair(a, b, 5)
  assert (a, b) == (list("ab"), list("c"))


def test_pack_inputs_matches_python_reference():
  import tensorflow as tf
  rng = random.Random(7)
  seq_length = 11
  for pair in (False, True):
    rows_a = [[rng.randrange(1000, 2000) for _ in range(rng.randrange(0, 16))]
              for _ in range(60)]
    rows_b = [[rng.randrange(2000, 3000) for _ in range(rng.randrange(0, 16))]
              for _ in range(60)]
    segments = [tf.ragged.constant(rows_a, dtype=tf.int32, ragged_rank=1,
                                   row_splits_dtype=tf.int64)]
    if pair:
      segments.append(tf.ragged.constant(rows_b, dtype=tf.int64, ragged_rank=1))
    packed = fast_tokenization.pack_inputs(segments, seq_length, 101, 102)
    for key in packed:
      assert packed[key].dtype == tf.int32 and packed[key].shape == (60, seq_length)
    for i in range(60):
      ids, mask, types = _reference_pack(rows_a[i], rows_b[i] if pair else None, seq_length)
      assert packed["input_ids"][i].numpy().tolist() == ids
      assert packed["input_mask"][i].numpy().tolist() == mask
      assert packed["segment_ids"][i].numpy().tolist() == types


def test_pack_inputs_hand_example():
  import tensorflow as tf
  a = tf.ragged.constant([[5, 6, 7, 8, 9]])
  b = tf.ragged.constant([[20, 21]])
  packed = fast_tokenization.pack_inputs([a, b], 8, cls_id=2, sep_id=3)
  np.testing.assert_array_equal(packed["input_ids"], [[2, 5, 6, 7, 3, 20, 21, 3]])
  np.testing.assert_array_equal(packed["segment_ids"], [[0, 0, 0, 0, 0, 1, 1, 1]])
  np.testing.assert_array_equal(packed["input_mask"], [[1] * 8])
  with pytest.raises(ValueError, match="one or two segments"):
    fast_tokenization.pack_inputs([a, b, a], 8, 2, 3)


def test_pack_inputs_empty_second_segment_is_single_per_row():
  import tensorflow as tf
  # Ragged batch: rows with and without a second segment, short and long.
  rows = [([5, 6, 7, 8, 9, 10, 11, 12], []), ([5, 6, 7, 8, 9, 10, 11, 12], [20]),
          ([], []), ([5], []), ([], [20, 21]), ([5, 6], [20, 21, 22, 23, 24, 25, 26])]
  a = tf.ragged.constant([r[0] for r in rows], dtype=tf.int32, ragged_rank=1)
  b = tf.ragged.constant([r[1] for r in rows], dtype=tf.int64, ragged_rank=1)
  packed = fast_tokenization.pack_inputs([a, b], 8, cls_id=2, sep_id=3)
  assert packed["input_ids"].numpy().tolist() == [
      [2, 5, 6, 7, 8, 9, 10, 3],  # single: seq_length - 2 tokens of A
      [2, 5, 6, 7, 8, 3, 20, 3],  # pair: seq_length - 3 tokens in all
      [2, 3, 0, 0, 0, 0, 0, 0],
      [2, 5, 3, 0, 0, 0, 0, 0],
      [2, 3, 20, 21, 3, 0, 0, 0],
      [2, 5, 6, 3, 20, 21, 22, 3]]
  assert packed["segment_ids"].numpy().tolist() == [
      [0] * 8, [0] * 6 + [1] * 2, [0] * 8, [0] * 8, [0, 0, 1, 1, 1, 0, 0, 0],
      [0] * 4 + [1] * 4]
  assert packed["input_mask"].numpy().tolist() == [
      [1] * 8, [1] * 8, [1, 1] + [0] * 6, [1] * 3 + [0] * 5, [1] * 5 + [0] * 3, [1] * 8]
  for i, (row_a, row_b) in enumerate(rows):
    ids, mask, types = _reference_pack(row_a, row_b, 8, cls_id=2, sep_id=3)
    assert packed["input_ids"][i].numpy().tolist() == ids
    assert packed["input_mask"][i].numpy().tolist() == mask
    assert packed["segment_ids"][i].numpy().tolist() == types


def test_pack_inputs_text_b_without_tokens_as_the_original(tiny_vocab_file, fast_tiny):
  # A text_b of spaces, zero-width or control characters yields no tokens: the original
  # (`if tokens_b:`) makes the example single-segment.
  full = tokenization.FullTokenizer(tiny_vocab_file, do_lower_case=True)
  fast = fast_tiny[True]
  texts_a = ["unwanted running " * 3, "hello", "want want"]
  texts_b = [" \u200b\x07 ", "", "lowest"]
  packed = fast_tokenization.pack_inputs([fast.tokenize(texts_a), fast.tokenize(texts_b)],
                                         9, fast.cls_id, fast.sep_id)
  for i, (text_a, text_b) in enumerate(zip(texts_a, texts_b)):
    ids_a = full.convert_tokens_to_ids(full.tokenize(text_a))
    ids_b = full.convert_tokens_to_ids(full.tokenize(text_b))
    expected = _reference_pack(ids_a, ids_b, 9, fast.cls_id, fast.sep_id)
    assert [packed[k][i].numpy().tolist() for k in ("input_ids", "input_mask",
                                                    "segment_ids")] == list(expected)
  assert packed["input_ids"][0].numpy().tolist() == [2, 9, 6, 7, 10, 11, 9, 6, 3]


def test_pack_inputs_seq_length_as_a_tensor():
  import tensorflow as tf
  rng = random.Random(3)
  rows_a = [[rng.randrange(1000, 2000) for _ in range(rng.randrange(0, 14))]
            for _ in range(40)]
  rows_b = [[rng.randrange(2000, 3000) for _ in range(rng.randrange(0, 14))]
            for _ in range(40)]
  seg_a = tf.ragged.constant(rows_a, dtype=tf.int32, ragged_rank=1)
  seg_b = tf.ragged.constant(rows_b, dtype=tf.int32, ragged_rank=1)

  @tf.function(input_signature=[tf.TensorSpec([], tf.int32)], autograph=False)
  def packed_with(seq_length):
    return fast_tokenization.pack_inputs([seg_a, seg_b], seq_length, 101, 102)

  for seq_length in (5, 9, 30):
    by_int = fast_tokenization.pack_inputs([seg_a, seg_b], seq_length, 101, 102)
    for packed in (fast_tokenization.pack_inputs([seg_a, seg_b], tf.constant(seq_length),
                                                 101, 102),
                   fast_tokenization.pack_inputs([seg_a, seg_b], np.int64(seq_length), 101, 102),
                   packed_with(tf.constant(seq_length))):
      assert sorted(packed) == ["input_ids", "input_mask", "segment_ids"]
      for key in packed:
        assert packed[key].dtype == tf.int32 and packed[key].shape == (40, seq_length)
        assert packed[key].numpy().tolist() == by_int[key].numpy().tolist()
    for i in range(40):
      expected = _reference_pack(rows_a[i], rows_b[i], seq_length)
      assert [by_int[k][i].numpy().tolist() for k in ("input_ids", "input_mask",
                                                       "segment_ids")] == list(expected)
  # Static shapes: the length is static when known, unknown when traced.
  assert by_int["input_ids"].shape.as_list() == [40, 30]
  spec = packed_with.get_concrete_function().structured_outputs["input_ids"]
  assert spec.shape.as_list() == [40, None]
  # [batch, (words), (pieces)] segments are merged.
  words = tf.RaggedTensor.from_row_lengths(seg_a, [1] * 40)
  merged = fast_tokenization.pack_inputs([words], tf.constant(7), 101, 102)
  assert merged["input_ids"].numpy().tolist() == [
      _reference_pack(row, None, 7)[0] for row in rows_a]
  with pytest.raises(ValueError, match=r"seq_length=4 leaves no room for the tokens"):
    fast_tokenization.pack_inputs([seg_a, seg_b], tf.constant(4), 101, 102)
  with pytest.raises(tf.errors.InvalidArgumentError, match="leaves no room"):
    packed_with(tf.constant(4))
  assert packed_with(tf.constant(5))["input_ids"].shape == (40, 5)


# --------------------------------------------------------------------------- normalize="nfc"

HANGUL = "\uc2a4\ud06c\ub9b0\uc0f7"  # 스크린샷, composed (NFC)


@pytest.fixture(scope="module")
def hangul_vocab_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "ko_vocab.txt"
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\uc2a4\ud06c\ub9b0", "##\uc0f7",
            "\uc0f7", "a"]
  path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
  return str(path)


def test_nfc_normalisation_of_decomposed_hangul(hangul_vocab_file):
  decomposed = unicodedata.normalize("NFD", HANGUL)
  assert len(decomposed) == 10 and decomposed != HANGUL
  texts = [decomposed, HANGUL, f"a {decomposed}, {HANGUL}\u200b!", ""]
  expected = {  # (do_lower_case, normalize) -> tokens of each text
      (False, None): [["[UNK]"], ["\uc2a4\ud06c\ub9b0", "##\uc0f7"],
                      ["a", "[UNK]", "[UNK]", "\uc2a4\ud06c\ub9b0", "##\uc0f7", "[UNK]"],
                      []],
      (False, "nfc"): [["\uc2a4\ud06c\ub9b0", "##\uc0f7"]] * 2 + [
          ["a", "\uc2a4\ud06c\ub9b0", "##\uc0f7", "[UNK]", "\uc2a4\ud06c\ub9b0", "##\uc0f7",
           "[UNK]"], []],
      # Lower-casing decomposes Hangul again (NFD) after NFC: both forms are [UNK].
      (True, "nfc"): [["[UNK]"], ["[UNK]"], ["a", "[UNK]", "[UNK]", "[UNK]", "[UNK]"], []],
      (True, None): [["[UNK]"], ["[UNK]"], ["a", "[UNK]", "[UNK]", "[UNK]", "[UNK]"], []],
  }
  for (lower, normalize), tokens in expected.items():
    full = tokenization.FullTokenizer(hangul_vocab_file, lower, normalize=normalize)
    fast = fast_tokenization.FastTokenizer(hangul_vocab_file, lower, normalize=normalize)
    assert [full.tokenize(t) for t in texts] == tokens, (lower, normalize)
    assert fast.tokenize_to_pieces(texts).to_list() == [
        [p.encode("utf-8") for p in row] for row in tokens], (lower, normalize)
    assert fast.normalize == normalize
  assert tokenization.BasicTokenizer(False, normalize="NFC").tokenize(decomposed) == [HANGUL]
  assert tokenization.BasicTokenizer(False).tokenize(decomposed) == [decomposed]


def test_normalize_rejects_unknown_forms(hangul_vocab_file):
  for bad in ("nfd", "NFKC", "yes", True):
    with pytest.raises(ValueError, match=r"normalize=.*expected None .* or one of nfc"):
      tokenization.FullTokenizer(hangul_vocab_file, normalize=bad)
    with pytest.raises(ValueError, match=r"normalize=.*expected None"):
      fast_tokenization.FastTokenizer(hangul_vocab_file, normalize=bad)


def test_nfc_fast_equals_full_on_real_text(real_tokenizers):
  lines = MULTILINGUAL_LINES + [unicodedata.normalize("NFD", l) for l in MULTILINGUAL_LINES]
  for full, _ in real_tokenizers:
    lower = full.basic_tokenizer.do_lower_case
    vocab_file = (shared_path("vocab", "uncased_vocab.txt") if lower
                  else shared_path("vocab", "cased_vocab.txt"))
    full_nfc = tokenization.FullTokenizer(vocab_file, lower, normalize="nfc")
    fast_nfc = fast_tokenization.FastTokenizer(vocab_file, lower, normalize="nfc")
    assert fast_nfc.tokenize_batch(lines) == [
        full_nfc.convert_tokens_to_ids(full_nfc.tokenize(l)) for l in lines]
    if not lower:  # the cased vocabulary sees composed text only with "nfc"
      nfd = [unicodedata.normalize("NFD", l) for l in MULTILINGUAL_LINES]
      assert [full_nfc.tokenize(l) for l in nfd] == [full_nfc.tokenize(l)
                                                      for l in MULTILINGUAL_LINES]


def test_pack_tokens_is_the_originals_layout_and_truncation():
  a, b = ["a1", "a2", "a3", "a4", "a5"], ["b1", "b2"]
  tokens, segments = tokenization.pack_tokens(a, b, 8)
  # 5 tokens for the pair: the longer text loses its tail first.
  assert tokens == ["[CLS]", "a1", "a2", "a3", "[SEP]", "b1", "b2", "[SEP]"]
  assert segments == [0, 0, 0, 0, 0, 1, 1, 1]
  assert a == ["a1", "a2", "a3", "a4", "a5"] and b == ["b1", "b2"]  # inputs untouched
  # No second text, or one without tokens: a single segment of max_seq_length - 2.
  for empty in (None, []):
    tokens, segments = tokenization.pack_tokens(a, empty, 5)
    assert tokens == ["[CLS]", "a1", "a2", "a3", "[SEP]"] and segments == [0] * 5
