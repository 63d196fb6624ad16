"""Benchmark: create_vocab.py's learners against tensorflow-text's own learner, in one run.

  python -m benchmarks.bench_vocab                    # Korean's first 57,000 lines, Reuters
  python -m benchmarks.bench_vocab --korean_lines=0   # the whole Korean corpus (20 MB)
  python -m benchmarks.bench_vocab --rounds=3 --own_rounds=1
  python -m benchmarks.bench_vocab --quick            # Reuters' first 3,000 lines
  python -m benchmarks.bench_vocab --own_rounds=0     # without tensorflow-text's own

The corpora are real text of ../shared/data (without it the benchmark is skipped), with
create_vocab.py's settings for each: the Korean movie reviews cased (--vocab_size=16000
--max_unique_chars=3000), Reuters uncased (--vocab_size=8000).

For each corpus the words are counted as create_vocab.py counts them (BasicTokenizer,
every 100th line held out), once in this process and once with a worker per CPU, started
whatever the corpus's size (both timed, the workers' start included; their counts must
be equal). Then, in each round, each learner learns from those
same counts, one after the other:
  * tensorflow_text_own: tensorflow-text's own learn() (wordpiece_tokenizer_learner_lib,
    pure Python), in the first --own_rounds rounds only (it takes minutes);
  * tensorflow_text: create_vocab.py's default (bert/pretraining/pretraining_vocab_learner.py);
    the benchmark fails unless its tokens are the own learner's, token for token;
  * tokenizers: Hugging Face tokenizers' WordPiece trainer (--learner=tokenizers; its
    rows say "skipped" without the package).
Each is timed in wall seconds and in this process's CPU seconds (tokenizers' trainer
runs threads); a ratio is taken within a round, then the median and range over the
rounds. Each vocabulary's held-out [UNK] rate and WordPiece pieces per word are
measured with FullTokenizer on the held-out lines, as create_vocab.py's summary does.
The machine's CPU and load average come with every row.

`run(quick=False)` returns the figures as a list of {name, value, unit, note} for
benchmarks/run_all.py.
"""

import os
import tempfile
import time

from benchmarks.parts import arguments
from benchmarks.parts import machine
from bert.pretraining import pretraining_vocab
from bert.pretraining import pretraining_vocab_learner
from bert.utils import errors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
KOREAN = os.path.join(SHARED, "korean", "corpus", "nsmc_reviews.txt")
REUTERS = os.path.join(SHARED, "corpora", "reuters_docs.txt")
LEARNERS = ("tensorflow_text_own", "tensorflow_text", "tokenizers")
# create_vocab.py's settings for each corpus (the others are its defaults).
SETTINGS = {"korean": dict(do_lower_case=False, vocab_size=16000, max_unique_chars=3000),
            "reuters": dict(do_lower_case=True, vocab_size=8000, max_unique_chars=1000)}


def _first_lines(path, limit, folder):
  """The corpus itself (limit 0), or a file of its first `limit` lines."""
  if not limit:
    return path
  sample = os.path.join(folder, f"first_{limit}_{os.path.basename(path)}")
  with open(path, encoding="utf-8") as source, open(sample, "w", encoding="utf-8") as out:
    for number, line in enumerate(source):
      if number >= limit:
        break
      out.write(line)
  return sample


def _count(path, do_lower_case, num_workers):
  """(Counter of words, held-out lines, seconds) as create_vocab.py counts them."""
  options = pretraining_vocab.LearnOptions()
  start = time.perf_counter()
  with pretraining_vocab.WordCounter(do_lower_case, options.max_input_chars_per_word,
                                     num_workers) as counter:
    _, held_out = pretraining_vocab.read_corpus([path], counter, options.holdout_every,
                                                options.log_every_lines)
  return counter.words, held_out, time.perf_counter() - start


def _learn(learner, words, settings):
  """(token list, wall seconds, CPU seconds) of one learner on the counts."""
  reserved = pretraining_vocab.reserved_tokens(99)
  options = pretraining_vocab.LearnOptions()
  params = dict(upper_thresh=options.upper_thresh, lower_thresh=options.lower_thresh,
                num_iterations=options.num_iterations,
                max_input_tokens=options.max_input_tokens,
                max_token_length=options.max_token_length,
                max_unique_chars=settings["max_unique_chars"], slack_ratio=options.slack_ratio)
  wall, cpu = time.perf_counter(), time.process_time()
  if learner == "tensorflow_text_own":
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib  # pylint: disable=g-import-not-at-top
    vocab = wordpiece_tokenizer_learner_lib.learn(words, settings["vocab_size"], reserved,
                                                  **params)
  elif learner == "tensorflow_text":
    vocab = pretraining_vocab_learner.learn(words, settings["vocab_size"], reserved, **params)
  else:
    vocab = pretraining_vocab.learn_with_tokenizers(words, settings["vocab_size"], reserved,
                                                    settings["max_unique_chars"])
  return vocab, time.perf_counter() - wall, time.process_time() - cpu


def _measure(vocab, held_out, do_lower_case, folder):
  """(held-out [UNK] rate, pieces per word) of a token list."""
  path = os.path.join(folder, "vocab.txt")
  with open(path, "w", encoding="utf-8") as handle:
    handle.write("".join(token + "\n" for token in vocab))
  rate, tokens, words = pretraining_vocab.unk_rate(path, do_lower_case, held_out)
  return rate, tokens / words


def _tokenizers_installed():
  try:
    pretraining_vocab.import_tokenizers()
    return True
  except errors.UserError:
    return False


