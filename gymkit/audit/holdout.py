"""Holdout checks: train-mode isolation by garbage, and the frozen holdout (hash + train-path spy).

DESIGN §2: train-mode code receives only the train slice and cannot see holdout rows at all.
Two complementary checks:

- ``holdout_isolation`` (behaviour): replace every holdout row of the market by garbage
  (random prices, NaN holes); a fresh environment on the poisoned market must produce cards
  byte-identical to the original's on every field but the two fingerprints (the archive digest
  included: seeding is a train path too).
- ``frozen_holdout`` (structure): the holdout rows are hashed when the target is built and
  again at the end (they must exist and be unchanged), and :class:`TrainPathSpy` records every
  panel that the environment's construction and scoring hand to the evaluator, the oracle and
  the window context: none may contain a session after ``train_end``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from gymkit.data.panel import BASE_FIELDS, Panel

from .formulas import probe_answers
from .result import CheckResult
from .target import AuditTarget, holdout_digest

__all__ = ["TrainPathSpy", "check_frozen_holdout", "check_holdout_isolation", "poison_holdout"]

#: (module, attribute) of every train-path entry point the spy wraps, and the position of the
#: Panel argument.  Scoring calls evaluate/backtest through gymkit.scoring's namespace; the
#: environment and the oracle build window contexts through their own imports.
#: Stress worlds (R3) are re-scored through gymkit.scoring.world_score when configured.
#: The formula -> backtest helper (gymkit.oracle) is wrapped too, for any train path that
#: goes through it.  Every row must exist: a renamed entry point is an error, not a silent
#: gap in the spy (``gymkit.env`` once lost ``window_context`` and its row went unnoticed).
SPIED: tuple[tuple[str, str, int], ...] = (
    ("gymkit.scoring", "evaluate", 1),
    ("gymkit.scoring", "backtest", 1),
    ("gymkit.scoring", "world_score", 1),
    ("gymkit.oracle", "evaluate", 1),
    ("gymkit.oracle", "backtest", 1),
    ("gymkit.env", "window_panel", 0),
    ("gymkit.verifiers.oracle", "window_context", 0),
)


class TrainPathSpy:
    """Context manager: wraps the :data:`SPIED` functions and logs ``(name, T, last date)``
    of each Panel they receive.  Restores the originals on exit, even on error.  Not
    thread-safe (it patches module attributes): use it around single-threaded code."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int, str]] = []
        self._saved: list[tuple[Any, str, Callable]] = []

    def _wrap(self, name: str, fn: Callable, pos: int) -> Callable:
        def spy(*args: Any, **kwargs: Any) -> Any:
            panel = args[pos] if len(args) > pos else kwargs.get("panel")
            if isinstance(panel, Panel):
                self.log.append((name, panel.T, str(panel.dates[-1]) if panel.T else ""))
            return fn(*args, **kwargs)
        spy.__wrapped__ = fn  # type: ignore[attr-defined]
        return spy

    def __enter__(self) -> TrainPathSpy:
        for mod_name, attr, pos in SPIED:
            mod = importlib.import_module(mod_name)
            fn = getattr(mod, attr, None)
            if fn is None:
                self.__exit__()
                raise AttributeError(f"TrainPathSpy: {mod_name}.{attr} no longer exists; update "
                                     "gymkit.audit.holdout.SPIED to the current entry point")
            self._saved.append((mod, attr, fn))
            setattr(mod, attr, self._wrap(f"{mod_name}.{attr}", fn, pos))
        return self

    def __exit__(self, *exc: object) -> None:
        for mod, attr, fn in reversed(self._saved):
            setattr(mod, attr, fn)
        self._saved.clear()


