"""glibc told to keep the memory a process frees, so that big tensors reuse warm pages.

Why: glibc maps each block above its mmap threshold on its own and unmaps it on free, so
the next tensor of that size faults in every page again, zeroed by the kernel; a
fine-tuning step makes such tensors every step (the dense word-embedding gradient,
long-sequence activations). `keep_freed_memory` turns that off (bert/cli/launch.py
calls it), unless the C library is not glibc or the user set glibc's own malloc settings
or BERT_KEEP_FREED_MEMORY=0. docs/benchmarks_history.md has the measurements."""

import ctypes
import os

# glibc's malloc.h.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
TRIM_THRESHOLD_BYTES = 1 << 30

_GLIBC_TUNING = ("MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                 "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX")


def _glibc():
  """glibc's handle, or None on another C library (musl, macOS, Windows).

  The process's own symbols: no library search (ctypes.util.find_library("c") runs
  ldconfig in a subprocess, at every script's start)."""
  try:
    libc = ctypes.CDLL(None)
    version = libc.gnu_get_libc_version
  except (OSError, AttributeError):
    return None
  version.restype = ctypes.c_char_p
  return libc if version() else None


def keep_freed_memory(environ=None):
  """Sets the two mallopt values above; True when they were set."""
  environ = os.environ if environ is None else environ
  if environ.get("BERT_KEEP_FREED_MEMORY", "1") == "0":
    return False
  if any(name in environ for name in _GLIBC_TUNING) or "glibc.malloc" in environ.get(
      "GLIBC_TUNABLES", ""):
    return False
  libc = _glibc()
  if libc is None:
    return False
  libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
  return bool(libc.mallopt(M_MMAP_MAX, 0)) and bool(
      libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
