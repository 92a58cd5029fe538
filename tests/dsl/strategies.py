"""Hypothesis strategies: random ASTs of the DSL built from the registry."""

from __future__ import annotations

from hypothesis import strategies as st

from gymkit.dsl.ast import Call, Field, Level, Num, Window
from gymkit.dsl.operators import EXPR, FIELDS, LEVELS, OPERATORS, WINDOW

numbers = st.one_of(
    st.integers(-20, 300).map(float),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, -0.5, 1e-7, 2.5e20, -0.0, 0.001]),
).map(Num)
leaves = st.one_of(
    numbers,
    st.sampled_from(sorted(FIELDS)).map(Field),
    st.integers(1, 30).map(lambda d: Call("adv", (Window(d),))),
)
windows = st.integers(1, 30).map(Window)
levels = st.sampled_from(LEVELS).map(Level)
OPS = sorted(name for name in OPERATORS if name != "adv")


def _calls(children):
    def build(op):
        kinds = OPERATORS[op].args
        parts = [children if k == EXPR else windows if k == WINDOW else levels for k in kinds]
        return st.tuples(*parts).map(lambda args: Call(op, args))
    return st.sampled_from(OPS).flatmap(build)


def exprs(max_leaves: int = 10):
    """Random expressions (may exceed the lookback/depth limits: filter where needed)."""
    return st.recursive(leaves, _calls, max_leaves=max_leaves)
