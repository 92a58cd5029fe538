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
ts_sum ts_mean    sum / mean of the window (block sums, see below)
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
linear decay are BLOCK sums (van Herk/Gil-Werman applied to sums): rows are cut into
blocks of d, and a window is a suffix of the previous block plus a prefix of its own, so
each window sum is one addition of two direct sums whose terms all lie in the window --
no running sum, no subtraction of values that left, no re-anchoring: rounding is bounded
by the window, never by history (a huge value or a NaN touches only windows holding it).
Moments sum powers of ``x - k`` with the shift ``k = x[b0]``, the block's first row, which
lies in every window ending in the block: |x - k| is bounded by the window's range (no
catastrophic cancellation on price levels: close ~ 500 with tiny variance), and a
constant window gives exact zeros.  Max, min, argmax, argmin use block prefix/suffix
extremes (NaN-sticky comparisons carry the full-window rule), ts_product block products, ts_rank
a direct count of the window (exact integers; O(d) but vectorised across stocks).

Speed design: the time-series engines sweep the (T, N) arrays row by row with each
stock's state in length-N arrays (contiguous memory, independent stocks) and no
data-dependent branches in the inner loops (selects), so LLVM vectorises them across the
stocks.  A stock's values depend only on its own column (the block grid is the same for
every stock), bit for bit.  No fastmath: every value's operations are fixed by the code,
not by LLVM's reassociation choices.  All loops are serial: no threads (on a shared
2-core box a prange rank was 0.47 ms at best but 20 ms median under load).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit, vectorize

__all__ = ["ELEMENTWISE", "KERNELS", "rank_scratch", "read_only", "row_ranks2"]

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


# Comparisons and logic: one ufunc per relation (a relation code passed as a third ufunc
# operand was read per element, so LLVM could not vectorise the loop: 7x slower, measured).
@njit(inline="always", **_NJIT)
def _truth(a, b, r):
    """1.0/0.0 for the relation's outcome r; NaN if either operand is not finite."""
    return (1.0 if r else 0.0) if (math.isfinite(a) and math.isfinite(b)) else _NAN


@vectorize(_U2, **_JIT)
def _lt(a, b):
    return _truth(a, b, a < b)


@vectorize(_U2, **_JIT)
def _le(a, b):
    return _truth(a, b, a <= b)


@vectorize(_U2, **_JIT)
def _gt(a, b):
    return _truth(a, b, a > b)


@vectorize(_U2, **_JIT)
def _ge(a, b):
    return _truth(a, b, a >= b)


@vectorize(_U2, **_JIT)
def _eq(a, b):
    return _truth(a, b, a == b)


@vectorize(_U2, **_JIT)
def _ne(a, b):
    return _truth(a, b, a != b)


@vectorize(_U2, **_JIT)
def _and(a, b):
    return _truth(a, b, (a != 0.0) & (b != 0.0))


@vectorize(_U2, **_JIT)
def _or(a, b):
    return _truth(a, b, (a != 0.0) | (b != 0.0))


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


def _elementwise(ufunc: Callable, name: str, doc: str) -> Callable:
    """Wrap a scalar ufunc as the public kernel ``name`` (arrays or scalars in)."""

    def kernel(*args):
        with np.errstate(all="ignore"):  # NaN/inf are handled by the rules above
            return _as_result(ufunc(*args))
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
_power_any = _elementwise(_power, "power", "x**y when real and finite, else NaN.")
_signed_power_any = _elementwise(_signed_power, "signed_power",
                                 "sign(x)·|x|**a; NaN when not finite.")


# Scalar exponents 2, 0.5 and 1 (the common ones: x^2, (h*l)^0.5, x^1) by one
# multiplication / a square root / a copy: correctly rounded (libm's pow(x, 2.0) and pow(x, 0.5) are off by an ulp in
# ~0.1% of cases, measured; numpy's reference takes the same fast paths) and ~20x faster.
# Same NaN rules as _real_power; "+ 0.0" maps -0.0 to +0.0 as pow(-0.0, b) does.
@vectorize(_U1, **_JIT)
def _square(a):
    return _clean(a * a)


@vectorize(_U1, **_JIT)
def _signed_square(a):
    m = _clean(a * a)
    return -m if a < 0.0 else m


@vectorize(_U1, **_JIT)
def _root(a):
    return math.sqrt(a) + 0.0 if (a >= 0.0 and math.isfinite(a)) else _NAN


@vectorize(_U1, **_JIT)
def _signed_root(a):
    if not math.isfinite(a):
        return _NAN
    r = math.sqrt(abs(a))
    return -r if a < 0.0 else r + 0.0


@vectorize(_U1, **_JIT)
def _identity(a):
    return _clean(a)  # pow(x, 1) is x exactly (-0.0 included)


@vectorize(_U1, **_JIT)
def _signed_identity(a):
    return _clean(a) + 0.0  # sign(x)·|x|: -0.0 -> +0.0 as the general path


_SCALAR_POWERS = {2.0: (_square, _signed_square), 0.5: (_root, _signed_root),
                  1.0: (_identity, _signed_identity)}


