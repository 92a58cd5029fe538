"""Briefs: generation, family split, frozen probe, AST compliance, difficulty filter, template."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from gymkit.briefs import (
    FACETS,
    HOLDOUT_FAMILIES,
    MECHANISMS,
    Brief,
    _make,
    brief_from_text,
    check_compliance,
    difficulty_filter,
    generate_briefs,
    horizon_band,
    probe_briefs,
    split_briefs,
)
from gymkit.dsl import parse

#: sha256 of the 50 probe brief ids joined by newlines: the probe set is frozen.
PROBE_DIGEST = "b23f184ed3fcf2d7712199617ad3a9f9376b35de5140ac204ffd9d3c5193bdf5"


@pytest.fixture(scope="module")
def briefs() -> list[Brief]:
    return generate_briefs()


def test_500_distinct_briefs_with_content_ids(briefs) -> None:
    assert len(briefs) == 500 and len({b.brief_id for b in briefs}) == 500
    for b in briefs[:50]:
        assert b.brief_id == hashlib.sha256(b.text.encode()).hexdigest()[:16]
        assert b.text.startswith("Market: US-listed stocks trading on weekday sessions. Design an alpha")
    assert generate_briefs() == briefs
    assert [b.brief_id for b in generate_briefs(20, seed=1)] != [b.brief_id for b in briefs[:20]]


def test_split_is_by_whole_family(briefs) -> None:
    train, hold = split_briefs(briefs, "train"), split_briefs(briefs, "holdout")
    assert len(train) + len(hold) == 500
    assert {b.family for b in hold} == set(HOLDOUT_FAMILIES)
    assert not {b.family for b in train} & {b.family for b in hold}
    assert {b.family for b in train} == {m.key for m in MECHANISMS} - set(HOLDOUT_FAMILIES)


def test_probe_is_frozen_and_from_holdout(briefs) -> None:
    probe = probe_briefs(briefs)
    assert len(probe) == 50 and all(b.split == "holdout" for b in probe)
    assert {b.family for b in probe} == set(HOLDOUT_FAMILIES)
    digest = hashlib.sha256("\n".join(b.brief_id for b in probe).encode()).hexdigest()
    assert digest == PROBE_DIGEST


def test_text_round_trip(briefs) -> None:
    assert all(brief_from_text(b.text) == b for b in briefs)
    assert brief_from_text("Design something nice.") is None
    assert brief_from_text(briefs[0].text.replace("roughly", "about")) is None


def _brief(**facets: str) -> Brief:
    base = {"mechanism": "price_volume_corr", "horizon": "21", "input_rule": "one_ts_corr",
            "hint": "sign_relation", "forbidden": "long_price_sums", "risk": "vol_regime"}
    return _make({**base, **facets})


@pytest.mark.parametrize(("formula", "failed"), [
    ("sign(ts_corr(close, volume, 20))", []),
    ("sign(ts_corr(close, volume, 20)) + ts_corr(open, volume, 20)", ["input_rule"]),
    ("ts_corr(close, volume, 20)", ["hint"]),
    ("sign(ts_corr(close, volume, 100))", ["horizon"]),
    ("sign(ts_corr(close, volume, 20)) * ts_mean(close, 100)", ["forbidden"]),
    ("rank(ts_delta(close, 5))", ["mechanism", "input_rule", "hint", "horizon"]),
])
def test_compliance_checks_the_ast(formula: str, failed: list[str]) -> None:
    c = check_compliance(parse(formula), _brief())
    assert sorted(c.failed) == sorted(failed)
    assert c.score == pytest.approx(-len(failed) / 5)  # risk 'vol_regime' is not an AST check


def test_horizon_band_and_compact_risk() -> None:
    assert horizon_band(168) == (112, 252) and horizon_band(5) == (4, 7)
    b = _brief(risk="compact")
    assert check_compliance(parse("sign(ts_corr(close, volume, 20))"), b).checks["risk"]
    long = " + ".join(["sign(ts_corr(close, volume, 20))"] * 6)
    assert not check_compliance(parse(long), b).checks["risk"]


def test_every_option_text_is_unique_per_facet() -> None:
    for opts in FACETS.values():
        assert len({o.text for o in opts}) == len(opts) and len({o.key for o in opts}) == len(opts)


@dataclass
class _Card:
    valid: bool
    reward: float


class _StubEnv:
    """Scores 'good' as valid reward 1, 'meh' as valid reward 0, anything else invalid."""

    def score_group(self, comps, brief=None):
        return [_Card(c != "bad", {"good": 1.0, "meh": 0.0}.get(c, -1.0)) for c in comps]


def test_difficulty_filter_keeps_some_but_not_all(briefs) -> None:
    a, b, c = (x.brief_id for x in briefs[:3])
    samples = ([{"brief_id": a, "completion": x} for x in ("good", "bad", "meh")]
               + [{"brief_id": b, "completion": "good"}] * 3
               + [{"brief_id": c, "completion": x} for x in ("bad", "meh")])
    rep = difficulty_filter(samples, briefs, _StubEnv())
    assert rep.kept == [a] and rep.solved == {a: 1, b: 3, c: 0} and rep.tries[c] == 2
    assert difficulty_filter(samples, briefs, _StubEnv(), threshold=-0.5).kept == sorted([a, c])
    with pytest.raises(ValueError, match="unknown brief_id"):
        difficulty_filter([{"brief_id": "nope", "completion": "x"}], briefs, _StubEnv())


V = "rank(ts_std(volume, 21) / ts_mean(volume, 21))"
JUNK = ("ts_max(close * volume, 5) + sign(ts_corr(vwap, volume, 10)) + ts_skew(returns, 21) "
        "+ ts_slope(high - low, 50) + ts_decay_linear(open - delay(close, 1), 7) "
        "+ ts_rank(rank(volume), 200) + ts_mean(volume, 126) + returns / ts_std(returns, 10)")


def test_dead_code_meets_no_facet(briefs) -> None:
    """The red team's R13 hack: ``rank(1 ? V : JUNK)`` has the book of ``V`` but its dead
    branch met the facets of 65% of the 500 briefs (mean R13 -0.62 -> -0.07).  Facets are read
    off the live part now: the dead branch, or a product with 0, adds nothing; the scores of
    the live formula and of the padded ones are the same on every brief but the compact one."""
    import gymkit

    plain, dead, zero = (parse(t) for t in (V, f"rank(1 ? {V} : {JUNK})", f"{V} + 0 * ({JUNK})"))
    for b in briefs:
        want = check_compliance(plain, b).checks
        for padded in (dead, zero):
            got = check_compliance(padded, b).checks
            assert {k: v for k, v in got.items() if k != "risk"} == {
                k: v for k, v in want.items() if k != "risk"}, b.brief_id
    assert sum(check_compliance(dead, b).score == 0.0 for b in briefs) <= sum(
        check_compliance(plain, b).score == 0.0 for b in briefs)
    env = gymkit.make("us46-default")  # through the card: the padded answer gains nothing
    b = briefs[1]
    assert env.score(f"<alpha>rank(1 ? {V} : {JUNK})</alpha>", brief=b.text).reward <= env.score(
        f"<alpha>{V}</alpha>", brief=b.text).reward
    # a live conditional still counts as one
    live = parse(f"rank(volume > ts_mean(volume, 21) ? {V} : -returns)")
    cond = next(x for x in briefs if x.facets["hint"] == "conditional")
    assert check_compliance(live, cond).checks["hint"]
    assert not check_compliance(parse(f"rank(1 ? {V} : -returns)"), cond).checks["hint"]
