"""What every scoring worker process does at its start, whatever pool runs it."""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["die_with_parent"]


def die_with_parent(parent: int) -> None:
    """Linux: ask the kernel for SIGTERM when the process ``parent`` (this worker's creator)
    dies (``PR_SET_PDEATHSIG``), so a parent killed with SIGKILL leaves no worker waiting for
    ever on its queue; exit at once if it is gone already.  Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
