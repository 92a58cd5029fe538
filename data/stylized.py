"""Stylised facts of a :class:`Panel`: the statistics the synthetic market is calibrated on.

Every figure is computed from the panel alone with vectorised numpy (no Python loops
over rows), so the same function describes the real panel and the synthetic one and
the calibration test compares like with like.  Definitions (r = daily log close-to-close
return, per stock; "median" = median across stocks):

=====================  =====================================================================
``vol_median``         median of per-stock std(r)
``vol_p90_p10``        90th / 10th percentile of per-stock std(r) (spread across stocks)
``kurtosis``           median of per-stock excess kurtosis of r
``acf_abs_1/5/20``     mean of per-stock autocorrelation of |r| at lags 1, 5, 20
``corr_calm``          mean pairwise correlation of r on days of calm months (market vol
                       below its median month)
``corr_stress``        the same on days of stressed months (top decile of monthly market
                       vol); market = equal-weight mean of r, month vol = std within month
``market_mode``        λmax / trace of the full-sample correlation matrix of r
``logvol_acf1``        median lag-1 autocorrelation of abnormal log volume (log volume
                       minus its mean over the previous 21 sessions)
``vol_absret_corr``    median correlation of abnormal log volume with |r|
``overnight_share``    median of var(log open/prev close) / var(r)
``range_to_vol``       median of mean(log high/low) / std(r)
=====================  =====================================================================
"""

from __future__ import annotations

import numpy as np

from gymkit.data.panel import Panel

#: Names of the statistics :func:`stylized_facts` returns, in table order.
FACT_NAMES: tuple[str, ...] = (
    "vol_median",
    "vol_p90_p10",
    "kurtosis",
    "acf_abs_1",
    "acf_abs_5",
    "acf_abs_20",
    "corr_calm",
    "corr_stress",
    "market_mode",
    "logvol_acf1",
    "vol_absret_corr",
    "overnight_share",
    "range_to_vol",
)

_ABNORMAL_WINDOW = 21


def _col_corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-column Pearson correlation of two (T, N) arrays (rows with NaN in either dropped)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x = np.where(ok, x, 0.0)
    y = np.where(ok, y, 0.0)
    n = ok.sum(axis=0)
    mx, my = x.sum(axis=0) / n, y.sum(axis=0) / n
    dx, dy = np.where(ok, x - mx, 0.0), np.where(ok, y - my, 0.0)
    return (dx * dy).sum(axis=0) / np.sqrt((dx * dx).sum(axis=0) * (dy * dy).sum(axis=0))


def _acf(x: np.ndarray, lag: int) -> np.ndarray:
    """Per-column autocorrelation of (T, N) ``x`` at ``lag``."""
    return _col_corr(x[lag:], x[:-lag])


def _mean_offdiag_corr(r: np.ndarray) -> float:
    """Mean off-diagonal entry of the correlation matrix of the rows of ``r`` (T, N)."""
    c = np.corrcoef(r, rowvar=False)
    n = c.shape[0]
    return float((c.sum() - np.trace(c)) / (n * (n - 1)))


def _abnormal_log_volume(volume: np.ndarray) -> np.ndarray:
    """log volume minus its mean over the previous ``_ABNORMAL_WINDOW`` sessions (NaN at start)."""
    lv = np.log(volume)
    cs = np.cumsum(np.vstack([np.zeros((1, lv.shape[1])), lv]), axis=0)
    w = _ABNORMAL_WINDOW
    out = np.full_like(lv, np.nan)
    out[w:] = lv[w:] - (cs[w:-1] - cs[:-w - 1]) / w
    return out


