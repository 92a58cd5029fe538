"""Holdout once, everywhere: probe, book --window holdout, report --holdout and the Python API
share one SQLite ledger keyed by environment fingerprint and formula set."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

import gymkit
from gymkit.cli import main
from gymkit.holdout import HoldoutLedger, HoldoutRefused, score_holdout

ANSWERS = ["<alpha>rank(-ts_sum(returns, 5))</alpha>",
           "<alpha>rank(ts_std(volume, 20))</alpha>",
           "<alpha>-ts_corr(rank(volume), rank(close), 10)</alpha>"]


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def answers(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"checkpoint": "ck1", "completion": a}) + "\n"
                            for a in ANSWERS))
    return path


def test_one_look_across_commands(tmp_path, answers, capsys) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    rc, out, _ = cli(capsys, "probe", "--answers", str(answers), "--holdout", "--out",
                     str(tmp_path / "p"), "--ledger", ledger)
    assert rc == 0 and "holdout result written once" in out
    rc, _, err = cli(capsys, "probe", "--answers", str(answers), "--holdout", "--out",
                     str(tmp_path / "q"), "--ledger", ledger)
    assert rc == 1 and err.count("\n") == 1
    assert "the holdout was already scored for this environment" in err
    assert "by 'gymkit probe --holdout' at 20" in err and "--force-holdout" in err
    # the same formulas in another order under another checkpoint, asked by another command
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("".join(json.dumps({"checkpoint": "other", "completion": a}) + "\n"
                                for a in reversed(ANSWERS)))
    rc, _, err = cli(capsys, "book", "--answers", str(shuffled), "--window", "holdout",
                     "--ledger", ledger)
    assert rc == 1 and "already scored" in err
    rc, out, err = cli(capsys, "book", "--answers", str(shuffled), "--window", "holdout",
                       "--ledger", ledger, "--force-holdout")
    assert rc == 0 and "FORCED look #2" in err
    assert json.loads(out)["holdout_look"] == {"number": 2, "forced": True}
    rc, _, _ = cli(capsys, "book", "--answers", str(shuffled), "--ledger", ledger)  # train: free
    assert rc == 0
    db = sqlite3.connect(ledger)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT command, forced FROM looks ORDER BY id").fetchall() == [
        ("gymkit probe --holdout", 0), ("gymkit book --window holdout", 1)]


def test_report_shows_the_holdout_only_through_the_ledger(tmp_path, capsys) -> None:
    ledger = str(tmp_path / "ledger.sqlite")
    formula = "rank(-ts_sum(returns, 5))"
    rc, _, _ = cli(capsys, "report", formula, "--out", str(tmp_path / "a"), "--no-timestamp",
                   "--ledger", ledger)
    assert rc == 0 and "holdout Sharpe (net)" not in (tmp_path / "a" / "index.html").read_text()
    rc, _, _ = cli(capsys, "report", formula, "--holdout", "--out", str(tmp_path / "b"),
                   "--no-timestamp", "--ledger", ledger)
    assert rc == 0 and "holdout Sharpe (net)" in (tmp_path / "b" / "index.html").read_text()
    rc, _, err = cli(capsys, "report", formula, "--holdout", "--out", str(tmp_path / "c"),
                     "--ledger", ledger)
    assert rc == 1 and "already scored" in err and not (tmp_path / "c").exists()


def test_python_api_shares_the_ledger(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GYMKIT_HOLDOUT_LEDGER", str(tmp_path / "l.sqlite"))
    env = gymkit.make("us46-default")
    first = score_holdout(env, ANSWERS)
    assert first["look"] == 1 and not first["forced"] and len(first["answers"]) == 3
    with pytest.raises(HoldoutRefused, match="already scored"):
        score_holdout(env, list(reversed(ANSWERS)))
    again = score_holdout(env, ANSWERS, force=True)
    assert again["forced"] and again["answers"] == first["answers"]  # bit-identical figures
    # another split whose holdout still holds the seen sessions: the same holdout data
    overlap = gymkit.make("us46-default", split={"train_end": "2024-08-20"})
    with pytest.raises(HoldoutRefused, match=r"already scored on this market's holdout sessions "
                       r"2025-08-21\.\.2026-08-21 \(in environment "):
        score_holdout(overlap, ANSWERS)
    # a holdout of other sessions (the year before) is a first look
    other = gymkit.make("us46-default", split={"train_end": "2024-08-20",
                                               "holdout_end": "2025-08-20"})
    assert score_holdout(other, ANSWERS)["look"] == 1


def test_another_config_of_the_same_market_does_not_buy_a_second_look(tmp_path, capsys) -> None:
    """A new user's way round the rule: the same market and split under a copied environment
    file with one priority changed (another environment fingerprint) was a fresh first look.
    It is refused now, through the CLI as typed, and --force-holdout is recorded as look 2."""
    from gymkit.cli import main

    ledger = str(tmp_path / "l.sqlite")
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"brief_id": "", "completion": a}) + "\n"
                               for a in ANSWERS))
    assert main(["env", "show", "us46-default", "--toml"]) == 0
    toml = capsys.readouterr().out
    assert "complexity = 0.2\n" in toml
    mine = tmp_path / "mine.toml"
    mine.write_text(toml.replace("complexity = 0.2\n", "complexity = 0.21\n"))
    base = ["probe", "--answers", str(answers), "--holdout", "--ledger", ledger]
    assert main([*base, "--out", str(tmp_path / "p1")]) == 0
    capsys.readouterr()
    assert main([*base, "--env", str(mine), "--out", str(tmp_path / "p2")]) == 1
    err = capsys.readouterr().err
    assert "already scored on this market's holdout sessions 2025-08-21..2026-08-21" in err
    assert main([*base, "--env", str(mine), "--out", str(tmp_path / "p3"), "--force-holdout"]) == 0
    assert "FORCED look #2" in capsys.readouterr().out


_RACE = """
import sys
from gymkit.holdout import HoldoutLedger, HoldoutRefused
try:
    with HoldoutLedger(sys.argv[1]) as db:
        db.claim("env", "set", n_formulas=1, command="race")
    print("ok")
