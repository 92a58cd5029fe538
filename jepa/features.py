"""Inputs and decoder targets of the JEPA, computed from a complete OHLCV panel (numpy only).

Per stock-day features (:data:`FEATURE_NAMES`), each divided by a scale fixed on the train
panel (:class:`FeatureScales`, stored in the checkpoint) so every feature has unit spread:

* ``ret``        log close-to-close return,
* ``overnight``  log(open / previous close),   ``intraday`` log(close / open),
* ``log_range``  log(log(high / low) + 1e-4), centred,
* ``log_volume`` log volume minus the stock's train mean log volume (a per-stock z-score),
* ``market``     the equal-weight mean of ``ret`` across stocks that day (cross-stock context),
* ``cum_ret``    the log return accumulated since the window's first day (a window feature,
                 added by :func:`window_batch`).

Window parameters (:func:`window_params`, the decoder's targets) of window w and stock i:
drift μ_i (mean r), market beta β_i, idiosyncratic vol σ_i (std of r − μ − β(m − m̄)),
the market vol σ_m (std of m) and the volume level ℓ_i (mean log volume − train mean);
:func:`window_residuals` returns the standardised shocks u_m = (m − m̄)/σ_m and
u_i = e_i/σ_i, the overnight gap and the range wicks in units of the stock's total vol,
and the abnormal log volume — the material the decoder's block bootstrap resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gymkit.data.panel import Panel

__all__ = [
    "FEATURE_NAMES",
    "PARAM_NAMES",
    "FeatureScales",
    "MarketArraysF",
    "day_features",
    "market_arrays",
    "window_batch",
    "window_params",
    "window_residuals",
]

FEATURE_NAMES: tuple[str, ...] = (
    "ret", "overnight", "intraday", "log_range", "log_volume", "market", "cum_ret")
#: Decoder targets per (window, stock); ``log_sigma_m`` is shared by the window's stocks.
PARAM_NAMES: tuple[str, ...] = ("mu", "beta", "log_sigma", "log_sigma_m", "vol_level")


@dataclass(frozen=True)
class MarketArraysF:
    """Float views of a complete panel used by the JEPA: log prices and log volume (T, N)."""

    log_open: np.ndarray
    log_high: np.ndarray
    log_low: np.ndarray
    log_close: np.ndarray
    log_volume: np.ndarray


def market_arrays(panel: Panel) -> MarketArraysF:
    """Log OHLCV of ``panel``; raises ``ValueError`` naming a field with NaN or non-positive values."""
    out = {}
    for name in ("open", "high", "low", "close", "volume"):
        a = panel.field(name)
        if not (np.isfinite(a).all() and (a > 0).all()):
            raise ValueError(f"the JEPA needs a complete positive panel: field {name!r} has NaN or <= 0")
        out[f"log_{name}"] = np.log(a)
    return MarketArraysF(**out)


@dataclass(frozen=True)
class FeatureScales:
    """Scales fixed on the train panel: per-feature divisor, range centre, per-stock log-volume mean."""

    ret: float
    overnight: float
    intraday: float
    range_centre: float
    range_scale: float
    volume_mean: tuple[float, ...]
    volume_scale: float
    market: float

    @classmethod
    def fit(cls, m: MarketArraysF) -> FeatureScales:
        """Fit the scales on the (train) arrays ``m``."""
        r = np.diff(m.log_close, axis=0)
        on = m.log_open[1:] - m.log_close[:-1]
        intra = m.log_close[1:] - m.log_open[1:]
        lr = np.log(m.log_high - m.log_low + 1e-4)
        vm = m.log_volume.mean(axis=0)
        return cls(float(r.std()), float(on.std()), float(intra.std()), float(lr.mean()),
                   float(lr.std()), tuple(float(x) for x in vm),
                   float((m.log_volume - vm).std()), float(r.mean(axis=1).std()))

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (round-trips through ``FeatureScales(**d)``)."""
        d = dict(self.__dict__)
        d["volume_mean"] = list(self.volume_mean)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FeatureScales:
        """Inverse of :meth:`to_dict`."""
        return cls(**{**d, "volume_mean": tuple(d["volume_mean"])})


