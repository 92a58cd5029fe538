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

Why our own kernel (not pandas ``rank``), and how it is fast without changing a bit:

- Ranks by an O(N²) branch-free count (for N ≈ 50 stocks faster than sorting), on
  float32 keys (8 per AVX2 vector), vectorised over the ranked values; exact because
  float32 rounding is monotone and float32 ties are re-checked against the doubles
  (:func:`_untied_rank_weights`, :func:`_tied_rank_weights`); a row with exactly one
  float32 tie is settled in O(N) by comparing the pair's doubles, rows where two
  different doubles share a float32 key (sums and ratios of ranks) are counted on the
  doubles by the dsl rank's own tie path (and, after four such rows in a row, first),
  and formulas whose
  values are small integers (``sign``, comparisons, short ``ts_argmax``: ties on every
  row) run a kernel that ranks each row by counting its values.  Ranks and centred ranks
  are multiples of 0.5, so Σ|w| is an exact float sum (without ties it is n²/4 or
  (n² − 1)/4): the weights never depend on summation order.  This is a book-local
  user of the project's one counting primitive,
  :func:`gymkit.dsl.kernels.count_le_keys` (the dsl ``rank`` operator counts with it too).
- Every per-day sum (turnover, legs, IC) is a plain stock-order chain, as one day
  alone would compute it; the vectorisation runs across *days* (a chunk of days is
  laid out stock-major, stocks outside, days in the vector lanes), so the bits are
  those of the serial definition.  No threads, no fastmath: bit-identical across runs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gymkit.dsl.kernels import KEY_BLOCK as _KEY_BLOCK
from gymkit.dsl.kernels import count_groups, count_le_keys, ranks2_sorted, row_ranks2
from gymkit.dsl.kernels import rank_scratch as float64_rank_scratch

__all__ = ["BookPnL", "ForwardByStock", "book_pnl", "book_weights", "forward_open_returns", "split_forward_returns"]


_COUNT_MAX = 64  # rows with more finite values are ranked by a stable sort instead of counting
_NAN32 = np.float32(np.nan)




