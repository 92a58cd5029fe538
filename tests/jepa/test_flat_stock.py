"""A stock-window with σ = 0 (a halted stock whose vendor file repeats the last price) is masked
like a missing cell: the stock is absent from that window (the path of the < 75 %-observed
rule), its log σ is NaN, never log 0 = −inf, and the worlds of a model trained through
``gymkit jepa train --market FILE`` are finite bars.

The file is shaped like the real S&P 500 file of ``../shared/data/real`` (long gzip CSV: date,
ticker, open, high, low, close, volume): the default market with one stock frozen at its close
for 300 sessions of the train window (open = high = low = close, volume kept), a complete panel.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from gymkit.data import default_market, load_panel
from gymkit.jepa.train import _user_train

torch = pytest.importorskip("torch")

M = default_market()
FLAT_STOCK = 9
FLAT_SESSIONS = (1200, 1500)  # sessions 1200 … 1499 repeat the close of session 1199


def frozen_market():
    """The default market with :data:`FLAT_STOCK` frozen over :data:`FLAT_SESSIONS`."""
    a, b = FLAT_SESSIONS
    j = FLAT_STOCK
    fields = {f: M.field(f).copy() for f in ("open", "high", "low", "close")}
    last = M.close[a - 1, j]
    for f in fields.values():
        f[a:b, j] = last
    return M.replace(**fields)


def write_vendor_csv(path, panel) -> None:
    """``panel`` as a long gzip CSV with the real S&P file's columns, sorted by date, ticker."""
    order = np.argsort(np.array(panel.tickers))
    with gzip.open(path, "wt", encoding="utf-8", newline="") as fh:
        fh.write("date,ticker,open,high,low,close,volume\n")
        for t, day in enumerate(panel.dates):
            for j in order:
                fh.write(f"{day},{panel.tickers[j]},{panel.open[t, j]:.2f},{panel.high[t, j]:.2f},"
                         f"{panel.low[t, j]:.2f},{panel.close[t, j]:.2f},{int(panel.volume[t, j])}\n")


@pytest.fixture(scope="module")
def vendor_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("flat") / "frozen_ohlcv.csv.gz"
    write_vendor_csv(path, frozen_market())
    return path


@pytest.fixture(scope="module")
def train(vendor_file):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's data notes
        return _user_train(load_panel(vendor_file))[0]


def _flat_windows(starts: np.ndarray, w: int) -> np.ndarray:
    """Windows of return days (day d: close d → d + 1) inside the frozen sessions."""
    a, b = FLAT_SESSIONS
    return (starts >= a - 1) & (starts + w <= b - 1)


def test_a_flat_window_is_absent_and_never_log_zero(train) -> None:
    from gymkit.jepa.decoder import tile_params
    from gymkit.jepa.features import FeatureScales, market_arrays, window_params
    from gymkit.jepa.model import JEPAConfig
    from gymkit.jepa.training import prepare, present_of

    w = JEPAConfig().window
    m = market_arrays(train)
    assert m.observed is None  # a complete panel: the flat windows are the only absent ones
    starts = np.arange(0, train.T - w, dtype=np.int64)
    flat = _flat_windows(starts, w)
    assert train.dates[0] == M.dates[0]  # return day d of the train panel is M's
    assert flat.sum() == FLAT_SESSIONS[1] - FLAT_SESSIONS[0] - w + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # log(0) warned "divide by zero"
        p = window_params(m, starts, w, FeatureScales.fit(m))
        data = prepare(train, JEPAConfig())
        present = present_of(data, starts, w)
        tiles, tile_present = tile_params(m, w, data.scales)
    assert np.isnan(p[flat, FLAT_STOCK, 2]).all()
    assert np.isfinite(np.delete(p, np.flatnonzero(flat), axis=0)).all()
    assert np.isfinite(p[flat][:, np.arange(M.N) != FLAT_STOCK]).all()
    expect = np.ones((starts.size, M.N), dtype=bool)
    expect[flat, FLAT_STOCK] = False
    assert np.array_equal(present, expect)
    assert np.isfinite(tiles).all() and not tile_present.all()


def test_the_default_market_has_no_flat_window() -> None:
    """So none of this runs there (the shipped files are unchanged: ``gymkit jepa check``)."""
    from gymkit.jepa.features import market_arrays, moving_days
    from gymkit.jepa.model import JEPAConfig

    assert moving_days(market_arrays(M), JEPAConfig().window) is None


def test_jepa_train_on_the_file_gives_finite_worlds(vendor_file, train, tmp_path) -> None:
    """``gymkit jepa train --market FILE --short`` as typed; its worlds are valid finite bars."""
    from gymkit.jepa.checkpoint import load_checkpoint
    from gymkit.jepa.decoder import ResidualPool, bootstrap_days
    from gymkit.jepa.generate import WORLD_TABLE, make_world, tile_latents
    from gymkit.jepa.training import prepare
    from gymkit.jepa.worlds import world_panel

    gymkit = os.path.join(os.path.dirname(sys.executable), "gymkit")
    env = {**os.environ, "GYMKIT_CACHE_DIR": str(tmp_path)}
    ck_path = tmp_path / "jepa.npz"
    r = subprocess.run([gymkit, "jepa", "train", "--market", str(vendor_file), "--short", "--threads",
                        "1", "--quiet", "--checkpoint", str(ck_path)], capture_output=True, text=True,
                       env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "divide by zero" not in r.stderr and "invalid value" not in r.stderr, r.stderr[-2000:]
    ck = load_checkpoint(ck_path)
    assert all(np.isfinite(v) for row in ck.meta["history"] for v in row.values())
    assert np.isfinite(ck.decoder.mean).all() and np.isfinite(ck.decoder.std).all()
    warnings.simplefilter("error", RuntimeWarning)  # no 0 / 0 nor log 0 on the way (pytest resets it)
    data = prepare(train, ck.model.config)
    pool = ResidualPool.build(data.arrays, ck.model.config.window)
    assert all(np.isfinite(getattr(pool, k)).all() for k in ("u_m", "u", "on", "up", "down", "ab_vol"))
    latents = tile_latents(ck.model, data)
    for spec in (None, *WORLD_TABLE):
        src = bootstrap_days(pool.n_days, np.random.default_rng(7))
        arrays = make_world(ck.model, ck.decoder, ck.shifts, data, pool, latents,
                            None if spec is None else spec.channel, 0.0 if spec is None else spec.alpha,
                            src)
        world = world_panel(arrays)
        assert np.isfinite(world.close).all() and (arrays.low_c >= 1).all()
        assert (arrays.low_c <= np.minimum(arrays.open_c, arrays.close_c)).all()
        assert (np.maximum(arrays.open_c, arrays.close_c) <= arrays.high_c).all()
