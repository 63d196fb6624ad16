"""Safety audit as a test: no unsafe loading or shell use in the project's code.

Scans every .py file of the project (not .venv) token by token, so comments and strings
that merely mention a name do not count. Forbidden:
  * pickle / cPickle / dill / marshal / shelve imports (user files must never be
    unpickled; multiprocessing's own pickling between our processes is not user data);
  * eval( and exec( as builtins (a method such as `x.eval()` is fine);
  * os.system / os.popen, and any call with shell=True (paths from flags would be
    interpreted by a shell);
  * yaml.load / yaml.unsafe_load (yaml.safe_load is fine);
  * safe_mode=False (Keras loading must keep its safe mode) and allow_pickle=True (NumPy).
ALLOWED lists the justified exceptions, each with its reason.
"""
import io
import os
import tokenize

import pytest

from conftest import ROOT

ALLOWED = {
    # Runs the project's own script file (never user input) as __main__ so that many CLI
    # cases share one TensorFlow import; see the module docstring there.
    ("tests/support/cli_harness.py", "exec("),
    # Runs the project's own docs/library.md examples (never user input), block by block,
    # so that the page cannot drift from the code.
    ("tests/project/test_library_page.py", "exec("),
}
_UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "marshal", "shelve"}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}


def project_files():
  files = []
  for directory, dirs, names in os.walk(ROOT):
    # build/: the copies `pip install .` leaves in a clone (the same files, not others).
    dirs[:] = [d for d in dirs if not d.startswith(".") and
               d not in ("__pycache__", "out", "build")]
    files += [os.path.join(directory, n) for n in names if n.endswith(".py")]
  return sorted(files)


def findings(source):
  """[(line, what)] for every forbidden construct in Python source text."""
  tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in _SKIP]
  found = []
  for i, tok in enumerate(tokens):
    prev = tokens[i - 1].string if i else ""
    nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
    nxt2 = tokens[i + 2].string if i + 2 < len(tokens) else ""
    line = tok.start[0]
    if tok.type != tokenize.NAME:
      continue
    if tok.string in ("import", "from") and nxt.split(".")[0] in _UNSAFE_MODULES:
      found.append((line, f"import {nxt}"))
    elif tok.string in ("eval", "exec") and nxt == "(" and prev not in (".", "def"):
      found.append((line, f"{tok.string}("))
    elif tok.string == "os" and nxt == "." and nxt2 in ("system", "popen"):
      found.append((line, f"os.{nxt2}("))
    elif tok.string == "shell" and nxt == "=" and nxt2 == "True":
      found.append((line, "shell=True"))
    elif tok.string == "yaml" and nxt == "." and nxt2 in ("load", "unsafe_load", "full_load"):
      found.append((line, f"yaml.{nxt2}("))
    elif tok.string in ("safe_mode", "allow_pickle") and nxt == "=":
      value = nxt2
      if (tok.string == "safe_mode" and value != "True") or (
          tok.string == "allow_pickle" and value != "False"):
        found.append((line, f"{tok.string}={value}"))
  return found


def test_the_scanner_finds_what_it_must_and_ignores_mentions():
  bad = ("import pickle\nfrom dill import loads\nx = eval('1')\nexec(code)\n"
         "os.system('ls ' + path)\nsubprocess.run(cmd, shell=True)\nyaml.load(f)\n"
         "keras.models.load_model(p, safe_mode=False)\nnp.load(p, allow_pickle=True)\n")
  assert [w for _, w in findings(bad)] == [
      "import pickle", "import dill", "eval(", "exec(", "os.system(", "shell=True",
      "yaml.load(", "safe_mode=False", "allow_pickle=True"]
  fine = ("# pickle, eval(x), os.system are only named here\n"
          "'''shell=True in a docstring'''\nmodel.eval()\nyaml.safe_load(f)\n"
          "keras.models.load_model(p, safe_mode=True)\nnp.load(p)\n"
          "subprocess.run([sys.executable, script, path])\n")
  assert findings(fine) == []


@pytest.mark.parametrize("path", project_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_no_unsafe_loading_or_shell(path):
  relative = os.path.relpath(path, ROOT)
  with open(path, encoding="utf-8") as handle:
    source = handle.read()
  bad = [(line, what) for line, what in findings(source) if (relative, what) not in ALLOWED]
  assert bad == [], f"{relative}: " + ", ".join(f"line {l}: {w}" for l, w in bad)
