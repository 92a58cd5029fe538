"""The embedded default market: shape, OHLCV consistency, determinism and planted effects."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from gymkit.data import DEFAULT_SPLIT, default_market, generate_market, nyse_sessions
from gymkit.data.default import (
    DEFAULT_MARKET_FINGERPRINT,
    DEFAULT_MARKET_PATH,
    load_market,
    save_market,
)
from gymkit.data.real import REAL_46_TICKERS
from gymkit.data.synthetic import PLANTED_EFFECTS

COST = 4e-4  # DESIGN §4 training cost per unit of turnover


@pytest.fixture(scope="module")
def market():
    return default_market()


def test_shape_sessions_and_split(market) -> None:
    assert market.N == 46
    assert np.array_equal(market.dates, nyse_sessions("2012-06-29", "2026-08-21"))
    assert market.T == 3556
    assert DEFAULT_SPLIT.train(market).T == 3304
    assert int(DEFAULT_SPLIT.holdout_mask(market.dates).sum()) == 252


def test_tickers_are_synthetic_and_grouped(market) -> None:
    assert all(re.fullmatch(r"SYN\d{2}", t) for t in market.tickers)
    assert not set(market.tickers) & set(REAL_46_TICKERS)
    assert len(set(market.sector)) == 9
    assert len(set(market.industry)) >= 20
    assert (market.group_codes("sector") >= 0).all()
    # each industry sits in exactly one sector
    pairs = set(zip(market.industry, market.sector, strict=True))
    assert len(pairs) == len(set(market.industry))


def test_ohlcv_consistent_in_cents_and_shares(market) -> None:
    o, h, lo, c, v = market.open, market.high, market.low, market.close, market.volume
    for x in (o, h, lo, c):
        assert np.isfinite(x).all() and (x > 0).all()
        assert np.array_equal(np.round(x * 100), np.round(x * 100, 6))  # whole cents
    assert (lo <= np.minimum(o, c)).all()
    assert (h >= np.maximum(o, c)).all()
    assert (v > 0).all() and np.array_equal(v, np.round(v))
    cap = market.field("cap")
    assert (cap > 0).all() and np.isfinite(cap).all()


def test_fingerprint_constant_and_cache(market) -> None:
    assert market.fingerprint == DEFAULT_MARKET_FINGERPRINT
    assert default_market() is market


def test_regeneration_is_bit_identical(market) -> None:
    assert generate_market().fingerprint == DEFAULT_MARKET_FINGERPRINT


def test_other_seed_gives_other_market() -> None:
    assert generate_market(seed=7).fingerprint != DEFAULT_MARKET_FINGERPRINT


def test_save_load_round_trip(tmp_path) -> None:
    arrays = load_market(DEFAULT_MARKET_PATH)
    out = tmp_path / "m.npz"
    save_market(arrays, out, seed=0)
    assert load_market(out).to_panel().fingerprint == DEFAULT_MARKET_FINGERPRINT


def test_shipped_file_is_small() -> None:
    assert DEFAULT_MARKET_PATH.stat().st_size < 4_000_000


# ------------------------------------------------------------ planted effects
def _roll(x: np.ndarray, d: int, fn) -> np.ndarray:
    out = np.full_like(x, np.nan)
    out[d - 1 :] = fn(sliding_window_view(x, d, axis=0), axis=-1)
    return out


def _net_sharpe(panel, signal: np.ndarray, rows: slice) -> float:
    """DESIGN §4 book: rank at close t -> demean -> gross 1, earn open(t+1)->open(t+2), 4 bps."""
    ok = np.isfinite(signal)
    r = np.argsort(np.argsort(np.where(ok, signal, np.inf), axis=1), axis=1).astype(float)
    r[~ok] = np.nan
    with warnings.catch_warnings():  # burn-in rows are all-NaN: no positions there
        warnings.simplefilter("ignore", RuntimeWarning)
        w = r - np.nanmean(r, axis=1, keepdims=True)
    gross = np.nansum(np.abs(w), axis=1, keepdims=True)
    w = np.nan_to_num(np.divide(w, gross, out=np.zeros_like(w), where=gross > 0))
    o = panel.open
    fwd = np.zeros_like(o)
    fwd[:-2] = o[2:] / o[1:-1] - 1.0
    turnover = np.abs(np.diff(w, axis=0, prepend=0.0)).sum(axis=1)
    net = ((w * fwd).sum(axis=1) - COST * turnover)[rows]
    return float(net.mean() / net.std(ddof=1) * np.sqrt(252))


def _signals(panel) -> dict[str, np.ndarray]:
    ret, v = panel.field("returns"), panel.volume
    return {
        "reversal": -_roll(ret, 5, np.sum),
        "volume_variability": _roll(v, 20, np.std)
        / _roll(v, 20, np.mean)
        * _roll(ret, 250, np.std)
        / _roll(ret, 20, np.std),
    }


def test_documented_formulas_match_signals() -> None:
    assert PLANTED_EFFECTS["reversal"][0] == "rank(-ts_sum(returns, 5))"
    assert PLANTED_EFFECTS["volume_variability"][0] == (
        "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))"
    )


def test_planted_effects_earn_net_sharpe_on_train(market) -> None:
    n_train = DEFAULT_SPLIT.train(market).T
    rows = slice(252, n_train - 2)  # burn-in; last t whose open(t+2) is a train session
    for name, sig in _signals(market).items():
        assert _net_sharpe(market, sig, rows) > 0.5, name


def test_random_formulas_earn_nothing_net(market) -> None:
    rng = np.random.default_rng(0)
    n_train = DEFAULT_SPLIT.train(market).T
    rows = slice(252, n_train - 2)
    sharpes = []
    for _ in range(16):
        noise = rng.standard_normal(market.close.shape)
        sig = _roll(noise, int(rng.integers(1, 10)), np.mean)  # persistent random books
        sharpes.append(_net_sharpe(market, sig, rows))
    assert np.mean(sharpes) < 0.1
