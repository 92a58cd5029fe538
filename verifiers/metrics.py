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

All loops are serial and in a fixed order (bit-identical across runs); one kernel
computes every statistic in two passes (each sum is still its own day-order chain).
``numpy_mean``/``numpy_std`` reproduce numpy's pairwise sums bit for bit inside kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numba import njit

__all__ = ["ANNUALISATION", "Metrics", "compute_metrics", "max_drawdown", "numpy_mean", "numpy_std", "sharpe"]

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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sharpe_from(n: int, m: float, v: float) -> float:
    """The end of :func:`_sharpe`: n days, mean m, Σ(r − m)² = v."""
    if n < 2:
        return 0.0
    v /= n - 1
    if not (v > (1e-12 * m) ** 2) or not np.isfinite(v):
        return 0.0
    return m / np.sqrt(v) * np.sqrt(252.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _summary(net, gross, turnover, ic, long_c, short_c, market):
    """Every number of :class:`Metrics` in two passes over the days (see ``_SUMMARY``).

    Each statistic is the same sequential sum, in day order, as its one-statistic
    definition (:func:`_sharpe`, :func:`_max_drawdown`, the equity product) — the loops
    only carry several independent chains at once, so the bits are those of the
    one-at-a-time code.
    """
    n = net.shape[0]
    out = np.zeros(15)  # the slots of _SUMMARY
    if n == 0:
        return out
    sn = sg = st = sl = ss = sm = sic = 0.0
    hits = 0
    nic = 0
    eq = 1.0
    peak = 1.0
    worst = 0.0
    for i in range(n):
        x = net[i]
        sn += x
        sg += gross[i]
        st += turnover[i]
        sl += long_c[i]
        ss += short_c[i]
        sm += market[i]
        hits += x > 0.0
        c = ic[i]
        if c == c:
            sic += c
            nic += 1
        eq *= 1.0 + x
        if eq > peak:
            peak = eq
        dd = eq / peak - 1.0
        if dd < worst:
            worst = dd
    mn = sn / n
    mg = sg / n
    mm = sm / n
    cov = vn = vg = vm = 0.0
    for i in range(n):
        a = net[i] - mn
        b = market[i] - mm
        g = gross[i] - mg
        cov += a * b
        vn += a * a
        vm += b * b
        vg += g * g
    out[0] = mn
    out[1] = mg
    out[2] = st / n
    out[3] = sic / nic if nic > 0 else 0.0
    out[4] = hits / n
    out[5] = sl / n
    out[6] = ss / n
    out[7] = cov / vm if vm > 0.0 else 0.0
    out[8] = cov / np.sqrt(vn * vm) if (vn > 0.0 and vm > 0.0) else 0.0
    out[9] = nic
    out[10] = _sharpe_from(n, mn, vn)
    out[11] = _sharpe_from(n, mg, vg)
    out[12] = _sharpe_from(n, mm, vm)
    out[13] = worst
    out[14] = eq - 1.0
    return out


#: Slots of the :func:`_summary` array.
_SUMMARY = ("mean", "mean_gross", "turnover", "ic", "hit_rate", "long", "short", "beta", "corr",
            "ic_days", "sharpe", "gross_sharpe", "market_sharpe", "max_drawdown", "total_return")


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pairwise_block(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's ``DOUBLE_pairwise_sum`` leaf (n <= 128): eight interleaved accumulators."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True, error_model="numpy")
def _pairwise_sum(a: np.ndarray) -> float:
    """numpy's pairwise sum of ``a`` (``DOUBLE_pairwise_sum``: more than 128 values are split
    in halves at a multiple of 8 and the halves' sums added; 128 or fewer go to
    :func:`_pairwise_block`), to reproduce numpy's bits.  The recursion runs on an explicit
    stack (post-order: left sum, right sum, then left + right)."""
    n = a.shape[0]
    if n <= 128:
        return _pairwise_block(a, 0, n)
    f_lo = np.empty(64, np.int64)
    f_n = np.empty(64, np.int64)
    f_stage = np.empty(64, np.int64)
    vals = np.empty(64)
    f_lo[0] = 0
    f_n[0] = n
    f_stage[0] = 0
    sp = 1
    vp = 0
    while sp > 0:
        lo = f_lo[sp - 1]
        m = f_n[sp - 1]
        if m <= 128:
            sp -= 1
            vals[vp] = _pairwise_block(a, lo, m)
            vp += 1
            continue
        half = m // 2
        half -= half % 8
        stage = f_stage[sp - 1]
        if stage == 2:
            sp -= 1
            vals[vp - 2] = vals[vp - 2] + vals[vp - 1]
            vp -= 1
            continue
        f_stage[sp - 1] = stage + 1
        f_lo[sp] = lo if stage == 0 else lo + half
        f_n[sp] = half if stage == 0 else m - half
        f_stage[sp] = 0
        sp += 1
    return vals[0]


@njit(cache=True, nogil=True, error_model="numpy")
def numpy_mean(a: np.ndarray) -> float:
    """``numpy.mean`` of a 1-D float64 array, bit for bit (NaN for an empty array)."""
    n = a.shape[0]
    return (0.0 + _pairwise_sum(a)) / n if n > 0 else np.nan


@njit(cache=True, nogil=True, error_model="numpy")
def numpy_std(a: np.ndarray, ddof: int) -> float:
    """``numpy.std(a, ddof=ddof)`` of a 1-D float64 array, bit for bit (NaN when n <= ddof)."""
    n = a.shape[0]
    if n - ddof <= 0:
        return np.nan
    m = numpy_mean(a)
    sq = np.empty(n)
    for i in range(n):
        d = a[i] - m
        sq[i] = d * d
    return np.sqrt((0.0 + _pairwise_sum(sq)) / (n - ddof))


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
        """Return the metrics as a flat JSON-ready dict (field order; every field a scalar,
        so a shallow dict — ``dataclasses.asdict``'s deep copy cost ~0.1 ms a card)."""
        return {f.name: getattr(self, f.name) for f in _METRIC_FIELDS}


_METRIC_FIELDS = fields(Metrics)


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
    m = _summary(*(np.ascontiguousarray(a, dtype=np.float64) for a in
                   (net, gross, turnover, ic, long_contribution, short_contribution, market)))
    mean, mean_gross, turn, ic_mean, hit, long_m, short_m, beta, corr, ic_days, sr, gsr, msr, dd, total = m.tolist()
    return Metrics(
        n_days=int(net.size),
        sharpe=sr,
        gross_sharpe=gsr,
        mean_return=mean,
        mean_gross_return=mean_gross,
        annual_return=mean * ANNUALISATION,
        total_return=total,
        turnover=turn,
        ic=ic_mean,
        ic_days=int(ic_days),
        max_drawdown=dd,
        beta=beta,
        corr=corr,
        hit_rate=hit,
        long_contribution=long_m,
        short_contribution=short_m,
        market_sharpe=msr,
    )
