"""Cost models: configuration objects (a name + parameters) that charge a book's daily costs.

Every cost is a fraction of the book (gross 1) charged on the signal date t whose
book w_t is traded at open(t+1); ``trade_{t,i} = |w_{t,i} − w_{t−1,i}|`` (the first
judged day trades from zero) and ``turnover_t = Σ_i trade_{t,i}``.

``TrainCosts`` (DESIGN §4, training)::

    cost_t = (fee + slippage + half_spread + fixed_impact) · 1e-4 · turnover_t
           = (2 + 1 + 0.5 + 0.5) bps = 4.0 bps per unit of turnover by default

``RealisticCosts`` (holdout; deliberately harsher) = the same per-turnover fees plus

* square-root market impact for a book of ``book_usd`` dollars (default $1M),
  charged per traded dollar of stock i::

      impact_{t,i} = k · σ_{t,i} · sqrt(B · trade_{t,i} / ADV$_{t,i})
      cost_t      += Σ_i trade_{t,i} · impact_{t,i}

  σ_{t,i}: standard deviation (ddof=1) of the close-to-close returns over the
  ``vol_window`` (20) sessions ending at t; ADV$_{t,i}: mean of close·volume over
  the ``adv_window`` (20) sessions ending at t — data ≤ t only.  A stock without a
  full window uses that day's cross-sectional median σ and ADV$.  The coefficient
  k = 1.0 follows the square-root law ΔP/P = Y·σ·sqrt(Q/V) with Y of order one
  (Tóth et al. 2011, "Anomalous price impact and the critical nature of liquidity
  in financial markets", PRX 1, 021006, report Y ≈ 0.5–1; Bouchaud, Bonart, Donier &
  Gould 2018, *Trades, Quotes and Prices*, ch. 12; Almgren, Thum, Hauptmann & Li
  2005, "Direct estimation of equity market impact", Risk 18, fit exponent ≈ 0.6
  with coefficient ≈ 0.3–0.6 for temporary + permanent impact).  We take the upper
  end, Y = 1, because the holdout is meant to be harsh.
* a capacity penalty: each day, the dollars of a position above ``capacity_adv_share``
  (1%) of the stock's ADV$ pay ``capacity_bps`` (10 bps) of their notional::

      cost_t += capacity_bps · 1e-4 · Σ_i max(0, |w_{t,i}|·B − share·ADV$_{t,i}) / B

  (a penalty on un-tradeable size, not a market model; zero for a $1M book on
  large caps, binding for large books or small names);
* a borrow fee on the short gross: ``cost_t += borrow_bps_per_year · 1e-4 / 252 ·
  Σ_i max(0, −w_{t,i})`` (50 bps a year).

Environment B's ~19× higher costs are configuration, e.g.
``TrainCosts().scaled(19)`` or ``cost_model_from_dict({"name": "train", "fee_bps": 38, ...})``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np
from numba import njit

__all__ = [
    "COST_MODELS",
    "CostInputs",
    "CostModel",
    "RealisticCosts",
    "TrainCosts",
    "cost_model_from_dict",
]

BPS = 1e-4
DAYS_PER_YEAR = 252
_DICTS: dict = {}  # cost model -> its to_dict(), per distinct (frozen) model


@dataclass(frozen=True)
class CostInputs:
    """Market inputs of a cost model on the judged days: ``sigma`` and ``adv_usd`` (D, N).

    Already filled: a missing value is replaced by that day's cross-sectional median.
    """

    sigma: np.ndarray
    adv_usd: np.ndarray


@dataclass(frozen=True)
class _CostBase:
    name: ClassVar[str] = ""
    needs_market: ClassVar[bool] = False

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
                raise ValueError(f"cost model {self.name!r}: parameter {f.name} must be a finite number >= 0, got {v!r}")

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"name": ..., **parameters}`` (JSON-ready; round-trips through from_dict)."""
        cached = _DICTS.get(self)  # frozen: the dict of equal models is the same; built once
        if cached is None:
            cached = self._build_dict()
            if len(_DICTS) < 256:
                _DICTS[self] = cached
        return dict(cached)

    def _build_dict(self) -> dict[str, Any]:
        return {"name": self.name, **{k: float(v) for k, v in asdict(self).items()}}

    def scaled(self, factor: float):
        """Return a copy with every per-trade cost parameter multiplied by ``factor``."""
        return replace(self, **{k: getattr(self, k) * factor for k in self._scalable})

    _scalable: ClassVar[tuple[str, ...]] = ()


