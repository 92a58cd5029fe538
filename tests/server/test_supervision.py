"""The pool heals: killed spawners and workers are replaced, /ready and /health tell the truth,
idle connections cannot starve new requests, and connection-level errors are JSON.

Bounded loopback load: every client loop has a fixed count and every wait a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest

from .conftest import running_server
from .corpus import VALID


def _wait(cond, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def srv(env):
    with running_server(env, workers=2, limit_concurrency=64, header_timeout_s=30.0) as s:
        yield s


def _load(srv, n_threads: int, per_thread: int, codes: list) -> list[threading.Thread]:
    def client() -> None:
        with srv.client(timeout=60.0) as c:
            for _ in range(per_thread):
                r = c.post("/v1/score", json={"completions": VALID[:1]})
                codes.append((r.status_code, r.json().get("error", {}).get("code")))
    threads = [threading.Thread(target=client) for _ in range(n_threads)]
    for t in threads:
        t.start()
    return threads


def test_pool_recovers_from_killed_spawner_and_workers_under_load(srv) -> None:
    """Assertion: with 4 clients sending requests, SIGKILL of the active spawner, then of a
    worker, then of every spawner and every worker: each request gets 200 or a 503 naming the
    killed worker (never pool_unavailable, never another 5xx), the pool is back to 2 live
    workers with new pids, /ready and /health are 200, and every later request is 200."""
    codes: list = []
    threads = _load(srv, 4, 12, codes)
    spawners = srv.pool.spawner_pids()
    assert len(spawners) == 2
    _kill(spawners[0])
    time.sleep(0.3)
    _kill(srv.pool.worker_pids()[0])
    time.sleep(0.3)
    for pid in srv.pool.spawner_pids() + srv.pool.worker_pids():
        _kill(pid)
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert len(codes) == 48
    assert all(c == (200, None) or c == (503, "worker_died") for c in codes), codes
    assert sum(c == (200, None) for c in codes) >= 40
    old = set(spawners)
    _wait(lambda: srv.pool.alive == 2 and srv.pool.spawner_pids()
          and not old & set(srv.pool.spawner_pids()))
    with srv.client() as c:
        ready = c.get("/ready")
        assert ready.status_code == 200 and ready.json()["workers_alive"] == 2
        assert ready.json()["spawner_alive"] is True
        assert c.get("/health").json() == {"status": "ok"}
        for _ in range(6):
            assert c.post("/v1/score", json={"completions": VALID[:1]}).status_code == 200


def test_a_worker_that_dies_idle_costs_no_request(srv) -> None:
    """Assertion: SIGKILL of an idle worker, then requests at once: all 200 (the dead one is
    skipped and replaced), and /ready never counts the dead worker as alive."""
    _wait(lambda: srv.pool.alive == 2)
    victim = srv.pool.worker_pids()[0]
    _kill(victim)
    time.sleep(0.05)
    with srv.client() as c:
        assert victim not in srv.pool.worker_pids() or c.get("/ready").json()["workers_alive"] < 2
        for _ in range(4):
            assert c.post("/v1/score", json={"completions": VALID[:1]}).status_code == 200
    _wait(lambda: srv.pool.alive == 2 and victim not in srv.pool.worker_pids())


def test_health_is_503_while_the_pool_cannot_serve(srv) -> None:
    """Assertion: when no worker is alive and none can be started, /health and /ready are 503
    and a request is a prompt 503 pool_unavailable; once workers can start again, all heal."""
    pool = srv.pool

    def refuse():
        raise __import__("gymkit.server.pool", fromlist=["PoolError"]).PoolError(
            503, "pool_unavailable", "test: spawning refused")
    _wait(lambda: pool.alive == 2)
    pool._spawn = refuse
    try:
        for pid in pool.worker_pids():
            _kill(pid)
        _wait(lambda: not pool.serviceable)
        with srv.client(timeout=10.0) as c:
            h = c.get("/health")
            assert h.status_code == 503 and h.json() == {"status": "unavailable"}
            assert c.get("/ready").status_code == 503
            r = c.post("/v1/score", json={"completions": VALID[:1]})
            assert r.status_code == 503 and r.json()["error"]["code"] == "pool_unavailable"
    finally:
        del pool._spawn
    _wait(lambda: pool.alive == 2)
    with srv.client() as c:
        assert c.get("/health").status_code == 200
        assert c.post("/v1/score", json={"completions": VALID[:1]}).status_code == 200


def _idle_sockets(port: int, n: int) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        out.append(s)
    return out


def test_idle_connections_are_shed_and_new_requests_served(srv) -> None:
    """Assertion: 80 idle TCP connections against a limit of 64 (header deadline 30 s): after
    they have idled, /health and a scoring request are answered 200 within a 5 s client
    timeout (not a 503, not a stall until the header deadline)."""
    port = int(srv.url.rsplit(":", 1)[1])
    socks = _idle_sockets(port, 80)
    try:
        time.sleep(1.0)
        with srv.client(timeout=5.0) as c:
            assert c.get("/health").status_code == 200
            assert c.post("/v1/score", json={"completions": VALID[:1]}).status_code == 200
    finally:
        for s in socks:
            s.close()


def test_connection_limit_and_parser_errors_are_json(srv) -> None:
    """Assertion: a request beyond the connection limit (fresh connections are not shed) gets
    503 with a JSON error body; a malformed request line gets a JSON 400 bad_request."""
    port = int(srv.url.rsplit(":", 1)[1])
    socks = _idle_sockets(port, 70)
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _, body = s.recv(65536).partition(b"\r\n\r\n")
        s.close()
        assert head.startswith(b"HTTP/1.1 503")
        assert json.loads(body)["error"]["code"] == "server_busy"
    finally:
        for x in socks:
            x.close()
    time.sleep(0.5)
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"NOT A REQUEST\x00\r\n\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
    assert json.loads(body)["error"]["code"] == "bad_request"
