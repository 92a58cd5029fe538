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
  alone would compute it; the vectorisation runs across *days* (a chunk of days is
  laid out stock-major, stocks outside, days in the vector lanes), so the bits are
  those of the serial definition.  No threads, no fastmath: bit-identical across runs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gymkit.dsl.kernels import rank_rows2, read_only

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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pnl_sums(wt, fin, ft, mt, c0, n, holes, acc):
    """Add each stock's terms of days c0 + e, e < n, to the day sums in ``acc``, in stock order.

    ``wt`` (N, ≥ 1 + n): weights, column e + 1 = day c0 + e and column 0 = the day before;
    ``fin`` (N, ≥ n): 1.0 where the value is finite; ``ft``, ``mt`` (N, D): forward return
    (NaN → 0) and its finite mask.  acc rows: 0 turnover, 1 long leg, 2 short leg, 3 IC
    names k = fin·mask, 4 Σ k·w, 5 Σ k·r.  Stocks outside, days inside (the vector lanes);
    two stocks per pass, added one after the other (the same chain as one at a time).
    """
    n_stocks = wt.shape[0]
    tov = acc[0]
    lo = acc[1]
    sh = acc[2]
    m = acc[3]
    sw = acc[4]
    sr = acc[5]
    for j in range(0, n_stocks - 1, 2):
        wa = wt[j]
        wb = wt[j + 1]
        ia = fin[j]
        ib = fin[j + 1]
        fa = ft[j, c0:]
        fb = ft[j + 1, c0:]
        ma = mt[j, c0:]
        mb = mt[j + 1, c0:]
        for e in range(n):
            x = wa[e + 1]
            y = wb[e + 1]
            r = fa[e]
            q = fb[e]
            u = ma[e] * ia[e] if holes else ma[e]  # fin = 1.0 without holes: the same bits
            v = mb[e] * ib[e] if holes else mb[e]
            px = max(x, 0.0)
            py = max(y, 0.0)
            tov[e] = (tov[e] + abs(x - wa[e])) + abs(y - wb[e])
            lo[e] = (lo[e] + px * r) + py * q
            sh[e] = (sh[e] + (x - px) * r) + (y - py) * q
            m[e] = (m[e] + u) + v
            sw[e] = (sw[e] + u * x) + v * y
            sr[e] = (sr[e] + u * r) + v * q
    if n_stocks % 2:
        j = n_stocks - 1
        wa = wt[j]
        ia = fin[j]
        fa = ft[j, c0:]
        ma = mt[j, c0:]
        for e in range(n):
            x = wa[e + 1]
            r = fa[e]
            u = ma[e] * ia[e] if holes else ma[e]
            px = max(x, 0.0)
            tov[e] += abs(x - wa[e])
            lo[e] += px * r
            sh[e] += (x - px) * r
            m[e] += u
            sw[e] += u * x
            sr[e] += u * r


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _ic_sums(wt, fin, ft, mt, c0, n, holes, mw, mr, acc):
    """Second pass of the IC: acc rows 6 Σ x·y, 7 Σ x², 8 Σ y² with x = (w − mean w)·k and
    y = (r − mean r)·k, in stock order (two stocks per pass), days vectorised."""
    n_stocks = wt.shape[0]
    cov = acc[6]
    vw = acc[7]
    vr = acc[8]
    for j in range(0, n_stocks - 1, 2):
        wa = wt[j]
        wb = wt[j + 1]
        ia = fin[j]
        ib = fin[j + 1]
        fa = ft[j, c0:]
        fb = ft[j + 1, c0:]
        ma = mt[j, c0:]
        mb = mt[j + 1, c0:]
        for e in range(n):
            u = ma[e] * ia[e] if holes else ma[e]
            v = mb[e] * ib[e] if holes else mb[e]
            x = (wa[e + 1] - mw[e]) * u
            y = (fa[e] - mr[e]) * u
            p = (wb[e + 1] - mw[e]) * v
            q = (fb[e] - mr[e]) * v
            cov[e] = (cov[e] + x * y) + p * q
            vw[e] = (vw[e] + x * x) + p * p
            vr[e] = (vr[e] + y * y) + q * q
    if n_stocks % 2:
        j = n_stocks - 1
        wa = wt[j]
        ia = fin[j]
        fa = ft[j, c0:]
        ma = mt[j, c0:]
        for e in range(n):
            u = ma[e] * ia[e] if holes else ma[e]
            x = (wa[e + 1] - mw[e]) * u
            y = (fa[e] - mr[e]) * u
            cov[e] += x * y
            vw[e] += x * x
            vr[e] += y * y


_CHUNK = 256  # judged days per pass of the sums (buffers of 46 stocks stay in L1/L2)
_ROW = _CHUNK + 8  # row stride of the stock-major buffers: 33 cache lines, odd, so the
# stores of one day land in different cache sets (a 2 KiB stride maps them all to one set)


