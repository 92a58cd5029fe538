"""Adapter for the ``verifiers`` library, driven through the real library (0.2.x) when installed."""

from __future__ import annotations

import asyncio

import pytest

vf = pytest.importorskip("verifiers", reason="verifiers is an optional extra")
if not hasattr(vf, "Rubric"):
    pytest.skip("installed verifiers has no SingleTurnEnv/Rubric API (needs verifiers<0.3)",
                allow_module_level=True)

from gymkit.adapters.common import brief_text_of  # noqa: E402
from gymkit.adapters.verifiers_env import load_environment  # noqa: E402

from .conftest import GROUP  # noqa: E402


@pytest.fixture(scope="module")
def venv(env):
    return load_environment("us46-default", split="probe")


def _ours(venv):
    """Our rubric (SingleTurnEnv wraps it in a RubricGroup with its own monitor rubric)."""
    r = venv.rubric
    return next(x for x in getattr(r, "rubrics", [r]) if x.funcs and
                x.funcs[0].__name__.startswith("gymkit_"))


def test_shape_of_the_environment(venv, env) -> None:
    assert isinstance(venv, vf.SingleTurnEnv) and isinstance(venv.parser, vf.XMLParser)
    names = [f.__name__ for f in _ours(venv).funcs]
    assert names == [f"gymkit_{c}" for c in env.channels] + ["gymkit_valid", "gymkit_internal"]
    assert _ours(venv).weights == [env.config.priorities[c] for c in env.channels] + [0.0, 0.0]
    row = venv.dataset[0]
    assert set(row["info"]) == {"brief_id"} and len(venv.dataset) == 50


def test_rubric_scores_a_group_like_the_card(venv, env) -> None:
    bid = venv.dataset[0]["info"]["brief_id"]
    comps = [[{"role": "assistant", "content": c}] for c in GROUP[:3]]
    total = []
    for comp in comps:
        vals = [f(completion=comp, info={"brief_id": bid}) for f in _ours(venv).funcs]
        total.append(sum(w * v for w, v in zip(_ours(venv).weights, vals, strict=True)))
    for t, c in zip(total, GROUP[:3], strict=True):
        card = env.score_group([c], brief=brief_text_of(bid))[0]
        assert t == pytest.approx(card.reward) or card.motif_capped


def test_real_rubric_call_path(venv, env) -> None:
    """The library's own reward-function dispatch (_call_individual_reward_func) reaches us."""
    rubric = _ours(venv)
    state = {"prompt": venv.dataset[0]["prompt"],
             "completion": [{"role": "assistant", "content": GROUP[0]}],
             "answer": "", "info": venv.dataset[0]["info"], "task": "gymkit", "trajectory": []}
    try:
        got = asyncio.run(rubric._call_individual_reward_func(rubric.funcs[0], state))
    except (KeyError, AttributeError, TypeError) as exc:
        pytest.skip(f"verifiers' state schema changed ({exc!r}); shape tests above still hold")
    card = env.score_group([GROUP[0]], brief=brief_text_of(state["info"]["brief_id"]))[0]
    assert got == card.channels[env.channels[0]]
