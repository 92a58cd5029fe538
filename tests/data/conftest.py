"""Shared fixtures for the data-layer tests: small deterministic long frames and the real panel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gymkit.data.calendar import nyse_sessions

LongFactory = Callable[..., pl.DataFrame]


def build_long(
    tickers: tuple[str, ...] = ("AAA", "BBB", "CCC"),
    start: str = "2014-06-02",
    days: int = 6,
    seed: int = 0,
    groups: bool = False,
    cap: bool = False,
) -> pl.DataFrame:
    """A valid long frame on NYSE sessions, sorted by (date, ticker), OHLC consistent."""
    rng = np.random.default_rng(seed)
    dates = nyse_sessions(start, np.datetime64(start, "D") + 4 * days)[:days]
    t, n = dates.size, len(tickers)
    close = 50.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (t, n)), axis=0))
    open_ = close * np.exp(rng.normal(0.0, 0.01, (t, n)))
    high = np.maximum(open_, close) * (1.0 + rng.uniform(0.0, 0.02, (t, n)))
    low = np.minimum(open_, close) * (1.0 - rng.uniform(0.0, 0.02, (t, n)))
    volume = np.round(rng.uniform(1e5, 1e6, (t, n)))
    cols: dict[str, object] = {
        "date": np.repeat(dates, n),
        "ticker": np.tile(np.array(tickers), t),
        "open": open_.ravel(),
        "high": high.ravel(),
        "low": low.ravel(),
        "close": close.ravel(),
        "volume": volume.ravel(),
    }
    if cap:
        cols["cap"] = (close * 1e7).ravel()
    frame = pl.DataFrame(cols).with_columns(pl.col("date").cast(pl.Date))
    if groups:
        sectors = {tk: f"S{i % 2}" for i, tk in enumerate(tickers)}
        industries = {tk: f"I{i % 3}" for i, tk in enumerate(tickers)}
        frame = frame.with_columns(
            sector=pl.col("ticker").replace_strict(sectors),
            industry=pl.col("ticker").replace_strict(industries),
        )
    return frame


@pytest.fixture
def make_long() -> LongFactory:
    """Factory for small valid long frames (see :func:`build_long`)."""
    return build_long


@pytest.fixture(scope="session")
def real_path() -> Path:
    """Path of the shared real file; skips the test where it is absent."""
    from gymkit.data.real import real_data_path

    path = real_data_path()
    if not path.is_file():
        pytest.skip(f"real data not found at {path} (../shared is not part of a fresh clone)")
    return path


@pytest.fixture(scope="session")
def real46(real_path: Path):
    """The 46-stock adjusted real panel, built once per session."""
    from gymkit.data.real import real_panel

    return real_panel(real_path)


@pytest.fixture(scope="session")
def real_frame(real_path: Path) -> pl.DataFrame:
    """The whole raw real file as a polars frame, read once per session."""
    from gymkit.data.real import read_real_frame

    return read_real_frame(real_path)
