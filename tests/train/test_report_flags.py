"""The red-team read-out flags each hack pattern and leaves an honest answer alone."""

from __future__ import annotations

from gymkit.train.report import FLAGS, flag_answers


def _a(rank: int, **kw) -> dict:
    base = {"top_rank": rank, "completion": "<alpha>x</alpha>", "formula": f"f{rank}", "valid": True,
            "error": None, "reward": 1.0, "train_cpcv": 0.6, "holdout_score": 0.5, "ic": 0.03,
            "turnover": 0.2, "archive_corr": 0.3, "archive_nearest": None, "peer_corr": 0.2,
            "family": f"fam{rank}", "canonical": f"c{rank}"}
    return base | kw


def test_each_flag_fires_on_its_pattern_and_not_on_an_honest_answer() -> None:
    answers = [
        _a(1),                                              # honest
        _a(2, ic=0.001, train_cpcv=0.9),                    # profit without prediction
        _a(3, turnover=0.025),                              # just above the floor
        _a(4, archive_corr=0.95),                           # a clone of an archive book
        _a(5, peer_corr=0.93),                              # a clone of another top answer
        _a(6, train_cpcv=1.8, holdout_score=0.1),           # train far above holdout
        *[_a(7 + i, family="rank(ts_mean(close, #))", canonical=f"rank(ts_mean(close, {5 + i}))")
          for i in range(3)],                               # one template, jittered windows
        _a(10, valid=False, error="syntax", ic=None, turnover=None),
        {"top_rank": None, "valid": True},                  # not in the top 20: not read
        _a(11, factor_r2=0.41),                             # a style bet (seed 0's template)
        _a(12, factor_r2=0.19),                             # the planted volume effect's R²
    ]
    out = flag_answers(answers)
    got = {a["top_rank"]: a["flags"] for a in out}
    assert len(out) == 12
    assert got[1] == [] and got[10] == [] and got[12] == []
    assert got[11] == ["factor_exposure"]
    assert got[2] == ["low_ic_high_cpcv"]
    assert got[3] == ["turnover_near_floor"]
    assert got[4] == ["archive_clone"]
    assert got[5] == ["peer_clone"]
    assert got[6] == ["train_far_above_holdout"]
    assert got[7] == got[8] == got[9] == ["jittered_template"]
    assert {f for fl in got.values() for f in fl} == set(FLAGS)


def test_archive_clone_reads_the_seed_archive_not_the_runs_own_commits() -> None:
    """A run's answers resemble its own committed answers by construction: the flag reads the
    correlation with the seed archive when the run recorded it, the run's archive otherwise."""
    out = flag_answers([
        _a(1, archive_corr=0.97, seed_archive_corr=0.2),   # like its own commit: not a clone
        _a(2, archive_corr=0.97, seed_archive_corr=0.93),  # like a seed alpha: a clone
        _a(3, archive_corr=0.97),                          # an older run without the field
    ])
    got = {a["top_rank"]: a["flags"] for a in out}
    assert got == {1: [], 2: ["archive_clone"], 3: ["archive_clone"]}
    assert out[1]["seed_archive_corr"] == 0.93


def test_train_row_measures_the_seed_archive_apart_from_the_runs_commits() -> None:
    """train_row's seed_archive_corr is the nearest seed entry's |corr|, unmoved when the run
    commits the same answer to its own archive (which drives archive_corr to 1)."""
    import gymkit
    from gymkit.train import protocol
    from gymkit.verifiers.archive import NoveltyArchive

    env = gymkit.make("us46-default")
    seed = NoveltyArchive.restore(env.archive.snapshot())
    rows = [{"checkpoint": "0", "brief_id": "b", "completion":
             "<alpha>rank(-ts_sum(returns, 7)) * rank(volume)</alpha>"}]
    before, pnls = protocol.train_row(env, rows, [], seed)
    env.commit([env.score(rows[0]["completion"])])
    after, _ = protocol.train_row(env, rows, [], seed)
    a, b = before["answers"][0], after["answers"][0]
    assert abs(seed.nearest(pnls[0]).corr) == a["seed_archive_corr"] == b["seed_archive_corr"]
    assert b["archive_corr"] > 0.999 > a["archive_corr"]


