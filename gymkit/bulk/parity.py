"""The parity gate of the torch path against the CPU (Numba) scorer (issue 26).

:func:`compare_values` compares each formula's torch values with ``gymkit.dsl.evaluate``:
NaN masks must be IDENTICAL, and values must be BIT-IDENTICAL unless the formula holds an
operator whose library result may differ by an ulp (``log``; ``power`` / ``signed_power``
off their fast paths, whose exponent is a literal 2, 0.5 or 1): those are held to
``|a - b| <= REL_TOL · max(1, |a|)``.  :func:`worst` names the worst formula.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gymkit.dsl.ast import Call, Node, Num
from gymkit.dsl.canonical import exact_form

__all__ = ["REL_TOL", "Mismatch", "compare_arrays", "inexact_ops", "worst"]

REL_TOL = 1e-12
"""Value tolerance of formulas with a libm-dependent operator (relative, floor 1)."""

_FAST = (2.0, 0.5, 1.0)


def inexact_ops(node: Node) -> set[str]:
    """Operators of ``node`` (in exact form) whose torch and libm results may differ by an ulp."""
    found: set[str] = set()

    def walk(n: Node) -> None:
        if not isinstance(n, Call):
            return
        if n.op == "log":
            found.add("log")
        if n.op in ("power", "signed_power"):
            b = n.args[1]
            if not (isinstance(b, Num) and b.value in _FAST) or isinstance(n.args[0], Num):
                found.add(n.op)
        for a in n.args:
            walk(a)

    walk(exact_form(node))
    return found


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
