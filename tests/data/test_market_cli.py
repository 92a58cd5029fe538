"""The market-reading CLI as a user types it: ``gymkit market [clean]``, ``--market``,
``--lenient``, ``--columns`` and ``--split`` on the commands that read a market."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gymkit.cli import main
from gymkit.data import default_market, load_panel

M = default_market()
DAYS = 700  # 2012-06-29 .. 2015-04: 448 train sessions + 252 holdout


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def vendor(tmp_path_factory):
    """A vendor-style CSV (Name, Date, capitalised OHLCV, Adj Close, an extra column) with
    flaws: two rows with high below close, one duplicated row."""
    rows = []
    for t in range(DAYS):
        for j in range(8):
            rows.append({"Date": str(M.dates[t]), "Name": M.tickers[j], "Open": M.open[t, j],
                         "High": M.high[t, j], "Low": M.low[t, j], "Close": M.close[t, j],
                         "Volume": M.volume[t, j], "Adj Close": M.close[t, j], "Src": "x"})
    df = pd.DataFrame(rows)
    clean = tmp_path_factory.mktemp("m") / "clean.csv"
    df.to_csv(clean, index=False)
    df.loc[[10, 20], "High"] = df.loc[[10, 20], "Close"] * 0.5
    df = pd.concat([df.iloc[:31], df.iloc[30:31], df.iloc[31:]])
    flawed = clean.with_name("flawed.csv")
    df.to_csv(flawed, index=False)
    return clean, flawed


def test_market_on_a_malformed_file_exits_1_with_one_line(tmp_path, capsys) -> None:
    (tmp_path / "empty.csv").write_bytes(b"")
    rc, out, err = cli(capsys, "market", str(tmp_path / "empty.csv"))
    assert rc == 1 and out == ""
    assert err == f"gymkit market: error: {tmp_path / 'empty.csv'}: empty file (no header, no rows)\n"


def test_market_summary_shows_the_derived_split(vendor, capsys) -> None:
    clean, _ = vendor
    rc, out, err = cli(capsys, "market", str(clean))
    d = M.dates
    assert rc == 0
    assert (f"  split        train 448 sessions {d[0]}..{d[447]}, holdout 252 sessions "
            f"{d[448]}..{d[699]}") in out
    assert "recognised 'Date' as date, 'Name' as ticker" in err and "['Src']" in err


def test_strict_then_lenient_then_clean(vendor, tmp_path, capsys) -> None:
    _, flawed = vendor
    rc, _, err = cli(capsys, "score", "rank(-returns)", "--market", str(flawed))
    assert rc == 1 and err.startswith(f"gymkit score: error: {flawed}: [duplicate-row] ")
    rc, out, err = cli(capsys, "score", "rank(-returns)", "--market", str(flawed), "--lenient",
                       "--json")
    assert rc == 0 and "--lenient: 2 rule(s) fired: duplicate-row=2, high-below-open-close=2" in err
    # and where: each rule's first row on its own line (a new user saw counts only)
    lenient = [x for x in err.splitlines() if "--lenient: [" in x]
    assert [x.split("--lenient: ")[1].split("]")[0] for x in lenient] == ["[duplicate-row",
                                                                          "[high-below-open-close"]
    assert all(x.endswith("(first of 2 row(s))") for x in lenient)
    card = json.loads(out)
    assert card["valid"] and card["notes"][0].startswith("split adapted to the panel")
    out_pq = tmp_path / "fixed.parquet"
    rc, out, _ = cli(capsys, "market", "clean", str(flawed), str(out_pq))
    assert rc == 0 and "duplicate-row" in out and "high-below-open-close" in out
    report = json.loads(out_pq.with_name("fixed.parquet.report.json").read_text())
    assert report["rules"]["high-below-open-close"]["count"] == 2
    assert report["rules"]["duplicate-row"]["count"] == 2
    assert report["panel_fingerprint"] == load_panel(out_pq).fingerprint  # strict re-read
    rc, out2, _ = cli(capsys, "score", "rank(-returns)", "--market", str(out_pq), "--json")
    assert rc == 0 and json.loads(out2)["reward"] == card["reward"]


def test_clean_refuses_what_it_cannot_do_before_reading_and_hashes_the_input(vendor, tmp_path,
                                                                             capsys) -> None:
    """OUT over IN, a non-Parquet OUT and a --split (which clean would ignore) are one-line usage
    errors before the file is read; the report's input_sha256 is the input's, as read."""
    import hashlib

    _, flawed = vendor
    pq = tmp_path / "once.parquet"
    assert cli(capsys, "market", "clean", str(flawed), str(pq))[0] == 0
    before = pq.read_bytes()
    for argv, says in ((["market", "clean", str(pq), str(pq)], "would overwrite its input"),
                       (["market", "clean", str(flawed), str(tmp_path / "o.csv")], "must end in .parquet"),
                       (["market", "clean", str(flawed), str(tmp_path / "s.parquet"), "--split",
                         "train_end=2014-06-30"], "a split belongs to the commands")):
        rc, _, err = cli(capsys, *argv)
        assert rc == 2 and says in err and err.count("\n") == 1, err
    assert pq.read_bytes() == before and not (tmp_path / "s.parquet").exists()
    report = json.loads(pq.with_name("once.parquet.report.json").read_text())
    assert report["input_sha256"] == hashlib.sha256(flawed.read_bytes()).hexdigest()


def test_columns_and_split_flags(vendor, tmp_path, capsys) -> None:
    clean, _ = vendor
    renamed = tmp_path / "renamed.csv"
    df = pd.read_csv(clean).rename(columns={"Name": "Instrument", "Date": "AsOf"})
    df.to_csv(renamed, index=False)
    rc, _, err = cli(capsys, "score", "rank(-returns)", "--market", str(renamed))
    assert rc == 1 and "--columns ticker=COLUMN" in err
    rc, out, err = cli(capsys, "env", "show", "us46-default", "--market", str(renamed),
                       "--columns", "date=AsOf,ticker=Instrument", "--split",
                       f"train_end={M.dates[499]}", "--toml")
    assert rc == 0
    assert f'holdout_start = "{M.dates[500]}"' in out and f'holdout_end = "{M.dates[699]}"' in out
    assert "completed from train_end" in err
    rc, _, err = cli(capsys, "score", "rank(-returns)", "--market", str(renamed), "--columns",
                     "date=AsOf,ticker=Instrument", "--split", f"train_end={M.dates[200]}")
    assert rc == 1 and "split leaves 201 train sessions" in err
    assert np.isfinite(load_panel(renamed, columns={"date": "AsOf", "ticker": "Instrument"})
                       .close).any()


def test_a_partial_split_resolves_the_same_in_make_probe_book_and_audit(vendor, tmp_path,
                                                                         capsys) -> None:
    import gymkit
    from gymkit.audit.target import build_target

    clean, _ = vendor
    panel = load_panel(clean)
    partial = {"train_end": str(M.dates[520])}
    env = gymkit.make("us46-default", market=panel, split=partial, archive={"seed": "none"})
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"completion": "<alpha>rank(-ts_sum(returns, 5))</alpha>"}\n')
    for cmd in (["probe", "--answers", str(answers)], ["book", "--answers", str(answers)]):
        rc, _, err = cli(capsys, *cmd, "--market", str(clean), "--split",
                         f"train_end={M.dates[520]}")
        assert rc == 0 and f"gymkit: note: {env.split_note}\n" in err, (cmd, err)
    target = build_target("us46-default", market=str(clean), split=partial)
    assert target.config.split == env.config.split and target.notes == [env.split_note]


def test_market_on_a_row_missing_trailing_fields_exits_1_with_one_line(vendor, tmp_path,
                                                                       capsys) -> None:
    """A row with fewer fields than the header is a ragged row, strict or --lenient, never a
    silent NaN (polars alone pads it)."""
    clean, _ = vendor
    lines = clean.read_bytes().split(b"\n")
    lines[2] = b",".join(lines[2].split(b",")[:6])  # date, name and OHLC only
    short = tmp_path / "short.csv"
    short.write_bytes(b"\n".join(lines))
    for extra in ((), ("--lenient",)):
        rc, out, err = cli(capsys, "market", str(short), *extra)
        assert rc == 1 and out == ""
        assert err == f"gymkit market: error: {short}: line 3: 6 fields, the header has 9\n"


def test_an_identical_duplicate_row_is_named_once_and_cleaned_to_one_copy(vendor, tmp_path,
                                                                          capsys) -> None:
    """The flawed file repeats row 30 (day 3, ticker 6) exactly: strict names the pair once
    with its count; clean keeps one copy instead of losing the (ticker, date)."""
    _, flawed = vendor
    tk, day = M.tickers[6], M.dates[3]
    rc, _, err = cli(capsys, "market", str(flawed))
    assert rc == 1 and err == (f"gymkit market: error: {flawed}: [duplicate-row] {tk} {day}: "
                               "(date, ticker) appears 2 times, identical copies\n")
    out_pq = tmp_path / "dedup.parquet"
    rc, out, _ = cli(capsys, "market", "clean", str(flawed), str(out_pq))
    assert rc == 0
    first = f"[duplicate-row] {tk} {day}: (date, ticker) appears 2 times, identical copies: one kept"
    assert first in out
    report = json.loads(out_pq.with_name("dedup.parquet.report.json").read_text())
    assert report["rules"]["duplicate-row"] == {"count": 2, "first": first}
    panel = load_panel(out_pq)
    j = panel.tickers.index(tk)
    assert panel.close[3, j] == M.close[3, 6] and panel.volume[3, j] == M.volume[3, 6]


def test_split_dates_off_the_calendar_print_the_resolved_sessions(vendor, capsys) -> None:
    """``--split train_end=<a Saturday>`` / ``holdout_start=<a holiday>``: the summary names the
    last session on or before train_end and the first on or after holdout_start."""
    clean, _ = vendor
    d = [str(x) for x in M.dates[:DAYS]]
    fri, mon = d.index("2014-06-06"), d.index("2014-06-09")  # 2014-06-07 is a Saturday
    rc, out, _ = cli(capsys, "market", str(clean), "--split", "train_end=2014-06-07")
    assert rc == 0 and (f"  split        train {fri + 1} sessions {d[0]}..{d[fri]}, holdout "
                        f"{DAYS - mon} sessions {d[mon]}..{d[-1]}") in out
    before, after = d.index("2014-07-03"), d.index("2014-07-07")  # 2014-07-04: Independence Day
    rc, out, _ = cli(capsys, "market", str(clean), "--split", "holdout_start=2014-07-04")
    assert rc == 0 and (f"  split        train {before + 1} sessions {d[0]}..{d[before]}, "
                        f"holdout {DAYS - after} sessions {d[after]}..{d[-1]}") in out


def test_crsp_negative_prc_is_the_bid_ask_midpoint_not_a_bad_price(tmp_path, capsys) -> None:
    """CRSP's daily file prints PRC with a minus sign on days without a closing trade (the
    bid/ask midpoint): ``market clean`` takes |PRC| as the close, says how many, and the panel
    equals the file with the signs removed; other columns keep the validator's rules."""
    rows = []
    for t in range(40):
        for j in range(3):
            rows.append({"PERMNO": 10001 + j, "date": int(str(M.dates[t]).replace("-", "")),
                         "OPENPRC": M.open[t, j], "ASKHI": M.high[t, j], "BIDLO": M.low[t, j],
                         "PRC": M.close[t, j], "VOL": M.volume[t, j], "SHROUT": 1000, "RET": 0.0})
    df = pd.DataFrame(rows)
    plain = tmp_path / "crsp_plain.csv"
    df.to_csv(plain, index=False)
    df.loc[[4, 50, 51], "PRC"] = -df.loc[[4, 50, 51], "PRC"]
    crsp = tmp_path / "crsp.csv"
    df.to_csv(crsp, index=False)
    out = tmp_path / "crsp.parquet"
    rc, text, err = cli(capsys, "market", "clean", str(crsp), str(out),
                        "--columns", "open=OPENPRC,high=ASKHI,low=BIDLO")
    assert rc == 0, err
    assert ("note close from CRSP 'PRC': 3 negative value(s) are CRSP's bid/ask midpoint on a "
            "day without a closing trade; their absolute value is used") in text
    assert "non-positive-price" not in text
    want = load_panel(plain, columns={"open": "OPENPRC", "high": "ASKHI", "low": "BIDLO"})
    assert load_panel(out).fingerprint == want.fingerprint
    df.to_parquet(tmp_path / "crsp_pandas.parquet")  # numbers, not text: the same rule
    assert load_panel(tmp_path / "crsp_pandas.parquet", columns={
        "open": "OPENPRC", "high": "ASKHI", "low": "BIDLO"}).fingerprint == want.fingerprint
    # a plain close column keeps the rule: a negative close is a bad price, not a midpoint
    df.rename(columns={"PRC": "Close"}).to_csv(crsp, index=False)
    rc, _, err = cli(capsys, "market", str(crsp), "--columns", "open=OPENPRC,high=ASKHI,low=BIDLO")
    assert rc == 1 and "[non-positive-price]" in err


