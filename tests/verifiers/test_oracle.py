"""The oracle end to end: judged days, parity with the pandas reference, holdout isolation,
determinism, cost configuration in the result."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gymkit.data import DEFAULT_SPLIT, nyse_sessions
from gymkit.verifiers import CPCV, RealisticCosts, TrainCosts, backtest, clear_context_cache

from .conftest import SMALL_SPLIT, digest, load_reference, random_panel, values_for

REF = load_reference()
BURN = 60  # the small random panels use a short burn-in


def _close(a, b, rtol=1e-9, atol=1e-13):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=rtol, atol=atol)


def check_parity(values, panel, split, mode, costs, burn_in=252):
    """The oracle equals the pandas reference on every series and statistic (≤ 1e-9 rel)."""
    got = backtest(values, panel, split, mode, costs, burn_in=burn_in)
    want = REF.backtest(values, panel, split, mode, costs.to_dict(), burn_in=burn_in)
    assert np.array_equal(got.dates, np.asarray(want.dates, dtype="datetime64[D]"))
    _close(got.weights, want.weights.to_numpy(), atol=1e-15)
    for k in ("gross", "net", "cost", "turnover", "market"):
        _close(getattr(got, k), getattr(want, k).to_numpy())
    np.testing.assert_allclose(got.ic, want.ic.to_numpy(), rtol=1e-9, atol=1e-12, equal_nan=True)
    m = got.metrics
    for k, v in want.summary.items():
        _close(getattr(m, k), v, atol=1e-11)
    _close(got.cpcv.test_sharpes, want.cpcv["test"], atol=1e-10)
    _close(got.cpcv.is_sharpes, want.cpcv["is"], atol=1e-10)
    _close(got.cpcv.score, want.cpcv["score"], atol=1e-10)
    fx = got.factors
    _close(list(fx.betas.values()), want.factors["betas"], rtol=1e-8, atol=1e-9)
    _close(fx.alpha, want.factors["alpha"], rtol=1e-8, atol=1e-12)
    _close(fx.residual_sharpe, want.factors["residual_sharpe"], atol=1e-9)
    _close(fx.raw_sharpe, want.factors["raw_sharpe"], atol=1e-10)
    _close(fx.r2, want.factors["r2"], atol=1e-9)
    return got


@pytest.mark.parametrize("seed,kind,nan_frac,mode,costs", [
    (0, "noise", 0.0, "train", TrainCosts()),
    (1, "persistent", 0.02, "train", TrainCosts()),
    (2, "ties", 0.0, "holdout", RealisticCosts()),
    (3, "momentum", 0.02, "holdout", RealisticCosts(book_usd=5e9, capacity_adv_share=0.001)),
    (4, "persistent", 0.0, "train", RealisticCosts(impact_k=0.5)),
    (5, "noise", 0.01, "holdout", TrainCosts().scaled(19)),
])
def test_parity_with_pandas_reference_on_random_panels(seed, kind, nan_frac, mode, costs):
    panel = random_panel(seed, nan_frac=nan_frac, cap=seed % 2 == 0)
    check_parity(values_for(panel, seed + 10, kind), panel, SMALL_SPLIT, mode, costs, burn_in=BURN)


def test_default_split_judged_days():
    dates = nyse_sessions("2012-06-29", "2026-08-21")
    assert dates.size == 3556
    panel = random_panel(7, end="2026-08-21", n=6)
    v = values_for(panel, 1, "noise")
    tr = backtest(v, panel)
    assert tr.metrics.n_days == 3050  # t in [252, T_train - 3] with T_train = 3304
    assert str(tr.dates[0]) == str(dates[252]) == "2013-07-03"
    assert str(tr.dates[-1]) == str(dates[3301]) == "2025-08-18"
    ho = backtest(v, panel, mode="holdout")
    assert ho.metrics.n_days == 250  # 252 holdout sessions less the last 2
    assert str(ho.dates[0]) == "2025-08-21" and str(ho.dates[-1]) == str(dates[-3])
    assert tr.costs["name"] == "train" and ho.costs["name"] == "realistic"
    assert tr.to_dict()["costs"] == TrainCosts().to_dict()


def test_holdout_garbage_leaves_every_train_number_bit_identical():
    panel = random_panel(8, end="2026-08-21", n=8)
    values = values_for(panel, 2, "persistent")
    hold = DEFAULT_SPLIT.holdout_mask(panel.dates)
    rng = np.random.default_rng(0)

    def garbage(a, how):
        a = np.array(a)
        a[hold] = np.nan if how == "nan" else rng.uniform(1e-3, 1e9, a[hold].shape)
        return a

    clear_context_cache()
    base = backtest(values, panel)
    for how in ("nan", "noise"):
        bad = panel.replace(**{k: garbage(getattr(panel, k), how) for k in ("open", "high", "low", "close", "volume", "cap")})
        assert bad.fingerprint != panel.fingerprint
        other = backtest(garbage(values, how), bad)
        for k in ("weights", "gross", "net", "cost", "turnover", "market", "ic"):
            assert getattr(base, k).tobytes() == getattr(other, k).tobytes(), k
        assert base.metrics == other.metrics
        assert base.cpcv.test_sharpes.tobytes() == other.cpcv.test_sharpes.tobytes()
        assert base.factors == other.factors
        assert base.panel_fingerprint == other.panel_fingerprint


def test_train_window_never_reaches_holdout_prices():
    # the last judged train day's return uses open(t+2) = the last train session's open
    panel = random_panel(9, end="2026-08-21", n=5)
    res = backtest(values_for(panel, 3, "noise"), panel)
    last = np.searchsorted(panel.dates, res.dates[-1])
    assert panel.dates[last + 2] == np.datetime64(DEFAULT_SPLIT.train_end)


_CHILD = """
import numpy as np, sys
sys.path.insert(0, {here!r})
from conftest import random_panel, SMALL_SPLIT, values_for, digest
from gymkit.verifiers import backtest, RealisticCosts
p = random_panel(11, nan_frac=0.01)
print(digest(backtest(values_for(p, 5, "ties"), p, SMALL_SPLIT, "holdout", RealisticCosts(), burn_in=60)))
"""


def test_bit_identical_across_runs_and_processes():
    from pathlib import Path

    p = random_panel(11, nan_frac=0.01)
    v = values_for(p, 5, "ties")
    a = digest(backtest(v, p, SMALL_SPLIT, "holdout", RealisticCosts(), burn_in=BURN))
    clear_context_cache()
    b = digest(backtest(v, p, SMALL_SPLIT, "holdout", RealisticCosts(), burn_in=BURN))
    assert a == b
    here = str(Path(__file__).parent)
    out = subprocess.run([sys.executable, "-c", _CHILD.format(here=here)], capture_output=True, text=True,
                         check=True, env={"OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PATH": ""})
    assert out.stdout.strip() == a


def test_bad_inputs_get_clear_errors():
    p = random_panel(12)
    with pytest.raises(ValueError, match="shape"):
        backtest(np.zeros((p.T - 1, p.N)), p, SMALL_SPLIT)
    with pytest.raises(ValueError, match="mode"):
        backtest(np.zeros((p.T, p.N)), p, SMALL_SPLIT, mode="test")
    with pytest.raises(ValueError, match="no judged day"):
        backtest(np.zeros((p.T, p.N)), p, SMALL_SPLIT, burn_in=5000)


def test_cpcv_parameters_are_configurable_and_reported():
    p = random_panel(13)
    res = backtest(values_for(p, 1, "noise"), p, SMALL_SPLIT, cpcv=CPCV(n_blocks=4, n_test_blocks=1), burn_in=BURN)
    assert res.cpcv.test_sharpes.shape == (4,) and res.cpcv_params["n_blocks"] == 4
