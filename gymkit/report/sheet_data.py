"""Tear-sheet data that needs the environment beyond one backtest: quantile returns on each
window's forward returns, and the reference group the R2 rank-drop view ranks against.

The reference group is the novelty archive (the P&L of every accepted formula on the train
window), less any entry with this formula's canonical form: the formula's in-sample and
test Sharpes of each CPCV split are ranked among theirs by R2's own code
(:func:`gymkit.report.quant.rank_drop_by_split`).  On the card R2 is a group channel (0 for
an answer scored alone); this view says what it would be in a group of the archive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gymkit.card import ScoreCard
from gymkit.env import Environment
from gymkit.verifiers.context import window_context
from gymkit.verifiers.oracle import BacktestResult

from .quant import RankDrop, quantile_returns, rank_drop_by_split

__all__ = ["N_QUANTILES", "SheetExtras", "sheet_extras", "window_quantiles"]

N_QUANTILES = 5


@dataclass(frozen=True)
class SheetExtras:
    """Quantile returns (D, 5) per window (None when not run) and the archive rank drop."""

    quantiles_train: np.ndarray | None
    quantiles_holdout: np.ndarray | None
    rank_drop: RankDrop | None


def window_quantiles(values: np.ndarray, panel: object, bt: BacktestResult, env: Environment) -> np.ndarray:
    """(D, 5) daily mean forward return per weight quintile of ``bt``'s book (see quant)."""
    s = env.setup
    ctx = window_context(panel, s.split, bt.mode, s.burn_in)  # type: ignore[arg-type]
    i0 = int(np.searchsorted(panel.dates, ctx.panel.dates[0], "left"))  # type: ignore[attr-defined]
    first, d = ctx.judged.first, bt.weights.shape[0]
    v = np.asarray(values[i0:i0 + ctx.panel.T], dtype=np.float64)[first:first + d]
    fwd = np.asarray(ctx.fwd, dtype=np.float64)[first:first + d]
    return quantile_returns(bt.weights, np.isfinite(v), fwd, N_QUANTILES)


def _rank_drop(env: Environment, card: ScoreCard, train: BacktestResult) -> RankDrop | None:
    arc = env.archive
    if len(arc) == 0:
        return None
    keep = [i for i, f in enumerate(arc.forms) if f != card.canonical]
    if not keep:
        return None
    cv = env.setup.cpcv
    pnl = arc.pnl
    ref = [cv.sharpes(np.ascontiguousarray(pnl[i])) for i in keep]
    ref_test = np.array([t for t, _ in ref])
    ref_is = np.array([i for _, i in ref])
    return rank_drop_by_split(train.cpcv.is_sharpes, train.cpcv.test_sharpes, ref_is, ref_test,
                              scale=env.setup.params.pbo_scale)


def sheet_extras(env: Environment, card: ScoreCard, values_train: np.ndarray, train: BacktestResult,
                 values_full: np.ndarray | None, holdout: BacktestResult | None) -> SheetExtras:
    """Compute :class:`SheetExtras` for one valid answer's backtests."""
    q_tr = window_quantiles(values_train, env.setup.train, train, env)
    q_ho = (window_quantiles(values_full, env.market, holdout, env)
            if holdout is not None and values_full is not None else None)
    return SheetExtras(q_tr, q_ho, _rank_drop(env, card, train))
