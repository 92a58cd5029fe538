"""The native oracle (playbook layer 2): formula values → book → net P&L → statistics.

One entry point, :func:`backtest`.  It slices the panel to what the mode may see
(train: ``split.train(panel)`` only; holdout: history up to ``holdout_end``),
builds the book on the judged days (:mod:`.windows`), charges the cost model,
and returns a :class:`BacktestResult` with the daily series, :class:`Metrics`,
CPCV, the factor regression, the cost model's configuration and per-phase timings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gymkit.data.panel import Panel
from gymkit.data.splits import DEFAULT_SPLIT, Split

from .book import book_pnl
from .context import window_context
from .costs import CostModel, RealisticCosts, TrainCosts
from .cpcv import CPCV, CPCVResult
from .factors import FactorExposure
from .metrics import Metrics, compute_metrics
from .windows import BURN_IN

__all__ = ["BacktestResult", "backtest", "backtest_cpcv", "default_costs"]

_DEFAULT_CPCV = CPCV()


_DEFAULT_TRAIN_COSTS = TrainCosts()  # frozen dataclasses: one shared instance each
_DEFAULT_HOLDOUT_COSTS = RealisticCosts()


def default_costs(mode: str) -> CostModel:
    """The default cost model of a mode: TrainCosts for 'train', RealisticCosts for 'holdout'."""
    return _DEFAULT_TRAIN_COSTS if mode == "train" else _DEFAULT_HOLDOUT_COSTS


@dataclass(frozen=True)
class BacktestResult:
    """One formula backtested on one window.

    Daily series over the judged days, labelled by signal date (``dates``):
    ``gross`` and ``net`` returns, ``cost``, ``turnover``, ``market`` (equal-weight
    open-to-open), ``long``/``short`` leg contributions, ``ic`` (NaN where undefined),
    ``weights`` (D, N).  Summaries: ``metrics``, ``cpcv``, ``factors``.  Provenance:
    ``mode``, ``costs`` (the cost model's ``to_dict()``), ``cpcv_params``,
    ``panel_fingerprint`` (of the window panel the oracle saw), ``split``.
    ``timings``: seconds per phase (book, costs, metrics, cpcv, factors, total).
    """

    mode: str
    dates: np.ndarray
    weights: np.ndarray
    gross: np.ndarray
    net: np.ndarray
    cost: np.ndarray
    turnover: np.ndarray
    market: np.ndarray
    long: np.ndarray
    short: np.ndarray
    ic: np.ndarray
    metrics: Metrics
    cpcv: CPCVResult
    factors: FactorExposure
    costs: dict
    cpcv_params: dict
    panel_fingerprint: str
    split: dict
    timings: dict[str, float] = field(compare=False)

    def to_dict(self, series: bool = False) -> dict[str, object]:
        """Return a JSON-ready dict of the summaries (and the daily series when ``series``)."""
        d: dict[str, object] = {
            "mode": self.mode,
            "first_date": str(self.dates[0]),
            "last_date": str(self.dates[-1]),
            "metrics": self.metrics.to_dict(),
            "cpcv": self.cpcv.to_dict(),
            "factors": self.factors.to_dict(),
            "costs": dict(self.costs),
            "cpcv_params": dict(self.cpcv_params),
            "panel_fingerprint": self.panel_fingerprint,
            "split": dict(self.split),
            "timings": dict(self.timings),
        }
        if series:
            d["series"] = {
                "dates": [str(x) for x in self.dates],
                **{k: getattr(self, k).tolist() for k in ("gross", "net", "cost", "turnover", "market")},
            }
        return d


def backtest(
    values: np.ndarray,
    panel: Panel,
    split: Split = DEFAULT_SPLIT,
    mode: str = "train",
    costs: CostModel | None = None,
    *,
    cpcv: CPCV | None = None,
    burn_in: int = BURN_IN,
) -> BacktestResult:
    """Backtest formula ``values`` (T, N), aligned row for row with ``panel``, on one window.

    ``mode='train'`` judges the train window from ``split.train(panel)`` only (values
    of later rows are never read); ``mode='holdout'`` judges the holdout sessions with
    earlier sessions as history.  ``costs`` defaults to :func:`default_costs` of the
    mode; ``cpcv`` defaults to ``CPCV()`` (6 blocks, 2 test blocks, purge 10, embargo 5).
    Raises ``ValueError`` naming the problem for misshapen values or an empty window.
    """
    t0 = time.perf_counter()
    cost_model, cv, ctx, window_values = _prepare(values, panel, split, mode, costs, cpcv, burn_in)
    wp, jw = ctx.panel, ctx.judged
    t1 = time.perf_counter()

    book = book_pnl(window_values, ctx.fwd, jw.rows, fwd_by_stock=ctx.fwd_by_stock)
    t2 = time.perf_counter()

    inputs = ctx.cost_inputs(cost_model.vol_window, cost_model.adv_window) if cost_model.needs_market else None
    cost = cost_model.daily(book.weights, book.turnover, inputs)
    net = book.gross - cost
    t3 = time.perf_counter()

    metrics = compute_metrics(net, book.gross, book.turnover, book.ic, book.long, book.short, ctx.market)
    t4 = time.perf_counter()

    cv_result = cv.evaluate(net, full_sharpe=metrics.sharpe)  # paths = the whole window's Sharpe
    t5 = time.perf_counter()

    exposure = ctx.factors.regress(book.gross, cost)  # gross on gross factors, then costs
    t6 = time.perf_counter()

    for a in (book.weights, book.gross, book.turnover, book.long, book.short, book.ic, cost, net):
        a.setflags(write=False)
    return BacktestResult(
        mode=mode,
        dates=jw.dates,
        weights=book.weights,
        gross=book.gross,
        net=net,
        cost=cost,
        turnover=book.turnover,
        market=ctx.market,
        long=book.long,
        short=book.short,
        ic=book.ic,
        metrics=metrics,
        cpcv=cv_result,
        factors=exposure,
        costs=cost_model.to_dict(),
        cpcv_params=cv.to_dict(),
        panel_fingerprint=wp.fingerprint,
        split={"train_start": split.train_start, "train_end": split.train_end,
               "holdout_start": split.holdout_start, "holdout_end": split.holdout_end},
        timings={"setup": t1 - t0, "book": t2 - t1, "costs": t3 - t2, "metrics": t4 - t3,
                 "cpcv": t5 - t4, "factors": t6 - t5, "total": t6 - t0},
    )


def backtest_cpcv(
    values: np.ndarray,
    panel: Panel,
    split: Split = DEFAULT_SPLIT,
    mode: str = "train",
    costs: CostModel | None = None,
    *,
    cpcv: CPCV | None = None,
    burn_in: int = BURN_IN,
) -> CPCVResult:
    """The :class:`CPCVResult` of :func:`backtest` with the same arguments, bit for bit, and
    nothing else: the book, the costs, the net P&L and CPCV — no metrics, no factor
    regression (what a stress world needs; skipping the book's IC passes too paid 1.7% of a
    card and was deleted).  The result's ``path_sharpes`` hold the whole
    window's Sharpe (:func:`CPCV.evaluate` computes it from the net P&L, as the metrics do).
    Raises like :func:`backtest`.
    """
    cost_model, cv, ctx, window_values = _prepare(values, panel, split, mode, costs, cpcv, burn_in)
    book = book_pnl(window_values, ctx.fwd, ctx.judged.rows, fwd_by_stock=ctx.fwd_by_stock)
    inputs = ctx.cost_inputs(cost_model.vol_window, cost_model.adv_window) if cost_model.needs_market else None
    net = book.gross - cost_model.daily(book.weights, book.turnover, inputs)
    return cv.evaluate(net)


def _prepare(values, panel, split, mode, costs, cpcv, burn_in):
    """Checked inputs of a backtest: (cost model, CPCV, window context, the window's values)."""
    if not isinstance(panel, Panel):
        raise TypeError(f"backtest needs a gymkit.data.Panel, got {type(panel).__name__}")
    v = np.asarray(values)
    if v.ndim != 2 or v.shape != (panel.T, panel.N):
        raise ValueError(f"formula values have shape {v.shape}, expected the panel's ({panel.T}, {panel.N})")
    cost_model = default_costs(mode) if costs is None else costs
    if not hasattr(cost_model, "daily") or not hasattr(cost_model, "to_dict"):
        raise TypeError(f"costs must be a cost model object (TrainCosts/RealisticCosts), got {cost_model!r}")
    cv = _DEFAULT_CPCV if cpcv is None else cpcv
    ctx = window_context(panel, split, mode, burn_in)
    i0 = int(np.searchsorted(panel.dates, ctx.panel.dates[0], "left"))
    return cost_model, cv, ctx, v[i0 : i0 + ctx.panel.T]
