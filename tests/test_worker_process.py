"""gymkit.worker_process.stop_pool: a pool stopped on an error or Ctrl-C ends every worker and
returns, whatever state the pool is in (tested in a child process: a hang shows as a timeout,
at the call or at the interpreter's exit, which joins non-daemon workers).

The double Ctrl-C of a working pool is tested through its users (tests/cli/test_scorefile_signals.py,
tests/train/test_answer_pool.py); here are the states the review of stop_pool found hanging:
workers forked before the pool's manager thread started (a start cut short), a broken pool
whose other workers ignore SIGTERM (3.12+'s manager holds shutdown's lock while it joins
them), and several workers ignoring SIGTERM (one shared grace period, not one each).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and signals")

SCRIPT = r'''
import os, signal, sys, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp
from gymkit.worker_process import stop_pool

def deaf():  # ignores SIGTERM: only SIGKILL ends it
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

def first_dies(i):
    if i == 0:
        os._exit(3)
    time.sleep(60)

def sleeps(i):
    time.sleep(60)

if __name__ == "__main__":
    case = sys.argv[1]
    ctx = mp.get_context("fork")
    if case == "cut-short start":
        pool = ProcessPoolExecutor(2, mp_context=ctx)
        pool._launch_processes()  # the workers exist, the manager thread does not
    elif case == "broken, deaf workers":
        pool = ProcessPoolExecutor(3, mp_context=ctx, initializer=deaf)
        futures = [pool.submit(first_dies, i) for i in range(3)]
        time.sleep(1.5)
    else:  # four deaf workers at work
        pool = ProcessPoolExecutor(4, mp_context=ctx, initializer=deaf)
        futures = [pool.submit(sleeps, i) for i in range(4)]
        time.sleep(1.0)
    procs = list(pool._processes.values())
    t = time.monotonic()
    stop_pool(pool, grace=2.0)
    print(round(time.monotonic() - t, 2), sum(p.is_alive() for p in procs), flush=True)
'''


@pytest.mark.parametrize("case, most", [("cut-short start", 3.0), ("broken, deaf workers", 5.0),
                                        ("four deaf workers", 5.0)])  # one grace each: 8 s
def test_stop_pool_ends_every_worker_and_returns(tmp_path: Path, case: str, most: float) -> None:
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    try:
        res = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True,
                             timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{case}: the stop or the exit hung") from None
    assert res.returncode == 0, res.stderr
    seconds, alive = res.stdout.split()
    assert alive == "0" and float(seconds) <= most, res.stdout
    assert "Exception in thread" not in res.stderr, res.stderr
