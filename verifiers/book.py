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

Why our own kernel (not pandas ``rank``): the ranks come from the project's one rank
kernel, :func:`gymkit.dsl.kernels.row_ranks2` (an O(N²) branch-free count that LLVM
vectorises; for N ≈ 50 stocks this is faster than sorting), and they are exact: ranks and centred ranks are multiples of 0.5, so Σ|w| is
an exact float sum and the weights do not depend on summation order.  Every loop
is serial (no thread reductions), so results are bit-identical across runs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gymkit.dsl.kernels import rank_scratch, row_ranks2

__all__ = ["BookPnL", "book_pnl", "book_weights", "forward_open_returns", "split_forward_returns"]


@njit(cache=True, nogil=True, error_model="numpy")
def _rank_weights_row(
    src: np.ndarray, scratch: tuple, out: np.ndarray
) -> int:
    """Write the gross-1 centred rank weights of one row into ``out``; return #finite.

    Ranks come from the shared kernel :func:`gymkit.dsl.kernels.row_ranks2` (twice the
    1-based average-tie rank, exact integers; ``scratch`` from
    :func:`gymkit.dsl.kernels.rank_scratch`, kept across the rows of one pass).  The centred rank rank - (n + 1)/2 is a
    multiple of 0.5, so Σ|w| is an exact float sum.
    """
    n_stocks = src.shape[0]
    buf, le, marks = scratch
    n = row_ranks2(src, buf, le, marks, out)
    if n < 2:
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    centre = 0.5 * (n + 1)
    for i in range(n_stocks):
        r2 = out[i]
        out[i] = 0.5 * r2 - centre if r2 > 0.0 else 0.0
    # Σ|w| in four interleaved partial sums: every partial sum is a multiple of 0.5 far
    # below 2**52, so it is exact and the order cannot change a bit (no add chain to wait on)
    g0 = g1 = g2 = g3 = 0.0
    for i in range(0, n_stocks - 3, 4):
        g0 += abs(out[i])
        g1 += abs(out[i + 1])
        g2 += abs(out[i + 2])
        g3 += abs(out[i + 3])
    for i in range(n_stocks - n_stocks % 4, n_stocks):
        g0 += abs(out[i])
    gross = (g0 + g1) + (g2 + g3)
    if gross == 0.0:  # constant cross-section: all ranks equal
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    for j in range(n_stocks):
        out[j] = out[j] / gross
    return n


@njit(cache=True, nogil=True, error_model="numpy")
def _book_weights(values: np.ndarray, r0: int, r1: int) -> np.ndarray:
    n_stocks = values.shape[1]
    out = np.empty((r1 - r0, n_stocks))
    scratch = rank_scratch(n_stocks)
    for t in range(r0, r1):
        _rank_weights_row(values[t], scratch, out[t - r0])
    return out


