"""A split whose holdout cannot be judged is a one-line error when the environment is built,
before any holdout look is claimed: a new user's ``gymkit book --window holdout --split
train_end=...`` with a 3-session holdout used to fail *after* the ledger recorded the look, so
the corrected command was refused as a second look at a holdout nobody had seen."""

from __future__ import annotations

import sqlite3

import pytest

from gymkit.cli import main
from gymkit.data import default_market
from gymkit.data.splits import resolve_split

T = 700


@pytest.fixture(scope="module")
def market(eight_stock_csv):
    """The 8-stock, 700-session user CSV and its session dates."""
    return eight_stock_csv(), default_market().dates[:T]


@pytest.fixture(autouse=True)
def _own_state(tmp_path, monkeypatch):
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GYMKIT_HOLDOUT_LEDGER", str(tmp_path / "ledger.sqlite"))


def _looks(tmp_path) -> int:
    path = tmp_path / "ledger.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        return sum(db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)


def test_a_holdout_too_short_to_judge_is_refused_before_any_look(market, tmp_path, capsys):
    path, dates = market
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"completion": "<alpha>rank(-ts_sum(returns, 5))</alpha>"}\n')
    argv = ["book", "--answers", str(answers), "--window", "holdout", "--market", str(path),
            "--split", f"train_end={dates[T - 4]}"]
    for _ in range(2):  # the same one-line error both times: nothing was claimed
        assert main(argv) == 1
        err = capsys.readouterr().err
        lines = [x for x in err.splitlines() if x.strip() and "note:" not in x]
        assert len(lines) == 1, err
        assert "split leaves 3 holdout sessions" in lines[0]
        assert "the holdout needs at least 8" in lines[0]
        assert "already" not in err
    assert _looks(tmp_path) == 0
    # eight sessions are enough: the holdout book is scored, once
    argv[-1] = f"train_end={dates[T - 9]}"
    assert main(argv) == 0
    assert "holdout" in capsys.readouterr().out
    assert _looks(tmp_path) >= 1


def test_resolve_split_counts_holdout_sessions(market):
    _, dates = market
    split, note = resolve_split(dates, {"train_end": str(dates[T - 9])}, min_holdout=8)
    assert "holdout" in note and split.holdout_start == str(dates[T - 8])
    with pytest.raises(ValueError, match=r"^split leaves 7 holdout sessions .*at least 8"):
        resolve_split(dates, {"train_end": str(dates[T - 8])}, min_holdout=8)


@pytest.fixture(scope="module")
def lonely_holdout(tmp_path_factory, eight_stock_csv):
    """The user CSV with one stock only in its last 252 sessions (the derived holdout): the
    other seven stopped trading (a vendor file of a delisted universe)."""
    import pandas as pd

    frame = pd.read_csv(eight_stock_csv())
    dates = sorted(frame["date"].unique())
    keep = (frame["date"] < dates[T - 252]) | (frame["ticker"] == frame["ticker"].iloc[0])
    path = tmp_path_factory.mktemp("lonely") / "lonely.csv"
    frame[keep].to_csv(path, index=False)
    return path, frame["ticker"].iloc[0]


@pytest.mark.parametrize("command", [
    ["probe", "--answers", "{a}", "--holdout", "--out", "{out}"],
    ["book", "--answers", "{a}", "--window", "holdout"],
])
def test_a_holdout_with_one_priced_stock_is_refused_and_no_look_spent(lonely_holdout, tmp_path,
                                                                      capsys, command):
    path, ticker = lonely_holdout
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"completion": "<alpha>rank(-ts_sum(returns, 5))</alpha>"}\n')
    argv = [x.format(a=answers, out=tmp_path / "p") for x in command] + ["--market", str(path)]
    for _ in range(2):  # the same error twice: the look was never claimed
        assert main(argv) == 1
        err = capsys.readouterr().err
        lines = [x for x in err.splitlines() if x.strip() and "note:" not in x]
        assert len(lines) == 1, err
        assert f"has an open price for 1 stock ({ticker})" in lines[0]
        assert "the look is not spent" in lines[0]
    assert _looks(tmp_path) == 0
    # train-window commands still run on it, and the environment says why the holdout cannot
    assert main(["score", "rank(-ts_sum(returns, 5))", "--market", str(path)]) == 0
    import gymkit
    from gymkit.data import load_panel

    env = gymkit.make("us46-default", market=load_panel(path))
    assert any(n.startswith("holdout: the holdout") for n in env.notes)