def _month_stress_masks(dates: np.ndarray, market: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean day masks (calm, stressed) from monthly std of the market return."""
    months = dates.astype("datetime64[M]")
    uniq, idx = np.unique(months, return_inverse=True)
    cnt = np.bincount(idx, minlength=uniq.size).astype(float)
    s1 = np.bincount(idx, weights=market, minlength=uniq.size)
    s2 = np.bincount(idx, weights=market * market, minlength=uniq.size)
    mvol = np.sqrt(np.maximum(s2 / cnt - (s1 / cnt) ** 2, 0.0))
    full = cnt >= 10  # partial months at the edges do not define a regime
    calm_m = full & (mvol < np.median(mvol[full]))
    stress_m = full & (mvol >= np.quantile(mvol[full], 0.9))
    return calm_m[idx], stress_m[idx]


def stylized_facts(panel: Panel) -> dict[str, float]:
    """Return the stylised facts of ``panel`` (see module doc), keyed by :data:`FACT_NAMES`.

    Needs complete OHLCV (no NaN) on at least ~300 sessions; raises ``ValueError``
    naming the field otherwise.
    """
    for name in ("open", "high", "low", "close", "volume"):
        arr = panel.field(name)
        if not np.isfinite(arr).all():
            raise ValueError(f"stylized_facts needs a complete panel: field {name!r} has NaN")
    if panel.T < 300:
        raise ValueError(f"stylized_facts needs at least 300 sessions, got {panel.T}")
    o, h, lo, c, v = (panel.field(n) for n in ("open", "high", "low", "close", "volume"))
    r = np.diff(np.log(c), axis=0)
    on = np.log(o[1:] / c[:-1])
    rng = np.log(h[1:] / lo[1:])
    sd = r.std(axis=0, ddof=1)
    z = (r - r.mean(axis=0)) / sd
    kurt = (z**4).mean(axis=0) - 3.0
    a = np.abs(r)
    market = r.mean(axis=1)
    calm, stress = _month_stress_masks(panel.dates[1:], market)
    ab = _abnormal_log_volume(v)[1:]
    p10, p90 = np.percentile(sd, [10, 90])
    eig = np.linalg.eigvalsh(np.corrcoef(r, rowvar=False))
    out = {
        "vol_median": float(np.median(sd)),
        "vol_p90_p10": float(p90 / p10),
        "kurtosis": float(np.median(kurt)),
        "acf_abs_1": float(np.mean(_acf(a, 1))),
        "acf_abs_5": float(np.mean(_acf(a, 5))),
        "acf_abs_20": float(np.mean(_acf(a, 20))),
        "corr_calm": _mean_offdiag_corr(r[calm]),
        "corr_stress": _mean_offdiag_corr(r[stress]),
        "market_mode": float(eig[-1] / eig.sum()),
        "logvol_acf1": float(np.median(_acf(ab[_ABNORMAL_WINDOW:], 1))),
        "vol_absret_corr": float(np.median(_col_corr(ab, a))),
        "overnight_share": float(np.median(on.var(axis=0, ddof=1) / r.var(axis=0, ddof=1))),
        "range_to_vol": float(np.median(rng.mean(axis=0) / sd)),
    }
    return {k: out[k] for k in FACT_NAMES}


#: The real panel's facts (``real_panel()``, 46 large caps, 2012-06-01 .. 2021-04-21),
#: frozen so the calibration check also runs in a fresh clone without ../shared.
REAL_FACTS: dict[str, float] = {
    "vol_median": 0.01723,
    "vol_p90_p10": 1.8708,
    "kurtosis": 11.8386,
    "acf_abs_1": 0.2769,
    "acf_abs_5": 0.2209,
    "acf_abs_20": 0.1242,
    "corr_calm": 0.1892,
    "corr_stress": 0.6351,
    "market_mode": 0.4340,
    "logvol_acf1": 0.4967,
    "vol_absret_corr": 0.4254,
    "overnight_share": 0.4049,
    "range_to_vol": 1.1002,
}

#: Window of the synthetic market compared with the real panel (the real file's span).
CALIBRATION_WINDOW: tuple[str, str] = ("2012-06-29", "2021-04-21")

#: Allowed deviation of a synthetic fact from the real one: ("rel", f) means
#: |syn / real - 1| <= f; ("abs", d) means |syn - real| <= d; ("ratio", k) means
#: real / k <= syn <= real * k (kurtosis: a tail statistic with a wide sampling spread).
CALIBRATION_BANDS: dict[str, tuple[str, float]] = {
    "vol_median": ("rel", 0.20),
    "vol_p90_p10": ("rel", 0.20),
    "kurtosis": ("ratio", 2.0),
    "acf_abs_1": ("abs", 0.08),
    "acf_abs_5": ("abs", 0.08),
    "acf_abs_20": ("abs", 0.06),
    "corr_calm": ("abs", 0.05),
    "corr_stress": ("abs", 0.08),
    "market_mode": ("abs", 0.06),
    "logvol_acf1": ("abs", 0.10),
    "vol_absret_corr": ("abs", 0.08),
    "overnight_share": ("abs", 0.08),
    "range_to_vol": ("rel", 0.15),
}


def within_band(name: str, synthetic: float, real: float) -> bool:
    """True when ``synthetic`` lies in the :data:`CALIBRATION_BANDS` band around ``real``."""
    kind, width = CALIBRATION_BANDS[name]
    if kind == "rel":
        return abs(synthetic / real - 1.0) <= width
    if kind == "abs":
        return abs(synthetic - real) <= width
    return real / width <= synthetic <= real * width


def band_text(name: str) -> str:
    """Human-readable band of fact ``name`` (for the README table)."""
    kind, width = CALIBRATION_BANDS[name]
    return {"rel": f"±{width:.0%}", "abs": f"±{width:g}", "ratio": f"×/÷ {width:g}"}[kind]
