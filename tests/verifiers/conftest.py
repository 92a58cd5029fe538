"""Shared fixtures of the verifier tests: seeded random panels and the pandas reference."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from gymkit.data import Panel, Split, nyse_sessions

_REF_NAME = "gymkit_tests_verifiers_pandas_reference"


def load_reference():
    """Import tests/verifiers/pandas_reference.py under a unique module name."""
    if _REF_NAME not in sys.modules:
        path = Path(__file__).with_name("pandas_reference.py")
        spec = importlib.util.spec_from_file_location(_REF_NAME, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_REF_NAME] = mod
        spec.loader.exec_module(mod)
    return sys.modules[_REF_NAME]


def random_panel(seed: int, start: str = "2012-06-29", end: str = "2015-12-31", n: int = 12,
                 nan_frac: float = 0.0, cap: bool = True) -> Panel:
    """A seeded random-walk OHLCV panel on NYSE sessions (optionally with NaN gaps)."""
    dates = nyse_sessions(start, end)
    t = dates.size
    rng = np.random.default_rng(seed)
    close = 40.0 * np.exp(np.cumsum(rng.normal(0.0002, 0.015, (t, n)), axis=0))
    open_ = close * np.exp(rng.normal(0.0, 0.005, (t, n)))
    high = np.maximum(open_, close) * (1 + rng.uniform(0, 0.01, (t, n)))
    low = np.minimum(open_, close) * (1 - rng.uniform(0, 0.01, (t, n)))
    volume = np.round(rng.lognormal(13.0, 0.5, (t, n)))
    caps = close * rng.uniform(1e8, 1e9, n) if cap else None
    if nan_frac > 0:
        holes = rng.random((t, n)) < nan_frac
        arrs = [open_, high, low, close, volume] + ([caps] if cap else [])
        for a in arrs:
            a[holes] = np.nan
    return Panel(dates, [f"S{i:02d}" for i in range(n)], open_, high, low, close, volume, cap=caps,
                 sector=[f"sec{i % 3}" for i in range(n)])


#: A split for the small random panels: ~2.5 train years, ~1 holdout year.
SMALL_SPLIT = Split("2012-06-29", "2014-12-31", "2015-01-02", "2015-12-31")


@pytest.fixture(scope="session")
def ref():
    """The pandas reference module."""
    return load_reference()


def values_for(panel: Panel, seed: int, kind: str) -> np.ndarray:
    """Seeded formula-like values on ``panel``: noise, persistent, ties or momentum."""
    rng = np.random.default_rng(seed)
    t, n = panel.T, panel.N
    if kind == "noise":
        v = rng.normal(size=(t, n))
    elif kind == "persistent":
        v = np.cumsum(rng.normal(size=(t, n)), axis=0)
    elif kind == "ties":
        v = np.round(rng.normal(size=(t, n)))
    elif kind == "momentum":
        c = np.array(panel.close)
        v = np.full((t, n), np.nan)
        v[5:] = c[5:] / c[:-5] - 1
    else:
        raise AssertionError(kind)
    v[rng.random((t, n)) < 0.03] = np.nan
    return v



def digest(res) -> str:
    """sha256 of every array and summary of a BacktestResult."""
    h = hashlib.sha256()
    for k in ("weights", "gross", "net", "cost", "turnover", "ic"):
        h.update(getattr(res, k).tobytes())
    h.update(repr(res.metrics).encode() + repr(res.factors).encode() + res.cpcv.test_sharpes.tobytes())
    return h.hexdigest()
