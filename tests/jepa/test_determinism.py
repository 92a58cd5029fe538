"""Determinism: a seconds-long training run twice gives a byte-identical checkpoint; the shipped
worlds regenerate byte for byte from the shipped checkpoint and their seeds."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.jepa.worlds import file_sha256

torch = pytest.importorskip("torch")


def _short_run(panel, path) -> str:
    import dataclasses

    from gymkit.jepa import train as jt
    from gymkit.jepa.model import JEPAConfig

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    cfg = dataclasses.replace(JEPAConfig(), epochs=1, stride=97, batch=8)
    jt.train_checkpoint(panel, path, config=cfg, threads=1, progress=False, decoder_steps=20)
    return file_sha256(path)


def test_short_training_twice_is_byte_identical(train_panel, tmp_path) -> None:
    a = _short_run(train_panel, tmp_path / "a.npz")
    b = _short_run(train_panel, tmp_path / "b.npz")
    assert a == b


def test_shipped_world_regenerates_byte_identical(shipped, data, pool, latents, manifest,
                                                  tmp_path) -> None:
    from gymkit.data.default import save_market
    from gymkit.jepa.decoder import bootstrap_days
    from gymkit.jepa.generate import WORLD_TABLE, make_world

    kept = [w for w in manifest["worlds"] if w["kept"]]
    assert kept
    w = kept[0]
    spec = next(s for s in WORLD_TABLE if s.name == w["name"])
    src = bootstrap_days(pool.n_days, np.random.default_rng(w["bootstrap_seed"]))
    arrays = make_world(shipped.model, shipped.decoder, shipped.shifts, data, pool, latents,
                        spec.channel, spec.alpha, src)
    save_market(arrays, tmp_path / w["file"], seed=w["bootstrap_seed"])
    assert file_sha256(tmp_path / w["file"]) == w["sha256"]


def test_ohlcv_order_holds_by_construction_even_far_off_the_manifold(shipped, data, pool,
                                                                     latents) -> None:
    from gymkit.jepa.decoder import bootstrap_days
    from gymkit.jepa.generate import make_world

    src = bootstrap_days(pool.n_days, np.random.default_rng(3))
    for channel, alpha in (("volatility", 6.0), ("trend", -6.0), ("dispersion", 6.0)):
        a = make_world(shipped.model, shipped.decoder, shipped.shifts, data, pool, latents,
                       channel, alpha, src)
        assert (a.low_c >= 1).all() and (a.volume >= 1).all()
        assert (a.low_c <= np.minimum(a.open_c, a.close_c)).all()
        assert (np.maximum(a.open_c, a.close_c) <= a.high_c).all()
