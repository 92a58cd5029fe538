"""R3 in the default environment: active with the shipped worlds, torch-free, charged as specified."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

import gymkit

HONEST = "<alpha>rank(group_neutralize(-ts_sum(returns, 5), sector))</alpha>"


@pytest.fixture(scope="module")
def env() -> gymkit.Environment:
    return gymkit.make("us46-default")


def test_scoring_never_imports_torch() -> None:
    code = ("import sys, gymkit\n"
            "card = gymkit.make('us46-default').score('<alpha>rank(-ts_sum(returns, 5))</alpha>')\n"
            "assert 'jepa_stress' in card.channels, card.notes\n"
            "assert 'torch' not in sys.modules, 'scoring imported torch'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_r3_is_active_and_follows_its_formula(env) -> None:
    card = env.score(HONEST)
    assert "jepa_stress" in env.channels and "jepa_stress" in card.channels
    assert not any(n.startswith("jepa_stress") for n in card.notes)
    st = card.metrics["stress"]
    base = card.metrics["cpcv"]["score"]
    drops = [max(0.0, base - s) for s in st["world_cpcv"].values()]
    assert st["mean_drop"] == pytest.approx(sum(drops) / len(drops), abs=1e-12)
    assert card.channels["jepa_stress"] == pytest.approx(-min(1.0, 0.4 * math.log1p(st["mean_drop"])))
    assert card.timings["stress"] > 0.0
    assert card.reward == pytest.approx(sum(env.config.priorities[k] * v for k, v in card.channels.items()))


def test_invalid_answers_are_not_rescored(env) -> None:
    card = env.score("<alpha>rank(ts_mean(close, 250))</alpha>")  # below the turnover floor
    assert not card.valid and card.channels["jepa_stress"] == 0.0 and "stress" not in card.metrics


def test_r3_is_inactive_with_a_note_on_another_market(env) -> None:
    other = env.market.replace(volume=env.market.volume * 2.0)
    e2 = gymkit.make("us46-default", market=other)
    assert "jepa_stress" not in e2.channels
    assert any(n.startswith("jepa_stress: stress worlds not loaded") for n in e2.notes)
    assert e2.fingerprint != env.fingerprint


def test_r3_without_worlds_is_refused_not_faked() -> None:
    with pytest.raises(ValueError, match="needs stress worlds"):
        gymkit.make("us46-default", stress_worlds="")
    from gymkit.registry import ENVIRONMENTS

    e = gymkit.make("us46-default", stress_worlds="",
                    channels=[n for n in ENVIRONMENTS["us46-default"].channels if n != "jepa_stress"])
    assert "jepa_stress: no stress worlds configured" in e.notes


def test_static_books_are_charged_more_than_honest_formulas(env, manifest) -> None:
    """Through the environment (not the gate code): every 8th labelled formula of each family."""
    lab = manifest["labelled"]
    static = [x["formula"] for x in lab if x["family"] == "static"][1::8]
    honest = [x["formula"] for x in lab if x["family"] == "honest"][1::8]
    s = [env.score(f"<alpha>{f}</alpha>").metrics["stress"]["mean_drop"] for f in static]
    h = [env.score(f"<alpha>{f}</alpha>").metrics["stress"]["mean_drop"] for f in honest]
    assert sum(s) / len(s) > 2.0 * (sum(h) / len(h))
