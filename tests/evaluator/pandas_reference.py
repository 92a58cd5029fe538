"""Slow, obvious reference implementation of every DSL operator (pandas / numpy).

Written independently of ``gymkit.dsl.kernels``: plain ``rolling``, ``rank``, ``shift``,
``groupby`` and numpy sliding windows, straight from the semantics table of DESIGN §3
(and the choices documented in ``gymkit.dsl.kernels``).  Every function takes float64
(T, N) arrays (or scalars for element-wise operands) and returns a float64 (T, N) array
in which ±inf has become NaN.  :data:`REFERENCE` maps canonical operator names to them,
and :func:`reference_evaluate` walks an AST with them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from gymkit.dsl.ast import Call, Field, Level, Num, Window


def _arr(x) -> np.ndarray:
    a = np.array(x, dtype=np.float64)
    a[~np.isfinite(a)] = np.nan
    return a


def _done(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a[~np.isfinite(a)] = np.nan
    return a


def _rolling(x, d: int):
    return pd.DataFrame(_arr(x)).rolling(d, min_periods=d)


def _windows(x, d: int, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply ``fn`` over the last axis of every full window (T-d+1, N, d); NaN if any missing."""
    a = _arr(x)
    out = np.full(a.shape, np.nan)
    if d > a.shape[0]:
        return out
    w = sliding_window_view(a, d, axis=0)  # (T-d+1, N, d), oldest first
    with np.errstate(all="ignore"):
        vals = fn(w)
    vals = np.where(np.isfinite(w).all(axis=-1), vals, np.nan)
    out[d - 1:] = vals
    return _done(out)


def _deviations(w: np.ndarray) -> np.ndarray:
    """Corrected two-pass deviations from the window mean (last axis).

    The second pass removes the rounding of the mean itself, which matters when the
    window's values differ by a few ulps (then x - round(mean) is lopsided).
    """
    c = w - w.mean(axis=-1, keepdims=True)
    return c - c.mean(axis=-1, keepdims=True)


def _constant_window(x, d: int) -> np.ndarray:
    r = _rolling(x, d)
    return (r.max() == r.min()).to_numpy()


# ------------------------------------------------------------------ element-wise
def _binary(fn):
    def op(a, b):
        with np.errstate(all="ignore"):
            return _done(fn(_arr(a), _arr(b)))
    return op


def _unary(fn):
    def op(a):
        with np.errstate(all="ignore"):
            return _done(fn(_arr(a)))
    return op


def _compare(fn):
    def op(a, b):
        a, b = _arr(a), _arr(b)
        with np.errstate(all="ignore"):
            r = fn(a, b).astype(np.float64)
        return np.where(np.isnan(a) | np.isnan(b), np.nan, r)
    return op


def _power(a, b):
    a, b = np.broadcast_arrays(_arr(a), _arr(b))
    bad = ((a < 0) & (b != np.floor(b))) | ((a == 0) & (b < 0)) | np.isnan(a) | np.isnan(b)
    with np.errstate(all="ignore"):
        r = np.power(a, b)
    return _done(np.where(bad, np.nan, r))


def _signed_power(a, b):
    a = _arr(a)
    return _done(np.sign(a) * _power(np.abs(a), b))


def _minmax(fn):
    def op(a, b):
        a, b = np.broadcast_arrays(_arr(a), _arr(b))
        r = fn(a, b)  # np.minimum/np.maximum propagate NaN
        return _done(r) + 0.0
    return op


def _where(c, a, b):
    c, a, b = np.broadcast_arrays(_arr(c), _arr(a), _arr(b))
    return _done(np.where(np.isnan(c), np.nan, np.where(c != 0, a, b)))


def _div(a, b):
    a, b = np.broadcast_arrays(_arr(a), _arr(b))
    with np.errstate(all="ignore"):
        return _done(np.where(b == 0, np.nan, a / b))


# ------------------------------------------------------------------ cross-sectional
def rank(x):
    df = pd.DataFrame(_arr(x))
    r = df.rank(axis=1, method="average")
    n = df.count(axis=1).to_numpy()[:, None]
    with np.errstate(all="ignore"):
        out = np.where(n == 1, 0.5, (r.to_numpy() - 1.0) / (n - 1.0))
    return _done(np.where(df.isna().to_numpy(), np.nan, out))


def scale(x):
    df = pd.DataFrame(_arr(x))
    s = df.abs().sum(axis=1)
    s[s == 0] = np.nan
    return _done(df.div(s, axis=0))


