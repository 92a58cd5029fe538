"""The checkpoint selector counts invalid answers: few good valid answers do not win.

A real 600-step run shipped a checkpoint that wrote 11 valid answers of 50 because the
selector averaged R1 over the valid answers only (train CPCV +0.78 vs +0.68 for the next
checkpoint, 50/50 valid).  Now both selectors (``gymkit probe`` and ``gymkit train``'s
protocol) average every answer's R1, an invalid one at the R1 floor (-5, the clip).

That floor is the second fix: an invalid one used to count at its card's own R1, the gate's
penalty (-0.8), above every valid answer whose R1 is below it, so a checkpoint that broke its
worst formulas into syntax errors out-selected one that wrote them validly.
"""

from __future__ import annotations

import numpy as np
import pytest

import gymkit
from gymkit.probe import format_table, probe
from gymkit.train import protocol

GOOD = ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>-rank(ts_delta(close, 5))</alpha>"]
BROKEN = ["<alpha>rank(</alpha>", "no answer", "<alpha>close - close</alpha>"] * 3
PLAIN = ["<alpha>rank(-ts_sum(returns, 10))</alpha>", "<alpha>rank(ts_std(returns, 20))</alpha>"] * 4


@pytest.fixture(scope="module")
def env() -> gymkit.Environment:
    return gymkit.make("us46-default")


def _answers() -> list[dict[str, str]]:
    return ([{"checkpoint": "few", "brief_id": "b", "completion": c} for c in GOOD + BROKEN]
            + [{"checkpoint": "all", "brief_id": "b", "completion": c} for c in PLAIN])


def test_gymkit_probe_selects_the_checkpoint_whose_answers_are_all_valid(env) -> None:
    rows = {r.checkpoint: r for r in probe(env, _answers())}
    few, all_ = rows["few"], rows["all"]
    assert few.n_valid == 2 and all_.n_valid == len(PLAIN)
    # the scenario: on valid answers alone, "few" is better (the old rule shipped it)
    assert few.train_cpcv_valid > all_.train_cpcv_valid
    assert all_.train_cpcv > few.train_cpcv
    cards = [env.score(a["completion"]) for a in _answers() if a["checkpoint"] == "few"]
    floor = -env.setup.params.cpcv_clip
    assert few.train_cpcv == pytest.approx(np.mean([c.channels["cpcv"] if c.valid else floor
                                                    for c in cards]))
    assert format_table(list(rows.values())).splitlines()[-1] == "selected by train CPCV: all"


def test_train_protocol_ships_the_checkpoint_whose_answers_are_all_valid(env) -> None:
    rows = []
    for ck in ("few", "all"):
        answers = [a | {"brief_id": "none"} for a in _answers() if a["checkpoint"] == ck]
        row, _ = protocol.train_row(env, answers, [])
        row["step"] = ck
        rows.append(row)
    assert rows[0]["train_cpcv_valid"] > rows[1]["train_cpcv_valid"]
    assert protocol.best_checkpoint(rows) == "all"


#: valid, R1 between the clip and the syntax error's penalty (-2.99, -2.75 on the default market)
BAD_VALID = ["<alpha>rank(ts_sum(returns, 5))</alpha>", "<alpha>rank(returns)</alpha>"]
SYNTAX = ["<alpha>rank(</alpha>", "<alpha>rank(returns</alpha>"]


def _honest_and_broken() -> dict[str, list[dict[str, str]]]:
    return {"honest": [{"checkpoint": "honest", "brief_id": "b", "completion": c}
                       for c in GOOD + BAD_VALID],
            "broken": [{"checkpoint": "broken", "brief_id": "b", "completion": c}
                       for c in GOOD + SYNTAX]}


def test_breaking_bad_formulas_into_syntax_errors_does_not_win_the_selection(env) -> None:
    """The same checkpoint but for its two worst answers: written validly (R1 about -2.9) or
    as syntax errors (their cards' R1 is the -0.8 penalty).  Both selectors ship the valid one."""
    penalty = env.score(SYNTAX[0]).channels["cpcv"]
    assert all(env.score(c).valid and env.score(c).channels["cpcv"] < penalty for c in BAD_VALID)
    by = _honest_and_broken()
    rows = {r.checkpoint: r for r in probe(env, by["honest"] + by["broken"])}
    assert rows["honest"].train_cpcv > rows["broken"].train_cpcv
    assert format_table(list(rows.values())).splitlines()[-1] == "selected by train CPCV: honest"
    table = []
    for ck in ("broken", "honest"):
        row, _ = protocol.train_row(env, by[ck], [])
        row["step"] = ck
        table.append(row)
    assert protocol.best_checkpoint(table) == "honest"
