"""Bring your own market, end to end, on ../shared/data/real as a user runs it: the raw vendor
file -> ``gymkit market clean`` -> an environment with the derived split -> the 101 paper
alphas scored -> ``probe --holdout`` once -> a second look refused -> ``book`` -> ``report``
-> ``audit``.  The environment TOML seeds no archive (``archive.seed = "none"``) to keep CI
time modest; everything else is the default configuration."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import gymkit
from gymkit.cli import main
from gymkit.config import EnvConfig
from gymkit.data import REAL_DATA_PATH, load_panel

RAW = REAL_DATA_PATH
PAPER = Path(__file__).resolve().parents[3] / "shared" / "alpha101" / "formulas.tsv"
pytestmark = [pytest.mark.real, pytest.mark.slow,
              pytest.mark.skipif(not (RAW.is_file() and PAPER.is_file()),
                                 reason="../shared/data/real or ../shared/alpha101 is absent")]

#: What a formula may fail with on a market without sector, industry or cap: a gate, never
#: an internal error.
ALLOWED = {"field_unavailable", "group_unavailable", "turnover_floor",
           "degenerate_book"}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_real_market_end_to_end(tmp_path, capsys) -> None:
    clean = tmp_path / "sp500.parquet"
    rc, out, _ = cli(capsys, "market", "clean", str(RAW), str(clean), "--adjust")
    assert rc == 0 and "2236 sessions x 504 tickers" in out
    report = json.loads(clean.with_name("sp500.parquet.report.json").read_text())
    assert report["warnings"]["zero-volume"]["count"] == 4  # the data README's 4 rows
    assert "unadjusted-split" in report["warnings"]  # what --adjust cannot explain

    rc, out, err = cli(capsys, "market", str(clean))
    assert rc == 0 and ("split        train 1984 sessions 2012-06-01..2020-04-21, holdout 252 "
                        "sessions 2020-04-22..2021-04-21") in out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panel = load_panel(clean)
    env = gymkit.make("us46-default", market=panel, archive={"seed": "none"})
    assert env.config.split["holdout_start"] == "2020-04-22"
    assert env.notes[0].startswith("split adapted to the panel (no split given")
    paper = [ln.split("\t", 1)[1] for ln in PAPER.read_text().splitlines() if ln.strip()]
    cards = env.score_group([f"<alpha>{f}</alpha>" for f in paper])
    codes = {c.error.code for c in cards if c.error is not None}
    assert codes <= ALLOWED, codes
    assert sum(c.valid for c in cards) >= 50

    cfg = tmp_path / "env.toml"
    EnvConfig(archive={"seed": "none"}).save(cfg)
    answers = tmp_path / "paper.jsonl"
    answers.write_text("".join(json.dumps({"checkpoint": "paper", "completion": f"<alpha>{f}"
                                           "</alpha>"}) + "\n" for f in paper[:30]))
    ledger = str(tmp_path / "ledger.sqlite")
    common = ["--env", str(cfg), "--market", str(clean), "--ledger", ledger]
    rc, out, err = cli(capsys, "probe", "--answers", str(answers), "--holdout", "--out",
                       str(tmp_path / "probe"), *common)
    assert rc == 0 and "holdout result written once" in out and "split adapted" in err
    rc, _, err = cli(capsys, "probe", "--answers", str(answers), "--holdout", "--out",
                     str(tmp_path / "probe2"), *common)
    assert rc == 1 and "the holdout was already scored" in err
    rc, out, _ = cli(capsys, "book", "--answers", str(answers), *common)
    assert rc == 0 and json.loads(out)["window"] == "train"
    rc, _, err = cli(capsys, "book", "--answers", str(answers), "--window", "holdout", *common)
    assert rc == 1 and "already scored" in err
    rc, out, _ = cli(capsys, "report", paper[1], "--out", str(tmp_path / "report"),
                     "--no-timestamp", *common)
    assert rc == 0 and (tmp_path / "report" / "index.html").is_file()
    rc, out, _ = cli(capsys, "audit", "--config", str(cfg), "--market", str(clean), "--checks",
                     "holdout_isolation,frozen_holdout,error_hygiene,hand_play,non_triviality")
    assert rc == 0, out
