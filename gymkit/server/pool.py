"""A supervised pool of scoring processes, forked from a zygote that holds the environment.

Design (why not ``ProcessPoolExecutor``): one dead or hung worker must cost exactly one
request, and every worker must be told about archive commits.  ``ProcessPoolExecutor`` breaks
as a whole when a worker dies (every in-flight future fails with ``BrokenProcessPool``), cannot
kill one hung worker, and cannot address a particular worker.  So:

* **Zygote.**  :meth:`WorkerPool.start` forks one *zygote* process from the caller — which
  has already built the environment and has no server threads yet.  Every worker, at start
  and on every replacement, is forked by the single-threaded zygote, so it inherits the
  built environment (compiled kernels, panels, archive) copy-on-write, shares its pages, and
  is never forked from the multi-threaded server process.  The zygote hands each new worker's
  socket to the server over a Unix socket (``SCM_RIGHTS``).
* **Workers.**  Each serves one job at a time over its own socket pair: receive
  ``(kind, payload)``, run :func:`gymkit.server.jobs.run_job`, send the result.  A worker
  exits when its socket closes (server gone or pool closed).
* **Server side.**  Idle workers wait in an ``asyncio.Queue``; a request takes one, and a
  thread of a small I/O pool does the blocking send/receive, so the event loop only awaits.
  The number of admitted jobs (running + waiting) is bounded by ``queue_limit``: beyond it
  :class:`PoolError` 429 ``queue_full``.  A worker whose socket dies mid-job (killed, crashed)
  answers 503 ``worker_died``; one that exceeds ``job_timeout_s`` is killed and answers 503
  ``worker_timeout``; either way it is replaced by a fresh fork from the zygote.  No failure
  ever becomes a score.
* **Archive.**  The pool keeps the current archive state (version, digest, snapshot bytes).
  Commits are serialised; before a worker runs a job, a worker on an older state first
  restores the current snapshot, so every card reports the archive it was scored against and
  all workers agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import struct
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from .jobs import JobError, run_job

__all__ = ["PoolError", "WorkerPool"]


class PoolError(Exception):
    """The pool could not run a job: HTTP ``status`` (429/503), a stable ``code``, a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class _WorkerLost(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class _Worker:
    pid: int
    conn: Connection
    archive: tuple[int, str]


# ------------------------------------------------------------------ child processes
def _worker_main(conn: Connection, env: Any) -> None:
    """Serve jobs on ``conn`` until it closes; never returns (``os._exit``)."""
    code = 0
    try:
        while True:
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):
                break
            try:
                reply: tuple = ("ok", run_job(env, kind, payload))
            except JobError as exc:
                reply = ("job_error", exc.code, exc.message)
            except Exception as exc:  # reported as a code, never as a traceback
                reply = ("error", "internal_error", type(exc).__name__)
            try:
                conn.send(reply)
            except OSError:
                break
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _zygote_main(ctrl: socket.socket, env: Any) -> None:
    """Fork a worker per byte received on ``ctrl``; send back (pid, socket fd).  Never returns."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped automatically
    try:
        while True:
            if not ctrl.recv(1):
                break  # the server closed the pool or died
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                ctrl.close()
                ours.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _worker_main(Connection(theirs.detach()), env)
            theirs.close()
            socket.send_fds(ctrl, [struct.pack("<q", pid)], [ours.fileno()])
            ours.close()
    finally:
        os._exit(0)


def _send_recv(conn: Connection, message: tuple) -> tuple:
    conn.send(message)
    return conn.recv()


# ---------------------------------------------------------------------- the pool
class WorkerPool:
    """Scoring processes for one environment (module doc).  Create, :meth:`start`, use
    :meth:`run` / :meth:`commit` from the event loop, :meth:`aclose` (or :meth:`close`)."""

    def __init__(self, env: Any, workers: int = 2, *, queue_limit: int = 64,
                 job_timeout_s: float = 120.0) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.env = env
        self.n_workers = int(workers)
        self.queue_limit = int(queue_limit)
        self.job_timeout_s = float(job_timeout_s)
        arc = env.archive
        self._base_archive = (arc.version, arc.digest)
        self.archive_key: tuple[int, str] = self._base_archive
        self.archive_size = len(arc)
        self.archive_capacity = arc.capacity
        self._archive_blob: bytes | None = None
        self.pending = 0
        self.restarts: Counter[str] = Counter()
        self.jobs_done = 0
        self._workers: dict[int, _Worker] = {}
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._ctrl: socket.socket | None = None
        self._ctrl_lock = threading.Lock()
        self._zygote_pid: int | None = None
        self._io = ThreadPoolExecutor(max_workers=self.n_workers + 2, thread_name_prefix="gk-pool")
        self._commit_lock: asyncio.Lock | None = None
        self._closing = False
        self._broken = False

    # ------------------------------------------------------------- lifecycle
    def start(self) -> WorkerPool:
        """Fork the zygote and the workers (call before the server starts its threads)."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _zygote_main(theirs, self.env)
        theirs.close()
        self._ctrl, self._zygote_pid = ours, pid
        started = [self._spawn() for _ in range(self.n_workers)]
        self._ready_workers = started
        return self

    def _spawn(self) -> _Worker:
        """Ask the zygote for one new worker (blocking; start() or an I/O thread)."""
        if self._ctrl is None:
            raise PoolError(503, "pool_unavailable", "the worker pool is not running")
        try:
            with self._ctrl_lock:
                self._ctrl.sendall(b"S")
                msg, fds, _, _ = socket.recv_fds(self._ctrl, 8, 1)
        except OSError:
            msg, fds = b"", []
        if len(msg) != 8 or len(fds) != 1:
            raise PoolError(503, "pool_unavailable", "the worker pool cannot start workers")
        w = _Worker(struct.unpack("<q", msg)[0], Connection(fds[0]), self._base_archive)
        self._workers[w.pid] = w
        return w

    def _queue(self) -> asyncio.Queue[_Worker | None]:
        if self._idle is None:  # bound to the running loop on first use
            self._idle = asyncio.Queue()
            for w in self._ready_workers:
                self._idle.put_nowait(w)
            self._ready_workers = []
            self._commit_lock = asyncio.Lock()
        return self._idle

    @property
    def alive(self) -> int:
        """Workers currently running (busy or idle)."""
        return len(self._workers)

    @property
    def ready(self) -> bool:
        """True while the pool can take jobs."""
        return self._ctrl is not None and not self._closing and not self._broken and self.alive > 0

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for operators and fault tests)."""
        return sorted(self._workers)

    async def aclose(self, timeout_s: float = 60.0) -> None:
        """Stop taking jobs, let admitted ones finish (up to ``timeout_s``), then stop all."""
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.pending > 0 and loop.time() < deadline:
            await asyncio.sleep(0.02)
        await loop.run_in_executor(None, self.close)

    def close(self) -> None:
        """Stop every process now (workers exit on EOF; stragglers are killed)."""
        self._closing = True
        for w in list(self._workers.values()):
            with contextlib.suppress(OSError):
                w.conn.close()
        if self._ctrl is not None:
            with contextlib.suppress(OSError):
                self._ctrl.close()
            self._ctrl = None
        if self._zygote_pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._zygote_pid, 0)
            self._zygote_pid = None
        for pid in list(self._workers):
            self._kill(pid)
        self._workers.clear()
        self._io.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------- jobs
    async def run(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Run one job on a worker; raises :class:`PoolError` (429/503) or ``JobError``."""
        if self._closing:
            raise PoolError(503, "shutting_down", "the server is shutting down")
        if self.pending >= self.queue_limit:
            raise PoolError(429, "queue_full",
                            f"{self.pending} jobs admitted, the queue limit is {self.queue_limit}")
        self.pending += 1
        try:
            worker = await self._acquire()
            # shielded: a cancelled request still returns its worker to the pool
            return await asyncio.shield(asyncio.ensure_future(self._execute(worker, kind, payload)))
        finally:
            self.pending -= 1

    async def commit(self, payload: dict[str, Any], expected_version: int | None) -> dict[str, Any]:
        """Serialised archive commit; ``expected_version`` (if given) must be current (409)."""
        self._queue()
        assert self._commit_lock is not None
        async with self._commit_lock:
            if expected_version is not None and expected_version != self.archive_key[0]:
                raise PoolError(409, "archive_version_conflict",
                                f"expected archive version {expected_version}, current is "
                                f"{self.archive_key[0]}")
            return await self.run("commit", payload)

    async def _acquire(self) -> _Worker:
        q = self._queue()
        w = await q.get()
        if w is None:  # the pool broke: pass the news on to the next waiter
            q.put_nowait(None)
            raise PoolError(503, "pool_unavailable", "no scoring workers are available")
        return w

    async def _execute(self, w: _Worker, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            if w.archive != self.archive_key and self._archive_blob is not None:
                state = self._unwrap(await self._roundtrip(w, "restore", {"blob": self._archive_blob}))
                w.archive = (state["version"], state["digest"])
            reply = await self._roundtrip(w, kind, payload)
        except _WorkerLost as lost:
            self.restarts[lost.code] += 1
            self._replace(w)
            what = ("was killed or crashed" if lost.code == "worker_died"
                    else f"exceeded the {self.job_timeout_s:g} s wall-clock limit and was killed")
            raise PoolError(503, lost.code, f"the scoring worker {what}; retry the request") from None
        if reply[0] == "ok" and kind == "commit":
            res = reply[1]
            self._archive_blob = res.pop("blob")
            self.archive_key = w.archive = (res["version"], res["digest"])
            self.archive_size = res["size"]
        self.jobs_done += 1
        self._queue().put_nowait(w)
        return self._unwrap(reply)

    @staticmethod
    def _unwrap(reply: tuple) -> dict[str, Any]:
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == "job_error":
            raise JobError(reply[1], reply[2])
        raise PoolError(500, reply[1], "the scoring worker failed on this request")

    async def _roundtrip(self, w: _Worker, kind: str, payload: dict[str, Any]) -> tuple:
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._io, _send_recv, w.conn, (kind, payload))
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.job_timeout_s)
        except TimeoutError:
            self._kill(w.pid)
            with contextlib.suppress(Exception):
                await fut
            raise _WorkerLost("worker_timeout") from None
        except (EOFError, OSError):
            self._kill(w.pid)
            raise _WorkerLost("worker_died") from None

    @staticmethod
    def _kill(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)

    def _replace(self, w: _Worker) -> None:
        self._workers.pop(w.pid, None)
        with contextlib.suppress(OSError):
            w.conn.close()
        if self._closing:
            return
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._io, self._spawn)

        def done(f: asyncio.Future) -> None:
            if f.cancelled() or f.exception() is not None:
                self._broken = self.alive == 0
                if self._broken:
                    self._queue().put_nowait(None)
                return
            self._queue().put_nowait(f.result())

        fut.add_done_callback(done)
