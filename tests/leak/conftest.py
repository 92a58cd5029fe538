"""Shared fixtures of the leak/canary suite: one audit target of ``us46-default`` per session,
the whole audit run on it once (the per-check tests read its results), and helpers to inject
a test-only operator into the registry."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.audit.checks import run_checks
from gymkit.audit.target import AuditTarget, build_target
from gymkit.dsl.kernels import KERNELS
from gymkit.dsl.operators import EXPR, LB_ADD_D, OPERATORS, WINDOW, OpSpec


@pytest.fixture(scope="session")
def target() -> AuditTarget:
    """The default environment on the embedded market (built once)."""
    return build_target("us46-default")


@pytest.fixture(scope="session")
def audit(target: AuditTarget) -> dict:
    """Every audit check run once on ``target``: name -> CheckResult."""
    return {r.name: r for r in run_checks(target)}


@pytest.fixture
def cheap_target(target: AuditTarget) -> AuditTarget:
    """The default configuration with an unseeded archive: environments build in ~1 s (for
    the deliberately broken variants, which each need a fresh environment)."""
    return AuditTarget(target.config.replace(archive={"seed": "none"}), target.market,
                       target.spec)


def lead_kernel(x: np.ndarray, d: int) -> np.ndarray:
    """A LOOK-AHEAD kernel: x[t + d] (shift by -d).  Test-only."""
    out = np.full_like(np.asarray(x, dtype=np.float64), np.nan)
    out[:-d] = np.asarray(x)[d:]
    return out


def lag_kernel(x: np.ndarray, d: int) -> np.ndarray:
    """x[t - d]: backward-looking, used to test an UNDER-declared lookback.  Test-only."""
    out = np.full_like(np.asarray(x, dtype=np.float64), np.nan)
    out[d:] = np.asarray(x)[:-d]
    return out


def inject_operator(monkeypatch: pytest.MonkeyPatch, name: str, kernel, lookback: str = LB_ADD_D,
                    args: tuple[str, ...] = (EXPR, WINDOW)) -> None:
    """Register a test-only operator (registry row + kernel) for the duration of a test."""
    monkeypatch.setitem(OPERATORS, name, OpSpec(name, args, "lag", lookback))
    monkeypatch.setitem(KERNELS, name, kernel)


@pytest.fixture(autouse=True)
def _no_poisoned_caches_after_a_broken_variant():
    """Broken variants monkeypatch the split, the fill or the evaluator cache; the process-wide
    caches (window contexts, sub-expression values) would keep what they built under the patch
    and poison later tests in the same process.  Clear them after every test here."""
    yield
    from gymkit.dsl.cache import DEFAULT_CACHE
    from gymkit.seed_archive import clear_seed_cache
    from gymkit.verifiers import clear_context_cache

    clear_context_cache()
    clear_seed_cache()
    DEFAULT_CACHE.clear()
