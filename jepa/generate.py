"""Generation of stress worlds from a trained JEPA (torch for encoding and decoding only).

Steps: encode the train tiles (windows of W days covering the train panel) with the frozen
target encoder; move every tile's latents along a shift channel; decode the parameters; draw
the panel with the seeded block bootstrap (:mod:`.decoder`).  Counterfactual decoding
(abduction, action, prediction): a world's tile parameters are the tile's *own* parameters
plus the decoder's change, decoder(shifted latents) − decoder(latents), with each stock's
constant drift change made transient (:func:`transient_drift`), clipped to each stock's
train range — so the decoder's regression error (it shrinks betas and vols toward their means) does not flatten
the world, no stock gets a fixed drift for the whole world, and the unshifted decode is the
tile's parameters with bootstrapped shocks.  World ``i`` of the table uses bootstrap seed
``seed + i``; the same seed, checkpoint and data give byte-identical files.

A market with missing cells: a stock's latent in a window where it is not present is replaced
by its mean latent over the windows where it is (so absent stocks add nothing to a shift
direction), the decoded change of an absent stock-tile is the tile's mean change over the
present stocks, parameters are clipped to the range of the stock's present tiles, and world
statistics use the stocks observed on every day of a tile (:func:`.shifts.window_statistics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gymkit.data.default import MarketArrays

from .decoder import (
    ResidualPool,
    bootstrap_days,
    params_to_world,
    synthesize,
    tile_params,
    tile_starts,
    to_market_arrays,
)
from .shifts import SHIFT_ORDER, ShiftDirections, shift, window_statistics, with_regimes
from .training import TrainingData, encode, present_of

__all__ = ["ALL_WORLDS", "ALPHAS", "DRIFT_SIGN_SEED", "MAX_DRAWS", "REGIME_TABLE", "WORLD_TABLE",
           "WorldSpec", "draw_seed", "drift_persistence", "fit_shifts", "impute_absent", "make_world", "regime_shifts",
           "response_matrix", "selective_shifts", "shift_response", "stat_spreads",
           "tile_latents", "transient_drift"]

#: Shift sizes of the shift gate, in units of the train-window spread.
ALPHAS: tuple[float, ...] = (-2.0, -1.0, 0.0, 1.0, 2.0)


@dataclass(frozen=True)
class WorldSpec:
    """A stress world: name, shift channel and signed size (train spreads)."""

    name: str
    channel: str
    alpha: float


#: The four stress worlds (DESIGN §7); the trend world shifts the market's trend down.
WORLD_TABLE: tuple[WorldSpec, ...] = (
    WorldSpec("dispersion", "dispersion", 2.0),
    WorldSpec("trend_flip", "trend", -2.0),
    WorldSpec("correlation", "correlation", 2.0),
    WorldSpec("volatility", "volatility", 2.0),
)
#: Regime worlds (:data:`.shifts.REGIMES`; the channel is added to the stored directions at
#: generation time by :func:`regime_shifts`).  Bootstrap seeds follow :data:`ALL_WORLDS`' order,
#: so the four worlds above keep theirs.
REGIME_TABLE: tuple[WorldSpec, ...] = (WorldSpec("crash", "crash", 2.0),)
#: Every candidate world, in manifest order.
ALL_WORLDS: tuple[WorldSpec, ...] = WORLD_TABLE + REGIME_TABLE
#: Most bootstrap draws a world may have (``gymkit jepa worlds --draws``): draw k of world i
#: uses seed + i + 10·k, which stays below the shift gate's draw (seed + 100) for k ≤ 9.
MAX_DRAWS = 10


def draw_seed(seed: int, world: int, k: int) -> int:
    """Bootstrap seed of draw ``k`` of world number ``world`` (:data:`ALL_WORLDS` order): draw 0
    is the world's one draw of a single-draw manifest."""
    if not 0 <= k < MAX_DRAWS:
        raise ValueError(f"draw {k} is out of range 0..{MAX_DRAWS - 1}")
    return seed + world + 10 * k

_SHIFT_STRIDE = 7
#: Seed of the per-(tile, stock) signs of :func:`transient_drift` (fixed: worlds are a function
#: of checkpoint, data and bootstrap seed only).
DRIFT_SIGN_SEED = 20261202


def _returns_windows(data: TrainingData, starts: np.ndarray, w: int) -> np.ndarray:
    r = np.diff(data.arrays.log_close, axis=0)
    return r[np.asarray(starts)[:, None] + np.arange(w)[None, :]]


def _fit_windows(model, data: TrainingData) -> tuple[np.ndarray, np.ndarray]:
    """(starts, latents) of the train windows every 7 days the directions are fitted on."""
    w = model.config.window
    starts = np.arange(0, data.n_days - w + 1, _SHIFT_STRIDE, dtype=np.int64)
    return starts, impute_absent(encode(model, data, starts), present_of(data, starts, w))


def fit_shifts(model, data: TrainingData) -> ShiftDirections:
    """Shift directions from latents of train windows every 7 days (:mod:`.shifts`)."""
    starts, z = _fit_windows(model, data)
    stats = window_statistics(_returns_windows(data, starts, model.config.window))
    return ShiftDirections.fit(z, stats, SHIFT_ORDER)