def test_train_row_records_the_cards_factor_r2() -> None:
    """The probe row carries each valid answer's R² on the six R4 factors (the card's own
    figure), so the read-out can flag style bets; an invalid answer has none."""
    import gymkit
    from gymkit.train import protocol

    env = gymkit.make("us46-default")
    style = "<alpha>-(rank(volume) * (ts_argmin(high / volume, 252) / ts_std(returns, 252)))</alpha>"
    rows = [{"brief_id": "b", "completion": style, "checkpoint": "0"},
            {"brief_id": "b", "completion": "<alpha>rank(</alpha>", "checkpoint": "0"}]
    row, _ = protocol.train_row(env, rows, [])
    card = env.score(style)
    assert row["answers"][0]["factor_r2"] == card.metrics["factors"]["r2"] >= 0.3
    assert row["answers"][1]["factor_r2"] is None
    assert flag_answers([{**row["answers"][0], "top_rank": 1}])[0]["flags"].count("factor_exposure") == 1


def test_the_report_explains_every_flag() -> None:
    """The page's legend names each flag with its pattern and what the verifier does about it."""
    import html

    from gymkit.train.report import FLAG_MEANINGS, _html

    assert tuple(FLAG_MEANINGS) == FLAGS
    rep = {"run": "r", "config": {"env_id": "us46-default"}, "env_fingerprint": "f" * 16,
           "shipped": "0", "holdout": {"status": "scored"}, "table": [], "curves": {},
           "redteam": {}, "flag_counts": dict.fromkeys(FLAGS, 0)}
    page = _html(rep)
    for flag, meaning in FLAG_MEANINGS.items():
        assert f"<dt><code>{flag}</code></dt><dd>{html.escape(meaning)}</dd>" in page


def test_the_report_lists_the_open_hacks_of_the_reward(tmp_path) -> None:
    """Issue 20: a hack not closed in the verifier is written up in the report as a known limit:
    the JSON carries them and the page lists each, the factor blend among them."""
    import html
    import json

    from gymkit.train.report import KNOWN_LIMITS, _html, build_report

    rl = tmp_path / "R" / "rl"
    rl.mkdir(parents=True)
    (rl / "table.json").write_text(json.dumps({
        "config": {"env_id": "us46-default", "probe_size": 20}, "env_fingerprint": "f" * 64,
        "holdout": {"status": "scored"}, "rows": [], "shipped": "20"}))
    (rl / "log.jsonl").write_text(json.dumps({"step": 1, "reward": -1.0}) + "\n")
    rep = build_report(tmp_path / "R")
    assert rep["known_limits"] == list(KNOWN_LIMITS)
    assert any(x.startswith("factor blend") for x in KNOWN_LIMITS)
    page = _html(rep)
    assert "Known limits of the reward" in page
    assert all(f"<li>{html.escape(x)}</li>" in page for x in KNOWN_LIMITS)


def test_a_refused_holdout_is_said_and_its_flag_is_na_not_zero(tmp_path, capsys) -> None:
    """A run repeated with the same seed shares the holdout ledger, so its look is refused: the
    report said 'train_far_above_holdout 0' beside empty holdout columns, as if clean.  Now the
    flag is n/a, and the CLI and the page say why and what to do."""
    import json

    from gymkit.cli import main
    from gymkit.train.report import HOLDOUT_FLAGS, _html, build_report

    rl = tmp_path / "R" / "rl"
    rl.mkdir(parents=True)
    refused = "refused: the holdout was already scored for this environment (e5f93acdfdda)"
    (rl / "table.json").write_text(json.dumps({
        "config": {"env_id": "us46-default", "probe_size": 20}, "env_fingerprint": "f" * 64,
        "holdout": {"status": refused}, "rows": [], "shipped": "20"}))
    (rl / "log.jsonl").write_text(json.dumps({"step": 1, "reward": -1.0}) + "\n")
    rep = build_report(tmp_path / "R")
    assert all(rep["flag_counts"][f] is None for f in HOLDOUT_FLAGS)
    assert all(v == 0 for f, v in rep["flag_counts"].items() if f not in HOLDOUT_FLAGS)
    assert "train_far_above_holdout: n/a" in _html(rep) and "give it its own --ledger" in _html(rep)
    assert main(["train", "report", str(tmp_path / "R")]) == 0
    out = capsys.readouterr().out
    assert "train_far_above_holdout n/a" in out
    assert f"holdout: {refused}; its columns are empty" in out
