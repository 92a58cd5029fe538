"""The research episode's state machine, tools and action forms, on the real environment."""

from __future__ import annotations

import json

import pytest

from gymkit.briefs import generate_briefs
from gymkit.dsl.operators import OPERATORS
from gymkit.research import (
    NO_SUBMIT_REWARD,
    TOOL_NAMES,
    TOOL_SPECS,
    ActionError,
    parse_action,
)
from gymkit.research.tools import OPERATOR_NOTES

from .conftest import HONEST


def test_tool_specs_are_openai_functions() -> None:
    assert TOOL_NAMES == ("backtest", "compare", "describe", "submit")
    for t in TOOL_SPECS:
        assert t["type"] == "function"
        p = t["function"]["parameters"]
        assert p["type"] == "object" and p["required"] == sorted(p["properties"])
        assert p["additionalProperties"] is False
    assert set(OPERATOR_NOTES) == set(OPERATORS)  # describe() covers every operator


def test_action_forms() -> None:
    openai = {"type": "function", "function": {"name": "backtest",
                                               "arguments": json.dumps({"formula": HONEST})}}
    assert parse_action(openai).arguments == {"formula": HONEST}
    tagged = '<tool_call>{"name": "describe", "arguments": {}}</tool_call>'
    assert parse_action(tagged).name == "describe"
    assert parse_action(f"<think>x</think><alpha>{HONEST}</alpha>").name == "submit"
    for bad, msg in [("hello", "no tool call"), ({"name": "rm", "arguments": {}}, "unknown tool"),
                     ({"name": "backtest", "arguments": {}}, "missing"),
                     ({"name": "backtest", "arguments": "{oops"}, "not JSON"),
                     ({"name": "backtest", "arguments": {"formula": 3}}, "string")]:
        with pytest.raises(ActionError, match=msg):
            parse_action(bad)


def test_backtest_compare_describe_submit(renv) -> None:
    brief = generate_briefs(3)[0].text
    ep = renv.episode(brief)
    assert "Brief: " + brief in ep.prompt() and "8 tool calls" in ep.prompt()
    d = json.loads(ep.call("describe").observation)["result"]
    assert d["universe"]["train_last"] == str(renv.train_panel.dates[-1])
    r1 = json.loads(ep.call("backtest", formula=HONEST).observation)
    assert r1["calls_left"] == 6 and r1["result"]["valid"]
    assert len(r1["result"]["cpcv_slice_sharpes"]) == 15
    card = renv.env.score(f"<alpha>{HONEST}</alpha>", brief=brief)
    assert r1["result"]["cpcv"] == round(card.channels["cpcv"], 4)
    assert r1["result"]["max_abs_corr_earlier"] == 0.0
    other = "rank(group_neutralize(-ts_sum(returns, 3), sector))"
    r2 = json.loads(ep.call("backtest", formula=other).observation)["result"]
    assert r2["most_correlated_earlier"] == HONEST and r2["max_abs_corr_earlier"] > 0.5
    cmp_ = json.loads(ep.call("compare", formula_a=HONEST, formula_b="rank(ts_delta(close, 5))")
                      .observation)["result"]
    assert set(cmp_["better"]) == set(card.channels) and -1 <= cmp_["pnl_corr"] <= 1
    bad = json.loads(ep.call("backtest", formula="rank(close").observation)["result"]
    assert not bad["valid"] and bad["error"]["code"] == "syntax"
    assert ep.n_trials == 3 and ep.calls == 5
    res = ep.submit(HONEST)
    assert res.done and not res.truncated and res.info["card"].to_json() == card.to_json()
    out = res.info["outcome"]
    assert out["n_trials"] == 3 and out["n_calls"] == 5 and out["deflation"] > 0
    assert res.reward == out["reward"] < card.reward
    with pytest.raises(RuntimeError, match="over"):
        ep.call("describe")


def test_single_submit_equals_card_reward(renv) -> None:
    ep = renv.episode(None)
    res = ep.submit(HONEST)
    card = renv.env.score(f"<alpha>{HONEST}</alpha>")
    assert res.reward == card.reward and res.info["outcome"]["deflation"] == 0.0


def test_budget_spent_then_non_submit_is_no_submit(renv) -> None:
    ep = renv.episode(None, budget=2)
    ep.step("garbage")                    # a malformed action costs a call
    assert ep.calls == 1 and not ep.done
    ep.call("backtest", formula=HONEST)
    res = ep.call("backtest", formula=HONEST)
    assert res.done and res.truncated and res.reward == NO_SUBMIT_REWARD
    assert ep.transcript()["outcome"]["submitted"] is False


def test_invalid_submit_below_every_valid_episode(renv) -> None:
    ep = renv.episode(None)
    bad = ep.submit("rank(close").reward
    worst_valid = renv.episode(None)
    for f in ("rank(ts_delta(close, 5))", "rank(volume)", "-rank(ts_delta(close, 5))",
              "rank(ts_std(returns, 5))", "rank(ts_corr(close, volume, 5))",
              "rank(ts_delta(open, 2))", "rank(ts_rank(close, 10))", "rank(ts_min(low, 5))"):
        worst_valid.call("backtest", formula=f)
    r = worst_valid.submit("rank(ts_delta(close, 5))").reward
    assert NO_SUBMIT_REWARD < bad <= -2.5 < -2.0 <= r


def test_a_tagged_formula_in_a_tool_call_is_the_formula(renv) -> None:
    """Policies pass ``<alpha>f</alpha>`` (or a trailing ``</alpha>``) to backtest; the tool
    wraps the formula itself, so this was a ``multiple_tags`` error at a position past the end
    of what was sent.  One enclosing tag is now dropped: the same result as the bare formula,
    and the same trial (not a second one)."""
    ep = renv.episode(None)
    bare = json.loads(ep.call("backtest", formula=HONEST).observation)["result"]
    for tagged in (f"<alpha>{HONEST}</alpha>", f"{HONEST}</alpha>", f" <alpha>{HONEST}"):
        got = json.loads(ep.call("backtest", formula=tagged).observation)["result"]
        assert got == bare, tagged
    assert ep.n_trials == 1
    two = json.loads(ep.call("backtest", formula=f"<alpha>{HONEST}</alpha><alpha>x</alpha>")
                     .observation)["result"]
    assert not two["valid"] and two["error"]["code"] == "multiple_tags"
