"""Small synthetic task folders for tests/litert/test_predictor.py: a vocabulary of a few dozen
words, MRPC-format pairs, csv regression pairs (with a header and quoted fields) and
multi-label lines. The tests only predict, with random weights, so only the test files are
read; train and dev files are written too, as a task's folder has them."""
import random

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
POSITIVE = ["good", "great", "fine", "happy", "bright", "warm"]
NEGATIVE = ["bad", "awful", "sad", "dark", "cold", "poor"]
NEUTRAL = ["the", "a", "movie", "film", "plot", "actor", "day", "city", "river", "was",
           "is", "very", "not", "and", "with", "story", "music", "house"]
PUNCTUATION = [".", ",", "!"]
VOCAB = SPECIAL + POSITIVE + NEGATIVE + NEUTRAL + PUNCTUATION + ["##s", "##ly", "##er"]
ML_LABELS = ["POS", "NEG", "MUSIC"]


def write_vocab(path):
  path.write_text("".join(token + "\n" for token in VOCAB), encoding="utf-8")
  return path


def _sentence(rng, mood):
  words = [rng.choice(NEUTRAL) for _ in range(rng.randint(2, 9))]
  for _ in range(rng.randint(1, 2)):
    words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if mood else NEGATIVE))
  if rng.random() < 0.3:
    words[0] = words[0].capitalize() + "s"  # an unknown word and a ## piece
  return " ".join(words) + rng.choice(PUNCTUATION)


def mrpc_folder(root, rows=(48, 12, 13), seed=0):
  """MRPC's layout: train/dev `Quality #1 ID #2 ID #1 String #2 String`, test with an
  index first; label 1 when the first sentence is in a good mood."""
  rng = random.Random(seed)
  root.mkdir(parents=True, exist_ok=True)
  header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
  for name, count in zip(("train.tsv", "dev.tsv", "test.tsv"), rows):
    lines = [header if name != "test.tsv" else
             "Index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
    for i in range(count):
      one, two = rng.random() < 0.5, rng.random() < 0.5
      first = str(int(one)) if name != "test.tsv" else str(i)
      lines.append(f"{first}\t{100 + i}\t{200 + i}\t{_sentence(rng, one)}\t"
                   f"{_sentence(rng, two)}\n")
    (root / name).write_text("".join(lines), encoding="utf-8")
  return root


def regression_folder(root, rows=(48, 12, 11), seed=1):
  """csv with a header: id, s1, s2, score (test without a score); the score counts the
  positive sentences, 0 to 5."""
  rng = random.Random(seed)
  root.mkdir(parents=True, exist_ok=True)
  for name, count in zip(("train.csv", "dev.csv", "test.csv"), rows):
    lines = ["id,s1,s2" + (",score" if name != "test.csv" else "") + "\n"]
    for i in range(count):
      one, two = rng.random() < 0.5, rng.random() < 0.5
      row = f'{i},"{_sentence(rng, one)}","{_sentence(rng, two)}"'
      lines.append(row + (f",{2.5 * (one + two):.1f}" if name != "test.csv" else "") + "\n")
    (root / name).write_text("".join(lines), encoding="utf-8")
  return root


def multilabel_folder(root, rows=(48, 12, 10), seed=2):
  """labels.txt and text<TAB>labels lines (test.tsv: text alone)."""
  rng = random.Random(seed)
  root.mkdir(parents=True, exist_ok=True)
  (root / "labels.txt").write_text("\n".join(ML_LABELS) + "\n", encoding="utf-8")
  for name, count in zip(("train.tsv", "dev.tsv", "test.tsv"), rows):
    lines = []
    for _ in range(count):
      mood = rng.random() < 0.5
      text = _sentence(rng, mood)
      labels = ["POS" if mood else "NEG"] + (["MUSIC"] if "music" in text else [])
      lines.append(text + ("" if name == "test.tsv" else "\t" + ",".join(labels)) + "\n")
    (root / name).write_text("".join(lines), encoding="utf-8")
  return root
