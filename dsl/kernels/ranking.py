"""The ranking routine of the project and the two rank operators built on it.

:func:`rank_rows2` (twice the average-tie rank of each finite value of a row, an exact
integer, for a block of rows) is used by the DSL's ``rank`` here and by the book's daily
weights (``gymkit.verifiers.book``): every path gives the same bits.  Serial (NumPy's sort of
distinct keys has one result whatever the algorithm), no allocation per row, and
O(N log N) per row with memory linear in T·N (the sort keys live in the output's buffer).
``ts_rank`` counts its window directly (exact integer counts).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .plumbing import NAN as _NAN
from .plumbing import NJIT as _NJIT
from .plumbing import as_matrix, window_kernel

_COUNT_MAX = 64  # rows of up to this many finite values are ranked by a pair count, wider rows by a sort
KEY_BLOCK = 16  # keys compared per pass of count_le_keys; key buffers are padded to a multiple
_SIGN = np.uint64(1 << 63)
_BYTE = np.uint64(255)
_EXP = np.uint64(0x7FF0000000000000)  # the exponent bits: all set for inf and NaN
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


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


@njit(**_NJIT)
def _count_rows2(x, r0, r1, ranks2, counts):
    """The pair-count path of :func:`rank_rows2` (rows of at most 64 values)."""
    n_stocks = x.shape[1]
    m = (max(n_stocks, 1) + KEY_BLOCK - 1) // KEY_BLOCK * KEY_BLOCK
    keys64 = np.full(m, np.nan)  # NaN-padded: a pad key is never <= anything
    le = np.zeros(m, np.int64)
    groups = np.zeros(n_stocks + 1, np.int64)
    for t in range(r0, r1):
        src = x[t]
        out = ranks2[t - r0]
        n = 0
        for j in range(n_stocks):
            v = src[j]
            fin = math.isfinite(v)
            keys64[j] = v if fin else _NAN
            n += fin
        counts[t - r0] = n
        if count_le_keys(keys64, le) == n * (n + 1) // 2:  # no ties: lt = le - 1
            for j in range(n_stocks):
                out[j] = 2.0 * le[j]  # le = 0 for a non-finite entry
            continue
        for c in range(n_stocks + 1):
            groups[c] = 0
        for j in range(n_stocks):
            groups[le[j]] += 1
        for j in range(n_stocks):
            c = le[j]
            out[j] = float(2 * c - groups[c] + 1) if c > 0 else 0.0


@njit(inline="always", **_NJIT)
def _order_key(u):
    """The bits ``u`` of a float64 as a uint64 that sorts in IEEE order (-0.0 as +0.0): flip
    every bit of a negative, the sign bit of a positive."""
    u = np.uint64(0) if u == _SIGN else u
    return u ^ (_SIGN | (np.uint64(0) - (u >> np.uint64(63))))


@njit(**_NJIT)
def _pack_keys(bits, r0, r1, lo_bits, keys, counts):
    """Sort keys of the sorting path: per finite value its order key with the low ``lo_bits``
    replaced by its column (so every key of a row is distinct); all ones but the column where
    not finite (last: a finite value's order key is below 0xFFF0...)."""
    n_stocks = bits.shape[1]
    hi = ~((np.uint64(1) << np.uint64(lo_bits)) - np.uint64(1))
    for t in range(r0, r1):
        src = bits[t]
        dst = keys[t - r0]
        n = 0
        for j in range(n_stocks):
            u = src[j]
            fin = (u & _EXP) != _EXP
            dst[j] = ((_order_key(u) if fin else _ALL) & hi) | np.uint64(j)
            n += fin
        counts[t - r0] = n


@njit(**_NJIT)
def _ranks_of_sorted(bits, r0, lo_bits, keys, counts, ranks2):
    """Turn each sorted key row into twice the average-tie ranks, in place (``ranks2`` is
    ``keys``' memory as float64).  Keys that share their high bits form a run; a run whose
    values are all equal is one tie group, otherwise its full order keys are sorted (an
    insertion sort up to 32 values, the radix sort above) and split into tie groups."""
    n_rows, n_stocks = keys.shape
    low = (np.uint64(1) << np.uint64(lo_bits)) - np.uint64(1)
    hi = ~low
    row = np.empty(n_stocks, np.uint64)
    full = np.empty(n_stocks, np.uint64)
    col = np.empty(n_stocks, np.int32)
    full2 = np.empty(n_stocks, np.uint64)
    col2 = np.empty(n_stocks, np.int32)
    hist = np.empty((8, 256), np.int32)
    for d in range(n_rows):
        src = bits[r0 + d]
        kd = keys[d]
        for j in range(n_stocks):
            row[j] = kd[j]
        out = ranks2[d]
        n = counts[d]
        for i in range(n, n_stocks):  # the non-finite entries, sorted last
            out[np.intp(row[i] & low)] = 0.0
        i = 0
        while i < n:
            top = row[i] & hi
            k = i + 1
            while k < n and (row[k] & hi) == top:
                k += 1
            j0 = np.intp(row[i] & low)
            if k == i + 1:
                out[j0] = float(2 * i + 2)
                i = k
                continue
            u0 = _order_key(src[j0])
            same = True
            for q in range(i + 1, k):
                same &= _order_key(src[np.intp(row[q] & low)]) == u0
            if same:
                r = float(i + k + 1)
                for q in range(i, k):
                    out[np.intp(row[q] & low)] = r
                i = k
                continue
            m = k - i
            for q in range(m):
                c = np.intp(row[i + q] & low)
                full[q] = _order_key(src[c])
                col[q] = c
            if m <= 32:
                for a in range(1, m):
                    fk = full[a]
                    ca = col[a]
                    b = a - 1
                    while b >= 0 and full[b] > fk:
                        full[b + 1] = full[b]
                        col[b + 1] = col[b]
                        b -= 1
                    full[b + 1] = fk
                    col[b + 1] = ca
                sk, sc = full, col
            else:
                sk, sc = _radix_sort(full, col, full2, col2, hist, m)
            a = 0
            while a < m:
                c = a + 1
                while c < m and sk[c] == sk[a]:
                    c += 1
                r = float(2 * i + a + c + 1)
                for q in range(a, c):
                    out[sc[q]] = r
                a = c
            i = k


def rank_rows2(x: np.ndarray, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
    """Twice the 1-based average-tie rank of every finite value of rows ``r0:r1`` of ``x``
    among its row's finite values, and each row's count of finite values.

    ``x``: a read-only C-contiguous float64 (T, N) array (:func:`~.plumbing.read_only`).
    Returns ``(ranks2, counts)``: ``ranks2`` (r1 - r0, N) float64, exact integers (0.0 for a
    non-finite entry; -0.0 equals 0.0), ``counts`` (r1 - r0,) int64.  With lt_i = #{j: v_j < v_i}
    and le_i = #{j: v_j <= v_i}, 2·rank_i = lt_i + le_i + 1.  Two paths, the same integers:
    up to 64 stocks, a vectorised pair count per row (a group of m equal values counted
    le = c has lt = c − m); wider, NumPy sorts each row's distinct keys (the value's order
    key, its low bits replaced by the column) and a run [i, k) of equal values in sorted
    order has lt = i, le = k.  Any correct sort gives the same integers.
    """
    n_rows, n_stocks = r1 - r0, x.shape[1]
    ranks2 = np.empty((n_rows, n_stocks))
    counts = np.empty(n_rows, np.int64)
    if n_stocks <= _COUNT_MAX:
        _count_rows2(x, r0, r1, ranks2, counts)
        return ranks2, counts
    bits = x.view(np.uint64)
    lo_bits = max(1, (n_stocks - 1).bit_length())
    keys = ranks2.view(np.uint64)
    _pack_keys(bits, r0, r1, lo_bits, keys, counts)
    keys.sort(axis=1)
    _ranks_of_sorted(bits, r0, lo_bits, keys, counts, ranks2)
    return ranks2, counts


@njit(**_NJIT)
def _unit_ranks(ranks2, counts):
    """Average-tie ranks mapped to [0, 1] in place: (rank − 1)/(n − 1), 0.5 when n = 1, NaN
    where not finite."""
    n_cols = ranks2.shape[1]
    for t in range(ranks2.shape[0]):
        o = ranks2[t]
        n = counts[t]
        if n == 1:
            for j in range(n_cols):
                o[j] = 0.5 if o[j] > 0.0 else _NAN
            continue
        for j in range(n_cols):  # (lt + 0.5·(le − lt − 1)) / (n − 1), exact numerator
            o[j] = 0.5 * (o[j] - 2.0) / (n - 1) if o[j] > 0.0 else _NAN


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


def rank(x: np.ndarray) -> np.ndarray:
    """Per row: average-tie rank of the finite values mapped to [0, 1] as (r-1)/(n-1)."""
    x = as_matrix(x, "rank")
    ranks2, counts = rank_rows2(x, 0, x.shape[0])
    _unit_ranks(ranks2, counts)
    return ranks2

ts_rank = window_kernel(_r_rank, "ts_rank", "Share of the other d-1 values below today's, "
                        "ties half.")
