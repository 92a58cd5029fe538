"""Shared fixtures of the JEPA tests: the shipped checkpoint, manifest and train panel (once)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the gates need the model; scoring tests do not


@pytest.fixture(scope="session")
def train_panel():
    """The train window of the embedded default market."""
    from gymkit.data import DEFAULT_SPLIT, default_market

    return DEFAULT_SPLIT.train(default_market())


@pytest.fixture(scope="session")
def manifest():
    """The shipped worlds manifest."""
    from gymkit.jepa.worlds import read_manifest

    return read_manifest("default")[0]


@pytest.fixture(scope="session")
def shipped():
    """The shipped checkpoint, loaded on one thread."""
    from gymkit.jepa.checkpoint import load_checkpoint
    from gymkit.jepa.train import SHIPPED_CHECKPOINT
    from gymkit.jepa.worlds import SHIPPED_DIR

    torch.set_num_threads(1)
    return load_checkpoint(SHIPPED_DIR / SHIPPED_CHECKPOINT)


@pytest.fixture(scope="session")
def data(shipped, train_panel):
    """Training data (features, pairs) of the train panel under the shipped config."""
    from gymkit.jepa.training import prepare

    return prepare(train_panel, shipped.model.config)


@pytest.fixture(scope="session")
def pool(shipped, data):
    """The residual pool of the block bootstrap."""
    from gymkit.jepa.decoder import ResidualPool

    return ResidualPool.build(data.arrays, shipped.model.config.window)


@pytest.fixture(scope="session")
def latents(shipped, data):
    """Frozen latents of the train tiles."""
    from gymkit.jepa.generate import tile_latents

    return tile_latents(shipped.model, data)


@pytest.fixture(scope="session")
def portable_figures():
    """The shipped manifest's figures recomputed in a portable-mode subprocess
    (:mod:`gymkit.jepa.portable`): these must equal the manifest bit for bit on any machine."""
    import json

    from gymkit.jepa import portable

    r = portable.run_portable(["-m", "gymkit.jepa.recheck"], capture_output=True, text=True,
                              timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)
