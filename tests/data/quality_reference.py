"""The data-quality warnings as first written: polars window expressions over the long frame.

A second implementation for tests only: ``gymkit.data.quality`` now computes the same warnings
on the pivoted (T, N) grids, and must select the same rows (test_quality_grid.py); both
write them with ``warning_report``.
"""

from __future__ import annotations

import polars as pl

from gymkit.data.quality import MARKET_CALM, SHORT_HISTORY, SPLIT_JUMP, THIN_SESSION, warning_report


def quality_warnings(frame: pl.DataFrame) -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    """(counts, listings, brief listings) of the rules of :data:`WARNINGS` on a clean long frame.

    ``frame`` is sorted by (date, ticker) with Float64 price columns (``validate_long``'s
    output, after any corporate-action adjustment).
    """
    prev = pl.col("close").shift(1).over("ticker", order_by="date")
    df = frame.with_columns((pl.coalesce("open", "close") / prev - 1.0).alias("_gap"),
                            prev.alias("_prev"))
    df = df.with_columns(pl.col("_gap").median().over("date").alias("_mkt"))
    jumps = df.filter(((pl.col("_gap") - pl.col("_mkt")).abs() > SPLIT_JUMP)
                      & (pl.col("_mkt").abs() <= MARKET_CALM))
    hits = {"unadjusted-split": jumps,
            "zero-volume": df.filter((pl.col("volume") == 0.0) & pl.col("close").is_not_null()),
            "missing-open": df.filter(pl.col("open").is_null() & pl.col("close").is_not_null()),
            "missing-close": df.filter(pl.col("close").is_null() & pl.col("open").is_not_null())}
    priced = frame.filter(pl.col("close").is_not_null())
    per_ticker = priced.group_by("ticker", maintain_order=True).agg(
        pl.len().alias("_n"), pl.col("date").first().alias("date"),
        pl.col("date").last().alias("_last"))
    per_day = priced.group_by("date", maintain_order=True).agg(pl.len().alias("_n"))
    median_day = float(per_day.get_column("_n").median() or 0.0)
    short = SHORT_HISTORY if per_day.height >= SHORT_HISTORY else 0  # not on a short panel
    hits["short-history"] = per_ticker.filter(pl.col("_n") < short).sort("date", "ticker")
    hits["thin-session"] = (per_day.filter(pl.col("_n") < THIN_SESSION * median_day).sort("date")
                            .with_columns(pl.lit("(all)").alias("ticker")))
    return warning_report(hits, median_day)
