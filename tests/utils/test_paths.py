"""bert/utils/paths.py: a user's path named, a URL never normalized as a local path, no I/O
and no TensorFlow (the LiteRT predictor uses it in the serving install)."""
import os
import subprocess
import sys

import pytest

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


@pytest.mark.parametrize("url, problem", [
    ("gs://my-bucket/x", None), ("gs://a.b-c_d/x", None), ("gs://b1-test-x", None),
    ("gs://Upper/x", "bucket names have no capital letters"),
    ("gs://_x/y", "bucket names hold only lowercase letters, digits, '-', '_' and '.', "
                  "and start and end with a letter or a digit"),
    ("gs://x-/y", "bucket names hold only lowercase letters, digits, '-', '_' and '.', "
                  "and start and end with a letter or a digit"),
    ("gs://ab/x", "bucket names are 3 to 63 characters long (222 with dots)"),
    ("gs://" + "a" * 64, "bucket names are 3 to 63 characters long (222 with dots)"),
    ("gs://a..b/x", "each dot-separated part of a bucket name is 1 to 63 characters long"),
    ("gs://192.168.0.1/x", "a bucket name is not an IP address"),
    ("gs://google-data/x", "bucket names do not start with 'goog' nor hold 'google'"),
    ("gs:///x", "a gs:// URL names its bucket first: gs://BUCKET/..."),
])
def test_bucket_names_follow_the_rules_of_gcs(url, problem):
  assert paths.bucket_name_problem(url) == problem


def test_gs_urls_are_read_as_gsutil_reads_them():
  assert paths.gsutil_form("gs://b//x") == "gs://b/x"
  assert paths.gsutil_form("gs://b///x//y/") == "gs://b/x/y/"
  assert paths.gsutil_form("gs://b/x/y") == "gs://b/x/y"
  assert paths.gsutil_form("gs://b") == "gs://b"
  # Only gs://: other filesystems take `//` as part of a name (S3 keeps it).
  assert paths.gsutil_form("s3://b//x") == "s3://b//x"
  assert paths.gsutil_form("/tmp//x") == "/tmp//x"
  assert paths.bucket("gs://b/x/y") == "gs://b"
