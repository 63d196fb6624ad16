"""bert/utils/paths.py: a user's path named, a URL never normalized as a local path, no I/O
and no TensorFlow (the LiteRT predictor uses it in the serving install)."""
import os
import subprocess
import sys

from conftest import ROOT

from bert.utils import paths


def test_url_names_keep_their_scheme():
  assert paths.join("gs://b/x", "y", "z.txt") == "gs://b/x/y/z.txt"
  assert paths.dirname("gs://b/x/y.txt") == "gs://b/x"
  assert paths.basename("gs://b/x/y.txt") == "y.txt"
  assert paths.split("gs://b/x/") == ("gs://b", "x")
  assert paths.normpath("gs://b/x/../y//z") == "gs://b/y/z"
  assert paths.abspath("gs://b/x/") == "gs://b/x"
  assert paths.expand("gs://~/x") == "gs://~/x"
  assert paths.expand("~/x") == os.path.expanduser("~/x")
  assert paths.scheme("S3://b/x") == "s3" and paths.scheme("/tmp/x") == ""
  assert not paths.is_url("C:/x") and not paths.is_url("/a/gs://b")
  assert paths.is_url("ram://x") and paths.is_url("hdfs://n:9000/x")
  tmp = paths.temporary_sibling("gs://b/out/model")
  assert tmp.startswith("gs://b/out/.model.tmp-") and len(tmp) == len("gs://b/out/.model.tmp-") + 8


def test_the_names_load_no_tensorflow():
  loaded = subprocess.run(
      [sys.executable, "-c", "import sys; from bert.utils import paths; "
       "paths.join(paths.dirname('gs://b/x/y'), 'z'); "
       "print(sorted(m for m in ('tensorflow', 'keras', 'numpy') if m in sys.modules))"],
      capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()
  assert loaded == "[]"
