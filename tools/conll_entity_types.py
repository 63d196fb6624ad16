"""CoNLL-2003 -> a multi-label set: which entity types (LOC, MISC, ORG, PER) a sentence has.

  python tools/conll_entity_types.py ../shared/data/conll2003 /tmp/conll_types

Reads train.txt, valid.txt and test.txt (tagging_data.read_conll: -DOCSTART- lines are not
sentences; IOB1 or IOB2 tags) and writes run_multilabel.py's layout: labels.txt (the
entity types found in train.txt, sorted) and train.tsv, dev.tsv, test.tsv, one sentence
a line: its words joined by spaces, a tab, its entity types comma-separated in
labels.txt's order (empty when it has none). Prints each split's label counts.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert.cli import flags_common  # noqa: E402
from bert.tagging import tagging_data  # noqa: E402
from bert.utils import paths  # noqa: E402
from bert.utils import atomic_output  # noqa: E402
from bert.utils import errors  # noqa: E402
from bert.utils import input_checks  # noqa: E402

SPLITS = (("train.txt", "train.tsv"), ("valid.txt", "dev.tsv"), ("test.txt", "test.tsv"))


def entity_types(example):
  """The sorted set of types in a sentence's tags (B-PER, I-PER -> PER; O -> none)."""
  types = set()
  for number, tag in enumerate(example.labels):
    if tag != "O":
      if not tagging_data.is_chunk_tag(tag):
        raise errors.UserError(
            f"{example.guid} (line {example.line_number + number}): tag {tag!r} is "
            "neither O nor B-TYPE / I-TYPE")
      types.add(tag[2:])
  return sorted(types)


def convert(conll_dir, output_dir):
  """Writes output_dir/{labels.txt,train.tsv,dev.tsv,test.tsv}; returns the counts."""
  rows, counts = {}, {}
  for source, target in SPLITS:
    path = paths.join(conll_dir, source)
    input_checks.check_input_file(path, "conll_dir")
    examples = tagging_data.read_conll(path)
    if examples[0].labels is None:
      raise errors.UserError(f"{path}: no NER column (one column per line)")
    rows[target] = [(" ".join(e.words), entity_types(e)) for e in examples]
    counts[target] = collections.Counter(t for _, types in rows[target] for t in types)
    counts[target]["(sentences)"] = len(examples)
  labels = sorted(t for t in counts["train.tsv"] if t != "(sentences)")
  if not labels:  # every sentence would be "no label": nothing to learn
    raise errors.UserError(
        f"{paths.join(conll_dir, SPLITS[0][0])}: no entity tag (every tag is O); a "
        "multi-label set needs entity types to learn")
  for target, split_rows in rows.items():  # every split checked before any is written
    for number, (_, types) in enumerate(split_rows, start=1):
      unknown = set(types) - set(labels)
      if unknown:
        raise errors.UserError(f"{target} sentence {number}: entity type(s) "
                                     f"{sorted(unknown)} never seen in train.txt")
  atomic_output.ensure_output_dir(output_dir, "output_dir")  # made once the input is good
  for target, split_rows in rows.items():
    with atomic_output.atomic_open(paths.join(output_dir, target)) as handle:
      handle.writelines(f"{text}\t{','.join(types)}\n" for text, types in split_rows)
  with atomic_output.atomic_open(paths.join(output_dir, "labels.txt")) as handle:
    handle.writelines(f"{label}\n" for label in labels)
  return counts


def main(argv=None):
  argv = sys.argv[1:] if argv is None else argv
  with errors.report_user_errors(False, "conll_entity_types.py"):
    if len(argv) != 2:
      raise errors.UserError(
          f"expected two arguments, CONLL_DIR OUTPUT_DIR (got {len(argv)}); usage: "
          "python tools/conll_entity_types.py ../shared/data/conll2003 /tmp/conll_types")
    conll_dir, output_dir = (flags_common.expand_path(a) for a in argv)
    for target, count in convert(conll_dir, output_dir).items():
      print(target, " ".join(f"{k}={v}" for k, v in sorted(count.items())))


if __name__ == "__main__":
  main()
