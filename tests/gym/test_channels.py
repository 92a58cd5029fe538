"""The channel registry: table structure, and one worked example per channel and constant."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gymkit.verifiers.channels import (
    CHANNEL_NAMES,
    CHANNELS,
    AnswerFacts,
    ChannelParams,
    channel,
    compute_channels,
)

P = ChannelParams()


def fn(name: str):
    return channel(name).fn


def ok(**kw) -> AnswerFacts:
    """A valid answer with neutral facts, overridden by ``kw``."""
    base = dict(valid=True, cpcv=0.5, turnover=0.2, ic=0.02, raw_sharpe=1.0, residual_sharpe=1.0,
                mean_is=1.0, mean_oos=1.0, node_count=5)
    return AnswerFacts(**{**base, **kw})


def bad(code: str) -> AnswerFacts:
    return AnswerFacts(valid=False, error_code=code)


def test_table_is_r1_to_r12_with_design_priorities_plus_r13_off_by_default() -> None:
    assert [c.id for c in CHANNELS] == [f"R{i}" for i in range(1, 14)]
    assert CHANNEL_NAMES == ("cpcv", "pbo", "jepa_stress", "factor_neutrality", "turnover",
                             "min_turnover", "ic", "novelty_pnl", "novelty_syntax", "motif_guard",
                             "complexity", "format", "brief_compliance")
    # R13 is off by default; its priority 1.0 applies whenever a brief is given
    assert [c.priority for c in CHANNELS] == [3.0, 1.0, 0.4, 0.4, 1.0, 0.5, 0.2, 0.4, 0.2, 0.3, 0.2, 1.0, 1.0]
    # The seed's 12-channel setup is what an environment runs unless told otherwise.
    assert [c.id for c in CHANNELS if c.default_on] == [f"R{i}" for i in range(1, 13)]
    assert [c.name for c in CHANNELS if c.group] == ["pbo"]
    assert [c.name for c in CHANNELS if c.needs] == ["jepa_stress"]
    assert channel("R7") is channel("ic")
    with pytest.raises(ValueError, match="unknown reward channel 'sharpe'"):
        channel("sharpe")


@pytest.mark.parametrize(("facts", "want"), [
    (ok(cpcv=0.8), 0.8),
    (ok(cpcv=7.2), 5.0),
    (ok(cpcv=-6.0), -5.0),
    (bad("missing_tag"), -1.0),
    (bad("empty_tag"), -1.0),
    (bad("multiple_tags"), -1.0),
    (bad("unclosed_tag"), -1.0),
    (bad("syntax"), -0.8),
    (bad("lookback"), -0.8),
    (bad("field_unavailable"), -0.8),
    (bad("turnover_floor"), -0.8),
    (bad("degenerate_book"), -0.8),
    (bad("evaluation_failed"), -0.8),
])
def test_r1_cpcv_clip_and_gate_penalties(facts: AnswerFacts, want: float) -> None:
    assert fn("cpcv")(facts, P) == want


def test_r2_rank_drop_per_split_over_valid_answers_only() -> None:
    # Two CPCV splits.  Split 0: in-sample order 0 > 1 > 2 > 3, test order reversed.
    # Split 1: both orders agree (no drop).  Answer 4 is invalid and ignored.
    def sp(is_, oos):
        return ok(is_sharpes=is_, test_sharpes=oos)

    group = [sp((3.0, 3.0), (0.0, 3.0)), sp((2.0, 2.0), (1.0, 2.0)),
             sp((1.0, 1.0), (2.0, 1.0)), sp((0.0, 0.0), (3.0, 0.0)), bad("syntax")]
    got = fn("pbo")(group, P)
    # split 0 penalties: −0.48·(3, 1, 0, 0)/3; split 1: 0; mean over the two splits.
    np.testing.assert_allclose(got, [-0.24, -0.08, 0.0, 0.0, 0.0], atol=1e-15)
    assert fn("pbo")([sp((1.0,), (0.0,))], P).tolist() == [0.0]  # a single answer has no group


def test_r2_fires_for_a_formula_that_wins_in_sample_and_loses_out_of_sample() -> None:
    # Same full-window means for everyone, but answer 0 is best in-sample and worst in test
    # on every split: the per-split ranking sees it, a ranking of means could not.
    group = [ok(is_sharpes=(2.0,) * 15, test_sharpes=(-1.0,) * 15, mean_is=1.0, mean_oos=1.0)]
    group += [ok(is_sharpes=(1.0,) * 15, test_sharpes=(0.5,) * 15, mean_is=1.0, mean_oos=1.0)
              for _ in range(3)]
    got = fn("pbo")(group, P)
    assert got[0] == pytest.approx(-0.48) and np.all(got[1:] <= 0.0) and np.all(got[1:] > -0.48)


@pytest.mark.parametrize(("drop", "want"), [(math.e - 1.0, -0.4), (1e6, -1.0), (-0.3, 0.0), (0.0, 0.0)])
def test_r3_jepa_stress_is_log_compressed(drop: float, want: float) -> None:
    assert fn("jepa_stress")(ok(stress_drop=drop), P) == pytest.approx(want, abs=1e-15)


def test_r3_refuses_to_invent_a_value_without_worlds() -> None:
    with pytest.raises(ValueError, match=r"none configured"):
        fn("jepa_stress")(ok(), P)


@pytest.mark.parametrize(("raw", "res", "want"), [(1.5, 0.3, -0.48), (0.3, 1.0, 0.0), (5.0, -10.0, -1.2)])
def test_r4_factor_neutrality(raw: float, res: float, want: float) -> None:
    assert fn("factor_neutrality")(ok(raw_sharpe=raw, residual_sharpe=res), P) == pytest.approx(want)


@pytest.mark.parametrize(("tov", "want"), [(0.7, -0.4), (0.5, 0.0), (0.3, 0.0), (2.0, -3.0)])
def test_r5_turnover_penalty(tov: float, want: float) -> None:
    assert fn("turnover")(ok(turnover=tov), P) == pytest.approx(want)


@pytest.mark.parametrize(("facts", "want"), [
    (ok(turnover=0.2), 0.0),
    (ok(turnover=0.06), 0.0),
    (ok(turnover=0.04), -0.5),
    (ok(turnover=0.03), -0.75),
    (ok(turnover=0.02), -1.0),
    (bad("turnover_floor"), -1.0),
    (bad("degenerate_book"), -1.0),
    (bad("syntax"), 0.0),
])
def test_r6_min_turnover_ramp_and_floor(facts: AnswerFacts, want: float) -> None:
    assert fn("min_turnover")(facts, P) == pytest.approx(want)


@pytest.mark.parametrize(("ic", "cpcv", "want"), [
    (0.05, 0.3, 0.2), (0.025, 0.3, 0.1), (0.05, -0.1, 0.05), (0.05, 0.0, 0.05), (0.01, 0.0, 0.04),
    (-0.1, 0.3, -0.2), (-0.1, -0.3, -0.2),
])
def test_r7_ic_with_cap_while_cpcv_not_positive(ic: float, cpcv: float, want: float) -> None:
    assert fn("ic")(ok(ic=ic, cpcv=cpcv), P) == pytest.approx(want)


@pytest.mark.parametrize(("corr", "want"), [(0.0, 0.4), (0.3, 0.28), (0.9499, 0.4 * 0.0501), (0.95, -0.2), (1.0, -0.2)])
def test_r8_pnl_novelty_and_near_duplicates(corr: float, want: float) -> None:
    assert fn("novelty_pnl")(ok(max_abs_corr=corr), P) == pytest.approx(want)


@pytest.mark.parametrize(("kw", "want"), [
    (dict(max_abs_corr=0.3), 0.14),
    (dict(max_abs_corr=0.0), 0.2),
    (dict(in_archive=True), -0.3),
    (dict(group_duplicates=1), -0.3),
    (dict(in_archive=True, group_duplicates=2), -0.9),
])
def test_r9_syntax_novelty_bonus_and_duplicates(kw: dict, want: float) -> None:
    assert fn("novelty_syntax")(ok(**kw), P) == pytest.approx(want)


@pytest.mark.parametrize(("kw", "want"), [
    (dict(is_single_motif=True, ic=0.004), -1.0),
    (dict(is_price_only=True, ic=0.0), -1.0),
    (dict(is_price_only=True, ic=0.005), 0.0),
    (dict(is_single_motif=True, is_price_only=True, ic=0.01), 0.0),
    (dict(ic=-0.02), 0.0),  # neither single-motif nor price-only
])
def test_r10_motif_guard(kw: dict, want: float) -> None:
    assert fn("motif_guard")(ok(**kw), P) == want


@pytest.mark.parametrize(("nodes", "want"), [(5, 0.0), (24, 0.0), (25, -0.02), (30, -0.12)])
def test_r11_complexity(nodes: int, want: float) -> None:
    assert fn("complexity")(ok(node_count=nodes), P) == pytest.approx(want)


def test_r12_format() -> None:
    assert fn("format")(ok(has_reasoning=True), P) == 0.05
    assert fn("format")(ok(), P) == 0.0


def test_invalid_answers_score_only_r1_and_r6() -> None:
    active = [n for n in CHANNEL_NAMES if n != "jepa_stress"]
    rows = compute_channels([bad("turnover_floor"), bad("missing_tag"), ok(is_price_only=True, ic=0.0)],
                            active, P)
    assert list(rows[0]) == active  # registry order
    assert {k: v for k, v in rows[0].items() if v} == {"cpcv": -0.8, "min_turnover": -1.0}
    assert {k: v for k, v in rows[1].items() if v} == {"cpcv": -1.0}
    assert rows[2]["motif_guard"] == -1.0
    assert all(math.isfinite(v) and v == v + 0.0 for r in rows for v in r.values())
    assert not any(math.copysign(1.0, v) < 0 for r in rows for v in r.values() if v == 0.0)


def test_params_are_validated_and_round_trip() -> None:
    p = ChannelParams(min_turnover_floor=0.03)
    assert ChannelParams.from_dict(p.to_dict()) == p
    with pytest.raises(ValueError, match="unknown channel parameter"):
        ChannelParams.from_dict({"floor": 1})
    with pytest.raises(ValueError, match="min_turnover_floor < min_turnover_free"):
        ChannelParams(min_turnover_floor=0.1)
    with pytest.raises(ValueError, match="finite"):
        ChannelParams(cpcv_clip=math.inf)
    # a configured floor moves the ramp's end
    assert fn("min_turnover")(ok(turnover=0.045), p) == pytest.approx(-0.5)


def test_r13_brief_compliance_passes_the_score_through_and_is_zero_without_a_brief() -> None:
    assert fn("brief_compliance")(ok(brief_compliance=-0.25), P) == -0.25
    assert fn("brief_compliance")(ok(), P) == 0.0
    assert fn("brief_compliance")(ok(brief_compliance=-0.0), P) == 0.0 and math.copysign(
        1.0, fn("brief_compliance")(ok(brief_compliance=-0.0), P)) == 1.0
