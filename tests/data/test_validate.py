"""Every validation rule: the exact one-line error, and strict=False masking with counts."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.data.loaders import ValidationWarning, load_panel, load_panel_with_report
from gymkit.data.validate import RULES, ValidationError, ValidationReport

# Two sessions (Mon 2014-06-09, Tue 2014-06-10) x two tickers, sorted by (date, ticker).
BASE = pl.DataFrame(
    {
        "date": ["2014-06-09", "2014-06-09", "2014-06-10", "2014-06-10"],
        "ticker": ["AAA", "BBB", "AAA", "BBB"],
        "open": [10.0, 20.0, 10.5, 20.0],
        "high": [11.0, 21.0, 11.0, 21.0],
        "low": [9.0, 19.0, 10.0, 19.0],
        "close": [10.5, 20.5, 10.8, 20.2],
        "volume": [100.0, 200.0, 300.0, 400.0],
    }
)


def _set(frame: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    values = frame.get_column(column).to_list()
    values[row] = value
    return frame.with_columns(pl.Series(column, values))


def _error(frame, **kw) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        load_panel(frame, **kw)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)
    return info.value


CASES = [
    (
        _set(BASE, "close", 2, -1.0),
        "[non-positive-price] AAA 2014-06-10: close = -1 must be > 0",
    ),
    (
        _set(BASE, "open", 1, 0.0),
        "[non-positive-price] BBB 2014-06-09: open = 0 must be > 0",
    ),
    (
        _set(BASE, "high", 3, 20.1),
        "[high-below-open-close] BBB 2014-06-10: high 20.1 < max(open 20, close 20.2)",
    ),
    (
        _set(BASE, "low", 3, 20.1),
        "[low-above-open-close] BBB 2014-06-10: low 20.1 > min(open 20, close 20.2)",
    ),
    (
        _set(BASE, "volume", 3, -25.0),
        "[negative-volume] BBB 2014-06-10: volume -25 must be >= 0",
    ),
    (
        pl.concat([BASE, BASE[3:4]]),
        "[duplicate-row] BBB 2014-06-10: (date, ticker) appears 2 times, identical copies",
    ),
    (
        pl.concat([BASE, BASE[3:4].with_columns(close=pl.lit(20.3))]),
        "[duplicate-row] BBB 2014-06-10: (date, ticker) appears 2 times with different values "
        "(close 20.2 vs 20.3)",
    ),
    (
        BASE[[0, 2, 1, 3]],
        "[unsorted] BBB 2014-06-09: row 2 comes after AAA 2014-06-10; "
        "long input must be sorted by date, then ticker",
    ),
    (
        BASE.with_columns(pl.Series("date", ["2014-06-07"] * 2 + ["2014-06-10"] * 2)),
        "[non-session] AAA 2014-06-07: not an NYSE session; "
        "BBB 2014-06-07: not an NYSE session (2 rows)",
    ),
    (
        BASE.with_columns(pl.Series("date", ["2014-07-04"] * 2 + ["2031-01-02"] * 2)),
        "[non-session] AAA 2014-07-04: not an NYSE session; BBB 2014-07-04: not an NYSE "
        "session; AAA 2031-01-02: outside the supported NYSE calendar 2000-01-03..2030-12-31; "
        "BBB 2031-01-02: outside the supported NYSE calendar 2000-01-03..2030-12-31 (4 rows)",
    ),
    (
        pl.DataFrame({"date": ["2014-06-09"], "opn:AAA": [1.0]}),
        "[unknown-column] column 'opn:AAA': wide columns must be 'field:TICKER' with field in "
        "(open, high, low, close, volume, cap, split, dividend, adj_close, sector, industry)",
    ),
    (
        BASE.drop("volume"),
        "[missing-column] column 'volume': required; no column of the input is a known name for "
        "it (the input's columns: ['date', 'ticker', 'open', 'high', 'low', 'close']): map one "
        "with --columns volume=NAME (load_panel(columns={'volume': NAME}))",
    ),
    (BASE.head(0), "[empty-panel] panel: no rows"),
    (
        BASE.filter(pl.col("ticker") == "AAA"),
        "[too-few-tickers] panel: 1 ticker ('AAA'); need at least 2",
    ),
    (
        BASE.with_columns(sector=pl.Series(["Tech", "Energy", "Energy", "Energy"])),
        "[inconsistent-group] AAA 2014-06-10: sector changes from 'Tech' to 'Energy'; "
        "group labels must be constant per ticker",
    ),
    (
        BASE.with_columns(pl.Series("open", ["10", "x", "10.5", "20"])),
        "[non-numeric] BBB 2014-06-09: open = 'x' is not a number",
    ),
    (
        _set(BASE, "high", 2, float("inf")),
        "[non-finite] AAA 2014-06-10: high = inf is not finite",
    ),
    (
        BASE.with_columns(
            pl.Series("date", ["2014-06-09", "2014-13-09", "2014-06-10", "2014-06-10"])
        ),
        "[bad-date] BBB: '2014-13-09' in row 1 is not a date (expected YYYY-MM-DD, YYYYMMDD or "
        "a midnight timestamp)",
    ),
    (
        _set(BASE, "ticker", 2, " "),
        "[bad-ticker] 2014-06-10: ticker in row 2 is missing or empty",
    ),
    (
        BASE.with_columns(split=pl.Series([1.0, -2.0, 1.0, 1.0])),
        "[bad-split] BBB 2014-06-09: split -2 must be finite and > 0 (0 or empty: no split)",
    ),
    (
        BASE.with_columns(dividend=pl.Series([0.0, -0.5, 0.0, 0.0])),
        "[bad-dividend] BBB 2014-06-09: dividend -0.5 must be finite and >= 0",
    ),
    (
        BASE.with_columns(cap=pl.Series([1e9, -1.0, 1e9, 1e9])),
        "[non-positive-cap] BBB 2014-06-09: cap -1 must be > 0",
    ),
    (
        BASE.with_columns(open=pl.lit(None, dtype=pl.Float64)),
        "[empty-column] column 'open': no value in any of its 4 rows (the book fills and earns at "
        "the open); map the column that holds it (--columns open=NAME, load_panel(columns=...))",
    ),
]


@pytest.mark.parametrize(("frame", "line"), CASES, ids=[c[1].split("]")[0][1:] for c in CASES])
def test_exact_error_line(frame, line):
    err = _error(frame)
    assert str(err) == line
    assert err.rule in RULES


def test_every_rule_has_a_case():
    tested = {line.split("]")[0][1:] for _, line in CASES}
    assert tested == set(RULES)


def test_error_attributes_name_ticker_and_date():
    err = _error(_set(BASE, "close", 2, -1.0))
    assert (err.rule, err.ticker, err.date) == ("non-positive-price", "AAA", "2014-06-10")
    err = _error(pl.DataFrame({"date": ["2014-06-09"], "foo:AAA": [1.0]}))
    assert (err.rule, err.ticker, err.date, err.column) == ("unknown-column", None, None,
                                                            "foo:AAA")


def test_out_of_calendar_dates_are_named():
    frame = BASE.with_columns(pl.Series("date", ["1999-06-07"] * 2 + ["2014-06-10"] * 2))
    assert str(_error(frame)) == (
        "[non-session] AAA 1999-06-07: outside the supported NYSE calendar 2000-01-03..2030-12-31;"
        " BBB 1999-06-07: outside the supported NYSE calendar 2000-01-03..2030-12-31 (2 rows)"
    )


def test_calendar_check_off_accepts_weekends():
    frame = BASE.with_columns(pl.Series("date", ["2014-06-07"] * 2 + ["2014-06-08"] * 2))
    assert load_panel(frame, calendar_check=False).T == 2


def test_first_offence_in_sorted_order_is_reported():
    frame = _set(_set(BASE, "volume", 3, -1.0), "volume", 1, -2.0)
    assert _error(frame).ticker == "BBB" and _error(frame).date == "2014-06-09"


def test_missing_values_are_allowed():
    frame = _set(_set(BASE, "close", 1, None), "volume", 2, float("nan"))
    p = load_panel(frame)
    assert np.isnan(p.close[0, 1]) and np.isnan(p.volume[1, 0])
    assert np.isfinite(p.close[1]).all()


def test_zero_volume_is_allowed():
    assert load_panel(_set(BASE, "volume", 0, 0.0)).volume[0, 0] == 0.0


def test_strict_false_masks_and_counts():
    bad = _set(_set(_set(BASE, "close", 2, -1.0), "volume", 1, -1.0), "volume", 3, -2.0)
    bad = _set(bad, "high", 1, 20.0)  # high < close 20.5 on BBB 06-09
    panel, report = load_panel_with_report(bad, strict=False)
    assert report.counts == {
        "non-positive-price": 1,
        "high-below-open-close": 1,
        "negative-volume": 2,
    }
    assert (
        report.first["negative-volume"]
        == "[negative-volume] BBB 2014-06-09: volume -1 must be >= 0"
    )
    assert report.total == 4 and not report.ok
    assert np.isnan(panel.close[1, 0]) and np.isfinite(panel.open[1, 0])  # only the bad cell
    assert np.isnan([panel.open[0, 1], panel.high[0, 1], panel.low[0, 1], panel.close[0, 1]]).all()
    assert np.isnan(panel.volume[:, 1]).all() and np.isfinite(panel.volume[:, 0]).all()
    assert report.summary() == (
        "3 rule(s) fired: non-positive-price=1, high-below-open-close=1, negative-volume=2"
    )


def test_strict_false_drops_rows_and_sorts_with_report():
    frame = pl.concat([BASE[[2, 3, 0, 1]], BASE[0:1]])  # unsorted, AAA 06-09 twice
    panel, report = load_panel_with_report(frame, strict=False)
    assert report.counts == {"unsorted": 2, "duplicate-row": 2}  # rows 2 and 4 step back
    assert panel.close[0, 0] == 10.5 and panel.close[0, 1] == 20.5  # one identical copy kept
    weekend = BASE.with_columns(pl.Series("date", ["2014-06-07"] * 2 + ["2014-06-10"] * 2))
    panel, report = load_panel_with_report(weekend, strict=False)
    assert report.counts == {"non-session": 2} and panel.T == 1


def test_identical_duplicates_keep_one_copy_differing_ones_are_dropped():
    """Lenient: identical copies of a row keep one, copies that differ lose the (ticker, date);
    strict: one error naming each duplicated pair once, with its count."""
    differing = BASE[3:4].with_columns(close=pl.lit(20.3))
    frame = pl.concat([BASE[0:1], BASE[0:1], BASE[0:1], BASE[1:], differing])
    panel, report = load_panel_with_report(frame, strict=False)
    assert report.counts == {"duplicate-row": 5}
    assert report.first["duplicate-row"] == (
        "[duplicate-row] AAA 2014-06-09: (date, ticker) appears 3 times, identical copies: one "
        "kept; 2 duplicated pairs in all: 1 identical (one copy kept), 1 with different values "
        "(all dropped)")
    assert panel.close[0, 0] == 10.5 and panel.volume[0, 0] == 100.0  # kept, once
    assert np.isnan(panel.close[1, 1]) and panel.close[1, 0] == 10.8  # differing: dropped
    assert panel.fingerprint == load_panel(BASE[:3]).fingerprint
    err = _error(frame)
    assert str(err) == (
        "[duplicate-row] AAA 2014-06-09: (date, ticker) appears 3 times, identical copies; "
        "BBB 2014-06-10: (date, ticker) appears 2 times with different values (close 20.2 vs "
        "20.3) (2 duplicated pairs, 5 rows)")
    assert err.rows == [
        "AAA 2014-06-09: (date, ticker) appears 3 times, identical copies",
        "BBB 2014-06-10: (date, ticker) appears 2 times with different values (close 20.2 vs "
        "20.3)"]


def test_many_duplicated_pairs_list_twenty_once_each(make_long):
    frame = make_long(tickers=("AAA", "BBB", "CCC", "DDD", "EEE"), days=5)  # 25 rows
    doubled = pl.concat([frame, frame]).sort("date", "ticker", maintain_order=True)
    err = _error(doubled)
    msg = str(err)
    assert msg.endswith("(20 of 25 duplicated pairs shown, 50 rows)")
    assert msg.count("appears 2 times, identical copies") == 20 == len(set(err.rows))
    panel, report = load_panel_with_report(doubled, strict=False)
    assert report.counts == {"duplicate-row": 50}
    assert panel.fingerprint == load_panel(frame).fingerprint


def test_strict_false_warns_once_and_clean_input_does_not():
    bad = _set(BASE, "volume", 3, -25.0)
    with pytest.warns(ValidationWarning, match="negative-volume=1"):
        load_panel(bad, strict=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_panel(BASE, strict=False)


def test_an_open_column_emptied_by_lenient_masking_is_an_error_too():
    """Every open 0: lenient masks each cell, which leaves the column empty; a book on it would
    pay costs and earn nothing, so it is refused like a missing column."""
    with pytest.raises(ValidationError, match=r"^\[empty-column\] column 'open': no value"):
        load_panel(BASE.with_columns(open=pl.lit(0.0)), strict=False)
    p = load_panel(_set(BASE, "open", 1, None), strict=False)  # one missing open stays a warning
    assert np.isnan(p.open).sum() == 1


def test_a_missing_column_names_the_input_s_own_columns():
    """A CRSP-style file: the error lists its header as written (the names it has), not the
    schema names left after the aliases, and says how to map one."""
    crsp = BASE.rename({"ticker": "PERMNO", "open": "OPENPRC", "high": "ASKHI", "low": "BIDLO",
                        "close": "PRC", "volume": "VOL"}).with_columns(RET=pl.lit(0.0))
    err = _error(crsp)
    assert err.rule == "missing-column" and err.column == "open"
    assert "['date', 'PERMNO', 'OPENPRC', 'ASKHI', 'BIDLO', 'PRC', 'VOL', 'RET']" in str(err)
    # every unmapped field in the one message (a new user mapped them one run at a time)
    assert "required, and so are 'high', 'low'; " in str(err)
    assert "--columns open=NAME,high=NAME,low=NAME" in str(err)
    assert "(load_panel(columns={'open': NAME, 'high': NAME, 'low': NAME}))" in str(err)
    assert "\n" not in str(err)
    p = load_panel(crsp, columns={"open": "OPENPRC", "high": "ASKHI", "low": "BIDLO"})
    assert tuple(p.tickers) == ("AAA", "BBB")


@pytest.mark.parametrize("dates", [
    [20140609, 20140609, 20140610, 20140610],  # CRSP: an integer YYYYMMDD
    ["20140609", "20140609", "20140610", "20140610"],
    ["2014-06-09T00:00:00.000000"] * 2 + ["2014-06-10T00:00:00.000000"] * 2,  # polars CSV
    ["2014-06-09 00:00:00-04:00"] * 2 + ["2014-06-10 00:00:00-04:00"] * 2,  # tz-aware text
])
def test_vendor_date_forms_load_as_the_same_panel(dates):
    """Dates as vendors write them load as the ISO dates do (same fingerprint); a time of day
    that is not midnight stays an error."""
    assert load_panel(BASE.with_columns(date=pl.Series(dates))).fingerprint == \
        load_panel(BASE).fingerprint
    with pytest.raises(ValidationError, match=r"'2014-06-09 09:30:00' in row 0 is not a date"):
        load_panel(BASE.with_columns(date=pl.Series(["2014-06-09 09:30:00"] * 2 + ["2014-06-10"] * 2)))


def test_a_zero_split_is_no_split_as_yfinance_writes_it():
    """yfinance's "Stock Splits" is 0 on every ordinary day: it loads, raw or adjusted, exactly as
    the same file with 1 (or empty) there; a real split (2 on day 2) still adjusts."""
    zero = BASE.with_columns(split=pl.Series([0.0, 0.0, 2.0, 0.0]))
    one = BASE.with_columns(split=pl.Series([1.0, 1.0, 2.0, None]))
    for adjust in (False, True):
        a, b = load_panel(zero, adjust=adjust), load_panel(one, adjust=adjust)
        assert a.fingerprint == b.fingerprint
    assert load_panel(zero, adjust=True).close[0, 0] == pytest.approx(10.5 / 2)


def test_structural_rules_raise_even_when_not_strict():
    with pytest.raises(ValidationError, match=r"^\[unknown-column\]"):
        load_panel(pl.DataFrame({"date": ["2014-06-09"], "opn:AAA": [1.0]}), strict=False)
    with pytest.raises(ValidationError, match=r"^\[too-few-tickers\]"):
        load_panel(BASE.filter(pl.col("ticker") == "AAA"), strict=False)


def test_report_of_clean_input():
    _, report = load_panel_with_report(BASE)
    assert report == ValidationReport() and report.ok and report.summary().startswith("clean")


_CELL_RULES = {
    "non-positive-price": ("close", -3.0),
    "negative-volume": ("volume", -7.0),
    "non-finite": ("open", float("-inf")),
    "high-below-open-close": ("high", 1e-3),
}


@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # the factory is stateless
)
@given(
    rule=st.sampled_from(sorted(_CELL_RULES)),
    cells=st.sets(st.integers(0, 17), min_size=1, max_size=6),
)
def test_random_corruption_reported_at_first_cell_and_counted(make_long, rule, cells):
    frame = make_long(days=6)  # 6 sessions x 3 tickers = 18 rows in (date, ticker) order
    column, value = _CELL_RULES[rule]
    for i in cells:
        frame = _set(frame, column, i, value)
    first = frame.row(min(cells), named=True)
    err = _error(frame)
    assert (err.rule, err.ticker, err.date) == (rule, first["ticker"], str(first["date"]))
    _, report = load_panel_with_report(frame, strict=False)
    assert report.counts == {rule: len(cells)}


def test_non_numeric_text_masked_when_not_strict():
    frame = BASE.with_columns(pl.Series("open", ["10", "x", "10.5", "?"]))
    panel, report = load_panel_with_report(frame, strict=False)
    assert report.counts == {"non-numeric": 2}
    assert np.isnan(panel.open[0, 1]) and np.isnan(panel.open[1, 1]) and panel.open[1, 0] == 10.5


def test_datetime_dates_must_be_midnight():
    stamps = pl.Series(
        "date", ["2014-06-09 00:00", "2014-06-09 00:00", "2014-06-10 09:30", "2014-06-10 00:00"]
    )
    frame = BASE.with_columns(stamps.str.to_datetime("%Y-%m-%d %H:%M"))
    with pytest.raises(ValidationError) as info:
        load_panel(frame)
    assert str(info.value) == (
        "[bad-date] AAA: 2014-06-10 09:30:00 in row 2 has a time of day; expected dates (one row "
        "per session: a bar stamped at its close or open? make the column dates first, e.g. "
        "pandas df['date'].dt.date, polars pl.col('date').dt.date())")
    midnight = BASE.with_columns(pl.col("date").str.to_datetime("%Y-%m-%d"))
    assert load_panel(midnight).fingerprint == load_panel(BASE).fingerprint


def test_new_york_midnight_stored_in_utc_is_its_new_york_date() -> None:
    """A vendor's daily bars at New York midnight stored as UTC (04:00+00:00 in summer, 05:00 in
    winter) are those New York dates; a bar stamped at the close (16:00 New York) is still an
    error: it has a time of day on every clock."""
    ny = BASE.with_columns(pl.col("date").str.to_datetime("%Y-%m-%d")
                           .dt.replace_time_zone("America/New_York"))
    utc = ny.with_columns(pl.col("date").dt.convert_time_zone("UTC"))
    assert str(utc.get_column("date")[0]) == "2014-06-09 04:00:00+00:00"
    assert load_panel(utc).fingerprint == load_panel(BASE).fingerprint
    close = ny.with_columns(pl.col("date") + pl.duration(hours=16))
    with pytest.raises(ValidationError, match=r"has a time of day; expected dates \(one row"):
        load_panel(close.with_columns(pl.col("date").dt.convert_time_zone("UTC")))


def test_non_finite_reports_earliest_row_over_all_columns_and_counts_rows():
    frame = _set(_set(BASE, "volume", 2, float("inf")), "open", 3, float("-inf"))
    frame = _set(frame, "close", 2, float("inf"))
    assert str(_error(frame)) == ("[non-finite] AAA 2014-06-10: close = inf is not finite; "
                                  "BBB 2014-06-10: open = -inf is not finite (2 rows)")
    panel, report = load_panel_with_report(frame, strict=False)
    assert report.counts == {"non-finite": 2}
    assert np.isnan([panel.close[1, 0], panel.volume[1, 0], panel.open[1, 1]]).all()
    assert panel.open[1, 0] == 10.5


def test_blank_lines_and_repeated_headers_of_a_joined_csv_are_dropped_with_a_note(tmp_path):
    """Per-ticker CSV files joined with ``cat`` repeat the header line; an editor leaves a blank
    line: neither holds data, and the panel is the clean file's, with a note for each (the
    blank line was a structural bad-date that not even --lenient could pass)."""
    from gymkit.data.loaders import load_panel_with_report

    ok = tmp_path / "ok.csv"
    BASE.write_csv(ok)
    head, *rows = ok.read_text().splitlines()
    joined = tmp_path / "joined.csv"
    joined.write_text("\n".join([head, rows[0], "", rows[1], head, rows[2], ",,,,,,", rows[3]]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panel, report = load_panel_with_report(joined)
    assert panel.fingerprint == load_panel(ok).fingerprint
    assert any(n.startswith("dropped 2 blank row(s)") for n in report.notes)
    assert any(n.startswith("dropped 1 row(s) repeating the header line") for n in report.notes)


@pytest.mark.parametrize("group_by_ticker", [False, True])
def test_a_csv_that_yfinance_wrote_loads_from_the_cli(tmp_path, group_by_ticker):
    """``yf.download(...).to_csv(f)`` writes three header lines (Price / Ticker / Date, or Ticker
    first with group_by="ticker"); the file loads as the same panel as the long one, so
    ``--market f.csv`` works without pandas by hand (it said: columns ['Open_duplicated_0', ...])."""
    import pandas as pd

    long = BASE.to_pandas().assign(**{"Adj Close": lambda d: d["close"]})
    wide = long.rename(columns={"open": "Open", "high": "High", "low": "Low", "close": "Close",
                                "volume": "Volume"}).pivot(index="date", columns="ticker")
    wide.columns = wide.columns.set_names(["Price", "Ticker"])
    wide.index = pd.to_datetime(wide.index).rename("Date")
    if group_by_ticker:
        wide = wide.swaplevel(axis=1).sort_index(axis=1)
    path = tmp_path / "yf.csv"
    wide.to_csv(path)
    assert path.read_text().splitlines()[2].startswith("Date,,")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_panel(path).fingerprint == load_panel(BASE).fingerprint
