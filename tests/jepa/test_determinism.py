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


def test_shipped_worlds_regenerate_byte_identical(manifest, portable_figures) -> None:
    """Every kept world, regenerated in portable mode from the shipped checkpoint and its
    bootstrap seed, has the manifest's sha256 (the same bytes on any x86-64-v3 machine)."""
    kept = {w["name"]: w["sha256"] for w in manifest["worlds"] if w["kept"]}
    assert kept
    assert portable_figures["worlds"] == kept


def test_portable_figures_ignore_the_kernels_the_cpu_would_choose(portable_figures) -> None:
    """The CPU-dependent kernel choices of MKL and oneDNN, forced to their AVX2 and SSE4.1
    variants (what an AVX2-only machine runs), leave every portable figure unchanged."""
    import json

    from gymkit.jepa import portable

    r = portable.run_portable(["-m", "gymkit.jepa.recheck"], capture_output=True, text=True,
                              timeout=600, env={"MKL_ENABLE_INSTRUCTIONS": "AVX2",
                                                "ONEDNN_MAX_CPU_ISA": "SSE41"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout) == portable_figures


def test_portable_mode_is_checked() -> None:
    """A normal process is reported as not portable (with the reason); a portable one is not."""
    import subprocess
    import sys

    from gymkit.jepa import portable

    code = ("import torch; torch.ones(2) + 1; from gymkit.jepa import portable; "
            "portable.enter() if len(__import__('sys').argv) > 1 else None; "
            "print('|'.join(portable.problems()))")
    normal = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f"{portable.FLAG} is not set" in normal.stdout
    ported = portable.run_portable(["-c", code, "enter"], capture_output=True, text=True, check=True)
    assert ported.stdout.strip() == ""


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


def test_gymkit_jepa_check_as_typed() -> None:
    """``gymkit jepa check`` from a normal shell: it re-executes itself in portable mode and
    reports that every figure and kept world of the shipped manifest regenerates bit for bit."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from gymkit.jepa import portable

    gymkit = Path(sys.executable).with_name("gymkit")
    env = {k: v for k, v in os.environ.items() if k != portable.FLAG}
    r = subprocess.run([str(gymkit), "jepa", "check"], capture_output=True, text=True, env=env,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().endswith("every figure and world regenerates bit for bit")
