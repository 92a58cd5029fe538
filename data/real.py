"""The real US large-cap panel from ``../shared/data/real`` (calibration, tests, benchmarks).

The file is the user's data, never shipped with gymkit.  :func:`real_panel` reads it
with polars (no Python loops over rows), keeps NYSE sessions only, picks ``n`` large
caps by the rule below, and returns split- and dividend-adjusted OHLC with
split-adjusted volume (through :func:`gymkit.data.loaders.load_panel` with
``adjust=True``, so the strict validation rules apply too).

Selection rule (deterministic, ranked on early data only to limit look-ahead):
  1. eligible = tickers with one valid row on *every* session of the file: prices
     finite and > 0, low <= min(open, close), high >= max(open, close), volume > 0;
  2. rank eligible tickers by the median raw dollar volume (close * volume, unadjusted)
     over the file's FIRST 252 sessions, highest first, ties broken by ticker;
  3. keep the top ``n``.
On the shared file (2,236 sessions 2012-06-01 .. 2021-04-21, 457 eligible tickers)
n=46 gives :data:`REAL_46_TICKERS`.

Group labels: the file has none.  ``sector`` and ``industry`` come from the static
GICS table below (classification as of April 2021, the end of the file: after the
2018 Communication Services reshuffle, before the 2023 move of payment firms such
as V to Financials).  They are attached only when every selected ticker is in the
table; otherwise both are None.  No ``cap`` field (the file has no share counts).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

from gymkit.data.calendar import non_sessions
from gymkit.data.loaders import load_panel
from gymkit.data.panel import Panel

REAL_DATA_FILENAME = "sp500_av_2012_2021_ohlcv.csv.gz"
#: Environment variable that overrides the real file's location.
REAL_DATA_ENV = "GYMKIT_REAL_DATA"
#: Default location: ``<project root>/../shared/data/real/<file>`` (absent in a fresh clone).
REAL_DATA_PATH: Path = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "real" / REAL_DATA_FILENAME
)

#: Sessions at the start of the file used to rank tickers by dollar volume.
SELECTION_SESSIONS = 252

#: The 46 tickers the rule selects from the shared file, in rank order (documentation; tested).
REAL_46_TICKERS: tuple[str, ...] = (
    "AAPL", "GOOGL", "BAC", "MSFT", "C", "XOM", "JPM", "FB", "INTC", "T", "GE", "WFC",
    "PFE", "JNJ", "AMZN", "IBM", "CSCO", "ORCL", "QCOM", "CVX", "PG", "AIG", "VZ", "WMT",
    "CAT", "ABT", "MRK", "KO", "FCX", "GS", "EBAY", "MCD", "HD", "BKNG", "SLB", "CMCSA",
    "F", "DIS", "V", "PM", "HAL", "GILD", "OXY", "NFLX", "HPQ", "BRK.B",
)  # fmt: skip

_IT, _CS, _FIN, _EN, _HC = (
    "Information Technology", "Communication Services", "Financials", "Energy", "Health Care",
)  # fmt: skip
_CD, _ST, _IND, _MAT = "Consumer Discretionary", "Consumer Staples", "Industrials", "Materials"

#: ticker -> (GICS sector, GICS industry), as of April 2021.
GICS_2021: dict[str, tuple[str, str]] = {
    "AAPL": (_IT, "Technology Hardware, Storage & Peripherals"),
    "GOOGL": (_CS, "Interactive Media & Services"),
    "BAC": (_FIN, "Banks"),
    "MSFT": (_IT, "Software"),
    "C": (_FIN, "Banks"),
    "XOM": (_EN, "Oil, Gas & Consumable Fuels"),
    "JPM": (_FIN, "Banks"),
    "FB": (_CS, "Interactive Media & Services"),
    "INTC": (_IT, "Semiconductors & Semiconductor Equipment"),
    "T": (_CS, "Diversified Telecommunication Services"),
    "GE": (_IND, "Industrial Conglomerates"),
    "WFC": (_FIN, "Banks"),
    "PFE": (_HC, "Pharmaceuticals"),
    "JNJ": (_HC, "Pharmaceuticals"),
    "AMZN": (_CD, "Internet & Direct Marketing Retail"),
    "IBM": (_IT, "IT Services"),
    "CSCO": (_IT, "Communications Equipment"),
    "ORCL": (_IT, "Software"),
    "QCOM": (_IT, "Semiconductors & Semiconductor Equipment"),
    "CVX": (_EN, "Oil, Gas & Consumable Fuels"),
    "PG": (_ST, "Household Products"),
    "AIG": (_FIN, "Insurance"),
    "VZ": (_CS, "Diversified Telecommunication Services"),
    "WMT": (_ST, "Food & Staples Retailing"),
    "CAT": (_IND, "Machinery"),
    "ABT": (_HC, "Health Care Equipment & Supplies"),
    "MRK": (_HC, "Pharmaceuticals"),
    "KO": (_ST, "Beverages"),
    "FCX": (_MAT, "Metals & Mining"),
    "GS": (_FIN, "Capital Markets"),
    "EBAY": (_CD, "Internet & Direct Marketing Retail"),
    "MCD": (_CD, "Hotels, Restaurants & Leisure"),
    "HD": (_CD, "Specialty Retail"),
    "BKNG": (_CD, "Internet & Direct Marketing Retail"),
    "SLB": (_EN, "Energy Equipment & Services"),
    "CMCSA": (_CS, "Media"),
    "F": (_CD, "Automobiles"),
    "DIS": (_CS, "Entertainment"),
    "V": (_IT, "IT Services"),
    "PM": (_ST, "Tobacco"),
    "HAL": (_EN, "Energy Equipment & Services"),
    "GILD": (_HC, "Biotechnology"),
    "OXY": (_EN, "Oil, Gas & Consumable Fuels"),
    "NFLX": (_CS, "Entertainment"),
    "HPQ": (_IT, "Technology Hardware, Storage & Peripherals"),
    "BRK.B": (_FIN, "Diversified Financial Services"),
}

_SCHEMA = {
    "date": pl.Date,
    "ticker": pl.String,
    "open": pl.Float64,
    "high": pl.Float64,
    "low": pl.Float64,
    "close": pl.Float64,
    "volume": pl.Float64,
    "adj_close": pl.Float64,
    "dividend": pl.Float64,
    "split": pl.Float64,
}


def real_data_path(path: str | Path | None = None) -> Path:
    """Return the real file's path: ``path`` if given, else $GYMKIT_REAL_DATA, else :data:`REAL_DATA_PATH`."""
    if path is not None:
        return Path(path)
    env = os.environ.get(REAL_DATA_ENV)
    return Path(env) if env else REAL_DATA_PATH


