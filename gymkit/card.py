"""The score card: everything the verifier says about one answer, JSON-safe and reproducible.

Fields: ``valid``; ``error`` (:class:`CardError` code + message + position, or None);
``channels`` (active channel name → raw value, in registry order); ``reward`` (the scalar
reward: Σ priority·channel, capped at 0 when the motif guard R10 fires, in the valid band
[−2, ∞) for a valid answer; a fixed −3.5 / −3.0 / −2.5 for a tag / text / book-gate failure:
every invalid answer below every valid one, see ``verifiers/channels.py``); ``metrics`` (backtest
statistics, CPCV slices and paths, factor betas, novelty and structure facts; empty when the
oracle never ran); ``timings`` (seconds per phase: parse, evaluate, book, cpcv, factors,
novelty, channels, stress, total); ``notes`` (e.g. channels that are off and why); the
formula as written and its bucketed canonical text; provenance (env id, env fingerprint,
data fingerprint, archive version and digest, gymkit version, brief digest).

JSON encoding (:meth:`ScoreCard.to_dict`): non-finite floats (NaN, ±inf) become ``null``;
numpy scalars become Python numbers; tuples become lists.  Timings are the only part that
varies between runs, so they live under their own key and ``to_dict(timings=False)`` /
``to_json(timings=False)`` is byte-identical for the same formula, environment and archive
version in any process.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TIMING_PHASES", "CardError", "ScoreCard", "json_safe"]

#: Phases of :attr:`ScoreCard.timings`, in order ('stress' is 0 until stress worlds exist).
TIMING_PHASES = ("parse", "evaluate", "book", "cpcv", "factors", "novelty", "channels", "stress",
                 "total")


def json_safe(x: Any) -> Any:
    """Return ``x`` with NaN/±inf → None, numpy scalars/arrays → Python, tuples → lists."""
    if isinstance(x, bool | str) or x is None:
        return x
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        v = float(x)
        return v if math.isfinite(v) else None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple | np.ndarray):
        return [json_safe(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, frozenset | set):
        return sorted(json_safe(v) for v in x)
    raise TypeError(f"score card value of type {type(x).__name__} is not JSON-serialisable")


@dataclass(frozen=True)
class CardError:
    """Why an answer is invalid: a stable ``code``, a one-line ``message``, a character
    ``position`` (in the formula text for DSL errors, in the whole answer for tag errors;
    None where not applicable) and the ``layer`` that rejected it ('gate' for text checks,
    'book' for checks on the oracle's book)."""

    code: str
    message: str
    position: int | None = None
    layer: str = "gate"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"code": self.code, "message": self.message, "position": self.position,
                "layer": self.layer}


@dataclass(frozen=True)
class ScoreCard:
    """One scored answer (module doc).  Build cards with the environment, not by hand."""

    valid: bool
    error: CardError | None
    channels: dict[str, float]
    reward: float
    metrics: dict[str, Any]
    timings: dict[str, float]
    notes: tuple[str, ...]
    formula: str | None
    canonical: str | None
    env_id: str
    env_fingerprint: str
    data_fingerprint: str
    archive_version: int
    archive_digest: str
    gymkit_version: str
    brief_digest: str | None = None
    # Daily net train P&L over the judged days (read-only); kept for env.commit, not serialised.
    pnl: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def motif_capped(self) -> bool:
        """True when the motif guard (R10) fired and capped the reward at 0."""
        return bool(self.metrics.get("motif_guard", False))

    def channel_vector(self, names: tuple[str, ...] | None = None) -> np.ndarray:
        """Raw channel values as a float64 vector, in ``names`` order (default: card order)."""
        keys = tuple(self.channels) if names is None else names
        return np.array([self.channels[k] for k in keys], dtype=np.float64)

    def to_dict(self, timings: bool = True) -> dict[str, Any]:
        """JSON-safe dict (module doc); ``timings=False`` leaves out the only varying part."""
        d: dict[str, Any] = {
            "valid": self.valid,
            "error": None if self.error is None else self.error.to_dict(),
            "reward": self.reward,
            "channels": dict(self.channels),
            "formula": self.formula,
            "canonical": self.canonical,
            "metrics": self.metrics,
            "notes": list(self.notes),
            "env_id": self.env_id,
            "env_fingerprint": self.env_fingerprint,
            "data_fingerprint": self.data_fingerprint,
            "archive_version": self.archive_version,
            "archive_digest": self.archive_digest,
            "gymkit_version": self.gymkit_version,
            "brief_digest": self.brief_digest,
        }
        if timings:
            d["timings"] = dict(self.timings)
        return json_safe(d)

    def to_json(self, timings: bool = False) -> str:
        """Compact JSON text of :meth:`to_dict` (deterministic when ``timings=False``)."""
        return json.dumps(self.to_dict(timings=timings), separators=(",", ":"), allow_nan=False,
                          ensure_ascii=False)
