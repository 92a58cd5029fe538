"""The verifier server's ASGI app: routes, request guard, error handlers, metrics.

:func:`create_app` takes a built environment, a started :class:`~gymkit.server.pool.WorkerPool`
and :class:`~gymkit.server.settings.ServerSettings`.  Scoring never runs on the event loop:
every scoring route awaits a pool job; the loop only validates, concatenates the cards' JSON
bytes (computed in the workers) and sends them.

Errors: every non-2xx body is ``{"error": {"code": ..., "message": ...}}`` with a one-line
message, never a traceback or a path.  Codes: ``invalid_request`` (422), ``malformed_json``
(400), ``too_many_completions`` / ``answer_too_long`` / ``invalid_unicode`` (422), ``body_too_large`` (413),
``body_timeout`` (408), ``unsupported_media_type`` (415: a body sent without a JSON content type),
``unauthorized`` (401), ``commits_disabled`` (403: the server listens
beyond loopback without a token), ``not_found`` (404), ``method_not_allowed``
(405), ``queue_full`` (429 + Retry-After), ``worker_died`` / ``worker_timeout`` /
``pool_unavailable`` / ``shutting_down`` (503), ``archive_version_conflict`` /
``request_id_conflict`` (409), ``internal_error`` (500); from the connection layer
(:mod:`.protocol`): ``bad_request`` (400, a request the HTTP parser rejects) and
``server_busy`` (503 at the connection limit).  ``invalid_unicode`` is an unpaired surrogate
(``"\\ud800"``) in a string; ``answer_too_long`` is any answer over the server's configured
request limit (``max_answer_chars``) or the hard ceiling; an answer within it but over
gymkit's own answer limit is scored, as ``env.score`` scores it (an invalid card).  Allowed methods of a 405 are in its ``Allow`` header.

Commits are persisted by the pool (:mod:`gymkit.archive_db`): the archive's versions and the
idempotency ledger survive restarts and are shared by every server on one database file.

Determinism: a card entry is ``{"card_sha256": sha256(card JSON), "card": <card JSON>}`` with
the card JSON byte-identical to ``env.score(...).to_json()``; without ``include_timings`` a
retry against the same archive version returns the same bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from gymkit.adapters.common import brief_text_of
from gymkit.briefs import BRIEF_ID
from gymkit.verifiers.channels import CHANNELS

from .compat import nemo_response_text, nemo_router, openrlhf_filter_score, response_of_query
from .episodes import episodes_router
from .jobs import JobError, dumps
from .metrics import Metrics
from .models import (
    AdvantagesRequest,
    AdvantagesResponse,
    ArchiveResponse,
    CommitRequest,
    CommitResponse,
    ErrorResponse,
    InfoResponse,
    NemoVerifyRequest,
    NemoVerifyResponse,
    OpenRLHFRequest,
    OpenRLHFResponse,
    ScoreGroupRequest,
    ScoreGroupResponse,
    ScoreRequest,
    ScoreResponse,
    SlimeRequest,
    SlimeResponse,
)
from .pool import PoolError, WorkerPool
from .settings import HARD_MAX_ANSWER_CHARS, HARD_MAX_COMPLETIONS, ServerSettings

__all__ = ["create_app"]

#: Routes that never need the bearer token (probes and the spec).
OPEN_PATHS = frozenset({"/health", "/ready", "/openapi.json", "/docs"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found",
                 405: "method_not_allowed", 413: "body_too_large", 415: "unsupported_media_type"}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class RequestError(Exception):
    """A request refused by the server's own checks: HTTP status, code, one-line message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _error_bytes(code: str, message: str) -> bytes:
    return dumps({"error": {"code": code, "message": " ".join(message.split())[:500]}}).encode()


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(_error_bytes(code, message), status_code=status, headers=headers,
                    media_type="application/json")


