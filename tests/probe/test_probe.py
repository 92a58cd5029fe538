"""Holdout protocol, books and the SFT export on the default market."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gymkit.adapters.common import get_env
from gymkit.book import book_report
from gymkit.probe import (
    HOLDOUT_CLIP,
    alpha101_answers,
    family_of,
    format_table,
    probe,
    write_holdout_once,
)
from gymkit.sft import export_rows


@pytest.fixture(scope="session")
def env():
    return get_env("us46-default")


@pytest.fixture(scope="session")
def rows(env):
    return probe(env, alpha101_answers(), holdout=True)


def test_alpha101_table_shape(rows) -> None:
    (r,) = rows
    assert r.checkpoint == "alpha101" and r.n == 101
    assert 90 <= r.n_valid <= 101 and r.families <= r.n_valid
    assert -HOLDOUT_CLIP <= r.holdout_score <= HOLDOUT_CLIP and 0 <= r.holdout_positive <= r.n_valid
    assert np.isfinite([r.train_cpcv, r.book_return, r.book_sharpe]).all()
    held = [a["holdout_score"] for a in r.answers if a["valid"]]
    assert len(held) == r.n_valid and r.holdout_score == pytest.approx(np.mean(held))
    table = format_table(rows)
    assert table.splitlines()[0].startswith("Checkpoint\tTrain CPCV\tHoldout score\tValid")
    assert "selected by train CPCV: alpha101" in table


def test_selection_never_touches_the_holdout(env) -> None:
    """Without --holdout the rows carry no holdout number at all."""
    (r,) = probe(env, alpha101_answers()[:5])
    assert r.holdout_score is None and r.book_return is None
    assert all("holdout_score" not in a for a in r.answers)


def test_families_erase_windows() -> None:
    assert family_of("ts_mean(close, 21)") == family_of("ts_mean(close, 63)") != family_of("ts_std(close, 21)")


def test_holdout_written_once(tmp_path) -> None:
    p = write_holdout_once({"x": 1}, "ab" * 32, tmp_path)
    assert json.loads(p.read_text()) == {"x": 1}
    ledger = [json.loads(x) for x in (tmp_path / "holdout-ledger.jsonl").read_text().splitlines()]
    assert ledger[0]["answers_sha256"] == "ab" * 32 and len(ledger[0]["result_sha256"]) == 64
    with pytest.raises(ValueError, match="scored once"):
        write_holdout_once({"x": 2}, "ab" * 32, tmp_path)


def test_books(env) -> None:
    comps = [a["completion"] for a in alpha101_answers()[:30]]
    rep = book_report(env, comps, "train")
    ew, cap = rep["equal_weight"], rep["correlation_capped"]
    assert ew["members"] == rep["n_valid"] and 1 <= cap["members"] <= ew["members"]
    for k in ("return", "sharpe", "beta", "corr", "max_drawdown", "down_days", "effective_bets"):
        assert np.isfinite(ew[k])
    assert ew["max_drawdown"] <= 0 and -1 <= ew["corr"] <= 1
    cards = {c.formula: c for c in (env.score(x) for x in comps)}
    pnl = np.stack([cards[f].pnl for f in cap["formulas"]], axis=1)
    c = np.corrcoef(pnl.T) - np.eye(pnl.shape[1])
    assert np.abs(c).max() < 0.5  # the selector's cap holds on the train P&L


def test_export_sft_filters_and_dedups(env) -> None:
    a = "<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>"
    b = "<alpha>rank(ts_std(volume, 9) / ts_std(close, 8))</alpha>"  # same bucketed form
    rows = export_rows(env, [{"brief_id": "", "completion": c} for c in (a, b, "no tag")],
                       threshold=-1e9)
    best = max(env.score_group([a, b, "no tag"], brief=None)[:2], key=lambda c: c.reward)
    assert len(rows) == 1 and rows[0]["reward"] == best.reward  # best of the duplicates kept
    assert rows[0]["messages"][-1] == {"role": "assistant", "content": f"<alpha>{best.formula}</alpha>"}
    assert rows[0]["card"]["valid"] and "timings" not in rows[0]["card"]
    assert export_rows(env, [{"brief_id": "", "completion": a}], threshold=1e9) == []


def test_export_sft_counts_why_answers_were_left_out(env) -> None:
    a = "<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>"
    b = "<alpha>rank(ts_std(volume, 9) / ts_std(close, 8))</alpha>"  # same bucketed form
    counts: dict[str, int] = {}
    export_rows(env, [{"brief_id": "", "completion": c} for c in (a, b, "no tag")],
                threshold=-1e9, counts=counts)
    assert counts == {"answers": 3, "invalid": 1, "capped": 0, "below_threshold": 0,
                      "off_brief": 0, "duplicate": 1, "kept": 1}


def test_export_sft_leaves_out_what_the_motif_guard_capped(env) -> None:
    """The plain 5-day reversal is R4's reversal factor: R10 caps its reward at exactly 0, which
    the default threshold (reward >= 0) let through as a verified lesson; a capped answer is a
    suspected hack and is never exported, whatever the threshold."""
    from gymkit.verifiers.channels import cap_binds

    clone = "<alpha>rank(-ts_sum(returns, 5))</alpha>"
    honest = "<alpha>rank(group_neutralize(-ts_sum(returns, 5), sector))</alpha>"
    cards = env.score_group([clone, honest])
    assert cap_binds(cards[0]) and cards[0].reward == 0.0 and cards[1].reward > 0
    counts: dict[str, int] = {}
    rows = export_rows(env, [{"brief_id": "", "completion": c} for c in (clone, honest)],
                       threshold=-1e9, counts=counts)
    assert [r["formula"] for r in rows] == [cards[1].formula]
    assert counts["capped"] == 1 and counts["kept"] == 1


def test_export_sft_cli_refuses_to_write_nothing(tmp_path, capsys) -> None:
    """A new user got a (0, 0) parquet and exit 0 when every answer failed: now a one-line
    error with the counts, and no file."""
    from gymkit.cli import main

    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"brief_id": "", "completion": "no tag"}) + "\n")
    out = tmp_path / "sft.parquet"
    assert main(["export-sft", "--answers", str(src), "--format", "parquet", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gymkit export-sft: error: no answer passed, nothing written: 0 pairs kept of 1 "
                   "answers (invalid 1, capped by the motif guard 0, reward below 0 0, off their "
                   "brief 0, duplicate forms 0)"]
    assert not out.exists()


def test_export_sft_refuses_an_unknown_brief_and_keeps_another_seed_s_prompt(tmp_path,
                                                                            capsys) -> None:
    """A typo'd brief_id used to become the no-brief prompt silently (a pair whose prompt the
    model never saw): now a one-line error naming it, and nothing written.  A row carrying its
    brief's text (a brief of another generator seed) keeps that brief as its user turn."""
    from gymkit.briefs import generate_briefs
    from gymkit.cli import main

    src = tmp_path / "a.jsonl"
    ok = "<alpha>rank(group_neutralize(-ts_sum(returns, 5), sector))</alpha>"
    src.write_text(json.dumps({"brief_id": "deadbeefdeadbeef", "completion": ok}) + "\n")
    out = tmp_path / "sft.jsonl"
    assert main(["export-sft", "--answers", str(src), "--threshold", "-9", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "gymkit export-sft: error: 1 answer(s) with brief_id 'deadbeefdeadbeef': unknown brief_id")
    assert not out.exists()
    b = next(b for b in generate_briefs(100, 1) if b.brief_id == "b4a4d44b72379e1c")
    ok = "<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>"  # meets that brief
    src.write_text(json.dumps({"brief_id": b.brief_id, "brief": b.text, "completion": ok}) + "\n")
    assert main(["export-sft", "--answers", str(src), "--threshold", "-9", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["brief_id"] == b.brief_id and b.text in row["messages"][1]["content"]


def test_answers_without_a_checkpoint_among_checkpointed_ones_are_named(tmp_path, capsys) -> None:
    """`gymkit probe --answers`: rows with no checkpoint went to checkpoint '0' in silence,
    beside rows of other checkpoints (a new user's file).  Now a note says how many; a file
    with no checkpoint at all is one checkpoint '0', as documented, with no note."""
    import warnings

    from gymkit.cli.app import main
    from gymkit.probe import read_answers

    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in (
        {"checkpoint": 100, "completion": "<alpha>rank(close)</alpha>"},
        {"completion": "<alpha>rank(open)</alpha>"})))
    with pytest.warns(UserWarning, match=r"mixed\.jsonl: 1 of 2 answers have no 'checkpoint': "
                                         r"counted as checkpoint '0'"):
        rows = read_answers(mixed)
    assert [r["checkpoint"] for r in rows] == ["100", "0"]
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"completion": "<alpha>rank(close)</alpha>"}) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_answers(bare)[0]["checkpoint"] == "0"
    assert main(["probe", "--answers", str(mixed)]) == 0  # through the CLI as typed
    assert "gymkit: note: " + str(mixed) + ": 1 of 2 answers have no 'checkpoint'" in capsys.readouterr().err
