"""The worker scripts' one command line: `python WORKER.py MODE REQUEST.json` -> one JSON line.

hugging_face_worker.py and original_worker.py run in virtual environments of their own, started by
path (their folder is then on sys.path, so they import this module by its bare name).
The benchmark that starts a worker writes REQUEST.json and reads the last line of its
stdout.
"""

import json
import sys


def main(modes, argv=None):
  """Runs modes[MODE](the request) and prints its result as one JSON line."""
  argv = sys.argv if argv is None else argv
  if len(argv) != 3 or argv[1] not in modes:
    raise SystemExit(f"usage: {argv[0]} {{{','.join(modes)}}} REQUEST.json")
  with open(argv[2], encoding="utf-8") as handle:
    request = json.load(handle)
  print(json.dumps(modes[argv[1]](request)))