def group_neutralize(x, codes):
    df = pd.DataFrame(_arr(x))
    codes = np.asarray(codes)
    means = df.T.groupby(codes).transform("mean").T
    out = np.array((df - means).to_numpy())
    out[:, codes < 0] = np.nan
    return _done(out)


# ------------------------------------------------------------------ time series
def delay(x, d):
    return _done(pd.DataFrame(_arr(x)).shift(d))


def ts_delta(x, d):
    df = pd.DataFrame(_arr(x))
    return _done(df - df.shift(d))


def pandas_ts_sum(x, d):
    """pandas rolling sum (Kahan over the whole history: its rounding follows the past)."""
    return _done(_rolling(x, d).sum())


def pandas_ts_mean(x, d):
    """pandas rolling mean (as pandas_ts_sum)."""
    return _done(_rolling(x, d).mean())


def ts_sum(x, d):
    """Direct sum of each window (numpy pairwise summation)."""
    return _windows(x, d, lambda w: w.sum(axis=-1))


def ts_mean(x, d):
    """Direct mean of each window."""
    return _windows(x, d, lambda w: w.sum(axis=-1) / d)


def pandas_ts_std(x, d):
    """pandas rolling std (running Welford sums: drifts ~1e-9 relative on price levels)."""
    return _done(_rolling(x, d).std())


def ts_median(x, d):
    """pandas rolling median."""
    return _done(_rolling(x, d).median())


def ts_std(x, d):
    """Two-pass std (ddof=1) on numpy windows; a constant window is exactly 0."""
    if d == 1:
        return np.full(np.shape(x), np.nan)
    out = _windows(x, d, lambda w: np.sqrt((_deviations(w) ** 2).sum(-1) / (d - 1)))
    return np.where(_constant_window(x, d) & ~np.isnan(out), 0.0, out)


def ts_skew(x, d):
    out = _done(_rolling(x, d).skew())
    return np.where(_constant_window(x, d), np.nan, out)


def ts_kurt(x, d):
    out = _done(_rolling(x, d).kurt())
    return np.where(_constant_window(x, d), np.nan, out)


def ts_max(x, d):
    return _done(_rolling(x, d).max())


def ts_min(x, d):
    return _done(_rolling(x, d).min())


def ts_argmax(x, d):
    return _windows(x, d, lambda w: d - 1 - np.argmax(w, axis=-1))


def ts_argmin(x, d):
    return _windows(x, d, lambda w: d - 1 - np.argmin(w, axis=-1))


def ts_rank(x, d):
    if d == 1:
        return np.where(np.isnan(_arr(x)), np.nan, 0.5)
    r = _rolling(x, d).rank(method="average").to_numpy()
    return _done((r - 1.0) / (d - 1.0))


def ts_product(x, d):
    return _windows(x, d, lambda w: np.prod(w, axis=-1))


def ts_decay_linear(x, d):
    weights = np.arange(1.0, d + 1.0)  # oldest 1 ... today d
    return _windows(x, d, lambda w: (w @ weights) / weights.sum())


def ts_slope(x, d):
    if d == 1:
        return np.full(np.shape(x), np.nan)
    i = np.arange(d, dtype=np.float64) - (d - 1) / 2.0
    return _windows(x, d, lambda w: (_deviations(w) @ i) / (i @ i))


def ts_ema(x, d):
    """Per column, per run of finite values: seed = mean of the first d, then ewm(adjust=False)."""
    a = _arr(x)
    out = np.full(a.shape, np.nan)
    alpha = 2.0 / (d + 1.0)
    for j in range(a.shape[1]):
        col = pd.Series(a[:, j])
        run_id = col.isna().cumsum()
        for _, run in col[col.notna()].groupby(run_id[col.notna()]):
            if len(run) < d:
                continue
            seeded = run.iloc[d - 1:].copy()
            seeded.iloc[0] = run.iloc[:d].mean()
            out[seeded.index, j] = seeded.ewm(alpha=alpha, adjust=False).mean().to_numpy()
    return _done(out)


def pandas_ts_cov(x, y, d):
    """pandas rolling cov (one-pass E[xy] - E[x]E[y]: loses digits on price × volume)."""
    dx, dy = pd.DataFrame(_arr(x)), pd.DataFrame(_arr(y))
    return _done(dx.rolling(d, min_periods=d).cov(dy))