def test_market_counts_missing_opens(vendor, tmp_path, capsys) -> None:
    """``gymkit market`` says how many priced cells have no open (the book earns 0 across them);
    the loader's missing-open warning names the rows."""
    clean, _ = vendor
    df = pd.read_csv(clean)
    rc, out, _ = cli(capsys, "market", str(clean))
    assert rc == 0 and "0.00% of open cells (every priced cell has an open)" in out
    df.loc[[3, 9, 17], "Open"] = np.nan
    holes = tmp_path / "holes.csv"
    df.to_csv(holes, index=False)
    rc, out, err = cli(capsys, "market", str(holes))
    assert rc == 0, err
    assert "3 priced cell(s) with no open: the book earns 0 on a position across them" in out
    assert "missing-open" in err
    # a close missing under a kept open (a vendor's partial bar) passed in silence: now warned,
    # with the row named (pandas-written CSV, strict load, the CLI as typed)
    df = pd.read_csv(clean)
    df.loc[5, "Close"] = np.nan
    partial = tmp_path / "partial.csv"
    df.to_csv(partial, index=False)
    rc, out, err = cli(capsys, "market", str(partial))
    assert rc == 0, err
    line = next(x for x in err.splitlines() if "[missing-close]" in x)
    assert f"{df.loc[5, 'Name']} {df.loc[5, 'Date']}: open " in line and line.endswith(", no close (1 row)")