def regime_shifts(model, data: TrainingData, dirs: ShiftDirections) -> ShiftDirections:
    """``dirs`` plus the regime channels (:func:`.shifts.with_regimes`), fitted on the same
    train windows every 7 days as the stored directions (numpy after the encoding)."""
    starts, z = _fit_windows(model, data)
    return with_regimes(dirs, z, window_statistics(_returns_windows(data, starts, model.config.window)))


def response_matrix(model, decoder, dirs: ShiftDirections, data: TrainingData, pool: ResidualPool,
                    latents: np.ndarray, seed: int) -> np.ndarray:
    """(4, len(dirs.names)): each statistic's move (:data:`SHIFT_ORDER` rows, train-spread
    units) per unit α along each direction of ``dirs``, (α = +2 minus α = −2) / 4, the move the
    shift gate measures; one bootstrap draw (``seed``) for all."""
    w = model.config.window
    spreads = stat_spreads(data, w)
    src = bootstrap_days(pool.n_days, np.random.default_rng(seed))
    lo, hi = ALPHAS[0], ALPHAS[-1]
    out = np.empty((len(SHIFT_ORDER), len(dirs.names)))
    for c, name in enumerate(dirs.names):
        st = [world_statistics(make_world(model, decoder, dirs, data, pool, latents, name, a, src), w)
              for a in (lo, hi)]
        out[:, c] = [(st[1][k] - st[0][k]) / spreads[k] / (hi - lo) for k in SHIFT_ORDER]
    return out


def selective_shifts(model, decoder, stored: ShiftDirections, data: TrainingData,
                     pool: ResidualPool, latents: np.ndarray, seed: int,
                     ) -> tuple[ShiftDirections, dict]:
    """Selective directions (:func:`.shifts.selective_directions`) and how they were fitted.

    Basis: the :data:`~.shifts.SELECTIVE_BASIS` principal directions of the latents of train
    windows every 7 days; their :func:`response_matrix` on the calibration draw ``seed`` (a
    draw no gate uses); ``stored`` (the checkpoint's) is the fallback of a channel without a
    solution.  Returns the directions and a JSON-ready record for the manifest."""
    from .shifts import (
        SELECTIVE_BASIS,
        SELECTIVE_MARGIN,
        principal_directions,
        selective_directions,
    )

    z = _fit_windows(model, data)[1]
    basis = principal_directions(z, SELECTIVE_BASIS)
    resp = response_matrix(model, decoder, basis, data, pool, latents, seed)
    dirs, fit = selective_directions(basis, resp, z, stored, SHIFT_ORDER, SELECTIVE_MARGIN)
    record = {"method": "selective", "basis": len(basis.names), "margin": SELECTIVE_MARGIN,
              "calibration_seed": seed, "response_matrix": resp.tolist(), "channels": fit,
              "spreads": dirs.spreads.tolist(), "cosines": dirs.raw_cosines.tolist()}
    return dirs, record


def impute_absent(latents: np.ndarray, present: np.ndarray | None) -> np.ndarray:
    """(K, N, D) latents with each absent (window, stock) entry replaced by the stock's mean
    latent over its present windows (0 for a stock present in none); unchanged when complete."""
    if present is None:
        return latents
    w = present[..., None]
    cnt = present.sum(axis=0)[:, None]
    mean = np.where(w, latents, 0.0).sum(axis=0) / np.maximum(cnt, 1)
    return np.where(w, latents, mean[None])


def stat_spreads(data: TrainingData, w: int) -> dict[str, float]:
    """Std over train windows (every 7 days) of each channel statistic (the gate's units)."""
    starts = np.arange(0, data.n_days - w + 1, _SHIFT_STRIDE, dtype=np.int64)
    return {k: float(v.std()) for k, v in window_statistics(_returns_windows(data, starts, w)).items()}


def tile_latents(model, data: TrainingData) -> np.ndarray:
    """(K, N, D) latents of the tiles covering the train panel."""
    return encode(model, data, tile_starts(data.n_days, model.config.window))


def make_world(model, decoder, shifts: ShiftDirections, data: TrainingData, pool: ResidualPool,
               latents: np.ndarray, channel: str | None, alpha: float, src: np.ndarray,
               ) -> MarketArrays:
    """One world's exact-cent arrays (``channel=None``: the unshifted decode; module doc)."""
    w = model.config.window
    lo, hi = param_range(data, w)
    p, present = tile_params(data.arrays, w, data.scales)
    if channel is not None:  # abduction (the tile's own parameters) + action (the decoded change)
        change = decoder(shift(latents, shifts, channel, alpha), present) - decoder(latents, present)
        if present is not None:  # an absent stock-tile follows the tile's mean change
            pw = present[..., None]
            mean = np.where(pw, change, 0.0).sum(axis=1) / np.maximum(present.sum(axis=1), 1)[:, None]
            change = np.where(pw, change, mean[:, None, :])
        p = p + transient_drift(change, present)
    wp = params_to_world(np.clip(p, lo, hi), data.scales)
    world = synthesize(data.arrays, pool, wp, model.config.window, src)
    return to_market_arrays(world, data.panel)


