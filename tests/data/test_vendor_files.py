"""Vendor-shaped inputs through the real loader: raw column names, index columns, extra
columns, mappings, frames, malformed files and data-quality warnings, with exact messages."""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest

import gymkit
from gymkit.data import default_market, load_panel, load_panel_with_report
from gymkit.data.loaders import ColumnNote, DataWarning
from gymkit.data.validate import ValidationError

M = default_market()
TICKERS = list(M.tickers[:4])


def vendor_frame(days: int = 30) -> pd.DataFrame:
    """A Kaggle-style long frame: Date, Name, capitalised OHLCV, Adj Close, an extra column."""
    rows = []
    for t in range(days):
        for j, tk in enumerate(TICKERS):
            rows.append({"Date": str(M.dates[t]), "Name": tk, "Open": M.open[t, j],
                         "High": M.high[t, j], "Low": M.low[t, j], "Close": M.close[t, j],
                         "Volume": M.volume[t, j], "Adj Close": M.close[t, j],
                         "Exchange": "NYSE"})
    return pd.DataFrame(rows)


def reference(days: int = 30):
    return M.take_rows(slice(0, days)).replace()


def test_vendor_csv_loads_with_notes(tmp_path) -> None:
    path = tmp_path / "prices.csv"
    vendor_frame().to_csv(path, index=False)
    panel, report = load_panel_with_report(path)
    assert panel.tickers == tuple(sorted(TICKERS)) and panel.T == 30
    j = panel.tickers.index(TICKERS[0])
    assert np.array_equal(panel.close[:, j], M.close[:30, 0])
    assert report.notes == (
        "recognised 'Date' as date, 'Name' as ticker, 'Open' as open, 'High' as high, 'Low' as "
        "low, 'Close' as close, 'Volume' as volume, 'Adj Close' as adj_close",
        "ignored column(s) not in the schema: ['Exchange']")
    with pytest.warns(ColumnNote, match="ignored column"):
        load_panel(path)


def test_pandas_parquet_index_is_dropped_and_csv_index_too(tmp_path) -> None:
    df = vendor_frame()
    df.index = pd.Index(np.arange(len(df)) * 2)  # not a RangeIndex: written as a column
    df.to_parquet(tmp_path / "p.parquet")
    assert "__index_level_0__" in pl.read_parquet(tmp_path / "p.parquet").columns
    _, report = load_panel_with_report(tmp_path / "p.parquet")
    assert "dropped pandas index column(s) ['__index_level_0__']" in report.notes
    df.to_csv(tmp_path / "i.csv")  # to_csv with the index: an 'Unnamed: 0' column
    a = load_panel(tmp_path / "i.csv")
    assert a.fingerprint == load_panel(tmp_path / "p.parquet").fingerprint


def test_explicit_mapping_and_its_errors(tmp_path) -> None:
    df = vendor_frame().rename(columns={"Name": "Instrument", "Date": "AsOf"})
    path = tmp_path / "m.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValidationError) as info:
        load_panel(path)
    assert str(info.value) == (
        f"{path}: [missing-column] column 'ticker': required for long input (no 'field:TICKER' "
        "columns for wide input either); got columns ['AsOf', 'Instrument', 'open', 'high', "
        "'low', 'close', 'volume', 'adj_close', 'Exchange']: name it with "
        "columns={'ticker': COLUMN} (CLI --columns ticker=COLUMN)")
    panel = load_panel(path, columns={"date": "AsOf", "ticker": "instrument"})
    assert panel.tickers == tuple(sorted(TICKERS))
    with pytest.raises(ValidationError) as info:
        load_panel(path, columns={"date": "When"})
    assert str(info.value) == (
        f"{path}: [missing-column] column 'When': columns= names 'When' for date; the input has "
        "['AsOf', 'Instrument', 'Open', 'High', 'Low', 'Close', 'Volume', 'Adj Close', "
        "'Exchange']")
    with pytest.raises(ValidationError, match=r"maps 'AsOf' to 'day', which is not a schema"):
        load_panel(path, columns={"day": "AsOf"})


def test_frames_long_and_wide_go_through_the_same_loader() -> None:
    df = vendor_frame(80)
    ref = load_panel(pl.from_pandas(df))
    wide = df.pivot(index="Date", columns="Name", values=["Open", "High", "Low", "Close",
                                                           "Volume"])
    wide.index = pd.to_datetime(wide.index)  # yfinance shape: (Field, TICKER) columns
    assert load_panel(wide).fingerprint == ref.fingerprint
    env = gymkit.make("us46-default", market=df, archive={"seed": "none"},
                      split={"train_end": str(M.dates[59])}, burn_in=0,
                      cpcv={"n_blocks": 2, "n_test_blocks": 1, "purge": 0, "embargo": 0})
    assert env.data_fingerprint == ref.fingerprint
    assert env.config.split["holdout_start"] == str(M.dates[60])
    with pytest.raises(TypeError, match=r"read files with gymkit.data.load_panel\(path\)"):
        gymkit.make("us46-default", market="prices.csv")