def test_a_file_with_split_columns_is_told_about_adjust(vendor, tmp_path, capsys) -> None:
    """A raw vendor file with its split column: without --adjust the 2:1 split is a jump in the
    prices, and the note says the file could fix it; with --adjust the jump and the note go."""
    clean, _ = vendor
    df = pd.read_csv(clean)
    tk = df["Name"].iloc[0]
    day = sorted(df["Date"].unique())[300]
    after = (df["Name"] == tk) & (df["Date"] >= day)
    for c in ("Open", "High", "Low", "Close"):
        df.loc[after, c] = df.loc[after, c] / 2
    df.loc[after, "Volume"] = df.loc[after, "Volume"] * 2
    df["Stock Splits"] = 0.0
    df.loc[(df["Name"] == tk) & (df["Date"] == day), "Stock Splits"] = 2.0
    raw = tmp_path / "raw.csv"
    df.to_csv(raw, index=False)
    rc, _, err = cli(capsys, "market", str(raw))
    assert rc == 0 and f"unadjusted-split] {tk} {day}" in err
    assert ("the input has split column(s), not applied: prices are as written (1 "
            "unadjusted-split warning(s)); --adjust (load_panel(adjust=True)) applies them") in err
    rc, _, err = cli(capsys, "market", str(raw), "--adjust")
    assert rc == 0 and "unadjusted-split" not in err and "not applied" not in err


