"""errors: TFRecord framing check, TensorFlow error clean-up, one-line reporting."""
import os

import pytest
import tensorflow as tf

from bert.utils import errors
from bert.utils import tfrecord_framing


def _write_records(path, payloads):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for payload in payloads:
      writer.write(payload)
  return str(path)


def test_crc32c_matches_the_standard_check_value():
  # The CRC-32C check value of the ASCII digits 1..9 (RFC 3720, B.4).
  assert tfrecord_framing._crc32c(b"123456789") == 0xE3069283


def test_framing_counts_records_of_a_good_file(tmp_path):
  path = _write_records(tmp_path / "a.tfrecord", [b"x" * n for n in (0, 1, 300, 70000)])
  assert tfrecord_framing.check_tfrecord_framing(path) == 4
  assert tfrecord_framing.check_tfrecord_framing(_write_records(tmp_path / "e.tfrecord", [])) == 0


@pytest.mark.parametrize("cut, record, message", [
    (1, 2, "record 2 at byte 50 needs 36 bytes but the file ends after 35"),
    (30, 2, "record 2 at byte 50 cut short (the file ends inside its header)"),
    (40, 1, "record 1 at byte 25 needs 25 bytes but the file ends after 21"),
])
def test_framing_names_the_truncated_record(tmp_path, cut, record, message):
  # Records of 9, 9 and 20 data bytes: 25 + 25 + 36 = 86 bytes in all.
  path = _write_records(tmp_path / "t.tfrecord", [b"a" * 9, b"b" * 9, b"c" * 20])
  assert os.path.getsize(path) == 86
  with open(path, "r+b") as handle:
    handle.truncate(86 - cut)
  with pytest.raises(errors.UserError) as info:
    tfrecord_framing.check_tfrecord_framing(path, "input_file")
  text = str(info.value)
  assert text.startswith(f"--input_file: {path} record {record} at byte ")
  assert message.replace("cut short", "is cut short") in text
  assert "truncated" in text and "recreate it" in text


def test_a_cut_between_records_is_a_shorter_valid_file(tmp_path):
  path = _write_records(tmp_path / "t.tfrecord", [b"a" * 9, b"b" * 9, b"c" * 20])
  with open(path, "r+b") as handle:
    handle.truncate(50)
  assert tfrecord_framing.check_tfrecord_framing(path) == 2


def test_framing_rejects_a_text_file(tmp_path):
  path = tmp_path / "corpus.txt"
  path.write_text("the cat sat on the mat .\n" * 10, encoding="utf-8")
  with pytest.raises(errors.UserError, match="corpus.txt is not a TFRecord file .bad record header 0 "
                                                   "at byte 0"):
    tfrecord_framing.check_tfrecord_framing(str(path))


def test_tensorflow_runtime_error_is_one_clean_line(capsys):
  message = ("Graph execution error:\n\nDetected at node IteratorGetNext defined at (most "
             "recent call last):\n<stack traces unavailable>\ntruncated record at 2205' "
             "failed with Read less bytes than requested\n\t [[{{node IteratorGetNext}}]]"
             "\n\t [[RemoteCall]] [Op:__inference_train_loop_8312]")
  with pytest.raises(SystemExit) as info:
    with errors.report_user_errors(program="run_x.py"):
      raise tf.errors.DataLossError(None, None, message)
  assert info.value.code == 2
  assert capsys.readouterr().err == (
      "run_x.py: error: truncated record at 2205' failed with Read less bytes than "
      "requested; an input TFRecord file is truncated or corrupt (an interrupted copy?): "
      "recreate it\n")


def test_real_data_loss_error_from_a_truncated_file(tmp_path, capsys):
  path = _write_records(tmp_path / "t.tfrecord", [b"a" * 9, b"b" * 20])
  with open(path, "r+b") as handle:
    handle.truncate(40)
  with pytest.raises(SystemExit):
    with errors.report_user_errors(program="p"):
      list(tf.data.TFRecordDataset(path))
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and err.startswith("p: error: ")
  assert "[[" not in err and "Op:" not in err and "recreate it" in err


# --------------------------------------------------------------------------- what is caught


def _report(exc, capsys, verbose=False):
  """(exit code, stderr) of report_user_errors around `raise exc`."""
  with pytest.raises(SystemExit) as info:
    with errors.report_user_errors(verbose=verbose, program="p.py"):
      raise exc
  return info.value.code, capsys.readouterr().err


@pytest.mark.parametrize("bug", [
    ValueError("the dataset lacks the model inputs ['input_ids']"),
    TypeError("unsupported operand type(s) for +: 'int' and 'str'"),
    KeyError("label_ids"),
    tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [4,2] vs. [4,3]"),
])
def test_a_bug_keeps_its_traceback(bug):
  """Only bad input is one line; a bare ValueError, a shape error... propagate as they are."""
  with pytest.raises(type(bug)) as info:
    with errors.report_user_errors(program="p.py"):
      raise bug
  assert info.value is bug


