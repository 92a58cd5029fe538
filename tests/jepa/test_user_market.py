"""The JEPA on a user's market with missing cells (listings, a delisting, a halt).

* Perturbing every holdout price of the user's file changes no weight of the trained model
  and no byte of any world (all four, kept or not, and the unshifted decode); perturbing one
  train price does change them (so the test can fail).
* A world has no bar exactly where the train panel has none, each stock's path starts at its
  own first real bar, and the OHLC order holds on every bar.
* On a complete panel none of the missing-cell code runs (``observed is None``).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.data import default_market
from gymkit.data.panel import Panel

torch = pytest.importorskip("torch")

M = default_market()


def gone_mask(t: int, n: int, *, delist: bool = True) -> np.ndarray:
    """Cells without a bar: four late listings, a 10-day halt and (``delist``) one delisting."""
    gone = np.zeros((t, n), dtype=bool)
    for j, first in ((3, 400), (11, 900), (20, 1500), (33, 250)):
        gone[:first, j] = True
    if delist:
        gone[2900:, 40] = True  # delisted before the holdout
    gone[2000:2010, 7] = True
    return gone


def write_market(path, panel: Panel, gone: np.ndarray) -> None:
    """``panel`` as a vendor-style long Parquet (Date, Name, OHLCV, market_cap, Sector,
    Industry) with no row where ``gone``."""
    t, n = panel.T, panel.N
    keep = ~gone.ravel()
    cols = {"Date": np.repeat(panel.dates, n)[keep], "Name": np.tile(np.array(panel.tickers), t)[keep]}
    for src, dst in (("open", "Open"), ("high", "High"), ("low", "Low"), ("close", "Close"),
                     ("volume", "Volume"), ("cap", "market_cap")):
        cols[dst] = panel.field(src).ravel()[keep]
    cols["Sector"] = np.tile(np.array(panel.sector), t)[keep]
    cols["Industry"] = np.tile(np.array(panel.industry), t)[keep]
    pl.DataFrame(cols).with_columns(pl.col("Date").cast(pl.Date)).write_parquet(path)


_RUN = r"""
import dataclasses, hashlib, json, sys, tempfile, warnings
from pathlib import Path
import numpy as np
from gymkit.jepa import portable
portable.enter()
warnings.simplefilter("ignore")
from gymkit.data import load_panel
from gymkit.data.default import save_market
from gymkit.jepa.checkpoint import load_checkpoint
from gymkit.jepa.decoder import ResidualPool, bootstrap_days
from gymkit.jepa.generate import ALL_WORLDS, make_world, regime_shifts, tile_latents
from gymkit.jepa.model import JEPAConfig
from gymkit.jepa.train import SHORT_CONFIG, SHORT_DECODER_STEPS, _user_train, train_checkpoint
from gymkit.jepa.training import prepare
from gymkit.jepa.worlds import file_sha256
market, out = sys.argv[1], Path(sys.argv[2])
train, split = _user_train(load_panel(market))
cfg = dataclasses.replace(JEPAConfig(), **SHORT_CONFIG)
meta = train_checkpoint(train, out / "jepa.npz", config=cfg, threads=1, progress=False,
                        decoder_steps=SHORT_DECODER_STEPS)
ck = load_checkpoint(out / "jepa.npz")
data = prepare(train, ck.model.config)
pool = ResidualPool.build(data.arrays, ck.model.config.window)
latents = tile_latents(ck.model, data)
dirs = regime_shifts(ck.model, data, ck.shifts)
worlds = {}
for i, spec in [(-1, None), *enumerate(ALL_WORLDS)]:
    src = bootstrap_days(pool.n_days, np.random.default_rng(20250821 + i))
    arrays = make_world(ck.model, ck.decoder, dirs, data, pool, latents,
                        None if spec is None else spec.channel, 0.0 if spec is None else spec.alpha, src)
    path = out / f"w{i}.npz"
    save_market(arrays, path, seed=20250821 + i)
    worlds["unshifted" if spec is None else spec.name] = file_sha256(path)
print(json.dumps({"train_fingerprint": train.fingerprint, "holdout_start": split.holdout_start,
                  "checkpoint": file_sha256(out / "jepa.npz"), "weights": meta["weights_sha256"],
                  "worlds": worlds}))
