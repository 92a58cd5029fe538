"""The ranking routine of the project and the two rank operators built on it.

:func:`row_ranks2` (twice the average-tie rank of each finite value of a row, an exact
integer) is used by the DSL's ``rank`` here and by the book's daily weights
(``gymkit.verifiers.book``): every path gives the same bits.  Serial, allocation-free per
row (scratch from :func:`rank_scratch`) and linear in N.  ``ts_rank`` counts its window
directly (exact integer counts).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .plumbing import NAN as _NAN
from .plumbing import NJIT as _NJIT
from .plumbing import rows_kernel, window_kernel

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
def _r_rank(x, d, out):
    """ts_rank by counting the window directly: (#below + 0.5·#equal) / (d - 1).

    Exact integer counts, so any algorithm gives the same bits; the count is branch-free
    and vectorised across the stocks of a row (d <= MAX_WINDOW = 252 in the DSL).  The
    counters are floats (small integers, exact): float compares select float values, no
    conversions.
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
        for j in range(n_cols):  # bookkeeping, output and reset in one loop
            lb = last_bad[j] if math.isfinite(x[t, j]) else ft
            last_bad[j] = lb
            v = 0.5 if d == 1 else (below[j] + 0.5 * equal[j]) / (d - 1.0)
            out[t, j] = _NAN if ft - lb < fd else v
            below[j] = 0.0
            equal[j] = 0.0



rank = rows_kernel(_rank_rows, "rank", "Per row: average-tie rank of the finite values mapped "
                   "to [0, 1] as (r-1)/(n-1).")
ts_rank = window_kernel(_r_rank, "ts_rank", "Share of the other d-1 values below today's, "
                        "ties half.")
