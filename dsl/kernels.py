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
min, argmax, argmin use a monotonic deque, ts_rank a sorted window buffer, ts_product
block prefix/suffix products (van Herk/Gil-Werman), all O(1) or O(d) memmove per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import guvectorize, njit, vectorize

__all__ = ["ELEMENTWISE", "KERNELS"]

_NAN = np.nan
_JIT = {"nopython": True, "cache": True}
_NJIT = {"cache": True, "nogil": True}


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
_RANK_COUNT_MAX = 64  # up to this many finite values a row is ranked by O(n^2) counting


@njit(**_NJIT)
def _rank_rows(x, out):
    """Average-tie ranks per row: by counting (n small, branch-free) or by a stable sort."""
    n_cols = x.shape[1]
    vals = np.empty(n_cols)
    idx = np.empty(n_cols, np.int64)
    for t in range(x.shape[0]):
        n = 0
        for j in range(n_cols):
            out[t, j] = _NAN
            if math.isfinite(x[t, j]):
                vals[n] = x[t, j]
                idx[n] = j
                n += 1
        if n == 0:
            continue
        if n == 1:
            out[t, idx[0]] = 0.5
        elif n <= _RANK_COUNT_MAX:
            for i in range(n):
                below = 0
                equal = 0
                v = vals[i]
                for m in range(n):
                    below += vals[m] < v
                    equal += vals[m] == v
                out[t, idx[i]] = (below + 0.5 * (equal - 1)) / (n - 1)
        else:
            order = np.argsort(vals[:n], kind="mergesort")
            i = 0
            while i < n:  # ties [i, k): below = i, others equal = k - i - 1
                k = i + 1
                while k < n and vals[order[k]] == vals[order[i]]:
                    k += 1
                r = (i + 0.5 * (k - i - 1)) / (n - 1)
                for m in range(i, k):
                    out[t, idx[order[m]]] = r
                i = k


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
# Each engine is one loop over a 1-D column (a gufunc over the stocks axis); a small
# ``stat`` code picks the statistic where several share one engine.
_GU = {"nopython": True, "cache": True}
_DELAY, _DELTA = 0, 1
_SUM, _MEAN = 0, 1
_STD, _SKEW, _KURT = 0, 1, 2
_COV, _CORR, _SLOPE = 0, 1, 2
_MAX, _MIN, _ARGMAX, _ARGMIN = 0, 1, 2, 3


@guvectorize(["void(float64[:], int64, int64, float64[:])"], "(n),(),()->(n)", **_GU)
def _g_lag(x, d, stat, out):
    """delay: x[t-d]; delta: x[t] - x[t-d]."""
    for t in range(x.shape[0]):
        if t < d:
            out[t] = _NAN
        elif stat == _DELAY:
            out[t] = _clean(x[t - d])
        else:
            out[t] = _clean(x[t] - x[t - d])


# Re-anchor when the (squared, for moments) terms pushed through running sums since the last exact
# recomputation exceed this multiple of the window's own sum of squared deviations: the
# rounding left in the sums is then at most ~eps·_DRIFT relative (eps·_DRIFT² for the
# fourth moment), whatever came before (a volatile regime, a jump, a trend).
_DRIFT = 64.0


@guvectorize(["void(float64[:], int64, int64, float64[:])"], "(n),(),()->(n)", **_GU)
def _g_sum(x, d, stat, out):
    """Window sum or mean: a running sum re-anchored by an exact recomputation every d rows,
    or sooner when the terms pushed through it since then exceed _DRIFT x the window's
    sum of |x| (a huge value that left the window would otherwise leave its rounding)."""
    last_bad = -1
    anchor = -1
    s = s_abs = mag = 0.0
    div = 1.0 if stat == _SUM else float(d)
    for t in range(x.shape[0]):
        v = x[t]
        if not math.isfinite(v):
            last_bad = t
            anchor = -1
            out[t] = _NAN
            continue
        if t - last_bad < d:
            out[t] = _NAN
            continue
        fresh = anchor < 0 or t - anchor >= d
        if not fresh:
            w = x[t - d]
            s += v - w
            s_abs += abs(v) - abs(w)
            mag += abs(v) + abs(w)
            fresh = mag > _DRIFT * s_abs
        if fresh:
            s = s_abs = 0.0
            for i in range(t - d + 1, t + 1):
                s += x[i]
                s_abs += abs(x[i])
            mag = s_abs
            anchor = t
        out[t] = _clean(s / div)


