"""Books of formulas (alpha post §3, §8): equal-weight and correlation-capped, with their risk.

Input: answer rows (``gymkit probe`` format; checkpoints pooled).  Valid answers only.

* ``equal_weight`` — every valid answer, 1/M of the capital each.
* ``correlation_capped`` — the seed's selector on TRAIN-window facts only (no holdout leak):
  sort by train CPCV (R1), skip turnover < 2%, skip a formula whose train P&L has
  |corr| ≥ 0.5 with any member; equal weight over the members.

Each book is reported on ``window`` ('train': the judged train days with training costs;
'holdout': the holdout year with the realistic costs, a look recorded in the holdout ledger
and refused a second time, as for ``probe --holdout``): compounded return, annualised
Sharpe, beta and correlation to the equal-weight market, max drawdown, down days (market
below −1.5%: count, mean market, mean book), the effective number of bets of the members'
P&L, and the member count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DOWN_DAY", "book_report", "book_stats", "market_relative"]

#: A market day below this return is a down day.
DOWN_DAY = -0.015


def market_relative(book: np.ndarray, market: np.ndarray) -> dict[str, float]:
    """The statistics every book view shares, of a (D,) daily ``book`` vs the (D,) ``market``:
    compounded ``return``, annualised ``sharpe``, ``beta`` (cov / var of the market; 0 for a
    flat market), ``corr`` (0 when either is flat) and ``max_drawdown``.  Used by
    :func:`book_stats` and the tear sheet's books (:func:`gymkit.report.analysis.book_stats`)."""
    from gymkit.verifiers.metrics import max_drawdown, sharpe

    b = np.asarray(book, dtype=np.float64)
    m = np.asarray(market, dtype=np.float64)
    var_m = float(np.var(m))
    cov = float(np.mean((b - b.mean()) * (m - m.mean())))
    sd = float(np.std(b)) * float(np.sqrt(var_m))
    return {"return": float(np.prod(1.0 + b) - 1.0), "sharpe": sharpe(b),
            "beta": cov / var_m if var_m > 0 else 0.0, "corr": cov / sd if sd > 0 else 0.0,
            "max_drawdown": max_drawdown(b)}


def book_stats(book: np.ndarray, market: np.ndarray, members: np.ndarray) -> dict[str, Any]:
    """Statistics of one (D,) daily book against the (D,) market; ``members`` (D, M) for bets:
    :func:`market_relative`, the down days (market below :data:`DOWN_DAY`), the effective
    number of bets and the market's own return and Sharpe."""
    from gymkit.verifiers.metrics import sharpe
    from gymkit.verifiers.portfolio import effective_number_of_bets

    rel = market_relative(book, market)
    down = market < DOWN_DAY
    return {
        "members": int(members.shape[1]),
        **rel,
        "down_days": int(down.sum()),
        "down_day_market": float(market[down].mean()) if down.any() else 0.0,
        "down_day_book": float(book[down].mean()) if down.any() else 0.0,
        "effective_bets": effective_number_of_bets(members),
        "market_return": float(np.prod(1.0 + market) - 1.0),
        "market_sharpe": sharpe(market),
    }


def book_report(env: Any, completions: Sequence[str], window: str = "train",
                max_corr: float = 0.5, min_turnover: float = 0.02, *, force: bool = False,
                ledger: Any = None) -> dict[str, Any]:
    """Both books of the valid ``completions`` on ``window`` (module doc).

    ``window='holdout'`` first claims the look in the holdout ledger (:mod:`gymkit.holdout`):
    a second look at the same holdout sessions and formula set raises
    :class:`~gymkit.holdout.HoldoutRefused` unless ``force``; the report records the look."""
    from gymkit.verifiers.portfolio import correlation_capped_selection, equal_weight_book

    from .holdout import claim_answers, holdout_backtest

    if window not in ("train", "holdout"):
        raise ValueError(f"window must be 'train' or 'holdout', got {window!r}")
    look = None
    if window == "holdout":  # claimed before any answer is scored or backtested
        look = claim_answers(env, completions, command="gymkit book --window holdout",
                             force=force, ledger=ledger)
    cards = [c for c in (env.score(x) for x in completions) if c.valid and c.pnl is not None]
    if not cards:
        raise ValueError("no valid answers: no book to build")
    train_pnl = np.stack([np.asarray(c.pnl) for c in cards], axis=1)
    scores = np.array([c.channels["cpcv"] for c in cards])
    turns = np.array([c.metrics["turnover"] for c in cards])
    chosen = correlation_capped_selection(scores, turns, train_pnl, max_corr=max_corr,
                                          min_turnover=min_turnover)
    if window == "train":
        pnl = train_pnl
        market = _train_market(env)
    else:
        bts = [holdout_backtest(env, c.formula) for c in cards]
        pnl = np.stack([bt.net for bt in bts], axis=1)
        market = bts[0].market
    out: dict[str, Any] = {"window": window, "n_valid": len(cards), "n_answers": len(completions),
                           "equal_weight": book_stats(equal_weight_book(pnl), market, pnl)}
    if look is not None:
        out["holdout_look"] = {"number": look.number, "forced": look.forced}
    if chosen:
        sub = pnl[:, chosen]
        out["correlation_capped"] = book_stats(equal_weight_book(sub), market, sub)
        out["correlation_capped"]["formulas"] = [cards[i].formula for i in chosen]
    else:
        out["correlation_capped"] = None
    return out


def _train_market(env: Any) -> np.ndarray:
    from gymkit.verifiers.context import window_context

    ctx = window_context(env.setup.train, env.setup.split, "train", env.setup.burn_in)
    return np.asarray(ctx.market)