def test_short_listings_and_a_partial_last_day_are_warned(vendor, tmp_path, capsys) -> None:
    """Two vendor flaws that loaded in silence: tickers with a few rows (a partial listing)
    and a last session holding half the tickers (a file cut mid-download)."""
    clean, _ = vendor
    df = pd.read_csv(clean)
    dates = sorted(df["Date"].unique())
    extra = df[df["Date"].isin(dates[-10:]) & (df["Name"] == df["Name"].iloc[0])].copy()
    extra["Name"] = "NEWCO"  # listed for the last 10 sessions only
    cut = df[(df["Date"] == dates[-1]) & df["Name"].isin(sorted(df["Name"].unique())[:2])]
    flawed = pd.concat([extra, df[df["Date"] != dates[-1]], cut]).sort_values(["Date", "Name"])
    path = tmp_path / "flawed.csv"
    flawed.to_csv(path, index=False)
    rc, _, err = cli(capsys, "market", str(path))
    assert rc == 0, err
    assert (f"warning [short-history] NEWCO {dates[-10]}: only 10 session(s) with a close "
            f"({dates[-10]}..{dates[-1]}) (1 row)") in err
    assert (f"warning [thin-session] (all) {dates[-1]}: 3 ticker(s) with a close, the median "
            "session has 8 (1 row)") in err
    rc, _, err = cli(capsys, "market", str(clean))
    assert "short-history" not in err and "thin-session" not in err


