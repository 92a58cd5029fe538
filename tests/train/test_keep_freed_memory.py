"""``keep_freed_memory``: a training process reuses freed pages for large tensors (glibc)."""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys

import pytest

_PROBE = """
import resource, sys
import torch
if sys.argv[1] == "1":
    from gymkit.train.policy import keep_freed_memory
    assert keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    a = torch.ones(16 << 20)  # 64 MiB of float32: above glibc's 32 MiB mmap ceiling
    del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(keep: bool) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE, "1" if keep else "0"], check=True,
                         capture_output=True, text=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(platform.system() != "Linux" or not ctypes.util.find_library("c")
                    or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_large_allocations_reuse_their_pages() -> None:
    """40 allocations of 64 MiB fault 40 x 16,384 fresh pages by default (655,447 measured) and
    two to six arrays' worth once freed memory is kept (32,8xx-98,3xx measured): the TRL loop's
    9.2M faults per 20 steps."""
    pages = (16 << 20) * 4 // 4096
    assert _faults(False) > 30 * pages
    assert _faults(True) < 10 * pages
