"""Data-quality warnings of a validated long frame: flaws that are legal data but likely wrong.

Never errors, in any mode: each is counted per rule with one line listing the first rows
(``TICKER DATE: detail``), in :class:`~gymkit.data.validate.ValidationReport`'s ``warned``.

``unadjusted-split``  one stock's overnight move open(t)/close(t-1) − 1 beyond ±40 % of the
                      market's (median) move, on a day that move is within ±5 % (a split or reverse
                      split the vendor did not adjust: load with ``adjust=True`` and a
                      ``split`` column, or use adjusted prices);
``zero-volume``       a session with prices and volume 0 (a halt or a vendor gap);
``missing-open``      a session with a close but no open (the book fills at the open);
``missing-close``     a session with an open but no close (the stock has no return that day or
                      the next: it leaves the book and the ranks for both);
``short-history``     a ticker with fewer than 63 sessions with a close (a quarter: too short to
                      rank on most windows; often a vendor's partial listing), in a panel of at
                      least 63 sessions;
``thin-session``      a session where fewer than half the median session's tickers have a close
                      (a partial last day, a holiday half-filled by the vendor).

Computed on the pivoted (T, N) grids in one compiled pass, linear in T·N besides one
selection per session.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from numba import njit

from gymkit.data.validate import MAX_LISTED_ROWS, _fmt

#: Overnight move of one stock beyond which a split is suspected.
SPLIT_JUMP = 0.40
#: ... when the market's median overnight move stays within this.
MARKET_CALM = 0.05

#: A ticker with fewer priced sessions than this is flagged ``short-history``.
SHORT_HISTORY = 63
#: A session with fewer priced tickers than this share of the median session's is ``thin-session``.
THIN_SESSION = 0.5

#: warning rule -> what it flags (the texts read the constants above).
WARNINGS: dict[str, str] = {
    "unadjusted-split": f"one stock's overnight move beyond ±{SPLIT_JUMP:.0%} while the market's "
                        f"stays within ±{MARKET_CALM:.0%}",
    "zero-volume": "a session with prices and volume 0",
    "missing-open": "a session with a close but no open",
    "missing-close": "a session with an open but no close",
    "short-history": f"a ticker with fewer than {SHORT_HISTORY} sessions with a close",
    "thin-session": f"a session where fewer than {THIN_SESSION:.0%} of the median session's "
                    "tickers have a close",
}


#: Rows a console note lists per warning rule (the report and ``gymkit market FILE`` list
#: :data:`~gymkit.data.validate.MAX_LISTED_ROWS`).
BRIEF_LISTED_ROWS = 3


def _listing(rows: pl.DataFrame, describe: object, n: int, limit: int) -> str:
    parts = [f"{r['ticker']} {r['date']}: {describe(r)}"  # type: ignore[operator]
             for r in rows.head(limit).iter_rows(named=True)]
    shown = f"{len(parts)} of {n} rows shown" if n > len(parts) else f"{n} row{'s' * (n > 1)}"
    return "; ".join(parts) + f" ({shown})"


@njit(cache=True, nogil=True, error_model="numpy")
def _row_median(buf, k):  # pragma: no cover - compiled
    """The median of ``buf[:k]`` (no NaN; reordered in place) as polars' ``median`` computes
    it: the two middle values interpolated, lower + (upper − lower) · 0.5; NaN when k = 0.

    Hoare's selection with pseudo-random pivots (a fixed xorshift: deterministic, expected
    linear time on any input not built against that sequence); our own because Numba
    compiles NumPy's ``partition`` slowly (benchmarks/RESULTS.md), and any selection gives
    the same two order statistics.
    """
    if k == 0:
        return np.nan
    lo_i = (k - 1) // 2
    a = buf
    left, right = 0, k - 1
    state = np.uint64(0x9E3779B97F4A7C15)
    while left < right:
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        p = a[left + np.intp(state % np.uint64(right - left + 1))]
        i, j = left, right
        while i <= j:
            while a[i] < p:
                i += 1
            while p < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if lo_i <= j:
            right = j
        elif lo_i >= i:
            left = i
        else:
            break
    lo = a[lo_i]
    if k % 2 == 1:
        return lo
    hi = a[lo_i + 1]
    for q in range(lo_i + 2, k):
        hi = min(hi, a[q])
    return lo + (hi - lo) * 0.5


@njit(cache=True, nogil=True, error_model="numpy")
def _scan(open_, close, volume, present, jump, calm):  # pragma: no cover - compiled
    """One pass over the rows of the grids (linear in T·N, O(N) memory besides the flags).

    Returns ``flags`` (T, N) uint8 (bit 1 zero-volume, 2 missing-open, 4 missing-close; a
    session with a close and volume 0, a close and no open, an open and no close), the
    unadjusted-split hits in (date, ticker) order — rows, columns, previous close, gap —
    each row's market move (the median gap), the closes per row and per ticker, and each
    ticker's first and last row with a close (0 and T − 1 for a ticker with none).
    """
    T, N = close.shape
    flags = np.zeros((T, N), np.uint8)
    prev = np.full(N, np.nan)  # each ticker's close on its previous present row
    gap = np.empty(N)
    buf = np.empty(N)
    mkt = np.empty(T)
    per_day = np.zeros(T, np.int64)
    per_ticker = np.zeros(N, np.int64)
    first = np.zeros(N, np.int64)
    final = np.full(N, T - 1, np.int64)
    cap = 64
    jr = np.empty(cap, np.int64)
    jc = np.empty(cap, np.int64)
    jp = np.empty(cap)
    jg = np.empty(cap)
    n_jumps = 0
    for t in range(T):
        k = 0
        for j in range(N):
            g = np.nan
            if present[t, j]:
                o = open_[t, j]
                c = close[t, j]
                g = (c if np.isnan(o) else o) / prev[j] - 1.0
                if not np.isnan(g):
                    buf[k] = g
                    k += 1
                if np.isnan(c):
                    if not np.isnan(o):
                        flags[t, j] = 4
                else:
                    if per_ticker[j] == 0:
                        first[j] = t
                    per_day[t] += 1
                    per_ticker[j] += 1
                    final[j] = t
                    flags[t, j] = (1 if volume[t, j] == 0.0 else 0) | (2 if np.isnan(o) else 0)
            gap[j] = g
        m = _row_median(buf, k)
        mkt[t] = m
        if abs(m) <= calm:
            for j in range(N):
                if abs(gap[j] - m) > jump:
                    if n_jumps == cap:
                        cap *= 2
                        jr, jc, jp, jg = _grow(jr, cap), _grow(jc, cap), _grow(jp, cap), _grow(jg, cap)
                    jr[n_jumps] = t
                    jc[n_jumps] = j
                    jp[n_jumps] = prev[j]
                    jg[n_jumps] = gap[j]
                    n_jumps += 1
        for j in range(N):
            if present[t, j]:
                prev[j] = close[t, j]
    return (flags, jr[:n_jumps].copy(), jc[:n_jumps].copy(), jp[:n_jumps].copy(),
            jg[:n_jumps].copy(), mkt, per_day, per_ticker, first, final)


@njit(cache=True, nogil=True)
def _grow(a, cap):
    out = np.empty(cap, a.dtype)
    out[:a.shape[0]] = a
    return out


def _frame(dates: np.ndarray, tickers: np.ndarray, r: np.ndarray, c: np.ndarray,
           **columns: np.ndarray) -> pl.DataFrame:
    """Hit rows (r, c) in (date, ticker) order as a frame for :func:`_listing`, with the given
    per-hit values (NaN read as null)."""
    data: dict[str, object] = {"date": dates[r], "ticker": tickers[c]}
    for name, values in columns.items():
        data[name] = pl.Series(name, values).fill_nan(None)
    return pl.DataFrame(data)


def quality_warnings(dates: np.ndarray, tickers: Sequence[str], open_: np.ndarray,
                     close: np.ndarray, volume: np.ndarray, present: np.ndarray,
                     ) -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    """(counts, listings, brief listings) of the rules of :data:`WARNINGS` on a validated panel's (T, N)
    grids: ``present`` marks the (date, ticker) rows the input had; NaN in a field is a
    missing value (or an absent row).  "The previous close" of a row is its ticker's
    previous *present* row's close, as in the long frame.  One compiled pass over the rows
    (:func:`_scan`; our own kernel because the array expressions it replaced made a dozen
    (T, N) temporaries), linear in T·N besides one selection per date for the market's
    median move."""
    (flags, jr, jc, jprev, jgap, mkt, per_day, per_ticker, first,
     final) = _scan(open_, close, volume, present, SPLIT_JUMP, MARKET_CALM)
    names = np.asarray(tickers, dtype=object)
    hits = {"unadjusted-split": _frame(dates, names, jr, jc, open=open_[jr, jc], _prev=jprev,
                                       _gap=jgap, _mkt=mkt[jr])}
    for rule, bit, field, grid in (("zero-volume", 1, "close", close),
                                   ("missing-open", 2, "close", close),
                                   ("missing-close", 4, "open", open_)):
        r, c = np.nonzero(flags & bit)  # row-major: date, then ticker (tickers are sorted)
        hits[rule] = _frame(dates, names, r, c, **{field: grid[r, c]})
    days = per_day > 0  # a session with no close is not a session of the priced rows
    median_day = float(np.median(per_day[days])) if days.any() else 0.0
    short = SHORT_HISTORY if int(days.sum()) >= SHORT_HISTORY else 0  # not on a short panel
    priced = np.nonzero(per_ticker > 0)[0]
    few = priced[per_ticker[priced] < short]
    order = np.lexsort((few, first[few]))  # by first date, then ticker
    few = few[order]
    short_rows = pl.DataFrame({"ticker": [tickers[j] for j in few], "date": dates[first[few]],
                               "_last": dates[final[few]], "_n": per_ticker[few]})
    thin = np.nonzero(days & (per_day < THIN_SESSION * median_day))[0]
    thin_rows = pl.DataFrame({"date": dates[thin], "_n": per_day[thin], "ticker": ["(all)"] * thin.size})
    hits["short-history"] = short_rows
    hits["thin-session"] = thin_rows
    return warning_report(hits, median_day)


def warning_report(hits: dict[str, pl.DataFrame], median_day: float,
                   ) -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    """(counts, listings, brief listings) from each rule's hit rows (in :data:`WARNINGS`
    order; a rule with no row is left out): ``[rule] TICKER DATE: detail; …`` with the first
    :data:`~gymkit.data.validate.MAX_LISTED_ROWS` rows listed, and the first
    :data:`BRIEF_LISTED_ROWS` in the brief one."""
    describe = {
        "unadjusted-split": lambda r: (f"open {_fmt(r['open'])} after close {_fmt(r['_prev'])} "
                                       f"({r['_gap']:+.0%}, market {r['_mkt']:+.1%})"),
        "zero-volume": lambda r: f"volume 0 with close {_fmt(r['close'])}",
        "missing-open": lambda r: f"no open, close {_fmt(r['close'])}",
        "missing-close": lambda r: f"open {_fmt(r['open'])}, no close",
        "short-history": lambda r: f"only {r['_n']} session(s) with a close ({r['date']}..{r['_last']})",
        "thin-session": lambda r: f"{r['_n']} ticker(s) with a close, the median session has {median_day:g}",
    }
    counts: dict[str, int] = {}
    lines: dict[str, str] = {}
    brief: dict[str, str] = {}
    for rule in WARNINGS:
        rows = hits.get(rule)
        if rows is not None and rows.height:
            counts[rule] = rows.height
            lines[rule] = f"[{rule}] " + _listing(rows, describe[rule], rows.height, MAX_LISTED_ROWS)
            brief[rule] = f"[{rule}] " + _listing(rows, describe[rule], rows.height, BRIEF_LISTED_ROWS)
    return counts, lines, brief
