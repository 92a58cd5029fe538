"""The research gym through gymnasium's own make, env checker and a rollout loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is an optional extra")

from gymkit.research import NO_SUBMIT_REWARD, TOOL_COST  # noqa: E402

QUALIFIED = "gymkit.adapters.research_gymnasium:gymkit/us46-research-v0"


@pytest.fixture(scope="module")
def genv():
    e = gymnasium.make(QUALIFIED, budget=3)
    yield e
    e.close()


def test_env_checker_passes(genv) -> None:
    from gymnasium.utils.env_checker import check_env

    check_env(genv.unwrapped, skip_render_check=True)


def test_rollout_tool_calls_then_submit(genv) -> None:
    obs, info = genv.reset(seed=5)
    assert info["brief"] in obs and '"backtest"' in obs and info["budget"] == 3
    _, info2 = genv.reset(seed=5)
    assert info2["brief"] == info["brief"]                     # seeded brief draw
    call = {"type": "function", "function": {
        "name": "backtest", "arguments": json.dumps(
            {"formula": "rank(group_neutralize(-ts_sum(returns, 5), sector))"})}}
    obs, r, term, trunc, inf = genv.step(call)
    assert (r, term, trunc) == (0.0, False, False) and json.loads(obs)["result"]["valid"]
    obs, r, term, trunc, inf = genv.step(
        "<alpha>rank(group_neutralize(-ts_sum(returns, 5), sector))</alpha>")
    assert term and not trunc and inf["card"].valid
    # one trial (no deflation), one call: the card's reward less one call's cost
    assert r == inf["outcome"]["reward"] == pytest.approx(inf["card"].reward - TOOL_COST, abs=1e-12)
    with pytest.raises(RuntimeError, match="reset"):
        genv.step(call)


def test_budget_overrun_truncates(genv) -> None:
    genv.reset(seed=1)
    for _ in range(3):
        assert not genv.step('<tool_call>{"name": "describe", "arguments": {}}</tool_call>')[2]
    _, r, term, trunc, _ = genv.step('<tool_call>{"name": "describe", "arguments": {}}</tool_call>')
    assert trunc and not term and r == NO_SUBMIT_REWARD
    assert np.isfinite(r)
