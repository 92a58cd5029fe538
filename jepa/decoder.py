"""Decoder: frozen JEPA latents → distribution parameters → complete OHLCV panels.

Phase 2 of training, on the frozen target encoder.  A small MLP
(:class:`gymkit.jepa.model.ParamDecoder`, torch) maps a
stock's latent and the window's mean latent to the stock's window parameters (drift μ, market
beta β, idiosyncratic log vol, the window's log market vol, the volume level;
:data:`gymkit.jepa.features.PARAM_NAMES`), fitted by MSE on standardised targets.

Panels are then drawn, not regressed (this module, numpy only: :func:`synthesize`): a seeded block
bootstrap (63-day blocks, whole days — every stock together, so sector co-movement survives)
picks train days whose standardised shocks (:func:`gymkit.jepa.features.window_residuals`)
drive the decoded parameters::

    r      = μ + β·σ_m·u_m + σ·u                     (fat tails, clustering: from the shocks)
    open   = prev close · exp(on·s),  s = √(β²σ_m² + σ²)   (overnight gap in total-vol units)
    high   = max(open, close)·exp(up·s),  low = min(open, close)·exp(−down·s)   (up, down ≥ 0)
    volume = exp(volume level + abnormal log volume of the source day)        (> 0)

so low ≤ open, close ≤ high and volume > 0 hold by construction (and after rounding to whole
cents and shares, see :func:`to_market_arrays`).

A market with missing cells (:mod:`.features`): the pool's shocks of a day a stock was not
observed are that stock's own shocks of its observed days, taken in order (so a 63-day block
keeps the stock's volatility clustering), and so are the shocks of a flat tile (a stock whose
returns in it are all 0: σ = 0, its shocks 0 / 0; any panel); a tile where a stock is not present takes the
stock's mean parameters over its present tiles (or, for a stock present in none, the tile's
mean over the present stocks); a world is synthesised for the whole universe and then gets the
train panel's own missingness back: every session cell without a complete bar in the train
panel has no bar in the world (stored as 0 cents, read back as NaN by
:func:`gymkit.jepa.worlds.world_panel`), and a stock's price path starts from its own first
observed bar, so listing dates, universes and the gates' statistics stay comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gymkit.data.default import MarketArrays
from gymkit.data.panel import Panel

from .features import (
    FeatureScales,
    MarketArraysF,
    moving_days,
    observed_days,
    window_params,
    window_present,
    window_residuals,
)

__all__ = ["BLOCK_DAYS", "ResidualPool", "WorldParams", "params_to_world", "synthesize",
           "tile_params", "tile_starts", "to_market_arrays"]

#: Block length of the bootstrap (a quarter: keeps GARCH clustering and the 5- and 20-day
#: structure honest formulas trade on, while reshuffling the long path).
BLOCK_DAYS = 63


def tile_starts(n_days: int, window: int) -> np.ndarray:
    """Starts of windows tiling return days 0 … n_days − 1; the last one ends at the last day."""
    starts = list(range(0, n_days - window + 1, window))
    if starts[-1] + window < n_days:
        starts.append(n_days - window)
    return np.array(starts, dtype=np.int64)


def day_tile(n_days: int, starts: np.ndarray, window: int) -> np.ndarray:
    """(n_days,) index of the tile each return day belongs to (later tiles win on overlap)."""
    out = np.empty(n_days, dtype=np.int64)
    for k, s in enumerate(starts):
        out[s : s + window] = k
    return out


@dataclass(frozen=True)
class ResidualPool:
    """Day-indexed standardised shocks of the train panel (each (D, N), ``u_m`` (D,))."""

    u_m: np.ndarray
    u: np.ndarray
    on: np.ndarray
    up: np.ndarray
    down: np.ndarray
    ab_vol: np.ndarray

    @classmethod
    def build(cls, m: MarketArraysF, window: int) -> ResidualPool:
        """Shocks of every return day, standardised within its tile (:func:`tile_starts`)."""
        d = m.log_close.shape[0] - 1
        starts = tile_starts(d, window)
        res = window_residuals(m, starts, window)
        tile = day_tile(d, starts, window)
        pos = np.arange(d) - starts[tile]
        out = {k: v[tile, pos] for k, v in res.items()}
        if m.observed is not None or not np.isfinite(out["u"]).all():  # missing cells or a flat tile
            _fill_missing_shocks(out)
        return cls(**out)

    @property
    def n_days(self) -> int:
        """Number of return days in the pool."""
        return int(self.u_m.shape[0])


@dataclass(frozen=True)
class WorldParams:
    """Natural-unit parameters per tile (K, N): mu, beta, sigma, sigma_m (K,), log volume level."""

    mu: np.ndarray
    beta: np.ndarray
    sigma: np.ndarray
    sigma_m: np.ndarray
    log_volume: np.ndarray


def _fill_missing_shocks(pool: dict[str, np.ndarray]) -> None:
    """In place: each stock's days without shocks take its own observed days' shocks, in order
    and cycling (a stock never observed keeps NaN); the market shock of a day without any
    observed stock is 0."""
    keys = ("u", "on", "up", "down", "ab_vol")
    valid = np.logical_and.reduce([np.isfinite(pool[k]) for k in keys])
    for j in np.flatnonzero(~valid.all(axis=0)):
        have = np.flatnonzero(valid[:, j])
        if have.size == 0:
            continue
        miss = np.flatnonzero(~valid[:, j])
        take = have[np.arange(miss.size) % have.size]
        for k in keys:
            pool[k][miss, j] = pool[k][take, j]
    pool["u_m"] = np.where(np.isfinite(pool["u_m"]), pool["u_m"], 0.0)


def params_to_world(p: np.ndarray, s: FeatureScales) -> WorldParams:
    """Convert (K, N, 5) model-unit parameters to :class:`WorldParams` (σ_m: mean over stocks)."""
    return WorldParams(
        mu=p[..., 0] * s.ret, beta=p[..., 1], sigma=np.exp(p[..., 2]),
        sigma_m=np.exp(p[..., 3].mean(axis=1)),
        log_volume=p[..., 4] * s.volume_scale + np.asarray(s.volume_mean))


def true_params(m: MarketArraysF, window: int, s: FeatureScales) -> np.ndarray:
    """(K, N, 5) parameters of the train tiles themselves (the decoder's ideal output; with
    missing cells, a stock's tiles where it is not present are filled: module doc)."""
    return tile_params(m, window, s)[0]


def tile_params(m: MarketArraysF, window: int, s: FeatureScales) -> tuple[np.ndarray, np.ndarray | None]:
    """(:func:`true_params`, (K, N) presence of each stock in each tile or ``None`` when complete)."""
    d = m.log_close.shape[0] - 1
    starts = tile_starts(d, window)
    p = window_params(m, starts, window, s)
    present = window_present(observed_days(m), starts, window, moving_days(m, window))
    if present is None:
        return p, None
    present = present & np.isfinite(p).all(axis=-1)
    w = present[..., None]
    cnt = present.sum(axis=0)[:, None]
    stock_mean = np.where(w, p, 0.0).sum(axis=0) / np.maximum(cnt, 1)  # (N, 5)
    tcnt = present.sum(axis=1)[:, None]
    tile_mean = np.where(w, p, 0.0).sum(axis=1) / np.maximum(tcnt, 1)  # (K, 5)
    fill = np.where((cnt > 0)[None], stock_mean[None], tile_mean[:, None, :])
    return np.where(w, p, fill), present


def bootstrap_days(n_days: int, rng: np.random.Generator, block: int = BLOCK_DAYS) -> np.ndarray:
    """(n_days,) source day of each output day: blocks of ``block`` days from random starts."""
    n_blocks = -(-n_days // block)
    starts = rng.integers(0, n_days - block + 1, size=n_blocks)
    src = (starts[:, None] + np.arange(block)[None, :]).reshape(-1)
    return src[:n_days]


def synthesize(base: MarketArraysF, pool: ResidualPool, wp: WorldParams, window: int,
               src: np.ndarray) -> MarketArraysF:
    """Log OHLCV of a world (module doc): row 0 copies ``base``; return day d uses tile params
    of its tile and the shocks of source day ``src[d]``.  With missing cells in ``base``: each
    stock's first observed session copies ``base`` and its path starts there; cells ``base``
    does not observe are NaN."""
    if base.observed is not None:
        return _synthesize_observed(base, pool, wp, window, src)
    d = pool.n_days
    starts = tile_starts(d, window)
    tile = day_tile(d, starts, window)
    mu, beta, sig = wp.mu[tile], wp.beta[tile], wp.sigma[tile]
    sig_m = wp.sigma_m[tile][:, None]
    tot = np.sqrt((beta * sig_m) ** 2 + sig**2)
    r = mu + beta * sig_m * pool.u_m[src][:, None] + sig * pool.u[src]
    on = pool.on[src] * tot
    lc = base.log_close[0] + np.vstack([np.zeros((1, r.shape[1])), np.cumsum(r, axis=0)])
    lo = np.vstack([base.log_open[:1], lc[:-1] + on])
    hi_body = np.maximum(lo, lc)
    lo_body = np.minimum(lo, lc)
    lh = np.vstack([base.log_high[:1], hi_body[1:] + pool.up[src] * tot])
    ll = np.vstack([base.log_low[:1], lo_body[1:] - pool.down[src] * tot])
    lv = np.vstack([base.log_volume[:1], wp.log_volume[tile] + pool.ab_vol[src]])
    return MarketArraysF(lo, lh, ll, lc, lv)


def _synthesize_observed(base: MarketArraysF, pool: ResidualPool, wp: WorldParams, window: int,
                         src: np.ndarray) -> MarketArraysF:
    obs = base.observed
    n = obs.shape[1]
    seen = obs.any(axis=0)
    first = np.where(seen, obs.argmax(axis=0), 0)  # (N,) first observed session
    cols = np.arange(n)
    d = pool.n_days
    starts = tile_starts(d, window)
    tile = day_tile(d, starts, window)
    mu, beta, sig = wp.mu[tile], wp.beta[tile], wp.sigma[tile]
    sig_m = wp.sigma_m[tile][:, None]
    with np.errstate(invalid="ignore"):
        tot = np.sqrt((beta * sig_m) ** 2 + sig**2)
        r = mu + beta * sig_m * pool.u_m[src][:, None] + sig * pool.u[src]
        on = pool.on[src] * tot
    after = np.arange(1, d + 1)[:, None] > first[None, :]  # return day d ends at session d + 1
    r = np.where(after & seen, r, 0.0)
    start = np.where(seen, base.log_close[first, cols], 0.0)
    lc = start + np.vstack([np.zeros((1, n)), np.cumsum(r, axis=0)])
    lo = np.vstack([np.zeros((1, n)), lc[:-1] + on])
    hi_body = np.maximum(lo, lc)
    lo_body = np.minimum(lo, lc)
    lh = np.vstack([np.zeros((1, n)), hi_body[1:] + pool.up[src] * tot])
    ll = np.vstack([np.zeros((1, n)), lo_body[1:] - pool.down[src] * tot])
    lv = np.vstack([np.zeros((1, n)), wp.log_volume[tile] + pool.ab_vol[src]])
    out = []
    for arr, ref in ((lo, base.log_open), (lh, base.log_high), (ll, base.log_low), (lc, base.log_close),
                     (lv, base.log_volume)):
        arr = arr.copy()
        arr[first[seen], cols[seen]] = ref[first[seen], cols[seen]]  # the first bar is the real one
        out.append(np.where(obs, arr, np.nan))
    return MarketArraysF(*out, observed=obs)


def to_market_arrays(world: MarketArraysF, like: Panel) -> MarketArrays:
    """Round a world to exact cents and whole shares on ``like``'s dates, tickers and groups.

    Rounding keeps the OHLC order (high = max of the rounded open/close/high, low = min, and
    every price ≥ 1 cent) and volume ≥ 1 share.  Shares outstanding are ``like``'s
    (cap / close, rounded; 1 where ``like`` has no cap).  A world with missing cells
    (``world.observed``) stores 0 in every field of a cell without a bar.
    """
    if world.observed is not None:
        return _to_market_arrays_observed(world, like)

    def cents(x: np.ndarray) -> np.ndarray:
        return np.maximum(np.rint(np.exp(x) * 100.0), 1).astype(np.int64)

    o, c = cents(world.log_open), cents(world.log_close)
    h = np.maximum(np.maximum(o, c), cents(world.log_high))
    lo = np.minimum(np.minimum(o, c), cents(world.log_low))
    v = np.maximum(np.rint(np.exp(world.log_volume)), 1).astype(np.int64)
    if like.cap is not None:
        shares = np.rint(like.cap / like.close).astype(np.int64)
    else:
        shares = np.ones_like(v)
    return MarketArrays(
        dates=like.dates, tickers=like.tickers, sector=like.sector or ("",) * like.N,
        industry=like.industry or ("",) * like.N, open_c=o, high_c=h, low_c=lo, close_c=c,
        volume=v, shares=shares)


def _to_market_arrays_observed(world: MarketArraysF, like: Panel) -> MarketArrays:
    obs = world.observed

    def cents(x: np.ndarray) -> np.ndarray:
        return np.where(obs, np.maximum(np.rint(np.exp(np.where(obs, x, 0.0)) * 100.0), 1), 0
                        ).astype(np.int64)

    o, c = cents(world.log_open), cents(world.log_close)
    h = np.where(obs, np.maximum(np.maximum(o, c), cents(world.log_high)), 0)
    lo = np.where(obs, np.minimum(np.minimum(o, c), cents(world.log_low)), 0)
    v = np.where(obs, np.maximum(np.rint(np.exp(np.where(obs, world.log_volume, 0.0))), 1), 0
                 ).astype(np.int64)
    if like.cap is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            sh = like.cap / like.close
        shares = np.where(obs & np.isfinite(sh), np.rint(np.where(np.isfinite(sh), sh, 0.0)), 0
                          ).astype(np.int64)
    else:
        shares = np.where(obs, 1, 0).astype(np.int64)
    return MarketArrays(
        dates=like.dates, tickers=like.tickers, sector=like.sector or ("",) * like.N,
        industry=like.industry or ("",) * like.N, open_c=o, high_c=h, low_c=lo, close_c=c,
        volume=v, shares=shares)