def test_score_table_says_the_adapted_split_once(vendor, capsys) -> None:
    """`gymkit score --market` prints the derived split on stderr as the market loads; the card
    table below must not repeat it (it did, word for word), and keeps the card's other notes."""
    _, flawed = vendor
    rc, out, err = cli(capsys, "score", "rank(-returns)", "--market", str(flawed), "--lenient")
    assert rc == 0
    assert err.count("split adapted to the panel") == 1
    assert "split adapted to the panel" not in out
    assert "  note: brief_compliance: " in out


def test_scoring_commands_list_a_few_warned_rows_and_market_lists_twenty(vendor, tmp_path,
                                                                          capsys) -> None:
    """A command that scores prints each warning with its first 3 rows and where to see more
    (the real S&P file's 87 split hits made one 1,459-character note); ``gymkit market FILE``,
    the command for inspecting a file, lists the report's first 20."""
    clean, _ = vendor
    df = pd.read_csv(clean)
    df.loc[df.index[100:125], "Volume"] = 0.0  # 25 zero-volume rows, prices kept
    path = tmp_path / "zeros.csv"
    df.to_csv(path, index=False)
    rc, _, err = cli(capsys, "score", "rank(-returns)", "--market", str(path))
    line = next(ln for ln in err.splitlines() if "[zero-volume]" in ln)
    assert rc == 0 and line.count("volume 0 with close") == 3
    assert line.endswith(f"(3 of 25 rows shown); 'gymkit market {path}' lists more")
    rc, _, err = cli(capsys, "market", str(path))
    line = next(ln for ln in err.splitlines() if "[zero-volume]" in ln)
    assert rc == 0 and line.count("volume 0 with close") == 20
    assert line.endswith("(20 of 25 rows shown)")
