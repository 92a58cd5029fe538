"""Canaries (playbook §5.7): a random GUID planted in each private store — holdout data (a
stock listed only in the holdout window: its ticker, group labels and a price marker), the
environment's private config description, an archive entry's form, a gold answer's reasoning
— appears in no observation a policy or trainer sees: the prompt and reset info, step()
results, card fields (``to_dict`` with timings, ``to_json``, ``repr``), error messages, log
records at INFO and warnings.  Each broken variant routes one private value into one
observation and the check names it.

The one documented exposure: ``card.metrics.novelty.nearest`` prints the nearest archive
entry's form (R8's diagnostic), so an archive canary shows there by design (reported).
"""

from __future__ import annotations

import logging

import gymkit.scoring as scoring
from gymkit.audit.canary import (
    CanaryPlant,
    check_canaries,
    collect_observations,
    plant_canaries,
)
from gymkit.env import Environment

ANSWERS = ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>rank(clos)</alpha>", "no tag",
           "<alpha>close - close</alpha>"]


def test_no_canary_reaches_an_observation(audit) -> None:
    res = audit["canaries"]
    assert res.passed, res.detail
    assert " 0 leaks" in res.figure
    assert "documented exposure: card.metrics.novelty.nearest (by design: archive)" in res.detail


def test_logs_at_info_carry_no_canary(caplog, cheap_target) -> None:
    plant = CanaryPlant()
    with caplog.at_level(logging.INFO):
        env = plant_canaries(cheap_target, plant)
        collect_observations(env, [*ANSWERS, plant.gold])
    assert not plant.hits(caplog.text)


def test_a_logged_secret_is_caught(caplog, monkeypatch, cheap_target) -> None:
    """Broken variant: scoring logs the market's tickers at INFO."""
    plant = CanaryPlant()
    env = plant_canaries(cheap_target, plant)
    real = scoring.gate_text

    def chatty(completion, setup):
        logging.getLogger("gymkit.scoring").info("scoring on %s", ",".join(setup.train.tickers))
        return real(completion, setup)

    monkeypatch.setattr(scoring, "gate_text", chatty)
    with caplog.at_level(logging.INFO):
        collect_observations(env, ANSWERS)
    assert plant.hits(caplog.text) == {"holdout"}
    res = check_canaries(cheap_target)
    assert not res.passed and any(d.startswith("LEAK holdout canary in log") for d in res.detail)


def test_a_secret_in_the_prompt_is_caught(monkeypatch, cheap_target) -> None:
    """Broken variant: the prompt shows the configuration's private description."""
    real = Environment.observation
    monkeypatch.setattr(Environment, "observation",
                        lambda self, brief=None: real(self, brief) + "\n" + self.config.description)
    res = check_canaries(cheap_target)
    assert not res.passed
    assert any(d.startswith("LEAK secret canary in prompt") for d in res.detail), res.detail


def test_holdout_data_in_an_error_message_is_caught(monkeypatch, cheap_target) -> None:
    """Broken variant: an error message lists the market's stocks (the holdout-only one too)."""
    from gymkit.card import CardError

    real = scoring.gate_text

    def leaky(completion, setup):
        st = real(completion, setup)
        if st.error is not None:
            st.error = CardError(st.error.code, f"{st.error.message} (stocks: "
                                 f"{' '.join(setup.train.tickers)})", st.error.position)
        return st

    monkeypatch.setattr(scoring, "gate_text", leaky)
    res = check_canaries(cheap_target)
    assert not res.passed
    leaks = [d for d in res.detail if d.startswith("LEAK holdout canary")]
    assert any("error.message" in d for d in leaks) and any("card.error" in d for d in leaks)


def test_gold_reasoning_echoed_in_a_card_is_caught(monkeypatch, cheap_target) -> None:
    """Broken variant: the card keeps the whole completion instead of the formula."""
    real = scoring.gate_text

    def echo(completion, setup):
        st = real(completion, setup)
        st.formula = completion
        return st

    monkeypatch.setattr(scoring, "gate_text", echo)
    res = check_canaries(cheap_target)
    assert not res.passed
    assert any(d.startswith("LEAK gold canary in card.formula") for d in res.detail), res.detail


def test_server_responses_are_searched_and_a_leaky_server_is_caught(cheap_target, monkeypatch) -> None:
    """Server responses are searched like every other observation; a broken variant whose
    server echoes the private config description in every error is caught."""
    res = check_canaries(cheap_target)
    assert res.passed, res.detail
    assert any(d.startswith("server: ") and "responses searched" in d for d in res.detail), res.detail

    import gymkit.server.app as app_module

    real_error_bytes = app_module._error_bytes

    def leaky_error_bytes(code: str, message: str) -> bytes:
        env = leaky_error_bytes.env
        return real_error_bytes(code, f"{message} ({env.config.description})")

    import importlib

    serve_module = importlib.import_module("gymkit.server.serve")  # `serve` is also a function

    real_create = serve_module.create_app

    def create(env, pool, settings=None):
        leaky_error_bytes.env = env
        return real_create(env, pool, settings)

    monkeypatch.setattr(app_module, "_error_bytes", leaky_error_bytes)
    monkeypatch.setattr(serve_module, "create_app", create)
    res = check_canaries(cheap_target)
    assert not res.passed
    assert any(d.startswith("LEAK secret canary in server.") for d in res.detail), res.detail
