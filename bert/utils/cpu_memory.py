"""glibc told to keep the memory a process frees, so that big tensors reuse warm pages.

The commands that run a TensorFlow
model call `keep_freed_memory()` before their work (bert/cli/launch.py).

Why: TensorFlow allocates every CPU tensor with malloc. glibc serves a block above its
mmap threshold (adaptive, at most 32 MiB on 64-bit Linux) with a mapping of its own and
unmaps it on free, so the next tensor of that size faults in every 4 KiB page again, and
the kernel zeroes each one. A fine-tuning step makes such tensors every step: the
word-embedding gradient made dense (30,522 x 384 floats = 47 MB for the MiniLM, 94 MB
for BERT-Base), and attention and feed-forward activations at long sequences.
docs/benchmarks.md has the measurements: a fresh tensor's page faults, and the
fine-tuning loop's speed with freed memory kept, at the same peak resident memory.

What: mallopt(M_MMAP_MAX, 0): no block gets a mapping of its own, the heaps grow
instead; mallopt(M_TRIM_THRESHOLD, 1 GiB): up to that much free memory at the top of a
heap is kept, not handed back. What a process frees stays in it for its next allocation;
its resident memory no longer shrinks after a peak.

Left alone (returns False): a C library other than glibc, and a user who set any of
glibc's MALLOC_* variables, a glibc.malloc tunable (their choice wins) or
BERT_KEEP_FREED_MEMORY=0.
"""

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
