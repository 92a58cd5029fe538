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

Computed on the pivoted (T, N) grids (numpy), linear in T·N besides one sort per session.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

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


def _listing(rows: pl.DataFrame, describe: object, n: int) -> str:
    parts = [f"{r['ticker']} {r['date']}: {describe(r)}"  # type: ignore[operator]
             for r in rows.head(MAX_LISTED_ROWS).iter_rows(named=True)]
    shown = f"{len(parts)} of {n} rows shown" if n > len(parts) else f"{n} row{'s' * (n > 1)}"
    return "; ".join(parts) + f" ({shown})"


def _median_rows(x: np.ndarray) -> np.ndarray:
    """Each row's median of its non-NaN values, as polars' ``median`` computes it (the two
    middle values interpolated: lower + (upper − lower) · 0.5); NaN for a row with none."""
    s = np.sort(x, axis=1)  # NaN sorts last
    k = np.count_nonzero(~np.isnan(x), axis=1)
    lo_i, hi_i = np.maximum((k - 1) // 2, 0), np.maximum(k // 2, 0)
    rows = np.arange(x.shape[0])
    lo, hi = s[rows, lo_i], s[rows, hi_i]
    out = np.where(k % 2 == 1, lo, lo + (hi - lo) * 0.5)
    return np.where(k > 0, out, np.nan)


def _hits(dates: np.ndarray, tickers: Sequence[str], mask: np.ndarray,
          **columns: np.ndarray) -> pl.DataFrame:
    """The True cells of a (T, N) ``mask`` in (date, ticker) order, with ``columns``' values
    there (NaN read as null), as a frame for :func:`_listing`."""
    r, c = np.nonzero(mask)  # row-major: date, then ticker (tickers are sorted)
    data: dict[str, object] = {"date": dates[r], "ticker": np.asarray(tickers, dtype=object)[c]}
    for name, grid in columns.items():
        data[name] = pl.Series(name, grid[r, c]).fill_nan(None)
    return pl.DataFrame(data)


def quality_warnings(dates: np.ndarray, tickers: Sequence[str], open_: np.ndarray,
                     close: np.ndarray, volume: np.ndarray, present: np.ndarray,
                     ) -> tuple[dict[str, int], dict[str, str]]:
    """(counts, listings) of the rules of :data:`WARNINGS` on a validated panel's (T, N)
    grids: ``present`` marks the (date, ticker) rows the input had; NaN in a field is a
    missing value (or an absent row).  "The previous close" of a row is its ticker's
    previous *present* row's close, as in the long frame.  Linear in T·N apart from one sort
    per date for the market's median move."""
    T, N = close.shape
    has_close = present & ~np.isnan(close)
    last = np.maximum.accumulate(np.where(present, np.arange(T)[:, None], -1), axis=0)
    prev_row = np.vstack([np.full((1, N), -1), last[:-1]])
    with_prev = present & (prev_row >= 0)
    prev = np.full((T, N), np.nan)
    prev[with_prev] = close[prev_row[with_prev], np.nonzero(with_prev)[1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(np.isnan(open_), close, open_) / prev - 1.0
    gap[~present] = np.nan
    mkt = np.broadcast_to(_median_rows(gap)[:, None], (T, N))
    with np.errstate(invalid="ignore"):
        jumps = (np.abs(gap - mkt) > SPLIT_JUMP) & (np.abs(mkt) <= MARKET_CALM)
    hits = {"unadjusted-split": _hits(dates, tickers, jumps, open=open_, _prev=prev, _gap=gap,
                                      _mkt=mkt),
            "zero-volume": _hits(dates, tickers, has_close & (volume == 0.0), close=close),
            "missing-open": _hits(dates, tickers, has_close & np.isnan(open_), close=close),
            "missing-close": _hits(dates, tickers, present & np.isnan(close) & ~np.isnan(open_),
                                   open=open_)}
    per_day = np.count_nonzero(has_close, axis=1)
    days = per_day > 0  # a session with no close is not a session of the priced rows
    median_day = float(np.median(per_day[days])) if days.any() else 0.0
    short = SHORT_HISTORY if int(days.sum()) >= SHORT_HISTORY else 0  # not on a short panel
    per_ticker = np.count_nonzero(has_close, axis=0)
    priced = np.nonzero(per_ticker > 0)[0]
    first = np.argmax(has_close, axis=0)
    final = T - 1 - np.argmax(has_close[::-1], axis=0)
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
                   ) -> tuple[dict[str, int], dict[str, str]]:
    """(counts, listings) from each rule's hit rows (in :data:`WARNINGS` order; a rule with
    no row is left out): ``[rule] TICKER DATE: detail; …`` with the first rows listed."""
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
    for rule in WARNINGS:
        rows = hits.get(rule)
        if rows is not None and rows.height:
            counts[rule] = rows.height
            lines[rule] = f"[{rule}] " + _listing(rows, describe[rule], rows.height)
    return counts, lines