def test_strict_error_lists_twenty_rows_and_the_count() -> None:
    df = vendor_frame()
    df.loc[df.index[:25], "High"] = 0.5  # 25 rows with high < max(open, close)
    with pytest.raises(ValidationError) as info:
        load_panel(df)
    msg = str(info.value)
    assert msg.count("high 0.5 < max(") == 20 and msg.endswith("(20 of 25 rows shown)")
    assert "\n" not in msg and len(info.value.rows) == 20
    first = df.iloc[0]
    assert msg.startswith(f"[high-below-open-close] {first['Name']} {first['Date']}: high 0.5")


def test_unsorted_rows_are_listed_and_the_rule_said_once(tmp_path) -> None:
    """Three swapped pairs of rows: six rows named, the sorting rule said once at the end, in
    strict mode; --lenient sorts them and reports the first with the rule."""
    df = vendor_frame()
    order = list(range(len(df)))
    for a, b in ((3, 6), (40, 45), (80, 84)):
        order[a], order[b] = order[b], order[a]
    path = tmp_path / "unsorted.csv"
    df.iloc[order].to_csv(path, index=False)
    with pytest.raises(ValidationError) as info:
        load_panel(path)
    msg = str(info.value)
    assert msg.count("comes after") == 6 and len(info.value.rows) == 6
    assert msg.endswith("(6 rows); long input must be sorted by date, then ticker")
    assert msg.count("must be sorted") == 1 and "\n" not in msg
    panel, report = load_panel_with_report(path, strict=False)
    assert report.counts["unsorted"] == 6
    assert report.first["unsorted"].endswith("; long input must be sorted by date, then ticker")
    assert panel.fingerprint == load_panel(df).fingerprint


@pytest.mark.parametrize(("content", "message"), [
    (b"", "empty file (no header, no rows)"),
    (b"date,ticker,open,high,low,close,volume\n", "[empty-panel] panel: no rows"),
    (b"date,ticker,open,high,low,close,volume\n2014-06-09,AAA,1,1,1,1,1\n"
     b"2014-06-09,BBB,1,1,1,1,1,9\n", "line 3: 8 fields, the header has 7"),
    (b"date,ticker,open,high,low,close,volume\n2014-06-09,AAA,1,1,1,1,1\n2014-06-09,B\xffB,1,1,"
     b"1,1,1\n", "line 3: not UTF-8 text (byte 0xff at offset 76); save the file as UTF-8"),
])
def test_malformed_files_are_one_line_naming_the_file(tmp_path, content, message) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load_panel(path)
    assert str(info.value) == f"{path}: {message}"


_HEADER = b"date,ticker,open,high,low,close,volume\n"
_ROWS = [b"2014-06-09,AAA,1,2,0.5,1.5,10", b"2014-06-09,BBB,1,2,0.5,1.5,10",
         b"2014-06-10,AAA,1,2,0.5,1.5,10", b"2014-06-10,BBB,1,2,0.5,1.5,10"]


@pytest.mark.parametrize("gz", [False, True], ids=["csv", "csv.gz"])
@pytest.mark.parametrize(("bad", "line"), [(1, 3), (3, 5)], ids=["middle", "last-line"])
def test_short_rows_are_ragged_in_both_modes(tmp_path, gz: bool, bad: int, line: int) -> None:
    """A row missing its trailing field(s) is an error (polars alone pads it with nulls), in
    strict and lenient mode, in the middle or on a last line without a newline, plain or gzip."""
    path = tmp_path / ("short.csv.gz" if gz else "short.csv")

    def write(rows: list[bytes]) -> None:
        content = _HEADER + b"\n".join(rows)  # the last line has no newline
        path.write_bytes(gzip.compress(content) if gz else content)

    rows = list(_ROWS)
    rows[bad] = rows[bad].rsplit(b",", 1)[0]
    write(rows)
    for strict in (True, False):
        with pytest.raises(ValueError) as info:
            load_panel_with_report(path, strict=strict)
        assert str(info.value) == f"{path}: line {line}: 6 fields, the header has 7"
    rows[bad] += b","  # the same row with an empty last cell has all its fields: not ragged
    write(rows)
    panel, report = load_panel_with_report(path, strict=False)
    assert report.ok and np.isnan(panel.volume).sum() == 1


