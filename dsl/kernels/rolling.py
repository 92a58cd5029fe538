"""Rolling (time-series) kernels: lags, window sums and moments, co-moments, slope, extremes,
linear decay, product, EMA and adv, each a row-major engine behind ``window_kernel``.

What each computes is its row of the operator table (``gymkit.dsl.operators``); how (block
sums, block extremes, the sweep order) is said below, once for all of them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .elementwise import mul
from .plumbing import NAN as _NAN
from .plumbing import NJIT as _NJIT
from .plumbing import as_matrix, pair_window_kernel, window_kernel
from .plumbing import clean as _clean

# Row-major engines (why not one loop per column): arrays are (T, N) with the N stocks
# contiguous, so each engine sweeps the rows t and, inside, the N stocks of the row, with
# every stock's running state held in length-N arrays.  The stocks are independent, so
# the N updates of a row overlap in the CPU instead of forming one long serial chain per
# strided column.  Each stock still sees exactly the floating-point operations, in the
# same order, of a column-at-a-time loop: results do not depend on the sweep order, bit
# for bit.  Every loop is serial (no threads, no cross-stock reductions).
# A small ``stat`` code (below) picks the statistic where several share one engine; it is an
# argument, so each engine compiles once (cold start), and it is tested per row or per block,
# outside the loops over the stocks.
_DELAY, _DELTA = 0, 1
_SUM, _MEAN = 0, 1
_STD, _SKEW, _KURT = 0, 1, 2
_COV, _CORR = 0, 1
_MAX, _MIN, _ARGMAX, _ARGMIN = 0, 1, 2, 3


@njit(**_NJIT)
def _r_lag(x, d, out, stat):
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
# Why our own kernel: this layout is faster than per-column running sums (benchmarks/
# RESULTS.md), and each value's operations are fixed by the code, not by LLVM (no
# fastmath, serial): results are deterministic bit for bit.
@njit(inline="always", **_NJIT)
def _mark_row(x, t, last_bad, run):
    """last_bad[j] = t (as float) for every non-finite x[t, j], and run[j] = the length of the
    run of identical values of x[:, j] ending at t (as float; one fused branch-free loop:
    fewer passes than two)."""
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


@njit(**_NJIT)
def _r_sum(x, d, out, stat):
    """Window sum or mean: block suffix + prefix sums (see above).  The mean sums u = x − k
    with k = x[b0], a value inside every window that ends in the block, and returns
    k + Σu / d: a constant window gives its value exactly (as pandas does), and price-level
    inputs keep their low digits.  The sum is the plain Σx.

    The full-window NaN rule needs no bookkeeping here: a NaN in the window makes the sum
    NaN, an infinity makes it ±inf or NaN, and a non-finite sum is returned as NaN; the
    first block's suffix rows are NaN (its windows before row d − 1 are incomplete).  One
    fused loop over the stocks per row.
    """
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


@njit(**_NJIT)
def _r_moments(x, d, out, stat):
    """std / skew / kurt from block power sums of u = x - x[b0] (see above)."""
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


@njit(**_NJIT)
def _r_comoments(x, y, d, out, stat):
    """cov / corr of (x, y) from block sums of u, w, u², w², u·w with u = x - x[b0],
    w = y - y[b0] (see above).  Symmetric in x and y bit for bit (u·w = w·u)."""
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


@njit(**_NJIT)
def _r_extreme(x, d, out, stat):
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
    in the suffix sweep: views of one array made LLVM give up vectorising).
    """
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


@njit(inline="always", **_NJIT)
def _first_not_below(w, c, v):
    """The first index i < c with w[i] >= v in the ascending w[:c] (c if none)."""
    lo, hi = 0, c
    while lo < hi:
        mid = (lo + hi) // 2
        if w[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**_NJIT)
def _r_median(x, d, out):
    """Window median from each stock's sorted window (insertion: O(d) per cell).

    ``win[j, :c]`` holds the stock's last c finite values in ascending order, c < d until the
    window is full; a non-finite value empties it (the full-window rule).  Values enter as
    x + 0.0, so -0.0 is +0.0 and the result does not depend on which of two zeros left.
    """
    n_rows, n_cols = x.shape
    win = np.empty((n_cols, d))
    count = np.zeros(n_cols, np.int64)
    half = d // 2
    for t in range(n_rows):
        for j in range(n_cols):
            v = x[t, j]
            if not math.isfinite(v):
                count[j] = 0
                out[t, j] = _NAN
                continue
            w = win[j]
            c = count[j]
            if c == d:  # x[t - d, j] leaves: remove one stored copy of it
                p = _first_not_below(w, c, x[t - d, j] + 0.0)
                for k in range(p, c - 1):
                    w[k] = w[k + 1]
                c -= 1
            v += 0.0
            q = _first_not_below(w, c, v)
            for k in range(c, q, -1):
                w[k] = w[k - 1]
            w[q] = v
            c += 1
            count[j] = c
            if c < d:
                out[t, j] = _NAN
            elif d % 2:
                out[t, j] = w[half]
            else:
                out[t, j] = _clean((w[half - 1] + w[half]) / 2.0)


delay = window_kernel(_r_lag, "delay", "x[t-d]; NaN for t < d.", _DELAY)
ts_delta = window_kernel(_r_lag, "ts_delta", "x[t] - x[t-d].", _DELTA)
ts_sum = window_kernel(_r_sum, "ts_sum", "Sum of the last d values (full finite window).", _SUM)
ts_mean = window_kernel(_r_sum, "ts_mean", "Mean of the last d values (full finite window).", _MEAN)
ts_median = window_kernel(_r_median, "ts_median", "Median of the last d values (full finite window).")
ts_std = window_kernel(_r_moments, "ts_std", "Rolling std, ddof=1 (constant -> 0, d=1 -> NaN).", _STD)
ts_skew = window_kernel(_r_moments, "ts_skew", "Rolling skew as pandas (zero variance -> NaN).", _SKEW)
ts_kurt = window_kernel(_r_moments, "ts_kurt", "Rolling excess kurt as pandas (zero var -> NaN).",
                        _KURT)
ts_max = window_kernel(_r_extreme, "ts_max", "Max of the last d values.", _MAX)
ts_min = window_kernel(_r_extreme, "ts_min", "Min of the last d values.", _MIN)
ts_argmax = window_kernel(_r_extreme, "ts_argmax", "Sessions since the window max (ties: earliest).",
                          _ARGMAX)
ts_argmin = window_kernel(_r_extreme, "ts_argmin", "Sessions since the window min (ties: earliest).",
                          _ARGMIN)
ts_decay_linear = window_kernel(_r_decay, "ts_decay_linear", "Weighted mean, weights d..1 (today d).")
ts_product = window_kernel(_r_product, "ts_product", "Product of the last d values.")
ts_ema = window_kernel(_r_ema, "ts_ema", "EMA, alpha 2/(d+1), seeded by the first full window mean.")
ts_slope = window_kernel(_r_slope, "ts_slope", "OLS slope of the last d values on 0..d-1 (d = 1 -> "
                         "NaN; constant window -> 0).")
ts_cov = pair_window_kernel(_r_comoments, "ts_cov", "Rolling covariance of x and y, ddof=1.", _COV)
ts_corr = pair_window_kernel(_r_comoments, "ts_corr", "Rolling correlation of x and y (zero "
                             "variance -> NaN).", _CORR)

def adv(close: np.ndarray, volume: np.ndarray, d: int) -> np.ndarray:
    """Average daily dollar volume: ts_mean(close * volume, d)."""
    return ts_mean(mul(as_matrix(close, "adv"), as_matrix(volume, "adv")), d)

