"""Fixtures of the server tests: one environment per session, servers on loopback.

A server runs in-process: uvicorn in a daemon thread on 127.0.0.1 with an ephemeral port
(a socket bound to port 0 and handed to uvicorn), its worker pool forked from this process
after the session's environment was built.  Every wait is bounded.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

import gymkit
from gymkit.server import ServerSettings, WorkerPool, build_server

START_TIMEOUT_S = 30.0


@dataclass
class Running:
    """A live test server: its base URL, the uvicorn server, the pool, the settings."""

    url: str
    server: Any
    pool: WorkerPool
    settings: ServerSettings
    thread: threading.Thread

    def client(self, **kw: Any) -> httpx.Client:
        """An httpx client for this server (bounded timeout)."""
        return httpx.Client(base_url=self.url, timeout=kw.pop("timeout", 30.0), **kw)


@contextmanager
def running_server(env: gymkit.Environment, **overrides: Any) -> Iterator[Running]:
    """Start a server for ``env`` with settings ``overrides``; stop it (gracefully) on exit."""
    settings = replace(ServerSettings(workers=1, port=0, header_timeout_s=2.0, body_timeout_s=5.0,
                                      graceful_timeout_s=10.0), **overrides)
    server, pool = build_server(settings, env, log_level="warning")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pool.close()
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield Running(f"http://127.0.0.1:{port}", server, pool, settings, thread)
    finally:
        server.should_exit = True
        thread.join(timeout=30.0)
        pool.close()
        sock.close()


@pytest.fixture(scope="session")
def env() -> gymkit.Environment:
    """The ``us46-default`` environment, built once per session (workers fork from it)."""
    return gymkit.make("us46-default")


def tag(formula: str) -> str:
    """Wrap a formula in the answer tag."""
    return f"<alpha>{formula}</alpha>"