@njit(cache=True, nogil=True, error_model="numpy")
def rank_scratch(n_stocks: int) -> tuple:
    """Scratch buffers for the rank weights of rows of ``n_stocks`` values:
    (float32 keys, int32 le counts, int32 tie-group sizes, float64 tie-group
    representatives, and the float64 count's buffers of :func:`gymkit.dsl.kernels.row_ranks2`).

    The float32 key buffer is padded with NaN to a multiple of 16, so the counting loops
    need no remainder (a NaN key counts 0 and is counted by none).
    """
    m = (n_stocks + _KEY_BLOCK - 1) // _KEY_BLOCK * _KEY_BLOCK
    buf, le64, marks64 = float64_rank_scratch(n_stocks)
    return (np.full(m, _NAN32), np.zeros(m, np.int32), np.zeros(n_stocks + 1, np.int32), np.zeros(n_stocks + 1),
            buf, le64, marks64)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _untied_rank_weights(src: np.ndarray, keys: np.ndarray, le: np.ndarray, out: np.ndarray) -> int:
    """Write the gross-1 centred rank weights of one row into ``out`` and return n, the
    number of finite values — for a row of 2 … 64 finite values without float32 ties;
    else return −1 − n and write nothing (the caller then calls :func:`_tied_rank_weights`).

    w_i = (rank_i − (n + 1)/2) / Σ|rank − (n + 1)/2| over the n finite values, average
    ranks for ties, 0 for a non-finite value, all 0 when n < 2 or the row is constant.

    Ranks by counting: with le_i = #{j: v_j <= v_i} and lt_i = #{j: v_j < v_i},
    rank_i = (lt_i + le_i + 1)/2, and lt_i = le_i − 1 when there are no ties
    (Σ le = n(n+1)/2).  The counts run on float32 keys, 8 per AVX2 vector instead of 4:
    rounding to float32 is monotone, so a strict float32 order is the float64 order —
    without float32 ties the counts are exact.  Without ties Σ|rank − (n + 1)/2| is
    n²/4 or (n² − 1)/4 exactly (centred ranks ±0.5, ±1.5, … or 0, ±1, …).  The tie
    paths live in :func:`_tied_rank_weights`, inlined as well (a call per tied row measured
    3–6% slower on tie-heavy formulas; untied ones did not move).
    """
    n_stocks = src.shape[0]
    n = 0
    for j in range(n_stocks):
        v = src[j]
        fin = math.isfinite(v)
        keys[j] = np.float32(v) if fin else _NAN32
        n += fin
    if n < 2 or n > _COUNT_MAX or count_le_keys(keys, le) != n * (n + 1) // 2:
        return -1 - n
    centre = 0.5 * (n + 1)
    gross = 0.25 * (n * n - (n & 1))
    for j in range(n_stocks):
        c = le[j]
        out[j] = (c - centre) / gross if c > 0 else 0.0
    return n


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _tied_rank_weights(src: np.ndarray, scratch: tuple, out: np.ndarray, n: int) -> int:
    """The rows :func:`_untied_rank_weights` leaves (it returned −1 − n): fewer than 2
    finite values (all 0), float32 ties (le counts already in ``scratch``) or more than
    64 finite values (stable sort).  Returns n, or n + _CLASHED and nothing written when two
    different doubles share a float32 key: the caller then calls :func:`_float64_rank_weights`
    (a call from in here slowed every row of the kernel by ~15%, taken or not).

    Exactly one tied pair is settled in O(N) by :func:`_one_pair_rank_weights`.  With more
    float32 ties, values with equal le have equal float32 keys; a group of m equal doubles
    counted le = c holds the ranks c − m + 1 … c, whose average needs only m: one
    histogram of the counts — unless a group holds two *different* doubles (a float32 clash).
    """
    _keys, le, marks, rep = scratch[0], scratch[1], scratch[2], scratch[3]
    n_stocks = src.shape[0]
    if n < 2:
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    if n > _COUNT_MAX:
        ranks2_sorted(src, n, out)
        return _weights_from_ranks2(out, n)
    centre = 0.5 * (n + 1)
    s1 = 0
    for j in range(n_stocks):
        s1 += le[j]
    if s1 - n * (n + 1) // 2 == 1:  # exactly one pair shares a key (the common case)
        s2 = 0
        for j in range(n_stocks):
            s2 += le[j] * le[j]
        return _one_pair_rank_weights(src, le, out, n, (s2 - n * (n + 1) * (2 * n + 1) // 6 + 1) // 2)
    # how many values share each count (marks[c]): a group of equal counts is a group of
    # equal float32 keys, and must hold one double (else count on the doubles)
    if count_groups(src, le, marks, rep):
        return n + _CLASHED  # the caller ranks the row on its doubles
    # a group of m values counted le = c holds ranks c - m + 1 … c: lt = c - m, and
    # 2·rank = lt + le + 1 = 2c - m + 1 (the same integer as a mark-and-scan for lt)
    for j in range(n_stocks):
        c = le[j]
        out[j] = 0.5 * (2 * c - marks[c] + 1) - centre if c > 0 else 0.0
    return _scale_row(out, n)


@njit(cache=True, nogil=True, error_model="numpy")
def _float64_rank_weights(src: np.ndarray, scratch: tuple, out: np.ndarray) -> int:
    """Rank weights of a row counted on its doubles (:func:`gymkit.dsl.kernels.row_ranks2`:
    the float64 le count and a mark-and-scan for lt, the dsl ``rank``'s tie path): for a
    float32 clash (was a float64 count in the float32 layout and a second histogram), and
    with no float32 pass first for every row while a formula's rows clash (sums and ratios
    of ranks: clashing rows run 1.3-1.6x faster this way).  Returns n."""
    return _weights_from_ranks2(out, row_ranks2(src, scratch[4], scratch[5], scratch[6], out))


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _weights_from_ranks2(out: np.ndarray, n: int) -> int:
    """``out`` holds 2·rank (0.0 off the book) for a row of n finite values: centre the ranks
    and divide by Σ|·| in place; fewer than 2 values hold nothing.  Returns n."""
    n_stocks = out.shape[0]
    if n < 2:
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    centre = 0.5 * (n + 1)
    for j in range(n_stocks):
        out[j] = 0.5 * out[j] - centre if out[j] > 0.0 else 0.0
    return _scale_row(out, n)


_CLASHED = 1 << 20  # _tied_rank_weights' answer for a float32 clash is n + _CLASHED
_TIED_RUN = 4  # after this many float32 clashes in a row, rank on the doubles ...
_RETRY32 = 16  # ... and try the float32 count again only every 16th row (as the dsl rank does)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _scale_row(out: np.ndarray, n: int) -> int:
    """Divide centred ranks (0 outside the book) by Σ|·|; a constant row (Σ = 0) holds nothing."""
    n_stocks = out.shape[0]
    # four interleaved partial sums: each is a multiple of 0.5 far below 2**52, so exact
    g0 = g1 = g2 = g3 = 0.0
    for i in range(0, n_stocks - 3, 4):
        g0 += abs(out[i])
        g1 += abs(out[i + 1])
        g2 += abs(out[i + 2])
        g3 += abs(out[i + 3])
    for i in range(n_stocks - n_stocks % 4, n_stocks):
        g0 += abs(out[i])
    gross = (g0 + g1) + (g2 + g3)
    if gross == 0.0:
        for j in range(n_stocks):
            out[j] = 0.0
        return n
    for j in range(n_stocks):
        out[j] = out[j] / gross
    return n


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _one_pair_rank_weights(src: np.ndarray, le: np.ndarray, out: np.ndarray, n: int, pair: int) -> int:
    """Rank weights of a row whose float32 counts have exactly one tie: the two values
    counted ``pair`` (= (Σle² − Σk² + 1)/2, since le holds 1 … n with pair − 1 replaced by
    pair).  Equal doubles are a true tie (average rank pair − 0.5); different doubles
    sharing a float32 key are ordered by their doubles (ranks pair − 1 and pair), which
    leaves the row untied.  Either way the same centred ranks, Σ|·| and division as the
    general tie path (a recount on the doubles and the mark-and-scan), so the same bits,
    in O(N) instead of a second O(N²) count.  Returns n.
    """
    n_stocks = src.shape[0]
    a = -1
    b = -1
    for j in range(n_stocks):
        if le[j] == pair:
            if a < 0:
                a = j
            else:
                b = j
    centre = 0.5 * (n + 1)
    if src[a] == src[b]:
        for j in range(n_stocks):
            c = le[j]
            out[j] = (c - centre if c != pair else (pair - 0.5) - centre) if c > 0 else 0.0
        return _scale_row(out, n)
    gross = 0.25 * (n * n - (n & 1))
    low = a if src[a] < src[b] else b
    for j in range(n_stocks):
        c = le[j]
        out[j] = (c - centre) / gross if c > 0 else 0.0
    out[low] = (pair - 1 - centre) / gross
    return n


_SMALL_SPAN = 12  # rows of integers spanning fewer values than this are ranked by value counts
_SMALL_MAX = 2.0**52  # ... and below this magnitude (lo + u is exact)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _small_int_rank_weights(src: np.ndarray, out: np.ndarray, w: np.ndarray) -> int:
    """The rank weights of a row whose finite values are integers spanning fewer than
    _SMALL_SPAN values (``sign(…)``, comparisons, short ``ts_argmax``: ties on every row),
    by counting each value instead of the O(N²) count; returns n, or −1 without a usable
    result (not such a row, or fewer than 2 finite values: the caller ranks it the usual
    way).  Same bits as :func:`_tied_rank_weights`: the same integer lt and le per value,
    the same 0.5·(lt + le + 1) − centre, the same exact Σ|·| and the same division (done
    once per value instead of once per stock).  ``w``: scratch of _SMALL_SPAN floats.
    """
    n_stocks = src.shape[0]
    v0 = np.nan  # the first finite value, the origin of the offsets below
    for j in range(n_stocks):
        if math.isfinite(src[j]):
            v0 = src[j]
            break
    if not (abs(v0) < _SMALL_MAX and v0 == math.floor(v0)):  # also false for NaN
        return -1
    # one branch-free pass (integer reductions only, so LLVM vectorises it): every finite
    # value must be v0 + an integer offset k with |k| < _SMALL_SPAN
    bad = 0
    n = 0
    lo = 0
    hi = 0
    for j in range(n_stocks):
        v = src[j]
        fin = math.isfinite(v)
        off = v - v0 if fin else 0.0
        ok = (off == math.floor(off)) & (abs(off) < _SMALL_SPAN)
        bad |= np.int32(not ok)
        k = np.int32(off) if ok else np.int32(0)
        lo = min(lo, k)
        hi = max(hi, k)
        n += fin
    if bad or n < 2 or hi - lo >= _SMALL_SPAN:
        return -1
    lo_v = v0 + lo
    span = hi - lo + 1
    centre = 0.5 * (n + 1)
    # w[u]: the centred rank of the value lo_v + u
    lt = 0
    gross = 0.0  # Σ|centred rank| over the row: multiples of 0.5, so exact in any order
    for u in range(span):
        val = lo_v + u
        c = 0
        for j in range(n_stocks):
            c += src[j] == val
        w[u] = 0.5 * (lt + (lt + c) + 1) - centre  # lt below the value, le = lt + c up to it
        gross += c * abs(w[u])
        lt += c
    for j in range(n_stocks):
        out[j] = 0.0
    if gross == 0.0:  # a constant row holds nothing
        return n
    for u in range(span):
        val = lo_v + u
        q = w[u] / gross  # the division _scale_row would do, once per value
        for j in range(n_stocks):
            out[j] = q if src[j] == val else out[j]
    return n


@njit(cache=True, nogil=True, error_model="numpy")
def _small_int_rows(values: np.ndarray, r0: int, r1: int) -> bool:
    """True when the formula's values look small-integer valued: the rows with at least 2
    finite values among up to 8 spread over rows r0:r1 all qualify for
    :func:`_small_int_rank_weights` (and there is one).  Decides which compiled book
    kernel runs; that kernel still checks every row, so a wrong guess costs time, never
    a bit."""
    n_rows = r1 - r0
    step = max(1, n_rows // 8)
    scratch = np.empty(values.shape[1])
    w = np.empty(_SMALL_SPAN)
    seen = False
    for t in range(r0, r1, step):
        n = 0
        for j in range(values.shape[1]):
            n += math.isfinite(values[t, j])
        if n < 2:
            continue
        if _small_int_rank_weights(values[t], scratch, w) < 0:
            return False
        seen = True
    return seen


@njit(cache=True, nogil=True, error_model="numpy")
def _book_weights(values: np.ndarray, r0: int, r1: int) -> np.ndarray:
    n_stocks = values.shape[1]
    out = np.empty((r1 - r0, n_stocks))
    scratch = rank_scratch(n_stocks)
    keys = scratch[0]
    le = scratch[1]
    tied_run = 0
    for t in range(r0, r1):
        if tied_run < _TIED_RUN or t % _RETRY32 == 0:
            k = _untied_rank_weights(values[t], keys, le, out[t - r0])
            if k < 0:  # (written this way, not as one helper: the helper measured 20% slower)
                k = _tied_rank_weights(values[t], scratch, out[t - r0], -1 - k)
                if k >= _CLASHED:  # a float32 clash: count on the doubles
                    _float64_rank_weights(values[t], scratch, out[t - r0])
                    tied_run += 1
                else:
                    tied_run = 0
            else:
                tied_run = 0
        else:  # clash after clash: the doubles first
            _float64_rank_weights(values[t], scratch, out[t - r0])
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


def _book_pnl_kernel(small_ints: bool):
    """The book kernel, compiled twice: ``small_ints`` (a closure constant) first tries
    :func:`_small_int_rank_weights` on every row, for formulas whose values are small
    integers; without it the row loop is exactly the count path (no test, no extra code
    in the hot loop: inlining the try into one kernel slowed untied formulas 5–8%)."""

    @njit(cache=True, nogil=True, error_model="numpy")
    def kernel(values, ft, mt, r0, r1, min_ic_names):
        return _book_pnl_body(values, ft, mt, r0, r1, min_ic_names, small_ints)

    return kernel


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _book_pnl_body(values, ft, mt, r0, r1, min_ic_names, small_ints):
    """Weights of every judged row, then gross, turnover, leg contributions and IC.

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
    weights = np.empty((n_days, n_stocks))
    gross = np.empty(n_days)
    turnover = np.empty(n_days)
    long_c = np.empty(n_days)
    short_c = np.empty(n_days)
    ic = np.full(n_days, np.nan)
    scratch = rank_scratch(n_stocks)
    keys = scratch[0]
    le = scratch[1]
    w_small = np.empty(_SMALL_SPAN)
    tied_run = 0
    wt = np.zeros((n_stocks, _ROW))  # column 0: the day before (zero: the book starts empty)
    fin = np.ones((n_stocks, _ROW))
    acc = np.zeros((9, _CHUNK))
    n_fin = np.zeros(_CHUNK, np.int64)
    mw = np.empty(_CHUNK)
    mr = np.empty(_CHUNK)
    for c0 in range(0, n_days, _CHUNK):
        n = min(_CHUNK, n_days - c0)
        holes = False
        for e in range(n):
            row = weights[c0 + e]
            src = values[r0 + c0 + e]
            k = _small_int_rank_weights(src, row, w_small) if small_ints else -1
            if k < 0:  # the row paths of _book_weights, written out: as one inlined helper
                # returning (n, tied_run) this kernel ran 6-22% slower (A/B of 2026-11-29)
                if tied_run >= _TIED_RUN and (c0 + e) % _RETRY32 != 0:  # clash after clash: the doubles
                    k = _float64_rank_weights(values[r0 + c0 + e], scratch, weights[c0 + e])
                else:
                    k = _untied_rank_weights(src, keys, le, row)
                    if k < 0:  # ties, < 2 or > 64 finite values
                        k = _tied_rank_weights(values[r0 + c0 + e], scratch, weights[c0 + e], -1 - k)
                        if k >= _CLASHED:  # a float32 clash: count on the doubles
                            k = _float64_rank_weights(values[r0 + c0 + e], scratch, weights[c0 + e])
                            tied_run += 1
                        else:
                            tied_run = 0
                    else:
                        tied_run = 0
            n_fin[e] = k
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
            if n_fin[e] >= min_ic_names and acc[3, e] >= min_ic_names:
                vw = acc[7, e]
                vr = acc[8, e]
                ic[d] = acc[6, e] / np.sqrt(vw * vr) if (vw > 0.0 and vr > 0.0) else np.nan
        for j in range(n_stocks):
            wt[j, 0] = wt[j, n]
        if holes:
            fin[:] = 1.0
    return weights, gross, turnover, long_c, short_c, ic


_BOOK_PNL = {False: _book_pnl_kernel(False), True: _book_pnl_kernel(True)}


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
    kernel = _BOOK_PNL[bool(_small_int_rows(v, r0, r1))]
    return BookPnL(*kernel(v, fwd_by_stock.fwd0, fwd_by_stock.finite, r0, r1, int(min_ic_names)))


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
