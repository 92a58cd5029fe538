"""Faults: dead and hung workers, floods, malformed and oversized input, slow clients, auth.

Every loop here is bounded in count and time; nothing asserts a latency.  Slow jobs come from
a wrapper put into ``gymkit.server.jobs.JOBS`` *before* the server's pool forks (the workers
inherit it), triggered only by a marker in the answer, so the serving code has no test hook.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import httpx
import pytest

from gymkit.server import jobs

from .conftest import running_server
from .corpus import VALID

SLOW, BOOM = "__slow_test_marker__", "__boom_test_marker__"


def _marked_score(orig):
    def score(env, payload):
        texts = payload["completions"]
        if any(SLOW in t for t in texts):
            time.sleep(float(texts[0].split(":")[-1]) if ":" in texts[0] else 60.0)
        if any(BOOM in t for t in texts):
            raise RuntimeError("/secret/path/in/a/traceback")
        return orig(env, payload)
    return score


@pytest.fixture(scope="module")
def srv(env):
    """One worker, queue of 2, 3 s job limit, 1 MiB body limit, marked jobs."""
    orig = jobs.JOBS["score"]
    jobs.JOBS["score"] = _marked_score(orig)
    try:
        with running_server(env, workers=1, queue_limit=2, job_timeout_s=3.0,
                            max_body_bytes=1 << 20, max_completions=64,
                            max_answer_chars=20_000) as s:
            yield s
    finally:
        jobs.JOBS["score"] = orig


def _wait(cond, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def _ok(srv) -> None:
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": VALID[:1]})
    assert r.status_code == 200 and r.json()["cards"][0]["card"]["valid"]


def test_killed_worker_answers_503_and_the_pool_recovers(srv) -> None:
    """Assertion: SIGKILL mid-request → 503 worker_died (no card), a new worker, later 200."""
    before = srv.pool.worker_pids()
    out = {}
    t = threading.Thread(target=lambda: out.update(r=srv.client().post(
        "/v1/score", json={"completions": [SLOW + ":30"]})))
    t.start()
    _wait(lambda: srv.pool.pending == 1)
    time.sleep(0.2)  # the job is on the worker
    os.kill(before[0], signal.SIGKILL)
    t.join(timeout=20)
    r = out["r"]
    assert r.status_code == 503 and r.json()["error"]["code"] == "worker_died"
    assert "cards" not in r.json()
    _wait(lambda: srv.pool.alive == 1 and srv.pool.worker_pids() != before)
    _ok(srv)


def test_hung_worker_is_killed_at_the_wall_clock_limit(srv) -> None:
    """Assertion: a job past job_timeout_s → 503 worker_timeout, worker replaced, later 200."""
    before = srv.pool.worker_pids()
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": [SLOW + ":60"]})
    assert r.status_code == 503 and r.json()["error"]["code"] == "worker_timeout"
    assert r.headers.get("retry-after") is not None
    _wait(lambda: srv.pool.alive == 1 and srv.pool.worker_pids() != before)
    _ok(srv)
    with srv.client() as c:
        text = c.get("/metrics").text
    assert 'gymkit_worker_restarts_total{reason="worker_timeout"}' in text


def test_flood_past_the_queue_bound_gets_429_and_no_crash(srv) -> None:
    """Assertion: 10 concurrent slow requests with a queue of 2 → some 429 with Retry-After,
    the admitted ones 200, nothing else; the queue drains and the server still scores."""
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def hit() -> None:
        with srv.client() as c:
            r = c.post("/v1/score", json={"completions": [SLOW + ":0.5"]})
        with lock:
            results.append(r)

    threads = [threading.Thread(target=hit) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    codes = sorted(r.status_code for r in results)
    assert len(results) == 10 and set(codes) <= {200, 429}
    assert codes.count(429) >= 1 and codes.count(200) >= 1
    assert all(r.headers["retry-after"] == "1" for r in results if r.status_code == 429)
    assert all(r.json()["error"]["code"] == "queue_full" for r in results if r.status_code == 429)
    _wait(lambda: srv.pool.pending == 0)
    _ok(srv)


@pytest.mark.parametrize("body", [b"{bad", b'{"completions": ["a"', b"\xff\xfe", b"[" * 100_000])
def test_malformed_json_is_a_4xx_with_one_line(srv, body: bytes) -> None:
    """Assertion: broken JSON (truncated, not UTF-8, absurdly nested) → 400, one-line error."""
    with srv.client() as c:
        r = c.post("/v1/score", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    msg = r.json()["error"]["message"]
    assert "\n" not in msg and "Traceback" not in r.text


def test_crash_in_a_job_leaks_no_trace(srv) -> None:
    """Assertion: an exception in a worker → 500 internal_error without the exception text."""
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": [BOOM]})
    assert r.status_code == 500 and r.json() == {
        "error": {"code": "internal_error", "message": "the scoring worker failed on this request"}}
    _ok(srv)


def _raw(srv) -> socket.socket:
    port = int(srv.url.rsplit(":", 1)[1])
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def _read_status(s: socket.socket) -> int | None:
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return int(data.split()[1]) if data.startswith(b"HTTP/1.1") else None


def test_100mb_content_length_is_refused_before_the_body(srv) -> None:
    """Assertion: a declared 100 MB body → 413 after sending only 64 KiB of it."""
    s = _raw(srv)
    s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              b"Content-Length: 100000000\r\n\r\n" + b" " * 65536)
    assert _read_status(s) == 413
    s.close()


def test_100mb_chunked_body_is_cut_at_the_limit(srv) -> None:
    """Assertion: a chunked body with no length is refused once it passes 1 MiB: the server
    answers 413 or drops the connection long before 100 MB were sent."""
    s = _raw(srv)
    s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    sent = 0
    s.settimeout(5)
    try:
        while sent < 100_000_000:
            s.sendall(chunk)
            sent += 65536
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    status = _read_status(s)
    s.close()
    assert sent < 20 * (1 << 20) and status in (413, None)


def test_json_body_over_the_limit_is_413(srv) -> None:
    """Assertion: an honest 2 MiB JSON body (limit 1 MiB) → 413 body_too_large."""
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": ["x" * (2 << 20)]})
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"


def test_10000_completions_are_refused(srv) -> None:
    """Assertion: 10,000 completions → 422 (schema ceiling); 65 → 422 too_many_completions."""
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": ["a"] * 10_000})
        assert r.status_code == 422 and "completions" in r.json()["error"]["message"]
        r = c.post("/v1/score", json={"completions": ["a"] * 65})
        assert r.status_code == 422 and r.json()["error"]["code"] == "too_many_completions"
        r = c.post("/v1/score", json={"completions": ["a", "x" * 20_001]})
        assert r.status_code == 422 and r.json()["error"] == {
            "code": "answer_too_long",
            "message": "body.completions[1]: 20001 characters, the limit is 20000"}
        lone = json.dumps({"completions": ["<alpha>rank(close)\ud800</alpha>"]})  # ASCII-escaped
        r = c.post("/v1/score", content=lone, headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_unicode"
        assert r.json()["error"]["message"].startswith("body.completions[0]: unpaired surrogate")


def test_slow_loris_connection_is_closed(srv) -> None:
    """Assertion: a client trickling its headers is disconnected (header deadline 2 s) well
    before it finishes; other clients are served meanwhile."""
    s = _raw(srv)
    s.settimeout(1.0)
    line = b"POST /v1/score HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 40
    closed = False
    for i in range(len(line)):  # at most ~12 s
        try:
            s.send(line[i:i + 1])
            if s.recv(1) == b"":
                closed = True
                break
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        _ok(srv) if i == 3 else None
    s.close()
    assert closed


def test_bearer_token(env) -> None:
    """Assertion: with a token, scoring needs it (401 otherwise), probes stay open."""
    with running_server(env, token="s3cret") as srv, srv.client() as c:
        assert c.get("/health").status_code == 200
        assert c.get("/ready").status_code == 200
        r = c.post("/v1/score", json={"completions": VALID[:1]})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        r = c.post("/v1/score", json={"completions": VALID[:1]},
                   headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
        r = c.post("/v1/score", json={"completions": VALID[:1]},
                   headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200
