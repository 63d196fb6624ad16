"""The original release's side of the benchmarks: its own generator and tokenizer, timed.

Run only as a subprocess, by the interpreter of .venv-original (`make
bench-original-setup`) or the one named by $BERT_ORIGINAL_PYTHON, with neither the
environment's PYTHON* variables nor the user's site-packages (`python -E -s`), from a
folder outside this project (benchmarks/parts/original_launcher.py does all three): its
sys.path is then this folder (which holds no `bert`) and that venv's own. The original's
package is `bert-tensorflow` 1.0.4 from the package index; its import name `bert` is also
this project's, and its generator does `from bert import tokenization`: started from our
tree, it would silently run our tokenizer. So every mode first checks that the `bert`
modules it imported are the files of this interpreter's site-packages, and stops if not.

  .venv-original/bin/python -E -s benchmarks/parts/original_worker.py MODE REQUEST.json

REQUEST.json is written by the benchmark that calls this script; one JSON line of results
is printed on stdout. Modes:
  generate  bert/create_pretraining_data.py with the request's flags: main() timed
            alone (its imports and flag parsing outside the timer).
  tokenize  FullTokenizer over a list of lines, one pass timed (building the tokenizer
            outside the timer); ids written for checking.

No TensorFlow-1 shim is needed: 1.0.4 imports `tensorflow.compat.v1` itself, and every
TensorFlow 1 name it uses (tf.flags, tf.gfile, tf.logging, tf.python_io, tf.train.Example)
is in TensorFlow 2's compat.v1. The one stand-in is for its `tf.app.run()`: the flags are
parsed here and main() is called directly, so that a timer can go around it.
"""

import json
import os
import resource
import sysconfig
import time


def _own_modules(*modules):
  """{module name: file} of the imported `bert` modules and this interpreter's
  site-packages; SystemExit when a module is not a file of that site-packages."""
  purelib = os.path.realpath(sysconfig.get_paths()["purelib"])
  files = {m.__name__: os.path.realpath(m.__file__) for m in modules}
  for name, path in files.items():
    if os.path.commonpath([path, purelib]) != purelib:
      raise SystemExit(f"{name} was imported from {path}, not from this interpreter's "
                       f"site-packages {purelib}: not the original release's code")
  return {"module_files": files, "purelib": purelib}


def _versions():
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return f"bert-tensorflow {metadata.version('bert-tensorflow')}, tensorflow {tf.__version__}"


def generate(request):
  from bert import create_pretraining_data as original  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  report = _own_modules(original, tokenization)
  original.FLAGS(["create_pretraining_data.py"] + list(request["flags"]))
  started, started_cpu = time.perf_counter(), time.process_time()
  original.main(None)
  seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
  return {"seconds": seconds, "cpu_seconds": cpu,
          "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
          "versions": _versions(), **report}


def tokenize(request):
  import numpy as np  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  report = _own_modules(tokenization)
  # Its tokenizer reads an absl flag (--preserve_unused_tokens) per word: parsed, default.
  tokenization.FLAGS(["tokenize"])
  with open(request["lines_file"], encoding="utf-8") as handle:
    lines = json.load(handle)
  tokenizer = tokenization.FullTokenizer(request["vocab_file"],
                                         do_lower_case=bool(request["do_lower_case"]))
  started, started_cpu = time.perf_counter(), time.process_time()
  ids = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in lines]
  seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
  np.savez(request["ids_file"], flat=np.array([i for row in ids for i in row], np.int32),
           lengths=np.array([len(row) for row in ids], np.int32))
  return {"seconds": seconds, "cpu_seconds": cpu, "versions": _versions(), **report}


MODES = {"generate": generate, "tokenize": tokenize}


if __name__ == "__main__":
  # Run by path in its own venv, so this folder is on sys.path.
  import worker_protocol  # pylint: disable=g-import-not-at-top
  worker_protocol.main(MODES)
