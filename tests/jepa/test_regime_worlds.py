"""Regime worlds (jepa/README.md "Regime worlds"): the crash regime's direction and its gate.

A regime moves several statistics together on purpose, so its shift gate is not the
one-statistic selectivity gate: every statistic of its signature must move the declared way,
strictly monotonically in α, and none may be a bystander (each moves by ≥ 0.5 × the largest).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gymkit.jepa import gates
from gymkit.jepa.shifts import REGIMES, ShiftDirections, stress_index, with_regimes

CRASH = REGIMES["crash"]


def _response(moves: dict[str, float]) -> dict[str, list[float]]:
    """A linear response over α = −2 … 2 with the given total move per statistic."""
    return {k: [1.0 + m * a / 4.0 for a in (-2, -1, 0, 1, 2)] for k, m in moves.items()}


def test_crash_signature_is_the_stress_regime() -> None:
    assert CRASH == {"volatility": 1, "correlation": 1, "trend": -1, "dispersion": -1}


def test_regime_gate_passes_a_balanced_declared_move() -> None:
    g = gates.regime_gate(_response({"volatility": 2.2, "correlation": 1.8, "trend": -1.8,
                                     "dispersion": -2.5}), CRASH)
    assert g["ok"] and g["balance"] == pytest.approx(1.8 / 2.5)
    assert g["moves"]["trend"] == pytest.approx(1.8)  # signed by the declaration


@pytest.mark.parametrize("moves, why", [
    ({"volatility": 2.2, "correlation": 1.8, "trend": 1.8, "dispersion": -2.5}, "trend rises"),
    ({"volatility": 2.2, "correlation": 0.9, "trend": -1.8, "dispersion": -2.5}, "bystander"),
    ({"volatility": 0.0, "correlation": 0.0, "trend": 0.0, "dispersion": 0.0}, "no move"),
])
def test_regime_gate_fails(moves, why) -> None:
    assert not gates.regime_gate(_response(moves), CRASH)["ok"], why


def test_regime_gate_needs_every_declared_statistic_monotone() -> None:
    r = _response({"volatility": 2.2, "correlation": 1.8, "trend": -1.8, "dispersion": -2.5})
    r["correlation"][2] = r["correlation"][3] + 0.01  # a dip at α = +1
    g = gates.regime_gate(r, CRASH)
    assert not g["ok"] and g["monotone"] == {**{k: True for k in CRASH}, "correlation": False}


def test_regime_gate_bounds_a_statistic_outside_the_signature() -> None:
    sig = {"volatility": 1, "correlation": 1}
    base = {"volatility": 2.0, "correlation": 1.6}
    assert gates.regime_gate(_response({**base, "trend": 0.7}), sig)["ok"]
    assert not gates.regime_gate(_response({**base, "trend": -0.9}), sig)["ok"]  # > 0.5 × 1.6


def test_world_shift_gate_dispatches_on_the_channel() -> None:
    r = _response({"volatility": 2.2, "correlation": 1.8, "trend": -1.8, "dispersion": -2.5})
    assert gates.world_shift_gate(r, "crash") == gates.regime_gate(r, CRASH)
    assert gates.world_shift_gate(r, "volatility") == gates.shift_gate(r, "volatility")
    assert not gates.world_shift_gate(r, "volatility")["ok"]  # the same move is not selective


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=12, max_size=40),
       st.floats(0.1, 50.0), st.floats(-5.0, 5.0))
def test_stress_index_ignores_each_statistic_s_units(xs, scale, shift) -> None:
    """z-scores: a statistic's units and origin change nothing; a declared fall enters negated."""
    x = np.array(xs)
    assume(x.std() > 1e-2)  # a spread that float64 resolves after x·scale + shift (|x| <= 3)
    stats = {"volatility": x, "trend": x[::-1].copy()}
    sig = {"volatility": 1, "trend": -1}
    a = stress_index(stats, sig)
    b = stress_index({"volatility": x * scale + shift, "trend": x[::-1] * scale - shift}, sig)
    np.testing.assert_allclose(a, b, atol=1e-9)
    z = (x - x.mean()) / x.std()
    np.testing.assert_allclose(stress_index({"volatility": x}, {"volatility": -1}), -z, atol=1e-12)


def test_with_regimes_finds_the_latent_axis_of_the_regime() -> None:
    """Latents that carry the stress index along one planted axis (plus noise): the crash
    direction is that axis; the stored channels are kept as they were."""
    rng = np.random.default_rng(0)
    k, n, d = 300, 5, 4
    stats = {name: rng.normal(size=k) for name in CRASH}
    s = stress_index(stats, CRASH)
    axis = rng.normal(size=n * d)
    axis /= np.linalg.norm(axis)
    lat = (s[:, None] * axis[None] + 0.05 * rng.normal(size=(k, n * d))).reshape(k, n, d)
    stored = ShiftDirections.fit(lat, stats)
    both = with_regimes(stored, lat, stats)
    assert both.names == (*stored.names, "crash")
    np.testing.assert_array_equal(both.directions[:4], stored.directions)
    np.testing.assert_array_equal(both.spreads[:4], stored.spreads)
    np.testing.assert_array_equal(both.raw_cosines[:4, :4], stored.raw_cosines)  # pre-GS, kept
    crash = both.directions[both.index("crash")]
    assert crash @ axis > 0.99
    assert both.spreads[-1] == pytest.approx(np.std((lat.reshape(k, -1) - lat.reshape(k, -1).mean(0)) @ crash))


def test_with_regimes_refuses_an_undefined_statistic() -> None:
    stats = {name: np.random.default_rng(1).normal(size=30) for name in CRASH}
    lat = np.zeros((30, 2, 2))
    stored = ShiftDirections(("volatility",), np.ones((1, 4)) / 2, np.ones(1), np.ones((1, 1)))
    with pytest.raises(ValueError, match="'trend' is not defined on every train window"):
        with_regimes(stored, lat, {**stats, "trend": np.full(30, np.nan)})
    with pytest.raises(ValueError, match="'dispersion' is constant"):
        with_regimes(stored, lat, {**stats, "dispersion": np.ones(30)})
