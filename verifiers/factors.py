"""The five-factor model and the regression of a formula's daily P&L on it (DESIGN §4, R4).

Factor daily returns over the judged days, each with the formulas' timing (signal
at close(t), fill at open(t+1), earn open(t+1) → open(t+2), labelled t):

=============== ==================================================================
``market``      equal-weight mean of the finite open-to-open returns (0.0 if none)
``size``        rank book of −size: small minus big; size = ``cap`` where the panel
                has it, else the 20-day mean dollar volume ts_mean(close·volume, 20)
``momentum``    rank book of the 12-1 momentum close[t−21] / close[t−252] − 1
``reversal``    rank book of −(close[t] / close[t−5] − 1)  (5-day reversal)
``low_vol``     rank book of −std(returns over the 63 sessions ending at t, ddof=1)
=============== ==================================================================

A "rank book" is the formula book of :mod:`.book` (centred ranks, gross 1) with no
costs.  Rolling windows need every value finite (pandas ``min_periods=d``).

Regression: ordinary least squares with an intercept of the daily net P&L y on the
five factor returns F: ``y = α + F β + ε``.  Reported: ``betas``, ``alpha`` (daily),
``r2``, ``raw_sharpe`` = sharpe(y), ``residual_sharpe`` = sharpe(α + ε) =
sharpe(y − F β), ``sharpe_explained`` = raw − residual (the R4 input) and
``share_explained`` = (raw − residual) / |raw| (0.0 when raw = 0).  A residual
that is only rounding (max |α + ε| ≤ 1e-12 · max |y|: the P&L is spanned by the
factors) has residual Sharpe 0.

Solved by a QR factorisation of [1, F] (classical Gram–Schmidt applied twice,
numerically as orthogonal as Householder) computed once per factor model and
reused for every formula: β = R⁻¹ Qᵀ y.  Own kernel rather than numpy/LAPACK so
that every sum has a fixed order (bit-identical across thread counts).  A factor
collinear with the others (or all zero) gets β = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .book import ForwardByStock, book_pnl, split_forward_returns
from .metrics import _sharpe_from, numpy_mean, numpy_std

__all__ = ["FACTOR_NAMES", "FactorExposure", "FactorModel", "build_factor_model", "factor_signals"]

FACTOR_NAMES: tuple[str, ...] = ("market", "size", "momentum", "reversal", "low_vol")
SIZE_ADV_WINDOW = 20
MOMENTUM_SKIP = 21
MOMENTUM_LOOKBACK = 252
REVERSAL_WINDOW = 5
LOW_VOL_WINDOW = 63


@njit(cache=True, nogil=True)
def _rolling_mean(x: np.ndarray, d: int) -> np.ndarray:
    t_n, n = x.shape
    out = np.full((t_n, n), np.nan)
    for j in range(n):
        for t in range(d - 1, t_n):
            s = 0.0
            ok = True
            for k in range(t - d + 1, t + 1):
                v = x[k, j]
                if not np.isfinite(v):
                    ok = False
                    break
                s += v
            if ok:
                out[t, j] = s / d
    return out


@njit(cache=True, nogil=True)
def _rolling_std(x: np.ndarray, d: int) -> np.ndarray:
    # Two-pass std (ddof=1) around the window mean of _rolling_mean: the mean is the same
    # left-to-right sum, so NaN windows and every bit of m are shared.
    t_n, n = x.shape
    mean = _rolling_mean(x, d)
    out = np.full((t_n, n), np.nan)
    for j in range(n):
        for t in range(d - 1, t_n):
            m = mean[t, j]
            if not np.isfinite(m):
                continue
            ss = 0.0
            for k in range(t - d + 1, t + 1):
                e = x[k, j] - m
                ss += e * e
            out[t, j] = np.sqrt(ss / (d - 1))
    return out


def _ratio(num: np.ndarray, den: np.ndarray, lag_num: int, lag_den: int) -> np.ndarray:
    out = np.full(num.shape, np.nan)
    lag = max(lag_num, lag_den)
    if num.shape[0] > lag:
        a = num[lag - lag_num : num.shape[0] - lag_num]
        b = den[lag - lag_den : den.shape[0] - lag_den]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[lag:] = a / b - 1.0
    out[~np.isfinite(out)] = np.nan
    return out


def factor_signals(close: np.ndarray, volume: np.ndarray, cap: np.ndarray | None) -> dict[str, np.ndarray]:
    """Return the (T, N) signal values of the four rank-book factors (module doc)."""
    close = np.ascontiguousarray(close, dtype=np.float64)
    if cap is not None:
        size = np.array(cap, dtype=np.float64)
    else:
        size = _rolling_mean(np.ascontiguousarray(close * np.asarray(volume, dtype=np.float64)), SIZE_ADV_WINDOW)
    rets = _ratio(close, close, 0, 1)
    return {
        "size": -size,
        "momentum": _ratio(close, close, MOMENTUM_SKIP, MOMENTUM_LOOKBACK),
        "reversal": -_ratio(close, close, 0, REVERSAL_WINDOW),
        "low_vol": -_rolling_std(rets, LOW_VOL_WINDOW),
    }


@njit(cache=True, nogil=True)
def _qr_cgs2(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, k = x.shape
    q = np.zeros((n, k))
    r = np.zeros((k, k))
    for c in range(k):
        v = x[:, c].copy()
        norm0 = 0.0
        for i in range(n):
            norm0 += v[i] * v[i]
        norm0 = np.sqrt(norm0)
        for _ in range(2):  # Gram–Schmidt twice
            for p in range(c):
                dot = 0.0
                for i in range(n):
                    dot += q[i, p] * v[i]
                r[p, c] += dot
                for i in range(n):
                    v[i] -= dot * q[i, p]
        nv = 0.0
        for i in range(n):
            nv += v[i] * v[i]
        nv = np.sqrt(nv)
        if nv <= 1e-10 * norm0 or nv == 0.0:
            r[c, c] = 0.0  # collinear or zero column: beta fixed at 0
            continue
        r[c, c] = nv
        for i in range(n):
            q[i, c] = v[i] / nv
    return q, r


@njit(cache=True, nogil=True, error_model="numpy")
def _ols(q: np.ndarray, r: np.ndarray, y: np.ndarray) -> np.ndarray:
    """β = R⁻¹ Qᵀ y.  Qᵀy in one pass over the days: the k sums advance together, each
    still in day order (the bits of one column at a time)."""
    n, k = q.shape
    qty = np.zeros(k)
    for i in range(n):
        yi = y[i]
        for c in range(k):
            qty[c] += q[i, c] * yi
    beta = np.zeros(k)
    for c in range(k - 1, -1, -1):
        if r[c, c] == 0.0:
            beta[c] = 0.0
            continue
        s = qty[c]
        for p in range(c + 1, k):
            s -= r[c, p] * beta[p]
        beta[c] = s / r[c, c]
    return beta


@njit(cache=True, nogil=True, error_model="numpy")
def _regress(q: np.ndarray, r: np.ndarray, f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS of y on [1, F] and every statistic of :meth:`FactorModel.regress`, in one kernel.

    Returns (β, stats) with stats = (r2, raw Sharpe, residual Sharpe, factor Sharpe).
    Each sum is the same day-order chain as in the one-statistic definitions
    (:func:`~gymkit.verifiers.metrics._sharpe`; numpy's ``mean``/``std`` via their
    bit-exact replicas), several chains per loop.
    """
    n, k = f.shape
    beta = _ols(q, r, y)
    resid = np.empty(n)  # alpha + epsilon = y - F beta
    sy = 0.0
    se = 0.0
    ymax = 0.0
    emax = 0.0
    for i in range(n):
        s = y[i]
        for c in range(k):
            s -= f[i, c] * beta[c + 1]
        resid[i] = s
        sy += y[i]
        se += s
        ymax = max(ymax, abs(y[i]))
        emax = max(emax, abs(s))
    my = sy / max(n, 1)
    me = se / n if n > 0 else 0.0
    sst = 0.0
    sse = 0.0
    ve = 0.0
    for i in range(n):
        dy = y[i] - my
        sst += dy * dy
        e = resid[i] - beta[0]
        sse += e * e
        de = resid[i] - me
        ve += de * de
    stats = np.zeros(4)
    stats[0] = 1.0 - sse / sst if sst > 0.0 else 0.0
    raw = _sharpe_from(n, my, sst)
    stats[1] = raw
    # a residual that is only rounding (P&L fully spanned by the factors) has Sharpe 0
    stats[2] = _sharpe_from(n, me, ve) if emax > 1e-12 * ymax else 0.0
    # Additive split of the raw Sharpe in the P&L's own volatility: raw = factor_sharpe +
    # mean(α + ε)/std(pnl)·√252.  Unlike residual_sharpe (Sharpe of α + ε in the residual's
    # volatility), it stays bounded when the factors explain nearly all the variance and the
    # residual is little more than the cost series (residual Sharpes of −40 were seen).
    sd = numpy_std(y, 1) if n > 1 else 0.0
    if raw != 0.0 and sd > 0.0:
        stats[3] = (numpy_mean(y) - numpy_mean(resid)) / sd * np.sqrt(252.0)
    return beta, stats


