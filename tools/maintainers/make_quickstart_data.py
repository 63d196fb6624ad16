"""Builds bert/cli/quickstart_data/{train,dev}.tsv: the small classification task quickstart.py fine-tunes on.

Real English text that ships with every Python: the docstrings of standard-library
modules, one sentence per row, labelled with the topic of the module it documents.
Run once; the output is committed so every user gets the same task:

  python tools/maintainers/make_quickstart_data.py bert/cli/quickstart_data
"""

import hashlib
import importlib
import inspect
import os
import re
import sys

TOPICS = {
    "files": ["os", "os.path", "shutil", "pathlib", "glob", "tempfile", "filecmp"],
    "time": ["datetime", "time", "calendar", "zoneinfo"],
    "text": ["re", "string", "textwrap", "difflib", "unicodedata"],
    "math": ["math", "cmath", "statistics", "random", "fractions", "decimal"],
    "network": ["socket", "http.client", "urllib.request", "urllib.parse", "smtplib",
                "ftplib", "ssl"],
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences_of(module_name):
  module = importlib.import_module(module_name)
  docs = [inspect.getdoc(module) or ""]
  for _, member in inspect.getmembers(module):
    if inspect.isroutine(member) or inspect.isclass(member):
      if getattr(member, "__module__", "") and not str(member.__module__).startswith(
          module_name.split(".")[0].lstrip("_")):
        continue
      docs.append(inspect.getdoc(member) or "")
  for doc in docs:
    for paragraph in re.split(r"\n\s*\n", doc):
      text = " ".join(paragraph.split())
      for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        if 6 <= len(words) <= 40 and sentence[-1:] in ".!?" and "\t" not in sentence \
            and ">>>" not in sentence:
          yield sentence


def main(out_dir):
  seen, rows = set(), []
  for label, modules in TOPICS.items():
    for name in modules:
      for sentence in sentences_of(name):
        if sentence not in seen:
          seen.add(sentence)
          rows.append((label, sentence))
  rows.sort(key=lambda r: hashlib.md5(r[1].encode()).hexdigest())
  dev = [r for r in rows if int(hashlib.md5(r[1].encode()).hexdigest(), 16) % 5 == 0]
  train = [r for r in rows if r not in dev]
  os.makedirs(out_dir, exist_ok=True)
  for name, part in (("train.tsv", train), ("dev.tsv", dev)):
    with open(os.path.join(out_dir, name), "w", encoding="utf-8", newline="\n") as f:
      f.write("label\tsentence\n")
      for label, sentence in part:
        f.write(f"{label}\t{sentence}\n")
  print(f"train {len(train)} dev {len(dev)} labels {sorted(TOPICS)}")


if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else "bert/cli/quickstart_data")