def transient_drift(change: np.ndarray, present: np.ndarray | None = None,
                    seed: int = DRIFT_SIGN_SEED) -> np.ndarray:
    """``change`` (K, N, 5) with each stock's constant drift change made transient: in the drift
    (parameter 0) of every present stock-tile, the stock's constant part cᵢ (its mean drift
    change over its present tiles minus the mean over all present stock-tiles) is replaced by
    sₖᵢ·cᵢ, with signs sₖᵢ = ±1 drawn once per (tile, stock) from ``seed``.

    A shift moves every tile's latents by the same vector, so the decoder hands each stock a
    drift change that is nearly the same in every tile (79% of its variance on the shipped
    checkpoint's dispersion shift), a persistent cross-sectional drift the train market does
    not have (3.2%) and that slow trend books harvest.  Kept: the market-wide drift change
    (the trend channel), its tile-to-tile variation, the rest of each stock-tile's change, and
    how far each stock's drift moves in a tile (|cᵢ|); gone: which way it moves being the same
    in every tile.  The other parameters are unchanged; the same signs serve every α."""
    mu = change[..., 0]
    w = np.ones(mu.shape, dtype=bool) if present is None else present
    cnt = w.sum(axis=0)
    stock = np.where(w, mu, 0.0).sum(axis=0) / np.maximum(cnt, 1)
    grand = np.where(w, mu, 0.0).sum() / max(int(w.sum()), 1)
    c = (stock - grand)[None, :]
    sign = np.where(np.random.default_rng(seed).random(mu.shape) < 0.5, -1.0, 1.0)
    out = change.copy()
    out[..., 0] = np.where(w, mu - c + sign * c, mu)
    return out


def drift_persistence(mu: np.ndarray) -> dict[str, float]:
    """How much of a (K, N) tile-by-stock drift is a per-stock constant: ``constant_share`` =
    K·Σᵢ cᵢ² / Σ x² with x = mu − its grand mean and cᵢ stock i's mean of x over the tiles, and
    ``tile_corr`` = mean cross-sectional correlation of consecutive tiles' drifts (NaN-free
    input; a market with missing cells passes its complete stocks)."""
    x = np.asarray(mu, dtype=np.float64)
    x = x - x.mean()
    c = x.mean(axis=0)
    corr = [np.corrcoef(x[k], x[k + 1])[0, 1] for k in range(x.shape[0] - 1)]
    return {"constant_share": float(x.shape[0] * (c**2).sum() / (x**2).sum()),
            "tile_corr": float(np.mean(corr))}


def param_range(data: TrainingData, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Per stock and parameter, the min and max over the train tiles (N, 5) each: decoded
    parameters are clipped to them, so a shifted world never asks the bootstrap for a drift,
    beta or vol the stock never had in a train window (no extrapolation off the manifold)."""
    p, present = tile_params(data.arrays, w, data.scales)
    if present is None:
        return p.min(axis=0), p.max(axis=0)
    pw = present[..., None]
    lo = np.where(pw, p, np.inf).min(axis=0)
    hi = np.where(pw, p, -np.inf).max(axis=0)
    none = ~present.any(axis=0)
    lo[none], hi[none] = p[:, none].min(axis=0), p[:, none].max(axis=0)
    return lo, hi


def world_statistics(arrays: MarketArrays, w: int) -> dict[str, float]:
    """Mean over the tiles of each channel statistic of a world's daily log returns (a cell
    of 0 cents has no bar; tiles without statistics are left out of the mean)."""
    c = arrays.close_c.astype(np.float64)
    if (arrays.close_c > 0).all():
        r = np.diff(np.log(c), axis=0)
    else:
        r = np.diff(np.log(np.where(arrays.close_c > 0, c, np.nan)), axis=0)
    starts = tile_starts(r.shape[0], w)
    stats = window_statistics(r[starts[:, None] + np.arange(w)[None, :]])
    if np.isfinite(r).all():
        return {k: float(v.mean()) for k, v in stats.items()}
    return {k: float(np.nanmean(v)) for k, v in stats.items()}


def shift_response(model, decoder, shifts: ShiftDirections, data: TrainingData, pool: ResidualPool,
                   latents: np.ndarray, channel: str, seed: int) -> dict[str, list[float]]:
    """Each statistic's world mean at α ∈ :data:`ALPHAS` along ``channel``, in train-spread
    units (common bootstrap draw across α, so only the shift differs)."""
    w = model.config.window
    spreads = stat_spreads(data, w)
    src = bootstrap_days(pool.n_days, np.random.default_rng(seed))
    out: dict[str, list[float]] = {k: [] for k in spreads}
    for a in ALPHAS:
        st = world_statistics(make_world(model, decoder, shifts, data, pool, latents, channel, a, src), w)
        for k in out:
            out[k].append(st[k] / spreads[k])
    return out
