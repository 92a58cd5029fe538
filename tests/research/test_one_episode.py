"""One episode implementation behind every interface (issues 23 and 25): the same scripted
episode, driven through each interface's own door (Gymnasium's make/reset/step, skyrl_gym's
make/init/step, verifiers' loader and multi-turn rollout, the ``/v1/episodes`` routes and the
NeMo-Gym resources server over HTTP), gives the same sequence of tool results, byte for byte,
and the same transcript, as :class:`gymkit.research.ResearchEpisode` itself."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gymkit.adapters.common import brief_text_of
from gymkit.briefs import generate_briefs, split_briefs

from .conftest import HONEST

OTHER = "rank(ts_delta(close, 5))"
#: The scripted episode: every tool, a malformed formula, a free-text turn, then the submit.
CALLS = [("describe", {}), ("backtest", {"formula": OTHER}), ("backtest", {"formula": "rank(close"}),
         ("compare", {"formula_a": OTHER, "formula_b": HONEST}), ("backtest", {"formula": HONEST}),
         ("submit", {"formula": HONEST})]
BUDGET = 6
#: verifiers' first probe row: the brief every interface is given.
BRIEF_ID = split_briefs(generate_briefs(), "probe")[0].brief_id


def _text(name: str, args: dict[str, str]) -> str:
    """The call as a model writes it (a ``<tool_call>`` block; the submit as an ``<alpha>``)."""
    if name == "submit":
        return f"<alpha>{args['formula']}</alpha>"
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def reference(renv) -> tuple[list[str], str]:
    """The Python episode's tool results and transcript."""
    ep = renv.episode(brief_text_of(BRIEF_ID), budget=BUDGET)
    results = [ep.call(name, **args).observation for name, args in CALLS]
    assert ep.done and ep.result is not None and ep.result.to_dict()["submitted"]
    return results, ep.transcript_json()


def via_gymnasium(renv) -> tuple[list[str | None], str | None]:
    gymnasium = pytest.importorskip("gymnasium")
    from gymkit.adapters.research_gymnasium import GYM_ID

    g = gymnasium.make(f"gymkit.adapters.research_gymnasium:{GYM_ID}", budget=BUDGET)
    g.reset(seed=0, options={"brief_id": BRIEF_ID})
    out = [g.step(_text(n, a))[0] for n, a in CALLS]
    for i, obs in enumerate(out):  # describe()'s operator semantics hold non-ASCII text
        assert g.observation_space.contains(obs), f"tool result {i} is outside the space"
    return out, g.unwrapped.episode.transcript_json()


def via_skyrl(renv) -> tuple[list[str | None], str | None]:
    skyrl_gym = pytest.importorskip("skyrl_gym")
    from gymkit.adapters.research_skyrl import ENV_CLASS, register_research_skyrl_envs

    register_research_skyrl_envs()
    env = skyrl_gym.make(ENV_CLASS, env_config={"budget": BUDGET},
                         extras={"extra_info": {"brief_id": BRIEF_ID}})
    env.init(None)
    out: list[str | None] = []
    for n, a in CALLS:
        step = env.step(_text(n, a))
        # a done step carries the outcome (metadata), not a message
        out.append(None if step["done"] else step["observations"][0]["content"])
    assert step["done"] and step["metadata"]["outcome"]["submitted"]
    return out, env.episode.transcript_json()


def _vf_rollout(monkeypatch, answers: list[str], max_turns: int | None = None):
    """One rollout of verifiers' own loader and multi-turn loop against a fake OpenAI server
    that plays ``answers``: (the environment, the output row)."""
    from .conftest import adapters_module, real_verifiers

    vf = real_verifiers()
    fake_openai = adapters_module("fake_openai")
    monkeypatch.setenv("GYMKIT_FAKE_KEY", "not-a-key")
    venv = vf.load_environment("gymkit.adapters.research_verifiers", split="probe", budget=BUDGET)
    if max_turns is not None:
        venv.max_turns = max_turns  # verifiers' own stop condition, before the episode ends
    server = fake_openai.FakeOpenAI(answers)
    try:
        client = vf.ClientConfig(api_base_url=server.url, api_key_var="GYMKIT_FAKE_KEY",
                                 max_retries=0)
        row = venv.evaluate_sync(client=client, model="fake", num_examples=1,
                                 rollouts_per_example=1)["outputs"][0]
    finally:
        server.close()
    assert row["info"]["brief_id"] == BRIEF_ID
    return venv, row