def day_features(m: MarketArraysF, s: FeatureScales) -> np.ndarray:
    """(T − 1, N, 6) float32 per-day features (all but ``cum_ret``) for days 1 … T − 1."""
    r = np.diff(m.log_close, axis=0)
    on = m.log_open[1:] - m.log_close[:-1]
    intra = m.log_close[1:] - m.log_open[1:]
    lr = np.log(m.log_high[1:] - m.log_low[1:] + 1e-4)
    lv = m.log_volume[1:] - np.asarray(s.volume_mean)
    mk = np.broadcast_to(r.mean(axis=1, keepdims=True), r.shape)
    f = np.stack([r / s.ret, on / s.overnight, intra / s.intraday,
                  (lr - s.range_centre) / s.range_scale, lv / s.volume_scale, mk / s.market], axis=-1)
    return np.ascontiguousarray(f, dtype=np.float32)


def window_batch(feats: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """(B, N, F, W) float32 windows of ``feats`` (T, N, 6) at ``starts``, with ``cum_ret`` added."""
    idx = np.asarray(starts)[:, None] + np.arange(length)[None, :]
    x = feats[idx]  # (B, W, N, 6)
    cum = np.cumsum(x[..., 0], axis=1) / np.sqrt(length)
    x = np.concatenate([x, cum[..., None]], axis=-1)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1), dtype=np.float32)


def _window_stats(r: np.ndarray) -> tuple[np.ndarray, ...]:
    """(K, W, N) returns -> mu, beta, sigma (K, N), sigma_m, m_bar (K,), market (K, W)."""
    mu = r.mean(axis=1)
    mkt = r.mean(axis=2)
    mbar = mkt.mean(axis=1)
    dm = mkt - mbar[:, None]
    var_m = (dm * dm).mean(axis=1)
    beta = np.einsum("kwn,kw->kn", r - mu[:, None, :], dm) / r.shape[1] / var_m[:, None]
    e = r - mu[:, None, :] - beta[:, None, :] * dm[:, :, None]
    return mu, beta, e.std(axis=1), np.sqrt(var_m), mbar, dm, e


def window_params(m: MarketArraysF, starts: np.ndarray, length: int, s: FeatureScales) -> np.ndarray:
    """(K, N, 5) decoder targets (:data:`PARAM_NAMES`) of the windows of daily returns at ``starts``.

    Window k covers return days ``starts[k] … starts[k] + length − 1`` (day d = close d → d + 1),
    the same days :func:`window_batch` reads.  ``mu`` is in units of ``s.ret``, ``vol_level``
    in units of ``s.volume_scale``; vols are natural logs of daily figures.
    """
    r_all = np.diff(m.log_close, axis=0)
    idx = np.asarray(starts)[:, None] + np.arange(length)[None, :]
    r = r_all[idx]
    mu, beta, sig, sig_m, _, _, _ = _window_stats(r)
    lv = (m.log_volume[1:][idx] - np.asarray(s.volume_mean)).mean(axis=1) / s.volume_scale
    k, n = mu.shape
    out = np.empty((k, n, len(PARAM_NAMES)))
    out[..., 0] = mu / s.ret
    out[..., 1] = beta
    out[..., 2] = np.log(sig)
    out[..., 3] = np.log(sig_m)[:, None]
    out[..., 4] = lv
    return out


def window_residuals(m: MarketArraysF, starts: np.ndarray, length: int) -> dict[str, np.ndarray]:
    """Standardised shocks of the windows at ``starts`` (module doc), each (K, W, N) or (K, W).

    Keys: ``u_m`` (K, W), ``u`` (idiosyncratic), ``on`` (overnight gap / total vol),
    ``up``/``down`` (upper / lower wick / total vol, ≥ 0) and ``ab_vol`` (log volume minus
    the window's mean log volume).
    """
    r_all = np.diff(m.log_close, axis=0)
    idx = np.asarray(starts)[:, None] + np.arange(length)[None, :]
    r = r_all[idx]
    _, _, sig, sig_m, _, dm, e = _window_stats(r)
    tot = r.std(axis=1)[:, None, :]
    lo, hi, lc = m.log_open[1:][idx], m.log_high[1:][idx], m.log_close[1:][idx]
    ll = m.log_low[1:][idx]
    prev_c = m.log_close[:-1][idx]
    lv = m.log_volume[1:][idx]
    return {
        "u_m": dm / sig_m[:, None],
        "u": e / sig[:, None, :],
        "on": (lo - prev_c) / tot,
        "up": np.maximum(hi - np.maximum(lo, lc), 0.0) / tot,
        "down": np.maximum(np.minimum(lo, lc) - ll, 0.0) / tot,
        "ab_vol": lv - lv.mean(axis=1, keepdims=True),
    }
