"""TensorFlow's own gs:// client against the local GCS emulator (tests/support/gcs_emulator).

One subprocess (tests/support/gcs_emulator/tf_checks.py) runs every operation once and prints the
results; the tests below check them against exact values, and against the objects as the
emulator holds them. The errors it records for a missing or read-only bucket are the ones
the project's user errors are built on.
"""
import base64
import gzip
import json
import os
import shutil
import ssl
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest

from gcs_emulator import GcsEmulator, GcsEmulatorError

pytestmark = pytest.mark.gcs

CHECKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support", "gcs_emulator", "tf_checks.py")
ALL_BYTES = bytes(range(256)) * 3 + b"\r\n\x00end"
RECORDS = [b"", b"first", bytes(range(256)), b"\n" * 70000, "ünïcode".encode("utf-8")]


@pytest.fixture(scope="module")
def checked(gcs):
  """(results of tf_checks.py, its bucket, its read-only bucket, the missing bucket)."""
  bucket = gcs.new_bucket("tf-checks")
  readonly = gcs.new_bucket("tf-checks", readonly=True)
  gcs.put_object(f"{readonly}/in.txt", b"read me")
  missing = "gs://never-created-bucket"
  result = gcs.run([sys.executable, CHECKS, bucket, readonly, missing,
                    f"http://127.0.0.1:{gcs.emulator_port}"], timeout=300)
  lines = [line for line in result.stdout.splitlines() if line.startswith("RESULTS ")]
  assert len(lines) == 1, result.stdout[-5000:]
  return json.loads(lines[0][len("RESULTS "):]), bucket, readonly, missing


def b64(text):
  return base64.b64decode(text)


def test_bytes_round_trip_exactly(checked, gcs):
  results, bucket, _, _ = checked
  files = results["files"]
  assert b64(files["all_bytes"]) == ALL_BYTES
  assert gcs.get_object(f"{bucket}/files/all_bytes.bin") == ALL_BYTES
  assert files["stat_length"] == len(ALL_BYTES) == 774
  assert b64(files["seek_250_read_10"]) == ALL_BYTES[250:260]
  assert files["tell_after"] == 260
  assert files["appended"] == "line 1\nline 2\n"


def test_listings_name_folders_with_a_slash(checked):
  files = checked[0]["files"]
  root = f"{checked[1]}/files"
  assert files["listdir_root"] == ["all_bytes.bin", "log.txt", "sub/"]
  assert files["listdir_sub"] == ["a.txt", "b.txt", "deeper/"]
  assert files["glob_sub_txt"] == [f"{root}/sub/a.txt", f"{root}/sub/b.txt"]
  # The folder's own marker object "sub/" matches */* too.
  assert files["glob_star_star"] == [f"{root}/sub/", f"{root}/sub/a.txt", f"{root}/sub/b.txt",
                                     f"{root}/sub/deeper"]
  assert files["walk"] == [[root, ["sub/"], ["all_bytes.bin", "log.txt"]],
                           [f"{root}/sub/", ["deeper/"], ["a.txt", "b.txt"]],
                           [f"{root}/sub/deeper/", [], []]]


def test_copy_rename_remove_rmtree(checked, gcs):
  files, bucket = checked[0]["files"], checked[1]
  assert files["copied"] == "A"
  assert files["copy_onto_existing"]["type"] == "AlreadyExistsError"
  assert files["copied_after_refusal"] == "A"
  assert (files["renamed"], files["rename_source_exists"]) == ("A", False)
  assert files["rename_onto_existing"]["type"] == "AlreadyExistsError"
  assert files["rename_onto_existing"]["message"] == "file already exists"
  assert files["renamed_after_refusal"] == "A"
  assert files["renamed_after_overwrite"] == "B"
  assert files["folder_rename_listdir"] == ["a.txt", "deeper/"]
  assert files["folder_rename_a"] == "A"
  assert files["folder_rename_old_exists"] is False
  assert files["removed_exists"] is False
  assert files["remove_missing"]["type"] == "NotFoundError"
  assert files["read_missing"] == {
      "type": "NotFoundError", "module": "tensorflow.python.framework.errors_impl",
      "tf_error": True, "message": f"The specified path {bucket}/files/never.txt was not found."}
  assert files["after_rmtree_exists"] is False
  assert files["after_rmtree_listdir_root"] == ["all_bytes.bin", "log.txt"]
  assert gcs.list_objects(f"{bucket}/files/") == ["files/", "files/all_bytes.bin", "files/log.txt"]


