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

Why our own kernel (not pandas ``rank``): serial and bit-identical, in one pass per day.

- Ranks come from the project's one ranking routine, :func:`gymkit.dsl.kernels.rank_rows2`
  (twice the average-tie rank, an exact integer).  Centred ranks are multiples of 0.5, so
  Σ|w| is an exact float sum: the weights never depend on summation order.
- Every per-day sum (turnover, legs, IC) is a plain stock-order chain, as one day
  alone would compute it, over the day's rows as they lie in memory, so the bits are
  those of the serial definition.  No threads, no fastmath: bit-identical across runs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gymkit.dsl.kernels import rank_rows2, read_only
from gymkit.dsl.kernels.plumbing import as_matrix

__all__ = ["BookPnL", "ForwardByStock", "book_pnl", "book_weights", "forward_open_returns", "split_forward_returns"]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _centre_weights(out: np.ndarray, n: int) -> None:
    """Turn one row of twice-ranks (:func:`gymkit.dsl.kernels.rank_rows2`, n finite values)
    into the gross-1 centred rank weights, in place: w_i = (rank_i − (n + 1)/2) /
    Σ|rank − (n + 1)/2| over the finite values (average ranks for ties), 0 for a non-finite
    value, all 0 when n < 2 or the row is constant (Σ = 0)."""
    n_stocks = out.shape[0]
    if n < 2:
        for j in range(n_stocks):
            out[j] = 0.0
        return
    centre = 0.5 * (n + 1)
    gross = 0.0  # Σ of multiples of 0.5 far below 2**52: exact in any order
    for j in range(n_stocks):
        c = 0.5 * out[j] - centre if out[j] > 0.0 else 0.0
        out[j] = c
        gross += abs(c)
    if gross == 0.0:
        for j in range(n_stocks):
            out[j] = 0.0
        return
    for j in range(n_stocks):
        out[j] = out[j] / gross


@njit(cache=True, nogil=True, error_model="numpy")
def _book_weights(weights: np.ndarray, counts: np.ndarray) -> None:
    for d in range(weights.shape[0]):
        _centre_weights(weights[d], counts[d])


def book_weights(values: np.ndarray, rows: slice | None = None) -> np.ndarray:
    """Return the (len(rows), N) gross-1 dollar-neutral rank weights of ``values``.

    ``values`` is a (T, N) float array; ``rows`` (a step-1 slice, default all rows)
    selects the signal dates to build.  Row t depends only on ``values[t]``.
    """
    v = _as_values(values)
    r0, r1 = _bounds(rows, v.shape[0])
    weights, counts = rank_rows2(v, r0, r1)
    _book_weights(weights, counts)
    return weights


@njit(cache=True, nogil=True, error_model="numpy")
def _book_pnl(values, weights, n_fin, fwd0, finite, min_ic_names):
    """Weights of every judged row, then gross, turnover, leg contributions and IC.

    ``weights`` (D, N): twice the ranks of the judged rows, ``n_fin`` their counts of
    finite values (:func:`gymkit.dsl.kernels.rank_rows2`); made the weights in place.
    ``values`` (D, N): the judged rows' formula values; ``fwd0``, ``finite`` (D, N): their
    forward returns with NaN → 0 (the NaN rule) and 1.0 where finite (:class:`ForwardByStock`).

    Day by day, in the rows' own (day-major) layout: every per-day sum is one serial chain
    of additions in stock order, exactly the plain definition (the six sums of the first
    pass and the three of the IC pass are independent chains, which the CPU overlaps).
    Every array is read row by row, sequentially, so the cost per cell does not grow with
    N (a stock-major copy of each chunk of days, vectorised across days, was a little
    faster at N = 46 and much slower at N = 3,000: benchmarks/RESULTS.md).  IC names
    k = finite value · finite forward return; a row without a non-finite value uses the
    forward-return mask itself (the same bits).
    """
    n_days, n_stocks = weights.shape
    gross = np.empty(n_days)
    turnover = np.empty(n_days)
    long_c = np.empty(n_days)
    short_c = np.empty(n_days)
    ic = np.full(n_days, np.nan)
    empty = np.zeros(n_stocks)  # the day before the first: the book starts from zero
    names = np.empty(n_stocks)
    for d in range(n_days):
        w = weights[d]
        k = n_fin[d]
        _centre_weights(w, k)
        prev = weights[d - 1] if d > 0 else empty
        r = fwd0[d]
        kn = finite[d]
        if k < n_stocks:
            src = values[d]
            for j in range(n_stocks):
                names[j] = kn[j] if math.isfinite(src[j]) else 0.0
            kn = names
        tov = 0.0
        lo = 0.0
        sh = 0.0
        m = 0.0
        sw = 0.0
        sr = 0.0
        for j in range(n_stocks):
            x = w[j]
            q = r[j]
            u = kn[j]
            px = max(x, 0.0)
            tov += abs(x - prev[j])
            lo += px * q
            sh += (x - px) * q
            m += u
            sw += u * x
            sr += u * q
        gross[d] = lo + sh
        long_c[d] = lo
        short_c[d] = sh
        turnover[d] = tov
        # Pearson IC of weights and forward returns over the names in the book with a
        # finite forward return; needs >= min_ic_names of them
        mw = sw / m
        mr = sr / m
        cov = 0.0
        vw = 0.0
        vr = 0.0
        for j in range(n_stocks):
            u = kn[j]
            x = (w[j] - mw) * u
            y = (r[j] - mr) * u
            cov += x * y
            vw += x * x
            vr += y * y
        if k >= min_ic_names and m >= min_ic_names:
            ic[d] = cov / np.sqrt(vw * vr) if (vw > 0.0 and vr > 0.0) else np.nan
    return weights, gross, turnover, long_c, short_c, ic