class RequestGuard:
    """Pure-ASGI outer layer: metrics per request, bearer token, body size and body deadline.

    The body is read here, counting bytes as they stream: a ``Content-Length`` above the limit
    is refused before any body byte is read, a chunked body as soon as the count passes the
    limit (413, ``Connection: close``); a body slower than ``body_timeout_s`` is 408.
    """

    def __init__(self, app: Any, settings: ServerSettings, metrics: Metrics,
                 routes: frozenset[str]) -> None:
        self.app, self.s, self.metrics, self.routes = app, settings, metrics, routes
        self._token = None if settings.token is None else settings.token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = [500]

        async def send_status(msg: dict[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                status[0] = msg["status"]
            await send(msg)

        path, method = scope["path"], scope["method"]
        try:
            refusal = self._check_auth(scope, path)
            if refusal is None and method in _BODY_METHODS:
                receive, refusal = await self._read_body(scope, receive)
            if refusal is not None:
                code, st, msg, extra = refusal
                self.metrics.server_error(code)
                await _send_raw(send_status, st, _error_bytes(code, msg), extra)
                return
            await self.app(scope, receive, send_status)
        finally:
            route = path if path in self.routes else "other"
            self.metrics.request(route, method, status[0], time.perf_counter() - t0)

    def _check_auth(self, scope: Scope, path: str) -> tuple | None:
        if self._token is None or path in OPEN_PATHS:
            return None
        given = b""
        for k, v in scope["headers"]:
            if k == b"authorization":
                given = v
        scheme, _, tok = given.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(tok.strip(), self._token):
            return None
        return ("unauthorized", 401, "a valid 'Authorization: Bearer <token>' header is required",
                [(b"www-authenticate", b"Bearer")])

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[Receive, tuple | None]:
        limit = self.s.max_body_bytes
        for k, v in scope["headers"]:
            if k == b"content-length" and v.isdigit() and int(v) > limit:
                return receive, ("body_too_large", 413, f"request body of {int(v)} bytes exceeds "
                                 f"the limit of {limit} bytes", [(b"connection", b"close")])
        chunks: list[bytes] = []

        async def read() -> bool:
            n = 0
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return False
                body = msg.get("body", b"")
                n += len(body)
                if n > limit:
                    return False
                chunks.append(body)
                if not msg.get("more_body", False):
                    return True

        try:
            complete = await asyncio.wait_for(read(), self.s.body_timeout_s)
        except TimeoutError:
            return receive, ("body_timeout", 408, f"request body not received within "
                             f"{self.s.body_timeout_s:g} s", [(b"connection", b"close")])
        if not complete:
            return receive, ("body_too_large", 413, f"request body exceeds the limit of {limit} "
                             "bytes", [(b"connection", b"close")])
        body = b"".join(chunks)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay, None


async def _send_raw(send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]]) -> None:
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _loc(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _cards_json(entries: list[dict[str, Any]], timings: bool) -> str:
    parts = []
    for e in entries:
        s = '{"card_sha256":"' + e["sha256"] + '","card":' + e["json"]
        if timings:
            s += ',"timings":' + dumps(e["timings"])
        parts.append(s + "}")
    return "[" + ",".join(parts) + "]"


def _json(text: str, status: int = 200) -> Response:
    return Response(text.encode("utf-8"), status_code=status, media_type="application/json")


_ERR = {s: {"model": ErrorResponse} for s in (400, 401, 413, 422, 429, 503)}
#: Request fields holding answers: an over-long string there is ``answer_too_long``.
_ANSWER_FIELDS = frozenset({"completions", "response", "query", "output"})
#: JSON has no infinity: an unbounded side of a channel's value range is published as this.
UNBOUNDED = sys.float_info.max


#: (request schema, property) whose size the server checks against its configured limits
_LIMITED = (("ScoreRequest", "completions"), ("ScoreGroupRequest", "completions"),
            ("CommitRequest", "completions"), ("SlimeRequest", "response"),
            ("AdvantagesRequest", "channels"), ("OpenRLHFRequest", "query"))


def _publish_limits(schema: dict[str, Any], s: ServerSettings) -> dict[str, Any]:
    """Write the configured limits into the spec where the models carry the hard ceilings, so
    the spec admits exactly what the server accepts (``maxItems`` of answer lists, and the
    ``maxLength`` of answers the server checks itself)."""
    def walk(node: Any, lengths: bool) -> None:
        if isinstance(node, dict):
            if node.get("maxItems") == HARD_MAX_COMPLETIONS:
                node["maxItems"] = s.max_completions
            if lengths and node.get("maxLength") == HARD_MAX_ANSWER_CHARS:
                node["maxLength"] = s.max_answer_chars
            for v in node.values():
                walk(v, lengths)
        elif isinstance(node, list):
            for v in node:
                walk(v, lengths)

    models = schema.get("components", {}).get("schemas", {})
    for name, prop in _LIMITED:
        node = models.get(name, {}).get("properties", {}).get(prop)
        if node is not None:  # OpenRLHF queries hold the prompt too: their length is not the answer's
            walk(node, lengths=name != "OpenRLHFRequest")
    return schema


def create_app(env: Any, pool: WorkerPool, settings: ServerSettings | None = None) -> FastAPI:
    """The FastAPI app serving ``env`` through ``pool`` (module doc).  The app's shutdown
    lets admitted jobs finish, then stops the pool."""
    s = settings or ServerSettings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        pool.attach()
        yield
        await pool.aclose(s.graceful_timeout_s)

    app = FastAPI(title="gymkit verifier", version=env.gymkit_version, lifespan=lifespan,
                  docs_url="/docs", redoc_url=None, openapi_url="/openapi.json",
                  description="Deterministic scoring of formulaic-alpha answers (DESIGN §8). "
                  "Cards are byte-identical to gymkit's Python API.")
    app.state.pool, app.state.metrics, app.state.settings = pool, metrics, s

    channel_rows = [{"id": c.id, "name": c.name, "priority": env.config.priorities[c.name],
                     "active": c.name in env.channels,
                     "value_range": [max(-UNBOUNDED, min(UNBOUNDED, float(v))) for v in c.value_range]}
                    for c in CHANNELS]

    def archive_state() -> dict[str, Any]:
        return {"version": pool.archive_key[0], "digest": pool.archive_key[1],
                "size": pool.archive_size, "capacity": pool.archive_capacity}

    def check_answers(items: Sequence[str], field: str) -> None:
        if len(items) > s.max_completions:
            raise RequestError(422, "too_many_completions", f"body.{field}: {len(items)} items, "
                               f"the limit is {s.max_completions}")
        for i, a in enumerate(items):
            if len(a) > s.max_answer_chars:
                raise RequestError(422, "answer_too_long", f"body.{field}[{i}]: {len(a)} "
                                   f"characters, the limit is {s.max_answer_chars}")
            check_unicode(a, f"{field}[{i}]")

    def check_unicode(text: str | None, where: str) -> None:
        if text is None or text.isascii():
            return
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no tokenizer produces it
            raise RequestError(422, "invalid_unicode", f"body.{where}: unpaired surrogate at "
                               f"character {exc.start}") from None

    async def run(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        res = await pool.run(kind, payload)
        metrics.observe("gymkit_job_duration_seconds", time.perf_counter() - t0, (("kind", kind),))
        if "cards" in res:
            metrics.cards(res["cards"])
        if "share_nonzero" in res:
            metrics.share_nonzero(res["share_nonzero"])
        return res

    # ------------------------------------------------------------ error handlers
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Any, exc: RequestValidationError) -> Response:
        errs = exc.errors()
        first = errs[0] if errs else {"loc": ("body",), "msg": "invalid request", "type": ""}
        if first.get("type") == "json_invalid":
            metrics.server_error("malformed_json")
            return _error(400, "malformed_json", "request body is not valid JSON")
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        where = _loc(first["loc"])
        kind = first.get("type")
        ctype = request.headers.get("content-type", "")
        if tuple(first["loc"]) == ("body",) and "json" not in ctype.lower():
            metrics.server_error("unsupported_media_type")  # e.g. curl -d's form encoding
            return _error(415, "unsupported_media_type", "request body must be JSON: send "
                          f"'content-type: application/json' (got {ctype[:80]!r})")
        if kind == "too_long" and len(first["loc"]) == 2 and first["loc"][0] == "body" \
                and isinstance(first.get("input"), list):  # over the hard ceiling: same words
            metrics.server_error("too_many_completions")
            return _error(422, "too_many_completions", f"{where}: {len(first['input'])} items, "
                          f"the limit is {s.max_completions}")
        if kind == "string_unicode":  # a lone surrogate (e.g. "\ud800"): not valid Unicode
            metrics.server_error("invalid_unicode")
            return _error(422, "invalid_unicode", f"{where}: unpaired surrogate (the text is "
                          f"not valid Unicode){more}")
        if kind == "string_too_long" and set(first["loc"]) & _ANSWER_FIELDS:
            limit = (first.get("ctx") or {}).get("max_length", HARD_MAX_ANSWER_CHARS)
            size = first.get("input")
            size = f"{len(size)} characters" if isinstance(size, str) else \
                f"longer than {limit} characters"
            metrics.server_error("answer_too_long")
            return _error(422, "answer_too_long", f"{where}: {size}, the limit is "
                          f"{s.max_answer_chars}{more}")
        metrics.server_error("invalid_request")
        return _error(422, "invalid_request", f"{where}: {first['msg']}{more}")

    @app.exception_handler(RequestError)
    async def _refused(request: Any, exc: RequestError) -> Response:
        metrics.server_error(exc.code)
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(JobError)
    async def _job_refused(request: Any, exc: JobError) -> Response:
        metrics.server_error(exc.code)
        return _error(422, exc.code, exc.message)

    @app.exception_handler(PoolError)
    async def _pool_failed(request: Any, exc: PoolError) -> Response:
        metrics.server_error(exc.code)
        if exc.code in ("worker_died", "worker_timeout"):
            metrics.inc("gymkit_worker_restarts_total", (("reason", exc.code),))
        headers = {"Retry-After": str(s.retry_after_s)} if exc.status in (429, 503) else None
        return _error(exc.status, exc.code, exc.message, headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Any, exc: StarletteHTTPException) -> Response:
        code = _STATUS_CODES.get(exc.status_code, f"http_{exc.status_code}")
        metrics.server_error(code)
        return _error(exc.status_code, code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _crash(request: Any, exc: Exception) -> Response:
        metrics.server_error("internal_error")
        return _error(500, "internal_error", "internal server error")

    # --------------------------------------------------------------- probes
    @app.get("/health", summary="liveness", responses={503: {"description": "cannot serve"}})
    async def health() -> Response:
        """200 ``{"status": "ok"}`` while the server can serve: a scoring worker is alive or can
        be started; 503 ``{"status": "unavailable"}`` when the pool cannot serve."""
        if pool.serviceable:
            return JSONResponse({"status": "ok"})
        return JSONResponse({"status": "unavailable"}, status_code=503)

    @app.get("/ready", summary="readiness", responses={503: {"description": "not ready"}})
    async def ready() -> Response:
        """Environment and data loaded and at least one scoring worker alive (checked now)."""
        alive = pool.alive
        body = {"ready": pool.ready, "workers_alive": alive, "workers": pool.n_workers,
                "spawner_alive": pool.spawner_alive,
                "env_id": env.config.env_id, "stress_worlds": bool(env.config.stress_worlds),
                "archive_version": pool.archive_key[0]}
        return JSONResponse(body, status_code=200 if pool.ready else 503)

    @app.get("/v1/info", response_model=InfoResponse, responses=_ERR)
    async def info() -> dict[str, Any]:
        """gymkit version, environment id and fingerprints, channel table, limits."""
        return {"gymkit_version": env.gymkit_version, "env_id": env.config.env_id,
                "env_fingerprint": env.fingerprint, "data_fingerprint": env.data_fingerprint,
                "channels": channel_rows, "notes": list(env.notes), "archive": archive_state(),
                "limits": s.limits()}

    @app.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    async def prometheus() -> Response:
        """Prometheus text format."""
        gauges = {
            "gymkit_queue_depth": ("Scoring jobs admitted (running + waiting)", [((), pool.pending)]),
            "gymkit_queue_limit": ("Most scoring jobs admitted at once", [((), pool.queue_limit)]),
            "gymkit_workers_alive": ("Live scoring workers", [((), pool.alive)]),
            "gymkit_archive_version": ("Novelty archive version", [((), pool.archive_key[0])]),
        }
        return Response(metrics.render(gauges), media_type="text/plain; version=0.0.4; charset=utf-8")

    # -------------------------------------------------------------- scoring
    @app.post("/v1/score", response_model=ScoreResponse, responses=_ERR)
    async def score(req: ScoreRequest) -> Response:
        """Score each completion alone (``env.score``); cards in request order."""
        check_answers(req.completions, "completions")
        res = await run("score", {"completions": list(req.completions)})
        return _json('{"cards":' + _cards_json(res["cards"], req.include_timings) + "}")

    @app.post("/v1/score_group", response_model=ScoreGroupResponse, responses=_ERR)
    async def score_group(req: ScoreGroupRequest) -> Response:
        """Score G answers to one prompt (``env.score_group``) with GDPO advantages."""
        check_answers(req.completions, "completions")
        check_unicode(req.brief, "brief")
        brief = req.brief
        if brief is not None and BRIEF_ID.fullmatch(brief):  # an id, as `gymkit briefs` lists
            brief = brief_text_of(brief)                     # them and dataset rows carry them
            if brief is None:
                raise RequestError(422, "unknown_brief", f"body.brief: {req.brief!r} has the form "
                                   "of a brief id, but no generated brief has it; send the "
                                   "brief's text (R13 would not count)")
        res = await run("score_group", {"completions": list(req.completions), "brief": brief})
        return _json('{"cards":' + _cards_json(res["cards"], req.include_timings)
                     + ',"channels":' + dumps(res["channels"]) + ',"advantages":'
                     + dumps(res["advantages"]) + ',"diagnostics":' + dumps(res["diagnostics"]) + "}")

    @app.post("/v1/advantages", response_model=AdvantagesResponse, responses=_ERR)
    async def advantages(req: AdvantagesRequest) -> Response:
        """``gdpo_advantages`` of a channel matrix (pure; no scoring, no state)."""
        if len(req.channels) > s.max_completions:
            raise RequestError(422, "too_many_completions", f"body.channels: {len(req.channels)} "
                               f"rows, the limit is {s.max_completions}")
        res = await run("advantages", req.model_dump())
        return _json('{"advantages":' + dumps(res["advantages"]) + ',"diagnostics":'
                     + dumps(res["diagnostics"]) + "}")

    # -------------------------------------------------------------- archive
    @app.get("/v1/archive", response_model=ArchiveResponse, responses=_ERR)
    async def archive() -> dict[str, Any]:
        """The novelty archive's version, content digest, size and capacity."""
        return archive_state()

    @app.post("/v1/archive/commit", response_model=CommitResponse,
              responses={**_ERR, 403: {"model": ErrorResponse}, 409: {"model": ErrorResponse}})
    async def commit(req: CommitRequest) -> Response:
        """Add the valid answers to the archive; idempotent by ``request_id`` (persisted)."""
        if s.token is None and not s.loopback:
            raise RequestError(403, "commits_disabled", "commits need a bearer token when the "
                               f"server listens beyond loopback ({s.host}); start it with --token")
        check_answers(req.completions, "completions")
        key = hashlib.sha256(json.dumps([req.completions, req.expected_version]).encode()).hexdigest()

        def render(res: dict[str, Any]) -> str:
            return dumps({"request_id": req.request_id, "added": res["added"],
                          "previous_version": res["previous_version"], "version": res["version"],
                          "digest": res["digest"], "size": res["size"], "capacity": res["capacity"]})

        text = await pool.commit({"completions": list(req.completions)}, req.expected_version,
                                 request_id=req.request_id, body_sha256=key, render=render)
        return _json(text)

    # ---------------------------------------------------------- compatibility
    @app.post("/get_reward", response_model=OpenRLHFResponse, responses=_ERR,
              tags=["compatibility"])
    async def openrlhf(req: OpenRLHFRequest) -> Response:
        """OpenRLHF remote reward: the answer is taken from the end of each chat-templated query."""
        prompts = req.prompts or [None] * len(req.query)
        texts = [response_of_query(q, p)[0] for q, p in zip(req.query, prompts, strict=True)]
        check_answers(texts, "query")
        res = await run("score", {"completions": texts})
        cards = res["cards"]
        rewards = [e["reward"] for e in cards]
        logs: dict[str, list[float]] = {"valid": [1.0 if e["valid"] else 0.0 for e in cards]}
        for name in env.channels:
            logs[name] = [e["channels"][name] for e in cards]
        scores = [openrlhf_filter_score(e["valid"], e["reward"]) for e in cards]  # compat.py
        return _json(dumps({"rewards": rewards, "scores": scores, "extra_logs": logs}))

    @app.post("/v1/rm", response_model=SlimeResponse, responses=_ERR, tags=["compatibility"])
    async def slime(req: SlimeRequest) -> Response:
        """slime remote reward: scores ``response``; use ``--reward-key reward``."""
        check_answers([req.response], "response")
        e = (await run("score", {"completions": [req.response]}))["cards"][0]
        return _json(dumps({"reward": e["reward"], "valid": e["valid"], "channels": e["channels"],
                            "error_code": e["error"], "card_sha256": e["sha256"]}))

    @app.post("/verify", response_model=NemoVerifyResponse, responses=_ERR, tags=["compatibility"])
    async def nemo(req: NemoVerifyRequest) -> Response:
        """NeMo-Gym resources-server verify: the request echoed with reward and reward_components."""
        text = nemo_response_text(req.response.output)
        check_answers([text], "response.output")
        e = (await run("score", {"completions": [text]}))["cards"][0]
        body = req.model_dump(mode="json")
        body.update(reward=e["reward"], reward_components=e["channels"], valid=e["valid"],
                    error_code=e["error"], card_sha256=e["sha256"])
        return _json(dumps(body))

    app.include_router(nemo_router)  # /seed_session, /aggregate_metrics (compat.py)
    app.include_router(episodes_router(env))  # /v1/episodes: research sessions (episodes.py)
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _publish_limits(FastAPI.openapi(app), s)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    routes = frozenset(r.path for r in app.routes if hasattr(r, "path"))
    app.add_middleware(RequestGuard, settings=s, metrics=metrics, routes=routes)
    return app
