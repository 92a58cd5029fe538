"""Backward adjustment of raw OHLCV for splits and cash dividends.

Convention (the one Alpha Vantage, Yahoo and CRSP use; checked against the real
file's ``adj_close``): prices are adjusted *backwards* so the most recent row is
unchanged and every earlier row is scaled by the product of the event factors of
all later ex-dates.  For an ex-date ``t`` with split coefficient ``s_t`` (7.0 for a
7-for-1 split, 1.0 on ordinary days) and cash dividend ``D_t`` per post-event share:

    f_t = (1 / s_t) * (1 - D_t * s_t / C_{t-1})

where ``C_{t-1}`` is the last raw close before ``t``.  The adjusted price of row ``u``
is ``raw_u * prod_{t > u} f_t``; adjusted volume is ``raw_volume_u * prod_{t > u} s_t``
(splits only: a dividend does not change the share count).  A dividend with no
earlier close in the listing (first row) cannot be priced and is ignored.
"""

from __future__ import annotations

import polars as pl

from gymkit.data.panel import PRICE_FIELDS

#: Optional corporate-action columns of the long schema.
ACTION_COLUMNS: tuple[str, ...] = ("split", "dividend")


def action_factors(frame: pl.DataFrame) -> pl.DataFrame:
    """Return ``frame`` (rows in date order within each ticker) with two added columns.

    ``price_factor`` (multiply raw open/high/low/close by it) and ``volume_factor``
    (multiply raw volume by it).  ``split`` null -> 1, ``dividend`` null -> 0; the
    caller has already validated split > 0 and dividend >= 0 and sorted the rows by
    date (any ticker interleaving: windows run per ticker in row order).
    """
    split = pl.col("split").fill_null(1.0) if "split" in frame.columns else pl.lit(1.0)
    div = pl.col("dividend").fill_null(0.0) if "dividend" in frame.columns else pl.lit(0.0)
    prev_close = pl.col("close").fill_nan(None).forward_fill().shift(1).over("ticker")
    div_factor = (
        pl.when(div > 0.0).then(1.0 - div * split / prev_close).otherwise(1.0).fill_null(1.0)
    )
    return (
        frame.with_columns(_f=div_factor / split, _s=split)
        .with_columns(
            price_factor=pl.col("_f")
            .cum_prod(reverse=True)
            .shift(-1, fill_value=1.0)
            .over("ticker"),
            volume_factor=pl.col("_s")
            .cum_prod(reverse=True)
            .shift(-1, fill_value=1.0)
            .over("ticker"),
        )
        .drop("_f", "_s")
    )


def adjust_corporate_actions(frame: pl.DataFrame) -> pl.DataFrame:
    """Return the long ``frame`` with split- and dividend-adjusted OHLC and split-adjusted volume.

    Input: columns ``date, ticker, open, high, low, close, volume`` plus ``split`` and/or
    ``dividend``, rows in date order within each ticker (validated long input is sorted
    by date, then ticker).  Output: same rows in the same order, prices and volume
    replaced by adjusted values (volume as float64), ``split``/``dividend`` dropped.
    Other columns pass through unchanged.
    """
    present = [c for c in ACTION_COLUMNS if c in frame.columns]
    if not present:
        return frame
    out = action_factors(frame).with_columns(
        *[(pl.col(c) * pl.col("price_factor")).alias(c) for c in PRICE_FIELDS],
        (pl.col("volume").cast(pl.Float64) * pl.col("volume_factor")).alias("volume"),
    )
    return out.drop("price_factor", "volume_factor", *present)
