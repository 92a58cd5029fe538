"""Per-window market context, computed once per (panel fingerprint, split, mode, burn-in) and cached.

A :class:`WindowContext` holds what every formula scored on the same window
reuses: the window panel's forward open-to-open returns, the judged days, the
equal-weight market, the factor model and (lazily) the realistic-cost inputs.
Train contexts are built from ``split.train(panel)`` only, so no holdout price can
reach a train number.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

import numpy as np
from numba import njit

from gymkit.data.panel import Panel
from gymkit.data.splits import Split

from .book import ForwardByStock, forward_open_returns, split_forward_returns
from .costs import CostInputs
from .factors import FactorModel, _rolling_mean, _rolling_std, build_factor_model
from .windows import BURN_IN, JudgedWindow, judged_window, window_panel

__all__ = ["WindowContext", "clear_context_cache", "window_context"]

_CACHE_SIZE = 16
_cache: OrderedDict[tuple, WindowContext] = OrderedDict()
_lock = Lock()


@njit(cache=True, nogil=True)
def _equal_weight_market(fwd: np.ndarray, r0: int, r1: int) -> np.ndarray:
    out = np.zeros(r1 - r0)
    for t in range(r0, r1):
        s = 0.0
        n = 0
        for j in range(fwd.shape[1]):
            v = fwd[t, j]
            if v == v:
                s += v
                n += 1
        out[t - r0] = s / n if n > 0 else 0.0
    return out


def _fill_with_row_median(x: np.ndarray) -> np.ndarray:
    out = np.array(x, dtype=np.float64)
    bad = ~np.isfinite(out)
    if bad.any():
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(np.where(bad, np.nan, out), axis=1)
        med = np.where(np.isfinite(med), med, np.nan)
        rows, cols = np.nonzero(bad)
        out[rows, cols] = med[rows]
    return out


class WindowContext:
    """Everything per window that formulas share (see module doc)."""

    __slots__ = ("_cost_inputs", "_factors", "_lock", "fwd", "fwd_by_stock", "fwd_parts", "judged", "market",
                 "panel", "split")

    def __init__(self, panel: Panel, split: Split, judged: JudgedWindow) -> None:
        self.panel = panel
        self.split = split
        self.judged = judged
        fwd = forward_open_returns(panel.open)
        fwd.setflags(write=False)
        self.fwd = fwd
        parts = split_forward_returns(fwd)
        for a in parts:
            a.setflags(write=False)
        self.fwd_parts = parts
        self.fwd_by_stock = ForwardByStock(parts, judged.rows)  # the book kernel's layout
        market = _equal_weight_market(fwd, judged.first, judged.last + 1)
        market.setflags(write=False)
        self.market = market
        self._factors: FactorModel | None = None
        self._cost_inputs: dict[tuple[int, int], CostInputs] = {}
        self._lock = Lock()

    @property
    def factors(self) -> FactorModel:
        """The factor model of this window's judged days (built on first use)."""
        with self._lock:
            if self._factors is None:
                p = self.panel
                self._factors = build_factor_model(
                    p.close, p.volume, p.cap, self.fwd, self.market, self.judged.rows, p.fingerprint
                )
            return self._factors

    def cost_inputs(self, vol_window: int, adv_window: int) -> CostInputs:
        """σ (std of close-to-close returns) and ADV$ (mean close·volume) on the judged days, median-filled."""
        key = (int(vol_window), int(adv_window))
        with self._lock:
            hit = self._cost_inputs.get(key)
            if hit is None:
                p = self.panel
                rows = self.judged.rows
                rets = np.ascontiguousarray(p.field("returns"))
                sigma = _fill_with_row_median(_rolling_std(rets, key[0])[rows])
                adv = _fill_with_row_median(
                    _rolling_mean(np.ascontiguousarray(p.close * p.volume), key[1])[rows]
                )
                sigma = np.ascontiguousarray(np.nan_to_num(sigma, nan=0.0))
                adv = np.ascontiguousarray(adv)  # NaN ADV (no data that day) → no impact
                sigma.setflags(write=False)
                adv.setflags(write=False)
                hit = CostInputs(sigma, adv)
                self._cost_inputs[key] = hit
            return hit


def window_context(panel: Panel, split: Split, mode: str, burn_in: int = BURN_IN) -> WindowContext:
    """Return the cached :class:`WindowContext` of ``panel`` for ``mode`` (built from the window only)."""
    key = (panel.fingerprint, split, mode, int(burn_in))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    wp = window_panel(panel, split, mode)
    ctx = WindowContext(wp, split, judged_window(wp, split, mode, burn_in))
    with _lock:
        _cache[key] = ctx
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return ctx


def clear_context_cache() -> None:
    """Drop every cached window context (tests and long-lived servers)."""
    with _lock:
        _cache.clear()