def _scalar_power(a: object, b: object, signed: bool) -> Callable | None:
    """The fast ufunc for array ``a`` and scalar exponent ``b`` in _SCALAR_POWERS, or None."""
    if not isinstance(a, np.ndarray) or isinstance(b, bool | np.ndarray) \
            or not isinstance(b, float | int | np.floating | np.integer):
        return None
    pair = _SCALAR_POWERS.get(float(b))
    return None if pair is None else pair[signed]


def _power_dispatch(a: object, b: object, signed: bool, general: Callable) -> np.ndarray | float:
    """The scalar-exponent fast ufunc when there is one, else ``general`` (the pow path)."""
    fast = _scalar_power(a, b, signed)
    if fast is None:
        return general(a, b)
    with np.errstate(all="ignore"):
        return _as_result(fast(a))


def power(a, b):
    """x**y when real and finite, else NaN."""
    return _power_dispatch(a, b, False, _power_any)


def signed_power(a, b):
    """sign(x)·|x|**a; NaN when not finite."""
    return _power_dispatch(a, b, True, _signed_power_any)


min_ = _elementwise(_min, "min", "Element-wise min; NaN if either is NaN; symmetric bits.")
max_ = _elementwise(_max, "max", "Element-wise max; NaN if either is NaN; symmetric bits.")
where = _elementwise(_where, "where", "c ? a : b; NaN if c is NaN; a where c != 0 else b.")
lt, le, gt, ge, eq, ne, and_, or_ = (
    _elementwise(ufunc, name, f"1.0/0.0 for {sym}; NaN if either operand is NaN.")
    for ufunc, name, sym in (
        (_lt, "lt", "a < b"), (_le, "le", "a <= b"), (_gt, "gt", "a > b"), (_ge, "ge", "a >= b"),
        (_eq, "eq", "a == b"), (_ne, "ne", "a != b"), (_and, "and", "a != 0 && b != 0"),
        (_or, "or", "a != 0 || b != 0")))


# ============================================================== cross-sectional kernels
# One ranking routine for the whole project: the DSL's ``rank`` here and the book's daily
# weights (gymkit.verifiers.book) both take :func:`row_ranks2`, twice the average-tie rank
# of each finite value, an exact integer: every path gives the same bits.  Why our own:
# serial, allocation-free per row (scratch from :func:`rank_scratch`) and linear in N.
_COUNT_MAX = 64  # rows of up to this many finite values are ranked by a pair count, wider rows by a sort
KEY_BLOCK = 16  # keys compared per pass of count_le_keys; key buffers are padded to a multiple
_SIGN = np.uint64(1 << 63)
_BYTE = np.uint64(255)


@njit(inline="always", **_NJIT)
def count_le_keys(keys: np.ndarray, le: np.ndarray) -> int:
    """le[i] = #{j: keys[j] <= keys[i]} for every i of the padded buffer; return Σ le.

    The counts are vectorised over i (le[i] in the vector lanes, no horizontal sums),
    16 keys[j] per pass so each count is loaded and stored once per 16 comparisons;
    integer sums: exact in any order.
    """
    m = keys.shape[0]
    for i in range(m):
        le[i] = 0
    for j in range(0, m, KEY_BLOCK):
        b0 = keys[j]
        b1 = keys[j + 1]
        b2 = keys[j + 2]
        b3 = keys[j + 3]
        b4 = keys[j + 4]
        b5 = keys[j + 5]
        b6 = keys[j + 6]
        b7 = keys[j + 7]
        b8 = keys[j + 8]
        b9 = keys[j + 9]
        b10 = keys[j + 10]
        b11 = keys[j + 11]
        b12 = keys[j + 12]
        b13 = keys[j + 13]
        b14 = keys[j + 14]
        b15 = keys[j + 15]
        for i in range(m):
            v = keys[i]
            le[i] += (
                ((np.int32(b0 <= v) + np.int32(b1 <= v)) + (np.int32(b2 <= v) + np.int32(b3 <= v)))
                + ((np.int32(b4 <= v) + np.int32(b5 <= v)) + (np.int32(b6 <= v) + np.int32(b7 <= v)))
            ) + (
                ((np.int32(b8 <= v) + np.int32(b9 <= v)) + (np.int32(b10 <= v) + np.int32(b11 <= v)))
                + ((np.int32(b12 <= v) + np.int32(b13 <= v)) + (np.int32(b14 <= v) + np.int32(b15 <= v)))
            )
    total = 0
    for i in range(m):
        total += le[i]
    return total


@njit(inline="always", **_NJIT)
def rank_scratch(n_stocks: int) -> tuple:
    """Scratch buffers of :func:`row_ranks2` for rows of ``n_stocks`` values: float64 values
    and their uint64 view (the sort keys), a second key buffer, two int32 index buffers, the
    (8, 256) digit histograms, and the pair count's NaN-padded keys, counts and group sizes."""
    n = max(n_stocks, 1)
    m = (n + KEY_BLOCK - 1) // KEY_BLOCK * KEY_BLOCK
    vals = np.empty(n)
    return (vals, vals.view(np.uint64), np.empty(n, np.uint64), np.empty(n, np.int32),
            np.empty(n, np.int32), np.empty((8, 256), np.int32), np.full(m, np.nan),
            np.zeros(m, np.int64), np.zeros(n + 1, np.int64))