def test_quoted_commas_are_not_field_separators(tmp_path) -> None:
    """Commas inside quoted header names and cells (even across lines) are not separators:
    the check agrees with the CSV parser, and still finds a short row among them."""
    header = b'date,ticker,open,high,low,close,volume,"memo, free text"\n'
    rows = [b'2014-06-09,"A,A",1,2,0.5,1.5,10,"x, y"', b"2014-06-09,BBB,1,2,0.5,1.5,10,",
            b'2014-06-10,"A,A",1,2,0.5,1.5,10,', b'2014-06-10,BBB,1,2,0.5,1.5,10,"two\nlines, z"']
    path = tmp_path / "quoted.csv"
    path.write_bytes(header + b"\n".join(rows) + b"\n")
    panel, report = load_panel_with_report(path)
    assert panel.tickers == ("A,A", "BBB") and panel.T == 2 and report.ok
    assert report.notes == ("ignored column(s) not in the schema: ['memo, free text']",)
    rows[2] = rows[2][:-1]  # '"A,A"' still holds a comma; the row lacks its memo field
    path.write_bytes(header + b"\n".join(rows) + b"\n")
    with pytest.raises(ValueError) as info:
        load_panel(path)
    assert str(info.value) == f"{path}: line 4: 7 fields, the header has 8"


def test_gzip_bomb_stops_at_the_cap(tmp_path) -> None:
    path = tmp_path / "bomb.csv.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"date,ticker,open,high,low,close,volume\n")
        fh.write(b"0" * (64 << 20))
    assert path.stat().st_size < 200_000
    with pytest.raises(ValueError) as info:
        load_panel(path, max_bytes=8 << 20)
    assert str(info.value) == (f"{path}: decompresses to more than 8,388,608 bytes, the panel "
                               "size limit (raise it with max_bytes= or $GYMKIT_MAX_PANEL_BYTES)")
    path.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ValueError, match=r"bomb\.csv\.gz: not a readable gzip file"):
        load_panel(path)


def test_long_values_are_truncated_in_messages() -> None:
    df = vendor_frame(3)
    df["Name"] = df["Name"].astype(object)
    df.loc[1, "Name"] = "X" * 20_000
    df.loc[1, "Open"] = -1.0
    with pytest.raises(ValidationError) as info:
        load_panel(df)
    assert len(str(info.value)) < 200 and "...(+19960 chars)" in str(info.value)


def test_quality_warnings_name_rows() -> None:
    df = vendor_frame()
    tk = TICKERS[1]
    late = (df["Name"] == tk) & (df["Date"] >= str(M.dates[20]))
    for c in ("Open", "High", "Low", "Close"):
        df.loc[late, c] = df.loc[late, c] / 2.0  # an unadjusted 2:1 split on day 20
    df.loc[df.index[5], "Volume"] = 0.0
    df.loc[df.index[6], "Open"] = np.nan
    _, report = load_panel_with_report(df)
    assert report.warned == {"unadjusted-split": 1, "zero-volume": 1, "missing-open": 1}
    assert report.warned_first["unadjusted-split"].startswith(
        f"[unadjusted-split] {tk} {M.dates[20]}: open ")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        load_panel(df)
    assert sum(issubclass(w.category, DataWarning) for w in seen) == 3


def test_evaluate_reads_a_frame_through_the_loader() -> None:
    from gymkit.dsl import evaluate

    df = vendor_frame()
    panel = load_panel(df)
    got = evaluate("rank(ts_delta(close, 2))", df)
    assert np.array_equal(got, evaluate("rank(ts_delta(close, 2))", panel), equal_nan=True)


def test_a_two_level_pandas_parquet_reads_as_the_frame_does(tmp_path, capsys) -> None:
    """yfinance's ``download`` frame (columns (Price, Ticker), a Date index) written with
    ``to_parquet``: the file stores the column names as "('Open', 'AAA')" strings; it loads,
    from the CLI too, to the panel the frame itself gives."""
    from gymkit.cli import main

    idx = pd.DatetimeIndex(pd.to_datetime([str(d) for d in M.dates[:700]]), name="Date")
    cols = pd.MultiIndex.from_product([["Open", "High", "Low", "Close", "Volume"], TICKERS],
                                      names=["Price", "Ticker"])
    values = np.concatenate([getattr(M, f)[:700, :4] for f in ("open", "high", "low", "close",
                                                               "volume")], axis=1)
    frame = pd.DataFrame(values, index=idx, columns=cols)
    path = tmp_path / "yf.parquet"
    frame.to_parquet(path)
    panel, report = load_panel_with_report(path)
    assert panel.fingerprint == load_panel(frame).fingerprint
    assert panel.tickers == tuple(sorted(TICKERS)) and panel.T == 700
    j = panel.tickers.index(TICKERS[0])
    assert np.array_equal(panel.close[:, j], M.close[:700, 0])
    assert report.notes[0] == ("read 20 two-level pandas column name(s) as field:ticker "
                               f"(\"('Open', '{TICKERS[0]}')\" -> 'Open:{TICKERS[0]}', field first)")
    assert main(["market", str(path)]) == 0
    assert f"fingerprint  {panel.fingerprint}" in capsys.readouterr().out