def book_weights(values: np.ndarray, rows: slice | None = None) -> np.ndarray:
    """Return the (len(rows), N) gross-1 dollar-neutral rank weights of ``values``.

    ``values`` is a (T, N) float array; ``rows`` (a step-1 slice, default all rows)
    selects the signal dates to build.  Row t depends only on ``values[t]``.
    """
    v = _as_values(values)
    r0, r1 = _bounds(rows, v.shape[0])
    return _book_weights(v, r0, r1)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pnl_pair(wa, pa, ra, wb, pb, rb):
    """Turnover and leg contributions of two rows at once (weights w, previous weights p,
    forward returns r); each row's sums run in stock order, exactly as one row alone --
    two rows only interleave their independent add chains."""
    tov_a = tov_b = la = lb = sa = sb = 0.0
    for j in range(wa.shape[0]):
        x = wa[j]
        y = wb[j]
        tov_a += abs(x - pa[j])
        tov_b += abs(y - pb[j])
        px = max(x, 0.0)
        py = max(y, 0.0)
        la += px * ra[j]
        lb += py * rb[j]
        sa += (x - px) * ra[j]
        sb += (y - py) * rb[j]
    return tov_a, la, sa, tov_b, lb, sb


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _ic_pair(wa, ra, fa, va, wb, rb, fb, vb, inb):
    """Pearson IC of two rows at once over the names with a finite value (``v``) and a
    finite forward return (mask ``f``): (m_a, ic_a, m_b, ic_b), ic NaN for zero variance.
    Each row's sums run in stock order, as one row alone.  ``inb`` is (2, N) scratch."""
    ia = inb[0]
    ib = inb[1]
    ma = swa = sra = mb = swb = srb = 0.0
    for j in range(wa.shape[0]):
        ka = fa[j] if np.isfinite(va[j]) else 0.0
        kb = fb[j] if np.isfinite(vb[j]) else 0.0
        ia[j] = ka
        ib[j] = kb
        ma += ka
        mb += kb
        swa += ka * wa[j]
        swb += kb * wb[j]
        sra += ka * ra[j]
        srb += kb * rb[j]
    mwa = swa / ma
    mra = sra / ma
    mwb = swb / mb
    mrb = srb / mb
    cova = vwa = vra = covb = vwb = vrb = 0.0
    for j in range(wa.shape[0]):
        x = (wa[j] - mwa) * ia[j]
        y = (ra[j] - mra) * ia[j]
        u = (wb[j] - mwb) * ib[j]
        v = (rb[j] - mrb) * ib[j]
        cova += x * y
        covb += u * v
        vwa += x * x
        vwb += u * u
        vra += y * y
        vrb += v * v
    ica = cova / np.sqrt(vwa * vra) if (vwa > 0.0 and vra > 0.0) else np.nan
    icb = covb / np.sqrt(vwb * vrb) if (vwb > 0.0 and vrb > 0.0) else np.nan
    return ma, ica, mb, icb


@njit(cache=True, nogil=True, error_model="numpy")
def _book_pnl(values, fwd0, fmask, r0, r1, min_ic_names):
    """Weights of every judged row, then gross, turnover, leg contributions and IC.

    ``fwd0`` is the forward return with NaN replaced by 0 (the NaN rule) and
    ``fmask`` is 1.0 where the forward return is finite, else 0.0.  Branch-free
    inner loops; every sum runs in stock order (rows are taken two at a time only so
    that their independent sums overlap in the CPU: the same bits as one at a time).
    """
    n_days = r1 - r0
    n_stocks = values.shape[1]
    weights = np.empty((n_days, n_stocks))
    n_fin = np.empty(n_days, np.int64)
    gross = np.empty(n_days)
    turnover = np.empty(n_days)
    long_c = np.empty(n_days)
    short_c = np.empty(n_days)
    ic = np.full(n_days, np.nan)
    scratch = rank_scratch(n_stocks)
    for d in range(n_days):
        n_fin[d] = _rank_weights_row(values[r0 + d], scratch, weights[d])
    zero = np.zeros(n_stocks)  # the first judged day builds the book from zero
    inb = np.empty((2, n_stocks))
    for d in range(0, n_days, 2):
        e = min(d + 1, n_days - 1)  # the pair (d, e); e == d on an odd last row
        t = r0 + d
        s = r0 + e
        prev = weights[d - 1] if d > 0 else zero
        tov_a, la, sa, tov_b, lb, sb = _pnl_pair(weights[d], prev, fwd0[t], weights[e],
                                                 weights[e - 1] if e > 0 else zero, fwd0[s])
        gross[d] = la + sa
        long_c[d] = la
        short_c[d] = sa
        turnover[d] = tov_a
        gross[e] = lb + sb
        long_c[e] = lb
        short_c[e] = sb
        turnover[e] = tov_b
        # IC: Pearson correlation of weights with the forward return over the names in
        # the book (finite value) with a finite forward return; needs >= min_ic_names.
        ma, ica, mb, icb = _ic_pair(weights[d], fwd0[t], fmask[t], values[t], weights[e],
                                    fwd0[s], fmask[s], values[s], inb)
        if n_fin[d] >= min_ic_names and ma >= min_ic_names:
            ic[d] = ica
        if n_fin[e] >= min_ic_names and mb >= min_ic_names:
            ic[e] = icb
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