@njit(cache=True, nogil=True, error_model="numpy")
def _book_pnl(values, weights, n_fin, ft, mt, r0, r1, min_ic_names):
    """Weights of every judged row, then gross, turnover, leg contributions and IC.

    ``weights`` (r1 − r0, N): twice the ranks of the judged rows, ``n_fin`` their counts of
    finite values (:func:`gymkit.dsl.kernels.rank_rows2`); made the weights in place.

    ``ft``, ``mt`` (N, r1 − r0): forward returns of the judged rows with NaN → 0 (the NaN
    rule) and 1.0 where finite, stock-major (:class:`ForwardByStock`).  Every per-day sum
    is the same chain of additions, in stock order, as a plain loop over one day's stocks
    (the same bits); the days of a chunk are the vector lanes: each weight row is copied
    stock-major into ``wt`` as it is built, and the sums loop over stocks outside and days
    inside, where LLVM vectorises.  ``fin`` (finite value) is 1.0 except where a row has a
    non-finite value, so rows without any cost no per-stock write.
    """
    n_days = r1 - r0
    n_stocks = values.shape[1]
    gross = np.empty(n_days)
    turnover = np.empty(n_days)
    long_c = np.empty(n_days)
    short_c = np.empty(n_days)
    ic = np.full(n_days, np.nan)
    wt = np.zeros((n_stocks, _ROW))  # column 0: the day before (zero: the book starts empty)
    fin = np.ones((n_stocks, _ROW))
    acc = np.zeros((9, _CHUNK))
    mw = np.empty(_CHUNK)
    mr = np.empty(_CHUNK)
    for c0 in range(0, n_days, _CHUNK):
        n = min(_CHUNK, n_days - c0)
        holes = False
        for e in range(n):
            row = weights[c0 + e]
            src = values[r0 + c0 + e]
            k = n_fin[c0 + e]
            _centre_weights(row, k)
            for j in range(n_stocks):
                wt[j, e + 1] = row[j]
            if k < n_stocks:
                holes = True
                for j in range(n_stocks):
                    if not math.isfinite(src[j]):
                        fin[j, e] = 0.0
        acc[:] = 0.0
        _pnl_sums(wt, fin, ft, mt, c0, n, holes, acc)
        for e in range(n):
            mw[e] = acc[4, e] / acc[3, e]
            mr[e] = acc[5, e] / acc[3, e]
        _ic_sums(wt, fin, ft, mt, c0, n, holes, mw, mr, acc)
        for e in range(n):
            d = c0 + e
            lo = acc[1, e]
            sh = acc[2, e]
            gross[d] = lo + sh
            long_c[d] = lo
            short_c[d] = sh
            turnover[d] = acc[0, e]
            # Pearson IC of weights and forward returns over the names in the book with a
            # finite forward return; needs >= min_ic_names of them
            if n_fin[d] >= min_ic_names and acc[3, e] >= min_ic_names:
                vw = acc[7, e]
                vr = acc[8, e]
                ic[d] = acc[6, e] / np.sqrt(vw * vr) if (vw > 0.0 and vr > 0.0) else np.nan
        for j in range(n_stocks):
            wt[j, 0] = wt[j, n]
        if holes:
            fin[:] = 1.0
    return weights, gross, turnover, long_c, short_c, ic


class ForwardByStock:
    """Forward returns of the judged rows ``r0:r1`` in the stock-major layout of the book kernel.

    ``fwd0`` (N, r1 − r0): the forward return with NaN → 0, column d = row r0 + d;
    ``finite`` (N, r1 − r0): 1.0 where it is finite.  Built once per window
    (:mod:`.context`) and shared by every formula.
    """

    __slots__ = ("finite", "fwd0", "n_stocks", "r0", "r1")

    def __init__(self, fwd_parts: tuple[np.ndarray, np.ndarray], rows: slice) -> None:
        fwd0, fmask = fwd_parts
        r0, r1 = _bounds(rows, fwd0.shape[0])
        self.r0, self.r1, self.n_stocks = r0, r1, fwd0.shape[1]
        self.fwd0 = np.ascontiguousarray(fwd0[r0:r1].T)
        self.finite = np.ascontiguousarray(fmask[r0:r1].T, dtype=np.float64)
        self.fwd0.setflags(write=False)
        self.finite.setflags(write=False)


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
    return BookPnL(*_book_pnl(v, weights, n_fin, fwd_by_stock.fwd0, fwd_by_stock.finite, r0, r1,
                              int(min_ic_names)))


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
    return read_only(np.asarray(v, dtype=np.float64))


def _bounds(rows: slice | None, n: int) -> tuple[int, int]:
    if rows is None:
        return 0, n
    r0, r1, step = rows.indices(n)
    if step != 1:
        raise ValueError(f"rows must be a contiguous slice with step 1, got step {step}")
    return r0, max(r0, r1)