except HoldoutRefused:
    print("refused")
"""


def test_racing_processes_get_one_first_look(tmp_path) -> None:
    path = str(tmp_path / "race.sqlite")
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, path], stdout=subprocess.PIPE,
                              text=True, cwd=tmp_path) for _ in range(4)]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["ok", "refused", "refused", "refused"]
    assert len(HoldoutLedger(path).looks("env", "set")) == 1


def test_an_older_ledger_gains_the_new_columns_and_keeps_its_looks(tmp_path) -> None:
    """A ledger written before looks recorded their market and holdout window: opening it adds
    the columns in place; its rows still refuse a second look in their own environment."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""CREATE TABLE looks (id INTEGER PRIMARY KEY AUTOINCREMENT,
        created_utc TEXT NOT NULL, env_fingerprint TEXT NOT NULL, formula_set TEXT NOT NULL,
        n_formulas INTEGER NOT NULL, command TEXT NOT NULL, forced INTEGER NOT NULL,
        result_sha256 TEXT);
        INSERT INTO looks (created_utc, env_fingerprint, formula_set, n_formulas, command, forced)
        VALUES ('2026-12-01T00:00:00Z', 'envA', 'setA', 2, 'old', 0);""")
    db.commit()
    db.close()
    with HoldoutLedger(path) as ledger:
        with pytest.raises(HoldoutRefused, match="'old' at 2026-12-01T00:00:00Z"):
            ledger.claim("envA", "setA", n_formulas=2, command="new", market_fingerprint="m",
                         holdout=("2025-01-02", "2025-12-31"))
        look = ledger.claim("envB", "setA", n_formulas=2, command="new", market_fingerprint="m",
                            holdout=("2025-01-02", "2025-12-31"))
        assert look.number == 1 and look.market_fingerprint == "m"
        with pytest.raises(HoldoutRefused, match=r"holdout sessions 2025-01-02\.\.2025-12-31"):
            ledger.claim("envC", "setA", n_formulas=2, command="newer", market_fingerprint="m",
                         holdout=("2025-12-31", "2026-06-30"))  # one shared session
        assert ledger.claim("envC", "setA", n_formulas=2, command="newer", market_fingerprint="m",
                            holdout=("2026-01-02", "2026-06-30")).number == 1


def test_the_tear_sheet_says_which_look_it_shows(tmp_path, capsys) -> None:
    """A shared tear sheet must not hide that its holdout figures are a forced second look:
    ``gymkit report --holdout`` notes the first look, ``--force-holdout`` the forced one."""
    from gymkit.cli import main

    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"completion": a}) + "\n" for a in ANSWERS))
    base = ["report", "--answers", str(answers), "--ledger", str(tmp_path / "l.sqlite"),
            "--no-timestamp"]
    assert main([*base, "--holdout", "--out", str(tmp_path / "r1")]) == 0
    assert main([*base, "--holdout", "--out", str(tmp_path / "r2")]) == 1
    assert main([*base, "--force-holdout", "--out", str(tmp_path / "r3")]) == 0
    capsys.readouterr()
    first = (tmp_path / "r1" / "index.html").read_text()
    forced = (tmp_path / "r3" / "index.html").read_text()
    assert "holdout: first look at this holdout and formula set" in first
    assert "FORCED look #2" not in first
    assert "holdout: FORCED look #2 at this holdout and formula set (--force-holdout)" in forced
