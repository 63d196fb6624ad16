"""cpu_memory.keep_freed_memory: a big block freed and allocated again reuses warm pages."""

import subprocess
import sys
import textwrap

from bert.utils import cpu_memory

ROOT = __file__.rsplit("/tests/", 1)[0]

# In a fresh interpreter (mallopt is process-wide): a 64 MiB block allocated, written,
# freed, then allocated and written again; prints the minor page faults of the second.
_PROBE = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, {root!r})
    import numpy as np
    from bert.utils import cpu_memory
    print(cpu_memory.keep_freed_memory({environ!r}))
    size = 64 << 20
    block = np.ones(size // 8); del block
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = np.ones(size // 8)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _second_allocation_faults(environ):
  out = subprocess.run([sys.executable, "-c", _PROBE.format(root=ROOT, environ=environ)],
                       capture_output=True, text=True, check=True).stdout.split()
  return out[0] == "True", int(out[1])


def test_freed_big_block_is_reused_without_page_faults():
  if cpu_memory._glibc() is None:  # pylint: disable=protected-access
    assert cpu_memory.keep_freed_memory({}) is False  # other C libraries: left alone
    return
  kept, kept_faults = _second_allocation_faults({})
  opted_out, default_faults = _second_allocation_faults({"BERT_KEEP_FREED_MEMORY": "0"})
  assert kept and not opted_out
  # glibc's default maps a 64 MiB block afresh and faults its pages in again: at least
  # one per 2 MiB huge page (numpy advises them), 544 where this was written. Kept: the
  # freed pages are reused, 0 there.
  assert default_faults >= 32
  assert kept_faults * 10 < default_faults, (kept_faults, default_faults)


def test_users_allocator_settings_win():
  for environ in ({"BERT_KEEP_FREED_MEMORY": "0"}, {"MALLOC_ARENA_MAX": "2"},
                  {"MALLOC_TRIM_THRESHOLD_": "0"},
                  {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=10"}):
    assert cpu_memory.keep_freed_memory(environ) is False, environ
