"""Score cards: contents, JSON-safe encoding, timings kept apart from the deterministic part."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np

import gymkit
from gymkit.card import TIMING_PHASES, CardError, ScoreCard, json_safe
from gymkit.verifiers.channels import CHANNELS

from .conftest import tag

GOOD = tag("rank(group_neutralize(-ts_sum(returns, 5), sector))")


def test_valid_card_carries_metrics_fingerprints_and_timings(env) -> None:
    card = env.score(GOOD)
    assert card.valid and card.error is None
    assert list(card.channels) == [c.name for c in CHANNELS if c.default_on]
    assert card.reward == sum(env.config.priorities[k] * v for k, v in card.channels.items())
    m = card.metrics
    assert m["n_days"] == env.n_days == 3050 and 0 < m["turnover"] < 2
    assert len(m["cpcv"]["test_sharpes"]) == 15 and len(m["cpcv"]["path_sharpes"]) == 5
    assert m["cpcv"]["score"] == card.channels["cpcv"]
    assert set(m["factors"]["betas"]) == {"market", "size", "momentum", "reversal", "low_vol",
                                          "price_level"}
    assert m["structure"]["lookback"] == 5 and m["structure"]["fields"] == ["returns"]
    assert m["last_date"] < env.config.split["train_end"]
    assert tuple(card.timings) == TIMING_PHASES and card.timings["stress"] > 0.0
    assert card.timings["total"] >= card.timings["evaluate"] + card.timings["cpcv"]
    assert card.env_fingerprint == env.fingerprint and card.data_fingerprint == env.data_fingerprint
    assert card.archive_version == env.archive.version and card.archive_digest == env.archive.digest
    assert card.gymkit_version == gymkit.__version__ == _pyproject_version()
    assert card.canonical == "rank(group_neutralize(-ts_sum(returns, 5), sector))"
    assert not any("jepa_stress" in n for n in card.notes)
    assert set(m["stress"]["world_cpcv"]) and m["stress"]["mean_drop"] >= 0.0


def _pyproject_version() -> str:
    """The version declared in pyproject.toml (the package metadata's source)."""
    root = Path(__file__).resolve().parents[2]
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


def test_to_dict_is_strict_json_and_timings_are_separate(env) -> None:
    card = env.score(GOOD)
    d = card.to_dict()
    assert "timings" in d and "timings" not in card.to_dict(timings=False)
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d
    assert card.to_json() == json.dumps(card.to_dict(timings=False), separators=(",", ":"),
                                        ensure_ascii=False)
    assert "pnl" not in d


def test_non_finite_values_encode_as_null() -> None:
    card = ScoreCard(valid=False, error=CardError("syntax", "bad", 3), channels={"cpcv": -0.8},
                     reward=-2.4, metrics={"ic": math.nan, "x": [np.float64(np.inf), 1],
                                           "n": np.int64(3), "flag": np.bool_(True)},
                     timings={}, notes=(), formula="rank(", canonical=None, env_id="e",
                     env_fingerprint="f", data_fingerprint="d", archive_version=0,
                     archive_digest="a", gymkit_version="0.1.0")
    d = card.to_dict()
    assert d["metrics"] == {"ic": None, "x": [None, 1], "n": 3, "flag": True}
    assert d["error"] == {"code": "syntax", "message": "bad", "position": 3, "layer": "gate"}
    json.dumps(d, allow_nan=False)
    assert json_safe((1.0, -math.inf)) == [1.0, None]


def test_invalid_cards_name_the_error_and_zero_other_channels(env) -> None:
    cases = {
        "rank(close)": ("missing_tag", None),
        tag("rank(close"): ("syntax", "gate"),
        tag("ts_mean(close, 300)"): ("window_range", "gate"),
        tag("rank(ts_mean(close, 250))"): ("turnover_floor", "book"),
        tag("rank(close) - rank(close)"): ("degenerate_book", "book"),
    }
    for answer, (code, layer) in cases.items():
        card = env.score(answer)
        assert not card.valid and card.error is not None and card.error.code == code, answer
        if layer:
            assert card.error.layer == layer
        nonzero = {k for k, v in card.channels.items() if v != 0.0}
        assert nonzero <= {"cpcv", "min_turnover"}
        assert card.reward < 0
        json.dumps(card.to_dict(), allow_nan=False)
    floor = env.score(tag("rank(ts_mean(close, 250))"))
    assert floor.metrics["turnover"] < 0.02 and floor.channels["min_turnover"] == -1.0
    assert "turnover" in floor.error.message and "0.02" in floor.error.message
