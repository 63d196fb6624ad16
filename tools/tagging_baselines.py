"""Two baselines for a tagged CoNLL column, measured on the data a run_tagger.py run uses.

  python tools/tagging_baselines.py --data_dir=../shared/data/conll2003 --tag_column=2 \
    --max_train_examples=500 --max_eval_examples=500

Learns from the first --max_train_examples sentences of train.txt (0: all) and scores
the first --max_eval_examples of valid.txt (0: all), as run_tagger.py's flags of the same
names choose them:
  majority     the training data's most frequent tag on every word;
  word         each word's most frequent tag in the training data (the exact word form),
               the majority tag for a word never seen there.
Prints each one's accuracy per word and, with --iob, conlleval's span precision, recall
and F1 (predicted tags read as they are, as conlleval reads them).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert.cli import flags_common  # noqa: E402
from bert.cli import launch  # noqa: E402
from bert.tagging import tagging_conlleval  # noqa: E402
from bert.tagging import tagging_data  # noqa: E402
from bert.utils import paths  # noqa: E402
from bert.utils import errors  # noqa: E402
from bert.utils import input_checks  # noqa: E402

# What to do when --iob meets a column of other tags (run_tagger.py says the same).
NOT_CHUNK_TAGS = ("pick the chunk column with --tag_column (CoNLL-2003: 3 chunks, 4 "
                  "entities), or drop --iob to score the tags as written")


def baseline_scores(train, dev, iob):
  """{baseline: {metric: value}} of both baselines on `dev`, learned from `train`."""
  scores = {}
  for name, per_word in (("majority", False), ("word", True)):
    guessed = tagging_data.baseline_tags(train, dev, per_word)
    gold = [example.labels for example in dev]
    words = sum(len(tags) for tags in gold)
    right = sum(g == p for tags, guess in zip(gold, guessed) for g, p in zip(tags, guess))
    scores[name] = {"accuracy": right / words}
    if iob:
      counted = tagging_conlleval.conll_evaluate(gold, guessed)
      scores[name].update({k: counted[k] for k in ("precision", "recall", "f1")})
  return scores


def main(argv=None):
  parser = launch.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--data_dir", required=True, type=flags_common.expand_path)
  parser.add_argument("--tag_column", type=int, default=None)
  parser.add_argument("--iob", action="store_true")
  parser.add_argument("--max_train_examples", type=int, default=0)
  parser.add_argument("--max_eval_examples", type=int, default=0)
  args = parser.parse_args(argv)
  with errors.report_user_errors(False, "tagging_baselines.py"):
    tagging_data.check_tag_column(args.tag_column)
    for flag in ("max_train_examples", "max_eval_examples"):
      if getattr(args, flag) < 0:
        raise errors.UserError(f"--{flag}={getattr(args, flag)}: must be >= 0 (0: all)")
    splits = []
    for name, limit in (("train.txt", args.max_train_examples),
                        ("valid.txt", args.max_eval_examples)):
      path = input_checks.check_input_file(paths.join(args.data_dir, name), "data_dir")
      examples = tagging_data.read_conll(path, args.tag_column)
      if any(e.labels is None for e in examples):
        raise errors.UserError(f"{path}: no tag column")
      if args.iob:
        tagging_data.check_chunk_tags(examples, path, args.tag_column, NOT_CHUNK_TAGS)
      splits.append(examples[:limit] if limit > 0 else examples)
    for name, values in baseline_scores(*splits, args.iob).items():
      print(f"{name:9s}" + "  ".join(f"{k} {v:.4f}" for k, v in values.items()))


if __name__ == "__main__":
  main()
