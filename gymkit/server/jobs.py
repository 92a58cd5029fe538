"""What a worker process does: one table of job kinds, each a function of (environment, payload).

Jobs run in the pool's worker processes (never on the server's event loop).  Each returns
plain picklable data; the cards' deterministic JSON (``card.to_json(timings=False)``) and its
sha256 are computed here, so the server only concatenates bytes.  ``JOBS`` is module state
on purpose: workers are forked after it is read, so a test may swap an entry before the pool
starts (e.g. a slow job) without any hook in the serving code.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from gymkit.advantages import gdpo_advantages
from gymkit.card import ScoreCard, json_safe
from gymkit.env import Environment

__all__ = ["JOBS", "JobError", "card_entry", "dumps"]


class JobError(Exception):
    """A job refused its payload: ``code`` and a one-line ``message`` go back to the client."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON (the encoding score cards use)."""
    return json.dumps(json_safe(obj), separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def card_entry(card: ScoreCard) -> dict[str, Any]:
    """One card as the server ships it: deterministic JSON text, its sha256, and a summary."""
    text = card.to_json(timings=False)
    return {
        "json": text,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "reward": json_safe(card.reward),
        "valid": bool(card.valid),
        "channels": json_safe(dict(card.channels)),
        "error": None if card.error is None else card.error.code,
        "timings": json_safe(dict(card.timings)),
    }


def _score(env: Environment, payload: dict[str, Any]) -> dict[str, Any]:
    """Each completion scored alone (``env.score``), in order."""
    return {"cards": [card_entry(env.score(c)) for c in payload["completions"]]}


def _advantage_result(adv: np.ndarray, info: Any) -> dict[str, Any]:
    return {"advantages": [float(a) for a in adv], "diagnostics": json_safe(info.to_dict()),
            "share_nonzero": float(info.share_nonzero)}


def _score_group(env: Environment, payload: dict[str, Any]) -> dict[str, Any]:
    """One group (``env.score_group``) with its GDPO advantages and diagnostics."""
    cards = env.score_group(list(payload["completions"]), brief=payload.get("brief"))
    with warnings.catch_warnings():  # the floor-trap warning is reported in the diagnostics
        warnings.simplefilter("ignore", RuntimeWarning)
        adv, info = env.group_advantages(cards)
    out = _advantage_result(adv, info)
    out["cards"] = [card_entry(c) for c in cards]
    out["channels"] = list(env.channels)
    return out


def _advantages(env: Environment, payload: dict[str, Any]) -> dict[str, Any]:
    """Pure ``gdpo_advantages`` of a given channel matrix (bad shapes → ``invalid_request``)."""
    x = np.array(payload["channels"], dtype=np.float64)
    if x.ndim != 2:
        raise JobError("invalid_request", "body.channels: rows must all have the same length")
    prio = payload.get("priorities")
    p = env.priorities if prio is None else np.array(prio, dtype=np.float64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            adv, info = gdpo_advantages(x, p, np.array(payload["valid"], dtype=bool),
                                        floor=payload.get("floor"), core=payload.get("core", 0),
                                        guarded=payload.get("guarded"))
    except ValueError as exc:
        raise JobError("invalid_request", str(exc)) from None
    return _advantage_result(adv, info)


def _archive_state(env: Environment) -> dict[str, Any]:
    arc = env.archive
    return {"version": arc.version, "digest": arc.digest, "size": len(arc),
            "capacity": arc.capacity}


def _commit(env: Environment, payload: dict[str, Any]) -> dict[str, Any]:
    """``env.commit`` of the completions; returns the new archive state and its snapshot."""
    before = env.archive.version
    added = env.commit(list(payload["completions"]))
    return {"added": added, "previous_version": before, **_archive_state(env),
            "blob": env.archive_snapshot()}


def _restore(env: Environment, payload: dict[str, Any]) -> dict[str, Any]:
    """Replace the worker's archive with a snapshot (keeps every worker on one version)."""
    env.archive_restore(payload["blob"])
    return _archive_state(env)


def _archive(env: Environment, payload: dict[str, Any]) -> dict[str, Any]:
    return _archive_state(env)


#: job kind -> function(environment, payload) -> picklable result
JOBS: dict[str, Callable[[Environment, dict[str, Any]], dict[str, Any]]] = {
    "score": _score,
    "score_group": _score_group,
    "advantages": _advantages,
    "commit": _commit,
    "restore": _restore,
    "archive": _archive,
}


def run_job(env: Environment, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Dispatch one job (unknown kinds → ``JobError``)."""
    fn = JOBS.get(kind)
    if fn is None:
        raise JobError("unknown_job", f"unknown job kind {kind!r}")
    return fn(env, payload)