@njit(inline="always", **_NJIT)
def _radix_sort(keys, idx, keys2, idx2, hist, n):
    """Sort keys[:n] ascending (stable), carrying idx: LSD radix sort, 8 passes of one byte,
    skipping every byte that all n keys share.  Returns the (keys, idx) buffers holding the
    result (each pass moves the pairs to the other buffers)."""
    for p in range(8):
        for b in range(256):
            hist[p, b] = 0
    for i in range(n):
        k = keys[i]
        for p in range(8):
            hist[p, np.intp((k >> np.uint64(8 * p)) & _BYTE)] += 1
    for p in range(8):
        shift = np.uint64(8 * p)
        h = hist[p]
        if h[np.intp((keys[0] >> shift) & _BYTE)] == n:
            continue
        total = 0
        for b in range(256):
            c = h[b]
            h[b] = total
            total += c
        for i in range(n):
            k = keys[i]
            b = np.intp((k >> shift) & _BYTE)
            pos = h[b]
            h[b] = pos + 1
            keys2[pos] = k
            idx2[pos] = idx[i]
        keys, keys2 = keys2, keys
        idx, idx2 = idx2, idx
    return keys, idx


@njit(inline="always", **_NJIT)
def row_ranks2(src: np.ndarray, scratch: tuple, ranks2: np.ndarray) -> int:
    """Write twice the 1-based average-tie rank of each finite ``src[j]`` among the row's n
    finite values into ``ranks2[j]`` (an exact integer as float; 0.0 for a non-finite
    entry) and return n.  -0.0 equals 0.0.  Scratch from :func:`rank_scratch`.

    With lt_i = #{j: v_j < v_i} and le_i = #{j: v_j <= v_i}, 2·rank_i = lt_i + le_i + 1.
    Two paths, the same integers.  Up to 64 finite values: the pair count le (vectorised;
    faster than sorting there); a group of m equal values counted le = c has lt = c − m.
    Wider rows: a radix sort of order-preserving uint64 keys, and each run [i, k) of equal
    values in sorted order has lt = i, le = k.
    """
    keys64, le, groups = scratch[6], scratch[7], scratch[8]
    n_stocks = src.shape[0]
    n = 0
    for j in range(n_stocks):
        v = src[j]
        fin = math.isfinite(v)
        keys64[j] = v if fin else _NAN
        n += fin
    if n <= _COUNT_MAX:
        if count_le_keys(keys64, le) == n * (n + 1) // 2:  # no ties: lt = le - 1
            for j in range(n_stocks):
                ranks2[j] = 2.0 * le[j]  # le = 0 for a non-finite entry
            return n
        for c in range(n_stocks + 1):
            groups[c] = 0
        for j in range(n_stocks):
            groups[le[j]] += 1
        for j in range(n_stocks):
            c = le[j]
            ranks2[j] = float(2 * c - groups[c] + 1) if c > 0 else 0.0
        return n
    return _sorted_ranks2(src, n, scratch, ranks2)


@njit(**_NJIT)
def _sorted_ranks2(src, n, scratch, ranks2):
    """:func:`row_ranks2` by sorting: radix-sort the row's n finite values and give each
    run [i, k) of equal values in sorted order 2·rank = i + k + 1."""
    vals, keys, keys2, idx, idx2, hist = scratch[:6]
    n_stocks = src.shape[0]
    m = 0
    for j in range(n_stocks):
        v = src[j]
        ranks2[j] = 0.0
        if math.isfinite(v):
            vals[m] = v + 0.0  # -0.0 -> +0.0: equal values get equal keys
            idx[m] = j
            m += 1
    for i in range(n):  # IEEE order as unsigned order: flip all bits of a negative, the sign of a positive
        u = keys[i]
        keys[i] = u ^ (_SIGN | (np.uint64(0) - (u >> np.uint64(63))))
    sk, si = _radix_sort(keys, idx, keys2, idx2, hist, n)
    i = 0
    while i < n:
        k = i + 1
        while k < n and sk[k] == sk[i]:
            k += 1
        r = float(i + k + 1)
        for q in range(i, k):
            ranks2[si[q]] = r
        i = k
    return n


@njit(**_NJIT)
def _rank_rows(x, out):
    """Average-tie ranks per row mapped to [0, 1]: (rank − 1)/(n − 1), 0.5 when n = 1, NaN
    where not finite."""
    n_cols = x.shape[1]
    scratch = rank_scratch(n_cols)
    r2 = np.empty(n_cols)
    for t in range(x.shape[0]):
        o = out[t]
        n = row_ranks2(x[t], scratch, r2)
        if n == 1:
            for j in range(n_cols):
                o[j] = 0.5 if r2[j] > 0.0 else _NAN
            continue
        for j in range(n_cols):  # (lt + 0.5·(le − lt − 1)) / (n − 1), exact numerator
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
    """``x`` as a read-only C-contiguous float64 (T, N) array (:func:`read_only`); a one-line
    ValueError naming the kernel if not 2-D."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a (T, N) float64 array, got shape {a.shape}")
    return read_only(a)


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous array that is read-only (a view when ``a`` is writable): every
    compiled kernel sees only read-only inputs, so one compilation serves every caller."""
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
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
    codes = read_only(np.asarray(codes, dtype=np.int64))
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
# A small ``stat`` code picks the statistic where several share one engine; the engine
# factory (``_r_sum(stat)`` …) compiles one specialisation per code, with the code a
# constant of the closure, so no loop tests it at run time (ts_std / ts_cov 1.2x,
# ts_max / ts_min 1.2-1.3x, same bits).  numba caches each closure separately.
_DELAY, _DELTA = 0, 1
_SUM, _MEAN = 0, 1
_STD, _SKEW, _KURT = 0, 1, 2
_COV, _CORR = 0, 1
_MAX, _MIN, _ARGMAX, _ARGMIN = 0, 1, 2, 3


