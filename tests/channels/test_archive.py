"""Novelty archive: explicit versioned state, exact snapshots, nearest-neighbour by P&L corr."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.verifiers.archive import NoveltyArchive


def _pnl(seed: int, n: int = 300) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.01, n)


def test_nearest_finds_the_correlated_entry_and_its_sign() -> None:
    arc = NoveltyArchive(300)
    base = _pnl(1)
    arc.add("a", _pnl(2))
    arc.add("b", base)
    arc.add("c", _pnl(3))
    hit = arc.nearest(-2.0 * base + 0.001)  # scaled, shifted, flipped copy of b
    assert hit is not None and hit.form == "b" and hit.index == 1
    assert hit.corr == pytest.approx(-1.0, abs=1e-12)
    np.testing.assert_allclose(arc.correlations(base)[1], 1.0)


def test_flat_pnl_is_uncorrelated_with_everything() -> None:
    arc = NoveltyArchive(300)
    arc.add("a", _pnl(2))
    hit = arc.nearest(np.zeros(300))
    assert hit is not None and hit.corr == 0.0


def test_version_moves_only_on_real_changes_and_duplicates_are_refused() -> None:
    arc = NoveltyArchive(300)
    d0 = arc.digest
    assert arc.add("a", _pnl(1)) is True and arc.version == 1
    assert arc.add("a", _pnl(9)) is False and arc.version == 1
    assert arc.digest != d0 and arc.contains("a") and not arc.contains("b")
    arc.nearest(_pnl(5))
    arc.correlations(_pnl(6))
    assert arc.version == 1  # reads never change state


def test_eviction_keeps_pinned_seeds_and_drops_oldest_commit() -> None:
    arc = NoveltyArchive(50, capacity=3)
    arc.add("seed", _pnl(1, 50), pinned=True)
    arc.add("x1", _pnl(2, 50))
    arc.add("x2", _pnl(3, 50))
    arc.add("x3", _pnl(4, 50))
    assert arc.forms == ("seed", "x2", "x3")
    full = NoveltyArchive(50, capacity=1)
    full.add("s", _pnl(1, 50), pinned=True)
    with pytest.raises(ValueError, match="full of 1 pinned"):
        full.add("t", _pnl(2, 50))


def test_snapshot_round_trips_bit_for_bit() -> None:
    arc = NoveltyArchive(120)
    for i in range(5):
        arc.add(f"f{i}", _pnl(i, 120), pinned=i < 2)
    blob = arc.snapshot()
    back = NoveltyArchive.restore(blob)
    assert back.snapshot() == blob
    assert back.digest == arc.digest and back.version == arc.version and back.forms == arc.forms
    probe = _pnl(99, 120)
    assert back.nearest(probe) == arc.nearest(probe)


@pytest.mark.parametrize(
    ("mutate", "msg"),
    [
        (lambda b: b"nonsense", "bad magic"),
        (lambda b: b[:-8], "inconsistent"),
        (lambda b: b[:20] + b"{" + b[21:], "corrupt"),
    ],
)
def test_restore_rejects_corrupt_snapshots(mutate, msg) -> None:
    arc = NoveltyArchive(10)
    arc.add("a", _pnl(1, 10))
    with pytest.raises(ValueError, match=msg):
        NoveltyArchive.restore(mutate(arc.snapshot()))


def test_pnl_shape_is_checked() -> None:
    arc = NoveltyArchive(10)
    with pytest.raises(ValueError, match=r"shape \(10,\)"):
        arc.add("a", np.zeros(9))
