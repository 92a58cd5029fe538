"""The shipped worlds hand no stock a drift for the whole world (issue 18, reward integrity).

A shift adds one vector to every tile's latents, so the decoder's drift change of a stock was
nearly the same in every tile (79% of its variance a per-stock constant in the dispersion
world); the worlds then had a persistent cross-sectional drift (tile-to-tile correlation 0.12
/ 0.13 of the realised tile drifts) the train market does not have (−0.0005), and R3 paid slow
trend books.  :func:`gymkit.jepa.generate.transient_drift` keeps how far each stock's drift
moves in a tile but not which way, tile by tile.

Bounds come from the train market and the statistics' own noise: the realised tile drifts of
a world (mean daily log return per stock and 126-day tile) may exceed the train panel's
tile-to-tile correlation by 3 standard errors of a mean of K − 1 correlations of N pairs
(1/√(N(K − 1))) and its per-stock constant share by 3 standard errors of the share under no
persistence (√(2/N)/K).  The shift's own part of the trend book's world CPCV (world minus
the unshifted decode with the same bootstrap draw) may not exceed 2 × the spread (std) of
that book's 15 CPCV test Sharpes on train.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gymkit.data import DEFAULT_SPLIT
from gymkit.jepa.decoder import bootstrap_days, tile_starts
from gymkit.jepa.generate import WORLD_TABLE, drift_persistence, make_world, transient_drift
from gymkit.jepa.shifts import shift
from gymkit.jepa.worlds import load_stress_worlds, read_manifest, world_panel
from gymkit.stress_ranking import rescore as world_score

TREND_BOOK = "rank(ts_sum(returns, 250))"
W = 126


def _tile_drifts(panel) -> np.ndarray:
    r = np.diff(np.log(panel.close), axis=0)
    return np.stack([r[s:s + W].mean(axis=0) for s in tile_starts(r.shape[0], W)])


def test_shipped_worlds_drifts_persist_no_more_than_train(train_panel) -> None:
    base = _tile_drifts(train_panel)
    k, n = base.shape
    ref = drift_persistence(base)
    corr_max = ref["tile_corr"] + 3.0 / np.sqrt(n * (k - 1))
    share_max = ref["constant_share"] + 3.0 * np.sqrt(2.0 / n) / k
    worlds = load_stress_worlds("default", train_panel)
    assert worlds
    for w in worlds:
        got = drift_persistence(_tile_drifts(w.panel))
        assert got["tile_corr"] <= corr_max, (w.name, got, corr_max)
        assert got["constant_share"] <= share_max, (w.name, got, share_max)


def _change(shipped, data, latents, spec):
    from gymkit.jepa.decoder import tile_params

    _, present = tile_params(data.arrays, shipped.model.config.window, data.scales)
    dec = shipped.decoder
    return dec(shift(latents, shipped.shifts, spec.channel, spec.alpha), present) - dec(latents, present)


@pytest.mark.parametrize("name", ["dispersion", "trend_flip"])
def test_decoded_drift_change_is_constant_before_and_transient_after(shipped, data, latents, name) -> None:
    spec = next(s for s in WORLD_TABLE if s.name == name)
    change = _change(shipped, data, latents, spec)
    k = change.shape[0]
    raw = drift_persistence(change[..., 0])
    fixed = drift_persistence(transient_drift(change)[..., 0])
    assert raw["constant_share"] > 0.5 and raw["tile_corr"] > 0.5, raw  # the defect, measured
    assert fixed["constant_share"] < 2.0 / k and abs(fixed["tile_corr"]) < 0.1, fixed


def _shift_part(shipped, data, pool, latents, train_panel, name: str) -> tuple[float, float]:
    from gymkit.dsl import parse
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.windows import BURN_IN

    man, _ = read_manifest("default")
    entry = next(w for w in man["worlds"] if w["name"] == name)
    spec = next(s for s in WORLD_TABLE if s.name == name)
    src = bootstrap_days(pool.n_days, np.random.default_rng(entry["bootstrap_seed"]))
    args = (shipped.model, shipped.decoder, shipped.shifts, data, pool, latents)
    costs, cv, expr = TrainCosts(), CPCV(), parse(TREND_BOOK)
    score = [world_score(expr, world_panel(make_world(*args, ch, a, src)), DEFAULT_SPLIT, costs,
                         cv, BURN_IN, None) for ch, a in ((spec.channel, spec.alpha), (None, 0.0))]
    return score[0], score[1]


def _train_cpcv(train_panel):
    from gymkit.dsl import parse
    from gymkit.dsl.evaluator import evaluate
    from gymkit.verifiers.costs import TrainCosts
    from gymkit.verifiers.cpcv import CPCV
    from gymkit.verifiers.oracle import backtest
    from gymkit.verifiers.windows import BURN_IN

    return backtest(evaluate(parse(TREND_BOOK), train_panel), train_panel, DEFAULT_SPLIT, "train",
                    TrainCosts(), cpcv=CPCV(), burn_in=BURN_IN).cpcv


@pytest.mark.parametrize("name", ["dispersion", "trend_flip"])
def test_the_shift_pays_the_trend_book_no_more_than_train_noise(shipped, data, pool, latents,
                                                                 train_panel, name) -> None:
    bound = 2.0 * float(np.std(_train_cpcv(train_panel).test_sharpes))
    world, unshifted = _shift_part(shipped, data, pool, latents, train_panel, name)
    assert world - unshifted <= bound, (name, world, unshifted, bound)


@pytest.mark.xfail(strict=True, reason="left open (jepa/README.md): the unshifted decode itself "
                   "plants each tile's realised drift as a known drift and pays trend books")
def test_the_trend_book_does_not_gain_from_train_to_the_dispersion_world(shipped, data, pool, latents,
                                                                         train_panel) -> None:
    cv = _train_cpcv(train_panel)
    world, _ = _shift_part(shipped, data, pool, latents, train_panel, "dispersion")
    assert world - cv.score <= 2.0 * float(np.std(cv.test_sharpes))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 8), st.integers(2, 9), st.just(5)),
              elements=st.floats(-3, 3, allow_nan=False)),
       st.integers(0, 2**31 - 1), st.data())
def test_transient_drift_changes_only_the_direction_of_each_stocks_constant(change, seed, draw) -> None:
    k, n, _ = change.shape
    present = draw.draw(arrays(np.bool_, (k, n))) if draw.draw(st.booleans()) else None
    out = transient_drift(change, present, seed)
    assert np.array_equal(out[..., 1:], change[..., 1:])
    assert np.array_equal(out, transient_drift(change, present, seed))  # seeded: same bits
    w = np.ones((k, n), dtype=bool) if present is None else present
    assert np.array_equal(out[..., 0][~w], change[..., 0][~w])  # absent stock-tiles untouched
    mu = change[..., 0]
    stock = np.where(w, mu, 0).sum(axis=0) / np.maximum(w.sum(axis=0), 1)
    c = np.broadcast_to(stock - np.where(w, mu, 0).sum() / max(int(w.sum()), 1), (k, n))
    rest = mu - c
    moved = out[..., 0] - rest  # what is left of the constant: ±c on every present stock-tile
    np.testing.assert_allclose(np.abs(moved[w]), np.abs(c[w]), rtol=0, atol=1e-12)