def _r_lag(stat: int) -> Callable:
    """delay: x[t-d]; delta: x[t] - x[t-d].

    Returns the engine compiled for ``stat`` (see the note above the stat codes).
    """

    @njit(**_NJIT)
    def engine(x, d, out):
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

    return engine


# Block sums (van Herk / Gil-Werman, as for ts_max and ts_product, applied to sums): rows
# are cut into blocks of d.  A window [t-d+1, t] ending in block [b0, b0+d) is a suffix of
# the previous block plus a prefix of its own, so every window sum is ONE addition
# suf[r] + pre of two direct sums whose terms all lie in the window: no running sum, so no
# subtraction of values that left the window, no re-anchoring, no drift, and rounding
# bounded by the window itself (a huge value or a NaN only touches windows containing it).
# Moments and co-moments sum powers of u = x - k with the shift k = x[b0, j]: row b0 lies in
# EVERY window ending in the block, so k is a window value (finite whenever the output is),
# |u| is bounded by the window's range (no cancellation on price levels, and x - k is
# exact by Sterbenz where values are within 2x), and a constant window gives u = 0 exactly.
# The inner loops run over the N contiguous stocks of a row with no data-dependent
# branches (selects only), so LLVM vectorises them; the suffix sums of a block are
# recomputed once per block (O(1) per cell).  suf has d + 1 rows, suf[d] = 0: the window
# that is exactly the block is 0 + pre, without a branch.
# Why our own kernel: this layout is ~3x faster than the previous per-column running sums
# (measured), and each value's operations are fixed by the code, not by LLVM (no
# fastmath, serial): results are deterministic bit for bit.
@njit(inline="always", **_NJIT)
def _mark_row(x, t, last_bad, run):
    """last_bad[j] = t (as float) for every non-finite x[t, j], and run[j] = the length of the
    run of identical values of x[:, j] ending at t (as float; one fused branch-free loop:
    measured faster than two)."""
    ft = float(t)
    tp = max(t - 1, 0)  # at t = 0, x[0] == x[0] gives 0 + 1 (a NaN gives 1 as well)
    for j in range(x.shape[1]):
        v = x[t, j]
        last_bad[j] = last_bad[j] if math.isfinite(v) else ft
        run[j] = run[j] + 1.0 if x[tp, j] == v else 1.0


@njit(inline="always", **_NJIT)
def _mark_pair(x, y, t, last_bad, run_x, run_y):
    """_mark_row for x and y at once (last_bad: either non-finite)."""
    ft = float(t)
    tp = max(t - 1, 0)
    for j in range(x.shape[1]):
        a = x[t, j]
        b = y[t, j]
        last_bad[j] = last_bad[j] if math.isfinite(a) & math.isfinite(b) else ft
        run_x[j] = run_x[j] + 1.0 if x[tp, j] == a else 1.0
        run_y[j] = run_y[j] + 1.0 if y[tp, j] == b else 1.0


def _r_sum(stat: int) -> Callable:
    """Window sum or mean: block suffix + prefix sums (see above).  The mean sums u = x − k
    with k = x[b0], a value inside every window that ends in the block, and returns
    k + Σu / d: a constant window gives its value exactly (as pandas does), and price-level
    inputs keep their low digits.  The sum is the plain Σx.

    The full-window NaN rule needs no bookkeeping here: a NaN in the window makes the sum
    NaN, an infinity makes it ±inf or NaN, and a non-finite sum is returned as NaN; the
    first block's suffix rows are NaN (its windows before row d − 1 are incomplete).  One
    fused loop over the stocks per row (was three: 1.4x faster, the same bits).

    Returns the engine compiled for ``stat`` (see the note above the stat codes).
    """

    @njit(**_NJIT)
    def engine(x, d, out):
        n_rows, n_cols = x.shape
        fd = float(d)
        mean = stat != _SUM
        k = np.zeros(n_cols)
        suf = np.full((d + 1, n_cols), _NAN)  # rows 1 … d-1 rewritten from the second block on
        suf[d, :] = 0.0  # the window that is exactly the block: 0 + prefix
        pre = np.zeros(n_cols)
        for b0 in range(0, n_rows, d):
            if mean:
                for j in range(n_cols):
                    k[j] = x[b0, j]
            if b0 >= d:
                for r in range(d - 1, 0, -1):
                    for j in range(n_cols):
                        suf[r, j] = (x[b0 - d + r, j] - k[j]) + suf[r + 1, j]
            for t in range(b0, min(b0 + d, n_rows)):
                first = t == b0
                r = t - b0 + 1
                for j in range(n_cols):
                    u = x[t, j] - k[j]
                    p = u if first else pre[j] + u
                    pre[j] = p
                    s = k[j] + (suf[r, j] + p) / fd if mean else suf[r, j] + p
                    out[t, j] = s if math.isfinite(s) else _NAN

    return engine