class ForwardByStock:
    """Forward returns of the judged rows ``r0:r1`` as the book kernel reads them.

    ``fwd0`` (r1 − r0, N): the forward return with NaN → 0, row d = row r0 + d;
    ``finite`` (r1 − r0, N): 1.0 where it is finite.  Read-only views of the rows of
    :func:`split_forward_returns`' arrays (no copy), held once per window (:mod:`.context`)
    and shared by every formula.  (The name is historical: until 2026-12-02 these were
    stock-major transposed copies.)
    """

    __slots__ = ("finite", "fwd0", "n_stocks", "r0", "r1")

    def __init__(self, fwd_parts: tuple[np.ndarray, np.ndarray], rows: slice) -> None:
        fwd0, fmask = fwd_parts
        r0, r1 = _bounds(rows, fwd0.shape[0])
        self.r0, self.r1, self.n_stocks = r0, r1, fwd0.shape[1]
        self.fwd0 = read_only(np.asarray(fwd0, dtype=np.float64)[r0:r1])
        self.finite = read_only(np.asarray(fmask, dtype=np.float64)[r0:r1])


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
    fwd_parts: tuple[np.ndarray, np.ndarray] | None = None, fwd_by_stock: ForwardByStock | None = None,
) -> BookPnL:
    """Build the book on signal dates ``rows`` and return its gross P&L and turnover.

    ``values`` and ``fwd`` are (T, N) aligned on the same sessions; ``fwd[t]`` is
    the open(t+1) → open(t+2) return (see :func:`forward_open_returns`), NaN where
    unknown (counted as 0).  The first row of ``rows`` builds the book from zero.
    ``fwd_parts`` = :func:`split_forward_returns` of ``fwd`` and ``fwd_by_stock`` =
    :class:`ForwardByStock` of those parts on ``rows``, when the caller caches them.
    """
    v = _as_values(values)
    if min_ic_names < 2:
        raise ValueError(f"min_ic_names must be >= 2, got {min_ic_names}")
    r0, r1 = _bounds(rows, v.shape[0])
    if fwd_by_stock is None:
        if fwd_parts is None:
            f = np.asarray(fwd, dtype=np.float64)
            if f.shape != v.shape:
                raise ValueError(f"forward returns shape {f.shape} does not match values shape {v.shape}")
            fwd_parts = split_forward_returns(f)
        if fwd_parts[0].shape != v.shape:
            raise ValueError(f"forward returns shape {fwd_parts[0].shape} does not match values shape {v.shape}")
        fwd_by_stock = ForwardByStock(fwd_parts, slice(r0, r1))
    elif (fwd_by_stock.r0, fwd_by_stock.r1, fwd_by_stock.n_stocks) != (r0, r1, v.shape[1]):
        raise ValueError(f"forward returns cover rows {fwd_by_stock.r0}:{fwd_by_stock.r1} of "
                         f"{fwd_by_stock.n_stocks} stocks, the book needs rows {r0}:{r1} of {v.shape[1]}")
    weights, n_fin = rank_rows2(v, r0, r1)
    return BookPnL(*_book_pnl(v[r0:r1], weights, n_fin, fwd_by_stock.fwd0, fwd_by_stock.finite,
                              int(min_ic_names)))


def split_forward_returns(fwd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (fwd with NaN → 0, 1.0/0.0 finite mask), both C-contiguous float64 (T, N)."""
    return _split_finite(as_matrix(fwd, "split_forward_returns"))


@njit(cache=True, nogil=True)
def _split_finite(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # one pass, two fresh arrays (the numpy form made five: page faults on a wide market)
    t_n, n = f.shape
    vals = np.empty((t_n, n))
    mask = np.empty((t_n, n))
    for t in range(t_n):
        for j in range(n):
            ok = np.isfinite(f[t, j])
            vals[t, j] = f[t, j] if ok else 0.0
            mask[t, j] = 1.0 if ok else 0.0
    return vals, mask


def forward_open_returns(open_: np.ndarray) -> np.ndarray:
    """Return fwd (T, N) with fwd[t] = open[t+2]/open[t+1] − 1; NaN where undefined.

    The last two rows are NaN (no open(t+2) in the panel); a non-finite or
    non-positive price gives NaN.
    """
    return _forward_open(as_matrix(open_, "forward_open_returns"))


@njit(cache=True, nogil=True, error_model="numpy")
def _forward_open(o: np.ndarray) -> np.ndarray:
    # one pass and one fresh array, for the same reason as _split_finite
    t_n, n = o.shape
    out = np.empty((t_n, n))
    for t in range(t_n):
        for j in range(n):
            out[t, j] = np.nan
            if t + 2 < t_n:
                a = o[t + 1, j]
                b = o[t + 2, j]
                r = b / a - 1.0
                if np.isfinite(r) and a > 0 and b > 0:
                    out[t, j] = r
    return out


def _as_values(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values)
    if v.ndim != 2:
        raise ValueError(f"formula values must be a 2-D (sessions, stocks) array, got shape {v.shape}")
    if not np.issubdtype(v.dtype, np.number) and v.dtype != np.bool_:
        raise ValueError(f"formula values must be numeric, got dtype {v.dtype}")
    return read_only(np.asarray(v, dtype=np.float64))


def _bounds(rows: slice | None, n: int) -> tuple[int, int]:
    if rows is None:
        return 0, n
    r0, r1, step = rows.indices(n)
    if step != 1:
        raise ValueError(f"rows must be a contiguous slice with step 1, got step {step}")
    return r0, max(r0, r1)
