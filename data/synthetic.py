"""The seeded synthetic US large-cap market behind :func:`gymkit.data.default_market`.

:func:`generate_market` draws a 46-stock daily panel on the NYSE sessions
2012-06-29 .. 2026-08-21 from one ``numpy.random.Generator(PCG64(seed))``.  The model
(details and calibration in ``data/README.md``):

* log return of stock i = beta_i * market + b_i * sector(i) + style exposures * style
  factors + sigma_i * idiosyncratic + earnings jumps + planted drift;
* every factor and every idiosyncratic series is a GARCH(1,1) with unit-variance
  Student-t shocks; a deterministic crisis overlay (2015, 2018, 2020, 2022, 2025 …)
  scales market vol most, sector vol less and idiosyncratic vol least, so
  correlation rises in stress; crash episodes carry a drawdown and a partial rebound;
* each day splits into an overnight part (close(t-1) -> open(t)) and an intraday part
  (open(t) -> close(t)); quarterly earnings jumps land overnight;
* high/low are the extremes of a Brownian bridge between open and close with the
  stock's intraday vol; volume = trend x persistent AR states x vol state x |return|
  response x earnings spikes x noise whose scale follows a slow "attention" state;
* two weak planted effects (see :data:`PLANTED_EFFECTS`), both functions of data up
  to close(t) that move the open(t+1) -> open(t+2) return: reversal of the last 5 days
  of idiosyncratic returns and a volume-variability / price-volatility premium;
* the holdout year (from 2025-08-21) is its own regime: calmer, less correlated
  market with a strong up-drift, weaker reversal and stronger volume premium.

Prices are rounded to exact cents and volume to whole shares, so the shipped file
(:func:`gymkit.data.default.save_market`) is bit-identical everywhere.  Regenerate the shipped file with
``python -m gymkit.data.synthetic --out data/default_market.npz``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from gymkit.data.calendar import nyse_sessions
from gymkit.data.default import MarketArrays, save_market
from gymkit.data.panel import Panel

#: Seed of the shipped default market.
DEFAULT_SEED = 20120629
START, END = "2012-06-29", "2026-08-21"
#: First session of the holdout regime (DESIGN §2 default split).
HOLDOUT_START = "2025-08-21"

#: sector -> ((industry, number of stocks), ...); 9 sectors, 23 industries, 46 stocks.
UNIVERSE: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    ("Information Technology", (("Software", 3), ("Semiconductors", 3), ("Technology Hardware", 3))),
    ("Communication Services", (("Interactive Media", 3), ("Telecom Services", 2), ("Media & Entertainment", 2))),
    ("Financials", (("Banks", 4), ("Capital Markets", 2), ("Insurance", 1))),
    ("Energy", (("Oil & Gas", 3), ("Energy Equipment & Services", 2))),
    ("Health Care", (("Pharmaceuticals", 3), ("Biotechnology", 1), ("Health Care Equipment", 1))),
    ("Consumer Discretionary", (("Internet Retail", 2), ("Specialty Retail", 2), ("Restaurants", 1), ("Automobiles", 1))),
    ("Consumer Staples", (("Beverages", 2), ("Household Products", 1), ("Food Retail", 1))),
    ("Industrials", (("Machinery", 2),)),
    ("Materials", (("Metals & Mining", 1),)),
)  # fmt: skip

#: Per-sector (market beta centre, sector-factor daily vol, idiosyncratic vol multiplier).
SECTOR_RISK: dict[str, tuple[float, float, float]] = {
    "Information Technology": (1.15, 0.0060, 1.05),
    "Communication Services": (1.00, 0.0050, 1.05),
    "Financials": (1.20, 0.0075, 0.85),
    "Energy": (1.15, 0.0110, 1.05),
    "Health Care": (0.85, 0.0055, 1.00),
    "Consumer Discretionary": (1.05, 0.0050, 1.10),
    "Consumer Staples": (0.65, 0.0045, 0.75),
    "Industrials": (1.10, 0.0060, 0.95),
    "Materials": (1.35, 0.0090, 1.35),
}


@dataclass(frozen=True)
class Crisis:
    """A market stress episode: vol ramps to ``peak`` x over ``ramp`` sessions from ``start``,
    then decays with half-life ``half_life``; the market falls ``drawdown`` (log) over the
    ramp and wins back ``rebound`` (log) over the following ``2 * ramp`` sessions."""

    start: str
    peak: float
    ramp: int
    half_life: float
    drawdown: float
    rebound: float


#: Crisis overlay (dates echo real episodes; magnitudes calibrated, not copied).
CRISES: tuple[Crisis, ...] = (
    Crisis("2012-11-07", 1.5, 6, 10, 0.05, 0.04),
    Crisis("2013-06-19", 1.5, 3, 10, 0.04, 0.03),
    Crisis("2014-10-01", 1.8, 10, 10, 0.06, 0.06),
    Crisis("2015-08-19", 3.0, 5, 18, 0.11, 0.05),
    Crisis("2016-01-04", 2.0, 20, 15, 0.10, 0.08),
    Crisis("2016-06-24", 1.8, 2, 6, 0.04, 0.04),
    Crisis("2018-02-02", 3.0, 4, 12, 0.09, 0.04),
    Crisis("2018-10-04", 2.2, 50, 12, 0.17, 0.12),
    Crisis("2019-05-06", 1.6, 20, 8, 0.06, 0.05),
    Crisis("2020-02-21", 8.0, 17, 28, 0.38, 0.30),
    Crisis("2020-09-02", 1.8, 5, 15, 0.07, 0.05),
    Crisis("2022-01-03", 1.9, 110, 40, 0.22, 0.10),
    Crisis("2023-03-09", 1.8, 5, 10, 0.05, 0.05),
    Crisis("2024-08-01", 1.9, 3, 6, 0.06, 0.06),
    Crisis("2025-04-02", 3.5, 4, 12, 0.15, 0.14),
    Crisis("2026-03-05", 1.6, 8, 8, 0.06, 0.06),
)


@dataclass(frozen=True)
class Regime:
    """Regime-level parameters (train period vs holdout year)."""

    market_drift: float  # annual log drift of the market factor
    market_vol: float  # daily vol of the market factor in calm conditions
    sector_scale: float  # multiplier on sector-factor vols
    idio_scale: float  # multiplier on idiosyncratic vols
    style_premia: tuple[float, float]  # annual drift of (size, value) style factors
    ic_reversal: float  # target IC of the planted reversal effect
    ic_volume: float  # target IC of the planted volume-variability effect


TRAIN_REGIME = Regime(0.17, 0.0077, 1.0, 1.0, (-0.02, -0.015), 0.100, 0.040)
HOLDOUT_REGIME = Regime(0.24, 0.0064, 1.2, 1.05, (0.04, 0.03), 0.065, 0.055)

#: Planted effects: name -> (formula that should find it, mechanism).  Targets in the regimes.
PLANTED_EFFECTS: dict[str, tuple[str, str]] = {
    "reversal": (
        "rank(-ts_sum(returns, 5))",
        "drift over open(t+1)->open(t+2) = -IC * s_t * zscore_cs(sum of the last 5 "
        "idiosyncratic returns up to close t)",
    ),
    "volume_variability": (
        "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))",
        "drift over open(t+1)->open(t+2) = IC * s_t * unit-variance centred rank of "
        "CV of volume over 20 sessions x (std of returns over 250 / over 20 sessions), "
        "all up to close t (active from session 250)",
    ),
}

# GARCH(1,1) (alpha, beta) and Student-t degrees of freedom per component kind.
_GARCH = {"market": (0.10, 0.875), "sector": (0.07, 0.91), "style": (0.05, 0.93), "idio": (0.12, 0.865)}
_DOF = {"market": 5.0, "sector": 5.0, "style": 6.0, "idio": 4.5}
_OVERNIGHT_SHARE = 0.35  # share of diffusive variance that accrues overnight
_EARNINGS_JUMP = 6.0  # earnings jump scale, in units of the stock's idiosyncratic vol
_RANGE_SCALE = 1.05  # intraday-range scale on top of the Brownian-bridge extremes
_VV_WINDOW = 20
_MARKET_STRESS = 1.35  # market vol responds more to the crisis overlay than other parts
_SHOCK_CLIP = 7.0  # |shock| cap in sd units: no 50% days from a single t draw
_VV_LONG = 250
# slow log-vol state per component (vol regimes beyond GARCH memory): AR(1) in log vol
_SLOW_VOL_PHI = 0.996
_SLOW_VOL_SD = 0.35
_SLOW_VOL_INNOV = _SLOW_VOL_SD * float(np.sqrt(1.0 - _SLOW_VOL_PHI**2))
_REV_WINDOW = 5


def _universe() -> tuple[list[str], list[str], list[str]]:
    tickers, sectors, industries = [], [], []
    for sector, inds in UNIVERSE:
        for ind, k in inds:
            for _ in range(k):
                sectors.append(sector)
                industries.append(ind)
    tickers = [f"SYN{i + 1:02d}" for i in range(len(sectors))]
    return tickers, sectors, industries


def _crisis_paths(dates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (vol multiplier - 1, market log-drift per session) of the crisis overlay."""
    t = np.arange(dates.size, dtype=np.float64)
    excess = np.zeros(dates.size)
    drift = np.zeros(dates.size)
    for c in CRISES:
        i0 = int(np.searchsorted(dates, np.datetime64(c.start, "D")))
        if i0 >= dates.size:
            continue
        s = t - i0
        up = np.clip((s + 1) / c.ramp, 0.0, 1.0)
        down = np.where(s > c.ramp, 0.5 ** ((s - c.ramp) / c.half_life), 1.0)
        excess += np.where(s >= 0, (c.peak - 1.0) * np.sqrt(up) * down, 0.0)
        fall = (s >= 0) & (s < c.ramp)
        rise = (s >= c.ramp) & (s < 3 * c.ramp)
        drift += np.where(fall, -c.drawdown / c.ramp, 0.0) + np.where(rise, c.rebound / (2 * c.ramp), 0.0)
    return excess, drift