def test_folders_with_and_without_marker(checked):
  folders = checked[0]["folders"]
  assert (folders["implied_exists"], folders["implied_isdir"]) == (True, True)
  assert folders["implied_listed"] == ["files/", "implied/"]
  assert (folders["marked_exists"], folders["marked_isdir"]) == (True, True)
  assert (folders["missing_exists"], folders["missing_isdir"]) == (False, False)
  assert folders["file_isdir"] is False
  assert folders["bucket_root_isdir"] is True
  # mkdir of an existing folder returns quietly: no create-if-absent through tf.io.gfile.
  assert folders["mkdir_twice"] == {"returned": "None"}
  assert folders["mkdir_over_implied"] == {"returned": "None"}


def test_another_writers_overwrite_is_read_whole(checked):
  assert checked[0]["overwrite"] == {"first": "short", "second": "a much longer second version"}


def test_tfrecords_plain_and_gzip(checked, gcs, tmp_path):
  import tensorflow as tf  # noqa: PLC0415
  records = checked[0]["tfrecords"]
  local = str(tmp_path / "local.tfrecord")
  with tf.io.TFRecordWriter(local) as writer:
    for record in RECORDS:
      writer.write(record)
  with open(local, "rb") as f:
    expected = f.read()
  for kind in ("plain", "GZIP"):
    assert [b64(r) for r in records[kind]["records"]] == RECORDS, kind
  bucket = checked[1]
  assert b64(records["plain"]["object"]) == expected
  assert gcs.get_object(f"{bucket}/records/plain.tfrecord") == expected
  assert gzip.decompress(gcs.get_object(f"{bucket}/records/GZIP.tfrecord")) == expected


def test_checkpoint_manager_keeps_two_and_restores_the_last(checked):
  ckpt = checked[0]["checkpoints"]
  directory = f"{checked[1]}/ckpt"
  assert ckpt["saved"] == [f"{directory}/ckpt-{n}" for n in (1, 2, 3)]
  assert ckpt["kept"] == [f"{directory}/ckpt-2", f"{directory}/ckpt-3"]
  assert ckpt["latest"] == f"{directory}/ckpt-3"
  assert ckpt["files"] == ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index",
                           "ckpt-3.data-00000-of-00001", "ckpt-3.index"]
  assert ckpt["step"] == 3
  np.testing.assert_array_equal(ckpt["weights"], np.arange(6).reshape(2, 3) + 3)


def test_saved_model_numerics(checked):
  saved = checked[0]["saved_model"]
  w = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
  b = np.array([0.1, -0.2], np.float32)
  np.testing.assert_array_equal(np.float32(saved["w"]), w)
  np.testing.assert_array_equal(np.float32(saved["b"]), b)
  x = np.float32(saved["x"])
  np.testing.assert_allclose(np.float32(saved["y"]), x @ w + b, rtol=1e-6, atol=1e-6)
  assert saved["has_pb"] is True


def test_summary_events_read_back(checked, gcs):
  summaries = checked[0]["summaries"]
  assert summaries == {"files": 1, "scalars": [[0, "loss", 0.5], [1, "loss", 0.25],
                                               [2, "loss", 0.125]]}
  events = [n for n in gcs.list_objects(f"{checked[1]}/logs/") if "tfevents" in n]
  assert len(events) == 1


def test_keras_model_and_weights_files(checked):
  keras_results = checked[0]["keras"]
  assert keras_results["reloaded"] == keras_results["original"]
  assert keras_results["weights_loaded"] == keras_results["original"]
  assert np.asarray(keras_results["original"]).shape == (2, 3)


def test_read_only_bucket_refuses_every_write(checked, gcs):
  bad, readonly = checked[0]["bad"], checked[2]
  assert bad["readonly_read"] == bad["readonly_still_there"] == "read me"
  for step, action in (("readonly_write", "when initiating an upload to"),
                       ("readonly_makedirs", "when uploading"),
                       ("readonly_remove", "when deleting"),
                       ("readonly_rename", "when renaming")):
    error = bad[step]
    assert error["type"] == "PermissionDeniedError", (step, error)
    assert "HTTP response code 403" in error["message"], (step, error)
    assert action in error["message"], (step, error)
  assert gcs.list_objects(readonly) == ["in.txt"]


