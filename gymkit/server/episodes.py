"""Stateful research sessions over HTTP: ``/v1/episodes`` (issue 25).

One :class:`~gymkit.research.ResearchEpisode` per session, held in this process's memory:

* ``POST /v1/episodes`` ``{brief?, brief_id?, budget?}`` → 201 ``{id, observation, messages,
  tools, budget, calls_left, expires_in_s}``;
* ``POST /v1/episodes/{id}/tool`` ``{name, arguments}`` (arguments an object or its JSON
  text, as in an OpenAI tool call) → ``{observation, result, calls_left, done, truncated,
  reward}``; a ``submit`` here ends the episode like the submit route;
* ``POST /v1/episodes/{id}/submit`` ``{formula}`` → ``{observation, reward, outcome, card,
  card_sha256, transcript_sha256}``;
* ``GET /v1/episodes/{id}`` → ``{transcript, transcript_sha256, done}``.

Limits (:class:`EpisodeSettings`): at most ``max_sessions`` live sessions (429
``too_many_sessions``), a session expires ``ttl_s`` seconds after it was opened (404
``unknown_episode`` afterwards, like an id never issued), a budget of at most ``max_budget``
calls, formulas of at most ``max_formula_chars``.  Calls of one session are serialised; the
scoring itself runs under one lock (the environment is shared).  Errors are the server's
``{"error": {"code", "message"}}`` shape.  Transcripts are byte-identical to the Python API's.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from gymkit.briefs import generate_briefs
from gymkit.card import json_safe
from gymkit.research import TOOL_NAMES, TOOL_SPECS, ResearchEnv, ResearchEpisode, canonical_json

__all__ = ["EpisodeSettings", "EpisodeStore", "episodes_router"]


@dataclass(frozen=True)
class EpisodeSettings:
    """Per-process session limits (module doc)."""

    max_sessions: int = 64
    ttl_s: float = 1800.0
    max_budget: int = 32
    default_budget: int = 8
    max_formula_chars: int = 4096

    def __post_init__(self) -> None:
        if not 0 <= self.default_budget <= self.max_budget:
            raise ValueError(f"default_budget {self.default_budget} must be in 0..max_budget "
                             f"({self.max_budget})")
        if self.max_sessions < 1 or not self.ttl_s > 0:
            raise ValueError("max_sessions must be >= 1 and ttl_s > 0")


class NewEpisode(BaseModel):
    """Open a session: a brief's text or a generated brief's id (or neither), a budget."""

    model_config = ConfigDict(extra="forbid")
    brief: str | None = Field(default=None, max_length=4000)
    brief_id: str | None = Field(default=None, max_length=64)
    budget: int | None = Field(default=None, ge=0, le=1000)


class ToolRequest(BaseModel):
    """One tool call: the tool's name and its arguments (an object or its JSON text)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=64)
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class SubmitRequest(BaseModel):
    """The final formula (DSL text, no tags)."""

    model_config = ConfigDict(extra="forbid")
    formula: str = Field(max_length=16384)


