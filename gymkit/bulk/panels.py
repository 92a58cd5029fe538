"""Seeded synthetic panels for the bulk scorer's benchmarks and gates (numpy only).

:func:`synthetic` is a random-walk market of ``t`` sessions and ``n`` stocks (11 sectors,
40 industries, 0.1% missing values) as an :class:`ArrayPanel` (the evaluator's PanelLike);
:func:`forward_returns` is the book's open-to-open forward return.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["ArrayPanel", "forward_returns", "synthetic"]


class ArrayPanel:
    """A numpy-only panel (the evaluator's PanelLike): fields, group codes, a fingerprint."""

    def __init__(self, fields: dict[str, np.ndarray], codes: dict[str, np.ndarray]) -> None:
        self.fields, self.codes = fields, codes
        self.T, self.N = fields["close"].shape
        h = hashlib.sha256()
        for k in sorted(fields):
            h.update(k.encode() + np.ascontiguousarray(fields[k]).tobytes())
        for k in sorted(codes):
            h.update(k.encode() + codes[k].tobytes())
        self.fingerprint = h.hexdigest()

    def has_field(self, name: str) -> bool:
        return name in self.fields

    def field(self, name: str) -> np.ndarray:
        return self.fields[name]

    def has_groups(self, level: str) -> bool:
        return level in self.codes

    def group_codes(self, level: str) -> np.ndarray:
        return self.codes[level]


def synthetic(n: int, t: int, seed: int = 26) -> ArrayPanel:
    """A seeded random-walk panel of ``t`` sessions and ``n`` stocks (numpy only)."""
    rng = np.random.Generator(np.random.PCG64(seed + n))
    lr = 0.0005 + 0.02 * rng.standard_normal((t, n))
    close = 50.0 * np.exp(np.cumsum(lr, axis=0))
    open_ = np.vstack([close[:1], close[:-1]]) * np.exp(0.005 * rng.standard_normal((t, n)))
    high = np.maximum(open_, close) * np.exp(np.abs(0.01 * rng.standard_normal((t, n))))
    low = np.minimum(open_, close) * np.exp(-np.abs(0.01 * rng.standard_normal((t, n))))
    volume = np.round(1e6 * np.exp(0.5 * rng.standard_normal((t, n))))
    hole = rng.random((t, n)) < 0.001
    for a in (open_, high, low, close, volume):
        a[hole] = np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        returns = np.full_like(close, np.nan)
        returns[1:] = close[1:] / close[:-1] - 1.0
        vwap = (high + low + close) / 3.0
    for a in (returns, vwap):
        a[~np.isfinite(a)] = np.nan
    cap = close * np.round(1e7 * np.exp(rng.standard_normal(n)))
    codes = {"sector": rng.integers(0, 11, n).astype(np.int64),
             "industry": rng.integers(0, 40, n).astype(np.int64)}
    fields = {"open": open_, "high": high, "low": low, "close": close, "volume": volume,
              "returns": returns, "vwap": vwap, "cap": cap}
    return ArrayPanel(fields, codes)


def forward_returns(open_: np.ndarray) -> np.ndarray:
    """open(t+2)/open(t+1) − 1, NaN where undefined: the book's own
    :func:`gymkit.verifiers.book.forward_open_returns`."""
    from gymkit.verifiers.book import forward_open_returns

    return forward_open_returns(open_)