def _r_moments(stat: int) -> Callable:
    """std / skew / kurt from block power sums of u = x - x[b0] (see above).

    Returns the engine compiled for ``stat`` (see the note above the stat codes).
    """

    @njit(**_NJIT)
    def engine(x, d, out):
        n_rows, n_cols = x.shape
        nf = float(d)
        inv_n = 1.0 / nf
        inv_n1 = 1.0 / (nf - 1.0) if d > 1 else 0.0
        higher = stat != _STD
        last_bad = np.full(n_cols, -1.0)
        run = np.zeros(n_cols)
        k = np.empty(n_cols)
        suf = np.zeros((4, d + 1, n_cols))
        s1_, s2_, s3_, s4_ = suf[0], suf[1], suf[2], suf[3]
        pre = np.zeros((4, n_cols))
        p1, p2, p3, p4 = pre[0], pre[1], pre[2], pre[3]
        for b0 in range(0, n_rows, d):
            for j in range(n_cols):
                k[j] = x[b0, j]
            if b0 >= d:
                for r in range(d - 1, 0, -1):
                    i = b0 - d + r
                    if higher:
                        for j in range(n_cols):
                            u = x[i, j] - k[j]
                            u2 = u * u
                            s1_[r, j] = u + s1_[r + 1, j]
                            s2_[r, j] = u2 + s2_[r + 1, j]
                            s3_[r, j] = u2 * u + s3_[r + 1, j]
                            s4_[r, j] = u2 * u2 + s4_[r + 1, j]
                    else:
                        for j in range(n_cols):
                            u = x[i, j] - k[j]
                            s1_[r, j] = u + s1_[r + 1, j]
                            s2_[r, j] = u * u + s2_[r + 1, j]
            for t in range(b0, min(b0 + d, n_rows)):
                _mark_row(x, t, last_bad, run)
                first = t == b0
                if higher:
                    for j in range(n_cols):
                        u = x[t, j] - k[j]
                        u2 = u * u
                        p1[j] = u if first else p1[j] + u
                        p2[j] = u2 if first else p2[j] + u2
                        p3[j] = u2 * u if first else p3[j] + u2 * u
                        p4[j] = u2 * u2 if first else p4[j] + u2 * u2
                else:
                    for j in range(n_cols):
                        u = x[t, j] - k[j]
                        p1[j] = u if first else p1[j] + u
                        p2[j] = u * u if first else p2[j] + u * u
                if t < d - 1 or d < 2 or (higher and d < 3) or (stat == _KURT and d < 4):
                    out[t, :] = _NAN
                    continue
                r = t - b0 + 1
                ft = float(t)
                if stat == _STD:
                    for j in range(n_cols):
                        s1 = s1_[r, j] + p1[j]
                        s2 = s2_[r, j] + p2[j]
                        v = math.sqrt(max((s2 - s1 * s1 * inv_n) * inv_n1, 0.0))
                        v = 0.0 if run[j] >= nf else v
                        v = v if math.isfinite(v) else _NAN
                        out[t, j] = _NAN if ft - last_bad[j] < nf else v
                    continue
                for j in range(n_cols):
                    a = (s1_[r, j] + p1[j]) * inv_n
                    e2 = (s2_[r, j] + p2[j]) * inv_n
                    e3 = (s3_[r, j] + p3[j]) * inv_n
                    m2 = e2 - a * a
                    m3 = e3 - 3.0 * a * e2 + 2.0 * a * a * a
                    if stat == _SKEW:
                        v = math.sqrt(nf * (nf - 1.0)) * m3 / ((nf - 2.0) * m2 * math.sqrt(m2))
                    else:
                        e4 = (s4_[r, j] + p4[j]) * inv_n
                        m4 = e4 - 4.0 * a * e3 + 6.0 * a * a * e2 - 3.0 * a * a * a * a
                        g = (nf * nf - 1.0) * m4 / (m2 * m2) - 3.0 * (nf - 1.0) * (nf - 1.0)
                        v = g / ((nf - 2.0) * (nf - 3.0))
                    bad = (run[j] >= nf) | (m2 <= 0.0) | (ft - last_bad[j] < nf)
                    out[t, j] = _NAN if bad or not math.isfinite(v) else v

    return engine