def read_real_frame(path: str | Path | None = None) -> pl.DataFrame:
    """Read the whole real file as a raw long polars frame (NYSE sessions only, sorted by date, ticker).

    Raises ``FileNotFoundError`` with the looked-up path when the file is absent.
    """
    p = real_data_path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"real data not found at {p} (../shared is not part of a fresh clone; "
            f"set ${REAL_DATA_ENV} to its location)"
        )
    frame = pl.read_csv(p, schema_overrides=_SCHEMA)
    days = frame.get_column("date").unique().sort()
    bad = days.filter(pl.Series(non_sessions(days.to_numpy().astype("datetime64[D]"))))
    if bad.len():
        frame = frame.filter(~pl.col("date").is_in(bad.implode()))
    return frame.sort("date", "ticker")


def select_large_caps(frame: pl.DataFrame, n: int) -> list[str]:
    """Return the ``n`` tickers of the module's selection rule, in rank order (see module doc)."""
    dates = frame.get_column("date").unique().sort()
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    cutoff = dates[min(SELECTION_SESSIONS, dates.len()) - 1]
    valid = (
        pl.min_horizontal("open", "high", "low", "close").gt(0.0)
        & pl.max_horizontal("open", "high", "low", "close").is_finite()
        & (pl.col("high") >= pl.max_horizontal("open", "close"))
        & (pl.col("low") <= pl.min_horizontal("open", "close"))
        & (pl.col("volume") > 0.0)
    )
    ranked = (
        frame.group_by("ticker")
        .agg(
            n_valid=valid.sum(),
            n_dates=pl.col("date").n_unique(),
            n_rows=pl.len(),
            dollar=(pl.col("close") * pl.col("volume")).filter(pl.col("date") <= cutoff).median(),
        )
        .filter((pl.col("n_valid") == dates.len()) & (pl.col("n_rows") == dates.len()))
        .filter(pl.col("n_dates") == dates.len())
        .sort(["dollar", "ticker"], descending=[True, False])
    )
    if ranked.height < n:
        raise ValueError(
            f"only {ranked.height} tickers have a complete valid history; asked for {n}"
        )
    return ranked.get_column("ticker").head(n).to_list()


def real_panel(path: str | Path | None = None, n: int = 46) -> Panel:
    """Return the adjusted real panel of the ``n`` selected large caps (cached per path and n).

    Columns sorted by ticker; rows = every NYSE session of the file.  Raises
    ``FileNotFoundError`` when the file is absent (see :func:`real_data_path`).
    """
    return _real_panel(str(real_data_path(path).resolve()), int(n))


@lru_cache(maxsize=4)
def _real_panel(path: str, n: int) -> Panel:
    frame = read_real_frame(path)
    chosen = select_large_caps(frame, n)
    sub = frame.filter(pl.col("ticker").is_in(chosen))
    if all(t in GICS_2021 for t in chosen):
        sub = sub.with_columns(
            sector=pl.col("ticker").replace_strict({t: GICS_2021[t][0] for t in chosen}),
            industry=pl.col("ticker").replace_strict({t: GICS_2021[t][1] for t in chosen}),
        )
    panel = load_panel(sub, layout="long", strict=True, adjust=True)
    if not np.isfinite(panel.close).all():  # the rule admits only complete histories
        raise ValueError(f"real panel from {path} has missing closes after selection")
    return panel