def poison_holdout(market: Panel, holdout: np.ndarray, seed: int = 0) -> Panel:
    """``market`` with every holdout row of every field replaced by garbage (random positive
    values on the field's scale, 10% NaN holes)."""
    rng = np.random.default_rng(seed)
    fields = {}
    for name in (*BASE_FIELDS, "cap"):
        a = getattr(market, name)
        if a is None:
            continue
        a = np.array(a)
        rows = a[holdout]
        junk = rng.uniform(0.01, 3.0, rows.shape) * (np.nanmean(np.abs(a)) or 1.0)
        junk[rng.random(rows.shape) < 0.1] = np.nan
        a[holdout] = junk
        fields[name] = a
    return market.replace(**fields)


def _public(card_dict: dict[str, Any]) -> str:
    d = {k: v for k, v in card_dict.items() if k not in ("env_fingerprint", "data_fingerprint")}
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def check_holdout_isolation(target: AuditTarget) -> CheckResult:
    """Cards are byte-identical (fingerprints aside) when the holdout rows are garbage."""
    from gymkit.env import Environment

    env = target.env
    hold = target.config.split_obj.holdout_mask(target.market.dates)
    n_hold = int(hold.sum())
    if n_hold == 0:
        return CheckResult("holdout_isolation", False, "the market has no holdout rows",
                           ("configure a split whose holdout window covers sessions of the panel",))
    poisoned = poison_holdout(target.market, hold)
    other = Environment(target.config, poisoned, split_note=env.split_note)
    answers = probe_answers(env)
    a = [_public(c.to_dict(timings=False)) for c in env.score_group(answers)]
    b = [_public(c.to_dict(timings=False)) for c in other.score_group(answers)]
    bad = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    same_archive = env.archive.digest == other.archive.digest
    ok = not bad and same_archive and poisoned.fingerprint != target.market.fingerprint
    detail = [f"poisoned market fingerprint {poisoned.fingerprint[:12]} "
              f"(original {target.market.fingerprint[:12]})",
              f"archive digest {'equal' if same_archive else 'DIFFERS'} after seeding on the "
              "poisoned market"]
    detail += [f"card differs: {answers[i][:80]!r}" for i in bad[:5]]
    return CheckResult(
        "holdout_isolation", ok,
        f"{len(a) - len(bad)}/{len(a)} cards byte-identical with {n_hold} holdout rows "
        f"replaced by garbage; archive {'equal' if same_archive else 'differs'}", tuple(detail))


def check_frozen_holdout(target: AuditTarget) -> CheckResult:
    """Holdout rows hashed and unchanged; no train-path hand-off carries a holdout session."""
    env = target.env
    split = target.config.split_obj
    n_hold = int(split.holdout_mask(target.market.dates).sum())
    with TrainPathSpy() as spy:
        env.score_group(probe_answers(env))
        env.reset(seed=0, options={"brief": "audit"})
        env.step("<alpha>rank(-ts_delta(close, 5))</alpha>")
    log = [*target.spy_log, *spy.log]
    end = np.datetime64(split.train_end, "D")
    leaks = [(n, t, d) for n, t, d in log if d and np.datetime64(d, "D") > end]
    now = holdout_digest(target.market, target.config)
    ok = n_hold > 0 and not leaks and now == target.holdout_digest and bool(log)
    detail = [f"holdout sha256 {target.holdout_digest} ({n_hold} rows "
              f"{split.holdout_start}..{split.holdout_end})",
              f"train-path hand-offs seen: {len(log)} ({len(target.spy_log)} while building the "
              f"environment, {len(spy.log)} while scoring)"]
    if now != target.holdout_digest:
        detail.append(f"holdout rows CHANGED during the audit: now {now}")
    detail += [f"{n} received a panel of {t} sessions ending {d}" for n, t, d in leaks[:5]]
    if not log:
        detail.append("the spy saw no hand-off: the scoring path is not the one audited")
    figure = (f"{n_hold} holdout rows, sha256 {target.holdout_digest[:12]} unchanged; "
              f"{len(leaks)} of {len(log)} train-path hand-offs reach past {split.train_end}")
    if n_hold == 0:
        figure = "no holdout rows on this market"
    return CheckResult("frozen_holdout", ok, figure, tuple(detail))
