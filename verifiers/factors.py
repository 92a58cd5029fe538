"""The six-factor model and the regression of a formula's daily P&L on it (DESIGN §4, R4).

Factor daily returns over the judged days, each with the formulas' timing (signal
at close(t), fill at open(t+1), earn open(t+1) → open(t+2), labelled t):

=============== ==================================================================
``market``      equal-weight mean of the finite open-to-open returns (0.0 if none)
``size``        rank book of −size: small minus big; size = ``cap`` where the panel
                has it, else the 20-day mean dollar volume ts_mean(close·volume, 20)
``momentum``    rank book of the 12-1 momentum close[t−21] / close[t−252] − 1
``reversal``    rank book of −(close[t] / close[t−5] − 1)  (5-day reversal)
``low_vol``     rank book of −std(returns over the 63 sessions ending at t, ddof=1)
``price_level`` rank book of −log close[t]: cheap minus expensive stocks (the rank of
                −log close is the rank of −close, which is what is computed: no
                transcendental function, the same bits everywhere)
=============== ==================================================================

A "rank book" is the formula book of :mod:`.book` (centred ranks, gross 1) with no
costs, so a formula that is one of these signals has exactly that factor's gross P&L.
Rolling windows need every value finite (pandas ``min_periods=d``).

Regression, like with like: the factor returns are gross (no costs), so the formula's
**gross** daily P&L g is regressed on them, OLS with an intercept: ``g = α + F β + ε``,
with R² of that fit; then costs c are charged (net = g − c), the factors bearing the share
R² of them and the residual the share 1 − R².  Reported, in the net P&L's own volatility
sd = std(net) (ddof 1), annualised by √252:

* ``raw_sharpe`` = sharpe(net);
* ``factor_sharpe`` = (mean(F β) − R²·mean(c)) / sd · √252 — the factors' part;
* ``residual_sharpe`` = (mean(α + ε) − (1 − R²)·mean(c)) / sd · √252 — the rest;

so raw = factor part + residual part (up to rounding).  A pure factor book has g = F β,
R² = 1 and a residual Sharpe of 0; an effect orthogonal to the factors has R² ≈ 0 and keeps
its raw Sharpe.  ``sharpe_explained`` = factor_sharpe (R4 reads −0.4·clip(it, 0, 3)) and
``share_explained`` = factor_sharpe / |raw| (0.0 when raw = 0).  A gross residual that is
only rounding (max |α + ε| ≤ 1e-12 · max |g|: g is spanned by the factors) counts as
exactly 0 with R² = 1.  (Regressing *net* P&L on gross factors, as before, left the cost
series in the residual: a residual Sharpe of −19 for a reversal clone.)

Solved by a QR factorisation of [1, F] (classical Gram–Schmidt applied twice,
numerically as orthogonal as Householder) computed once per factor model and
reused for every formula: β = R⁻¹ Qᵀ g.  Own kernel rather than numpy/LAPACK so
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

FACTOR_NAMES: tuple[str, ...] = ("market", "size", "momentum", "reversal", "low_vol",
                                  "price_level")
SIZE_ADV_WINDOW = 20
MOMENTUM_SKIP = 21
MOMENTUM_LOOKBACK = 252
REVERSAL_WINDOW = 5
LOW_VOL_WINDOW = 63


@njit(cache=True, nogil=True)
def _rolling_mean(x: np.ndarray, d: int) -> np.ndarray:
    # Each cell is its window's left-to-right sum / d, NaN when the window holds a
    # non-finite value.  Row-major (one pass over a day's N stocks per window day, each
    # stock its own chain in day order): the bits of a per-cell loop, without its
    # stride-N column walks, which made this the wide market's slowest step (RESULTS.md).
    t_n, n = x.shape
    out = np.full((t_n, n), np.nan)
    s = np.empty(n)
    bad = np.empty(n, dtype=np.bool_)
    for t in range(d - 1, t_n):
        s[:] = 0.0
        bad[:] = False
        for k in range(t - d + 1, t + 1):
            for j in range(n):
                v = x[k, j]
                bad[j] |= not np.isfinite(v)
                s[j] += v
        for j in range(n):
            if not bad[j]:
                out[t, j] = s[j] / d
    return out


@njit(cache=True, nogil=True)
def _rolling_std(x: np.ndarray, d: int) -> np.ndarray:
    # Two-pass std (ddof=1) around the window mean of _rolling_mean: the mean is the same
    # left-to-right sum, so NaN windows and every bit of m are shared.  Row-major as there.
    t_n, n = x.shape
    mean = _rolling_mean(x, d)
    out = np.full((t_n, n), np.nan)
    ss = np.empty(n)
    for t in range(d - 1, t_n):
        ss[:] = 0.0
        for k in range(t - d + 1, t + 1):
            for j in range(n):
                e = x[k, j] - mean[t, j]
                ss[j] += e * e
        for j in range(n):
            if np.isfinite(mean[t, j]):
                out[t, j] = np.sqrt(ss[j] / (d - 1))
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _ratio(num: np.ndarray, den: np.ndarray, lag_num: int, lag_den: int, sign: float) -> np.ndarray:
    # sign·(num[t − lag_num] / den[t − lag_den] − 1), NaN where not finite or before the lag.
    # One kernel and one fresh array: on a wide market the numpy form's five temporaries
    # cost more in first-touch page faults than the arithmetic (RESULTS.md).
    t_n, n = num.shape
    out = np.empty((t_n, n))
    lag = max(lag_num, lag_den)
    for t in range(t_n):
        for j in range(n):
            out[t, j] = np.nan
            if t >= lag:
                r = num[t - lag_num, j] / den[t - lag_den, j] - 1.0
                if np.isfinite(r):
                    out[t, j] = sign * r
    return out


def factor_signals(close: np.ndarray, volume: np.ndarray, cap: np.ndarray | None) -> dict[str, np.ndarray]:
    """Return the (T, N) signal values of the five rank-book factors (module doc)."""
    close = np.ascontiguousarray(close, dtype=np.float64)
    if cap is not None:
        size = np.negative(np.asarray(cap, dtype=np.float64))
    else:
        size = _rolling_mean(np.ascontiguousarray(close * np.asarray(volume, dtype=np.float64)), SIZE_ADV_WINDOW)
        np.negative(size, out=size)
    low_vol = _rolling_std(_ratio(close, close, 0, 1, 1.0), LOW_VOL_WINDOW)
    np.negative(low_vol, out=low_vol)
    return {
        "size": size,
        "momentum": _ratio(close, close, MOMENTUM_SKIP, MOMENTUM_LOOKBACK, 1.0),
        "reversal": _ratio(close, close, 0, REVERSAL_WINDOW, -1.0),
        "low_vol": low_vol,
        "price_level": np.where(close > 0.0, -close, np.nan),  # rank of −log close
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
def _regress(q: np.ndarray, r: np.ndarray, f: np.ndarray, g: np.ndarray,
             c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS of gross g on [1, F], then costs c charged; every statistic of
    :meth:`FactorModel.regress` in one kernel (module doc).

    Returns (β, stats) with stats = (r2, raw Sharpe, residual Sharpe, factor Sharpe).
    Each sum is the same day-order chain as in the one-statistic definitions
    (:func:`~gymkit.verifiers.metrics._sharpe`; numpy's ``mean``/``std`` via their
    bit-exact replicas), several chains per loop.
    """
    n, k = f.shape
    beta = _ols(q, r, g)
    resid = np.empty(n)  # alpha + epsilon = g - F beta
    net = np.empty(n)
    sg = 0.0
    sn = 0.0
    gmax = 0.0
    emax = 0.0
    for i in range(n):
        s = g[i]
        for j in range(k):
            s -= f[i, j] * beta[j + 1]
        resid[i] = s
        net[i] = g[i] - c[i]
        sg += g[i]
        sn += net[i]
        gmax = max(gmax, abs(g[i]))
        emax = max(emax, abs(s))
    mg = sg / max(n, 1)
    mn = sn / max(n, 1)
    sst = 0.0
    sse = 0.0
    ssn = 0.0
    for i in range(n):
        dg = g[i] - mg
        sst += dg * dg
        e = resid[i] - beta[0]
        sse += e * e
        dn = net[i] - mn
        ssn += dn * dn
    spanned = not emax > 1e-12 * gmax
    stats = np.zeros(4)
    r2 = 1.0 if spanned else (1.0 - sse / sst if sst > 0.0 else 0.0)
    stats[0] = r2
    raw = _sharpe_from(n, mn, ssn)
    stats[1] = raw
    sd = numpy_std(net, 1) if n > 1 else 0.0
    if raw != 0.0 and sd > 0.0:
        mc = numpy_mean(c)
        mr = 0.0 if spanned else numpy_mean(resid)
        scale = np.sqrt(252.0) / sd
        stats[2] = (mr - (1.0 - r2) * mc) * scale
        stats[3] = (numpy_mean(g) - mr - r2 * mc) * scale
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
    factor_sharpe: float = 0.0  # (mean F·β − R²·mean cost) / std(net) · √252 (module doc)

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict."""
        return {"betas": dict(self.betas), "alpha": self.alpha, "r2": self.r2,
                "raw_sharpe": self.raw_sharpe, "residual_sharpe": self.residual_sharpe,
                "sharpe_explained": self.sharpe_explained, "share_explained": self.share_explained,
                "factor_sharpe": self.factor_sharpe}


class FactorModel:
    """Daily factor returns over one window's judged days, with the QR of [1, F] ready for OLS.

    ``names`` (FACTOR_NAMES), ``returns`` (D, 6) read-only, ``fingerprint`` of the
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

    def regress(self, gross: np.ndarray, cost: np.ndarray | None = None) -> FactorExposure:
        """Regress the daily ``gross`` P&L (D,) on the factor returns, then charge the daily
        ``cost`` (D,; None = no costs) → :class:`FactorExposure` (module doc)."""
        g = np.ascontiguousarray(gross, dtype=np.float64)
        if g.shape != (self.returns.shape[0],):
            raise ValueError(f"pnl shape {g.shape} does not match the factor model's {self.returns.shape[0]} days")
        c = np.zeros_like(g) if cost is None else np.ascontiguousarray(cost, dtype=np.float64)
        if c.shape != g.shape:
            raise ValueError(f"cost shape {c.shape} does not match the P&L's {g.shape}")
        beta, stats = _regress(self._q, self._r, self.returns, g, c)
        b = beta.tolist()
        r2, raw, res, fac = stats.tolist()
        return FactorExposure(
            betas=dict(zip(self.names, b[1:], strict=True)),
            alpha=b[0],
            r2=r2,
            raw_sharpe=raw,
            residual_sharpe=res,
            sharpe_explained=fac,
            share_explained=fac / abs(raw) if raw != 0.0 else 0.0,
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
