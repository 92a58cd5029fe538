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


def _end(procs: list, grace: float) -> None:
    """Terminate ``procs``, then SIGKILL those still running ``grace`` seconds later (one
    deadline for all of them), and reap them all."""
    for proc in procs:
        proc.terminate()
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join()


def stop_pool(pool: ProcessPoolExecutor, grace: float = 5.0) -> None:
    """Shut ``pool`` down now, on an error or Ctrl-C: the work not started is cancelled, the
    workers are terminated (what they hold is dropped; SIGKILL for any still running after
    ``grace`` seconds) and reaped, then the pool's manager thread is joined (``grace`` at
    most), with SIGINT held off meanwhile (:func:`sigint_deferred`).

    CPython traps on the way (reached through ``_processes``, ``_executor_manager_thread``,
    ``_result_queue``, ``_broken`` and ``_cancel_pending_futures``, the same in 3.11-3.14):
    - a worker terminated while it sent a result leaves part of a message in the result pipe,
      which the manager thread may be reading: it waited for the rest for ever.  With every
      worker gone, closing this process's own write end of that pipe makes the read end-of-file,
      and the manager counts the pool broken and ends;
    - on 3.11 that broken path raised InvalidStateError (a traceback on stderr) for work the
      caller had already cancelled (``map``'s iterator cancels its futures on Ctrl-C), unless
      the manager had first dropped it, which ``shutdown(cancel_futures=True)`` asks it to
      do; a live pool's workers are terminated only once it has;
    - a pool already broken (a worker died) has a manager that, from 3.12, joins the other
      workers while holding the lock ``shutdown`` takes: they are ended first;
    - workers forked before the manager thread started (a start cut short) have no manager
      to stop them, and Python's exit waits for them: they are ended all the same."""
    with sigint_deferred():
        procs = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)
        results = getattr(pool, "_result_queue", None)
        if manager is None or results is None or getattr(pool, "_broken", False):
            _end(procs, grace)  # no manager, or one that may hold shutdown's lock
            if not procs and hasattr(pool, "terminate_workers"):  # a layout we do not know
                pool.terminate_workers()
            pool.shutdown(wait=manager is not None, cancel_futures=True)
            return
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + grace
        while (getattr(pool, "_cancel_pending_futures", False) and manager.is_alive()
               and time.monotonic() < deadline):
            time.sleep(0.002)
        _end(procs, grace)
        results._writer.close()
        manager.join(grace)
