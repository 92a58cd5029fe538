"""The default market's stylised facts lie within the stated bands of the real panel's."""

from __future__ import annotations

import pytest

from gymkit.data import default_market
from gymkit.data.real import real_data_path
from gymkit.data.stylized import (
    CALIBRATION_BANDS,
    CALIBRATION_WINDOW,
    FACT_NAMES,
    REAL_FACTS,
    stylized_facts,
    within_band,
)


@pytest.fixture(scope="module")
def synthetic_facts() -> dict[str, float]:
    return stylized_facts(default_market().between(*CALIBRATION_WINDOW))


def _outside(syn: dict[str, float], real: dict[str, float]) -> list[str]:
    return [
        f"{k}: synthetic {syn[k]:.4f} vs real {real[k]:.4f} (band {CALIBRATION_BANDS[k]})"
        for k in FACT_NAMES
        if not within_band(k, syn[k], real[k])
    ]


def test_bands_cover_every_fact() -> None:
    assert set(CALIBRATION_BANDS) == set(FACT_NAMES) == set(REAL_FACTS)


def test_synthetic_within_bands_of_frozen_real_facts(synthetic_facts: dict[str, float]) -> None:
    assert _outside(synthetic_facts, REAL_FACTS) == []


@pytest.mark.real
def test_synthetic_within_bands_of_live_real_panel(synthetic_facts: dict[str, float]) -> None:
    if not real_data_path().is_file():
        pytest.skip(f"real data absent at {real_data_path()} (../shared is not in a fresh clone)")
    from gymkit.data.real import real_panel

    live = stylized_facts(real_panel())
    # the frozen constants are the live numbers, rounded
    for k in FACT_NAMES:
        assert live[k] == pytest.approx(REAL_FACTS[k], rel=1e-3, abs=1e-4), k
    assert _outside(synthetic_facts, live) == []


def test_band_check_can_fail() -> None:
    assert not within_band("vol_median", REAL_FACTS["vol_median"] * 1.5, REAL_FACTS["vol_median"])
    assert not within_band("kurtosis", REAL_FACTS["kurtosis"] / 3, REAL_FACTS["kurtosis"])
    assert not within_band("corr_stress", REAL_FACTS["corr_calm"], REAL_FACTS["corr_stress"])


def test_stress_correlation_exceeds_calm(synthetic_facts: dict[str, float]) -> None:
    assert synthetic_facts["corr_stress"] > 2 * synthetic_facts["corr_calm"]
