"""Fixtures of the report tests: one environment, rendered reports, a headless Chromium driver.

The driver speaks the DevTools protocol over ``--remote-debugging-pipe`` (JSON messages
separated by NUL bytes on file descriptors 3 and 4 of the browser), so it needs nothing
beyond the standard library: no websocket package, no network port.  It records console
errors, uncaught exceptions, error log entries and every request the page makes.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import gymkit

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
)


def chromium_path() -> str | None:
    """Debian's chromium binary, or None where it is not installed."""
    for cand in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def _high_pipe() -> tuple[int, int]:
    """A pipe whose ends are numbered >= 10, so mapping them onto fds 3 and 4 cannot clobber them."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends[0], ends[1]


@dataclass
class PageResult:
    """What loading one page produced."""

    sections: list[str]
    svg_count: int
    empty_svgs: int
    title: str
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: bytes = b""
    height: int = 0
    blank_svgs: list[str] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)
    page_width: int = 0
    section_titles: list[str] = field(default_factory=list)


# What a person would see, measured in the laid-out page: the sections (id and heading), the
# plots (count; drawn smaller than 50x20 px; "blank": fewer than 3 drawn marks, i.e. axes with
# nothing in them), elements whose content is wider than their box (a table or plot sticking
# out of its section, ignoring the <svg> internals) and the page's scroll width.
_PROBE = """JSON.stringify((() => {
  const svgs = [...document.querySelectorAll('svg')];
  const marks = e => [...e.querySelectorAll('path, rect, line, polyline, polygon, use')].filter(m => {
    const b = m.getBoundingClientRect(); return b.width > 0 || b.height > 0; }).length;
  const label = e => e.getAttribute('aria-label') || e.id || e.tagName;
  const over = [...document.querySelectorAll('main, section, section > *, table, nav, header')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'auto')
    .map(e => (e.closest('section') ? e.closest('section').id + ' ' : '') + e.tagName.toLowerCase());
  return {s: [...document.querySelectorAll('section[id]')].map(e => e.id),
          st: [...document.querySelectorAll('section[id] > h2')].map(e => e.textContent),
          n: svgs.length,
          e: svgs.filter(e => { const r = e.getBoundingClientRect(); return r.width < 50 || r.height < 20; }).length,
          b: svgs.filter(e => marks(e) < 3).map(label),
          o: over, w: document.documentElement.scrollWidth, t: document.title,
          h: document.documentElement.scrollHeight};
})())"""


class Chromium:
    """A headless Chromium driven over the DevTools pipe (see module doc)."""

    def __init__(self, binary: str, width: int = 1280) -> None:
        self.width = width
        self._dir = tempfile.mkdtemp(prefix="gymkit-chromium-")
        cmd_r, self._cmd_w = _high_pipe()  # we write commands; the browser reads fd 3
        self._out_r, out_w = _high_pipe()  # the browser writes fd 4; we read
        args = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self._dir}", "about:blank"]
        # bash maps our pipe ends onto fds 3 and 4 of the browser (dash cannot name fds > 9)
        script = f'exec "$@" 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-'
        self.proc = subprocess.Popen(["/bin/bash", "-c", script, "bash", *args],
                                     pass_fds=(cmd_r, out_w), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict] = []

    # -------------------------------------------------------------- protocol
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no DevTools message from chromium in time")
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed the DevTools pipe (exit {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict:
        """Send one command and return its result (events seen meanwhile are kept)."""
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60.0) -> dict:
        """Return the first (already seen or next) event named ``method``."""
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    # ------------------------------------------------------------------ page
    def load(self, url: str, screenshot: bool = True) -> PageResult:
        """Open ``url`` in a fresh tab; return sections, console errors, requests, screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.events.clear()
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=sid)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                  session=sid)
        self.send("Page.navigate", {"url": url}, session=sid)
        self.wait_event("Page.loadEventFired")
        val = json.loads(self.send("Runtime.evaluate", {"expression": _PROBE, "returnByValue": True},
                                   session=sid)["result"]["value"])
        shot = b""
        if screenshot:
            data = self.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": self.width, "height": val["h"], "scale": 1}},
                session=sid, timeout=120)["data"]
            shot = base64.b64decode(data)
        res = PageResult(val["s"], val["n"], val["e"], val["t"], screenshot=shot, height=val["h"],
                         blank_svgs=val["b"], overflow=val["o"], page_width=val["w"],
                         section_titles=val["st"])
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                res.console_errors.append("console: " + " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                res.console_errors.append("exception: " + str(
                    d.get("exception", {}).get("description", d.get("text", ""))))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                res.console_errors.append(f"log: {e.get('text', '')} {e.get('url', '')}".strip())
            elif m == "Network.requestWillBeSent":
                res.requests.append(p.get("request", {}).get("url", ""))
        self.send("Target.closeTarget", {"targetId": target})
        return res

    def close(self) -> None:
        """Close the browser and remove its profile folder."""
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture(scope="session")
def env():
    """The default environment, built once for the report tests."""
    return gymkit.make("us46-default")


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium for the session; skips (with the reason) where it is not installed."""
    binary = chromium_path()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); "
                    "the report screenshot test needs it")
    if shutil.which("bash") is None:
        pytest.skip("bash is needed to hand the DevTools pipe to chromium")
    b = Chromium(binary)
    try:
        b.send("Browser.getVersion", timeout=60)
        yield b
    finally:
        b.close()


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory) -> Path:
    """Where the rendered reports of this session go (GYMKIT_REPORT_DIR keeps them)."""
    keep = os.environ.get("GYMKIT_REPORT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    return tmp_path_factory.mktemp("reports")
