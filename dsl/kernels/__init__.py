"""Numba kernels of the DSL, by family: one per operator, every one looking only backward.

=================  =====================================================================
module             holds
=================  =====================================================================
``elementwise``    one scalar function per operator, made a broadcasting ufunc
``ranking``        the project's one ranking routine (:func:`rank_rows2`), rank, ts_rank
``cross_section``  scale, group_neutralize
``rolling``        the other time-series operators: one row-major engine per statistic
``plumbing``       compile options, scalar helpers, input checks, the public wrappers
=================  =====================================================================

What each operator computes is its row of the operator table
(:data:`gymkit.dsl.operators.OPERATORS`, field ``doc``); the row's ``kernel`` field names
the function here (``"rolling.ts_sum"``).  :data:`KERNELS` maps every canonical operator
name to its kernel and :data:`ELEMENTWISE` names the kernels that take scalars; both are
read from the table.  Every kernel's public home is this package (``__module__``), so
``gymkit.dsl.kernels.ts_sum`` and the family module's name are one object.

Why our own kernels instead of pandas/bottleneck: one pass per node in compiled code,
bit-for-bit deterministic results, and semantics fixed by the table (DESIGN §3) rather
than inherited from a library version.
"""

from __future__ import annotations

from collections.abc import Callable

from gymkit.dsl.operators import OPERATORS

from . import cross_section, elementwise, ranking, rolling
from .cross_section import group_neutralize, scale
from .elementwise import _power_any as _power_any  # the general pow paths, for tests
from .elementwise import _signed_power_any as _signed_power_any
from .elementwise import (
    abs_,
    add,
    and_,
    div,
    eq,
    ge,
    gt,
    le,
    log,
    lt,
    max_,
    min_,
    mul,
    ne,
    neg,
    or_,
    power,
    sign,
    signed_power,
    sqrt,
    sub,
    where,
)
from .plumbing import read_only
from .ranking import KEY_BLOCK, count_le_keys, rank, rank_rows2, ts_rank
from .rolling import (
    adv,
    delay,
    ts_argmax,
    ts_argmin,
    ts_corr,
    ts_cov,
    ts_decay_linear,
    ts_delta,
    ts_ema,
    ts_kurt,
    ts_max,
    ts_mean,
    ts_min,
    ts_product,
    ts_skew,
    ts_slope,
    ts_std,
    ts_sum,
)

__all__ = [
    "ELEMENTWISE", "KERNELS", "KEY_BLOCK", "abs_", "add", "adv", "and_", "count_le_keys", "delay",
    "div", "eq", "ge", "group_neutralize", "gt", "le", "log", "lt", "max_", "min_", "mul", "ne",
    "neg", "or_", "power", "rank", "rank_rows2", "read_only", "scale", "sign",
    "signed_power", "sqrt", "sub", "ts_argmax", "ts_argmin", "ts_corr", "ts_cov",
    "ts_decay_linear", "ts_delta", "ts_ema", "ts_kurt", "ts_max", "ts_mean", "ts_min",
    "ts_product", "ts_rank", "ts_skew", "ts_slope", "ts_std", "ts_sum", "where",
]

_FAMILIES = {"elementwise": elementwise, "ranking": ranking, "cross_section": cross_section,
             "rolling": rolling}


def _resolve(ref: str) -> Callable:
    """The kernel an operator row names, ``"family.function"``; a one-line error if none."""
    family, _, name = ref.partition(".")
    module = _FAMILIES.get(family)
    fn = getattr(module, name, None) if module is not None else None
    if not callable(fn):
        raise ImportError(f"operator table: kernel {ref!r} is not a function of "
                          f"gymkit.dsl.kernels.{family}")
    fn.__module__ = __name__  # the public home (see the module doc)
    return fn


KERNELS: dict[str, Callable] = {name: _resolve(spec.kernel) for name, spec in OPERATORS.items()}
"""Canonical operator name -> kernel (from the table's ``kernel`` column)."""

ELEMENTWISE: frozenset[str] = frozenset(
    name for name, spec in OPERATORS.items() if spec.kernel.startswith("elementwise."))
"""Kernels that accept scalars for any operand (and return a scalar for all-scalar input)."""
