"""From formula values to a daily dollar-neutral book and its gross P&L (DESIGN §4).

At close(t) the formula's values are ranked across stocks (non-finite values
excluded, ties get the average rank), the ranks are demeaned and divided by
Σ|w| so the book is dollar-neutral with gross exposure 1 (0.5 long, 0.5 short).
The book is filled at open(t+1) and earns open(t+1) → open(t+2):

    gross_t = Σ_i w_{t,i} · (open[t+2,i] / open[t+1,i] − 1)

Rules fixed here (each has a test):

- A day with fewer than 2 finite values holds nothing (all-zero weights).
- A constant cross-section (all values equal) ranks every stock equally, so the
  demeaned weights are all 0 and Σ|w| = 0: no positions, never NaN.
- **NaN forward return** (a missing open at t+1 or t+2): the position is kept in the
  book (weights are built from values only, so the book never uses knowledge of a
  future gap) and its return counts as 0 — the position is held flat with no price.
  The book is *not* renormalised over the priced names.
- Turnover_t = Σ_i |w_{t,i} − w_{t−1,i}|, where the first judged day builds the book
  from zero (w_{first−1} ≡ 0).

Why our own kernel (not pandas ``rank``): the ranks are computed by an O(N²)
branch-free count that LLVM vectorises; for N ≈ 50 stocks this is faster than
sorting and it is exact: ranks and centred ranks are multiples of 0.5, so Σ|w| is
an exact float sum and the weights do not depend on summation order.  Every loop
is serial (no thread reductions), so results are bit-identical across runs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["BookPnL", "book_pnl", "book_weights", "forward_open_returns", "split_forward_returns"]


@njit(cache=True, nogil=True, inline="always")
def _count_le(buf: np.ndarray, vi: float) -> int:
    c = 0
    for j in range(buf.shape[0]):
        c += buf[j] <= vi
    return c


@njit(cache=True, nogil=True, inline="always")
def _count_le_all(buf: np.ndarray, le: np.ndarray, n_stocks: int) -> int:
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


@njit(cache=True, nogil=True)
def _rank_weights_row(
    src: np.ndarray, buf: np.ndarray, le: np.ndarray, below: np.ndarray, out: np.ndarray
) -> int:
    """Write the gross-1 centred rank weights of one row into ``out``; return #finite.

    ``buf`` has length ≥ N, a multiple of 8, and holds NaN beyond N (NaN never
    compares ``<=``, so padding and missing values drop out of every count and the
    count loop vectorises without a tail).  ``le`` (N) and ``below`` (N + 1) are int64 scratch.
    With le_i = #{j: v_j ≤ v_i} and lt_i = #{j: v_j < v_i}, the average 1-based rank
    is (lt_i + le_i + 1) / 2.  Without ties lt_i = le_i − 1; with ties, lt_i is the
    largest le_k below le_i (0 if none), found in O(N) by marking the le values.
    """
    n_stocks = src.shape[0]
    n = 0
    for j in range(n_stocks):
        v = src[j]
        if np.isfinite(v):
            buf[j] = v
            n += 1
        else:
            buf[j] = np.nan
    if n < 2:
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    total = _count_le_all(buf, le, n_stocks)
    centre = 0.5 * (n + 1)
    gross = 0.0
    if total == n * (n + 1) // 2:  # no ties: rank = le
        for i in range(n_stocks):
            w = le[i] - centre if le[i] > 0 else 0.0
            out[i] = w
            gross += abs(w)
    else:
        # ties: mark every le value (out is scratch: out[c - 1] = 1 marks count c), then
        # below[c] = the largest marked count < c
        for k in range(n_stocks):
            out[k] = 0.0
        for i in range(n_stocks):
            if le[i] > 0:
                out[le[i] - 1] = 1.0  # count le[i] is marked (stored at index le-1)
        last = 0
        for k in range(1, n_stocks + 1):
            below[k] = last
            if out[k - 1] == 1.0:
                last = k
        for i in range(n_stocks):
            c = le[i]
            if c == 0:  # NaN
                out[i] = 0.0
                continue
            out[i] = 0.5 * (below[c] + c + 1) - centre
        for i in range(n_stocks):
            gross += abs(out[i])
    if gross == 0.0:  # constant cross-section: all ranks equal
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    for j in range(n_stocks):
        out[j] = out[j] / gross
    return n


@njit(cache=True, nogil=True)
def _book_weights(values: np.ndarray, r0: int, r1: int) -> np.ndarray:
    n_stocks = values.shape[1]
    out = np.empty((r1 - r0, n_stocks))
    buf = np.full((n_stocks + 7) // 8 * 8, np.nan)
    le = np.empty(n_stocks, dtype=np.int64)
    below = np.empty(n_stocks + 1, dtype=np.int64)
    for t in range(r0, r1):
        _rank_weights_row(values[t], buf, le, below, out[t - r0])
    return out


def book_weights(values: np.ndarray, rows: slice | None = None) -> np.ndarray:
    """Return the (len(rows), N) gross-1 dollar-neutral rank weights of ``values``.

    ``values`` is a (T, N) float array; ``rows`` (a step-1 slice, default all rows)
    selects the signal dates to build.  Row t depends only on ``values[t]``.
    """
    v = _as_values(values)
    r0, r1 = _bounds(rows, v.shape[0])
    return _book_weights(v, r0, r1)


@njit(cache=True, nogil=True)
def _book_pnl(values, fwd0, fmask, r0, r1, min_ic_names):
    """Fused pass over the judged rows: weights, gross, turnover, leg contributions, IC.

    ``fwd0`` is the forward return with NaN replaced by 0 (the NaN rule) and
    ``fmask`` is 1.0 where the forward return is finite, else 0.0.  Branch-free
    inner loops; every sum runs in stock order.
    """
    n_days = r1 - r0
    n_stocks = values.shape[1]
    weights = np.empty((n_days, n_stocks))
    gross = np.empty(n_days)
    turnover = np.empty(n_days)
    long_c = np.empty(n_days)
    short_c = np.empty(n_days)
    ic = np.full(n_days, np.nan)
    buf = np.full((n_stocks + 7) // 8 * 8, np.nan)
    le = np.empty(n_stocks, dtype=np.int64)
    below = np.empty(n_stocks + 1, dtype=np.int64)
    prev = np.zeros(n_stocks)  # the first judged day builds the book from zero
    inb = np.empty(n_stocks)
    for d in range(n_days):
        t = r0 + d
        w = weights[d]
        n = _rank_weights_row(values[t], buf, le, below, w)
        r = fwd0[t]
        g_long = 0.0
        g_short = 0.0
        tov = 0.0
        for j in range(n_stocks):
            wj = w[j]
            tov += abs(wj - prev[j])
            pos = max(wj, 0.0)
            g_long += pos * r[j]
            g_short += (wj - pos) * r[j]
            prev[j] = wj
        gross[d] = g_long + g_short
        long_c[d] = g_long
        short_c[d] = g_short
        turnover[d] = tov
        # IC: Pearson correlation of weights with the forward return over the names in
        # the book (finite value) with a finite forward return; needs >= min_ic_names.
        if n >= min_ic_names:
            fm = fmask[t]
            m = 0.0
            sw = 0.0
            sr = 0.0
            for j in range(n_stocks):
                k = fm[j] if le[j] > 0 else 0.0
                inb[j] = k
                m += k
                sw += k * w[j]
                sr += k * r[j]
            if m >= min_ic_names:
                mw = sw / m
                mr = sr / m
                cov = 0.0
                vw = 0.0
                vr = 0.0
                for j in range(n_stocks):
                    a = (w[j] - mw) * inb[j]
                    b = (r[j] - mr) * inb[j]
                    cov += a * b
                    vw += a * a
                    vr += b * b
                if vw > 0.0 and vr > 0.0:
                    ic[d] = cov / np.sqrt(vw * vr)
    return weights, gross, turnover, long_c, short_c, ic


class BookPnL:
    """The book of one formula over judged signal dates and its gross P&L.

    ``weights`` (D, N); ``gross``, ``turnover``, ``long``, ``short`` (D,) with
    ``gross = long + short`` (contributions of the long and short legs); ``ic`` (D,)
    daily IC, NaN where undefined (< ``min_ic_names`` names or zero variance).
    """

    __slots__ = ("gross", "ic", "long", "short", "turnover", "weights")

    def __init__(self, weights, gross, turnover, long, short, ic) -> None:
        self.weights = weights
        self.gross = gross
        self.turnover = turnover
        self.long = long
        self.short = short
        self.ic = ic


def book_pnl(
    values: np.ndarray, fwd: np.ndarray, rows: slice, *, min_ic_names: int = 5,
    fwd_parts: tuple[np.ndarray, np.ndarray] | None = None,
) -> BookPnL:
    """Build the book on signal dates ``rows`` and return its gross P&L and turnover.

    ``values`` and ``fwd`` are (T, N) aligned on the same sessions; ``fwd[t]`` is
    the open(t+1) → open(t+2) return (see :func:`forward_open_returns`), NaN where
    unknown (counted as 0).  The first row of ``rows`` builds the book from zero.
    ``fwd_parts`` = :func:`split_forward_returns` of ``fwd``, when the caller caches it.
    """
    v = _as_values(values)
    if min_ic_names < 2:
        raise ValueError(f"min_ic_names must be >= 2, got {min_ic_names}")
    if fwd_parts is None:
        f = np.asarray(fwd, dtype=np.float64)
        if f.shape != v.shape:
            raise ValueError(f"forward returns shape {f.shape} does not match values shape {v.shape}")
        fwd_parts = split_forward_returns(f)
    fwd0, fmask = fwd_parts
    if fwd0.shape != v.shape:
        raise ValueError(f"forward returns shape {fwd0.shape} does not match values shape {v.shape}")
    r0, r1 = _bounds(rows, v.shape[0])
    return BookPnL(*_book_pnl(v, fwd0, fmask, r0, r1, int(min_ic_names)))


def split_forward_returns(fwd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (fwd with NaN → 0, 1.0/0.0 finite mask), both C-contiguous float64 (T, N)."""
    f = np.asarray(fwd, dtype=np.float64)
    finite = np.isfinite(f)
    return np.ascontiguousarray(np.where(finite, f, 0.0)), np.ascontiguousarray(finite.astype(np.float64))


