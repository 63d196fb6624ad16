"""TFRecord framing, checked before a long run reads the file: CRC-32C and the record headers.

A TFRecord file cut short (an interrupted copy, a full disk) would fail inside a
training step, without the file's name; `check_tfrecord_framing` walks its record
headers before training starts and names the file and the first record cut short.
"""

import struct

from bert.utils import file_io
from bert.utils import errors

_CRC32C_TABLE = []


def _crc32c(data):
  """CRC-32C (Castagnoli), the checksum of TFRecord framing; pure Python, for headers."""
  if not _CRC32C_TABLE:
    for n in range(256):
      c = n
      for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
      _CRC32C_TABLE.append(c)
  crc = 0xFFFFFFFF
  for byte in data:
    crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
  return crc ^ 0xFFFFFFFF


def _masked_crc32c(data):
  crc = _crc32c(data)
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def check_tfrecord_framing(path, flag_name="input_file"):
  """Walks the record headers of a local TFRecord file; returns its number of records.

  TFRecord framing is [length uint64][masked crc32c of length][data][masked crc32c of
  data]. Only the 12-byte headers are read (a seek over each record's data; its speed is
  in docs/benchmarks_history.md); a file cut short (an interrupted copy or write) or one that is
  not a TFRecord file fails now, with a UserError naming the file and record,
  instead of hours later deep inside a training step. Data checksums are not verified
  here (TensorFlow does it while reading). A URL is walked the same way.
  """
  size = file_io.getsize(path)
  offset = index = 0
  good_headers = set()  # records of one file mostly share a few lengths: check each once
  with file_io.open_binary(path) as handle:
    while offset < size:
      header = handle.read(12)
      if len(header) < 12:
        raise errors.UserError(
            f"--{flag_name}: {path} record {index} at byte {offset} is cut short (the file "
            f"ends inside its header): the file is truncated; recreate it")
      length, length_crc = struct.unpack("<QI", header)
      if header not in good_headers:
        if _masked_crc32c(header[:8]) != length_crc:
          raise errors.UserError(
              f"--{flag_name}: {path} is not a TFRecord file (bad record header {index} at "
              f"byte {offset}); pass TFRecords written by this project's scripts")
        good_headers.add(header)
      end = offset + 12 + length + 4
      if end > size:
        raise errors.UserError(
            f"--{flag_name}: {path} record {index} at byte {offset} needs {end - offset} "
            f"bytes but the file ends after {size - offset}: the file is truncated (an "
            "interrupted copy or write?); recreate it")
      offset = end
      index += 1
      handle.seek(offset)
  return index
