"""Quiet TensorFlow: its C++ runtime talk filtered out of stderr, unless asked for.

TensorFlow 2.21 writes some lines before any Python setting reaches it, among them an
`E0000 ... cuInit` line on every machine without a GPU: the word ERROR on every healthy
run teaches users to ignore errors. `quiet()`, called before TensorFlow is imported,
filters file descriptor 2 line by line: C++ INFO and WARNING lines and known-harmless
notices go, every other error and every fatal line gets through. --runtime_log (or
BERT_RUNTIME_LOG=1) leaves everything as TensorFlow prints it."""

import atexit
import contextlib
import logging
import os
import re
import sys
import tempfile
import threading

# glog-style lines of TensorFlow's C++ code: "I0000 00:00:1795382927.808695    5192
# cudart_stub.cc:31] ...". absl's Python logging uses the same layout with a .py file:
# those are ours (or TensorFlow's Python) and are never taken for runtime lines.
_CPP_LINE = re.compile(
    rb"^([IWEF])\d{4} [\d:.]+\s+\d+ [\w/-]+\.(?:cc|cpp|c|h):\d+\] ?(.*)")
# TensorFlow 2.20 writes some of them (cuInit's among them) in the older layout: "2026-11-29
# 05:06:02.738303: E external/local_xla/xla/stream_executor/cuda/cuda_platform.cc:51] ...".
_CPP_LINE_DATED = re.compile(
    rb"^\d{4}-\d{2}-\d{2} [\d:.]+: ([IWEF]) [\w/.-]+\.(?:cc|cpp|c|h):\d+\] ?(.*)")
_HARMLESS_ERRORS = (
    re.compile(rb"failed call to cuInit"),
    re.compile(rb"Unable to register cu(DNN|FFT|BLAS) factory"),
    re.compile(rb"computation placer already registered"),
    # An E line on healthy CPU runs (even on machines that have AVX-512): TensorFlow
    # falls back to its Eigen kernels for int64, which is the same arithmetic.
    re.compile(rb"oneDNN supports DT_INT64 only on platforms with AVX-512"),
)
_NOISE = (
    re.compile(rb"^WARNING: All log messages before absl::InitializeLog\(\) is called"),
    re.compile(rb"^To enable the following instructions: .* rebuild TensorFlow"),
    re.compile(rb"oneDNN custom operations are on"),
    re.compile(rb"^Memory patch applied"),
    re.compile(rb"Sharding callback duration"),
    # TensorFlow's Python side, through absl at INFO when a SavedModel is written.
    re.compile(rb"signature_serialization\.py:\d+\] Function `\w+` contains input name"),
    re.compile(rb"fingerprinting_utils\.py:\d+\] Writing fingerprint to "),
    re.compile(rb"builder_impl\.py:\d+\] Assets written to: "),
    re.compile(rb"\] Found untraced functions such as "),
)

_STATE = {}


def requested(argv=None):
  """True when the user asked for the full runtime log (--runtime_log, BERT_RUNTIME_LOG)."""
  argv = sys.argv if argv is None else argv
  if os.environ.get("BERT_RUNTIME_LOG", "") not in ("", "0"):
    return True
  return any(a in ("--runtime_log", "--runtime_log=true", "--runtime_log=True")
             for a in argv)


def is_noise(line):
  """True for a runtime line (bytes, no newline) that the filter drops."""
  match = _CPP_LINE.match(line) or _CPP_LINE_DATED.match(line)
  if match:
    severity, text = match.groups()
    if severity in (b"I", b"W"):
      return True
    return severity == b"E" and any(p.search(text) for p in _HARMLESS_ERRORS)
  return any(p.search(line) for p in _NOISE)


def quiet(argv=None):
  """Installs the filter (once per process) unless the full runtime log was asked for."""
  if _STATE or requested(argv):
    return
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  try:
    sys.stderr.flush()
    terminal = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
  except OSError:  # no usable stderr (closed, a strange host): leave it alone
    return
  thread = threading.Thread(target=_forward, args=(read_end, terminal), daemon=True,
                            name="runtime-log-filter")
  _STATE.update(terminal=terminal, thread=thread)
  thread.start()
  atexit.register(_restore)


def _forward(read_end, terminal):
  with os.fdopen(read_end, "rb", buffering=0) as pipe:
    pending = b""
    while True:
      chunk = pipe.read(65536)
      if not chunk:
        break
      pending += chunk
      *lines, pending = pending.split(b"\n")
      out = b"".join(line + b"\n" for line in lines if not is_noise(line))
      if out:
        os.write(terminal, out)
    if pending and not is_noise(pending):
      os.write(terminal, pending)


def _restore():
  """At exit: the real stderr back, and every line still in the pipe delivered."""
  terminal = _STATE.get("terminal")
  if terminal is None:
    return
  try:
    sys.stderr.flush()
  except (OSError, ValueError):
    pass
  os.dup2(terminal, 2)  # closes the pipe's last write end: the thread sees end of file
  _STATE["thread"].join(timeout=5)


def _write_all(fd, data):
  while data:
    data = data[os.write(fd, data):]


@contextlib.contextmanager
def stderr_to_file():
  """For a call into C++ that holds Python's lock while it writes to stderr (the LiteRT
  converter's MLIR diagnostics): file descriptor 2 goes to a temporary file during the
  call, and its lines then go into the pipe, through the filter, in order (os.write lets
  the filter's thread run). Writing into the filter's pipe, such a
  call blocks once the pipe is full, and the thread that empties the pipe cannot run
  without the lock: the process hangs. Without the filter (--runtime_log), a no-op."""
  if _STATE.get("terminal") is None:
    yield
    return
  sys.stderr.flush()
  pipe = os.dup(2)
  with tempfile.TemporaryFile(prefix="bert-stderr-") as spill:
    os.dup2(spill.fileno(), 2)
    try:
      yield
    finally:
      try:
        sys.stderr.flush()
      except (OSError, ValueError):
        pass
      os.dup2(pipe, 2)
      os.close(pipe)
      spill.seek(0)
      _write_all(2, spill.read())
