"""Briefs that bind: a brief given is checked on the AST and counts, everywhere it can be given."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gymkit
from gymkit.briefs import INCOMPATIBLE, contradictions, generate_briefs
from gymkit.cli import main
from gymkit.sft import export_rows

BRIEF_ID = "102bf2de0d1acfc4"   # reversal, 10-day windows, few fields, decay, compact
COMPLIANT = "<alpha>rank(ts_decay_linear(-returns, 10))</alpha>"
IGNORES = "<alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20))</alpha>"


@pytest.fixture(scope="module")
def env():
    return gymkit.make("us46-default")


@pytest.fixture(scope="module")
def brief() -> str:
    return next(b.text for b in generate_briefs() if b.brief_id == BRIEF_ID)


def test_no_generated_brief_contradicts_itself():
    briefs = generate_briefs()
    assert len(briefs) == 500
    bad = {b.brief_id: contradictions(b.facets) for b in briefs if contradictions(b.facets)}
    assert bad == {}
    for (fa, ka), (fb, kb), _ in INCOMPATIBLE:   # each pair really is absent
        assert not any(b.facets[fa] == ka and b.facets[fb] == kb for b in briefs)
    reversal = [b for b in briefs if b.family == "reversal"]
    assert reversal and all(int(b.facets["horizon"]) <= 10 for b in reversal)


def test_a_brief_given_is_checked_and_counts(env, brief):
    plain = env.score(COMPLIANT)
    good, bad = env.score_group([COMPLIANT, IGNORES], brief=brief)
    assert "brief_compliance" not in plain.channels           # unbriefed: the seed's channels
    assert good.channels["brief_compliance"] == 0.0
    assert -1.0 <= bad.channels["brief_compliance"] < 0.0
    alone = env.score(IGNORES)
    briefed = env.score(IGNORES, brief=brief)
    # R13 counts with its documented priority 1.0: the reward moves by exactly its value
    s_plain = sum(env.config.priorities[k] * v for k, v in alone.channels.items())
    s_brief = sum(env.config.priorities[k] * v for k, v in briefed.channels.items())
    assert s_brief == pytest.approx(s_plain + briefed.channels["brief_compliance"])
    assert briefed.reward < alone.reward and briefed.brief_digest is not None
    adv, _ = env.group_advantages([good, bad])
    x, _ = env.channel_matrix([good, bad])
    assert x.shape[1] == len(env.channels) + 1 and np.isfinite(adv).all()
    with pytest.raises(ValueError, match="one brief"):
        env.group_advantages([good, plain])


def test_an_unknown_brief_text_is_noted_not_trusted(env):
    card = env.score(COMPLIANT, brief="make money")
    assert card.channels["brief_compliance"] == 0.0
    assert any("not one the generator made" in n for n in card.notes)


def test_cli_score_brief(env, capsys, brief):
    assert main(["score", "--json", "--brief", BRIEF_ID, IGNORES]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["channels"]["brief_compliance"] < 0
    assert main(["score", "--json", "--brief", brief, COMPLIANT]) == 0
    assert json.loads(capsys.readouterr().out)["channels"]["brief_compliance"] == 0.0
    assert main(["score", "--brief", "no such brief", COMPLIANT]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--brief" in err[0]


def test_priority_on_an_inactive_channel_is_an_error():
    with pytest.raises(ValueError, match="not active") as info:
        gymkit.make("us46-default", channels=["cpcv", "turnover"], priorities={"ic": 2.0})
    assert "\n" not in str(info.value) and "ic" in str(info.value)


def test_export_sft_keeps_only_pairs_that_pass_their_brief(env):
    # the sector-neutral form: the plain decayed reversal is R4's reversal factor, which the
    # motif guard caps, and a capped answer is never exported
    neutral = "<alpha>rank(ts_decay_linear(group_neutralize(-returns, sector), 10))</alpha>"
    rows = export_rows(env, [{"brief_id": BRIEF_ID, "completion": c} for c in (neutral, IGNORES)],
                       threshold=-1e9)
    assert [r["formula"] for r in rows] == ["rank(ts_decay_linear(group_neutralize(-returns, sector), 10))"]
    assert rows[0]["card"]["channels"]["brief_compliance"] == 0.0