def _r_comoments(stat: int) -> Callable:
    """cov / corr of (x, y) from block sums of u, w, u², w², u·w with u = x - x[b0],
    w = y - y[b0] (see above).  Symmetric in x and y bit for bit (u·w = w·u).

    Returns the engine compiled for ``stat`` (see the note above the stat codes).
    """

    @njit(**_NJIT)
    def engine(x, y, d, out):
        n_rows, n_cols = x.shape
        nf = float(d)
        inv_n = 1.0 / nf
        inv_n1 = 1.0 / (nf - 1.0) if d > 1 else 0.0
        last_bad = np.full(n_cols, -1.0)
        run_x = np.zeros(n_cols)
        run_y = np.zeros(n_cols)
        kx = np.empty(n_cols)
        ky = np.empty(n_cols)
        suf = np.zeros((5, d + 1, n_cols))
        sa, sb, saa, sbb, sab = suf[0], suf[1], suf[2], suf[3], suf[4]
        pre = np.zeros((5, n_cols))
        pa, pb, paa, pbb, pab = pre[0], pre[1], pre[2], pre[3], pre[4]
        for b0 in range(0, n_rows, d):
            for j in range(n_cols):
                kx[j] = x[b0, j]
                ky[j] = y[b0, j]
            if b0 >= d:
                for r in range(d - 1, 0, -1):
                    i = b0 - d + r
                    for j in range(n_cols):
                        u = x[i, j] - kx[j]
                        w = y[i, j] - ky[j]
                        sa[r, j] = u + sa[r + 1, j]
                        sb[r, j] = w + sb[r + 1, j]
                        saa[r, j] = u * u + saa[r + 1, j]
                        sbb[r, j] = w * w + sbb[r + 1, j]
                        sab[r, j] = u * w + sab[r + 1, j]
            for t in range(b0, min(b0 + d, n_rows)):
                _mark_pair(x, y, t, last_bad, run_x, run_y)
                first = t == b0
                for j in range(n_cols):
                    u = x[t, j] - kx[j]
                    w = y[t, j] - ky[j]
                    pa[j] = u if first else pa[j] + u
                    pb[j] = w if first else pb[j] + w
                    paa[j] = u * u if first else paa[j] + u * u
                    pbb[j] = w * w if first else pbb[j] + w * w
                    pab[j] = u * w if first else pab[j] + u * w
                if t < d - 1 or d < 2:
                    out[t, :] = _NAN
                    continue
                r = t - b0 + 1
                ft = float(t)
                for j in range(n_cols):
                    s_a = sa[r, j] + pa[j]
                    s_b = sb[r, j] + pb[j]
                    cxy = (sab[r, j] + pab[j]) - s_a * s_b * inv_n
                    constant = (run_x[j] >= nf) | (run_y[j] >= nf)
                    if stat == _COV:
                        v = 0.0 if constant else cxy * inv_n1
                    else:
                        vx = (saa[r, j] + paa[j]) - s_a * s_a * inv_n
                        vy = (sbb[r, j] + pbb[j]) - s_b * s_b * inv_n
                        bad = constant | (vx <= 0.0) | (vy <= 0.0)
                        v = _NAN if bad else cxy / math.sqrt(vx * vy)
                    v = v if math.isfinite(v) else _NAN
                    out[t, j] = _NAN if ft - last_bad[j] < nf else v
        if stat != _COV:
            # rounding can put an exactly linear pair a few ulps outside [-1, 1]; a correlation
            # never is (pandas' stays inside too).  A separate pass: in the loop above the extra
            # selects cost ~30% (LLVM stops vectorising it).  NaN passes through.
            for t in range(n_rows):
                for j in range(n_cols):
                    v = out[t, j]
                    out[t, j] = 1.0 if v > 1.0 else (-1.0 if v < -1.0 else v)

    return engine


@njit(**_NJIT)
def _r_slope(x, d, out):
    """OLS slope on 0..d-1 from block sums of w = x - x[b0] and (i - b0)·w: with the window
    centre c = t - (d-1)/2, Σ(i - c)·w_i = Σ(i - b0)·w_i - (c - b0)·Σw_i, over the exact
    Σ(i - c)² = d(d²-1)/12."""
    n_rows, n_cols = x.shape
    nf = float(d)
    vx = nf * (nf * nf - 1.0) / 12.0
    last_bad = np.full(n_cols, -1.0)
    run = np.zeros(n_cols)
    k = np.empty(n_cols)
    suf = np.zeros((2, d + 1, n_cols))
    s0_, s1_ = suf[0], suf[1]
    p0 = np.zeros(n_cols)
    p1 = np.zeros(n_cols)
    for b0 in range(0, n_rows, d):
        for j in range(n_cols):
            k[j] = x[b0, j]
        if b0 >= d:
            for r in range(d - 1, 0, -1):
                fi = float(r - d)  # (b0 - d + r) - b0
                for j in range(n_cols):
                    w = x[b0 - d + r, j] - k[j]
                    s0_[r, j] = w + s0_[r + 1, j]
                    s1_[r, j] = fi * w + s1_[r + 1, j]
        for t in range(b0, min(b0 + d, n_rows)):
            _mark_row(x, t, last_bad, run)
            first = t == b0
            fi = float(t - b0)
            for j in range(n_cols):
                w = x[t, j] - k[j]
                p0[j] = w if first else p0[j] + w
                p1[j] = fi * w if first else p1[j] + fi * w
            if t < d - 1 or d < 2:
                out[t, :] = _NAN
                continue
            r = t - b0 + 1
            ft = float(t)
            c = (t - b0) - (nf - 1.0) / 2.0  # window centre - b0 (exact)
            for j in range(n_cols):
                cxy = (s1_[r, j] + p1[j]) - c * (s0_[r, j] + p0[j])
                v = 0.0 if run[j] >= nf else cxy / vx
                v = v if math.isfinite(v) else _NAN
                out[t, j] = _NAN if ft - last_bad[j] < nf else v