def test_missing_bucket_errors(checked):
  bad, missing = checked[0]["bad"], checked[3]
  assert (bad["missing_exists"], bad["missing_root_exists"], bad["missing_root_isdir"]) == \
      (False, False, False)
  expected = {
      "missing_read": f"Error executing an HTTP request: HTTP response code 404\n\t when "
                      f"reading {missing}/x.txt/",
      "missing_listdir": f"Could not find directory {missing}",
      "missing_glob": f"Error executing an HTTP request: HTTP response code 404\n\t when "
                      f"reading {missing}/",
      "missing_mkdir_root": f"The specified bucket {missing}/ was not found.",
      "missing_write": f"Error executing an HTTP request: HTTP response code 404\n\t when "
                       f"initiating an upload to {missing}/x.txt",
  }
  for step, message in expected.items():
    assert bad[step] == {"type": "NotFoundError", "tf_error": True, "message": message,
                         "module": "tensorflow.python.framework.errors_impl"}, step
  # The write fails only at close: opening and writing to the missing bucket pass.
  assert bad["missing_write_steps"] == ["opened", "written"]
  # makedirs in a missing bucket never returns (TensorFlow 2.21 asks for the bucket in a
  # loop): callers must check the bucket first. If this starts failing, TensorFlow mended it.
  assert bad["missing_makedirs_running_after_3_s"] is True


def test_if_generation_match_zero_creates_once(gcs):
  bucket = gcs.new_bucket("generation")
  first = gcs.put_object(f"{bucket}/lock", b"first", if_generation_match=0)
  with pytest.raises(GcsEmulatorError, match="HTTP 412"):
    gcs.put_object(f"{bucket}/lock", b"second", if_generation_match=0)
  assert gcs.get_object(f"{bucket}/lock") == b"first"
  with pytest.raises(GcsEmulatorError, match="HTTP 412"):
    gcs.put_object(f"{bucket}/lock", b"third", if_generation_match=int(first["generation"]) + 1)
  gcs.put_object(f"{bucket}/lock", b"fourth", if_generation_match=first["generation"])
  assert gcs.get_object(f"{bucket}/lock") == b"fourth"


def test_proxy_refuses_every_other_host(gcs):
  proxy = gcs.env()["HTTPS_PROXY"]
  opener = urllib.request.build_opener(
      urllib.request.ProxyHandler({"https": proxy}),
      urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=gcs.ca_cert)))
  with pytest.raises(urllib.error.HTTPError) as refused:
    opener.open("https://example.com/", timeout=30)
  assert refused.value.code == 403
  assert "refuses host example.com" in refused.value.read().decode()


def test_stop_leaves_no_process_and_no_files(gcs):
  # A second emulator beside the session's (`gcs` only makes the test skip without one).
  emulator = GcsEmulator().start()
  pids = [p.pid for p in emulator._procs]
  workdir = emulator._workdir
  assert len(pids) == 2 and os.path.isdir(workdir)
  emulator.stop()
  for pid in pids:
    with pytest.raises(ProcessLookupError):
      os.killpg(pid, 0)  # signal 0: is any process of the group left?
  assert not os.path.exists(workdir)
  assert not emulator.running()


def test_missing_environment_gives_a_reason(tmp_path):
  emulator = GcsEmulator(venv=str(tmp_path / "no-venv"))
  assert emulator.available() is False
  assert emulator.why_unavailable == (
      f"GCS emulator environment {tmp_path / 'no-venv'} lacks its Python "
      f"({tmp_path / 'no-venv' / 'bin' / 'python'}); build it with `make gcs-emulator`")
  with pytest.raises(GcsEmulatorError, match="make gcs-emulator"):
    emulator.start()


def test_a_server_that_dies_at_start_fails_with_its_log(tmp_path):
  # A side environment that passes the availability check but whose Python exits at once.
  bin_dir = tmp_path / "venv" / "bin"
  bin_dir.mkdir(parents=True)
  (bin_dir / "python").write_text(
      '#!/bin/sh\n[ "$1" = "-c" ] && exit 0\necho "emulator exploded: $*" >&2\nexit 3\n')
  (bin_dir / "mitmdump").write_text("#!/bin/sh\nexit 1\n")
  for name in ("python", "mitmdump"):
    (bin_dir / name).chmod(0o755)
  emulator = GcsEmulator(venv=str(tmp_path / "venv"), start_timeout=10)
  assert emulator.available() is True
  with pytest.raises(GcsEmulatorError) as failed:
    emulator.start()
  # The failed start keeps its folder for the log; the test removes it.
  log_path = emulator.log_path
  shutil.rmtree(os.path.dirname(log_path))
  assert str(failed.value) == (
      f"the GCS emulator did not start (gcp-storage-emulator exited with status 3); log "
      f"{log_path}:\nemulator exploded: {CHECKS.replace('tf_checks.py', 'emulator_server.py')} "
      f"{os.path.join(os.path.dirname(log_path), 'emulator.port')}\n")
  assert not emulator.running()
