"""Correlation geometry: pure noise sits on the Marchenko–Pastur baseline; a factor panel does not."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.jepa.geometry import GEOMETRY_NAMES, geometry, geometry_of_windows, marchenko_pastur


@pytest.mark.parametrize("w", [64, 126])
def test_pure_noise_matches_marchenko_pastur(w: int) -> None:
    rng = np.random.default_rng(0)
    g = geometry_of_windows(rng.standard_normal((40, w, 46)))
    mp = marchenko_pastur(46, w)
    mean = dict(zip(GEOMETRY_NAMES, np.nanmean(g, axis=0), strict=True))
    assert abs(mean["mean_corr"]) < 0.01
    assert mean["pr_frac"] == pytest.approx(mp["pr_frac"], abs=0.03)
    assert mean["lmax_share"] == pytest.approx(mp["lmax_share"], rel=0.15)  # λmax near λ+ / N
    assert mean["drift_top3"] > 0.85  # unrelated windows: subspaces nearly orthogonal
    if w == 64:
        assert mp["pr_frac"] == pytest.approx(0.58, abs=0.005)  # the figure


def test_one_factor_panel_has_the_expected_geometry() -> None:
    rng = np.random.default_rng(1)
    w, n, rho = 252, 46, 0.4
    f = rng.standard_normal((w, 1))
    r = np.sqrt(rho) * f + np.sqrt(1 - rho) * rng.standard_normal((w, n))
    g = geometry(r, previous=r)
    assert g["mean_corr"] == pytest.approx(rho, abs=0.06)
    assert g["lmax_share"] == pytest.approx(rho + (1 - rho) / n, abs=0.06)
    assert g["pr_frac"] < 0.3 < marchenko_pastur(n, w)["pr_frac"]
    assert g["drift_top3"] == pytest.approx(0.0, abs=1e-9)  # same window: no rotation
    assert g["lmax_share"] > g["share_2"] >= g["share_3"] >= g["share_4"] >= g["share_5"]


def test_geometry_rejects_nan_and_bad_shapes() -> None:
    with pytest.raises(ValueError, match="finite"):
        geometry_of_windows(np.full((1, 10, 8), np.nan))
    with pytest.raises(ValueError, match="windows"):
        geometry_of_windows(np.zeros((10, 8)))