def test_input_errors_are_one_line_without_a_verbose_hint(capsys):
  from bert.utils import file_io  # pylint: disable=g-import-not-at-top
  assert issubclass(errors.UserError, ValueError)
  assert issubclass(file_io.UrlError, errors.UserError)
  for exc in (errors.UserError("--x=1: bad"), file_io.UrlError("--x=1", "bad")):
    assert _report(exc, capsys) == (2, "p.py: error: --x=1: bad\n")


def test_a_library_error_that_may_hide_a_bug_says_verbose_shows_the_traceback(capsys):
  code, err = _report(tf.errors.NotFoundError(None, None, "model/ckpt-3.index"), capsys)
  assert (code, err) == (2, "p.py: error: model/ckpt-3.index (--verbose shows the "
                            "traceback)\n")
  code, err = _report(tf.errors.NotFoundError(None, None, ""), capsys)
  assert err == "p.py: error: NotFoundError without a message (--verbose shows the traceback)\n"
  code, err = _report(OSError("no filename"), capsys)
  assert err == "p.py: error: no filename (--verbose shows the traceback)\n"
  code, err = _report(tf.errors.NotFoundError(None, None, "gone"), capsys, verbose=True)
  assert "Traceback (most recent call last):" in err
  assert err.splitlines()[-1] == "p.py: error: gone (--verbose shows the traceback)"


def test_flag_and_os_errors_are_one_line(capsys):
  from absl import flags  # pylint: disable=g-import-not-at-top
  assert _report(flags.IllegalFlagValueError("flag --n=x: not an int"), capsys) == (
      2, "p.py: error: flag --n=x: not an int\n")
  missing = FileNotFoundError(2, "No such file or directory", "/data/x.tsv")
  assert _report(missing, capsys) == (2, "p.py: error: /data/x.tsv: No such file or "
                                         "directory\n")


class SafetensorError(Exception):
  """safetensors' error class (a Rust exception: no errno, the cause in the text)."""


@pytest.mark.parametrize("exc,path", [
    (OSError(28, "No space left on device", "/out/features.jsonl"), "/out/features.jsonl"),
    (tf.errors.ResourceExhaustedError(
        None, None, "/out/.x.tfrecord.tmp-1a2b3c4d; No space left on device"), None),
    (SafetensorError("Error while serializing: IoError(Os { code: 28, kind: StorageFull, "
                     "message: \"No space left on device\" })"), None),
])
def test_a_full_disk_is_one_line_whoever_raises_it(exc, path, capsys):
  code, err = _report(exc, capsys)
  where = path or "the output"
  assert (code, err) == (2, f"p.py: error: could not write {where}: the disk is full (No "
                            "space left on device)\n")
  assert errors.is_disk_full(exc)
  assert errors.disk_full_message("/a/b") == (
      "could not write /a/b: the disk is full (No space left on device)")


def test_out_of_memory_is_one_line_with_what_to_lower(capsys):
  code, err = _report(tf.errors.ResourceExhaustedError(
      None, None, "OOM when allocating tensor with shape[512,30522]"), capsys)
  assert (code, err) == (2, "p.py: error: out of memory (OOM when allocating tensor with "
                            "shape[512,30522]); lower --train_batch_size, --eval_batch_size "
                            "or --max_seq_length\n")


def test_our_own_disk_full_message_is_kept(capsys):
  exc = errors.UserError("--output_dir=/o: could not save ckpt-4 (the disk is full: No "
                               "space left on device); the last good checkpoint is kept")
  assert _report(exc, capsys) == (2, f"p.py: error: {exc}\n")


def test_storage_that_stops_answering_is_one_line_its_traceback_behind_verbose(capsys):
  cut = tf.errors.AbortedError(None, None, "All 1 retry attempts failed\n\t when "
                               "initiating an upload to gs://b/out/eval_results.txt")
  assert _report(cut, capsys) == (2, (
      "p.py: error: the storage stopped answering (All 1 retry attempts failed when "
      "initiating an upload to gs://b/out/eval_results.txt); rerun the same command once it "
      "answers again (a training run resumes from its newest whole checkpoint) (--verbose "
      "shows the traceback)\n"))
  code, err = _report(cut, capsys, verbose=True)
  assert code == 2 and err.startswith("Traceback") and "AbortedError" in err
  # A run's own line (the flag, the step) keeps TensorFlow's error behind --verbose.
  try:
    raise cut
  except tf.errors.AbortedError as exc:
    named = errors.UserError("--output_dir=gs://b/out: the storage stopped answering")
    named.__cause__ = exc
  code, err = _report(named, capsys, verbose=True)
  assert "AbortedError" in err and err.endswith(
      "p.py: error: --output_dir=gs://b/out: the storage stopped answering\n")
  # An unavailable peer (gRPC) is not a storage failure: its traceback stays.
  with pytest.raises(tf.errors.UnavailableError):
    with errors.report_user_errors(program="p.py"):
      raise tf.errors.UnavailableError(None, None, "Socket closed grpc://localhost:1")
