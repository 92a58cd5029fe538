"""``gymkit serve`` started as a user starts it (a subprocess on a free loopback port), for
the tests that drive the real command line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(port: int, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``gymkit serve --port PORT --workers 1 ARGS…`` in a subprocess (stderr kept for errors)."""
    return subprocess.Popen([sys.executable, "-m", "gymkit.cli", "serve", "--port", str(port),
                             "--workers", "1", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def wait_ready(proc: subprocess.Popen, url: str, timeout_s: float = 240.0) -> None:
    """Poll ``url``/ready until it answers 200; fail with the server's stderr if it exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        try:
            if httpx.get(url + "/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"gymkit serve did not become ready at {url}")
