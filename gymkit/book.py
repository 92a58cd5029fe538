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

__all__ = ["DOWN_DAY", "book_report", "book_stats"]

#: A market day below this return is a down day.
DOWN_DAY = -0.015


def book_stats(book: np.ndarray, market: np.ndarray, members: np.ndarray) -> dict[str, Any]:
    """Statistics of one (D,) daily book against the (D,) market; ``members`` (D, M) for bets."""
    from gymkit.verifiers.metrics import max_drawdown, sharpe
    from gymkit.verifiers.portfolio import effective_number_of_bets

    var_m = float(np.var(market))
    cov = float(np.mean((book - book.mean()) * (market - market.mean())))
    sd = float(np.std(book)) * float(np.sqrt(var_m))
    down = market < DOWN_DAY
    return {
        "members": int(members.shape[1]),
        "return": float(np.prod(1.0 + book) - 1.0),
        "sharpe": sharpe(book),
        "beta": cov / var_m if var_m > 0 else 0.0,
        "corr": cov / sd if sd > 0 else 0.0,
        "max_drawdown": max_drawdown(book),
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
    a second look at the same environment and formula set raises
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
