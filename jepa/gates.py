"""Quality gates of the JEPA and its stress worlds (DESIGN §7).  Thresholds are fixed here, once.

=====================  =====================================================================
gate                   passes when
=====================  =====================================================================
no collapse            every latent dimension's std over windows × stocks ≥ 0.1, and the
                       effective rank (Σλ)²/Σλ² of the latent covariance ≥ 4 (of D = 32)
predictor              late-train validation loss ≤ 0.95 × the persistence loss
unshifted decode       each :data:`DECODE_BANDS` fact of the α = 0 world lies in its band
                       around the train panel's figure
shift (per world)      the world's own statistic rises strictly with α over −2 … +2, and each
                       other statistic moves (α = +2 vs −2) by ≤ 0.5 × the own move, all in
                       units of the statistic's train-window spread
regime shift (per      every statistic of the regime's signature (:data:`~.shifts.REGIMES`)
regime world)          moves strictly monotonically with α the declared way, each by at least
                       0.5 × the largest of those moves (no bystander in a declared regime),
                       and any statistic outside the signature by ≤ 0.5 × the smallest
ranking (per world)    AUC (fragile drop > robust drop) with 95% bootstrap lower bound > 0.5
                       over ≥ 100 formulas per class, and the static books' mean drop ≥ 2 ×
                       the robust formulas' mean drop
=====================  =====================================================================

A world failing its shift or ranking gate is dropped from R3 (the manifest records why).

On a market with missing cells the thresholds are the same; the figures are taken on what is
observed: the collapse figures over the present (tile, stock) latents, the unshifted-decode
facts over the stocks with a complete bar on every train session (a world has no bar exactly
where the train panel has none, so both panels give the same stock set), the shift statistics
over the stocks observed on every day of a tile.
"""

from __future__ import annotations

import numpy as np

from gymkit.data.panel import Panel
from gymkit.data.stylized import _acf, stylized_facts

__all__ = [
    "AUC_LOWER_FLOOR",
    "DECODE_BANDS",
    "EFFECTIVE_RANK_FLOOR",
    "LATENT_STD_FLOOR",
    "MIN_PER_CLASS",
    "PREDICTION_MARGIN",
    "SELECTIVITY_MAX",
    "STATIC_TO_ROBUST_MIN",
    "collapse_figures",
    "complete_columns",
    "decode_facts",
    "decode_gate",
    "regime_gate",
    "shift_gate",
    "world_shift_gate",
]

LATENT_STD_FLOOR = 0.1
EFFECTIVE_RANK_FLOOR = 4.0
PREDICTION_MARGIN = 0.95
SELECTIVITY_MAX = 0.5
AUC_LOWER_FLOOR = 0.5
MIN_PER_CLASS = 100
STATIC_TO_ROBUST_MIN = 2.0

#: Facts of the unshifted decode and their bands around the train panel's figure:
#: ("rel", f): |decoded / base − 1| ≤ f; ("abs", d): |decoded − base| ≤ d; ("ratio", k):
#: base / k ≤ decoded ≤ base · k.
DECODE_BANDS: dict[str, tuple[str, float]] = {
    "vol_median": ("rel", 0.15),
    "kurtosis": ("ratio", 2.0),
    "acf_abs_1": ("abs", 0.08),
    "acf_abs_5": ("abs", 0.08),
    "acf_abs_20": ("abs", 0.08),
    "acf_r_1": ("abs", 0.03),
    "corr_mean": ("abs", 0.05),
    "corr_spread": ("rel", 0.25),
    "vol_absret_corr": ("abs", 0.10),
    "overnight_share": ("abs", 0.08),
    "range_to_vol": ("rel", 0.15),
}


def collapse_figures(latents: np.ndarray, present: np.ndarray | None = None) -> dict[str, float]:
    """Min per-dimension std over windows × stocks and the effective rank of (K, N, D) latents
    (over the present (window, stock) rows when ``present`` (K, N) is given)."""
    flat = latents.reshape(-1, latents.shape[-1]) if present is None else latents[present]
    lam = np.clip(np.linalg.eigvalsh(np.cov(flat, rowvar=False)), 0.0, None)
    return {"min_dim_std": float(flat.std(axis=0).min()),
            "effective_rank": float(lam.sum() ** 2 / (lam**2).sum())}


