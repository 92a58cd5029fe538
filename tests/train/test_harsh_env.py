"""us46-harsh (environment B): the default verifier with 19x per-action train costs, R3 off."""

from __future__ import annotations

from gymkit.registry import ENVIRONMENTS
from gymkit.verifiers.costs import cost_model_from_dict


def test_harsh_is_default_with_19x_costs_and_no_stress_channel() -> None:
    base, harsh = ENVIRONMENTS["us46-default"], ENVIRONMENTS["us46-harsh"]
    ratio = (cost_model_from_dict(harsh.train_costs).bps_per_turnover
             / cost_model_from_dict(base.train_costs).bps_per_turnover)
    assert ratio == 19.0
    assert "jepa_stress" in base.channels and "jepa_stress" not in harsh.channels
    assert tuple(c for c in base.channels if c != "jepa_stress") == harsh.channels
    assert harsh.holdout_costs == base.holdout_costs and harsh.split == base.split
    assert harsh.fingerprint("data") != base.fingerprint("data")
