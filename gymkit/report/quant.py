"""The statistics a quant expects on a tear sheet (alphalens / pyfolio style), from daily series.

Pure numpy on the arrays a :class:`~gymkit.verifiers.oracle.BacktestResult` carries; no
plotting, no HTML, no environment.  Conventions are the report's: daily series labelled
by signal date, Sharpe annualised with √252, gross exposure 1 (so a turnover of 2 is the
whole book replaced).

* :func:`quantile_returns` — names bucketed each day by the book's weight (Q1 = most
  short, Qn = most long), the mean next open-to-open return of each bucket.
* :func:`worst_drawdowns` — the k deepest peak-to-trough episodes of compounded equity.
* :func:`return_stats` — moments and tails of the daily return distribution.
* :func:`break_even_bps` / :func:`sharpe_at_cost` — the linear cost (bps per unit of
  turnover) at which the net Sharpe is 0, and the Sharpe at any such cost.
* :func:`holding_period` — days a dollar stays in the book, 2 / turnover.
* :func:`rolling_betas` — trailing multivariate OLS betas (with intercept) of a series on factors.
* :func:`rank_drop_by_split` — the R2 rank drop of one formula per CPCV split against a
  reference group, computed by R2's own ranking code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gymkit.verifiers.pbo import rank_drop_penalty

__all__ = [
    "Drawdown",
    "RankDrop",
    "break_even_bps",
    "holding_period",
    "quantile_returns",
    "rank_drop_by_split",
    "return_stats",
    "rolling_betas",
    "sharpe_at_cost",
    "worst_drawdowns",
]

ANN = np.sqrt(252.0)


def _sharpe(r: np.ndarray) -> float:
    r = np.asarray(r, dtype=np.float64)
    if r.size < 2:
        return float("nan")
    sd = float(r.std(ddof=1))
    return float(r.mean() / sd * ANN) if sd > 0 else 0.0


def quantile_returns(weights: np.ndarray, in_book: np.ndarray, fwd: np.ndarray,
                     n_q: int = 5, min_names: int = 10) -> np.ndarray:
    """(D, n_q) mean forward return of each weight quantile, per day (NaN on thin days).

    ``weights`` (D, N) the book, ``in_book`` (D, N) names with a formula value, ``fwd``
    (D, N) the return each weight earns (open(t+1) → open(t+2)).  Each day the names with a
    value and a finite return are ranked by weight (ties averaged) and cut into ``n_q``
    equal buckets; days with fewer than ``min_names`` such names are NaN.
    """
    w = np.asarray(weights, dtype=np.float64)
    r = np.asarray(fwd, dtype=np.float64)
    ok = np.asarray(in_book, dtype=bool) & np.isfinite(r) & np.isfinite(w)
    out = np.full((w.shape[0], n_q), np.nan)
    for t in range(w.shape[0]):
        m = ok[t]
        k = int(m.sum())
        if k < max(min_names, n_q):
            continue
        wt, rt = w[t, m], r[t, m]
        order = np.argsort(wt, kind="stable")
        ranks = np.empty(k)
        ranks[order] = np.arange(k, dtype=np.float64)
        for v in np.unique(wt):  # average ranks over ties
            tie = wt == v
            if tie.sum() > 1:
                ranks[tie] = ranks[tie].mean()
        bucket = np.minimum((ranks * n_q / k).astype(np.int64), n_q - 1)
        for q in range(n_q):
            sel = bucket == q
            if sel.any():
                out[t, q] = rt[sel].mean()
    return out


@dataclass(frozen=True)
class Drawdown:
    """One drawdown episode: indices into the series (``end`` None while not recovered)."""

    peak: int
    trough: int
    end: int | None
    depth: float

    @property
    def days(self) -> int | None:
        """Sessions from peak to recovery (None while not recovered)."""
        return None if self.end is None else self.end - self.peak


def worst_drawdowns(r: np.ndarray, k: int = 5) -> list[Drawdown]:
    """The ``k`` deepest distinct drawdowns of compounded ``cumprod(1 + r)``, deepest first.

    An episode runs from a running peak to the first day equity is back at that peak;
    its depth is the lowest equity / peak − 1 inside it (the day before the series starts
    counts as a peak at 1).
    """
    eq = np.concatenate([[1.0], np.cumprod(1.0 + np.asarray(r, dtype=np.float64))])
    peak = np.maximum.accumulate(eq)
    dd = eq / peak - 1.0
    episodes: list[Drawdown] = []
    t, n = 1, eq.size
    while t < n:
        if dd[t] >= 0:
            t += 1
            continue
        start = t - 1
        end = t
        while end < n and dd[end] < 0:
            end += 1
        trough = start + int(np.argmin(dd[start:end]))
        episodes.append(Drawdown(max(start - 1, 0), trough - 1, end - 1 if end < n else None,
                                 float(dd[trough])))
        t = end
    episodes.sort(key=lambda e: (e.depth, e.peak))
    return episodes[:k]


def return_stats(r: np.ndarray) -> dict[str, float]:
    """Mean, std, skew, excess kurtosis, 5% VaR / CVaR (daily, as returns), best and worst day."""
    x = np.asarray(r, dtype=np.float64)
    mu, sd = float(x.mean()), float(x.std())
    z = (x - mu) / sd if sd > 0 else np.zeros_like(x)
    var5 = float(np.quantile(x, 0.05))
    return {"mean": mu, "std": sd, "skew": float((z ** 3).mean()), "kurtosis": float((z ** 4).mean() - 3.0),
            "var5": var5, "cvar5": float(x[x <= var5].mean()), "best": float(x.max()),
            "worst": float(x.min()), "positive": float((x > 0).mean())}


def break_even_bps(gross: np.ndarray, turnover: np.ndarray) -> float:
    """Linear cost in bps per unit of turnover at which mean net return (and Sharpe) is 0.

    ``mean(gross) / mean(turnover) · 1e4``; NaN for a book that never trades; ≤ 0 when the
    book loses before costs.
    """
    t = float(np.mean(turnover))
    return float(np.mean(gross) / t * 1e4) if t > 0 else float("nan")


def sharpe_at_cost(gross: np.ndarray, turnover: np.ndarray, bps: np.ndarray) -> np.ndarray:
    """Annualised Sharpe of ``gross − bps·1e-4·turnover`` for each cost in ``bps``."""
    g = np.asarray(gross, dtype=np.float64)
    tu = np.asarray(turnover, dtype=np.float64)
    return np.array([_sharpe(g - b * 1e-4 * tu) for b in np.atleast_1d(bps)])


def holding_period(turnover: np.ndarray) -> np.ndarray:
    """Days a dollar of the book is held, ``2 / turnover`` (gross 1: replacing it all trades 2)."""
    t = np.asarray(turnover, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, 2.0 / t, np.nan)


def rolling_betas(y: np.ndarray, x: np.ndarray, window: int) -> np.ndarray:
    """(D, K) trailing-``window`` OLS betas of ``y`` (D,) on ``x`` (D, K) with an intercept.

    Row t uses days t−window+1 … t; NaN before a full window or for a singular window.
    """
    yv = np.asarray(y, dtype=np.float64)
    xv = np.asarray(x, dtype=np.float64)
    d, k = xv.shape
    a = np.concatenate([np.ones((d, 1)), xv], axis=1)
    xx = np.concatenate([np.zeros((1, k + 1, k + 1)), np.cumsum(a[:, :, None] * a[:, None, :], axis=0)])
    xy = np.concatenate([np.zeros((1, k + 1)), np.cumsum(a * yv[:, None], axis=0)])
    out = np.full((d, k), np.nan)
    for t in range(window - 1, d):
        m = xx[t + 1] - xx[t + 1 - window]
        v = xy[t + 1] - xy[t + 1 - window]
        try:
            out[t] = np.linalg.solve(m, v)[1:]
        except np.linalg.LinAlgError:
            continue
    return out


@dataclass(frozen=True)
class RankDrop:
    """Per CPCV split: the formula's in-sample and test rank (0 = best) among ``group`` entries."""

    group: int
    rank_is: np.ndarray
    rank_oos: np.ndarray
    penalty: np.ndarray

    @property
    def mean_penalty(self) -> float:
        """R2's value for the formula in this group: the mean of the per-split penalties."""
        return float(self.penalty.mean()) + 0.0