def pandas_ts_corr(x, y, d):
    """pandas rolling corr (one-pass; see pandas_ts_cov), zero variance -> NaN."""
    dx, dy = pd.DataFrame(_arr(x)), pd.DataFrame(_arr(y))
    out = _done(dx.rolling(d, min_periods=d).corr(dy))
    zero_var = _constant_window(x, d) | _constant_window(y, d)
    return np.where(zero_var, np.nan, out)


def _paired_windows(x, y, d, fn):
    a, b = _arr(x), _arr(y)
    both = np.where(np.isnan(b), np.nan, a)  # a window is full only if x AND y are finite
    out = np.full(a.shape, np.nan)
    if d > a.shape[0]:
        return out
    wa = sliding_window_view(both, d, axis=0)
    wb = sliding_window_view(np.where(np.isnan(a), np.nan, b), d, axis=0)
    ca, cb = _deviations(wa), _deviations(wb)
    with np.errstate(all="ignore"):
        out[d - 1:] = fn(ca, cb)
    return _done(out)


def ts_cov(x, y, d):
    """Two-pass definition on numpy windows (pandas' one-pass cov is checked separately)."""
    if d == 1:
        return np.full(np.shape(x), np.nan)
    out = _paired_windows(x, y, d, lambda ca, cb: (ca * cb).sum(-1) / (d - 1))
    zero_var = _constant_window(x, d) | _constant_window(y, d)
    return np.where(zero_var & ~np.isnan(out), 0.0, out)


def ts_corr(x, y, d):
    """Two-pass definition on numpy windows; zero variance -> NaN."""
    out = _paired_windows(x, y, d, lambda ca, cb: (ca * cb).sum(-1)
                          / np.sqrt((ca * ca).sum(-1) * (cb * cb).sum(-1)))
    zero_var = _constant_window(x, d) | _constant_window(y, d)
    return np.where(zero_var, np.nan, out)


def adv(close, volume, d):
    return ts_mean(_binary(np.multiply)(close, volume), d)


REFERENCE: dict[str, Callable] = {
    "add": _binary(np.add), "sub": _binary(np.subtract), "mul": _binary(np.multiply),
    "div": _div, "neg": _unary(np.negative), "power": _power,
    "lt": _compare(np.less), "le": _compare(np.less_equal), "gt": _compare(np.greater),
    "ge": _compare(np.greater_equal), "eq": _compare(np.equal), "ne": _compare(np.not_equal),
    "and": _compare(lambda a, b: (a != 0) & (b != 0)),
    "or": _compare(lambda a, b: (a != 0) | (b != 0)),
    "where": _where, "abs": _unary(np.abs),
    "log": _unary(lambda a: np.where(a > 0, np.log(a), np.nan)),
    "sqrt": _unary(lambda a: np.where(a >= 0, np.sqrt(a), np.nan)),
    "sign": _unary(np.sign), "signed_power": _signed_power,
    "min": _minmax(np.minimum), "max": _minmax(np.maximum),
    "rank": rank, "scale": scale, "group_neutralize": group_neutralize,
    "delay": delay, "ts_delta": ts_delta, "ts_mean": ts_mean, "ts_median": ts_median, "ts_std": ts_std,
    "ts_sum": ts_sum, "ts_max": ts_max, "ts_min": ts_min, "ts_rank": ts_rank,
    "ts_argmax": ts_argmax, "ts_argmin": ts_argmin, "ts_product": ts_product,
    "ts_decay_linear": ts_decay_linear, "ts_ema": ts_ema, "ts_skew": ts_skew,
    "ts_kurt": ts_kurt, "ts_slope": ts_slope, "ts_corr": ts_corr, "ts_cov": ts_cov,
    "adv": adv,
}


def reference_evaluate(node, panel) -> np.ndarray:
    """Evaluate an AST with the reference operators (no cache, no scalar shortcuts)."""
    shape = (panel.T, panel.N)

    def ev(n):
        if isinstance(n, Num):
            return np.full(shape, float(n.value))
        if isinstance(n, Field):
            return _arr(panel.field(n.name))
        assert isinstance(n, Call), n
        if n.op == "adv":
            return adv(panel.field("close"), panel.field("volume"), n.args[0].days)
        args = []
        for a in n.args:
            if isinstance(a, Window):
                args.append(a.days)
            elif isinstance(a, Level):
                args.append(panel.group_codes(a.name))
            else:
                args.append(ev(a))
        return np.broadcast_to(REFERENCE[n.op](*args), shape).astype(np.float64)

    return ev(node)
