"""NeMo-Gym resources server of the research gym: the four tools as endpoints, one episode per
rollout, ``/seed_session``, ``/verify`` and ``/aggregate_metrics`` (issue 25).

NeMo-Gym's agent (``responses_api_agents/simple_agent``) drives a resources server thus, and
this server answers each step (contract read from nemo_gym/base_resources_server.py and the
simple agent, and checked against nemo-gym's own pydantic models where it is installed):

1. ``POST /seed_session`` with the dataset row (``responses_create_params`` plus the row's own
   fields): a new :class:`~gymkit.research.ResearchEpisode` opens for the row's ``brief_id``
   (a generated brief) or ``brief`` (its text) and ``budget`` (default 8); the answer is
   ``{}`` (``BaseSeedSessionResponse``) and the session cookie :data:`SESSION_COOKIE`.
2. For each ``function_call`` the model emits: ``POST /{name}`` (``/backtest``, ``/compare``,
   ``/describe``, ``/submit``) with the call's JSON arguments as the body and the cookie.  The
   body is the tool message the model reads: exactly the episode's observation (canonical
   JSON, the bytes ``ResearchEpisode.step`` returns for that call).  Bad arguments are a
   counted call answered with the episode's one-line error, as in every other interface.
3. ``POST /verify`` with the row and the final Responses object: when the episode is still
   open, the last assistant message is read (``<alpha>formula</alpha>`` there is a submit;
   anything else ends the episode without a submission, reward ``NO_SUBMIT_REWARD``).  The
   answer is the request echoed with ``reward`` (the research reward), ``reward_components``
   (the submitted card's channels after deflation — 0.0 each when nothing valid was
   submitted, so the keys are the same on every rollout — plus ``deflation`` and
   ``tool_cost``), and top-level ``valid``, ``submitted``, ``n_trials``, ``n_effective``,
   ``n_calls``, ``delta``, ``card_sha256`` and ``transcript_sha256`` (NeMo-Gym's
   ``BaseMultiRewardVerifyResponse``; its metrics read top-level numbers).  A second verify of
   the same session answers the same.
4. ``POST /aggregate_metrics``: NeMo-Gym's RewardProfiler statistics
   (:func:`gymkit.server.compat.aggregate_metrics`): per task and overall mean/max/min/median/
   std of every numeric field, ``key_metrics`` the means.

NeMo-Gym keeps only the cookies of the *last* answer, so every answer (errors included)
re-sends the session cookie, as NeMo-Gym's own session middleware does.  A tool call or verify
without a live session is 404 ``unknown_session``; a tool call after the episode ended is 409
``episode_over``.  Sessions are limited and expire as the ``/v1/episodes`` routes' (the same
:class:`~gymkit.research.sessions.EpisodeSessions`): this module only translates NeMo-Gym's
calls to it and to the episode, and their answers back.

:func:`dataset_rows` writes the rows a NeMo-Gym dataset file holds (the prompt as Responses
input, the tools in the Responses function-tool shape).  Serve with ``python -m
gymkit.adapters.research_nemo_gym --port 8000 [--env us46-research]`` (it scores one formula
before listening, :func:`warm_up`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from gymkit.briefs import DEFAULT_N, DEFAULT_SEED, generate_briefs, split_briefs
from gymkit.research import (
    DEFAULT_BUDGET,
    NO_SUBMIT_REWARD,
    TOOL_NAMES,
    TOOL_SPECS,
    ResearchEnv,
    canonical_json,
)
from gymkit.research.episode import ResearchEpisode
from gymkit.research.sessions import EpisodeSessions, EpisodeSettings, Refusal
from gymkit.server.compat import (
    NemoAggregateMetricsRequest,
    aggregate_metrics,
    nemo_response_text,
)

__all__ = ["END_REASON", "SESSION_COOKIE", "WARM_UP_FORMULA", "create_app", "dataset_rows", "main",
           "responses_tools", "warm_up"]

#: The cookie that names a rollout's session (a random 128-bit token).
SESSION_COOKIE = "gymkit_research_session"
#: How verify ends an episode whose final message is not one ``<alpha>`` answer.
END_REASON = "the rollout ended with neither a submit call nor one <alpha> answer"
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
_OVER = "the episode has ended (submitted or out of budget): only /verify is left"


#: The formula :func:`warm_up` scores.
WARM_UP_FORMULA = "rank(-ts_sum(returns, 5))"


def warm_up(env: Any) -> None:
    """Score :data:`WARM_UP_FORMULA` once (with a generated brief), so the scorer's JIT kernels
    are compiled before the first request: on a cold kernel cache that compile takes about a
    minute on a small machine, the length of a NeMo-Gym or verifiers request timeout."""
    env.score(f"<alpha>{WARM_UP_FORMULA}</alpha>", brief=generate_briefs(1)[0].text)


def responses_tools() -> list[dict[str, Any]]:
    """The four tools in the Responses API function-tool shape NeMo-Gym rows carry
    (``{"type": "function", "name", "description", "parameters", "strict"}``)."""
    return [{"type": "function", "name": t["function"]["name"],
             "description": t["function"]["description"],
             "parameters": t["function"]["parameters"], "strict": True} for t in TOOL_SPECS]


def dataset_rows(env_id: str = "us46-research", split: str = "train",
                 budget: int = DEFAULT_BUDGET, n_briefs: int = DEFAULT_N,
                 brief_seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """One NeMo-Gym dataset row per brief of ``split``: ``responses_create_params`` (the
    episode's system and user messages as ``input``, :func:`responses_tools`), ``brief_id``
    and ``budget`` (read back by ``/seed_session``)."""
    if split not in ("train", "holdout", "probe"):
        raise ValueError(f"split must be 'train', 'holdout' or 'probe', got {split!r}")
    from gymkit.adapters.common import get_env

    renv = ResearchEnv(get_env(env_id), budget=budget)
    rows = []
    for b in split_briefs(generate_briefs(n_briefs, brief_seed), split):
        msgs = renv.episode(b.text).messages()
        rows.append({"responses_create_params": {"input": msgs, "tools": responses_tools()},
                     "brief_id": b.brief_id, "budget": budget})
    return rows


class SeedSession(BaseModel):
    """``/seed_session``: the dataset row; ``brief_id`` or ``brief`` and ``budget`` are read."""

    model_config = ConfigDict(extra="allow")
    brief_id: str | None = Field(default=None, max_length=64)
    brief: str | None = Field(default=None, max_length=4000)
    budget: int | None = Field(default=None, ge=0, le=1000)


class VerifyRequest(BaseModel):
    """``/verify`` (``BaseVerifyRequest``): the row and the final Responses object."""

    model_config = ConfigDict(extra="allow")
    responses_create_params: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json(obj: Any, status: int = 200) -> Response:
    try:
        data = canonical_json(obj).encode("utf-8")
    except UnicodeEncodeError:
        data, status = canonical_json({"error": {"code": "invalid_unicode", "message": (
            "the request holds text that is not valid Unicode (a lone surrogate)")}}).encode(), 422
    return Response(data, status_code=status, media_type="application/json")


def _error(exc: Refusal) -> Response:
    return _json({"error": {"code": exc.code, "message": exc.message}}, exc.status)


def _outcome_fields(ep: ResearchEpisode, channels: tuple[str, ...]) -> dict[str, Any]:
    """reward, reward_components and the top-level metrics of an ended episode."""
    out = ep.result.to_dict() if ep.result is not None else {}
    card = ep.final_card
    valid = bool(out.get("valid"))
    ch = out.get("channels") or {}
    comps = {k: (float(ch[k]) if valid and k in ch else 0.0) for k in channels}
    comps.update({k: float(v) for k, v in (out.get("research_channels") or {}).items()})
    return {"reward": float(out.get("reward", NO_SUBMIT_REWARD)), "reward_components": comps,
            "valid": valid, "submitted": bool(out.get("submitted")),
            "n_trials": int(out.get("n_trials", 0)), "n_effective": float(out.get("n_effective", 0)),
            "n_calls": int(out.get("n_calls", 0)), "delta": float(out.get("deflation", 0.0)),
            "card_sha256": None if card is None else _sha(card.to_json(timings=False)),
            "transcript_sha256": _sha(ep.transcript_json())}


def create_app(env: Any = None, settings: EpisodeSettings | None = None,
               clock: Callable[[], float] | None = None) -> FastAPI:
    """The resources server (module doc) over the scoring environment ``env`` (default: the
    process's ``us46-research``); ``settings`` bound the sessions as for ``/v1/episodes``."""
    import time

    if env is None:
        from gymkit.adapters.common import get_env

        env = get_env("us46-research")
    s = settings or EpisodeSettings()
    store = EpisodeSessions(ResearchEnv(env, budget=s.default_budget), s, clock or time.monotonic)
    channels = tuple(env.channels)
    app = FastAPI(title="gymkit research (NeMo-Gym resources server)")
    app.state.store = store

    @app.middleware("http")
    async def resend_cookie(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        sid = getattr(request.state, "new_session", None) or request.cookies.get(SESSION_COOKIE)
        if sid is not None and _TOKEN.match(sid):
            response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="lax")
        return response

    def session_of(request: Request) -> Any:
        sid = request.cookies.get(SESSION_COOKIE)
        if sid is None or not _TOKEN.match(sid):
            raise Refusal(404, "unknown_session", "no research session: call /seed_session "
                          "first and send back its cookie " + SESSION_COOKIE)
        try:
            return store.get(sid)
        except Refusal:
            raise Refusal(404, "unknown_session", "no live research session has this cookie "
                          "(never seeded, or expired)") from None

    @app.post("/seed_session")
    def seed_session(request: Request, body: SeedSession) -> Response:
        """Open this rollout's episode; answer ``{}`` and the session cookie."""
        try:
            sid, _ = store.open(body.brief, body.brief_id, body.budget)
        except Refusal as exc:
            return _error(exc)
        request.state.new_session = sid
        return _json({})

    def run_tool(sid_request: Request, name: str, args: Any) -> Response:
        try:
            sess = session_of(sid_request)
            store.check_arguments(args, "")
            res = store.run(sess, _OVER, lambda ep: ep.step({"name": name, "arguments": args}))
        except Refusal as exc:
            return _error(exc)
        return Response(res.observation.encode("utf-8"), media_type="application/json")

    def tool_route(name: str) -> Callable[..., Any]:
        async def call(request: Request) -> Response:
            raw = await request.body()
            if len(raw) > 4 * s.max_formula_chars + 1024:
                return _error(Refusal(413, "body_too_large", f"the tool call body has "
                                      f"{len(raw)} bytes"))
            try:
                text = raw.decode("utf-8")
                args: Any = json.loads(text) if text.strip() else {}
            except (UnicodeDecodeError, json.JSONDecodeError):
                args = raw.decode("utf-8", "replace")  # the episode answers "not JSON"
            return await run_in_threadpool(run_tool, request, name, args)

        call.__name__ = f"tool_{name}"
        call.__doc__ = (f"The research tool ``{name}``: the body is its JSON arguments (schema: "
                        "gymkit.research.TOOL_SPECS); the answer is the tool message.")
        return call

    for name in TOOL_NAMES:
        app.post(f"/{name}")(tool_route(name))

    @app.post("/verify")
    def verify(request: Request, body: VerifyRequest) -> Response:
        """End the episode if still open (module doc); the request echoed with the reward."""
        try:
            sess = session_of(request)
            with sess.lock:
                ep = sess.episode
                if not ep.done:
                    text = nemo_response_text(list(body.response.get("output") or []))
                    with store.score_lock:
                        ep.finish(text, END_REASON)
                fields = _outcome_fields(ep, channels)
        except Refusal as exc:
            return _error(exc)
        return _json({**body.model_dump(mode="json"), **fields})

    @app.post("/aggregate_metrics")
    def aggregate(body: NemoAggregateMetricsRequest) -> Response:
        """NeMo-Gym's RewardProfiler statistics of the verify responses."""
        return _json(aggregate_metrics(body.verify_responses))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        e = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        return _error(Refusal(422, "invalid_request", f"{request.url.path}: {where}: "
                              f"{e.get('msg', 'invalid request')}"))

    return app


def main(argv: list[str] | None = None) -> None:
    """Serve the resources server with uvicorn (``--host``, ``--port``, ``--env``)."""
    import uvicorn

    from gymkit.adapters.common import get_env

    ap = argparse.ArgumentParser(prog="python -m gymkit.adapters.research_nemo_gym",
                                 description="gymkit research gym as a NeMo-Gym resources server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--env", default="us46-research", help="environment id (default %(default)s)")
    args = ap.parse_args(argv)
    env = get_env(args.env)
    warm_up(env)
    uvicorn.run(create_app(env), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