def _r_extreme(stat: int) -> Callable:
    """max / min / argmax / argmin from block extremes (van Herk / Gil-Werman).

    Rows are cut into blocks of d; the window [t-d+1, t] is a suffix of the previous block
    (extremes computed right to left, a tie taking the earlier row) plus a prefix of the
    current block (left to right, only a strict improvement replaces): the earlier part
    wins ties, so the result is the window's EARLIEST extreme (the tie rule).  Values are
    compared as sgn·x (max: +1, min: −1).  A non-finite x enters as NaN and NaN wins every
    comparison in both directions, so a window holding one gives NaN (the full-window
    rule) with no separate bookkeeping; the first block's suffix is all NaN (its windows
    are incomplete) and suffix row d is −inf (the window that is exactly a block).
    One fused, branch-free loop over the stocks per row (2-D indexing, not row views,
    in the suffix sweep: views of one array made LLVM give up vectorising, 0.28 → 0.9 ms).

    Returns the engine compiled for ``stat`` (see the note above the stat codes).
    """

    @njit(**_NJIT)
    def engine(x, d, out):
        n_rows, n_cols = x.shape
        sgn = 1.0 if (stat == _MAX or stat == _ARGMAX) else -1.0
        want_arg = stat == _ARGMAX or stat == _ARGMIN
        suf = np.full((d + 1, n_cols), _NAN)     # sgn · suffix extremes of the previous block
        suf[d, :] = -np.inf                      # (NaN until the second block)
        suf_arg = np.zeros((d + 1, n_cols))      # and their rows (float)
        pre = np.empty(n_cols)
        pre_arg = np.zeros(n_cols)
        for b0 in range(0, n_rows, d):
            if b0 >= d:  # suffix extremes of the previous (full) block [b0 - d, b0)
                p0 = b0 - d
                for j in range(n_cols):
                    v = x[b0 - 1, j]
                    suf[d - 1, j] = sgn * v if math.isfinite(v) else _NAN
                    if want_arg:
                        suf_arg[d - 1, j] = b0 - 1
                for r in range(d - 2, -1, -1):
                    fi = float(p0 + r)
                    for j in range(n_cols):
                        v = x[p0 + r, j]
                        v = sgn * v if math.isfinite(v) else _NAN
                        s = suf[r + 1, j]
                        take = (v >= s) | (v != v)
                        suf[r, j] = v if take else s
                        if want_arg:
                            suf_arg[r, j] = fi if take else suf_arg[r + 1, j]
            for t in range(b0, min(b0 + d, n_rows)):
                first = t == b0
                ft = float(t)
                r = t - b0 + 1  # the window's part in the previous block starts at its row r
                if want_arg:
                    for j in range(n_cols):
                        v = x[t, j]
                        v = sgn * v if math.isfinite(v) else _NAN
                        q = pre[j]
                        better = first | (v > q) | (v != v)
                        p = v if better else q
                        pa = ft if better else pre_arg[j]
                        pre[j] = p
                        pre_arg[j] = pa
                        s = suf[r, j]
                        take_pre = (p > s) | (p != p)
                        best = p if take_pre else s
                        row = pa if take_pre else suf_arg[r, j]
                        out[t, j] = ft - row if best == best else _NAN
                else:  # max / min: the same loop without the row bookkeeping
                    for j in range(n_cols):
                        v = x[t, j]
                        v = sgn * v if math.isfinite(v) else _NAN
                        q = pre[j]
                        p = v if (first | (v > q) | (v != v)) else q
                        pre[j] = p
                        s = suf[r, j]
                        best = p if ((p > s) | (p != p)) else s
                        out[t, j] = sgn * best if best == best else _NAN

    return engine


@njit(**_NJIT)
def _r_rank(x, d, out):
    """ts_rank by counting the window directly: (#below + 0.5·#equal) / (d - 1).

    Exact integer counts, so any algorithm gives the same bits; the count is branch-free
    and vectorised across the stocks of a row (d <= MAX_WINDOW = 252 in the DSL).  The
    counters are floats (small integers, exact): measured 1.2-1.8x faster than int64 for
    d <= 10 (float compares select float values, no conversions), equal at d = 60.
    """
    n_rows, n_cols = x.shape
    last_bad = np.full(n_cols, -1.0)  # -1: rows t < d - 1 come out NaN by the same test
    fd = float(d)
    below = np.zeros(n_cols)
    equal = np.zeros(n_cols)
    for t in range(n_rows):
        ft = float(t)
        if t >= d - 1:
            for i in range(t - d + 1, t):
                for j in range(n_cols):
                    v = x[t, j]
                    below[j] += 1.0 if x[i, j] < v else 0.0
                    equal[j] += 1.0 if x[i, j] == v else 0.0
        for j in range(n_cols):  # bookkeeping, output and reset in one loop (1.1x at d <= 10)
            lb = last_bad[j] if math.isfinite(x[t, j]) else ft
            last_bad[j] = lb
            v = 0.5 if d == 1 else (below[j] + 0.5 * equal[j]) / (d - 1.0)
            out[t, j] = _NAN if ft - lb < fd else v
            below[j] = 0.0
            equal[j] = 0.0


