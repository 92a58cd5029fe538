"""Numba kernels of the DSL: one per operator, every one looking only backward.

Every kernel takes float64 (T, N) arrays (time on axis 0, stocks on axis 1) and
integer windows, and returns a new C-contiguous float64 (T, N) array.  Element-wise
kernels also accept Python/NumPy scalars for any operand and broadcast them.
:data:`KERNELS` maps every canonical operator name of ``gymkit.dsl.operators`` to
its kernel.  ``x`` below is any input; "finite" means not NaN and not ±inf: every
non-finite input counts as missing, and no kernel ever outputs ±inf (it becomes NaN).

Why our own kernels instead of pandas/bottleneck: one pass per node in compiled code,
bit-for-bit deterministic results, and semantics fixed here (DESIGN §3) rather than
inherited from a library version.

Operator semantics (rows marked * are choices where DESIGN §3 is silent):

================  ==========================================================================
operator          value at row t (column by column unless cross-sectional)
================  ==========================================================================
add sub mul div   a∘b; division by 0 -> NaN; a non-finite result -> NaN
neg abs           -x, |x|
log sqrt          log x for x > 0, sqrt x for x >= 0, else NaN
sign              -1/0/+1; sign(0) = 0; NaN -> NaN
power(x, y)       x**y when real and finite, else NaN (negative x with non-integer y -> NaN;
                  0**negative -> NaN); * power(x, 0) = 1 for finite x
signed_power      sign(x)·|x|**a, NaN when not finite (0**negative -> NaN)
min max           element-wise; NaN if either operand is NaN; * -0.0 is returned as +0.0 so
                  the result is bit-identical with the operands swapped
lt le gt ge eq ne 1.0/0.0; NaN if either operand is NaN
and or            1.0/0.0 on (a != 0) and/or (b != 0); * NaN if EITHER operand is NaN (no
                  short-circuit: 0 && NaN is NaN)
where(c, a, b)    NaN if c is NaN; a where c != 0 (even if b is NaN), else b
rank(x)           per row: average-tie rank r among the n finite values -> (r-1)/(n-1);
                  n = 1 -> 0.5; non-finite entries stay NaN (n = 0 -> all NaN)
scale(x)          per row: x / sum|x| over finite values; * sum|x| == 0 -> NaN row
group_neutralize  per row: x minus the mean of the finite x of its group; code -1 -> NaN
delay(x, d)       x[t-d] (NaN for t < d)
ts_delta(x, d)    x[t] - x[t-d]
every other ts_*  NaN unless all d values x[t-d+1..t] (and y for corr/cov) are finite
ts_sum ts_mean    sum / mean of the window (running sum, re-anchored every d rows)
ts_max ts_min     window max / min
ts_argmax/argmin  sessions since the window's max/min (0 = today); * ties -> the EARLIEST
                  occurrence (largest count), as numpy.argmax over the window
ts_rank(x, d)     (#others below today + 0.5·#others equal) / (d-1), in [0, 1]; * d = 1 -> 0.5
ts_std            pandas rolling std (ddof=1); * a constant window -> 0.0 (as pandas);
                  * d = 1 -> NaN (ddof=1, as pandas)
ts_cov(x, y, d)   pandas rolling cov (ddof=1); a constant x or y window -> 0.0; d = 1 -> NaN
ts_corr(x, y, d)  pandas rolling corr; zero variance of x or y -> NaN; d = 1 -> NaN
ts_skew           pandas rolling skew (bias-corrected); zero variance or d < 3 -> NaN
ts_kurt           pandas rolling kurt (excess, bias-corrected); zero variance or d < 4 -> NaN
ts_slope          OLS slope of the window on 0..d-1; * d = 1 -> NaN; constant window -> 0.0
ts_product        product of the window
ts_decay_linear   sum_i w_i·x[t-i] / sum_i w_i with w_i = d - i (today weighs d)
ts_ema(x, d)      alpha = 2/(d+1); at the first t with a full finite window the value is
                  that window's mean, then e_t = (1-alpha)·e_{t-1} + alpha·x_t;
                  * a non-finite x_t gives NaN and restarts: the next value is the mean of
                  the next full finite window
adv(c, v, d)      ts_mean(c·v, d): average daily dollar volume
================  ==========================================================================

"Zero variance" means the window is constant (a run of d identical values), detected
exactly, so constant windows never leak rounding noise into corr/skew/kurt.

Numerical design: rolling sums, moments (std, skew, kurt, cov, corr, slope) and the
linear decay are running (power) sums of ``x - k`` where the shift ``k`` (a window
value or mean) is re-anchored by an exact O(d) recomputation every d sessions, and
sooner whenever the terms pushed through the sums since the anchor exceed 64x the
window's own sum of |x - k| (of (x - k)² for moments) -- after a jump, a huge outlier
leaving the window, or a volatile spell: an amortised O(1) per row with no catastrophic cancellation on price-level inputs
(close ~ 500, tiny variance) and rounding bounded by the window, not by history.  Max,
min, argmax, argmin scan short windows (d <= 4) and use block prefix/suffix extremes
(van Herk/Gil-Werman, O(1) amortised) for longer ones, ts_product block products, ts_rank
a direct count of the window (exact integers; O(d) but vectorised across stocks).

Speed design: the time-series engines sweep the (T, N) arrays row by row with each
stock's state in length-N arrays (contiguous memory, independent stocks), except
cov/corr/slope, which measured faster as one loop per column.  Every stock sees the same
floating-point operations in the same order as a column-at-a-time loop, so the results
are the same bits as the earlier column engines.  All loops are serial: no threads (on a
shared 2-core box a prange rank was 0.47 ms at best but 20 ms median under load).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import guvectorize, njit, vectorize

__all__ = ["ELEMENTWISE", "KERNELS", "rank_scratch", "row_ranks2"]

_NAN = np.nan
_JIT = {"nopython": True, "cache": True}
_NJIT = {"cache": True, "nogil": True, "error_model": "numpy"}  # no ZeroDivisionError checks: lets LLVM vectorise divisions


# ============================================================== shared scalar helpers
@njit(inline="always", **_NJIT)
def _clean(r):
    """r if finite else NaN: the one place ±inf becomes NaN."""
    return r if math.isfinite(r) else _NAN


@njit(inline="always", **_NJIT)
def _neumaier(s, c, v):
    """One Neumaier-compensated step: returns (s + v, updated compensation)."""
    t = s + v
    if abs(s) >= abs(v):
        c += (s - t) + v
    else:
        c += (v - t) + s
    return t, c


# ============================================================== element-wise kernels
# Each is one scalar function; numba.vectorize makes it a broadcasting ufunc.
_U1 = ["float64(float64)"]
_U2 = ["float64(float64, float64)"]
_U3 = ["float64(float64, float64, float64)"]


@vectorize(_U2, **_JIT)
def _add(a, b):
    return _clean(a + b)


@vectorize(_U2, **_JIT)
def _sub(a, b):
    return _clean(a - b)


@vectorize(_U2, **_JIT)
def _mul(a, b):
    return _clean(a * b)


@vectorize(_U2, **_JIT)
def _div(a, b):
    if b == 0.0 or not math.isfinite(b):
        return _NAN
    return _clean(a / b)


@vectorize(_U1, **_JIT)
def _neg(a):
    return _clean(-a)


@vectorize(_U1, **_JIT)
def _abs(a):
    return _clean(abs(a))


@vectorize(_U1, **_JIT)
def _log(a):
    if a > 0.0 and math.isfinite(a):
        return math.log(a)
    return _NAN


@vectorize(_U1, **_JIT)
def _sqrt(a):
    if a >= 0.0 and math.isfinite(a):
        return math.sqrt(a)
    return _NAN


@vectorize(_U1, **_JIT)
def _sign(a):
    if not math.isfinite(a):
        return _NAN
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    return 0.0


@njit(inline="always", **_NJIT)
def _real_power(a, b):
    """a**b when real and finite, else NaN."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    if a < 0.0 and b != math.floor(b):
        return _NAN
    if a == 0.0 and b < 0.0:
        return _NAN
    return _clean(a**b)