@njit(inline="always", **_NJIT)
def _power_sums(x, lo, hi):
    """Exact-as-float64 shift k = mean(x[lo:hi]) and sums of (x - k)**p, p = 1..4."""
    k = 0.0
    for i in range(lo, hi):
        k += x[i]
    k /= hi - lo
    s1 = s2 = s3 = s4 = 0.0
    for i in range(lo, hi):
        u = x[i] - k
        u2 = u * u
        s1 += u
        s2 += u2
        s3 += u2 * u
        s4 += u2 * u2
    return k, s1, s2, s3, s4


@guvectorize(["void(float64[:], int64, int64, float64[:])"], "(n),(),()->(n)", **_GU)
def _g_moments(x, d, stat, out):
    """std / skew / kurt from running power sums of x - k, k re-anchored exactly every d
    rows or sooner when the sums' rounding could matter (see _DRIFT)."""
    nf = float(d)
    inv_n = 1.0 / nf
    inv_n1 = 1.0 / (nf - 1.0) if d > 1 else 0.0
    last_bad = -1
    anchor = -1  # row of the last exact recomputation; -1 = none valid
    run = 0      # length of the run of identical values ending at t
    k = s1 = s2 = s3 = s4 = mag = 0.0
    for t in range(x.shape[0]):
        v = x[t]
        if not math.isfinite(v):
            last_bad = t
            anchor = -1
            run = 0
            out[t] = _NAN
            continue
        run = run + 1 if (t > 0 and x[t - 1] == v) else 1
        if t - last_bad < d:
            out[t] = _NAN
            continue
        constant = run >= d
        fresh = anchor < 0 or t - anchor >= d
        if not fresh:
            u = v - k
            w = x[t - d] - k
            u2 = u * u
            w2 = w * w
            s1 += u - w
            s2 += u2 - w2
            s3 += u2 * u - w2 * w
            s4 += u2 * u2 - w2 * w2
            mag += u2 + w2
            fresh = not constant and (s2 - s1 * s1 * inv_n) * _DRIFT < mag
        if fresh:
            k, s1, s2, s3, s4 = _power_sums(x, t - d + 1, t + 1)
            mag = s2
            anchor = t
        if stat == _STD:
            if d < 2:
                out[t] = _NAN
            elif constant:
                out[t] = 0.0
            else:
                out[t] = _clean(math.sqrt(max((s2 - s1 * s1 * inv_n) * inv_n1, 0.0)))
            continue
        a = s1 * inv_n
        m2 = s2 * inv_n - a * a
        if constant or m2 <= 0.0 or d < 3 or (stat == _KURT and d < 4):
            out[t] = _NAN
            continue
        m3 = s3 * inv_n - 3.0 * a * (s2 * inv_n) + 2.0 * a * a * a
        if stat == _SKEW:
            out[t] = _clean(math.sqrt(nf * (nf - 1.0)) * m3 / ((nf - 2.0) * m2 * math.sqrt(m2)))
        else:
            m4 = s4 * inv_n - 4.0 * a * (s3 * inv_n) + 6.0 * a * a * (s2 * inv_n) - 3.0 * a * a * a * a
            g = (nf * nf - 1.0) * m4 / (m2 * m2) - 3.0 * (nf - 1.0) * (nf - 1.0)
            out[t] = _clean(g / ((nf - 2.0) * (nf - 3.0)))


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
             **_GU)
