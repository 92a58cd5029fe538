"""The real 46-stock panel from ../shared/data/real (skipped where that data is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gymkit.data.calendar import non_sessions
from gymkit.data.loaders import load_panel_with_report
from gymkit.data.real import (
    REAL_46_TICKERS,
    REAL_DATA_ENV,
    REAL_DATA_PATH,
    real_data_path,
    real_panel,
    select_large_caps,
)

GICS_SECTORS = {
    "Communication Services", "Consumer Discretionary", "Consumer Staples", "Energy",
    "Financials", "Health Care", "Industrials", "Information Technology", "Materials",
    "Real Estate", "Utilities",
}  # fmt: skip


def test_missing_file_error_names_the_path(tmp_path, monkeypatch):
    missing = tmp_path / "absent.csv.gz"
    with pytest.raises(FileNotFoundError, match=r"absent\.csv\.gz.*fresh clone"):
        real_panel(missing)
    monkeypatch.setenv(REAL_DATA_ENV, str(missing))
    assert real_data_path() == missing
    with pytest.raises(FileNotFoundError, match=REAL_DATA_ENV):
        real_panel()


def test_default_path_is_beside_the_project():
    assert REAL_DATA_PATH.parts[-4:] == (
        "shared",
        "data",
        "real",
        "sp500_av_2012_2021_ohlcv.csv.gz",
    )
    assert REAL_DATA_PATH.parents[3] == Path(__file__).resolve().parents[3]


@pytest.mark.real
def test_shape_tickers_and_sessions(real46):
    assert (real46.T, real46.N) == (2236, 46)
    assert real46.tickers == tuple(sorted(REAL_46_TICKERS))
    assert str(real46.dates[0]) == "2012-06-01" and str(real46.dates[-1]) == "2021-04-21"
    assert not non_sessions(real46.dates).any()
    for name in ("open", "high", "low", "close", "volume"):
        assert np.isfinite(real46.field(name)).all(), name
    assert real46.cap is None


@pytest.mark.real
def test_selection_rule_reproduces_the_documented_tickers(real_frame):
    assert select_large_caps(real_frame, 46) == list(REAL_46_TICKERS)
    assert select_large_caps(real_frame, 5) == list(REAL_46_TICKERS[:5])


@pytest.mark.real
def test_cached_per_path_and_n(real46, real_path):
    assert real_panel(real_path) is real46
    assert real_panel(real_path, n=46) is real46


@pytest.mark.real
def test_adjusted_panel_is_valid_ohlc(real46):
    assert (real46.low <= np.minimum(real46.open, real46.close) * (1 + 1e-12)).all()
    assert (real46.high >= np.maximum(real46.open, real46.close) * (1 - 1e-12)).all()
    assert (real46.close > 0).all()


@pytest.mark.real
@pytest.mark.parametrize(
    ("ticker", "day", "ratio"),
    [
        ("AAPL", "2014-06-09", 7),
        ("AAPL", "2020-08-31", 4),
        ("NFLX", "2015-07-15", 7),
        ("V", "2015-03-19", 4),
    ],
)
def test_splits_give_normal_returns(real46, real_frame, ticker, day, ratio):
    j = real46.tickers.index(ticker)
    i = int(np.searchsorted(real46.dates, np.datetime64(day)))
    assert abs(real46.field("returns")[i, j]) < 0.1  # raw close falls by ~1 - 1/ratio
    raw = real_frame.filter(pl.col("ticker") == ticker).sort("date")
    raw_ret = raw["close"][i] / raw["close"][i - 1] - 1
    assert raw_ret < -(1 - 1 / ratio) + 0.1
    # adjusted volume: shares before the split are scaled up by the ratio
    vol_raw_before = raw["volume"][i - 1]
    assert real46.volume[i - 1, j] / vol_raw_before == pytest.approx(
        np.prod(raw["split"].to_numpy()[i:]), rel=1e-9
    )


@pytest.mark.real
def test_no_absurd_adjusted_returns(real46):
    r = real46.field("returns")[1:]
    assert np.nanmax(np.abs(r)) < 0.6  # worst real day in the 46: OXY -52% on 2020-03-09


@pytest.mark.real
def test_adjusted_close_tracks_vendor_adj_close(real46, real_frame):
    vendor = (
        real_frame.filter(pl.col("ticker").is_in(list(real46.tickers)))
        .pivot(on="ticker", index="date", values="adj_close")
        .sort("date")
        .select(list(real46.tickers))
        .to_numpy()
    )
    rel = np.abs(real46.close / vendor - 1.0)
    assert np.median(rel) < 1e-3
    # spin-offs (HPQ 2015, ABT 2013, EBAY 2015, OXY 2014) are priced differently by the
    # vendor; plain cash dividends and splits match to the vendor's rounding
    clean = [real46.tickers.index(t) for t in ("AAPL", "MSFT", "JNJ", "KO", "JPM", "NFLX", "V")]
    assert rel[:, clean].max() < 1e-3
    # the last row is the adjustment anchor: adjusted == raw == vendor
    assert rel[-1].max() < 1e-4


@pytest.mark.real
def test_gics_labels(real46):
    assert set(real46.sector) <= GICS_SECTORS
    assert real46.sector[real46.tickers.index("AAPL")] == "Information Technology"
    assert real46.group_codes("industry").min() >= 0 and (real46.group_codes("sector") >= 0).all()


@pytest.mark.real
def test_whole_file_loads_clean_raw(real_path):
    panel, report = load_panel_with_report(real_path)
    assert report.ok
    assert (panel.T, panel.N) == (2236, 504)
    assert int(np.isfinite(panel.close).sum()) == 1_089_371
    aapl = panel.tickers.index("AAPL")
    assert panel.close[0, aapl] == 560.99  # raw, as the README says