def _t_shocks(rng: np.random.Generator, dof: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Unit-variance Student-t draws with per-column degrees of freedom."""
    z = rng.standard_t(np.broadcast_to(dof, shape)) / np.sqrt(dof / (dof - 2.0))
    return np.clip(z, -_SHOCK_CLIP, _SHOCK_CLIP)


def _cs_rank_unit(x: np.ndarray) -> np.ndarray:
    """Cross-sectional ranks of a 1-D array mapped to a centred, unit-variance uniform."""
    n = x.size
    r = np.empty(n)
    r[np.argsort(x, kind="stable")] = np.arange(n, dtype=np.float64)
    return (r / (n - 1) - 0.5) * np.sqrt(12.0 * (n - 1) / (n + 1))


def _zscore(x: np.ndarray) -> np.ndarray:
    s = x.std()
    return (x - x.mean()) / s if s > 0 else np.zeros_like(x)


def simulate(seed: int = DEFAULT_SEED) -> MarketArrays:
    """Draw the synthetic market for ``seed`` and return it as exact integer arrays."""
    rng = np.random.Generator(np.random.PCG64(seed))
    dates = nyse_sessions(START, END)
    T = dates.size
    tickers, sectors, industries = _universe()
    N = len(tickers)
    sec_names = [s for s, _ in UNIVERSE]
    sec_idx = np.array([sec_names.index(s) for s in sectors])
    S = len(sec_names)
    holdout = dates >= np.datetime64(HOLDOUT_START, "D")
    years = np.arange(T) / 252.0

    # ---------------------------------------------------------------- stocks
    beta_c = np.array([SECTOR_RISK[s][0] for s in sectors])
    beta = np.clip(beta_c + 0.18 * rng.standard_normal(N), 0.45, 1.8)
    b_sec = np.clip(1.0 + 0.25 * rng.standard_normal(N), 0.4, 1.6)
    sig_sec = np.array([SECTOR_RISK[s][1] for s in sec_names])
    idio_mult = np.array([SECTOR_RISK[s][2] for s in sectors])
    sig_e = 0.0080 * idio_mult * np.exp(0.36 * rng.standard_normal(N))
    log_cap0 = np.log(2.0e11) + 0.8 * rng.standard_normal(N) - 2.0 * (sig_e - 0.012)
    size_expo = _zscore(log_cap0)
    value_expo = _zscore(rng.standard_normal(N))
    price0 = np.exp(np.log(60.0) + 0.7 * rng.standard_normal(N))
    mu_i = 0.03 * rng.standard_normal(N)  # annual stock-specific drift

    # ------------------------------------------------------ component shocks
    kinds = ["market"] + ["sector"] * S + ["style"] * 2 + ["idio"] * N
    K = len(kinds)
    ga = np.array([_GARCH[k][0] for k in kinds])
    gb = np.array([_GARCH[k][1] for k in kinds])
    dof = np.array([_DOF[k] for k in kinds])
    z_on = _t_shocks(rng, dof, (T, K))
    z_id = _t_shocks(rng, dof, (T, K))

    excess, crash_drift = _crisis_paths(dates)
    reg_mvol = np.where(holdout, HOLDOUT_REGIME.market_vol, TRAIN_REGIME.market_vol)
    reg_sec = np.where(holdout, HOLDOUT_REGIME.sector_scale, TRAIN_REGIME.sector_scale)
    reg_idio = np.where(holdout, HOLDOUT_REGIME.idio_scale, TRAIN_REGIME.idio_scale)
    base = np.empty((T, K))
    base[:, 0] = reg_mvol * (1.0 + _MARKET_STRESS * excess)
    base[:, 1 : S + 1] = (reg_sec * (1.0 + 0.45 * excess))[:, None] * sig_sec[None, :]
    base[:, S + 1 : S + 3] = (0.0028 * (1.0 + 0.3 * excess))[:, None]
    base[:, S + 3 :] = (reg_idio * (1.0 + 0.60 * excess))[:, None] * sig_e[None, :]
    mdrift = np.where(holdout, HOLDOUT_REGIME.market_drift, TRAIN_REGIME.market_drift) / 252.0
    mdrift = mdrift + crash_drift
    sp = np.where(holdout[:, None], HOLDOUT_REGIME.style_premia, TRAIN_REGIME.style_premia) / 252.0
    ic_rev = np.where(holdout, HOLDOUT_REGIME.ic_reversal, TRAIN_REGIME.ic_reversal)
    ic_vv = np.where(holdout, HOLDOUT_REGIME.ic_volume, TRAIN_REGIME.ic_volume)

    # earnings: quarterly, random phase per stock, overnight jump + volume spike
    phase = rng.integers(0, 63, N)
    earn = ((np.arange(T)[:, None] - phase[None, :]) % 63) == 0
    earn_after = np.vstack([np.zeros((1, N), dtype=bool), earn[:-1]])
    jump = _EARNINGS_JUMP * sig_e[None, :] * _t_shocks(rng, np.array(3.5), (T, N)) * earn

    # volume ingredients
    dollar0 = np.exp(np.log(1.2e9) + 0.75 * (log_cap0 - np.log(2.0e11)) + 0.35 * rng.standard_normal(N))
    logv0 = np.log(dollar0 / price0)
    vtrend = (-0.03 + 0.06 * rng.standard_normal(N))[None, :] * years[:, None]
    vtrend += 0.25 * np.sin(2 * np.pi * years[:, None] / rng.uniform(4.0, 9.0, N) + rng.uniform(0, 6.3, N))
    eps_slow = rng.standard_normal((T, N))
    eps_fast = rng.standard_normal((T, N))
    eps_noise = rng.standard_normal((T, N))
    eps_att = rng.standard_normal((T, N))
    u_mb = rng.uniform(size=(T, N))
    u_mb2 = rng.uniform(size=(T, N))

    # ------------------------------------------------------------ simulation
    h = np.ones(K)
    prev_eps = np.zeros(K)
    on = np.empty((T, N))
    intra = np.empty((T, N))
    sig_intra = np.empty((T, N))
    logvol = np.empty((T, N))
    idio_hist = np.zeros((_REV_WINDOW, N))
    lv_hist = np.zeros((_VV_WINDOW, N))
    r_hist = np.zeros((_VV_LONG, N))
    alpha_prev = np.zeros(N)  # planted drift computed at close t-1 (intraday half lands at t)
    alpha_prev2 = np.zeros(N)  # computed at close t-2 (overnight half lands at t)
    a_slow = np.zeros(N)
    a_fast = np.zeros(N)
    att = 0.35 * rng.standard_normal(N)
    w_on = np.sqrt(_OVERNIGHT_SHARE)
    w_id = np.sqrt(1.0 - _OVERNIGHT_SHARE)
    eps_lv = rng.standard_normal((T, K))
    slow_lv = np.zeros(K)
    for t in range(T):
        h = (1.0 - ga - gb) + ga * prev_eps**2 + gb * h
        slow_lv = _SLOW_VOL_PHI * slow_lv + _SLOW_VOL_INNOV * eps_lv[t]
        sd = np.sqrt(h) * base[t] * np.exp(slow_lv - 0.5 * _SLOW_VOL_SD**2)
        c_on = sd * w_on * z_on[t]
        c_id = sd * w_id * z_id[t]
        prev_eps = np.sqrt(h) * (w_on * z_on[t] + w_id * z_id[t])

        def load(c: np.ndarray) -> np.ndarray:
            return (
                beta * c[0]
                + b_sec * c[1 : S + 1][sec_idx]
                + size_expo * c[S + 1]
                + value_expo * c[S + 2]
                + c[S + 3 :]
            )

        drift = beta * mdrift[t] + mu_i / 252.0 + size_expo * sp[t, 0] + value_expo * sp[t, 1]
        on[t] = load(c_on) + jump[t] + 0.5 * drift + 0.5 * alpha_prev2
        intra[t] = load(c_id) + 0.5 * drift + 0.5 * alpha_prev
        sd_stock = np.sqrt(
            (beta * sd[0]) ** 2 + (b_sec * sd[1 : S + 1][sec_idx]) ** 2 + sd[S + 3 :] ** 2
        )
        sig_intra[t] = sd_stock * w_id
        r_t = on[t] + intra[t]

        # volume: persistent states, vol state, |return| response, earnings, attention noise
        a_slow = 0.985 * a_slow + 0.045 * eps_slow[t]
        a_fast = 0.85 * a_fast + 0.13 * eps_fast[t]
        att = 0.97 * att + 0.12 * eps_att[t]
        surprise = np.abs(r_t) / sd_stock
        logvol[t] = (
            logv0
            + vtrend[t]
            + a_slow
            + a_fast
            + 0.55 * np.log(sd_stock / (sig_e * 1.3))
            + 0.24 * np.minimum(surprise, 6.0)
            + 0.75 * earn[t]
            + 0.35 * earn_after[t]
            + 0.15 * np.exp(att) * eps_noise[t]
        )

        # planted effects, computed from data up to close t
        idio_r = c_on[S + 3 :] + c_id[S + 3 :]
        idio_hist[t % _REV_WINDOW] = idio_r
        lv_hist[t % _VV_WINDOW] = np.exp(logvol[t])
        r_hist[t % _VV_LONG] = r_t
        scale = np.median(sd[S + 3 :])
        alpha = -ic_rev[t] * scale * _zscore(idio_hist.sum(axis=0))
        if t >= _VV_LONG:
            cv = lv_hist.std(axis=0) / lv_hist.mean(axis=0)
            recent = np.array([r_hist[(t - j) % _VV_LONG] for j in range(_VV_WINDOW)])
            vv = cv * r_hist.std(axis=0) / recent.std(axis=0)
            alpha = alpha + ic_vv[t] * scale * _cs_rank_unit(vv)
        alpha_prev2, alpha_prev = alpha_prev, alpha

    # ------------------------------------------------------------- to prices
    close = np.exp(np.log(price0)[None, :] + np.cumsum(on + intra, axis=0))
    prev_close = np.vstack([price0[None, :], close[:-1]])
    open_ = prev_close * np.exp(on)
    x = intra
    s2 = (_RANGE_SCALE * sig_intra) ** 2
    up = 0.5 * (x + np.sqrt(x * x - 2.0 * s2 * np.log(u_mb)))
    dn = 0.5 * (x - np.sqrt(x * x - 2.0 * s2 * np.log(u_mb2)))
    high = open_ * np.exp(up)
    low = open_ * np.exp(dn)

    close_c = np.maximum(np.rint(close * 100.0), 1).astype(np.int64)
    open_c = np.maximum(np.rint(open_ * 100.0), 1).astype(np.int64)
    high_c = np.maximum(np.rint(high * 100.0).astype(np.int64), np.maximum(open_c, close_c))
    low_c = np.minimum(np.maximum(np.rint(low * 100.0), 1).astype(np.int64), np.minimum(open_c, close_c))
    volume = np.maximum(np.rint(np.exp(logvol)), 100).astype(np.int64)
    # shares outstanding: quarterly steps of a slow buyback / issuance drift
    quarter = np.arange(T) // 63
    g = -0.01 + 0.012 * rng.standard_normal(N)
    shares0 = np.exp(log_cap0) / price0
    shares = np.rint(shares0[None, :] * np.exp(g[None, :] * quarter[:, None] / 4.0)).astype(np.int64)
    return MarketArrays(
        dates, tuple(tickers), tuple(sectors), tuple(industries),
        open_c, high_c, low_c, close_c, volume, shares,
    )  # fmt: skip


def generate_market(seed: int = DEFAULT_SEED) -> Panel:
    """Return the synthetic market for ``seed`` as a :class:`Panel` (see module doc).

    Deterministic: the same seed gives the same panel (and fingerprint) on every
    platform.  ``generate_market()`` is the shipped default market.
    """
    return simulate(seed).to_panel()


def main(argv: list[str] | None = None) -> None:
    """CLI: ``python -m gymkit.data.synthetic --out PATH [--seed S]`` writes the market file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output .npz path")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    arrays = simulate(args.seed)
    save_market(arrays, args.out, args.seed)
    print(f"wrote {args.out}: {arrays.to_panel()}")


if __name__ == "__main__":
    main()