@dataclass(frozen=True)
class TrainCosts(_CostBase):
    """Training costs: ``(fee + slippage + half_spread + fixed_impact) bps × turnover_t``."""

    name: ClassVar[str] = "train"
    fee_bps: float = 2.0
    slippage_bps: float = 1.0
    half_spread_bps: float = 0.5
    fixed_impact_bps: float = 0.5
    _scalable: ClassVar[tuple[str, ...]] = ("fee_bps", "slippage_bps", "half_spread_bps", "fixed_impact_bps")

    @property
    def bps_per_turnover(self) -> float:
        """Total linear cost per unit of turnover, in bps (4.0 by default)."""
        return self.fee_bps + self.slippage_bps + self.half_spread_bps + self.fixed_impact_bps

    def daily(self, weights: np.ndarray, turnover: np.ndarray, inputs: CostInputs | None) -> np.ndarray:
        """Return the (D,) daily cost: bps_per_turnover · 1e-4 · turnover."""
        return (self.bps_per_turnover * BPS) * turnover


@dataclass(frozen=True)
class RealisticCosts(_CostBase):
    """Holdout costs: train fees + square-root impact + capacity penalty + short borrow (module doc)."""

    name: ClassVar[str] = "realistic"
    needs_market: ClassVar[bool] = True
    fee_bps: float = 2.0
    slippage_bps: float = 1.0
    half_spread_bps: float = 0.5
    fixed_impact_bps: float = 0.5
    impact_k: float = 1.0
    book_usd: float = 1_000_000.0
    vol_window: int = 20
    adv_window: int = 20
    capacity_adv_share: float = 0.01
    capacity_bps: float = 10.0
    borrow_bps_per_year: float = 50.0
    _scalable: ClassVar[tuple[str, ...]] = (
        "fee_bps", "slippage_bps", "half_spread_bps", "fixed_impact_bps", "impact_k",
        "capacity_bps", "borrow_bps_per_year",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for k in ("vol_window", "adv_window"):
            v = getattr(self, k)
            if int(v) != v or v < 2:
                raise ValueError(f"cost model 'realistic': parameter {k} must be an integer >= 2, got {v!r}")
        if self.book_usd <= 0:
            raise ValueError(f"cost model 'realistic': book_usd must be > 0, got {self.book_usd!r}")

    def _build_dict(self) -> dict[str, Any]:
        """``{"name": ..., **parameters}`` with the windows as ints."""
        d = super()._build_dict()
        d["vol_window"], d["adv_window"] = int(self.vol_window), int(self.adv_window)
        return d

    @property
    def bps_per_turnover(self) -> float:
        """The linear (train-fee) part per unit of turnover, in bps."""
        return self.fee_bps + self.slippage_bps + self.half_spread_bps + self.fixed_impact_bps

    def daily(self, weights: np.ndarray, turnover: np.ndarray, inputs: CostInputs | None) -> np.ndarray:
        """Return the (D,) daily cost: fees + square-root impact + capacity + borrow."""
        if inputs is None:
            raise ValueError("cost model 'realistic' needs market inputs (sigma, adv_usd)")
        extra = _realistic_extra(
            np.ascontiguousarray(weights), inputs.sigma, inputs.adv_usd, float(self.impact_k),
            float(self.book_usd), float(self.capacity_adv_share), float(self.capacity_bps) * BPS,
            float(self.borrow_bps_per_year) * BPS / DAYS_PER_YEAR,
        )
        return (self.bps_per_turnover * BPS) * turnover + extra


@njit(cache=True, nogil=True)
def _realistic_extra(w, sigma, adv, k, book, cap_share, cap_rate, borrow_rate):
    n_days, n_stocks = w.shape
    out = np.empty(n_days)
    for d in range(n_days):
        impact = 0.0
        capacity = 0.0
        short = 0.0
        for j in range(n_stocks):
            prev = w[d - 1, j] if d > 0 else 0.0
            trade = abs(w[d, j] - prev)
            a = adv[d, j]
            if trade > 0.0 and a > 0.0:
                impact += trade * k * sigma[d, j] * np.sqrt(book * trade / a)
            pos = abs(w[d, j])
            if a == a:
                excess = pos * book - cap_share * a
                if excess > 0.0:
                    capacity += excess / book
            if w[d, j] < 0.0:
                short -= w[d, j]
        out[d] = impact + cap_rate * capacity + borrow_rate * short
    return out


#: Registry: cost model name → class.
COST_MODELS: dict[str, type] = {TrainCosts.name: TrainCosts, RealisticCosts.name: RealisticCosts}

#: A cost model is either registered class's instance.
CostModel = TrainCosts | RealisticCosts


def cost_model_from_dict(spec: dict[str, Any]) -> CostModel:
    """Build a cost model from ``{"name": "train"|"realistic", **parameters}``."""
    if not isinstance(spec, dict) or "name" not in spec:
        raise ValueError(f"cost model spec must be a dict with a 'name' key, got {spec!r}")
    cls = COST_MODELS.get(spec["name"])
    if cls is None:
        raise ValueError(f"unknown cost model {spec['name']!r}; expected one of {sorted(COST_MODELS)}")
    params = {k: v for k, v in spec.items() if k != "name"}
    known = {f.name for f in fields(cls)}
    bad = sorted(set(params) - known)
    if bad:
        raise ValueError(f"cost model {spec['name']!r}: unknown parameter(s) {bad}; expected {sorted(known)}")
    return cls(**params)