@njit(**_NJIT)
def _r_decay(x, d, out):
    """Linear decay from block sums of u = x - x[b0] and (i - b0)·u (see the block sums
    above): the window's Σ(i - t + d)·u_i = Σ(i - b0)·u_i + (b0 - t + d)·Σu_i, and the
    value is k + that / (d(d+1)/2).  Non-finite values carry the full-window rule through
    the arithmetic, as in :func:`_r_sum` (the weights are finite and (b0 - t + d) >= 1)."""
    n_rows, n_cols = x.shape
    nf = float(d)
    wsum = nf * (nf + 1.0) / 2.0
    k = np.empty(n_cols)
    s0_ = np.full((d + 1, n_cols), _NAN)  # NaN: the first block's windows are incomplete
    s0_[d, :] = 0.0
    s1_ = np.zeros((d + 1, n_cols))
    p0 = np.zeros(n_cols)
    p1 = np.zeros(n_cols)
    for b0 in range(0, n_rows, d):
        for j in range(n_cols):
            k[j] = x[b0, j]
        if b0 >= d:
            for r in range(d - 1, 0, -1):
                fi = float(r - d)
                for j in range(n_cols):
                    u = x[b0 - d + r, j] - k[j]
                    s0_[r, j] = u + s0_[r + 1, j]
                    s1_[r, j] = fi * u + s1_[r + 1, j]
        for t in range(b0, min(b0 + d, n_rows)):
            first = t == b0
            fi = float(t - b0)
            r = t - b0 + 1
            c = float(b0 - t + d)
            for j in range(n_cols):
                u = x[t, j] - k[j]
                q0 = u if first else p0[j] + u
                q1 = fi * u if first else p1[j] + fi * u
                p0[j] = q0
                p1[j] = q1
                w = (s1_[r, j] + q1) + c * (s0_[r, j] + q0)
                v = k[j] + w / wsum
                out[t, j] = v if math.isfinite(v) else _NAN


@njit(**_NJIT)
def _r_product(x, d, out):
    """Window product from block prefix/suffix products (van Herk / Gil-Werman).

    Blocks of d rows; the window [t-d+1, t] is suffix(t-d+1) * prefix(t).  A non-finite
    value makes every product holding it NaN or ±inf (0·inf is NaN), returned as NaN: the
    full-window rule without bookkeeping; the first block's suffix rows are NaN.
    """
    n_rows, n_cols = x.shape
    suf = np.full((d + 1, n_cols), _NAN)  # suffix products of the previous block (NaN
    suf[d, :] = 1.0                          # until the second block); row d = 1
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
            first = t == b0
            r = t - b0 + 1
            for j in range(n_cols):
                xv = x[t, j]
                q = xv if first else pre[j] * xv
                pre[j] = q
                v = suf[r, j] * q  # the whole block: r = d, 1.0 * prefix (exact)
                out[t, j] = v if math.isfinite(v) else _NAN


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


def _rolling(engine: Callable, name: str, doc: str) -> Callable:
    """Public (x, d) kernel ``name`` running a row-major engine over the whole panel."""

    def kernel(x: np.ndarray, d: int) -> np.ndarray:
        x = _matrix(x, name)
        d = _window(d, name)
        out = np.empty(x.shape)
        engine(x, d, out)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


def _rolling2(stat: int, name: str, doc: str) -> Callable:
    """Public (x, y, d) kernel ``name`` on the co-moment engine specialised for ``stat``."""
    engine = _r_comoments(stat)

    def kernel(x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray:
        x = _matrix(x, name)
        y = _matrix(y, name)
        if x.shape != y.shape:
            raise ValueError(f"{name}: x and y shapes differ: {x.shape} vs {y.shape}")
        d = _window(d, name)
        out = np.empty(x.shape)
        engine(x, y, d, out)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


delay = _rolling(_r_lag(_DELAY), "delay", "x[t-d]; NaN for t < d.")
ts_delta = _rolling(_r_lag(_DELTA), "ts_delta", "x[t] - x[t-d].")
ts_sum = _rolling(_r_sum(_SUM), "ts_sum", "Sum of the last d values (full finite window).")
ts_mean = _rolling(_r_sum(_MEAN), "ts_mean", "Mean of the last d values (full finite window).")
ts_std = _rolling(_r_moments(_STD), "ts_std", "Rolling std, ddof=1 (constant -> 0, d=1 -> NaN).")
ts_skew = _rolling(_r_moments(_SKEW), "ts_skew", "Rolling skew as pandas (zero variance -> NaN).")
ts_kurt = _rolling(_r_moments(_KURT), "ts_kurt", "Rolling excess kurt as pandas (zero var -> NaN).")
ts_max = _rolling(_r_extreme(_MAX), "ts_max", "Max of the last d values.")
ts_min = _rolling(_r_extreme(_MIN), "ts_min", "Min of the last d values.")
ts_argmax = _rolling(_r_extreme(_ARGMAX), "ts_argmax", "Sessions since the window max (ties: earliest).")
ts_argmin = _rolling(_r_extreme(_ARGMIN), "ts_argmin", "Sessions since the window min (ties: earliest).")
ts_rank = _rolling(_r_rank, "ts_rank", "Share of the other d-1 values below today's, ties half.")
ts_decay_linear = _rolling(_r_decay, "ts_decay_linear", "Weighted mean, weights d..1 (today d).")
ts_product = _rolling(_r_product, "ts_product", "Product of the last d values.")
ts_ema = _rolling(_r_ema, "ts_ema", "EMA, alpha 2/(d+1), seeded by the first full window mean.")
ts_slope = _rolling(_r_slope, "ts_slope", "OLS slope of the last d values on 0..d-1 (d = 1 -> NaN; "
                    "constant window -> 0).")
ts_cov = _rolling2(_COV, "ts_cov", "Rolling covariance of x and y, ddof=1.")
ts_corr = _rolling2(_CORR, "ts_corr", "Rolling correlation of x and y (zero variance -> NaN).")


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