def _g_comoments(x, y, d, stat, out):
    """cov / corr of (x, y), or slope of y on x (x = row index), from shifted sums.

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


@guvectorize(["void(float64[:], int64, int64, float64[:])"], "(n),(),()->(n)", **_GU)
def _g_extreme(x, d, stat, out):
    """max / min / argmax / argmin via a monotonic deque of row indices.

    The deque lives in a column-long index array (head and tail only move forward: no
    modulo on the hot path).  Its front is the EARLIEST row holding the window's extreme:
    a new value only evicts strictly worse ones, so equal older values stay ahead of it.
    """
    sgn = 1.0 if (stat == _MAX or stat == _ARGMAX) else -1.0
    dq = np.empty(x.shape[0], np.int64)
    head = 0
    tail = 0  # deque is dq[head:tail]
    last_bad = -1
    for t in range(x.shape[0]):
        v = x[t]
        if not math.isfinite(v):
            last_bad = t
            head = tail = 0
            out[t] = _NAN
            continue
        if tail > head and dq[head] <= t - d:
            head += 1
        while tail > head and sgn * x[dq[tail - 1]] < sgn * v:
            tail -= 1
        dq[tail] = t
        tail += 1
        if t - last_bad < d:
            out[t] = _NAN
        elif stat == _MAX or stat == _MIN:
            out[t] = x[dq[head]]
        else:
            out[t] = float(t - dq[head])


@njit(inline="always", **_NJIT)
def _lower_bound(buf, size, v):
    """First position in sorted buf[:size] whose value is >= v."""
    lo = 0
    hi = size
    while lo < hi:
        mid = (lo + hi) >> 1
        if buf[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(inline="always", **_NJIT)
def _upper_bound(buf, size, v):
    """First position in sorted buf[:size] whose value is > v."""
    lo = 0
    hi = size
    while lo < hi:
        mid = (lo + hi) >> 1
        if buf[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


_TS_RANK_COUNT_MAX = 24  # up to this window ts_rank counts directly (O(d), no branches)


@guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->(n)", **_GU)
def _g_rank(x, d, out):
    """ts_rank: count the window directly (small d) or keep it in a sorted buffer."""
    buf = np.empty(d)
    size = 0
    last_bad = -1
    for t in range(x.shape[0]):
        v = x[t]
        if not math.isfinite(v):
            last_bad = t
            size = 0
            out[t] = _NAN
            continue
        if d > _TS_RANK_COUNT_MAX:  # maintain the sorted window
            if size == d:  # drop x[t-d]
                p = _lower_bound(buf, size, x[t - d])
                for i in range(p, size - 1):
                    buf[i] = buf[i + 1]
                size -= 1
            p = _upper_bound(buf, size, v)
            for i in range(size, p, -1):
                buf[i] = buf[i - 1]
            buf[p] = v
            size += 1
        if t - last_bad < d:
            out[t] = _NAN
        elif d == 1:
            out[t] = 0.5
        elif d > _TS_RANK_COUNT_MAX:
            below = _lower_bound(buf, size, v)
            equal = _upper_bound(buf, size, v) - below - 1
            out[t] = (below + 0.5 * equal) / (d - 1.0)
        else:
            below = 0
            equal = 0
            for i in range(t - d + 1, t):
                below += x[i] < v
                equal += x[i] == v
            out[t] = (below + 0.5 * equal) / (d - 1.0)


@guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->(n)", **_GU)
def _g_decay(x, d, out):
    """Linear decay: running weighted sum W of x - k (k re-anchored every d rows, or sooner
    on drift as in _g_sum).  With u = x - k and S the window sum of u:
    W_t = W_{t-1} + d*u_t - S_{t-1}."""
    nf = float(d)
    wsum = nf * (nf + 1.0) / 2.0
    last_bad = -1
    anchor = -1
    k = s = w = a_abs = mag = 0.0
    for t in range(x.shape[0]):
        v = x[t]
        if not math.isfinite(v):
            last_bad = t
            anchor = -1
            out[t] = _NAN
            continue
        if t - last_bad < d:
            out[t] = _NAN
            continue
        fresh = anchor < 0 or t - anchor >= d
        if not fresh:
            u = v - k
            uo = x[t - d] - k
            w += nf * u - s
            s += u - uo
            a_abs += abs(u) - abs(uo)
            mag += abs(u) + abs(uo)
            fresh = mag > _DRIFT * a_abs
        if fresh:
            k = v
            s = w = a_abs = 0.0
            for i in range(d):
                u = x[t - i] - k
                s += u
                w += (nf - i) * u
                a_abs += abs(u)
            mag = a_abs
            anchor = t
        out[t] = _clean(k + w / wsum)


@guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->(n)", **_GU)
def _g_product(x, d, out):
    """Window product from block prefix/suffix products (van Herk / Gil-Werman).

    Blocks of d rows; the window [t-d+1, t] is suffix(t-d+1) * prefix(t).
    """
    n = x.shape[0]
    suffix = np.empty(n)
    for start in range(0, n, d):
        end = min(start + d, n) - 1
        suffix[end] = x[end]
        for i in range(end - 1, start - 1, -1):
            suffix[i] = x[i] * suffix[i + 1]
    last_bad = -1
    prefix = 1.0
    for t in range(n):
        v = x[t]
        prefix = v if t % d == 0 else prefix * v
        if not math.isfinite(v):
            last_bad = t
        if t - last_bad < d:
            out[t] = _NAN
        elif (t + 1) % d == 0:  # window is exactly one block
            out[t] = _clean(prefix)
        else:
            out[t] = _clean(suffix[t - d + 1] * prefix)


@guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->(n)", **_GU)
def _g_ema(x, d, out):
    """EMA seeded by the first full finite window's mean; restarts after a gap."""
    alpha = 2.0 / (d + 1.0)
    last_bad = -1
    seeded = False
    e = 0.0
    for t in range(x.shape[0]):
        v = x[t]
        if not math.isfinite(v):
            last_bad = t
            seeded = False
            out[t] = _NAN
            continue
        if seeded:
            e = (1.0 - alpha) * e + alpha * v
        elif t - last_bad >= d:
            e = 0.0
            for i in range(t - d + 1, t + 1):
                e += x[i]
            e /= d
            seeded = True
        out[t] = _clean(e) if seeded else _NAN


