"""Hostile (T, N) panels shared by the bulk kernel tests."""

from __future__ import annotations

import numpy as np


def walks(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random walks with NaN, ±inf, constant runs, -0.0 and exact ties (N >= 4)."""
    x = rng.normal(size=shape).cumsum(0) + 50.0
    x[rng.random(shape) < 0.01] = np.nan
    x[rng.random(shape) < 0.003] = np.inf
    x[rng.random(shape) < 0.003] = -np.inf
    x[30:90, 1] = 3.25
    x[100:104, 2] = -0.0
    x[:, 3] = np.round(x[:, 3] / 4.0)
    return x
