"""What every scoring worker pool does at its workers' start and at its own early stop, whatever
pool runs it (``score-file``'s local engine, the training loop's answer pool)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

__all__ = ["die_with_parent", "sigint_deferred", "stop_pool"]


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


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Ignore SIGINT for the block (main thread only; elsewhere a no-op): a second Ctrl-C
    during a pool's cleanup cut it short and left the workers running, the command hung on
    their join."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def stop_pool(pool: ProcessPoolExecutor, grace: float = 5.0) -> None:
    """Shut ``pool`` down now, on an error or Ctrl-C: the work not started is cancelled, the
    workers are terminated (what they hold is dropped; SIGKILL after ``grace`` seconds) and
    joined, then the pool's manager thread, with SIGINT held off meanwhile
    (:func:`sigint_deferred`).

    Two CPython traps on the way (reached through ``_processes``, ``_executor_manager_thread``,
    ``_result_queue`` and ``_cancel_pending_futures``, the same in 3.11-3.14):
    - a worker terminated while it sent a result leaves part of a message in the result pipe,
      which the manager thread may be reading: it waited for the rest for ever.  With every
      worker gone, closing this process's own write end of that pipe makes the read end-of-file,
      and the manager counts the pool broken and ends;
    - on 3.11 that broken path raised InvalidStateError (a traceback on stderr) for work the
      caller had already cancelled (``map``'s iterator cancels its futures on Ctrl-C), unless
      the manager had first dropped it, which ``shutdown(cancel_futures=True)`` asks it to
      do; the workers are terminated only once it has."""
    with sigint_deferred():
        procs = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)
        results = getattr(pool, "_result_queue", None)
        if not procs or manager is None or results is None:  # nothing started, or unknown
            if procs and hasattr(pool, "terminate_workers"):
                pool.terminate_workers()
            pool.shutdown(wait=True, cancel_futures=True)
            return
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + grace
        while (getattr(pool, "_cancel_pending_futures", False) and manager.is_alive()
               and time.monotonic() < deadline):
            time.sleep(0.002)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(grace)
            if proc.is_alive():
                proc.kill()
                proc.join()
        results._writer.close()
        manager.join()
