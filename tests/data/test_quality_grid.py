"""The data-quality warnings on the (T, N) grids equal the long-frame definition, line for line."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.data.loaders import _pivot
from gymkit.data.quality import quality_warnings
from gymkit.data.validate import validate_long

from .conftest import build_long
from .quality_reference import quality_warnings as reference


def _grid_warnings(clean: pl.DataFrame):
    panel, present = _pivot(clean)
    return quality_warnings(panel.dates, panel.tickers, panel.open, panel.close, panel.volume,
                            present)


@settings(max_examples=60, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(n=st.integers(2, 6), days=st.sampled_from([5, 40, 70]), seed=st.integers(0, 2**16),
       drop=st.floats(0.0, 0.5), no_open=st.floats(0.0, 0.2), no_close=st.floats(0.0, 0.2),
       zero_volume=st.floats(0.0, 0.1), split=st.booleans(), thin_day=st.booleans(),
       close_only=st.floats(0.0, 0.1))
def test_grid_warnings_equal_the_long_frame_definition(n, days, seed, drop, no_open, no_close,
                                                       zero_volume, split, thin_day, close_only):
    rng = np.random.default_rng(seed)
    tickers = tuple(f"T{i}" for i in range(n))
    frame = build_long(tickers=tickers, days=days, seed=seed)
    h = frame.height
    r = pl.Series(rng.uniform(size=h))
    frame = frame.with_columns(
        pl.when(pl.Series(rng.uniform(size=h)) < no_open).then(None).otherwise(pl.col("open")).alias("open"),
        pl.when(pl.Series(rng.uniform(size=h)) < zero_volume).then(0.0).otherwise(pl.col("volume")).alias("volume"))
    if split:  # an unadjusted 1:3 split of the first ticker half-way
        half = frame.get_column("date").unique().sort()[days // 2]
        hit = (pl.col("ticker") == tickers[0]) & (pl.col("date") >= half)
        frame = frame.with_columns(*(pl.when(hit).then(pl.col(c) / 3.0).otherwise(pl.col(c)).alias(c)
                                     for c in ("open", "high", "low", "close")))
    keep = r >= drop
    if thin_day:  # one session where only the first ticker trades
        d = frame.get_column("date").unique().sort()[days - 1]
        keep = keep & ~((frame.get_column("date") == d) & (frame.get_column("ticker") != tickers[0]))
    frame = frame.filter(keep)
    # a missing close: every price of the row missing (a row with a volume only)
    gone = pl.Series(rng.uniform(size=frame.height)) < no_close
    frame = frame.with_columns(*(pl.when(gone).then(None).otherwise(pl.col(c)).alias(c)
                                 for c in ("open", "high", "low", "close")))
    # a close alone missing (a vendor's partial bar: open, high, low and volume kept)
    part = pl.Series(rng.uniform(size=frame.height)) < close_only
    frame = frame.with_columns(pl.when(part).then(None).otherwise(pl.col("close")).alias("close"))
    if frame.get_column("ticker").n_unique() < 2:
        return
    clean, _ = validate_long(frame, strict=False, calendar_check=False)
    assert _grid_warnings(clean) == reference(clean)


def test_each_rule_fires_on_the_grid_as_on_the_long_frame():
    """One frame where every rule fires: the same counts and the same listed lines."""
    frame = build_long(tickers=("A", "B", "C", "D"), days=70, seed=3)
    d = frame.get_column("date").unique().sort()
    frame = frame.filter(~((pl.col("ticker") == "D") & (pl.col("date") > d[30])))  # short history
    frame = frame.filter(~((pl.col("date") == d[10]) & (pl.col("ticker") != "A")))  # thin session
    hit = (pl.col("ticker") == "B") & (pl.col("date") >= d[40])
    frame = frame.with_columns(*(pl.when(hit).then(pl.col(c) / 2.0).otherwise(pl.col(c)).alias(c)
                                 for c in ("open", "high", "low", "close")))
    i = pl.int_range(pl.len())
    frame = frame.with_columns(pl.when(i == 5).then(0.0).otherwise(pl.col("volume")).alias("volume"),
                               pl.when(i == 7).then(None).otherwise(pl.col("open")).alias("open"),
                               pl.when(i == 9).then(None).otherwise(pl.col("close")).alias("close"))
    clean, _ = validate_long(frame, strict=False, calendar_check=False)
    got = _grid_warnings(clean)
    assert set(got[0]) == {"unadjusted-split", "zero-volume", "missing-open", "missing-close",
                           "short-history", "thin-session"}
    assert got[0]["missing-close"] == 1 and ", no close (1 row)" in got[1]["missing-close"]
    assert got == reference(clean)
