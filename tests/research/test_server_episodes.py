"""The /v1/episodes routes over real HTTP on 127.0.0.1: the whole verifier server (its worker
pool, guard and error shape), transcripts byte-identical to the Python API, limits, expiry."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import httpx
import numpy as np
import pytest
import uvicorn
from fastapi import FastAPI

from gymkit.research import canonical_json
from gymkit.research.agent import hill_climb
from gymkit.server import ServerSettings, build_server
from gymkit.server.episodes import EpisodeSettings, episodes_router

from .conftest import HONEST


def _serve(server: uvicorn.Server) -> tuple[str, socket.socket, threading.Thread]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.02)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", sock, thread


@contextmanager
def serving(server: uvicorn.Server) -> Iterator[str]:
    """``server`` listening on 127.0.0.1 (its URL), stopped on exit."""
    url, sock, thread = _serve(server)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def app_server(app: FastAPI) -> uvicorn.Server:
    """A quiet uvicorn server for ``app`` (no lifespan)."""
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))


@contextmanager
def full_server(env) -> Iterator[str]:
    settings = replace(ServerSettings(workers=1, port=0), graceful_timeout_s=10.0)
    server, pool = build_server(settings, env, log_level="warning")
    try:
        with serving(server) as url:
            yield url
    finally:
        pool.close()


@contextmanager
def router_server(env, settings: EpisodeSettings, clock) -> Iterator[str]:
    app = FastAPI()
    app.include_router(episodes_router(env, settings, clock))
    with serving(app_server(app)) as url:
        yield url


class HTTPEpisode:
    """Duck-types ResearchEpisode.call/submit/calls_left over HTTP (for the scripted agent)."""

    def __init__(self, client: httpx.Client, sid: str, budget: int) -> None:
        self.c, self.sid, self.calls_left = client, sid, budget

    def call(self, name: str, **arguments: str):
        r = self.c.post(f"/v1/episodes/{self.sid}/tool", json={"name": name, "arguments": arguments})
        assert r.status_code == 200, r.text
        body = r.json()
        self.calls_left = body.get("calls_left", 0)
        return type("R", (), {"observation": body["observation"]})

    def submit(self, formula: str):
        r = self.c.post(f"/v1/episodes/{self.sid}/submit", json={"formula": formula})
        assert r.status_code == 200, r.text
        return r.json()


def test_episode_through_the_server_matches_the_python_api(renv) -> None:
    brief = "Design one alpha."
    with full_server(renv.env) as url, httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/v1/episodes", json={"brief": brief})
        assert r.status_code == 201, r.text
        opened = r.json()
        assert opened["budget"] == 8 and [t["function"]["name"] for t in opened["tools"]] == [
            "backtest", "compare", "describe", "submit"]
        ep = HTTPEpisode(c, opened["id"], opened["calls_left"])
        c.post(f"/v1/episodes/{ep.sid}/tool", json={"name": "describe", "arguments": "{}"})
        ep.calls_left -= 1
        out = hill_climb(ep, np.random.default_rng(3))
        got = c.get(f"/v1/episodes/{ep.sid}").json()
        assert c.post(f"/v1/episodes/{ep.sid}/submit", json={"formula": HONEST}).status_code == 409
        assert "/v1/episodes" in c.get("/openapi.json").json()["paths"]
        raw = b'{"brief": "\\ud800 lone"}'   # a lone surrogate: refused with the error shape
        r = c.post("/v1/episodes", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422 and "code" in r.json()["error"]
    local = renv.episode(brief)
    local.call("describe")
    res = hill_climb(local, np.random.default_rng(3))
    text = local.transcript_json()
    assert canonical_json(got["transcript"]) == text
    assert got["transcript_sha256"] == out["transcript_sha256"] == hashlib.sha256(
        text.encode()).hexdigest()
    assert out["reward"] == res.reward and out["card"] == json.loads(
        res.info["card"].to_json(timings=False))


def test_limits_expiry_and_errors(renv) -> None:
    now = [0.0]
    settings = EpisodeSettings(max_sessions=2, ttl_s=60.0, max_budget=4, default_budget=2,
                               max_formula_chars=64)
    with pytest.raises(ValueError, match="default_budget"):
        EpisodeSettings(max_budget=4)
    with router_server(renv.env, settings, lambda: now[0]) as url, \
            httpx.Client(base_url=url, timeout=60) as c:
        assert c.post("/v1/episodes", json={"budget": 5}).json()["error"]["code"] == \
            "budget_too_large"
        a = c.post("/v1/episodes", json={"budget": 1}).json()["id"]
        c.post("/v1/episodes", json={})
        r = c.post("/v1/episodes", json={})
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_sessions"
        r = c.post(f"/v1/episodes/{a}/tool", json={"name": "backtest",
                                                    "arguments": {"formula": "x" * 65}})
        assert r.status_code == 422 and r.json()["error"]["code"] == "formula_too_long"
        r = c.post(f"/v1/episodes/{a}/tool", json={"name": "rm", "arguments": {}})
        assert r.json()["error"]["code"] == "unknown_tool"
        r = c.post(f"/v1/episodes/{a}/tool", json={"name": "backtest",
                                                    "arguments": {"formula": HONEST}})
        assert r.json()["calls_left"] == 0 and not r.json()["done"]
        r = c.post(f"/v1/episodes/{a}/tool", json={"name": "describe", "arguments": {}})
        assert r.json()["done"] and r.json()["truncated"] and r.json()["reward"] == -4.0
        now[0] = 61.0                                               # every session expires
        assert c.get(f"/v1/episodes/{a}").status_code == 404
        assert c.post("/v1/episodes", json={}).status_code == 201   # and frees its slot
        assert c.post("/v1/episodes/nope/submit", json={"formula": HONEST}).json()["error"][
            "code"] == "unknown_episode"
        bid = "0" * 16
        assert c.post("/v1/episodes", json={"brief_id": bid}).json()["error"]["code"] == \
            "unknown_brief"


@pytest.mark.parametrize("body", [{"name": "backtest", "arguments": {"formula": ["x"]}},
                                  {"name": "compare", "arguments": "{not json"}])
def test_bad_arguments_are_a_counted_call_not_a_server_error(renv, body) -> None:
    with router_server(renv.env, EpisodeSettings(), time.monotonic) as url, \
            httpx.Client(base_url=url, timeout=60) as c:
        sid = c.post("/v1/episodes", json={}).json()["id"]
        r = c.post(f"/v1/episodes/{sid}/tool", json=body)
        assert r.status_code == 200 and r.json()["calls_left"] == 7
        assert "error" in r.json()["result"]["result"] or "action_error" in r.json()["result"]["result"]
