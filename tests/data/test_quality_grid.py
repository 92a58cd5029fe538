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


def test_many_split_hits_and_a_wide_panel_equal_the_long_frame_definition() -> None:
    """More unadjusted-split hits than the compiled scan's first buffer (64) holds, on a panel
    wider than the hypothesis cases: 12 of 40 tickers halve on each of 7 days (84 hits) while
    the market's median move stays calm, with missing opens and zero volumes besides."""
    tickers = tuple(f"S{i:02d}" for i in range(40))
    frame = build_long(tickers=tickers, days=80, seed=7)
    dates = frame.get_column("date").unique().sort()
    factor = pl.lit(1.0)
    for k in range(7):
        factor = factor * pl.when(pl.col("date") >= dates[10 * (k + 1)]).then(0.5).otherwise(1.0)
    hit = pl.col("ticker").is_in(list(tickers[:12]))
    frame = frame.with_columns(*(pl.when(hit).then(pl.col(c) * factor).otherwise(pl.col(c)).alias(c)
                                 for c in ("open", "high", "low", "close")))
    rng = np.random.default_rng(3)
    h = frame.height
    frame = frame.with_columns(
        pl.when(pl.Series(rng.uniform(size=h)) < 0.02).then(None).otherwise(pl.col("open")).alias("open"),
        pl.when(pl.Series(rng.uniform(size=h)) < 0.02).then(0.0).otherwise(pl.col("volume")).alias("volume"))
    clean, _ = validate_long(frame, strict=False, calendar_check=False)
    counts, lines, brief = _grid_warnings(clean)
    assert counts["unadjusted-split"] == 84
    assert (counts, lines, brief) == reference(clean)
    # every hit, not only the 20 listed: the split days x the 12 tickers, in (date, ticker) order
    from gymkit.data.quality import MARKET_CALM, SPLIT_JUMP, _scan

    panel, present = _pivot(clean)
    _, jr, jc, jprev, jgap, *_ = _scan(panel.open, panel.close, panel.volume, present,
                                       SPLIT_JUMP, MARKET_CALM)
    assert list(zip(jr.tolist(), jc.tolist(), strict=True)) == [
        (10 * (k + 1), j) for k in range(7) for j in range(12)]
    assert np.all(jgap < -0.4) and np.all(jprev > 0)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=False, width=64).map(lambda v: v + 0.0),
                                 st.sampled_from([0.0, 1.0, -1.0, 0.5])), max_size=90))
def test_row_median_is_the_sorted_definition(values) -> None:
    """The scan's selection gives the median of the sorted values, polars' interpolation
    (lower + (upper − lower) · 0.5), bit for bit: duplicates, infinities, any order.  No −0.0
    (``v + 0.0``): the scan's gaps x / prev − 1 never are, and a sort leaves ±0's order open."""
    from gymkit.data.quality import _row_median

    k = len(values)
    s = np.sort(np.array(values, dtype=np.float64))
    if k == 0:
        want = np.nan
    elif k % 2:
        want = s[(k - 1) // 2]
    else:
        lo, hi = s[(k - 1) // 2], s[k // 2]
        with np.errstate(invalid="ignore", over="ignore"):
            want = lo + (hi - lo) * 0.5
    got = _row_median(np.array([*values, 7.0], dtype=np.float64), k)  # a value past k is ignored
    assert (np.isnan(got) and np.isnan(want)) or (np.float64(got).view(np.uint64)
                                                  == np.float64(want).view(np.uint64))