"""


def _train_and_decode(market, out) -> dict:
    from gymkit.jepa import portable

    out.mkdir()
    r = portable.run_portable(["-c", _RUN, str(market), str(out)], capture_output=True, text=True,
                              timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # three portable subprocesses: ~60 s CPU
def test_holdout_prices_change_no_weight_and_no_world_byte(tmp_path) -> None:
    gone = gone_mask(M.T, M.N)
    write_market(tmp_path / "a.parquet", M, gone)
    # every holdout bar moved: prices x 1.37 (OHLC order kept), volume x 2
    from gymkit.data.splits import resolve_split

    split = resolve_split(M.dates, None)[0]
    hold = split.holdout_mask(M.dates)[:, None]
    moved = M.replace(**{f: np.where(hold, M.field(f) * 1.37, M.field(f))
                         for f in ("open", "high", "low", "close")},
                      volume=np.where(hold, M.volume * 2.0, M.volume))
    write_market(tmp_path / "b.parquet", moved, gone)
    # control: one train close moved by one cent
    j = M.tickers.index(M.tickers[5])
    close = M.close.copy()
    close[1000, j] += 0.01
    nudged = M.replace(close=close, high=np.maximum(M.high, close), low=np.minimum(M.low, close))
    write_market(tmp_path / "c.parquet", nudged, gone)

    a = _train_and_decode(tmp_path / "a.parquet", tmp_path / "a")
    b = _train_and_decode(tmp_path / "b.parquet", tmp_path / "b")
    c = _train_and_decode(tmp_path / "c.parquet", tmp_path / "c")
    assert a["holdout_start"] == b["holdout_start"] == str(split.holdout_start)
    assert b == a  # same train panel, weights, checkpoint bytes and world bytes
    assert len(a["worlds"]) == 6  # the unshifted decode, four channels and the crash regime
    assert c["train_fingerprint"] != a["train_fingerprint"]
    assert c["weights"] != a["weights"] and c["checkpoint"] != a["checkpoint"]
    assert all(c["worlds"][k] != a["worlds"][k] for k in a["worlds"])


@pytest.fixture(scope="module")
def user_setup():
    """A seconds-long model of the default market's train window with missing cells."""
    import dataclasses

    from gymkit.jepa.decoder import ResidualPool
    from gymkit.jepa.generate import tile_latents
    from gymkit.jepa.model import JEPAConfig
    from gymkit.jepa.train import SHORT_CONFIG, SHORT_DECODER_STEPS, train_checkpoint
    from gymkit.jepa.training import prepare

    gone = gone_mask(M.T, M.N)
    panel = M.replace(**{f: np.where(gone, np.nan, M.field(f))
                         for f in ("open", "high", "low", "close", "volume")},
                      cap=np.where(gone, np.nan, M.cap)).take_rows(slice(0, 3000))
    torch.set_num_threads(1)
    cfg = dataclasses.replace(JEPAConfig(), **SHORT_CONFIG, n_stocks=M.N)
    import tempfile
    from pathlib import Path

    from gymkit.jepa.checkpoint import load_checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        train_checkpoint(panel, Path(tmp) / "j.npz", config=cfg, threads=1, progress=False,
                         decoder_steps=SHORT_DECODER_STEPS)
        ck = load_checkpoint(Path(tmp) / "j.npz")
    data = prepare(panel, ck.model.config)
    pool = ResidualPool.build(data.arrays, ck.model.config.window)
    return panel, ck, data, pool, tile_latents(ck.model, data)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(channel=st.sampled_from(["volatility", "correlation", "trend", "dispersion"]),
       alpha=st.floats(-6.0, 6.0), seed=st.integers(0, 2**31))
def test_worlds_keep_the_markets_missingness_and_first_bars(user_setup, channel, alpha, seed) -> None:
    from gymkit.jepa.decoder import bootstrap_days
    from gymkit.jepa.generate import make_world
    from gymkit.jepa.worlds import world_panel

    panel, ck, data, pool, latents = user_setup
    src = bootstrap_days(pool.n_days, np.random.default_rng(seed))
    arrays = make_world(ck.model, ck.decoder, ck.shifts, data, pool, latents, channel, alpha, src)
    world = world_panel(arrays)
    base_gone = ~np.isfinite(panel.close)
    for f in ("open", "high", "low", "close", "volume", "cap"):
        assert np.array_equal(~np.isfinite(world.field(f)), base_gone), f
    have = ~base_gone
    assert (arrays.low_c[have] >= 1).all() and (arrays.volume[have] >= 1).all()
    assert (arrays.low_c <= np.minimum(arrays.open_c, arrays.close_c)).all()
    assert (np.maximum(arrays.open_c, arrays.close_c) <= arrays.high_c).all()
    first = have.argmax(axis=0)
    cols = np.arange(panel.N)
    assert np.array_equal(arrays.close_c[first, cols], np.rint(panel.close[first, cols] * 100))


def test_a_complete_panel_runs_none_of_the_missing_cell_code(data) -> None:
    from gymkit.jepa.features import market_arrays, observed_days

    assert data.missing is None and data.arrays.observed is None
    assert observed_days(market_arrays(M)) is None


def test_missing_cells_enter_the_encoder_as_masked_cells(user_setup) -> None:
    from gymkit.jepa.training import _batch

    _, ck, data, _, _ = user_setup
    c = ck.model.config
    x = _batch(data, np.array([0, 300]), c, None, "cpu").numpy()  # (B, N, F + 1, W)
    miss = data.missing[np.array([0, 300])[:, None] + np.arange(c.window)].transpose(0, 2, 1)
    assert miss.any()
    assert np.array_equal(x[:, :, -1, :] == 1.0, miss)
    assert (x[:, :, :-1, :][np.broadcast_to(miss[:, :, None, :], x[:, :, :-1, :].shape)] == 0).all()