def forward_open_returns(open_: np.ndarray) -> np.ndarray:
    """Return fwd (T, N) with fwd[t] = open[t+2]/open[t+1] − 1; NaN where undefined.

    The last two rows are NaN (no open(t+2) in the panel); a non-finite or
    non-positive price gives NaN.
    """
    o = np.asarray(open_, dtype=np.float64)
    out = np.full(o.shape, np.nan)
    if o.shape[0] >= 3:
        with np.errstate(divide="ignore", invalid="ignore"):
            a, b = o[1:-1], o[2:]
            r = b / a - 1.0
        r[~(np.isfinite(r) & (a > 0) & (b > 0))] = np.nan
        out[:-2] = r
    return out


def _as_values(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values)
    if v.ndim != 2:
        raise ValueError(f"formula values must be a 2-D (sessions, stocks) array, got shape {v.shape}")
    if not np.issubdtype(v.dtype, np.number) and v.dtype != np.bool_:
        raise ValueError(f"formula values must be numeric, got dtype {v.dtype}")
    return np.ascontiguousarray(v, dtype=np.float64)


def _bounds(rows: slice | None, n: int) -> tuple[int, int]:
    if rows is None:
        return 0, n
    r0, r1, step = rows.indices(n)
    if step != 1:
        raise ValueError(f"rows must be a contiguous slice with step 1, got step {step}")
    return r0, max(r0, r1)
