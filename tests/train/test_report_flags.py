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
    ]
    out = flag_answers(answers)
    got = {a["top_rank"]: a["flags"] for a in out}
    assert len(out) == 10
    assert got[1] == [] and got[10] == []
    assert got[2] == ["low_ic_high_cpcv"]
    assert got[3] == ["turnover_near_floor"]
    assert got[4] == ["archive_clone"]
    assert got[5] == ["peer_clone"]
    assert got[6] == ["train_far_above_holdout"]
    assert got[7] == got[8] == got[9] == ["jittered_template"]
    assert {f for fl in got.values() for f in fl} == set(FLAGS)