class _Refusal(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _json(obj: Any, status: int = 200) -> Response:
    return Response(canonical_json(obj).encode("utf-8"), status_code=status,
                    media_type="application/json")


def _error(exc: _Refusal) -> Response:
    return _json({"error": {"code": exc.code, "message": exc.message}}, exc.status)


def _check_unicode(req: BaseModel) -> None:
    """422 for text that is not encodable as UTF-8 (lone surrogates from JSON escapes)."""
    try:
        canonical_json(req.model_dump()).encode("utf-8")
    except UnicodeEncodeError:
        raise _Refusal(422, "invalid_unicode", "the request holds text that is not valid "
                       "Unicode (a lone surrogate)") from None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Session:
    episode: ResearchEpisode
    opened: float
    lock: threading.Lock


class EpisodeStore:
    """The live sessions of one process, with expiry and a session cap (module doc)."""

    def __init__(self, renv: ResearchEnv, settings: EpisodeSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.renv, self.s, self.clock = renv, settings, clock
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self.score_lock = threading.Lock()
        self._briefs: dict[str, str] | None = None

    def _sweep(self, now: float) -> None:
        for k in [k for k, v in self._sessions.items() if now - v.opened >= self.s.ttl_s]:
            del self._sessions[k]

    def brief_of(self, brief_id: str) -> str:
        """The text of a generated brief (the default generator's)."""
        if self._briefs is None:
            self._briefs = {b.brief_id: b.text for b in generate_briefs()}
        if brief_id not in self._briefs:
            raise _Refusal(404, "unknown_brief", f"no generated brief has id {brief_id!r}")
        return self._briefs[brief_id]

    def open(self, brief: str | None, budget: int) -> tuple[str, _Session]:
        """Start a session; 429 when ``max_sessions`` are live."""
        now = self.clock()
        with self._lock:
            self._sweep(now)
            if len(self._sessions) >= self.s.max_sessions:
                raise _Refusal(429, "too_many_sessions", f"{len(self._sessions)} sessions are "
                               f"open, the limit is {self.s.max_sessions}; finish or let one expire")
            sid = secrets.token_hex(16)
            sess = _Session(self.renv.episode(brief, budget), now, threading.Lock())
            self._sessions[sid] = sess
        return sid, sess

    def get(self, sid: str) -> _Session:
        """The live session ``sid``; 404 when unknown or expired."""
        now = self.clock()
        with self._lock:
            self._sweep(now)
            sess = self._sessions.get(sid)
        if sess is None:
            raise _Refusal(404, "unknown_episode", "no live episode has this id (never opened, "
                           "or expired)")
        return sess

    def expires_in(self, sess: _Session) -> float:
        """Seconds until ``sess`` expires."""
        return max(0.0, round(self.s.ttl_s - (self.clock() - sess.opened), 3))


def episodes_router(env: Any, settings: EpisodeSettings | None = None,
                    clock: Callable[[], float] = time.monotonic) -> APIRouter:
    """The ``/v1/episodes`` routes over the scoring environment ``env`` (module doc)."""
    s = settings or EpisodeSettings()
    store = EpisodeStore(ResearchEnv(env, budget=s.default_budget), s, clock)
    router = APIRouter(tags=["episodes"])
    router.store = store  # type: ignore[attr-defined]  (tests and operators read it)

    def closed(sess: _Session) -> None:
        if sess.episode.done:
            raise _Refusal(409, "episode_over", "the episode has ended; open a new one")

    def check_formula(f: str, field: str) -> None:
        if len(f) > s.max_formula_chars:
            raise _Refusal(422, "formula_too_long", f"{field}: {len(f)} characters, the limit "
                           f"is {s.max_formula_chars}")

    def submitted(sess: _Session, res: Any) -> dict[str, Any]:
        card = res.info.get("card")
        text = sess.episode.transcript_json()
        out: dict[str, Any] = {"observation": res.observation, "reward": res.reward,
                               "outcome": res.info.get("outcome"), "done": True,
                               "truncated": res.truncated, "transcript_sha256": _sha(text)}
        if card is not None:
            ctext = card.to_json(timings=False)
            out.update(card=card.to_dict(timings=False), card_sha256=_sha(ctext))
        return out

    @router.post("/v1/episodes", status_code=201)
    def open_episode(req: NewEpisode) -> Response:
        try:
            _check_unicode(req)
            if req.brief is not None and req.brief_id is not None:
                raise _Refusal(422, "invalid_request", "give brief or brief_id, not both")
            brief = req.brief if req.brief_id is None else store.brief_of(req.brief_id)
            budget = s.default_budget if req.budget is None else req.budget
            if budget > s.max_budget:
                raise _Refusal(422, "budget_too_large", f"budget {budget} exceeds the limit of "
                               f"{s.max_budget}")
            sid, sess = store.open(brief, budget)
        except _Refusal as exc:
            return _error(exc)
        ep = sess.episode
        return _json({"id": sid, "observation": ep.prompt(), "messages": ep.messages(),
                      "tools": list(TOOL_SPECS), "budget": ep.budget, "calls_left": ep.calls_left,
                      "expires_in_s": store.expires_in(sess)}, 201)

    @router.post("/v1/episodes/{episode_id}/tool")
    def call_tool(episode_id: str, req: ToolRequest) -> Response:
        try:
            _check_unicode(req)
            sess = store.get(episode_id)
            if req.name not in TOOL_NAMES:
                raise _Refusal(422, "unknown_tool", f"unknown tool {req.name!r}; the tools are "
                               f"{', '.join(TOOL_NAMES)}")
            args = req.arguments
            for k, v in (args.items() if isinstance(args, dict) else ()):
                if isinstance(v, str):
                    check_formula(v, f"arguments.{k}")
            if isinstance(args, str):
                check_formula(args, "arguments")
            with sess.lock:
                closed(sess)
                with store.score_lock:
                    res = sess.episode.step({"name": req.name, "arguments": args})
        except _Refusal as exc:
            return _error(exc)
        if res.done:
            return _json(submitted(sess, res))
        return _json({"observation": res.observation, "result": res.info["result"],
                      "calls_left": sess.episode.calls_left, "done": False, "truncated": False,
                      "reward": None})

    @router.post("/v1/episodes/{episode_id}/submit")
    def submit(episode_id: str, req: SubmitRequest) -> Response:
        try:
            _check_unicode(req)
            check_formula(req.formula, "formula")
            sess = store.get(episode_id)
            with sess.lock:
                closed(sess)
                with store.score_lock:
                    res = sess.episode.submit(req.formula)
        except _Refusal as exc:
            return _error(exc)
        return _json(submitted(sess, res))

    @router.get("/v1/episodes/{episode_id}")
    def transcript(episode_id: str) -> Response:
        try:
            sess = store.get(episode_id)
        except _Refusal as exc:
            return _error(exc)
        with sess.lock:
            text = sess.episode.transcript_json()
        return _json(json_safe({"transcript": sess.episode.transcript(), "done": sess.episode.done,
                                "transcript_sha256": _sha(text),
                                "expires_in_s": store.expires_in(sess)}))

    return router