def _ranks_desc(x: np.ndarray) -> np.ndarray:
    greater = (x[None, :] > x[:, None]).sum(axis=1)
    equal = (x[None, :] == x[:, None]).sum(axis=1)
    return greater + 0.5 * (equal - 1)


def rank_drop_by_split(is_sharpes: np.ndarray, test_sharpes: np.ndarray, ref_is: np.ndarray,
                       ref_test: np.ndarray, scale: float = 0.48) -> RankDrop:
    """The formula's R2 rank drop in each split, scored in a group with the reference entries.

    ``is_sharpes``/``test_sharpes`` (S,) the formula's; ``ref_is``/``ref_test`` (M, S) the
    reference group's.  Split s ranks the M + 1 in-sample and test Sharpes (0 = best, ties
    averaged) and the penalty is :func:`gymkit.verifiers.pbo.rank_drop_penalty`'s, the code
    R2 runs: −scale·max(0, rank_oos − rank_is)/M.
    """
    a = np.vstack([np.asarray(is_sharpes, dtype=np.float64)[None, :], np.asarray(ref_is, dtype=np.float64)])
    b = np.vstack([np.asarray(test_sharpes, dtype=np.float64)[None, :], np.asarray(ref_test, dtype=np.float64)])
    s = a.shape[1]
    r_is, r_oos, pen = np.empty(s), np.empty(s), np.empty(s)
    for j in range(s):
        r_is[j] = _ranks_desc(a[:, j])[0]
        r_oos[j] = _ranks_desc(b[:, j])[0]
        pen[j] = rank_drop_penalty(a[:, j], b[:, j], scale=scale)[0]
    return RankDrop(a.shape[0], r_is, r_oos, pen)
