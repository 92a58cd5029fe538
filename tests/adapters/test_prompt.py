"""The prompt template lives in one place and its version is in the environment fingerprint."""

from __future__ import annotations

from gymkit import config, prompt
from gymkit.adapters.datasets import brief_rows
from gymkit.briefs import generate_briefs
from gymkit.dsl.operators import OPERATORS


def test_observation_is_the_template(env) -> None:
    b = generate_briefs(1)[0]
    assert env.observation(b.text) == prompt.render_prompt(b.text, env.setup.fields, env.setup.levels, OPERATORS)
    assert config.PROMPT_VERSION is prompt.PROMPT_VERSION


def test_version_feeds_the_fingerprint(monkeypatch) -> None:
    before = config.EnvConfig().fingerprint("data")
    monkeypatch.setattr(config, "PROMPT_VERSION", "prompt-test")
    assert config.EnvConfig().fingerprint("data") != before


def test_dataset_rows_match_the_env_prompt_and_carry_no_private_data(env) -> None:
    briefs = generate_briefs(3)
    plain, built = brief_rows(briefs), brief_rows(briefs, env)
    assert plain == built
    assert set(plain[0]) == {"brief_id", "family", "split", "facets", "text", "brief", "prompt",
                             "prompt_version"}
    sys_text = plain[0]["prompt"][0]["content"]
    assert env.observation(None) == sys_text
    assert "reasoning" not in sys_text and "<think>" in sys_text
    assert "First reason" in prompt.system_text(["close"], [], ["rank"], reasoning=True)