@vectorize(_U2, **_JIT)
def _power(a, b):
    return _real_power(a, b)


@vectorize(_U2, **_JIT)
def _signed_power(a, b):
    if not math.isfinite(a):
        return _NAN
    mag = _real_power(abs(a), b)
    if a < 0.0:
        return -mag
    return mag if a > 0.0 else mag * 0.0  # 0**b is 0 (b > 0), 1 (b == 0) or NaN


@vectorize(_U2, **_JIT)
def _min(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    return (a if a < b else b) + 0.0  # + 0.0 maps -0.0 to +0.0: symmetric bits


@vectorize(_U2, **_JIT)
def _max(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    return (a if a > b else b) + 0.0


# Comparisons and logic: one scalar function, the relation picked by a code.
_LT, _LE, _GT, _GE, _EQ, _NE, _AND, _OR = range(8)


@njit(inline="always", **_NJIT)
def _relation(a, b, code):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    if code == _LT:
        r = a < b
    elif code == _LE:
        r = a <= b
    elif code == _GT:
        r = a > b
    elif code == _GE:
        r = a >= b
    elif code == _EQ:
        r = a == b
    elif code == _NE:
        r = a != b
    elif code == _AND:
        r = a != 0.0 and b != 0.0
    else:
        r = a != 0.0 or b != 0.0
    return 1.0 if r else 0.0


@vectorize(["float64(float64, float64, int64)"], **_JIT)
def _relate(a, b, code):
    return _relation(a, b, code)


@vectorize(_U3, **_JIT)
def _where(c, a, b):
    if not math.isfinite(c):
        return _NAN
    return _clean(a) if c != 0.0 else _clean(b)


def _as_result(r: object) -> np.ndarray | float:
    """A ufunc result as a fresh C-contiguous float64 array (scalars stay scalars)."""
    if isinstance(r, np.ndarray) and r.ndim:
        return np.ascontiguousarray(r, dtype=np.float64)
    return float(r)  # every operand was a scalar


def _elementwise(ufunc: Callable, name: str, doc: str, code: int | None = None) -> Callable:
    """Wrap a scalar ufunc as the public kernel ``name`` (arrays or scalars in)."""

    if code is None:
        def kernel(*args):
            with np.errstate(all="ignore"):  # NaN/inf are handled by the rules above
                return _as_result(ufunc(*args))
    else:
        def kernel(a, b):
            with np.errstate(all="ignore"):
                return _as_result(ufunc(a, b, code))
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


add = _elementwise(_add, "add", "a + b; non-finite -> NaN.")
sub = _elementwise(_sub, "sub", "a - b; non-finite -> NaN.")
mul = _elementwise(_mul, "mul", "a * b; non-finite -> NaN.")
div = _elementwise(_div, "div", "a / b; b == 0 or non-finite result -> NaN.")
neg = _elementwise(_neg, "neg", "-x.")
abs_ = _elementwise(_abs, "abs", "|x|.")
log = _elementwise(_log, "log", "log x for x > 0, else NaN.")
sqrt = _elementwise(_sqrt, "sqrt", "sqrt x for x >= 0, else NaN.")
sign = _elementwise(_sign, "sign", "-1, 0 or 1; NaN stays NaN.")
power = _elementwise(_power, "power", "x**y when real and finite, else NaN.")
signed_power = _elementwise(_signed_power, "signed_power", "sign(x)·|x|**a; NaN when not finite.")
min_ = _elementwise(_min, "min", "Element-wise min; NaN if either is NaN; symmetric bits.")
max_ = _elementwise(_max, "max", "Element-wise max; NaN if either is NaN; symmetric bits.")
where = _elementwise(_where, "where", "c ? a : b; NaN if c is NaN; a where c != 0 else b.")
lt, le, gt, ge, eq, ne, and_, or_ = (
    _elementwise(_relate, name, f"1.0/0.0 for {sym}; NaN if either operand is NaN.", code)
    for code, (name, sym) in enumerate((
        ("lt", "a < b"), ("le", "a <= b"), ("gt", "a > b"), ("ge", "a >= b"), ("eq", "a == b"),
        ("ne", "a != b"), ("and", "a != 0 && b != 0"), ("or", "a != 0 || b != 0"))))


# ============================================================== cross-sectional kernels
# Shared with gymkit.verifiers.book (the book's weights are centred ranks): one ranking
# code for the whole project.  Why our own: exact integer ranks, serial and bit-identical,
# and for the ~50-stock rows of a panel an O(n²) count that LLVM vectorises (each loaded
# value compared with four at once) beats sorting; wider rows fall back to a stable sort.
# Measured and dropped: insertion-sorting from the previous row's order (smooth signals
# need ~4 swaps a row) was no faster than the vectorised count (~0.3 µs a row here).
_RANK_COUNT_MAX = 64  # up to this many finite values a row is ranked by O(n^2) counting


@njit(inline="always", **_NJIT)
def _count_le(buf, vi):
    c = 0
    for j in range(buf.shape[0]):
        c += buf[j] <= vi
    return c


@njit(inline="always", **_NJIT)
def _count_le_all(buf, le, n_stocks):
    """le[i] = #{j: buf[j] <= buf[i]} for i < n_stocks; return Σ le.  Four i at a time
    (register blocking: each loaded buf[j] is compared with four values)."""
    total = 0
    for i in range(0, n_stocks - 3, 4):
        v0 = buf[i]
        v1 = buf[i + 1]
        v2 = buf[i + 2]
        v3 = buf[i + 3]
        c0 = 0
        c1 = 0
        c2 = 0
        c3 = 0
        for j in range(buf.shape[0]):
            b = buf[j]
            c0 += b <= v0
            c1 += b <= v1
            c2 += b <= v2
            c3 += b <= v3
        le[i] = c0
        le[i + 1] = c1
        le[i + 2] = c2
        le[i + 3] = c3
        total += c0 + c1 + c2 + c3
    for i in range(n_stocks - n_stocks % 4, n_stocks):
        c = _count_le(buf, buf[i])
        le[i] = c
        total += c
    return total


@njit(**_NJIT)
def rank_scratch(n_stocks):
    """Scratch buffers (buf, le, marks) for :func:`row_ranks2` on rows of ``n_stocks``."""
    buf = np.full((n_stocks + 7) // 8 * 8, _NAN)  # NaN padding drops out of every count
    return buf, np.empty(n_stocks, np.int64), np.empty(n_stocks + 1, np.int64)


@njit(inline="always", **_NJIT)
def row_ranks2(src, buf, le, marks, ranks2):
    """Twice the 1-based average-tie rank of each finite ``src[j]`` among the row's finite
    values (an exact integer, as float) into ``ranks2[j]``; 0.0 for a non-finite entry.
    Returns n, the number of finite values.  Scratch from :func:`rank_scratch`.

    With le_i = #{j: v_j <= v_i} and lt_i = #{j: v_j < v_i}, 2·rank_i = lt_i + le_i + 1.
    Without ties lt_i = le_i - 1; with ties, lt_i is the largest le_k below le_i (0 if
    none), found in O(n) by marking the le values.  n > 64 uses a stable sort instead.
    """
    n_stocks = src.shape[0]
    n = 0
    for j in range(n_stocks):
        v = src[j]
        fin = math.isfinite(v)
        buf[j] = v if fin else _NAN
        n += fin
    if n > _RANK_COUNT_MAX:
        vals = np.empty(n)
        idx = np.empty(n, np.int64)
        m = 0
        for j in range(n_stocks):
            ranks2[j] = 0.0
            if math.isfinite(src[j]):
                vals[m] = src[j]
                idx[m] = j
                m += 1
        order = np.argsort(vals, kind="mergesort")
        i = 0
        while i < n:  # ties [i, k): lt = i, le = k
            k = i + 1
            while k < n and vals[order[k]] == vals[order[i]]:
                k += 1
            for q in range(i, k):
                ranks2[idx[order[q]]] = float(i + k + 1)
            i = k
        return n
    total = _count_le_all(buf, le, n_stocks)
    if total == n * (n + 1) // 2:  # no ties: lt = le - 1
        for i in range(n_stocks):
            ranks2[i] = 2.0 * le[i]  # le = 0 for a non-finite entry
        return n
    # ties: mark every le value (ranks2 is scratch: ranks2[c - 1] = 1 marks count c), then
    # marks[c] = the largest marked count < c
    for k in range(n_stocks):
        ranks2[k] = 0.0
    for i in range(n_stocks):
        if le[i] > 0:
            ranks2[le[i] - 1] = 1.0
    last = 0
    for k in range(1, n_stocks + 1):
        marks[k] = last
        if ranks2[k - 1] == 1.0:
            last = k
    for i in range(n_stocks):
        c = le[i]
        ranks2[i] = float(marks[c] + c + 1) if c > 0 else 0.0
    return n


@njit(**_NJIT)
def _rank_rows(x, out):
    """Average-tie ranks per row mapped to [0, 1]: (rank - 1) / (n - 1)."""
    n_cols = x.shape[1]
    buf, le, marks = rank_scratch(n_cols)
    r2 = np.empty(n_cols)
    for t in range(x.shape[0]):
        n = row_ranks2(x[t], buf, le, marks, r2)
        o = out[t]
        if n == 1:
            for j in range(n_cols):
                o[j] = 0.5 if r2[j] > 0.0 else _NAN
            continue
        for j in range(n_cols):  # (lt + 0.5·(le - lt - 1)) / (n - 1), exact numerator
            o[j] = 0.5 * (r2[j] - 2.0) / (n - 1) if r2[j] > 0.0 else _NAN


@njit(**_NJIT)
def _scale_rows(x, out):
    for t in range(x.shape[0]):
        s = 0.0
        c = 0.0
        for j in range(x.shape[1]):
            if math.isfinite(x[t, j]):
                s, c = _neumaier(s, c, abs(x[t, j]))
        s += c
        for j in range(x.shape[1]):
            v = x[t, j]
            out[t, j] = _clean(v / s) if (s > 0.0 and math.isfinite(v)) else _NAN


@njit(**_NJIT)
def _group_neutralize_rows(x, codes, out):
    n_groups = 0
    for j in range(codes.shape[0]):
        n_groups = max(n_groups, codes[j] + 1)
    sums = np.empty(n_groups)
    comp = np.empty(n_groups)
    counts = np.empty(n_groups)
    for t in range(x.shape[0]):
        sums[:] = 0.0
        comp[:] = 0.0
        counts[:] = 0.0
        for j in range(x.shape[1]):
            g = codes[j]
            if g >= 0 and math.isfinite(x[t, j]):
                sums[g], comp[g] = _neumaier(sums[g], comp[g], x[t, j])
                counts[g] += 1.0
        for j in range(x.shape[1]):
            g = codes[j]
            v = x[t, j]
            if g >= 0 and math.isfinite(v):
                out[t, j] = _clean(v - (sums[g] + comp[g]) / counts[g])
            else:
                out[t, j] = _NAN


def _matrix(x: object, name: str) -> np.ndarray:
    """``x`` as a float64 (T, N) array; a one-line ValueError naming the kernel if not."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a (T, N) float64 array, got shape {a.shape}")
    return a


def _window(d: object, name: str) -> int:
    """``d`` as a positive int window; a one-line ValueError naming the kernel if not."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"{name}: window must be an integer >= 1, got {d!r}")
    return int(d)


def rank(x: np.ndarray) -> np.ndarray:
    """Per row: average-tie rank of the finite values mapped to [0, 1] as (r-1)/(n-1)."""
    x = _matrix(x, "rank")
    out = np.empty(x.shape)
    _rank_rows(x, out)
    return out


def scale(x: np.ndarray) -> np.ndarray:
    """Per row: x / sum|x| over finite values; a row with sum|x| == 0 is NaN."""
    x = _matrix(x, "scale")
    out = np.empty(x.shape)
    _scale_rows(x, out)
    return out


def group_neutralize(x: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per row: x minus its group's mean of finite values; codes int64 (N,), -1 -> NaN."""
    x = _matrix(x, "group_neutralize")
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    if codes.shape != (x.shape[1],):
        raise ValueError(f"group_neutralize: codes must have shape ({x.shape[1]},), got {codes.shape}")
    out = np.empty(x.shape)
    _group_neutralize_rows(x, codes, out)
    return out


# ============================================================== time-series kernels
# Row-major engines (why not one loop per column): arrays are (T, N) with the N stocks
# contiguous, so each engine sweeps the rows t and, inside, the N stocks of the row, with
# every stock's running state held in length-N arrays.  The stocks are independent, so
# the N updates of a row overlap in the CPU instead of forming one long serial chain per
# strided column.  Each stock still sees exactly the floating-point operations, in the
# same order, of a column-at-a-time loop: results do not depend on the sweep order, bit
# for bit.  Every loop is serial (no threads, no cross-stock reductions).
# A small ``stat`` code picks the statistic where several share one engine.
_DELAY, _DELTA = 0, 1
_SUM, _MEAN = 0, 1
_STD, _SKEW, _KURT = 0, 1, 2
_COV, _CORR, _SLOPE = 0, 1, 2
_MAX, _MIN, _ARGMAX, _ARGMIN = 0, 1, 2, 3


@njit(**_NJIT)
def _r_lag(x, d, stat, out):
    """delay: x[t-d]; delta: x[t] - x[t-d]."""
    n_rows, n_cols = x.shape
    for t in range(n_rows):
        if t < d:
            for j in range(n_cols):
                out[t, j] = _NAN
        elif stat == _DELAY:
            for j in range(n_cols):
                out[t, j] = _clean(x[t - d, j])
        else:
            for j in range(n_cols):
                out[t, j] = _clean(x[t, j] - x[t - d, j])


# Re-anchor when the (squared, for moments) terms pushed through running sums since the last exact
# recomputation exceed this multiple of the window's own sum of squared deviations: the
# rounding left in the sums is then at most ~eps·_DRIFT relative (eps·_DRIFT² for the
# fourth moment), whatever came before (a volatile regime, a jump, a trend).
_DRIFT = 64.0


# ts_sum / ts_mean sweep each row twice.  The first sweep does the O(1) update for EVERY
# stock with no branches (so LLVM vectorises it across the stocks) and flags, in ``slow``,
# the few stocks where it does not apply: a non-finite value, a window still filling, or
# an exact re-anchoring (the d-th row since the last one, or drift).  The second sweep
# handles exactly those stocks as a column-at-a-time loop would -- a re-anchoring
# recomputes the window sums of all stocks at once (vectorised) and keeps them where
# needed -- so every stock sees the same floating-point operations in the same order as
# one column loop: bit for bit.  (Measured: the same scheme for the 5-9 running sums of
# std/skew/kurt/cov/corr did not vectorise and was slower, so those keep simpler loops.)
@njit(inline="always", **_NJIT)
def _triage(row, t, d, slow, last_bad, anchor, redo, out_row):
    """Second sweep of row t (values ``row``, output ``out_row``) over the stocks flagged
    ``slow`` (all of them while t < d): a non-finite value resets the stock and gives NaN
    (``~`` on a bool is logical not in numba), a window still filling gives NaN, any other
    stock needs an exact recomputation (``redo[j]``).  Returns whether any does."""
    any_redo = False
    for j in range(row.shape[0]):
        r = False
        if t < d or slow[j]:
            if not math.isfinite(row[j]):
                last_bad[j] = t
                anchor[j] = -1
                out_row[j] = _NAN
            elif t - last_bad[j] < d:
                out_row[j] = _NAN
            else:
                r = True
                any_redo = True
        redo[j] = r
    return any_redo


@njit(inline="always", **_NJIT)
def _steady(v, t, d, last_bad, anchor):
    """Whether the O(1) update applies to a stock at row t (branch-free)."""
    return math.isfinite(v) & (t - last_bad >= d) & (anchor >= 0) & (t - anchor < d)


@njit(**_NJIT)
def _r_sum(x, d, stat, out):
    """Window sum or mean: a running sum re-anchored by an exact recomputation every d rows,
    or sooner when the terms pushed through it since then exceed _DRIFT x the window's
    sum of |x| (a huge value that left the window would otherwise leave its rounding)."""
    n_rows, n_cols = x.shape
    last_bad = np.full(n_cols, -1, np.int64)
    anchor = np.full(n_cols, -1, np.int64)
    slow = np.ones(n_cols, np.bool_)
    redo = np.zeros(n_cols, np.bool_)
    st = np.zeros((5, n_cols))
    s_, s_abs_, mag_, r_s, r_abs = st[0], st[1], st[2], st[3], st[4]
    div = 1.0 if stat == _SUM else float(d)
    for t in range(n_rows):
        if t >= d:
            for j in range(n_cols):
                v = x[t, j]
                w = x[t - d, j]
                s = s_[j] + (v - w)
                s_abs = s_abs_[j] + (abs(v) - abs(w))
                mag = mag_[j] + (abs(v) + abs(w))
                s_[j] = s
                s_abs_[j] = s_abs
                mag_[j] = mag
                slow[j] = ~(_steady(v, t, d, last_bad[j], anchor[j]) & ~(mag > _DRIFT * s_abs))
                out[t, j] = _clean(s / div)
        if not _triage(x[t], t, d, slow, last_bad, anchor, redo, out[t]):
            continue
        for j in range(n_cols):
            r_s[j] = 0.0
            r_abs[j] = 0.0
        for i in range(t - d + 1, t + 1):
            for j in range(n_cols):
                r_s[j] += x[i, j]
                r_abs[j] += abs(x[i, j])
        for j in range(n_cols):
            if redo[j]:
                s_[j] = r_s[j]
                s_abs_[j] = r_abs[j]
                mag_[j] = r_abs[j]
                anchor[j] = t
                out[t, j] = _clean(r_s[j] / div)


@njit(inline="always", **_NJIT)
def _power_sums(x, j, lo, hi):
    """Exact-as-float64 shift k = mean(x[lo:hi, j]) and sums of (x - k)**p, p = 1..4."""
    k = 0.0
    for i in range(lo, hi):
        k += x[i, j]
    k /= hi - lo
    s1 = s2 = s3 = s4 = 0.0
    for i in range(lo, hi):
        u = x[i, j] - k
        u2 = u * u
        s1 += u
        s2 += u2
        s3 += u2 * u
        s4 += u2 * u2
    return k, s1, s2, s3, s4


@njit(**_NJIT)
def _r_moments(x, d, stat, out):
    """std / skew / kurt from running power sums of x - k, k re-anchored exactly every d
    rows or sooner when the sums' rounding could matter (see _DRIFT)."""
    n_rows, n_cols = x.shape
    nf = float(d)
    inv_n = 1.0 / nf
    inv_n1 = 1.0 / (nf - 1.0) if d > 1 else 0.0
    last_bad = np.full(n_cols, -1, np.int64)
    anchor = np.full(n_cols, -1, np.int64)  # row of the last exact recomputation; -1 = none
    run_ = np.zeros(n_cols, np.int64)       # length of the run of identical values ending at t
    st = np.zeros((n_cols, 6))              # per stock: k, s1, s2, s3, s4, mag
    for t in range(n_rows):
        for j in range(n_cols):
            v = x[t, j]
            if not math.isfinite(v):
                last_bad[j] = t
                anchor[j] = -1
                run_[j] = 0
                out[t, j] = _NAN
                continue
            run = run_[j] + 1 if (t > 0 and x[t - 1, j] == v) else 1
            run_[j] = run
            if t - last_bad[j] < d:
                out[t, j] = _NAN
                continue
            constant = run >= d
            fresh = anchor[j] < 0 or t - anchor[j] >= d
            k = st[j, 0]
            s1 = st[j, 1]
            s2 = st[j, 2]
            s3 = st[j, 3]
            s4 = st[j, 4]
            mag = st[j, 5]
            if not fresh:
                u = v - k
                w = x[t - d, j] - k
                u2 = u * u
                w2 = w * w
                s1 += u - w
                s2 += u2 - w2
                s3 += u2 * u - w2 * w
                s4 += u2 * u2 - w2 * w2
                mag += u2 + w2
                fresh = not constant and (s2 - s1 * s1 * inv_n) * _DRIFT < mag
            if fresh:
                k, s1, s2, s3, s4 = _power_sums(x, j, t - d + 1, t + 1)
                mag = s2
                anchor[j] = t
            st[j, 0] = k
            st[j, 1] = s1
            st[j, 2] = s2
            st[j, 3] = s3
            st[j, 4] = s4
            st[j, 5] = mag
            if stat == _STD:
                if d < 2:
                    out[t, j] = _NAN
                elif constant:
                    out[t, j] = 0.0
                else:
                    out[t, j] = _clean(math.sqrt(max((s2 - s1 * s1 * inv_n) * inv_n1, 0.0)))
                continue
            a = s1 * inv_n
            m2 = s2 * inv_n - a * a
            if constant or m2 <= 0.0 or d < 3 or (stat == _KURT and d < 4):
                out[t, j] = _NAN
                continue
            m3 = s3 * inv_n - 3.0 * a * (s2 * inv_n) + 2.0 * a * a * a
            if stat == _SKEW:
                out[t, j] = _clean(math.sqrt(nf * (nf - 1.0)) * m3
                                   / ((nf - 2.0) * m2 * math.sqrt(m2)))
            else:
                m4 = (s4 * inv_n - 4.0 * a * (s3 * inv_n) + 6.0 * a * a * (s2 * inv_n)
                      - 3.0 * a * a * a * a)
                g = (nf * nf - 1.0) * m4 / (m2 * m2) - 3.0 * (nf - 1.0) * (nf - 1.0)
                out[t, j] = _clean(g / ((nf - 2.0) * (nf - 3.0)))


@njit(inline="always", **_NJIT)
def _cross_sums(x, y, lo, hi):
    """Shifts kx, ky (window means) and the sums of u, w, u², w², u·w (u = x-kx, w = y-ky)."""
    kx = ky = 0.0
    for i in range(lo, hi):
        kx += x[i]
        ky += y[i]
    kx /= hi - lo
    ky /= hi - lo
    sx = sy = sxx = syy = sxy = 0.0
    for i in range(lo, hi):
        u = x[i] - kx
        w = y[i] - ky
        sx += u
        sy += w
        sxx += u * u
        syy += w * w
        sxy += u * w
    return kx, ky, sx, sy, sxx, syy, sxy


@guvectorize(["void(float64[:], float64[:], int64, int64, float64[:])"], "(n),(n),(),()->(n)",
             nopython=True, cache=True)
def _g_comoments(x, y, d, stat, out):
    """cov / corr of (x, y), or slope of y on x (x = row index), from shifted sums.

    Kept as a column-at-a-time engine (a gufunc over the stocks): measured on 46 x 3556,
    row-major sweeps (plain, or two-sweep as _r_sum) were 1.5-2x slower here -- nine
    running sums per stock do not vectorise across stocks, and one column already has
    enough independent sums to keep the core busy.

    Symmetric in x and y bit for bit (every product is formed in both orders alike).
    """
    nf = float(d)
    inv_n = 1.0 / nf
    inv_n1 = 1.0 / (nf - 1.0) if d > 1 else 0.0
    last_bad = -1
    anchor = -1
    run_x = run_y = 0
    kx = ky = sx = sy = sxx = syy = sxy = mag_x = mag_y = 0.0
    for t in range(x.shape[0]):
        a = x[t]
        b = y[t]
        if not (math.isfinite(a) and math.isfinite(b)):
            last_bad = t
            anchor = -1
            run_x = run_y = 0
            out[t] = _NAN
            continue
        run_x = run_x + 1 if (t > 0 and x[t - 1] == a) else 1
        run_y = run_y + 1 if (t > 0 and y[t - 1] == b) else 1
        if t - last_bad < d:
            out[t] = _NAN
            continue
        constant = run_x >= d or run_y >= d
        fresh = anchor < 0 or t - anchor >= d
        if not fresh:
            u = a - kx
            w = b - ky
            uo = x[t - d] - kx
            wo = y[t - d] - ky
            sx += u - uo
            sy += w - wo
            sxx += u * u - uo * uo
            syy += w * w - wo * wo
            sxy += u * w - uo * wo
            mag_x += u * u + uo * uo
            mag_y += w * w + wo * wo
            fresh = not constant and ((sxx - sx * sx * inv_n) * _DRIFT < mag_x
                                      or (syy - sy * sy * inv_n) * _DRIFT < mag_y)
        if fresh:
            kx, ky, sx, sy, sxx, syy, sxy = _cross_sums(x, y, t - d + 1, t + 1)
            mag_x = sxx
            mag_y = syy
            anchor = t
        if d < 2:
            out[t] = _NAN
            continue
        cxy = sxy - sx * sy * inv_n
        if stat == _COV:
            out[t] = 0.0 if constant else _clean(cxy * inv_n1)
            continue
        vx = sxx - sx * sx * inv_n
        vy = syy - sy * sy * inv_n
        if stat == _SLOPE:
            out[t] = 0.0 if run_y >= d else _clean(cxy / vx)
        elif constant or vx <= 0.0 or vy <= 0.0:
            out[t] = _NAN
        else:
            out[t] = _clean(cxy / math.sqrt(vx * vy))


@njit(inline="always", **_NJIT)
def _mark_bad_rows(x, t, last_bad):
    """last_bad[j] = t for every non-finite x[t, j]."""
    for j in range(x.shape[1]):
        if not math.isfinite(x[t, j]):
            last_bad[j] = t


# Up to this window ts_max/min/argmax/argmin scan the window directly (O(d) per value, but
# branch-free and vectorised across the stocks of a row); above it they use van Herk /
# Gil-Werman block extremes (O(1) amortised).  Both return the EARLIEST extreme of the
# window (the tie rule), so they agree bit for bit (a test).
_EXTREME_SCAN_MAX = 4


@njit(**_NJIT)
def _r_extreme_scan(x, d, stat, out):
    """max / min / argmax / argmin by scanning each window, oldest first (strict improvement
    only, so a tie keeps the earliest row)."""
    n_rows, n_cols = x.shape
    sgn = 1.0 if (stat == _MAX or stat == _ARGMAX) else -1.0
    want_arg = stat == _ARGMAX or stat == _ARGMIN
    last_bad = np.full(n_cols, -1, np.int64)
    best = np.empty(n_cols)   # sgn · the extreme so far
    arg = np.empty(n_cols)    # its row, as float
    for t in range(n_rows):
        _mark_bad_rows(x, t, last_bad)
        if t < d - 1:
            for j in range(n_cols):
                out[t, j] = _NAN
            continue
        lo = t - d + 1
        for j in range(n_cols):
            best[j] = sgn * x[lo, j]
            arg[j] = lo
        for i in range(lo + 1, t + 1):
            fi = float(i)
            for j in range(n_cols):
                v = sgn * x[i, j]
                better = v > best[j]
                best[j] = v if better else best[j]
                arg[j] = fi if better else arg[j]
        for j in range(n_cols):
            if t - last_bad[j] < d:
                out[t, j] = _NAN
            elif want_arg:
                out[t, j] = t - arg[j]
            else:
                out[t, j] = sgn * best[j]


@njit(**_NJIT)
def _r_extreme_blocks(x, d, stat, out):
    """max / min / argmax / argmin from block extremes (van Herk / Gil-Werman).

    Rows are cut into blocks of d; the window [t-d+1, t] is a suffix of the previous block
    (extremes computed right to left, a tie taking the earlier row) plus a prefix of the
    current block (left to right, only a strict improvement replaces): the earlier part
    wins ties, so the result is the window's earliest extreme, as in the scan.
    """
    n_rows, n_cols = x.shape
    sgn = 1.0 if (stat == _MAX or stat == _ARGMAX) else -1.0
    want_arg = stat == _ARGMAX or stat == _ARGMIN
    last_bad = np.full(n_cols, -1, np.int64)
    suf = np.empty((d, n_cols))       # sgn · suffix extremes of the previous block
    suf_arg = np.empty((d, n_cols))   # and their rows (float)
    pre = np.empty(n_cols)
    pre_arg = np.empty(n_cols)
    for b0 in range(0, n_rows, d):
        if b0 >= d:  # suffix extremes of the previous (full) block [b0 - d, b0)
            p0 = b0 - d
            for j in range(n_cols):
                suf[d - 1, j] = sgn * x[b0 - 1, j]
                suf_arg[d - 1, j] = b0 - 1
            for r in range(d - 2, -1, -1):
                fi = float(p0 + r)
                for j in range(n_cols):
                    v = sgn * x[p0 + r, j]
                    take = v >= suf[r + 1, j]
                    suf[r, j] = v if take else suf[r + 1, j]
                    suf_arg[r, j] = fi if take else suf_arg[r + 1, j]
        for t in range(b0, min(b0 + d, n_rows)):
            _mark_bad_rows(x, t, last_bad)
            ft = float(t)
            if t == b0:
                for j in range(n_cols):
                    pre[j] = sgn * x[t, j]
                    pre_arg[j] = ft
            else:
                for j in range(n_cols):
                    v = sgn * x[t, j]
                    better = v > pre[j]
                    pre[j] = v if better else pre[j]
                    pre_arg[j] = ft if better else pre_arg[j]
            if t < d - 1:
                for j in range(n_cols):
                    out[t, j] = _NAN
                continue
            whole = t - b0 == d - 1  # the window is exactly this block
            r = t - d + 1 - (b0 - d)
            for j in range(n_cols):
                if whole or pre[j] > suf[r, j]:
                    best = pre[j]
                    row = pre_arg[j]
                else:
                    best = suf[r, j]
                    row = suf_arg[r, j]
                if t - last_bad[j] < d:
                    out[t, j] = _NAN
                elif want_arg:
                    out[t, j] = ft - row
                else:
                    out[t, j] = sgn * best


@njit(**_NJIT)
def _r_rank(x, d, out):
    """ts_rank by counting the window directly: (#below + 0.5·#equal) / (d - 1).

    Exact integer counts, so any algorithm gives the same bits; the count is branch-free
    and vectorised across the stocks of a row (d <= MAX_WINDOW = 252 in the DSL).
    """
    n_rows, n_cols = x.shape
    last_bad = np.full(n_cols, -1, np.int64)
    below = np.empty(n_cols, np.int64)
    equal = np.empty(n_cols, np.int64)
    for t in range(n_rows):
        _mark_bad_rows(x, t, last_bad)
        if t < d - 1:
            for j in range(n_cols):
                out[t, j] = _NAN
            continue
        for j in range(n_cols):
            below[j] = 0
            equal[j] = 0
        for i in range(t - d + 1, t):
            for j in range(n_cols):
                v = x[t, j]
                below[j] += x[i, j] < v
                equal[j] += x[i, j] == v
        for j in range(n_cols):
            if t - last_bad[j] < d:
                out[t, j] = _NAN
            elif d == 1:
                out[t, j] = 0.5
            else:
                out[t, j] = (below[j] + 0.5 * equal[j]) / (d - 1.0)


@njit(**_NJIT)
def _r_decay(x, d, out):
    """Linear decay: running weighted sum W of x - k (k re-anchored every d rows, or sooner
    on drift as in _r_sum).  With u = x - k and S the window sum of u:
    W_t = W_{t-1} + d*u_t - S_{t-1}."""
    n_rows, n_cols = x.shape
    nf = float(d)
    wsum = nf * (nf + 1.0) / 2.0
    last_bad = np.full(n_cols, -1, np.int64)
    anchor = np.full(n_cols, -1, np.int64)
    st = np.zeros((n_cols, 5))  # per stock: k, s, w, a_abs, mag
    for t in range(n_rows):
        for j in range(n_cols):
            v = x[t, j]
            if not math.isfinite(v):
                last_bad[j] = t
                anchor[j] = -1
                out[t, j] = _NAN
                continue
            if t - last_bad[j] < d:
                out[t, j] = _NAN
                continue
            fresh = anchor[j] < 0 or t - anchor[j] >= d
            k = st[j, 0]
            s = st[j, 1]
            w = st[j, 2]
            a_abs = st[j, 3]
            mag = st[j, 4]
            if not fresh:
                u = v - k
                uo = x[t - d, j] - k
                w += nf * u - s
                s += u - uo
                a_abs += abs(u) - abs(uo)
                mag += abs(u) + abs(uo)
                fresh = mag > _DRIFT * a_abs
            if fresh:
                k = v
                s = w = a_abs = 0.0
                for i in range(d):
                    u = x[t - i, j] - k
                    s += u
                    w += (nf - i) * u
                    a_abs += abs(u)
                mag = a_abs
                anchor[j] = t
            st[j, 0] = k
            st[j, 1] = s
            st[j, 2] = w
            st[j, 3] = a_abs
            st[j, 4] = mag
            out[t, j] = _clean(k + w / wsum)


@njit(**_NJIT)
def _r_product(x, d, out):
    """Window product from block prefix/suffix products (van Herk / Gil-Werman).

    Blocks of d rows; the window [t-d+1, t] is suffix(t-d+1) * prefix(t).
    """
    n_rows, n_cols = x.shape
    last_bad = np.full(n_cols, -1, np.int64)
    suf = np.empty((d, n_cols))  # suffix products of the previous block
    pre = np.empty(n_cols)
    for b0 in range(0, n_rows, d):
        if b0 >= d:
            p0 = b0 - d
            for j in range(n_cols):
                suf[d - 1, j] = x[b0 - 1, j]
            for r in range(d - 2, -1, -1):
                for j in range(n_cols):
                    suf[r, j] = x[p0 + r, j] * suf[r + 1, j]
        for t in range(b0, min(b0 + d, n_rows)):
            _mark_bad_rows(x, t, last_bad)
            if t == b0:
                for j in range(n_cols):
                    pre[j] = x[t, j]
            else:
                for j in range(n_cols):
                    pre[j] = pre[j] * x[t, j]
            whole = t - b0 == d - 1
            r = t - d + 1 - (b0 - d)
            for j in range(n_cols):
                if t - last_bad[j] < d:
                    out[t, j] = _NAN
                elif whole:
                    out[t, j] = _clean(pre[j])
                else:
                    out[t, j] = _clean(suf[r, j] * pre[j])


@njit(**_NJIT)
def _r_ema(x, d, out):
    """EMA seeded by the first full finite window's mean; restarts after a gap."""
    n_rows, n_cols = x.shape
    alpha = 2.0 / (d + 1.0)
    last_bad = np.full(n_cols, -1, np.int64)
    seeded = np.zeros(n_cols, np.bool_)
    e_ = np.zeros(n_cols)
    for t in range(n_rows):
        for j in range(n_cols):
            v = x[t, j]
            if not math.isfinite(v):
                last_bad[j] = t
                seeded[j] = False
                out[t, j] = _NAN
                continue
            e = e_[j]
            if seeded[j]:
                e = (1.0 - alpha) * e + alpha * v
            elif t - last_bad[j] >= d:
                e = 0.0
                for i in range(t - d + 1, t + 1):
                    e += x[i, j]
                e /= d
                seeded[j] = True
            e_[j] = e
            out[t, j] = _clean(e) if seeded[j] else _NAN


def _extreme(x: np.ndarray, d: int, stat: int, out: np.ndarray) -> None:
    """The extreme engine for window d: direct scan when small, block extremes otherwise."""
    if d <= _EXTREME_SCAN_MAX:
        _r_extreme_scan(x, d, stat, out)
    else:
        _r_extreme_blocks(x, d, stat, out)


def _rolling(engine: Callable, name: str, doc: str, *stat: int) -> Callable:
    """Public (x, d) kernel ``name`` running a row-major engine over the whole panel."""

    def kernel(x: np.ndarray, d: int) -> np.ndarray:
        x = _matrix(x, name)
        d = _window(d, name)
        out = np.empty(x.shape)
        engine(x, d, *stat, out)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


def _rolling2(stat: int, name: str, doc: str) -> Callable:
    """Public (x, y, d) kernel ``name`` on the co-moment engine."""

    def kernel(x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray:
        x = _matrix(x, name)
        y = _matrix(y, name)
        if x.shape != y.shape:
            raise ValueError(f"{name}: x and y shapes differ: {x.shape} vs {y.shape}")
        d = _window(d, name)
        out = np.empty(x.shape)
        with np.errstate(all="ignore"):  # non-finite inputs are handled in the loop
            _g_comoments(x.T, y.T, d, stat, out.T)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


delay = _rolling(_r_lag, "delay", "x[t-d]; NaN for t < d.", _DELAY)
ts_delta = _rolling(_r_lag, "ts_delta", "x[t] - x[t-d].", _DELTA)
ts_sum = _rolling(_r_sum, "ts_sum", "Sum of the last d values (full finite window).", _SUM)
ts_mean = _rolling(_r_sum, "ts_mean", "Mean of the last d values (full finite window).", _MEAN)
ts_std = _rolling(_r_moments, "ts_std", "Rolling std, ddof=1 (constant -> 0, d=1 -> NaN).", _STD)
ts_skew = _rolling(_r_moments, "ts_skew", "Rolling skew as pandas (zero variance -> NaN).", _SKEW)
ts_kurt = _rolling(_r_moments, "ts_kurt", "Rolling excess kurt as pandas (zero var -> NaN).", _KURT)
ts_max = _rolling(_extreme, "ts_max", "Max of the last d values.", _MAX)
ts_min = _rolling(_extreme, "ts_min", "Min of the last d values.", _MIN)
ts_argmax = _rolling(_extreme, "ts_argmax", "Sessions since the window max (ties: earliest).",
                     _ARGMAX)
ts_argmin = _rolling(_extreme, "ts_argmin", "Sessions since the window min (ties: earliest).",
                     _ARGMIN)
ts_rank = _rolling(_r_rank, "ts_rank", "Share of the other d-1 values below today's, ties half.")
ts_decay_linear = _rolling(_r_decay, "ts_decay_linear", "Weighted mean, weights d..1 (today d).")
ts_product = _rolling(_r_product, "ts_product", "Product of the last d values.")
ts_ema = _rolling(_r_ema, "ts_ema", "EMA, alpha 2/(d+1), seeded by the first full window mean.")
ts_cov = _rolling2(_COV, "ts_cov", "Rolling covariance of x and y, ddof=1.")
ts_corr = _rolling2(_CORR, "ts_corr", "Rolling correlation of x and y (zero variance -> NaN).")


def ts_slope(x: np.ndarray, d: int) -> np.ndarray:
    """OLS slope of the last d values on 0..d-1 (d = 1 -> NaN; constant window -> 0)."""
    x = _matrix(x, "ts_slope")
    d = _window(d, "ts_slope")
    out = np.empty(x.shape)
    with np.errstate(all="ignore"):
        _g_comoments(np.arange(x.shape[0], dtype=np.float64), x.T, d, _SLOPE, out.T)
    return out


def adv(close: np.ndarray, volume: np.ndarray, d: int) -> np.ndarray:
    """Average daily dollar volume: ts_mean(close * volume, d)."""
    return ts_mean(mul(_matrix(close, "adv"), _matrix(volume, "adv")), d)


KERNELS: dict[str, Callable] = {
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "power": power,
    "lt": lt, "le": le, "gt": gt, "ge": ge, "eq": eq, "ne": ne, "and": and_, "or": or_,
    "where": where, "abs": abs_, "log": log, "sign": sign, "sqrt": sqrt,
    "signed_power": signed_power, "min": min_, "max": max_,
    "rank": rank, "scale": scale, "group_neutralize": group_neutralize,
    "delay": delay, "ts_delta": ts_delta, "ts_mean": ts_mean, "ts_std": ts_std,
    "ts_sum": ts_sum, "ts_max": ts_max, "ts_min": ts_min, "ts_rank": ts_rank,
    "ts_argmax": ts_argmax, "ts_argmin": ts_argmin, "ts_product": ts_product,
    "ts_decay_linear": ts_decay_linear, "ts_ema": ts_ema, "ts_skew": ts_skew,
    "ts_kurt": ts_kurt, "ts_slope": ts_slope, "ts_corr": ts_corr, "ts_cov": ts_cov,
    "adv": adv,
}
"""Canonical operator name -> kernel (the registry names kernels by this string)."""

ELEMENTWISE: frozenset[str] = frozenset({
    "add", "sub", "mul", "div", "neg", "power", "lt", "le", "gt", "ge", "eq", "ne", "and",
    "or", "where", "abs", "log", "sign", "sqrt", "signed_power", "min", "max",
})
"""Kernels that accept scalars for any operand (and return a scalar for all-scalar input)."""