def bench_corpus(name, path, rounds, own_rounds, log=print):
  """The rows of one corpus."""
  settings = SETTINGS[name]
  rows = []
  words, held_out, one = _count(path, settings["do_lower_case"], 0)
  parallel_words, parallel_held_out, parallel = _count(path, settings["do_lower_case"],
                                                       os.cpu_count() or 1)
  if list(parallel_words.items()) != list(words.items()) or parallel_held_out != held_out:
    raise RuntimeError(f"{name}: the workers counted other words than one process")
  size = os.path.getsize(path)
  corpus = (f"{name} ({size / 1e6:.1f} MB, {sum(words.values()):,} words, "
            f"{len(words):,} distinct, {len(held_out):,} held-out lines)")
  rows.append({"name": f"{name}: counting, one process", "value": one, "unit": "s",
               "note": f"{corpus}; {machine.load_average()}"})
  rows.append({"name": f"{name}: counting, a worker per CPU", "value": parallel,
               "unit": "s", "note": f"the same counts; {one / parallel:.2f}x one process"})
  learners = [l for l in LEARNERS if l != "tokenizers" or _tokenizers_installed()]
  times = {l: [] for l in learners}
  cpus = {l: [] for l in learners}
  loads = []
  vocabs = {}
  with tempfile.TemporaryDirectory() as folder:
    for round_ in range(rounds):
      loads.append(machine.load_average())
      for learner in learners:
        if learner == "tensorflow_text_own" and round_ >= own_rounds:
          continue
        log(f"[vocab] {name} round {round_ + 1}: {learner} ... ({machine.load_average()})")
        vocab, wall, cpu = _learn(learner, words, settings)
        times[learner].append(wall)
        cpus[learner].append(cpu)
        if learner in vocabs and vocabs[learner] != vocab:
          raise RuntimeError(f"{name}: {learner} learned another vocabulary in round "
                             f"{round_ + 1}")
        vocabs[learner] = vocab
    if "tensorflow_text_own" in vocabs and (vocabs["tensorflow_text_own"] !=
                                            vocabs["tensorflow_text"]):
      raise RuntimeError(f"{name}: the array learner's tokens are not tensorflow-text's")
    for learner in learners:
      if not times[learner]:
        rows.append({"name": f"{name}: {learner}", "value": "skipped", "unit": "",
                     "note": "--own_rounds=0"})
        continue
      rate, pieces = _measure(vocabs[learner], held_out, settings["do_lower_case"], folder)
      note = (f"{machine.spread(times[learner], '{:,.2f}')}, CPU "
              f"{machine.spread(cpus[learner], '{:,.2f}')} s; {len(vocabs[learner]):,} tokens, "
              f"held-out [UNK] rate {rate:.6f}, {pieces:.4f} pieces per word")
      if learner == "tensorflow_text" and "tensorflow_text_own" in vocabs:
        note += "; token for token tensorflow-text's own"
      rows.append({"name": f"{name}: {learner} learn seconds",
                   "value": machine.median_range(times[learner])[0], "unit": "s",
                   "note": note})
    own = times.get("tensorflow_text_own", [])
    for learner in ("tensorflow_text", "tokenizers"):
      if own and times.get(learner):
        ratios = [o / t for o, t in zip(own, times[learner])]
        cpu_ratios = [o / t for o, t in zip(cpus["tensorflow_text_own"], cpus[learner])]
        rows.append({"name": f"{name}: {learner} vs tensorflow-text's own",
                     "value": machine.median_range(ratios)[0], "unit": "x",
                     "note": f"{machine.spread(ratios, '{:,.1f}')}; CPU "
                             f"{machine.spread(cpu_ratios, '{:,.1f}')}; load at each "
                             f"round's start: {', '.join(loads[:len(own)])}"})
  if "tokenizers" not in learners:
    rows.append({"name": f"{name}: tokenizers", "value": "skipped", "unit": "",
                 "note": pretraining_vocab.TOKENIZERS_INSTALL})
  return rows


def run(quick=False, korean_lines=57_000, rounds=None, own_rounds=1, log=print):
  if not os.path.exists(REUTERS):
    return [{"name": "vocabulary learners", "value": "skipped", "unit": "",
             "note": f"no shared data: {SHARED}"}]
  rounds = rounds or (1 if quick else 3)
  rows = [{"name": "machine", "value": machine.threads(), "unit": "threads",
           "note": f"{machine.cpu_model()}; {machine.load_average()}"}]
  with tempfile.TemporaryDirectory() as folder:
    if quick:
      rows += bench_corpus("reuters", _first_lines(REUTERS, 3000, folder), rounds,
                           own_rounds, log)
      return rows
    rows += bench_corpus("korean", _first_lines(KOREAN, korean_lines, folder), rounds,
                         own_rounds, log)
    rows += bench_corpus("reuters", REUTERS, rounds, own_rounds, log)
  return rows


def main():
  parser = arguments.Parser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="Reuters' first 3,000 lines")
  parser.add_argument("--korean_lines", type=int, default=57_000,
                      help="the Korean corpus's first N lines (0: all of it)")
  parser.add_argument("--rounds", type=arguments.positive_int, default=None,
                      help="rounds of the fast learners (default 3; --quick 1)")
  parser.add_argument("--own_rounds", type=int, default=1,
                      help="rounds that also run tensorflow-text's own learner (0: none)")
  args = parser.parse_args()
  if args.korean_lines < 0 or args.own_rounds < 0:
    parser.error("--korean_lines and --own_rounds must be 0 or more")
  rows = run(args.quick, args.korean_lines, args.rounds, args.own_rounds)
  for row in rows:
    value = row["value"]
    shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
    print(f"| {row['name']} | {shown} {row['unit']} | {row['note']} |")


if __name__ == "__main__":
  main()
