"""The data-quality warnings as first written: polars window expressions over the long frame.

A second implementation for tests only: ``gymkit.data.quality`` now computes the same warnings
on the pivoted (T, N) grids, and must give the same counts and lines (test_quality_grid.py).
"""

from __future__ import annotations

import polars as pl

from gymkit.data.quality import MARKET_CALM, SHORT_HISTORY, SPLIT_JUMP, THIN_SESSION
from gymkit.data.validate import MAX_LISTED_ROWS, _fmt


def _listing(rows: pl.DataFrame, describe: object, n: int) -> str:
    parts = [f"{r['ticker']} {r['date']}: {describe(r)}"  # type: ignore[operator]
             for r in rows.head(MAX_LISTED_ROWS).iter_rows(named=True)]
    shown = f"{len(parts)} of {n} rows shown" if n > len(parts) else f"{n} row{'s' * (n > 1)}"
    return "; ".join(parts) + f" ({shown})"


def quality_warnings(frame: pl.DataFrame) -> tuple[dict[str, int], dict[str, str]]:
    """(counts, listings) of the rules of :data:`WARNINGS` on a clean long frame.

    ``frame`` is sorted by (date, ticker) with Float64 price columns (``validate_long``'s
    output, after any corporate-action adjustment).
    """
    counts: dict[str, int] = {}
    lines: dict[str, str] = {}
    prev = pl.col("close").shift(1).over("ticker", order_by="date")
    df = frame.with_columns((pl.coalesce("open", "close") / prev - 1.0).alias("_gap"),
                            prev.alias("_prev"))
    df = df.with_columns(pl.col("_gap").median().over("date").alias("_mkt"))
    jumps = df.filter(((pl.col("_gap") - pl.col("_mkt")).abs() > SPLIT_JUMP)
                      & (pl.col("_mkt").abs() <= MARKET_CALM))
    checks = [
        ("unadjusted-split", jumps, lambda r: (
            f"open {_fmt(r['open'])} after close {_fmt(r['_prev'])} ({r['_gap']:+.0%}, market "
            f"{r['_mkt']:+.1%})")),
        ("zero-volume", df.filter((pl.col("volume") == 0.0) & pl.col("close").is_not_null()),
         lambda r: f"volume 0 with close {_fmt(r['close'])}"),
        ("missing-open", df.filter(pl.col("open").is_null() & pl.col("close").is_not_null()),
         lambda r: f"no open, close {_fmt(r['close'])}"),
    ]
    priced = frame.filter(pl.col("close").is_not_null())
    per_ticker = priced.group_by("ticker", maintain_order=True).agg(
        pl.len().alias("_n"), pl.col("date").first().alias("date"),
        pl.col("date").last().alias("_last"))
    per_day = priced.group_by("date", maintain_order=True).agg(pl.len().alias("_n"))
    median_day = float(per_day.get_column("_n").median() or 0.0)
    short = SHORT_HISTORY if per_day.height >= SHORT_HISTORY else 0  # not on a short panel
    checks += [
        ("short-history", per_ticker.filter(pl.col("_n") < short).sort("date", "ticker"),
         lambda r: f"only {r['_n']} session(s) with a close ({r['date']}..{r['_last']})"),
        ("thin-session", per_day.filter(pl.col("_n") < THIN_SESSION * median_day).sort("date")
         .with_columns(pl.lit("(all)").alias("ticker")),
         lambda r: f"{r['_n']} ticker(s) with a close, the median session has {median_day:g}"),
    ]
    for rule, hits, describe in checks:
        if hits.height:
            counts[rule] = hits.height
            lines[rule] = f"[{rule}] " + _listing(hits, describe, hits.height)
    return counts, lines
