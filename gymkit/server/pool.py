"""A supervised pool of scoring processes, forked from zygotes that hold the environment.

Design (why not ``ProcessPoolExecutor``): one dead or hung worker must cost exactly one
request, and every worker must be told about archive commits.  ``ProcessPoolExecutor`` breaks
as a whole when a worker dies (every in-flight future fails with ``BrokenProcessPool``), cannot
kill one hung worker, and cannot address a particular worker.  So:

* **Zygotes.**  :meth:`WorkerPool.start` forks two *zygotes* (an active one and a standby)
  from the caller — which has already built the environment and has no server threads yet.
  Workers are forked by the single-threaded active zygote, so each inherits the built
  environment (compiled kernels, panels, archive) copy-on-write and is never forked from the
  multi-threaded server process.  A zygote hands each new worker's socket to the server over
  a Unix socket (``SCM_RIGHTS``).  If the active zygote dies, the standby takes over and forks
  a new standby of itself; only if both are gone is a zygote forked from the server process
  (last resort).
* **Workers.**  Each serves one job at a time over its own socket pair: receive
  ``(kind, payload)``, run :func:`gymkit.server.jobs.run_job`, send the result.  A worker
  exits when its socket closes (server gone or pool closed).
* **Supervision.**  A task on the event loop checks every ``check_interval_s`` that idle
  workers and zygotes are alive (an idle peer's socket turns readable only when it dies) and
  tops the pool up to ``workers``; a request also checks the idle worker it takes, so a worker
  that died while idle never costs a request.  :attr:`alive` counts live workers,
  :attr:`serviceable` is False only when no worker is alive and none can be started.
* **Server side.**  Idle workers wait in an ``asyncio.Queue``; a request takes one, and a
  thread of a small I/O pool does the blocking send/receive, so the event loop only awaits.
  The number of admitted jobs (running + waiting) is bounded by ``queue_limit``: beyond it
  :class:`PoolError` 429 ``queue_full``.  A worker whose socket dies mid-job (killed, crashed)
  answers 503 ``worker_died``; one that exceeds ``job_timeout_s`` is killed and answers 503
  ``worker_timeout``; either way it is replaced.  No failure ever becomes a score.
* **Archive.**  The pool keeps the current archive state (version, digest, snapshot bytes),
  persisted in an :class:`~gymkit.archive_db.ArchiveDB` (SQLite; ``":memory:"`` by default).
  Commits are serialised by the database's write lock (across processes too) and start from
  the stored head; before a worker runs a job, a worker on an older state first restores the
  current snapshot, so every card reports the archive it was scored against and all workers
  agree.  A file-backed pool follows commits made by other processes before each job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import socket
import struct
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from gymkit.archive_db import ArchiveDB, Transaction

from .jobs import JobError, run_job

__all__ = ["PoolError", "WorkerPool"]


class PoolError(Exception):
    """The pool could not run a job: HTTP ``status`` (409/429/503), a stable ``code``, a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class _WorkerLost(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(eq=False)
class _Worker:
    pid: int
    conn: Connection
    archive: tuple[int, str]
    idle: bool = False
    dead: bool = False


@dataclass(eq=False)
class _Zygote:
    pid: int
    ctrl: socket.socket
    ours: bool  # a direct child of this process (reaped with waitpid)
    archive: tuple[int, str]  # the archive its workers inherit


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
    """Per byte received on ``ctrl`` fork a worker (``S``) or a zygote (``Z``); send back
    (pid, socket fd).  Never returns."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    try:
        while True:
            what = ctrl.recv(1)
            if not what:
                break  # the server closed the pool or died
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                ctrl.close()
                ours.close()
                if what == b"Z":
                    _zygote_main(theirs, env)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _worker_main(Connection(theirs.detach()), env)
            theirs.close()
            socket.send_fds(ctrl, [struct.pack("<q", pid)], [ours.fileno()])
            ours.close()
    finally:
        os._exit(0)


def _fork_zygote(env: Any, close: list[int], scrub: bool) -> _Zygote:
    """Fork a zygote from this process.  The child closes ``close`` (other zygotes' control
    sockets: a zygote must see EOF when the pool drops it); ``scrub`` closes every descriptor
    but its own socket and stdio (a last-resort fork from the running server: listening and
    client sockets must not outlive the server in it)."""
    ours, theirs = socket.socketpair()
    with warnings.catch_warnings():  # the last-resort fork from a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        ours.close()
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        if scrub:
            keep = theirs.fileno()
            os.closerange(3, keep)
            os.closerange(keep + 1, 1 << 16)
        _zygote_main(theirs, env)
    theirs.close()
    return _Zygote(pid, ours, True, (env.archive.version, env.archive.digest))


def _send_recv(conn: Connection, message: tuple) -> tuple:
    conn.send(message)
    return conn.recv()


def _peer_gone(fileno: int) -> bool:
    """True when an idle peer's socket is readable: it never speaks unasked, so it died."""
    try:
        return bool(select.select([fileno], [], [], 0)[0])
    except (OSError, ValueError):
        return True


# ---------------------------------------------------------------------- the pool
class WorkerPool:
    """Scoring processes for one environment (module doc).  Create, :meth:`start`, use
    :meth:`run` / :meth:`commit` from the event loop, :meth:`aclose` (or :meth:`close`).

    ``archive_db``: an :class:`ArchiveDB` or a path (``":memory:"``: nothing persisted).
    """

    def __init__(self, env: Any, workers: int = 2, *, queue_limit: int = 64,
                 job_timeout_s: float = 120.0, archive_db: ArchiveDB | str = ":memory:",
                 ledger_limit: int = 4096, check_interval_s: float = 0.25) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.env = env
        self.n_workers = int(workers)
        self.queue_limit = int(queue_limit)
        self.job_timeout_s = float(job_timeout_s)
        self.check_interval_s = float(check_interval_s)
        self._db_spec = archive_db
        self._ledger_limit = int(ledger_limit)
        self.db: ArchiveDB = archive_db if isinstance(archive_db, ArchiveDB) else None  # type: ignore[assignment]
        self._env_key = str(env.fingerprint)
        arc = env.archive
        self.archive_key: tuple[int, str] = (arc.version, arc.digest)
        self.archive_size = len(arc)
        self.archive_capacity = arc.capacity
        self._archive_blob: bytes = b""
        self.pending = 0
        self.restarts: Counter[str] = Counter()
        self.jobs_done = 0
        self._workers: dict[int, _Worker] = {}
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._zygotes: list[_Zygote] = []
        self._zlock = threading.Lock()
        self._io = ThreadPoolExecutor(max_workers=self.n_workers + 3, thread_name_prefix="gk-pool")
        self._db_io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gk-db")
        self._commit_lock: asyncio.Lock | None = None
        self._supervisor: asyncio.Task | None = None
        self._spawning = 0
        self._committing = False
        self._closing = False
        self._broken = False
        self._started = False
        self._ready_workers: list[_Worker] = []

    # ------------------------------------------------------------- lifecycle
    def start(self) -> WorkerPool:
        """Load (or seed) the stored archive, fork the zygotes and the workers (call before the
        server starts its threads)."""
        first = _fork_zygote(self.env, [], False)
        self._zygotes = [first, _fork_zygote(self.env, [first.ctrl.fileno()], False)]
        try:
            self._ready_workers = [self._spawn() for _ in range(self.n_workers)]
            if self.db is None:  # opened after the forks: no child inherits the connection
                self.db = ArchiveDB(self._db_spec, busy_timeout_s=self.job_timeout_s + 60.0,
                                    ledger_limit=self._ledger_limit)
            arc = self.env.archive
            head = self.db.seed(self._env_key, arc.version, arc.digest, len(arc),
                                self.env.archive_snapshot())
        except BaseException:
            self.close()
            raise
        self._adopt(head.version, head.digest, head.size, head.snapshot)
        self._started = True
        return self

    async def _adb(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._db_io, fn, *args)

    def _adopt(self, version: int, digest: str, size: int, blob: bytes) -> None:
        self.archive_key, self.archive_size, self._archive_blob = (version, digest), size, blob

    def _spawn(self) -> _Worker:
        """Fork one new worker through a live zygote (blocking; start() or an I/O thread)."""
        with self._zlock:
            while True:
                if self._closing:
                    raise PoolError(503, "shutting_down", "the server is shutting down")
                if not self._zygotes:
                    try:
                        self._zygotes.append(_fork_zygote(self.env, [], True))
                        self.restarts["spawner_forked"] += 1
                    except OSError as exc:
                        raise PoolError(503, "pool_unavailable",
                                        f"cannot start a worker spawner ({exc.strerror})") from None
                z = self._zygotes[0]
                got = self._ask(z, b"S")
                if got is not None:
                    pid, fd = got
                    break
                self._drop_zygote(z)
            if len(self._zygotes) < 2:  # keep a standby (a child of the active zygote)
                standby = self._ask(self._zygotes[0], b"Z")
                if standby is not None:
                    self._zygotes.append(_Zygote(standby[0], socket.socket(fileno=standby[1]),
                                                 False, self._zygotes[0].archive))
        w = _Worker(pid, Connection(fd), z.archive)
        self._workers[w.pid] = w
        return w

    @staticmethod
    def _ask(z: _Zygote, what: bytes) -> tuple[int, int] | None:
        try:
            z.ctrl.sendall(what)
            msg, fds, _, _ = socket.recv_fds(z.ctrl, 8, 1)
        except OSError:
            return None
        if len(msg) != 8 or len(fds) != 1:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            return None
        return struct.unpack("<q", msg)[0], fds[0]

    def _drop_zygote(self, z: _Zygote) -> None:
        with contextlib.suppress(ValueError):
            self._zygotes.remove(z)
        self.restarts["spawner_died"] += 1
        with contextlib.suppress(OSError):
            z.ctrl.close()
        self._kill(z.pid)
        if z.ours:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(z.pid, 0)

    def _check_zygotes(self) -> None:
        """Drop dead zygotes and restore the standby (I/O thread)."""
        with self._zlock:
            for z in list(self._zygotes):
                if z.ours:
                    with contextlib.suppress(ChildProcessError):
                        if os.waitpid(z.pid, os.WNOHANG)[0] != 0:
                            z.ours = False  # reaped
                            self._drop_zygote(z)
                            continue
                if _peer_gone(z.ctrl.fileno()):
                    self._drop_zygote(z)
            if self._zygotes and len(self._zygotes) < 2 and not self._closing:
                standby = self._ask(self._zygotes[0], b"Z")
                if standby is not None:
                    self._zygotes.append(_Zygote(standby[0], socket.socket(fileno=standby[1]),
                                                 False, self._zygotes[0].archive))

    def _queue(self) -> asyncio.Queue[_Worker | None]:
        if self._idle is None:  # bound to the running loop on first use
            self._idle = asyncio.Queue()
            for w in self._ready_workers:
                self._put(w)
            self._ready_workers = []
            self._commit_lock = asyncio.Lock()
            if self._started and not self._closing:
                self._supervisor = asyncio.get_running_loop().create_task(self._supervise())
        return self._idle

    def attach(self) -> None:
        """Bind the pool to the running event loop and start its supervisor (server startup)."""
        self._queue()

    def _put(self, w: _Worker) -> None:
        w.idle = True
        assert self._idle is not None
        self._idle.put_nowait(w)

    @property
    def alive(self) -> int:
        """Workers alive now (busy, or idle with a live peer)."""
        for w in list(self._workers.values()):
            if w.idle and not w.dead and _peer_gone(w.conn.fileno()):
                self._retire(w, "idle_died")
                with contextlib.suppress(RuntimeError):  # no running loop: the supervisor will
                    self._top_up()
        return len(self._workers)

    @property
    def spawner_alive(self) -> bool:
        """True while a zygote is known alive (the next replacement needs no last-resort fork)."""
        return bool(self._zygotes)

    @property
    def ready(self) -> bool:
        """True while the pool can take jobs: running, not closing, a worker alive."""
        return self._started and not self._closing and not self._broken and self.alive > 0

    @property
    def serviceable(self) -> bool:
        """False when the pool cannot serve: closed, or no worker alive and none can start."""
        return self._started and not self._closing and not (self._broken and self.alive == 0)

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for operators and fault tests)."""
        return sorted(self._workers)

    def spawner_pids(self) -> list[int]:
        """Process ids of the zygotes, active first (for operators and fault tests)."""
        return [z.pid for z in self._zygotes]

    async def aclose(self, timeout_s: float = 60.0) -> None:
        """Stop taking jobs, let admitted ones finish (up to ``timeout_s``), then stop all."""
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.pending > 0 and loop.time() < deadline:
            await asyncio.sleep(0.02)
        if self._supervisor is not None:
            self._supervisor.cancel()
        await loop.run_in_executor(None, self.close)

    def close(self) -> None:
        """Stop every process now (workers exit on EOF; stragglers are killed)."""
        self._closing = True
        for w in list(self._workers.values()):
            with contextlib.suppress(OSError):
                w.conn.close()
        with self._zlock:
            for z in self._zygotes:
                with contextlib.suppress(OSError):
                    z.ctrl.close()
                if z.ours:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(z.pid, 0)
            self._zygotes = []
        for pid in list(self._workers):
            self._kill(pid)
        self._workers.clear()
        self._io.shutdown(wait=False, cancel_futures=True)
        if self.db is not None and not isinstance(self._db_spec, ArchiveDB):
            with contextlib.suppress(RuntimeError):
                self._db_io.submit(self.db.close).result()
        self._db_io.shutdown(wait=True)

    # ------------------------------------------------------------ supervision
    async def _supervise(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closing:
            with contextlib.suppress(Exception):
                _ = self.alive  # retires idle workers that died
                await loop.run_in_executor(self._io, self._check_zygotes)
                self._top_up()
            await asyncio.sleep(self.check_interval_s)

    def _retire(self, w: _Worker, reason: str) -> None:
        if w.dead:
            return
        w.dead = True
        self.restarts[reason] += 1
        self._workers.pop(w.pid, None)
        with contextlib.suppress(OSError):
            w.conn.close()
        self._kill(w.pid)

    def _top_up(self) -> None:
        """Start replacements until live + starting workers reach ``workers`` (event loop)."""
        if self._closing or self._idle is None:
            return
        loop = asyncio.get_running_loop()
        while len(self._workers) + self._spawning < self.n_workers:
            self._spawning += 1
            fut = loop.run_in_executor(self._io, self._spawn)
            fut.add_done_callback(self._spawned)

    def _spawned(self, f: asyncio.Future) -> None:
        self._spawning -= 1
        if f.cancelled() or f.exception() is not None:
            if not self._workers and self._spawning == 0 and not self._broken:
                self._broken = True
                self._queue().put_nowait(None)  # wake waiters: nothing can serve them
            return
        w = f.result()
        if self._closing:
            with contextlib.suppress(OSError):
                w.conn.close()
            return
        self._broken = False
        self._put(w)

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
            if kind != "commit" and self.db.path != ":memory:" and not self._committing:
                await self._follow()
            worker = await self._acquire()
            # shielded: a cancelled request still returns its worker to the pool
            return await asyncio.shield(asyncio.ensure_future(self._execute(worker, kind, payload)))
        finally:
            self.pending -= 1

    async def _follow(self) -> None:
        """Adopt a head another process committed to the shared database."""
        head = await self._adb(self.db.head_version, self._env_key)
        if head is not None and head != self.archive_key and not self._committing:
            full = await self._adb(self.db.head, self._env_key)
            if full is not None and not self._committing:
                self._adopt(full.version, full.digest, full.size, full.snapshot)

    async def commit(self, payload: dict[str, Any], expected_version: int | None, *,
                     request_id: str, body_sha256: str,
                     render: Callable[[dict[str, Any]], str]) -> str:
        """Serialised, idempotent, persisted archive commit; returns the response text.

        A ``request_id`` seen before returns its stored response (409 ``request_id_conflict``
        if the body differs); ``expected_version`` (if given) must be the stored head (409).
        """
        self._queue()
        assert self._commit_lock is not None
        async with self._commit_lock:
            tx: Transaction = await self._adb(self.db.begin, self._env_key)
            self._committing = True
            before = (self.archive_key, self.archive_size, self._archive_blob)
            try:
                hit = await self._adb(tx.lookup, request_id)
                if hit is not None:
                    if hit.body_sha256 != body_sha256:
                        raise PoolError(409, "request_id_conflict", f"request_id {request_id!r} "
                                        "was already used with a different body")
                    await self._adb(tx.rollback)
                    return hit.response
                head = await self._adb(tx.head)
                if head is not None and (head.version, head.digest) != self.archive_key:
                    self._adopt(head.version, head.digest, head.size, head.snapshot)
                    before = (self.archive_key, self.archive_size, self._archive_blob)
                if expected_version is not None and expected_version != self.archive_key[0]:
                    raise PoolError(409, "archive_version_conflict",
                                    f"expected archive version {expected_version}, current is "
                                    f"{self.archive_key[0]}")
                res = await self.run("commit", payload)
                text = render(res)
                if (res["version"], res["digest"]) != before[0]:
                    await self._adb(tx.record, res["version"], res["digest"], res["size"],
                                    self._archive_blob, request_id)
                await self._adb(tx.remember, request_id, body_sha256, text)
                await self._adb(tx.commit)
                return text
            except BaseException:
                await self._adb(tx.rollback)
                self.archive_key, self.archive_size, self._archive_blob = before
                raise
            finally:
                self._committing = False

    async def _acquire(self) -> _Worker:
        q = self._queue()
        while True:
            if self._broken and not self._workers:
                raise PoolError(503, "pool_unavailable", "no scoring workers are available")
            w = await q.get()
            if w is None:
                if self._broken:  # pass the news on to the next waiter
                    q.put_nowait(None)
                    raise PoolError(503, "pool_unavailable", "no scoring workers are available")
                continue  # a stale sentinel from before the pool recovered
            w.idle = False
            if w.dead:
                continue
            if _peer_gone(w.conn.fileno()):  # died while idle: costs no request
                self._retire(w, "idle_died")
                self._top_up()
                continue
            return w

    async def _execute(self, w: _Worker, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            if w.archive != self.archive_key:
                state = await self._roundtrip(w, "restore", {"blob": self._archive_blob})
                if state[0] != "ok":
                    self._put(w)
                    self._unwrap(state)
                w.archive = (state[1]["version"], state[1]["digest"])
            reply = await self._roundtrip(w, kind, payload)
        except _WorkerLost as lost:
            self._retire(w, lost.code)
            self._top_up()
            what = ("was killed or crashed" if lost.code == "worker_died"
                    else f"exceeded the {self.job_timeout_s:g} s wall-clock limit and was killed")
            raise PoolError(503, lost.code, f"the scoring worker {what}; retry the request") from None
        if reply[0] == "ok" and kind == "commit":
            res = reply[1]
            self._adopt(res["version"], res["digest"], res["size"], res.pop("blob"))
            w.archive = self.archive_key
        self.jobs_done += 1
        self._put(w)
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
