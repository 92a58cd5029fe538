"""Graceful shutdown: requests in flight when the server is told to stop still finish."""

from __future__ import annotations

import threading
import time

import httpx

from gymkit.server import jobs

from .conftest import running_server
from .corpus import VALID


def test_in_flight_requests_finish_on_shutdown(env) -> None:
    """Assertion: 2 slow requests in flight at shutdown both get 200 with their cards; the
    server then stops, the pool's processes are gone, and new connections are refused."""
    orig = jobs.JOBS["score"]

    def slow(e, payload):
        time.sleep(1.0)
        return orig(e, payload)

    jobs.JOBS["score"] = slow
    try:
        results: list[httpx.Response] = []
        with running_server(env, workers=2) as srv:
            def hit(i: int) -> None:
                with srv.client() as c:
                    results.append(c.post("/v1/score", json={"completions": VALID[i:i + 1]}))

            threads = [threading.Thread(target=hit, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while srv.pool.pending < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert srv.pool.pending == 2
            srv.server.should_exit = True
            for t in threads:
                t.join(timeout=20)
            srv.thread.join(timeout=20)
            assert not srv.thread.is_alive()
            url = srv.url
        assert [r.status_code for r in results] == [200, 200]
        assert all(r.json()["cards"][0]["card"]["valid"] for r in results)
        assert srv.pool.alive == 0
        try:
            httpx.get(url + "/health", timeout=2)
            refused = False
        except httpx.TransportError:
            refused = True
        assert refused
    finally:
        jobs.JOBS["score"] = orig
