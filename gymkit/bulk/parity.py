"""The parity gate of the torch path against the CPU (Numba) scorer (issue 26).

:func:`compare_arrays` compares one formula's torch values with ``gymkit.dsl.evaluate``:
NaN masks must be IDENTICAL and values BIT-IDENTICAL.  Every operator qualifies: ``log``
and ``power`` / ``signed_power`` off their fast paths give glibc's bits on any device
(:mod:`gymkit.bulk.libm`), the rest replay the Numba arithmetic step for step.
:func:`worst` names the worst formula.  ``REL_TOL`` remains for callers that compare
derived statistics with ``exact=False``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["REL_TOL", "Mismatch", "compare_arrays", "worst"]

REL_TOL = 1e-12
"""Tolerance of a comparison made with ``exact=False`` (relative, floor 1)."""

@dataclass(frozen=True, slots=True)
class Mismatch:
    """One formula's comparison: mask cells that differ, value cells that differ, the
    largest absolute and relative (floor 1) differences, and whether it passes."""

    formula: str
    mask_cells: int
    value_cells: int
    max_abs: float
    max_rel: float
    exact_required: bool
    ok: bool


def compare_arrays(formula: str, ref: np.ndarray, got: np.ndarray, exact: bool) -> Mismatch:
    """Compare one formula's CPU values ``ref`` with the torch values ``got`` (both (T, N))."""
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    m_ref, m_got = np.isnan(ref), np.isnan(got)
    mask_cells = int((m_ref != m_got).sum())
    both = ~m_ref & ~m_got
    a, b = ref[both], got[both]
    diff_bits = a.view(np.int64) != b.view(np.int64)
    d = np.abs(a - b)
    max_abs = float(d.max()) if d.size else 0.0
    rel = d / np.maximum(1.0, np.abs(a)) if d.size else d
    max_rel = float(rel.max()) if d.size else 0.0
    ok = mask_cells == 0 and (not diff_bits.any() if exact else max_rel <= REL_TOL)
    return Mismatch(formula, mask_cells, int(diff_bits.sum()), max_abs, max_rel, exact, ok)


def worst(results: Sequence[Mismatch]) -> Mismatch | None:
    """The failing comparison with the most differing mask cells, then the largest relative
    difference; None if every comparison passes."""
    bad = [r for r in results if not r.ok]
    if not bad:
        return None
    return max(bad, key=lambda r: (r.mask_cells, r.max_rel, r.value_cells))
