"""SavedModel serving latency: batch-1 raw-text requests, p50/p99, in-graph vs Python.

Exports a classifier the way `run_classifier.py --export_dir` does (the 6-layer 384-wide
shared MiniLM size; real weights when ../shared/data is present), loads it back with
`tf.saved_model.load`, and times single raw-text requests through the `serve_text`
signature (tokenizer inside the graph). For the ratio, the same requests through the
original's serving path measured in the same run: Python FullTokenizer, then the
token-id signature.

  python -m benchmarks.bench_serving [--quick]
"""

import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "data"))
MINILM = os.path.join(SHARED, "models", "uncased_L-6_H-384_A-12")


def _sentences(limit):
  path = os.path.join(SHARED, "glue", "SST-2", "dev.tsv")
  if os.path.exists(path):
    with open(path, encoding="utf-8") as f:
      rows = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    return rows[:limit]
  return [f"this is test sentence number {i} and it is fine" for i in range(limit)]


def _percentile(values, q):
  ordered = sorted(values)
  return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def run(quick=False):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import

  from bert.training import checkpoints  # pylint: disable=g-import-not-at-top

  from bert.formats import serving  # pylint: disable=g-import-not-at-top
  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  from bert import heads  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  from bert.training import model_config  # pylint: disable=g-import-not-at-top

  if not os.path.exists(os.path.join(MINILM, "vocab.txt")):
    return [{"name": "serving latency", "value": "skipped", "unit": "",
             "note": "needs ../shared/data/models/uncased_L-6_H-384_A-12"}]
  vocab = os.path.join(MINILM, "vocab.txt")
  config = model_config.load_bert_config(os.path.join(MINILM, "bert_config.json"))
  model, _ = heads.build_classifier_model(config, 2)
  checkpoints.load_checkpoint(model, os.path.join(MINILM, "bert_model.ckpt"))
  fast = fast_tokenization.FastTokenizer(vocab, do_lower_case=True)
  slow = tokenization.FullTokenizer(vocab, do_lower_case=True)
  requests = _sentences(60 if quick else 300)
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "export")
    serving.export_classifier(path, model, ["negative", "positive"], tokenizer=fast,
                             max_seq_length=128, cls_id=fast.cls_id, sep_id=fast.sep_id)
    loaded = tf.saved_model.load(path)
    serve_text = loaded.signatures["serve_text"]
    serve_ids = loaded.signatures["serving_default"]

    def in_graph(text):
      return serve_text(text_a=tf.constant([text]))["probabilities"].numpy()

    def python_path(text):
      tokens = ["[CLS]"] + slow.tokenize(text)[:126] + ["[SEP]"]
      ids = np.array([slow.convert_tokens_to_ids(tokens)], np.int32)
      return serve_ids(input_ids=tf.constant(ids), input_mask=tf.ones_like(ids),
                       segment_ids=tf.zeros_like(ids))["probabilities"].numpy()

    for fn in (in_graph, python_path):  # warm-up: traces and thread pools
      for text in requests[:10]:
        fn(text)
    agree = 0
    timings = {}
    for name, fn in (("serve_text (in-graph tokenizer)", in_graph),
                     ("FullTokenizer + token-id signature", python_path)):
      samples = []
      for text in requests:
        start = time.perf_counter()
        fn(text)
        samples.append((time.perf_counter() - start) * 1e3)
      timings[name] = samples
    for text in requests[:50]:
      agree += int(np.allclose(in_graph(text), python_path(text), atol=1e-5))
  for name, samples in timings.items():
    rows.append({"name": f"{name} p50", "value": _percentile(samples, 50), "unit": "ms",
                 "note": f"batch 1, {len(samples)} SST-2 dev sentences"})
    rows.append({"name": f"{name} p99", "value": _percentile(samples, 99), "unit": "ms",
                 "note": ""})
  names = list(timings)
  rows.append({"name": "python path p50 / in-graph p50",
               "value": _percentile(timings[names[1]], 50) / _percentile(timings[names[0]], 50),
               "unit": "x", "note": f"same probabilities on {agree}/50 requests"})
  return rows


if __name__ == "__main__":
  for row in run(quick="--quick" in sys.argv):
    print(f"{row['name']:45s} {row['value']:>10.3f} {row['unit']:3s} {row['note']}"
          if isinstance(row["value"], float) else row)