def via_verifiers(renv, monkeypatch) -> tuple[list[str | None], str | None]:
    venv, row = _vf_rollout(monkeypatch, [_text(n, a) for n, a in CALLS])
    assert venv._episodes == {}
    return [m["content"] for m in row["completion"] if m["role"] == "user"], None


def via_episodes_routes(renv) -> tuple[list[str | None], str | None]:
    from gymkit.server.episodes import episodes_router

    app = FastAPI()
    app.include_router(episodes_router(renv.env))
    with TestClient(app) as c:
        sid = c.post("/v1/episodes", json={"brief_id": BRIEF_ID, "budget": BUDGET}).json()["id"]
        out = [c.post(f"/v1/episodes/{sid}/tool", json={"name": n, "arguments": a}).json()
               ["observation"] for n, a in CALLS]
        got = c.get(f"/v1/episodes/{sid}").json()
    assert got["done"]
    return out, _transcript_of(got)


def _transcript_of(got: dict) -> str:
    from gymkit.research import canonical_json

    text = canonical_json(got["transcript"])
    assert _sha(text) == got["transcript_sha256"]
    return text


def via_nemo_gym(renv) -> tuple[list[str | None], str | None]:
    from gymkit.adapters.research_nemo_gym import create_app

    with TestClient(create_app(renv.env)) as c:
        assert c.post("/seed_session", json={"brief_id": BRIEF_ID, "budget": BUDGET}).json() == {}
        out = [c.post(f"/{n}", json=a).text for n, a in CALLS]
        v = c.post("/verify", json={"responses_create_params": {}, "response": {"output": []}})
    return out, v.json()["transcript_sha256"]


INTERFACES: dict[str, Callable[..., tuple[list[str | None], str | None]]] = {
    "gymnasium": via_gymnasium, "skyrl": via_skyrl, "verifiers": via_verifiers,
    "episodes_routes": via_episodes_routes, "nemo_gym": via_nemo_gym}


@pytest.mark.parametrize("name", sorted(INTERFACES))
def test_every_interface_gives_the_episodes_tool_results(name, renv, reference,
                                                         monkeypatch) -> None:
    """Assertion: the interface's tool results equal the Python episode's, byte for byte, and
    its transcript (or the transcript's sha256 it reports) is the episode's.  SkyRL answers the
    final step with the outcome and no message: its last result is read from the transcript."""
    want, transcript = reference
    fn = INTERFACES[name]
    got, their = fn(renv, monkeypatch) if name == "verifiers" else fn(renv)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w or (g is None and i == len(want) - 1), f"{name}: tool result {i} ({CALLS[i][0]}) differs"
    if their is not None:
        assert their in (transcript, _sha(transcript))


def test_the_comparison_can_fail(renv, reference) -> None:
    """Assertion: the reference is not a constant: another brief gives other results (the
    submit's card reads the brief), so equal sequences above are evidence."""
    want, _ = reference
    other = next(b for b in generate_briefs() if b.brief_id != BRIEF_ID).text
    ep = renv.episode(other, budget=BUDGET)
    assert [ep.call(n, **a).observation for n, a in CALLS] != want


def test_verifiers_forgets_an_episode_the_harness_stopped(monkeypatch) -> None:
    """Assertion: a rollout verifiers stops before the episode ends (its max_turns here) scores
    NO_SUBMIT_REWARD and leaves no episode held by the environment (before the cleanup handler
    it stayed in ``_episodes`` for the environment's life)."""
    from gymkit.research import NO_SUBMIT_REWARD

    venv, row = _vf_rollout(monkeypatch, [_text(*CALLS[1])], max_turns=2)
    assert row["reward"] == NO_SUBMIT_REWARD
    assert venv._episodes == {}
