"""Inputs and decoder targets of the JEPA, computed from an OHLCV panel (numpy only).

Missing cells (a user's market: listings, delistings, halts) are allowed.  A session cell is
*observed* when its open, high, low, close and volume are all finite and positive; a return
day d (close d → d + 1) is observed when sessions d and d + 1 both are
(:func:`observed_days`).  Features of a return day that is not observed are 0 and the cell
is flagged exactly like a masked cell (:func:`gymkit.jepa.model.apply_mask`), so the encoder
reads a missing cell as a masked one; a stock is *present* in a window when at least
:data:`PRESENT_MIN` of the window's return days are observed (:func:`window_present`), and
only present (window, stock) pairs enter the losses, the decoder fit and the shift
directions.  A stock-window whose observed returns are all 0 (a halted stock, or a vendor's
forward-filled constant price, with σ = 0) is not present either (:func:`moving_days`): its
log σ would be log 0 and its shocks 0 / 0, so it is masked like a window of missing cells
(and :func:`window_params` gives NaN, not −inf, for any σ = 0).  On a complete panel without
such a window every function below runs the same arithmetic as before
(``MarketArraysF.observed is None``, :func:`moving_days` ``None``), so the shipped checkpoint
and worlds are unchanged.

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
    "PRESENT_MIN",
    "FeatureScales",
    "MarketArraysF",
    "day_features",
    "market_arrays",
    "moving_days",
    "observed_days",
    "window_batch",
    "window_params",
    "window_present",
    "window_residuals",
]

FEATURE_NAMES: tuple[str, ...] = (
    "ret", "overnight", "intraday", "log_range", "log_volume", "market", "cum_ret")
#: Decoder targets per (window, stock); ``log_sigma_m`` is shared by the window's stocks.
PARAM_NAMES: tuple[str, ...] = ("mu", "beta", "log_sigma", "log_sigma_m", "vol_level")
#: A stock is present in a window when at least this share of its return days is observed
#: (the context window hides another 25% at random in training, so the encoder sees at
#: least half of a present stock's window).
PRESENT_MIN = 0.75


@dataclass(frozen=True)
class MarketArraysF:
    """Float views of a panel used by the JEPA: log prices and log volume (T, N).

    ``observed``: (T, N) bool session cells with a complete positive bar, ``None`` when every
    cell is (a complete panel); the log arrays are NaN where a cell is not observed.
    """

    log_open: np.ndarray
    log_high: np.ndarray
    log_low: np.ndarray
    log_close: np.ndarray
    log_volume: np.ndarray
    observed: np.ndarray | None = None


def market_arrays(panel: Panel) -> MarketArraysF:
    """Log OHLCV of ``panel`` (module doc: cells without a complete positive bar are NaN and
    recorded in ``observed``); ``ValueError`` when no stock has two observed sessions in a row."""
    fields = [panel.field(n) for n in ("open", "high", "low", "close", "volume")]
    ok = np.ones(fields[0].shape, dtype=bool)
    for a in fields:
        with np.errstate(invalid="ignore"):
            ok &= np.isfinite(a) & (a > 0)
    names = ("log_open", "log_high", "log_low", "log_close", "log_volume")
    if ok.all():
        return MarketArraysF(**{k: np.log(a) for k, a in zip(names, fields, strict=True)})
    if not (ok[1:] & ok[:-1]).any():
        raise ValueError("the JEPA needs observed returns: no stock has a complete positive bar "
                         "on two consecutive sessions")
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = {k: np.where(ok, np.log(np.where(ok, a, 1.0)), np.nan)
                for k, a in zip(names, fields, strict=True)}
    return MarketArraysF(**logs, observed=ok)


def observed_days(m: MarketArraysF) -> np.ndarray | None:
    """(T − 1, N) bool observed return days (sessions d and d + 1 observed); ``None`` when complete."""
    if m.observed is None:
        return None
    return m.observed[1:] & m.observed[:-1]


def _window_counts(days: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """(K, N) number of True days of ``days`` (D, N) in each window at ``starts``."""
    cs = np.vstack([np.zeros((1, days.shape[1]), dtype=np.int64),
                    np.cumsum(days, axis=0, dtype=np.int64)])
    s = np.asarray(starts, dtype=np.int64)
    return cs[s + length] - cs[s]


def moving_days(m: MarketArraysF, length: int) -> np.ndarray | None:
    """(T − 1, N) bool observed return days with a non-zero return, or ``None`` when every
    ``length``-day window of every stock has one (no window is flat: always so on the default
    market).  A window without one has σ = 0 (module doc) and is not present."""
    r = np.diff(m.log_close, axis=0)
    ok = observed_days(m)
    with np.errstate(invalid="ignore"):
        moving = (r != 0) if ok is None else ok & (r != 0)
    if moving.shape[0] < length:
        return moving
    starts = np.arange(moving.shape[0] - length + 1)
    return moving if (_window_counts(moving, starts, length) == 0).any() else None


def window_present(ok_days: np.ndarray | None, starts: np.ndarray, length: int,
                   moving: np.ndarray | None = None) -> np.ndarray | None:
    """(K, N) bool: the stock is present (≥ :data:`PRESENT_MIN` of the days observed, and with
    ``moving`` (:func:`moving_days`) at least one non-zero return) in the window of return
    days ``starts[k] … starts[k] + length − 1``; ``None`` when ``ok_days`` and ``moving`` are."""
    if ok_days is None and moving is None:
        return None
    present = (np.ones((np.asarray(starts).size, moving.shape[1]), dtype=bool) if ok_days is None
               else _window_counts(ok_days, starts, length) >= PRESENT_MIN * length)
    if moving is not None:
        present &= _window_counts(moving, starts, length) > 0
    return present


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
        """Fit the scales on the (train) arrays ``m`` (observed cells only; a stock without
        any observed session gets log-volume mean 0)."""
        if m.observed is not None:
            return cls._fit_observed(m)
        r = np.diff(m.log_close, axis=0)
        on = m.log_open[1:] - m.log_close[:-1]
        intra = m.log_close[1:] - m.log_open[1:]
        lr = np.log(m.log_high - m.log_low + 1e-4)
        vm = m.log_volume.mean(axis=0)
        return cls(float(r.std()), float(on.std()), float(intra.std()), float(lr.mean()),
                   float(lr.std()), tuple(float(x) for x in vm),
                   float((m.log_volume - vm).std()), float(r.mean(axis=1).std()))

    @classmethod
    def _fit_observed(cls, m: MarketArraysF) -> FeatureScales:
        ok, obs = observed_days(m), m.observed
        r = np.diff(m.log_close, axis=0)
        on = m.log_open[1:] - m.log_close[:-1]
        intra = m.log_close[1:] - m.log_open[1:]
        lr = np.log(m.log_high - m.log_low + 1e-4)
        n_obs = obs.sum(axis=0)
        vm = np.where(n_obs > 0, np.where(obs, m.log_volume, 0.0).sum(axis=0) / np.maximum(n_obs, 1), 0.0)
        days = ok.any(axis=1)
        mk = np.where(ok, r, 0.0).sum(axis=1)[days] / ok.sum(axis=1)[days]
        return cls(float(r[ok].std()), float(on[ok].std()), float(intra[ok].std()),
                   float(lr[obs].mean()), float(lr[obs].std()), tuple(float(x) for x in vm),
                   float((m.log_volume - vm)[obs].std()), float(mk.std()))

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
    """(T − 1, N, 6) float32 per-day features (all but ``cum_ret``) for days 1 … T − 1;
    0 on return days that are not observed (``market``: the mean over the observed stocks)."""
    r = np.diff(m.log_close, axis=0)
    on = m.log_open[1:] - m.log_close[:-1]
    intra = m.log_close[1:] - m.log_open[1:]
    lr = np.log(m.log_high[1:] - m.log_low[1:] + 1e-4)
    lv = m.log_volume[1:] - np.asarray(s.volume_mean)
    ok = observed_days(m)
    if ok is None:
        mk = np.broadcast_to(r.mean(axis=1, keepdims=True), r.shape)
    else:
        cnt = ok.sum(axis=1, keepdims=True)
        mk = np.broadcast_to(np.where(ok, r, 0.0).sum(axis=1, keepdims=True) / np.maximum(cnt, 1),
                             r.shape)
    f = np.stack([r / s.ret, on / s.overnight, intra / s.intraday,
                  (lr - s.range_centre) / s.range_scale, lv / s.volume_scale, mk / s.market], axis=-1)
    if ok is not None:
        f = np.where(ok[..., None], f, 0.0)
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


def _masked_stats(r: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_window_stats` over the observed cells ``ok`` (K, W, N) only: the market is the
    mean over the stocks observed that day; NaN where a stock has fewer than 2 observed days."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rz = np.where(ok, r, 0.0)
        cnt = ok.sum(axis=1)  # (K, N)
        mu = rz.sum(axis=1) / cnt
        day_n = ok.sum(axis=2)  # (K, W)
        day = day_n > 0
        mkt = np.where(day, rz.sum(axis=2) / np.maximum(day_n, 1), 0.0)
        mbar = (mkt * day).sum(axis=1) / day.sum(axis=1)
        dm = np.where(day, mkt - mbar[:, None], 0.0)
        var_m = (dm * dm).sum(axis=1) / day.sum(axis=1)
        dev = np.where(ok, r - mu[:, None, :], 0.0)
        beta = np.einsum("kwn,kw->kn", dev, dm) / cnt / var_m[:, None]
        e = np.where(ok, r - mu[:, None, :] - beta[:, None, :] * dm[:, :, None], np.nan)
        sig = np.sqrt(np.where(ok, e * e, 0.0).sum(axis=1) / cnt)
        short = cnt < 2
        mu, beta, sig = (np.where(short, np.nan, x) for x in (mu, beta, sig))
    return mu, beta, sig, np.sqrt(var_m), mbar, dm, e


def _ok_windows(m: MarketArraysF, idx: np.ndarray) -> np.ndarray | None:
    ok = observed_days(m)
    return None if ok is None else ok[idx]


def window_params(m: MarketArraysF, starts: np.ndarray, length: int, s: FeatureScales) -> np.ndarray:
    """(K, N, 5) decoder targets (:data:`PARAM_NAMES`) of the windows of daily returns at ``starts``.

    Window k covers return days ``starts[k] … starts[k] + length − 1`` (day d = close d → d + 1),
    the same days :func:`window_batch` reads.  ``mu`` is in units of ``s.ret``, ``vol_level``
    in units of ``s.volume_scale``; vols are natural logs of daily figures.  With missing
    cells the figures use the observed days only (NaN for a stock with fewer than 2); ``log_sigma``
    is NaN where σ = 0 (a flat window), never −inf.
    """
    r_all = np.diff(m.log_close, axis=0)
    idx = np.asarray(starts)[:, None] + np.arange(length)[None, :]
    r = r_all[idx]
    ok = _ok_windows(m, idx)
    if ok is None:
        mu, beta, sig, sig_m, _, _, _ = _window_stats(r)
        lv = (m.log_volume[1:][idx] - np.asarray(s.volume_mean)).mean(axis=1) / s.volume_scale
    else:
        mu, beta, sig, sig_m, _, _, _ = _masked_stats(r, ok)
        dv = np.where(ok, m.log_volume[1:][idx] - np.asarray(s.volume_mean), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            lv = dv.sum(axis=1) / ok.sum(axis=1) / s.volume_scale
    k, n = mu.shape
    out = np.empty((k, n, len(PARAM_NAMES)))
    out[..., 0] = mu / s.ret
    out[..., 1] = beta
    with np.errstate(invalid="ignore"):  # σ = 0 (a flat window, module doc): NaN like a missing one
        out[..., 2] = np.log(np.where(sig > 0, sig, np.nan))
    out[..., 3] = np.log(sig_m)[:, None]
    out[..., 4] = lv
    return out


def window_residuals(m: MarketArraysF, starts: np.ndarray, length: int) -> dict[str, np.ndarray]:
    """Standardised shocks of the windows at ``starts`` (module doc), each (K, W, N) or (K, W).

    Keys: ``u_m`` (K, W), ``u`` (idiosyncratic), ``on`` (overnight gap / total vol),
    ``up``/``down`` (upper / lower wick / total vol, ≥ 0) and ``ab_vol`` (log volume minus
    the window's mean log volume).  With missing cells: NaN where a day is not observed; a flat
    window's shocks (σ = 0) are not finite (the pool fills them: :mod:`.decoder`).
    """
    r_all = np.diff(m.log_close, axis=0)
    idx = np.asarray(starts)[:, None] + np.arange(length)[None, :]
    r = r_all[idx]
    ok = _ok_windows(m, idx)
    if ok is not None:
        return _masked_residuals(m, idx, r, ok)
    _, _, sig, sig_m, _, dm, e = _window_stats(r)
    tot = r.std(axis=1)[:, None, :]
    lo, hi, lc = m.log_open[1:][idx], m.log_high[1:][idx], m.log_close[1:][idx]
    ll = m.log_low[1:][idx]
    prev_c = m.log_close[:-1][idx]
    lv = m.log_volume[1:][idx]
    with np.errstate(invalid="ignore", divide="ignore"):  # a flat window (σ = 0): not finite
        return {
            "u_m": dm / sig_m[:, None],
            "u": e / sig[:, None, :],
            "on": (lo - prev_c) / tot,
            "up": np.maximum(hi - np.maximum(lo, lc), 0.0) / tot,
            "down": np.maximum(np.minimum(lo, lc) - ll, 0.0) / tot,
            "ab_vol": lv - lv.mean(axis=1, keepdims=True),
        }


def _masked_residuals(m: MarketArraysF, idx: np.ndarray, r: np.ndarray,
                      ok: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`window_residuals` over the observed cells ``ok`` (K, W, N); NaN elsewhere."""
    _, _, sig, sig_m, _, dm, e = _masked_stats(r, ok)
    with np.errstate(invalid="ignore", divide="ignore"):
        cnt = ok.sum(axis=1)
        rz = np.where(ok, r, 0.0)
        mean = rz.sum(axis=1) / cnt
        tot = np.sqrt(np.where(ok, (r - mean[:, None, :]) ** 2, 0.0).sum(axis=1) / cnt)[:, None, :]
        lo, hi, lc = m.log_open[1:][idx], m.log_high[1:][idx], m.log_close[1:][idx]
        ll = m.log_low[1:][idx]
        prev_c = m.log_close[:-1][idx]
        lv = m.log_volume[1:][idx]
        lv_mean = np.where(ok, lv, 0.0).sum(axis=1, keepdims=True) / cnt[:, None, :]
        out = {
            "u_m": dm / sig_m[:, None],
            "u": e / sig[:, None, :],
            "on": (lo - prev_c) / tot,
            "up": np.maximum(hi - np.maximum(lo, lc), 0.0) / tot,
            "down": np.maximum(np.minimum(lo, lc) - ll, 0.0) / tot,
            "ab_vol": lv - lv_mean,
        }
    for k in ("u", "on", "up", "down", "ab_vol"):
        out[k] = np.where(ok & np.isfinite(out[k]), out[k], np.nan)
    return out