def complete_columns(panel: Panel) -> Panel:
    """``panel`` itself when complete, else the panel of its stocks with a complete positive
    bar on every session (``ValueError`` when fewer than 6 have one)."""
    ok = np.ones((panel.T, panel.N), dtype=bool)
    for name in ("open", "high", "low", "close", "volume"):
        a = panel.field(name)
        with np.errstate(invalid="ignore"):
            ok &= np.isfinite(a) & (a > 0)
    if ok.all():
        return panel
    sel = np.flatnonzero(ok.all(axis=0))
    if sel.size < 6:
        raise ValueError(f"the decode gate needs 6 stocks with a complete train history, got {sel.size}")
    return Panel(panel.dates, [panel.tickers[j] for j in sel],
                 *(panel.field(n)[:, sel] for n in ("open", "high", "low", "close", "volume")))


def decode_facts(panel: Panel) -> dict[str, float]:
    """The :data:`DECODE_BANDS` facts of a panel (stylised facts + r autocorrelation, mean and
    spread (std) of the pairwise correlations of daily log returns), over its stocks with a
    complete history (:func:`complete_columns`)."""
    panel = complete_columns(panel)
    f = stylized_facts(panel)
    r = np.diff(np.log(panel.close), axis=0)
    c = np.corrcoef(r, rowvar=False)
    off = c[~np.eye(c.shape[0], dtype=bool)]
    extra = {"acf_r_1": float(np.mean(_acf(r, 1))), "corr_mean": float(off.mean()),
             "corr_spread": float(off.std())}
    allf = {**f, **extra}
    return {k: allf[k] for k in DECODE_BANDS}


def _in_band(name: str, got: float, base: float) -> bool:
    kind, width = DECODE_BANDS[name]
    if kind == "rel":
        return abs(got / base - 1.0) <= width
    if kind == "abs":
        return abs(got - base) <= width
    return base / width <= got <= base * width


def decode_gate(decoded: Panel, base: Panel) -> dict[str, dict[str, float | bool]]:
    """Per fact: decoded value, base value, and whether it is in band."""
    d, b = decode_facts(decoded), decode_facts(base)
    return {k: {"decoded": d[k], "base": b[k], "ok": _in_band(k, d[k], b[k])} for k in DECODE_BANDS}


def shift_gate(response: dict[str, list[float]], own: str) -> dict[str, object]:
    """Monotonicity and selectivity of one channel's response.

    ``response``: statistic name → its world mean at α = −2, −1, 0, 1, 2, in train-spread units.
    """
    o = np.asarray(response[own])
    own_move = float(o[-1] - o[0])
    monotone = bool(np.all(np.diff(o) > 0))
    sel = {k: float(abs(v[-1] - v[0]) / abs(own_move)) if own_move else float("inf")
           for k, v in response.items() if k != own}
    return {"own_move": own_move, "monotone": monotone, "selectivity": sel,
            "ok": monotone and own_move > 0 and max(sel.values()) <= SELECTIVITY_MAX}


def regime_gate(response: dict[str, list[float]], signature: dict[str, int]) -> dict[str, object]:
    """Monotonicity and balance of a regime channel's response (module doc's table).

    ``response`` as for :func:`shift_gate`; ``signature``: statistic → +1 (rises) / −1 (falls).
    ``moves``: each statistic's signed move (α = +2 minus −2) times its declared sign."""
    moves = {k: float(sign * (response[k][-1] - response[k][0])) for k, sign in signature.items()}
    monotone = {k: bool(np.all(sign * np.diff(np.asarray(response[k])) > 0))
                for k, sign in signature.items()}
    top, low = max(moves.values()), min(moves.values())
    balance = float(low / top) if top > 0 else 0.0
    outside = {k: float(abs(v[-1] - v[0]) / low) if low > 0 else float("inf")
               for k, v in response.items() if k not in signature}
    return {"signature": dict(signature), "moves": moves, "monotone": monotone,
            "balance": balance, "outside": outside,
            "ok": all(monotone.values()) and low > 0 and balance >= SELECTIVITY_MAX
            and all(x <= SELECTIVITY_MAX for x in outside.values())}


def world_shift_gate(response: dict[str, list[float]], channel: str) -> dict[str, object]:
    """The shift gate of a world on ``channel``: :func:`regime_gate` for a regime channel,
    :func:`shift_gate` for a single statistic."""
    from .shifts import REGIMES

    if channel in REGIMES:
        return regime_gate(response, REGIMES[channel])
    return shift_gate(response, channel)
