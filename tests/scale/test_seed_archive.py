"""The seed archive's P&L: shipped for the default market, cached on disk for user markets, and
scores bit-identical to evaluating the 101 alphas (R8/R9 above all)."""

from __future__ import annotations

import pytest

import gymkit
from gymkit import seed_archive
from gymkit.data import default_market

ANSWERS = ["<alpha>rank(-ts_sum(returns, 5))</alpha>", "<alpha>rank(ts_std(volume, 20))</alpha>",
           # Alpha#101 itself (R9 sees its form, R8 its P&L) and a near copy of Alpha#12
           "<alpha>(close - open) / ((high - low) + 0.001)</alpha>",
           "<alpha>sign(ts_delta(volume, 1)) * (-1 * ts_delta(close, 2))</alpha>",
           "<alpha>rank(close</alpha>"]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """An empty gymkit cache dir and no seed archive cached in this process."""
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GYMKIT_SEED_ARCHIVE", raising=False)
    seed_archive.clear_seed_cache()
    yield tmp_path
    seed_archive.clear_seed_cache()


def _no_build(*a, **k):
    raise AssertionError("the 101 alphas were evaluated although a seed file fits")


def test_default_env_uses_the_shipped_file_and_it_is_not_stale(fresh, monkeypatch) -> None:
    meta, blob = seed_archive.read_seed_file(seed_archive.shipped_path().read_bytes())
    monkeypatch.setattr(seed_archive, "_build", _no_build)
    env = gymkit.make("us46-default")
    arc = env.config.archive
    assert meta["key"] == seed_archive.seed_key(env.setup, arc["seed"], arc["capacity"], env.n_days)
    assert env.archive_snapshot() == blob and len(env.archive) == 98
    assert not any(fresh.rglob("*.gkseed"))  # the shipped file is not copied into the cache


def test_a_corrupt_or_foreign_seed_file_is_refused() -> None:
    data = seed_archive.shipped_path().read_bytes()
    for bad in (data[:-1], data[:-9] + b"\x00" * 9, b"PK\x03\x04" + data[4:], data[:20]):
        with pytest.raises(ValueError, match="seed file"):
            seed_archive.read_seed_file(bad)


@pytest.mark.slow
def test_evaluated_seed_gives_the_shipped_bytes_and_the_same_cards(fresh, monkeypatch,
                                                                   tmp_path_factory) -> None:
    """Regenerating writes the shipped file's bytes; cards (R8/R9 included) are identical."""
    shipped = gymkit.make("us46-default")
    out = tmp_path_factory.mktemp("regen") / "seed.gkseed"
    monkeypatch.setenv("GYMKIT_SEED_ARCHIVE", "evaluate")
    seed_archive.clear_seed_cache()
    assert seed_archive.regenerate(out).read_bytes() == seed_archive.shipped_path().read_bytes()
    evaluated = gymkit.make("us46-default")
    assert evaluated.archive_snapshot() == shipped.archive_snapshot()
    a, b = shipped.score_group(ANSWERS), evaluated.score_group(ANSWERS)
    for ca, cb in zip(a, b, strict=True):
        assert ca.to_dict(timings=False) == cb.to_dict(timings=False)
    # the archive decides R8/R9 here: Alpha#101 is in it (negative), a fresh answer is not
    assert a[2].metrics["novelty"]["in_archive"] and a[2].channels["novelty_syntax"] < 0
    assert a[2].channels["novelty_pnl"] < 0 < a[1].channels["novelty_syntax"]


def test_a_user_market_is_seeded_once_then_read_from_disk(fresh, monkeypatch) -> None:
    market = default_market().take_rows(slice(0, 1400))
    first = gymkit.make("us46-default", market=market)
    (path,) = fresh.joinpath("seed").glob("*.gkseed")
    _, blob = seed_archive.read_seed_file(path.read_bytes())
    assert blob == first.archive_snapshot() and len(first.archive) > 50
    seed_archive.clear_seed_cache()  # as a new process would start
    monkeypatch.setattr(seed_archive, "_build", _no_build)
    second = gymkit.make("us46-default", market=market)
    assert second.archive_snapshot() == blob
    card = second.score(ANSWERS[0]).to_dict(timings=False)
    assert card == first.score(ANSWERS[0]).to_dict(timings=False)
    # a torn cache file is ignored (and rewritten), never trusted
    monkeypatch.undo()
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(fresh))
    path.write_bytes(path.read_bytes()[:-100])
    seed_archive.clear_seed_cache()
    third = gymkit.make("us46-default", market=market)
    assert third.archive_snapshot() == blob and seed_archive.read_seed_file(path.read_bytes())[1] == blob


def test_the_disk_key_follows_code_and_inputs(fresh, monkeypatch) -> None:
    key = "k" * 64
    before = seed_archive.disk_path(key)
    assert before.parent == fresh / "seed" and seed_archive.disk_path("j" * 64) != before
    monkeypatch.setattr(seed_archive, "_code_digest", lambda: "an-upgrade")
    assert seed_archive.disk_path(key) != before
