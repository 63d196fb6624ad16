"""SQuAD data speed: feature conversion and answer post-processing on the real v1.1 dev set.

  python -m benchmarks.bench_squad [--quick]

Measures, on ../shared/data/squad/dev-v1.1.json (10,570 questions) with run_squad's
defaults (max_seq_length 384, doc_stride 128, max_query_length 64, uncased vocabulary):
reading the JSON, converting to features (questions/s), writing eval.tf_record, and
turning logits into answers (n-best 20, random logits, features/s). --quick uses the
first 2,000 questions.
"""

import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DATA = os.path.join(ROOT, "..", "shared", "data")
DEV = os.path.join(DATA, "squad", "dev-v1.1.json")
VOCAB = os.path.join(DATA, "vocab", "uncased_vocab.txt")


def run(quick=False):
  """Returns [{name, value, unit, note}]."""
  from bert.squad import squad_data  # pylint: disable=g-import-not-at-top
  from bert.squad import squad_decoding  # pylint: disable=g-import-not-at-top
  from bert.squad import squad_features  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top

  tokenizer = tokenization.FullTokenizer(VOCAB, do_lower_case=True)
  started = time.perf_counter()
  examples = squad_data.read_squad_examples(DEV, is_training=False)
  read_s = time.perf_counter() - started
  if quick:
    examples = examples[:2000]
  scope = f"{len(examples)} dev-v1.1 questions"

  started = time.perf_counter()
  features = squad_features.convert_examples_to_features(examples, tokenizer, 384, 128, 64,
                                                     is_training=False)
  convert_s = time.perf_counter() - started

  with tempfile.TemporaryDirectory() as tmp:
    started = time.perf_counter()
    squad_features.write_tf_record(os.path.join(tmp, "eval.tf_record"), features, False)
    write_s = time.perf_counter() - started

  rng = np.random.RandomState(0)
  results = [squad_decoding.RawResult(f.unique_id, rng.randn(384).astype(np.float32),
                                  rng.randn(384).astype(np.float32)) for f in features]
  started = time.perf_counter()
  squad_decoding.compute_predictions(examples, features, results, 20, 30, True)
  post_s = time.perf_counter() - started

  return [
      {"name": "squad_read_json", "value": round(read_s, 2), "unit": "s",
       "note": "read + whitespace-split all 10,570 dev-v1.1 questions"},
      {"name": "squad_convert_questions_per_s", "value": round(len(examples) / convert_s, 1),
       "unit": "questions/s", "note": f"{scope} -> {len(features)} features in "
                                      f"{convert_s:.2f}s (seq 384, stride 128)"},
      {"name": "squad_write_tf_record", "value": round(len(features) / write_s, 1),
       "unit": "features/s", "note": f"eval.tf_record, {len(features)} features"},
      {"name": "squad_postprocess_features_per_s", "value": round(len(features) / post_s, 1),
       "unit": "features/s", "note": f"n-best 20 + get_final_text, {scope}, random logits"},
  ]


if __name__ == "__main__":
  from bert.utils import cpu_memory  # pylint: disable=g-import-not-at-top
  cpu_memory.keep_freed_memory()  # as the scripts do: the figures are what a user gets
  for row in run(quick="--quick" in sys.argv):
    print(f"{row['name']:36s} {row['value']:>10} {row['unit']:14s} {row['note']}")
