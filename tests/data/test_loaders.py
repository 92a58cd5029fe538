"""Loaders: long/wide, CSV/Parquet, pandas/polars all give the same panel; gaps; adjustment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.data import load_panel as exported_load_panel
from gymkit.data.corporate_actions import adjust_corporate_actions
from gymkit.data.loaders import WIDE_SEPARATOR, load_panel, load_panel_with_report
from gymkit.data.validate import ValidationError


def _with_gaps(frame: pl.DataFrame) -> pl.DataFrame:
    """Drop a few (date, ticker) rows: a late listing and a mid-history hole."""
    idx = pl.int_range(pl.len())
    return frame.filter(~idx.is_in([0, 3, 7]))


def _to_wide(frame: pl.DataFrame) -> pl.DataFrame:
    fields = [c for c in frame.columns if c not in ("date", "ticker")]
    wide = frame.pivot(on="ticker", index="date", values=fields, separator=WIDE_SEPARATOR)
    if len(fields) == 1:  # polars names single-field columns by ticker only
        wide = wide.rename(
            {c: f"{fields[0]}{WIDE_SEPARATOR}{c}" for c in wide.columns if c != "date"}
        )
    return wide.sort("date")


@pytest.fixture
def long_frame(make_long) -> pl.DataFrame:
    return _with_gaps(make_long(days=7, groups=True, cap=True))


def test_exported_from_package():
    assert exported_load_panel is load_panel


def test_long_pivot_shape_sorting_and_gaps(long_frame):
    p = load_panel(long_frame)
    assert p.tickers == ("AAA", "BBB", "CCC")
    assert p.T == 7 and p.dates.dtype == np.dtype("datetime64[D]")
    assert np.isnan(p.close[0, 0]) and np.isnan(p.close[1, 0]) and np.isnan(p.close[2, 1])
    assert int(np.isnan(p.close).sum()) == 3
    row = long_frame.row(0, named=True)  # BBB on the first date (AAA lists later)
    assert (
        p.close[0, 1] == row["close"]
        and p.volume[0, 1] == row["volume"]
        and p.cap[0, 1] == row["cap"]
    )
    assert p.sector == ("S0", "S1", "S0") and p.industry == ("I0", "I1", "I2")


def test_all_sources_and_layouts_give_one_fingerprint(long_frame, tmp_path):
    wide = _to_wide(long_frame)
    long_pd = long_frame.to_pandas()
    wide_pd = wide.to_pandas().set_index("date")
    wide_pd.index = pd.DatetimeIndex(wide_pd.index, name=None)
    wide_multi = wide_pd.copy()
    wide_multi.columns = pd.MultiIndex.from_tuples(
        [tuple(c.split(WIDE_SEPARATOR)) for c in wide_pd.columns]
    )
    long_frame.write_csv(tmp_path / "long.csv")
    long_frame.write_parquet(tmp_path / "long.parquet")
    wide.write_csv(tmp_path / "wide.csv")
    wide.write_parquet(tmp_path / "wide.pq")
    import gzip

    (tmp_path / "long.csv.gz").write_bytes(
        gzip.compress((tmp_path / "long.csv").read_bytes(), mtime=0)
    )
    sources = {
        "polars long": long_frame,
        "polars lazy": long_frame.lazy(),
        "polars wide": wide,
        "pandas long": long_pd,
        "pandas wide": wide_pd,
        "pandas multiindex": wide_multi,
        "csv long": tmp_path / "long.csv",
        "csv.gz long": str(tmp_path / "long.csv.gz"),
        "parquet long": tmp_path / "long.parquet",
        "csv wide": tmp_path / "wide.csv",
        "parquet wide": tmp_path / "wide.pq",
    }
    fps = {name: load_panel(src).fingerprint for name, src in sources.items()}
    assert len(set(fps.values())) == 1, fps


def test_explicit_layout_and_detection_errors(long_frame):
    assert load_panel(long_frame, layout="long").N == 3
    with pytest.raises(ValidationError, match=r"^\[missing-column\] column 'ticker'"):
        load_panel(long_frame.drop("ticker"))
    with pytest.raises(ValueError, match="layout must be"):
        load_panel(long_frame, layout="tall")  # type: ignore[arg-type]


def test_wide_rules(long_frame):
    wide = _to_wide(long_frame.select("date", "ticker", "open", "high", "low", "close", "volume"))
    with pytest.raises(ValidationError) as info:
        load_panel(wide.drop(f"volume{WIDE_SEPARATOR}BBB"))
    assert str(info.value) == (
        "[missing-column] column 'volume:BBB': wide input has close:BBB but no volume:BBB"
    )
    with pytest.raises(ValidationError) as info:
        load_panel(wide.rename({f"open{WIDE_SEPARATOR}AAA": f"opn{WIDE_SEPARATOR}AAA"}))
    assert str(info.value).startswith("[unknown-column] column 'opn:AAA': wide columns must be")
    with pytest.raises(ValidationError) as info:
        load_panel(wide[[0, 2, 1, 3, 4, 5, 6]])
    assert str(info.value) == (
        "[unsorted] 2014-06-03: row 2 comes after 2014-06-04; wide rows must be sorted by date"
    )
    _, report = load_panel_with_report(wide[[0, 2, 1, 3, 4, 5, 6]], strict=False)
    assert report.counts == {"unsorted": 1}
    with pytest.raises(ValidationError, match=r"^\[duplicate-row\] "):
        load_panel(pl.concat([wide, wide[-1:]]))


def test_unsupported_sources(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.csv"):
        load_panel(tmp_path / "nope.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match=r"unsupported panel file type 'x\.json'"):
        load_panel(tmp_path / "x.json")
    with pytest.raises(TypeError, match="cannot load a panel from int"):
        load_panel(3)


def test_csv_with_bad_text_is_reported_not_dropped(long_frame, tmp_path):
    path = tmp_path / "bad.csv"
    text = long_frame.select("date", "ticker", "open", "high", "low", "close", "volume").write_csv()
    lines = text.splitlines()
    cells = lines[2].split(",")
    cells[4] = "n/a?"  # the 'low' of the second data row
    lines[2] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    row = long_frame.row(1, named=True)
    with pytest.raises(ValidationError) as info:
        load_panel(path)
    assert (
        str(info.value)
        == f"{path}: [non-numeric] {row['ticker']} {row['date']}: low = 'n/a?' is not a number"
    )


def test_group_labels_constant_per_ticker(long_frame):
    labels = long_frame.get_column("sector").to_list()
    labels[-1] = "Other"
    bad = long_frame.with_columns(pl.Series("sector", labels))
    last = bad.row(-1, named=True)
    with pytest.raises(ValidationError) as info:
        load_panel(bad)
    assert (info.value.rule, info.value.ticker, info.value.date) == (
        "inconsistent-group",
        last["ticker"],
        str(last["date"]),
    )


def test_adjust_requires_action_columns(long_frame):
    with pytest.raises(
        ValidationError, match=r"^\[missing-column\] column 'split': adjust=True needs"
    ):
        load_panel(long_frame, adjust=True)


def test_adjust_split_and_dividend(make_long):
    frame = make_long(tickers=("AAA", "BBB"), days=4)
    # AAA: 2-for-1 split on day 2 (prices halve); BBB: $1 dividend on day 3.
    n = frame.height
    split = [1.0] * n
    div = [0.0] * n
    split[2] = 2.0  # row 2 = AAA, day index 1
    div[5] = 1.0  # row 5 = BBB, day index 2
    raw = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.col(c) * 2.0).otherwise(pl.col(c)).alias(c)
        for c in ("open", "high", "low", "close")
    ).with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.col("volume") / 2.0)
        .otherwise(pl.col("volume")),
        split=pl.Series(split),
        dividend=pl.Series(div),
    )
    raw_p = load_panel(raw)
    adj = load_panel(raw, adjust=True)
    assert raw_p.close[0, 0] == 2.0 * frame["close"][0]  # raw prices stay raw without adjust
    np.testing.assert_allclose(adj.close[:, 0], frame.filter(pl.col("ticker") == "AAA")["close"])
    np.testing.assert_allclose(adj.volume[:, 0], frame.filter(pl.col("ticker") == "AAA")["volume"])
    bbb = frame.filter(pl.col("ticker") == "BBB")["close"].to_numpy()
    factor = 1.0 - 1.0 / bbb[1]
    np.testing.assert_allclose(adj.close[:, 1], np.r_[bbb[:2] * factor, bbb[2:]])
    np.testing.assert_allclose(adj.volume[:, 1], frame.filter(pl.col("ticker") == "BBB")["volume"])


def test_adjust_keeps_row_order_and_other_columns(make_long):
    frame = make_long(days=3, groups=True).with_columns(split=pl.lit(1.0), dividend=pl.lit(0.0))
    out = adjust_corporate_actions(frame)
    assert out.select("date", "ticker", "sector").equals(frame.select("date", "ticker", "sector"))
    assert "split" not in out.columns and out.schema["volume"] == pl.Float64


@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    n_tickers=st.integers(2, 5),
    days=st.integers(1, 8),
    drop=st.sets(st.integers(0, 39), max_size=8),
    unlabelled=st.sets(st.integers(0, 39), max_size=12),
    seed=st.integers(0, 2**16),
)
def test_long_and_wide_round_trip(make_long, n_tickers, days, drop, unlabelled, seed):
    tickers = tuple(f"K{i}" for i in range(n_tickers))
    frame = make_long(tickers=tickers, days=days, seed=seed, groups=True)
    i = pl.int_range(pl.len())
    frame = frame.with_columns(pl.when(i.is_in(sorted(unlabelled))).then(None)
                               .otherwise(pl.col("sector")).alias("sector"))
    kept = frame.filter(~i.is_in(sorted(drop)))
    if kept.get_column("ticker").n_unique() < 2:
        return
    p = load_panel(kept)
    rows = np.searchsorted(p.dates, kept.get_column("date").to_numpy().astype("datetime64[D]"))
    cols = np.array([p.tickers.index(t) for t in kept.get_column("ticker")])
    np.testing.assert_array_equal(p.close[rows, cols], kept.get_column("close").to_numpy())
    assert int(np.isfinite(p.close).sum()) == kept.height
    assert not p.close.flags.writeable
    # each ticker's label: its first labelled row's, '' when none of its rows has one
    first = {}
    for t, label in kept.select("ticker", "sector").iter_rows():
        if label is not None:
            first.setdefault(t, label)
    assert p.sector == tuple(first.get(t, "") for t in p.tickers)
    assert load_panel(_to_wide(kept)).fingerprint == p.fingerprint


def test_panel_from_long_refuses_a_frame_not_sorted_by_date(long_frame):
    from gymkit.data.loaders import panel_from_long

    with pytest.raises(ValueError, match="sorted by date"):
        panel_from_long(long_frame.reverse())


@settings(max_examples=40, derandomize=True, deadline=None)
@given(n=st.integers(2, 7), days=st.integers(1, 9), seed=st.integers(0, 2**16),
       drop=st.sampled_from([0.0, 0.0, 0.2, 0.6]), unlabelled=st.floats(0.0, 1.0),
       reversed_tickers=st.booleans())
def test_pivot_is_the_cell_by_cell_definition(n, days, seed, drop, unlabelled, reversed_tickers):
    """Complete panels (the columns taken as the grids) and gappy ones (scattered into NaN
    grids) pivot to the plain definition: each (date, ticker) row's values in its cell, NaN
    where the input has no row, ``present`` exactly the rows; a ticker's sector is the label of
    its labelled rows ('' when none is labelled).  A complete frame whose tickers run in
    another order within each date is not taken as the grids."""
    from gymkit.data.loaders import _pivot

    from .conftest import build_long

    rng = np.random.default_rng(seed)
    tickers = tuple(f"K{i}" for i in range(n))
    frame = build_long(tickers=tickers, days=days, seed=seed, groups=True, cap=True)
    frame = frame.filter(pl.Series(rng.uniform(size=frame.height)) >= drop)
    frame = frame.with_columns(pl.when(pl.Series(rng.uniform(size=frame.height)) < unlabelled)
                               .then(None).otherwise(pl.col("sector")).alias("sector"))
    if reversed_tickers:  # still sorted by date, as panel_from_long asks
        frame = frame.sort(["date", "ticker"], descending=[False, True])
    if frame.height == 0:
        return
    panel, present = _pivot(frame)
    dates = sorted(set(frame.get_column("date").to_list()))
    names = sorted(set(frame.get_column("ticker").to_list()))
    assert list(panel.tickers) == names and panel.dates.size == len(dates)
    want = {f: np.full((len(dates), len(names)), np.nan) for f in ("open", "close", "volume", "cap")}
    mask = np.zeros((len(dates), len(names)), bool)
    sector = dict.fromkeys(names, "")
    for r in frame.iter_rows(named=True):
        i, j = dates.index(r["date"]), names.index(r["ticker"])
        mask[i, j] = True
        for f in want:
            want[f][i, j] = r[f]
        if r["sector"] is not None:
            sector[r["ticker"]] = r["sector"]
    assert np.array_equal(present, mask)
    for f, grid in want.items():
        assert np.array_equal(getattr(panel, f), grid, equal_nan=True), f
    assert list(panel.sector) == [sector[t] for t in names]


def test_complete_width_recognises_exactly_the_complete_row_major_panels():
    """The loader's no-hashing path (a 3,000-stock file's tickers and labels are not looked up
    row by row) is taken only for a frame with every ticker on every date, in (date, ticker)
    order; anything else goes the general way (the pivot's definition test above covers both)."""
    from gymkit.data.validate import complete_width

    from .conftest import build_long

    full = build_long(tickers=("AAA", "BBB", "CCC"), days=5, groups=True)
    assert complete_width(full) == 3
    assert complete_width(full.head(3)) == 3  # one date
    assert complete_width(full.head(0)) is None
    assert complete_width(full.slice(1)) is None  # a ticker missing on the first date
    assert complete_width(full.filter(pl.int_range(pl.len()) != 7)) is None  # one row missing
    reordered = full.sort(["date", "ticker"], descending=[False, True])  # another order per date
    assert complete_width(reordered) is None
    swapped = full.with_columns(  # the same tickers, but two swapped on one date only
        pl.when(pl.int_range(pl.len()) == 6).then(pl.lit("BBB"))
        .when(pl.int_range(pl.len()) == 7).then(pl.lit("AAA"))
        .otherwise(pl.col("ticker")).alias("ticker"))
    assert complete_width(swapped) is None
    twice = pl.concat([full.head(3), full.head(3)])  # one date's block repeated
    assert complete_width(twice) is None
