"""Live research episodes by id: the session state every stateful interface shares (issue 25).

The ``/v1/episodes`` routes (:mod:`gymkit.server.episodes`) and the NeMo-Gym resources server
(:mod:`gymkit.adapters.research_nemo_gym`) hold their episodes here; each is a translation of
its wire shape onto :class:`EpisodeSessions` and :class:`~gymkit.research.ResearchEpisode`.

* :meth:`EpisodeSessions.open` starts a session (a brief's text or a generated brief's id, a
  budget of at most ``max_budget``; at most ``max_sessions`` live);
* a session expires ``ttl_s`` seconds after it was opened (:meth:`~EpisodeSessions.get` then
  refuses it like an id never issued);
* :meth:`EpisodeSessions.run` applies one call to a live, open episode: the session's calls are
  serialised and the scoring runs under one lock (the environment is shared).

Refusals are :class:`Refusal` (an HTTP status, a code, a one-line message); the interfaces
write them in their own error shape.  No web framework is imported here.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .episode import ResearchEnv, ResearchEpisode, StepResult

__all__ = ["EpisodeSessions", "EpisodeSettings", "Refusal", "Session"]


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


class Refusal(Exception):
    """A request refused before or instead of an episode call: HTTP ``status``, ``code`` and a
    one-line ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Session:
    """One live episode, when it was opened (the store's clock) and its call lock."""

    episode: ResearchEpisode
    opened: float
    lock: threading.Lock


class EpisodeSessions:
    """The live sessions of one process, with expiry and a session cap (module doc)."""

    def __init__(self, renv: ResearchEnv, settings: EpisodeSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.renv, self.s, self.clock = renv, settings, clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.score_lock = threading.Lock()

    def _sweep(self, now: float) -> None:
        for k in [k for k, v in self._sessions.items() if now - v.opened >= self.s.ttl_s]:
            del self._sessions[k]

    @staticmethod
    def brief_of(brief_id: str) -> str:
        """The text of a generated brief (the default generator's); 404 ``unknown_brief``."""
        from gymkit.adapters.common import brief_text_of

        text = brief_text_of(brief_id)
        if text is None:
            raise Refusal(404, "unknown_brief", f"no generated brief has id {brief_id!r}")
        return text

    def open(self, brief: str | None, brief_id: str | None,
             budget: int | None) -> tuple[str, Session]:
        """Start a session for ``brief`` or the generated brief ``brief_id`` (not both; neither:
        no brief) with ``budget`` calls (None: ``default_budget``); refused with 422
        ``invalid_request`` / ``budget_too_large``, 404 ``unknown_brief``, 429
        ``too_many_sessions``."""
        if brief is not None and brief_id is not None:
            raise Refusal(422, "invalid_request", "give brief or brief_id, not both")
        text = brief if brief_id is None else self.brief_of(brief_id)
        budget = self.s.default_budget if budget is None else budget
        if budget > self.s.max_budget:
            raise Refusal(422, "budget_too_large", f"budget {budget} exceeds the limit of "
                          f"{self.s.max_budget}")
        now = self.clock()
        with self._lock:
            self._sweep(now)
            if len(self._sessions) >= self.s.max_sessions:
                raise Refusal(429, "too_many_sessions", f"{len(self._sessions)} sessions are "
                              f"open, the limit is {self.s.max_sessions}; finish or let one expire")
            sid = secrets.token_hex(16)
            sess = Session(self.renv.episode(text, budget), now, threading.Lock())
            self._sessions[sid] = sess
        return sid, sess

    def get(self, sid: str) -> Session:
        """The live session ``sid``; 404 ``unknown_episode`` when unknown or expired."""
        now = self.clock()
        with self._lock:
            self._sweep(now)
            sess = self._sessions.get(sid)
        if sess is None:
            raise Refusal(404, "unknown_episode", "no live episode has this id (never opened, "
                          "or expired)")
        return sess

    def expires_in(self, sess: Session) -> float:
        """Seconds until ``sess`` expires."""
        return max(0.0, round(self.s.ttl_s - (self.clock() - sess.opened), 3))

    def check_formula(self, text: str, field: str) -> None:
        """422 ``formula_too_long`` naming ``field`` when ``text`` exceeds the limit."""
        if len(text) > self.s.max_formula_chars:
            raise Refusal(422, "formula_too_long", f"{field}: {len(text)} characters, the limit "
                          f"is {self.s.max_formula_chars}")

    def check_arguments(self, args: Any, prefix: str) -> None:
        """:meth:`check_formula` on each text value of a tool call's ``args`` (an object), the
        field named ``prefix + key``."""
        for k, v in (args.items() if isinstance(args, dict) else ()):
            if isinstance(v, str):
                self.check_formula(v, f"{prefix}{k}")

    def run(self, sess: Session, over: str,
            call: Callable[[ResearchEpisode], StepResult]) -> StepResult:
        """``call(episode)`` with the session's and the scoring lock held; 409
        ``episode_over`` (message ``over``) when the episode has already ended."""
        with sess.lock:
            if sess.episode.done:
                raise Refusal(409, "episode_over", over)
            with self.score_lock:
                return call(sess.episode)
