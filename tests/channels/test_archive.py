"""Novelty archive: explicit versioned state, exact snapshots, nearest-neighbour by P&L corr."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


class _ListArchive:
    """The archive's contract written the obvious way (rows in a list, order = commit order)."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.rows = capacity, []  # (form, pinned, pnl)

    def add(self, form: str, pnl: np.ndarray, pinned: bool) -> bool | str:
        if any(f == form for f, _, _ in self.rows):
            return False
        if len(self.rows) >= self.capacity:
            victims = [i for i, (_, p, _) in enumerate(self.rows) if not p]
            if not victims:
                return "full"
            del self.rows[victims[0]]
        self.rows.append((form, pinned, np.asarray(pnl, dtype=np.float64)))
        return True


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 9), st.booleans(), st.integers(0, 10**6)),
                                    max_size=30))
def test_commits_and_evictions_match_a_list_of_rows(capacity: int, ops: list) -> None:
    """Whatever the order of commits, pins and evictions, forms, P&L rows, correlations (the
    same bits as the standardised rows' dot products), nearest, digest and snapshot follow the
    list model; the archive writes rows in place (its buffers are not re-copied per commit)."""
    arc, ref = NoveltyArchive(17, capacity), _ListArchive(capacity)
    for form_id, pinned, seed in ops:
        x = _pnl(seed, 17)
        want = ref.add(f"f{form_id}", x, pinned)
        if want == "full":
            with pytest.raises(ValueError, match="full of"):
                arc.add(f"f{form_id}", x, pinned=pinned)
            continue
        assert arc.add(f"f{form_id}", x, pinned=pinned) is want
        assert arc.forms == tuple(f for f, _, _ in ref.rows)
        rows = np.array([r for _, _, r in ref.rows]).reshape(len(ref.rows), 17)
        assert np.array_equal(arc.pnl, rows)
        q = _pnl(seed + 1, 17)
        z = (q - q.mean()) / q.std() / np.sqrt(17)
        zr = (rows - rows.mean(axis=1, keepdims=True)) / rows.std(axis=1, keepdims=True) / np.sqrt(17)
        np.testing.assert_allclose(arc.correlations(q), zr @ z, rtol=0, atol=1e-12)
        back = NoveltyArchive.restore(arc.snapshot())
        assert back.digest == arc.digest and np.array_equal(back.correlations(q), arc.correlations(q))
        hit = arc.nearest(q)
        assert hit is not None and hit.index == int(np.argmax(np.abs(arc.correlations(q))))


def test_a_full_archive_commits_in_place() -> None:
    """At capacity, a commit overwrites the evicted entry's row: no copy of the whole archive
    (a training run commits ~190 answers a step into 1,024 entries)."""
    arc = NoveltyArchive(50, capacity=8)
    for i in range(8):
        arc.add(f"s{i}", _pnl(i, 50), pinned=i < 3)
    buffers = arc._pnl_rows, arc._z_rows
    for i in range(40):
        arc.add(f"c{i}", _pnl(100 + i, 50))
    assert arc._pnl_rows is buffers[0] and arc._z_rows is buffers[1]
    assert arc.forms[:3] == ("s0", "s1", "s2") and arc.forms[3:] == tuple(f"c{i}" for i in range(35, 40))