def _rolling(gufunc: Callable, name: str, doc: str, *stat: int) -> Callable:
    """Public (x, d) kernel ``name`` applying a 1-D engine to every column."""

    def kernel(x: np.ndarray, d: int) -> np.ndarray:
        x = _matrix(x, name)
        d = _window(d, name)
        out = np.empty(x.shape)
        with np.errstate(all="ignore"):  # non-finite inputs are handled in the loop
            gufunc(x.T, d, *stat, out.T)
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
        with np.errstate(all="ignore"):
            _g_comoments(x.T, y.T, d, stat, out.T)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


delay = _rolling(_g_lag, "delay", "x[t-d]; NaN for t < d.", _DELAY)
ts_delta = _rolling(_g_lag, "ts_delta", "x[t] - x[t-d].", _DELTA)
ts_sum = _rolling(_g_sum, "ts_sum", "Sum of the last d values (full finite window).", _SUM)
ts_mean = _rolling(_g_sum, "ts_mean", "Mean of the last d values (full finite window).", _MEAN)
ts_std = _rolling(_g_moments, "ts_std", "Rolling std, ddof=1 (constant -> 0, d=1 -> NaN).", _STD)
ts_skew = _rolling(_g_moments, "ts_skew", "Rolling skew as pandas (zero variance -> NaN).", _SKEW)
ts_kurt = _rolling(_g_moments, "ts_kurt", "Rolling excess kurt as pandas (zero var -> NaN).", _KURT)
ts_max = _rolling(_g_extreme, "ts_max", "Max of the last d values.", _MAX)
ts_min = _rolling(_g_extreme, "ts_min", "Min of the last d values.", _MIN)
ts_argmax = _rolling(_g_extreme, "ts_argmax", "Sessions since the window max (ties: earliest).",
                     _ARGMAX)
ts_argmin = _rolling(_g_extreme, "ts_argmin", "Sessions since the window min (ties: earliest).",
                     _ARGMIN)
ts_rank = _rolling(_g_rank, "ts_rank", "Share of the other d-1 values below today's, ties half.")
ts_decay_linear = _rolling(_g_decay, "ts_decay_linear", "Weighted mean, weights d..1 (today d).")
ts_product = _rolling(_g_product, "ts_product", "Product of the last d values.")
ts_ema = _rolling(_g_ema, "ts_ema", "EMA, alpha 2/(d+1), seeded by the first full window mean.")
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