@dataclass(frozen=True)
class FactorExposure:
    """Result of regressing one P&L series on the factor model (module doc)."""

    betas: dict[str, float]
    alpha: float
    r2: float
    raw_sharpe: float
    residual_sharpe: float
    sharpe_explained: float
    share_explained: float
    factor_sharpe: float = 0.0  # mean of the fitted factor part F·β over std(pnl), ×√252

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict."""
        return {"betas": dict(self.betas), "alpha": self.alpha, "r2": self.r2,
                "raw_sharpe": self.raw_sharpe, "residual_sharpe": self.residual_sharpe,
                "sharpe_explained": self.sharpe_explained, "share_explained": self.share_explained,
                "factor_sharpe": self.factor_sharpe}


class FactorModel:
    """Daily factor returns over one window's judged days, with the QR of [1, F] ready for OLS.

    ``names`` (FACTOR_NAMES), ``returns`` (D, 5) read-only, ``fingerprint`` of the
    panel it was built from.  :meth:`regress` regresses any (D,) series on it.
    """

    __slots__ = ("_q", "_r", "fingerprint", "names", "returns")

    def __init__(self, returns: np.ndarray, names: tuple[str, ...] = FACTOR_NAMES, fingerprint: str = "") -> None:
        f = np.ascontiguousarray(returns, dtype=np.float64)
        if f.ndim != 2 or f.shape[1] != len(names):
            raise ValueError(f"factor returns must be (days, {len(names)}), got shape {f.shape}")
        if not np.all(np.isfinite(f)):
            raise ValueError("factor returns must be finite")
        f.setflags(write=False)
        self.returns = f
        self.names = names
        self.fingerprint = fingerprint
        design = np.empty((f.shape[0], f.shape[1] + 1))
        design[:, 0] = 1.0
        design[:, 1:] = f
        self._q, self._r = _qr_cgs2(design)

    def regress(self, pnl: np.ndarray) -> FactorExposure:
        """OLS with intercept of daily ``pnl`` (D,) on the factor returns → :class:`FactorExposure`."""
        y = np.ascontiguousarray(pnl, dtype=np.float64)
        if y.shape != (self.returns.shape[0],):
            raise ValueError(f"pnl shape {y.shape} does not match the factor model's {self.returns.shape[0]} days")
        beta, stats = _regress(self._q, self._r, self.returns, y)
        b = beta.tolist()
        r2, raw, res, fac = stats.tolist()
        diff = raw - res
        return FactorExposure(
            betas=dict(zip(self.names, b[1:], strict=True)),
            alpha=b[0],
            r2=r2,
            raw_sharpe=raw,
            residual_sharpe=res,
            sharpe_explained=diff,
            share_explained=diff / abs(raw) if raw != 0.0 else 0.0,
            factor_sharpe=fac,
        )


def build_factor_model(
    close: np.ndarray,
    volume: np.ndarray,
    cap: np.ndarray | None,
    fwd: np.ndarray,
    market: np.ndarray,
    rows: slice,
    fingerprint: str = "",
) -> FactorModel:
    """Build the factor model of one window: ``fwd`` (T, N) forward open returns,
    ``market`` (D,) equal-weight market over ``rows`` (the judged signal dates)."""
    sig = factor_signals(close, volume, cap)
    cols = [np.asarray(market, dtype=np.float64)]
    by_stock = ForwardByStock(split_forward_returns(fwd), rows)
    for name in FACTOR_NAMES[1:]:
        cols.append(book_pnl(sig[name], fwd, rows, fwd_by_stock=by_stock).gross)
    return FactorModel(np.column_stack(cols), FACTOR_NAMES, fingerprint)
