"""Statistics of a daily return series over the judged days.

* ``sharpe(r) = mean(r) / std(r, ddof=1) · √252``; fewer than 2 days or zero
  variance gives 0.0 (never NaN, never ±inf).  "Zero" includes a variance that is
  only the rounding of the mean of a constant series: std ≤ 1e-12·|mean|.
* ``max_drawdown``: on the compounded equity curve E_t = Π(1 + r): min_t(E_t /
  max_{s≤t} E_s − 1), with the curve starting at 1; ≤ 0 (−0.043 = −4.3%).
* ``beta``, ``corr`` to the market: OLS slope cov(r, m)/var(m) and Pearson
  correlation of the net returns with the equal-weight market (mean open-to-open
  return of the finite names, same timing as the book); 0.0 when undefined.
* ``hit_rate``: share of judged days with net return > 0.
* ``ic``: mean of the daily ICs that are defined (≥ 5 names, non-zero variance);
  0.0 when no day is defined.
* ``long``/``short``: mean daily gross contribution of each leg (long + short = mean gross).

All loops are serial and in a fixed order (bit-identical across runs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

__all__ = ["ANNUALISATION", "Metrics", "compute_metrics", "max_drawdown", "sharpe"]

#: Trading days per year used to annualise.
ANNUALISATION = 252.0
_SQRT_ANN = float(np.sqrt(ANNUALISATION))


@njit(cache=True, nogil=True)
def _sharpe(r: np.ndarray) -> float:
    n = r.shape[0]
    if n < 2:
        return 0.0
    s = 0.0
    for i in range(n):
        s += r[i]
    m = s / n
    v = 0.0
    for i in range(n):
        d = r[i] - m
        v += d * d
    v /= n - 1
    # zero variance: exactly 0, or only the rounding of the mean (a constant series)
    if not (v > (1e-12 * m) ** 2) or not np.isfinite(v):
        return 0.0
    return m / np.sqrt(v) * np.sqrt(252.0)


def sharpe(returns: np.ndarray) -> float:
    """Annualised Sharpe mean/std(ddof=1)·√252 of daily returns; < 2 days or zero variance → 0.0."""
    return float(_sharpe(np.ascontiguousarray(returns, dtype=np.float64)))


@njit(cache=True, nogil=True)
def _max_drawdown(r: np.ndarray) -> float:
    eq = 1.0
    peak = 1.0
    worst = 0.0
    for i in range(r.shape[0]):
        eq *= 1.0 + r[i]
        if eq > peak:
            peak = eq
        dd = eq / peak - 1.0
        if dd < worst:
            worst = dd
    return worst


def max_drawdown(returns: np.ndarray) -> float:
    """Maximum drawdown of the compounded equity curve (≤ 0; 0.0 for an empty series)."""
    return float(_max_drawdown(np.ascontiguousarray(returns, dtype=np.float64)))


@njit(cache=True, nogil=True)
def _moments(net, gross, turnover, ic, long_c, short_c, market):
    n = net.shape[0]
    out = np.zeros(12)
    if n == 0:
        return out
    sn = 0.0
    sg = 0.0
    st = 0.0
    sl = 0.0
    ss = 0.0
    sm = 0.0
    hits = 0
    sic = 0.0
    nic = 0
    for i in range(n):
        sn += net[i]
        sg += gross[i]
        st += turnover[i]
        sl += long_c[i]
        ss += short_c[i]
        sm += market[i]
        if net[i] > 0.0:
            hits += 1
        if ic[i] == ic[i]:
            sic += ic[i]
            nic += 1
    mn = sn / n
    mm = sm / n
    cov = 0.0
    vn = 0.0
    vm = 0.0
    for i in range(n):
        a = net[i] - mn
        b = market[i] - mm
        cov += a * b
        vn += a * a
        vm += b * b
    out[0] = mn
    out[1] = sg / n
    out[2] = st / n
    out[3] = sic / nic if nic > 0 else 0.0
    out[4] = hits / n
    out[5] = sl / n
    out[6] = ss / n
    out[7] = cov / vm if vm > 0.0 else 0.0
    out[8] = cov / np.sqrt(vn * vm) if (vn > 0.0 and vm > 0.0) else 0.0
    out[9] = nic
    return out


@dataclass(frozen=True)
class Metrics:
    """Summary statistics of one backtest window (see the module docstring for definitions)."""

    n_days: int
    sharpe: float
    gross_sharpe: float
    mean_return: float
    mean_gross_return: float
    annual_return: float
    total_return: float
    turnover: float
    ic: float
    ic_days: int
    max_drawdown: float
    beta: float
    corr: float
    hit_rate: float
    long_contribution: float
    short_contribution: float
    market_sharpe: float

    def to_dict(self) -> dict[str, float | int]:
        """Return the metrics as a flat JSON-ready dict."""
        return asdict(self)


def compute_metrics(
    net: np.ndarray,
    gross: np.ndarray,
    turnover: np.ndarray,
    ic: np.ndarray,
    long_contribution: np.ndarray,
    short_contribution: np.ndarray,
    market: np.ndarray,
) -> Metrics:
    """Return :class:`Metrics` of aligned (D,) daily series over the judged days."""
    m = _moments(net, gross, turnover, ic, long_contribution, short_contribution, market)
    total = float(np.prod(1.0 + net)) - 1.0 if net.size else 0.0
    return Metrics(
        n_days=int(net.size),
        sharpe=float(_sharpe(net)),
        gross_sharpe=float(_sharpe(gross)),
        mean_return=float(m[0]),
        mean_gross_return=float(m[1]),
        annual_return=float(m[0]) * ANNUALISATION,
        total_return=total,
        turnover=float(m[2]),
        ic=float(m[3]),
        ic_days=int(m[9]),
        max_drawdown=float(_max_drawdown(net)),
        beta=float(m[7]),
        corr=float(m[8]),
        hit_rate=float(m[4]),
        long_contribution=float(m[5]),
        short_contribution=float(m[6]),
        market_sharpe=float(_sharpe(market)),
    )
