"""The operator table is the one place an operator's facts live: every view reads it."""

from __future__ import annotations

import pytest

from gymkit.dsl import kernels
from gymkit.dsl.canonical import _APPROX, _EXACT
from gymkit.dsl.operators import (
    EXPR,
    INFIX,
    NAMES,
    OPERATORS,
    RECURSIVE_OPERATORS,
    WINDOW,
)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_row_names_a_kernel_of_its_family_and_says_what_it_computes(name):
    spec = OPERATORS[name]
    family, _, function = spec.kernel.partition(".")
    assert family in ("elementwise", "ranking", "cross_section", "rolling"), spec.kernel
    module = getattr(kernels, family)
    assert kernels.KERNELS[name] is getattr(module, function)
    assert spec.doc and "\n" not in spec.doc and "|" not in spec.doc.replace("|x|", "")
    assert kernels.KERNELS[name].__module__ == "gymkit.dsl.kernels"  # its public home


def test_derived_views_read_the_table():
    assert kernels.ELEMENTWISE == {n for n, s in OPERATORS.items()
                                   if s.kernel.startswith("elementwise.")}
    assert set(_EXACT) == {n for n, s in OPERATORS.items() if s.fold and s.fold_exact}
    assert set(_APPROX) - set(_EXACT) == {"log", "power", "signed_power"}
    assert all(NAMES[a] == s.name for s in OPERATORS.values() for a in s.aliases)
    assert set(INFIX.values()) <= set(OPERATORS)
    assert RECURSIVE_OPERATORS == {"ts_ema": OPERATORS["ts_ema"].recursive}
    assert all(s.args[-1] == WINDOW and s.args[0] == EXPR
               for n, s in OPERATORS.items() if n.startswith("ts_"))


def test_the_audit_reads_the_same_recursive_operators():
    from gymkit.audit import lookahead

    assert lookahead.RECURSIVE_OPERATORS == RECURSIVE_OPERATORS


def test_a_row_naming_a_missing_kernel_is_a_one_line_error():
    with pytest.raises(ImportError, match=r"kernel 'rolling\.ts_nothing' is not a function"):
        kernels._resolve("rolling.ts_nothing")
