"""The novelty archive's seed: the 101 Formulaic Alphas scored on the train window.

Each formula of ``dsl/alpha101.tsv`` (file order) goes through the same layers as an answer
(:mod:`gymkit.scoring`): parsed against the train panel's fields and groups, evaluated on the
train panel, backtested in train mode, and kept when the gate passes (a book that trades at
least the turnover floor and holds a position).  Its bucketed canonical form and daily net
train P&L enter the archive as a *pinned* entry; a form already present is skipped.  On the
default market 98 of the 101 alphas are kept (Alpha#7 trades below the floor, #96 is empty:
its nested 3-day correlations are NaN somewhere in every window, #97 trades 1.7% a day).

Seeding costs a few seconds, so the result is cached in-process per (data fingerprint,
environment fingerprint) as snapshot bytes; every environment restores its own private copy,
so commits to one environment never reach another or the cache.
"""

from __future__ import annotations

import csv
import threading
from importlib import resources

from gymkit.dsl.cache import EvalCache
from gymkit.verifiers.archive import NoveltyArchive

from .scoring import ScoringSetup, gate_book, gate_text, run_oracle

__all__ = ["alpha101_formulas", "clear_seed_cache", "seeded_archive"]

_CACHE: dict[tuple[str, str], bytes] = {}
_LOCK = threading.Lock()
_SEED_CACHE_BYTES = 64 * 2**20


def alpha101_formulas() -> list[tuple[str, str]]:
    """Return ``(id, formula)`` of the 101-alpha corpus in file order."""
    text = resources.files("gymkit.dsl").joinpath("alpha101.tsv").read_text(encoding="utf-8")
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    return [(r["id"], r["formula"]) for r in rows]


def _build(setup: ScoringSetup, seed: str, capacity: int, n_days: int) -> NoveltyArchive:
    archive = NoveltyArchive(n_days, capacity)
    if seed == "none":
        return archive
    # A private evaluator cache: seeding shares sub-trees among the 101 alphas without
    # flooding the scoring cache, and is dropped afterwards.
    local = ScoringSetup(setup.train, setup.split, setup.costs, setup.cpcv, setup.burn_in,
                         setup.params, EvalCache(_SEED_CACHE_BYTES), setup.fields, setup.levels)
    for _, formula in alpha101_formulas():
        if len(archive) >= capacity:
            break
        st = gate_text(f"<alpha>{formula}</alpha>", local)
        run_oracle(st, local)
        gate_book(st, local)
        if st.valid and st.bt is not None and st.canonical is not None:
            archive.add(st.canonical, st.bt.net, pinned=True)
    return archive


def seeded_archive(setup: ScoringSetup, seed: str, capacity: int, n_days: int,
                   data_fingerprint: str, env_fingerprint: str) -> NoveltyArchive:
    """Return a fresh archive seeded from ``seed`` ('alpha101' or 'none'); cached (module doc)."""
    key = (data_fingerprint, env_fingerprint)
    with _LOCK:
        blob = _CACHE.get(key)
    if blob is None:
        blob = _build(setup, seed, capacity, n_days).snapshot()
        with _LOCK:
            _CACHE.setdefault(key, blob)
    return NoveltyArchive.restore(blob)


def clear_seed_cache() -> None:
    """Forget every cached seed archive (tests)."""
    with _LOCK:
        _CACHE.clear()
