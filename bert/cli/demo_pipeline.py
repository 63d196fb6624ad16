"""The steps of `make demo` (quickstart.py) as a library: its corpus, its queries, and a
step runner that prints the command it runs, as a user would type it.

Tests import this, never the quickstart command.
"""

import os
import re
import shlex
import subprocess
import sys
import time

from pydoc_data import topics

from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import runtime_log
from bert.utils import errors

# In a clone, the repository root holds the scripts each step runs; an installed package
# has no root scripts, and runs the same commands as `python -m bert.cli.<script>`.
CLONE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The small classification task the demo fine-tunes on: package data, so an installed
# `bert-quickstart` has it too.
QUICKSTART_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quickstart_data")
QUERIES = [
    "Return the absolute path of the file, following symbolic links.",
    "Return the square root of x as a floating point number.",
    "Open a connection to the server on the given port.",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def write_corpus(path):
  """pydoc_data's help topics as documents: one sentence a line, blank line between."""
  documents = 0
  with atomic_output.atomic_open(path) as out:
    for _, text in sorted(topics.topics.items()):
      lines = []
      for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        # Grammar productions and tables are not prose; keep sentences only.
        if not flat or "::=" in flat or flat.startswith(("+", "*", "=")):
          continue
        lines += [s for s in _SENTENCE_END.split(flat) if len(s.split()) >= 3]
      if len(lines) >= 2:
        out.write("\n".join(lines) + "\n\n")
        documents += 1
  return documents


def run_filtered(command):
  """Runs a command; returns its exit status.

  Its progress goes to stderr: passed through as it comes, less TensorFlow's runtime
  lines (runtime_log.is_noise; the project's scripts filter them themselves, a plain
  `python -c "import tensorflow"` does not).
  """
  with subprocess.Popen(command, stderr=subprocess.PIPE) as process:
    for line in process.stderr:
      if not runtime_log.is_noise(line.rstrip(b"\n")):
        sys.stderr.buffer.write(line)
        sys.stderr.flush()
  return process.returncode


def step_command(script):
  """How to run `script` (run_classifier.py, say): the clone's root script, as a user
  types it, or the installed package's module of the same name."""
  path = os.path.join(CLONE_ROOT, script)
  if os.path.isfile(path):
    return [sys.executable, path]
  return [sys.executable, "-m", "bert.cli." + os.path.splitext(script)[0]]


def run_step(title, script, args, log):
  command = step_command(script) + args
  print(f"\n=== {title}\n$ {' '.join(shlex.quote(c) for c in command)}", flush=True)
  start = time.time()
  returncode = run_filtered(command)
  elapsed = time.time() - start
  log.append((title, elapsed))
  if returncode != 0:
    raise errors.UserError(f"step '{title}' failed (exit {returncode}); "
                                 "see its message above")
  print(f"--- {title}: {elapsed:.0f} s", flush=True)


def read_key_values(path):
  values = {}
  with file_io.open(path, encoding="utf-8") as f:
    for line in f:
      key, _, value = line.partition(" = ")
      values[key.strip()] = value.strip()
  return values


QUERY_PROGRAM = r"""
import sys, json
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops the SavedModel uses
model = tf.saved_model.load(sys.argv[1])
serve = model.signatures["serve_text"]
queries = json.loads(sys.argv[2])
out = serve(text_a=tf.constant(queries))
labels = [x.decode() for x in out["label"].numpy()]
probs = out["probabilities"].numpy().max(axis=-1)
for q, l, p in zip(queries, labels, probs):
  print(f"  {l:8s} {p:.2f}  {q}")
"""
