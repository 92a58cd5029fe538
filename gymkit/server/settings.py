"""Server settings: one frozen dataclass of every limit and knob of ``gymkit serve``.

Limits are request budgets, checked before any scoring: they decide whether a request is
accepted (413/422/429), never whether an answer is valid — validity depends only on the
DSL's deterministic budgets (size, nodes, lookback).  ``job_timeout_s`` is a last-resort
wall-clock guard on a worker (the request gets 503 ``worker_timeout``), not a scoring rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["HARD_MAX_ANSWER_CHARS", "HARD_MAX_COMPLETIONS", "ServerSettings"]

#: Ceilings written into the OpenAPI schema; configured limits may only be lower.
HARD_MAX_COMPLETIONS = 1024
HARD_MAX_ANSWER_CHARS = 1 << 20
#: Bind addresses that only this host can reach.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class ServerSettings:
    """Everything ``gymkit serve`` is configured with (defaults are the CLI defaults).

    host/port: bind address (loopback by default).  workers: scoring processes.
    token: bearer token every route but /health and /ready requires (None = open).
    max_body_bytes: request body limit (413).  max_completions: answers per request (422).
    max_answer_chars: the longest answer a request may carry, reasoning included (beyond: 422
    for the request).  An answer within it but over gymkit's own answer limit
    (:data:`gymkit.dsl.extract.MAX_ANSWER_CHARS`) is scored, as ``env.score`` scores it: an
    invalid card (``answer_too_long``), so one runaway generation costs its own reward only.
    queue_limit: scoring jobs admitted at once, running or waiting (beyond: 429).
    job_timeout_s: last-resort wall-clock limit of one job; the worker is killed and replaced.
    header_timeout_s: a client must finish its request headers within this (slow-loris guard).
    body_timeout_s: ... and send its body within this (408).
    retry_after_s: the Retry-After of a 429.  idempotency_cache: commit responses remembered.
    limit_concurrency: open connections + tasks uvicorn accepts before answering 503.
    graceful_timeout_s: how long shutdown waits for in-flight requests.
    archive_db: SQLite file of the archive and the commit ledger (``":memory:"``: not persisted).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    env_id: str = "us46-default"
    workers: int = 2
    token: str | None = None
    max_body_bytes: int = 16 << 20
    max_completions: int = 256
    max_answer_chars: int = HARD_MAX_ANSWER_CHARS  # the request guard; env.score judges the rest
    queue_limit: int = 64
    job_timeout_s: float = 120.0
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    retry_after_s: int = 1
    idempotency_cache: int = 4096
    limit_concurrency: int = 512
    graceful_timeout_s: float = 60.0
    archive_db: str = ":memory:"

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("host", "env_id", "token", "archive_db"):
                continue
            if not isinstance(v, int | float):
                raise ValueError(f"server setting {f.name} must be a number, got {v!r}")
            low_ok = v >= 0 if f.name == "port" else v > 0  # port 0 = any free port
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                    or not low_ok:
                raise ValueError(f"server setting {f.name} must be a positive number, got {v!r}")
        if self.token is not None and not self.token.strip():
            raise ValueError("server setting token must be non-empty when given")
        if self.max_completions > HARD_MAX_COMPLETIONS:
            raise ValueError(f"max_completions {self.max_completions} exceeds the ceiling "
                             f"{HARD_MAX_COMPLETIONS}")
        if self.max_answer_chars > HARD_MAX_ANSWER_CHARS:
            raise ValueError(f"max_answer_chars {self.max_answer_chars} exceeds the ceiling "
                             f"{HARD_MAX_ANSWER_CHARS}")

    @property
    def loopback(self) -> bool:
        """True when the server listens on loopback only (commits then need no token)."""
        return self.host in LOOPBACK_HOSTS or self.host.startswith("127.")

    def limits(self) -> dict[str, float | int]:
        """The request limits, as published by ``GET /v1/info``."""
        return {"max_body_bytes": self.max_body_bytes, "max_completions": self.max_completions,
                "max_answer_chars": self.max_answer_chars, "queue_limit": self.queue_limit,
                "job_timeout_s": self.job_timeout_s, "header_timeout_s": self.header_timeout_s,
                "body_timeout_s": self.body_timeout_s, "workers": self.workers}
