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
    buffers = arc._pnl_rows, arc._z_rows, arc._z32_rows
    for i in range(40):
        arc.add(f"c{i}", _pnl(100 + i, 50))
    assert arc._pnl_rows is buffers[0] and arc._z_rows is buffers[1] and arc._z32_rows is buffers[2]
    assert arc.forms[:3] == ("s0", "s1", "s2") and arc.forms[3:] == tuple(f"c{i}" for i in range(35, 40))


def _nearest_by_definition(arc: NoveltyArchive, q: np.ndarray) -> tuple[int, float]:
    corr = arc.correlations(q)
    i = int(np.argmax(np.abs(corr)))
    return i, float(corr[i])


def _rows(kind: str, rng: np.random.Generator, n: int, days: int, base: np.ndarray) -> np.ndarray:
    if kind == "random":
        return rng.normal(size=(n, days))
    if kind == "near_ties":  # corr gaps from 1e-18 to 1e-9, far below float32's resolution
        return base + rng.normal(size=(n, days)) * rng.choice([0.0, 1e-12, 1e-9, 1e-6, 1e-4], (n, 1))
    if kind == "copies":  # scaled and negated copies: exact ties of |corr|, earliest must win
        return base * rng.choice([-3.0, -1.0, 0.5, 1.0, 2.0, 1e6], (n, 1)) + rng.choice([0.0, 7.0], (n, 1))
    rows = rng.normal(size=(n, days))  # "flat": constant rows (zero z) among random ones
    rows[rng.random(n) < 0.5] = 3.0
    return rows


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 70), st.integers(2, 500),
       st.sampled_from(["random", "near_ties", "copies", "flat"]), st.integers(1, 80),
       st.sampled_from(["base", "noisy", "flat", "holes"]))
def test_nearest_is_exactly_the_definition(seed: int, n: int, days: int, kind: str, capacity: int,
                                           query: str) -> None:
    """nearest()'s float32 first pass never changes the answer: the same entry and the same
    corr bits as the argmax of |correlations()| (earliest on ties), whatever the archive
    holds (near-ties below float32's resolution, exact ties, flat rows) and wherever
    evictions put its rows in the buffer."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=days)
    arc = NoveltyArchive(days, capacity=capacity)
    for i, row in enumerate(_rows(kind, rng, n, days, base)):
        arc.add(f"f{i}", row, pinned=bool(rng.random() < 0.2) and i < capacity - 1)
    q = {"base": base, "noisy": base + rng.normal(size=days) * 0.3, "flat": np.full(days, 2.0),
         "holes": np.where(rng.random(days) < 0.2, np.nan, base)}[query]
    hit = arc.nearest(q)
    i, c = _nearest_by_definition(arc, q)
    assert hit is not None and (hit.index, hit.form) == (i, arc.forms[i])
    assert np.float64(hit.corr).tobytes() == np.float64(c).tobytes()


def test_nearest_resolves_gaps_float32_cannot_see() -> None:
    """Entries whose correlations with the query differ by ~1e-10 look equal in float32: the
    float64 pass picks the truly nearest, not the first of the look-alikes."""
    rng = np.random.default_rng(3)
    days = 400
    q = rng.normal(size=days)
    noise = rng.normal(size=days)
    arc = NoveltyArchive(days)
    for i, eps in enumerate([3e-5, 2e-5, 1e-5 + 1e-10, 1e-5, 4e-5]):  # the entry at 1e-5 is nearest
        arc.add(f"f{i}", q + eps * noise)
    approx = np.abs(arc._z32_rows[:5] @ arc._z32_rows[3])
    assert len(set(approx[1:4].tolist())) < 3  # float32 cannot order them
    hit = arc.nearest(q)
    assert hit is not None and hit.index == 3 == _nearest_by_definition(arc, q)[0]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(2, 300), st.integers(0, 14),
       st.sampled_from(["random", "near_ties", "copies", "flat"]))
def test_nearest_many_is_nearest_of_each(seed: int, n: int, days: int, k: int, kind: str) -> None:
    """One pass for a group of queries gives each query's own nearest, bit for bit (and none
    for an empty archive)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=days)
    arc = NoveltyArchive(days, capacity=64)
    queries = [base + rng.normal(size=days) * rng.choice([0.0, 1e-9, 0.3]) for _ in range(k)]
    assert NoveltyArchive(days).nearest_many(queries) == [None] * k
    for i, row in enumerate(_rows(kind, rng, n, days, base)):
        arc.add(f"f{i}", row)
    many = arc.nearest_many(queries)
    assert len(many) == k
    for q, hit in zip(queries, many, strict=True):
        i, c = _nearest_by_definition(arc, q)
        assert hit is not None and hit.index == i and np.float64(hit.corr).tobytes() == np.float64(c).tobytes()


def test_the_float32_pass_settles_almost_every_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a full archive (1,024 entries x 3,050 days, the default market's shape) the float64
    pass runs on a handful of entries per answer, not on the archive: the bound is tight
    enough to be worth its pass (a bound too loose would stay exact, only slower)."""
    rng = np.random.default_rng(11)
    days = 3050
    arc = NoveltyArchive(days)
    for i in range(arc.capacity):
        arc.add(f"f{i}", rng.normal(0.0, 0.01, days))
    rows_seen: list[int] = []
    real = np.einsum

    def spy(spec, *ops, **kw):
        if spec == "ij,j->i":
            rows_seen.append(ops[0].shape[0])
        return real(spec, *ops, **kw)

    import gymkit.verifiers.archive as archive_module

    monkeypatch.setattr(archive_module.np, "einsum", spy)
    queries = [rng.normal(0.0, 0.01, days) + 0.3 * arc.pnl[i] for i in (5, 500, 1000)] + [rng.normal(size=days)]
    hits = arc.nearest_many(queries)
    monkeypatch.undo()
    assert [h.index for h in hits[:3]] == [5, 500, 1000]
    assert len(rows_seen) == 4 and max(rows_seen) <= 8, rows_seen
