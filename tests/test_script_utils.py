"""script_utils: TFRecord framing check, TensorFlow error clean-up, one-line reporting."""
import os

import pytest
import tensorflow as tf

import script_utils


def _write_records(path, payloads):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for payload in payloads:
      writer.write(payload)
  return str(path)


def test_crc32c_matches_the_standard_check_value():
  # The CRC-32C check value of the ASCII digits 1..9 (RFC 3720, B.4).
  assert script_utils._crc32c(b"123456789") == 0xE3069283


def test_framing_counts_records_of_a_good_file(tmp_path):
  path = _write_records(tmp_path / "a.tfrecord", [b"x" * n for n in (0, 1, 300, 70000)])
  assert script_utils.check_tfrecord_framing(path) == 4
  assert script_utils.check_tfrecord_framing(_write_records(tmp_path / "e.tfrecord", [])) == 0


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
  with pytest.raises(script_utils.UserError) as info:
    script_utils.check_tfrecord_framing(path, "input_file")
  text = str(info.value)
  assert text.startswith(f"--input_file: {path} record {record} at byte ")
  assert message.replace("cut short", "is cut short") in text
  assert "truncated" in text and "recreate it" in text


def test_a_cut_between_records_is_a_shorter_valid_file(tmp_path):
  path = _write_records(tmp_path / "t.tfrecord", [b"a" * 9, b"b" * 9, b"c" * 20])
  with open(path, "r+b") as handle:
    handle.truncate(50)
  assert script_utils.check_tfrecord_framing(path) == 2


def test_framing_rejects_a_text_file(tmp_path):
  path = tmp_path / "corpus.txt"
  path.write_text("the cat sat on the mat .\n" * 10, encoding="utf-8")
  with pytest.raises(script_utils.UserError, match="corpus.txt is not a TFRecord file .bad record header 0 "
                                                   "at byte 0"):
    script_utils.check_tfrecord_framing(str(path))


def test_tensorflow_runtime_error_is_one_clean_line(capsys):
  message = ("Graph execution error:\n\nDetected at node IteratorGetNext defined at (most "
             "recent call last):\n<stack traces unavailable>\ntruncated record at 2205' "
             "failed with Read less bytes than requested\n\t [[{{node IteratorGetNext}}]]"
             "\n\t [[RemoteCall]] [Op:__inference_train_loop_8312]")
  with pytest.raises(SystemExit) as info:
    with script_utils.report_user_errors(program="run_x.py"):
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
    with script_utils.report_user_errors(program="p"):
      list(tf.data.TFRecordDataset(path))
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and err.startswith("p: error: ")
  assert "[[" not in err and "Op:" not in err and "recreate it" in err
