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

The sessions and their limits are :mod:`gymkit.research.sessions`' (shared with the NeMo-Gym
resources server); this module only translates HTTP to its calls and back.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from gymkit.card import json_safe
from gymkit.research import TOOL_NAMES, TOOL_SPECS, ResearchEnv, StepResult, canonical_json
from gymkit.research.sessions import EpisodeSessions, EpisodeSettings, Refusal, Session

__all__ = ["EpisodeSettings", "EpisodeStore", "episodes_router"]

#: The session store (kept under its first name: ``router.store`` is one).
EpisodeStore = EpisodeSessions
_OVER = "the episode has ended; open a new one"


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


def _json(obj: Any, status: int = 200) -> Response:
    return Response(canonical_json(obj).encode("utf-8"), status_code=status,
                    media_type="application/json")


def _error(exc: Refusal) -> Response:
    return _json({"error": {"code": exc.code, "message": exc.message}}, exc.status)


def _check_unicode(req: BaseModel) -> None:
    """422 for text that is not encodable as UTF-8 (lone surrogates from JSON escapes)."""
    try:
        canonical_json(req.model_dump()).encode("utf-8")
    except UnicodeEncodeError:
        raise Refusal(422, "invalid_unicode", "the request holds text that is not valid "
                      "Unicode (a lone surrogate)") from None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def episodes_router(env: Any, settings: EpisodeSettings | None = None,
                    clock: Callable[[], float] = time.monotonic) -> APIRouter:
    """The ``/v1/episodes`` routes over the scoring environment ``env`` (module doc)."""
    s = settings or EpisodeSettings()
    store = EpisodeSessions(ResearchEnv(env, budget=s.default_budget), s, clock)
    router = APIRouter(tags=["episodes"])
    router.store = store  # type: ignore[attr-defined]  (tests and operators read it)

    def submitted(sess: Session, res: StepResult) -> dict[str, Any]:
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
            sid, sess = store.open(req.brief, req.brief_id, req.budget)
        except Refusal as exc:
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
                raise Refusal(422, "unknown_tool", f"unknown tool {req.name!r}; the tools are "
                              f"{', '.join(TOOL_NAMES)}")
            args = req.arguments
            store.check_arguments(args, "arguments.")
            if isinstance(args, str):
                store.check_formula(args, "arguments")
            res = store.run(sess, _OVER, lambda ep: ep.step({"name": req.name, "arguments": args}))
        except Refusal as exc:
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
            store.check_formula(req.formula, "formula")
            sess = store.get(episode_id)
            res = store.run(sess, _OVER, lambda ep: ep.submit(req.formula))
        except Refusal as exc:
            return _error(exc)
        return _json(submitted(sess, res))

    @router.get("/v1/episodes/{episode_id}")
    def transcript(episode_id: str) -> Response:
        try:
            sess = store.get(episode_id)
        except Refusal as exc:
            return _error(exc)
        with sess.lock:
            text = sess.episode.transcript_json()
        return _json(json_safe({"transcript": sess.episode.transcript(), "done": sess.episode.done,
                                "transcript_sha256": _sha(text),
                                "expires_in_s": store.expires_in(sess)}))

    return router
