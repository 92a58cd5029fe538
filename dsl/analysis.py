"""Structural facts about a formula: lookback, size, fields, motifs (R10 needs the last).

Definitions:

- ``lookback``: DESIGN §3 (fields 0, returns 1, adv(d) d; delay/ts_delta add d, other
  windows add d - 1, several children take the max).
- ``node_count``: number of Call, Field and Num nodes; Window and Level arguments are
  parameters of their call and are not counted (``ts_mean(close, 5)`` has 2 nodes,
  ``adv(20)`` has 1).
- ``fields_used``: panel fields the formula reads; ``adv(d)`` reads close and volume.
- ``motifs``: operator families (the registry's ``family`` column) and data families
  (price / volume / fundamental). ``is_price_only``: reads no volume-derived data (no
  ``volume``, no ``adv``) and no ``cap``. ``is_single_motif``: at most one *signal* family
  (every family except the glue families arithmetic, transform, rank, scale, comparison,
  logic) and at most one data family — e.g. ``rank(ts_delta(close, 5))`` is single-motif,
  ``ts_corr(close, volume, 10)`` is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ast import Call, Field, Level, Node, Num, Window
from .operators import FIELDS, OPERATORS, combine_lookback

GLUE_FAMILIES = frozenset({"arithmetic", "transform", "rank", "scale", "comparison", "logic"})
DATA_FAMILIES = frozenset({"price", "volume", "fundamental"})
PRICE_FIELDS = frozenset(name for name, spec in FIELDS.items() if spec.family == "price")


def lookback(expr: Node | str) -> int:
    """Sessions of history before day t that ``expr`` (a tree, or formula text, parsed) needs
    at day t."""
    if isinstance(expr, str):  # as evaluate() and canonical() take text
        from .parser import parse

        expr = parse(expr)
    kind = type(expr)
    if kind is Num or kind is Window or kind is Level:
        return 0
    if kind is Field:
        return FIELDS[expr.name].lookback
    window = 0
    children = []
    for a in expr.args:
        if type(a) is Window:
            window = a.days
        elif type(a) is not Level:
            children.append(lookback(a))
    return combine_lookback(OPERATORS[expr.op], children, window)


def node_count(expr: Node) -> int:
    """Number of Call, Field and Num nodes (Window/Level arguments not counted)."""
    if type(expr) is Call:
        return 1 + sum(node_count(a) for a in expr.args)
    return 0 if type(expr) in (Window, Level) else 1


def depth(expr: Node) -> int:
    """AST depth counting Call/Field/Num levels (a leaf is 1), as the depth limit does."""
    if type(expr) is Call:
        return 1 + max((depth(a) for a in expr.args if type(a) not in (Window, Level)),
                       default=0)
    return 0 if type(expr) in (Window, Level) else 1


def _walk(expr: Node):
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if type(node) is Call:
            stack.extend(node.args)


def fields_used(expr: Node) -> frozenset[str]:
    """Panel fields ``expr`` reads (adv(d) reads close and volume)."""
    out: set[str] = set()
    for node in _walk(expr):
        if type(node) is Field:
            out.add(node.name)
        elif type(node) is Call and node.op == "adv":
            out.update(("close", "volume"))
    return frozenset(out)


def levels_used(expr: Node) -> frozenset[str]:
    """Group levels ``expr`` needs (``sector``/``industry``)."""
    return frozenset(n.name for n in _walk(expr) if type(n) is Level)


@dataclass(frozen=True, slots=True)
class Motifs:
    """What a formula is built from, for the motif guard (R10)."""

    families: frozenset[str]        # operator families used (registry 'family' column)
    data: frozenset[str]            # data families: price / volume / fundamental
    fields: frozenset[str]          # fields_used(expr)
    is_price_only: bool
    is_single_motif: bool


def motifs(expr: Node) -> Motifs:
    """Operator families, data families and the R10 flags of ``expr`` (see module doc)."""
    families: set[str] = set()
    data: set[str] = set()
    for node in _walk(expr):
        if type(node) is Call:
            if node.op == "adv":
                data.add("volume")
            else:
                families.add(OPERATORS[node.op].family)
        elif type(node) is Field:
            data.add(FIELDS[node.name].family)
    signal = families - GLUE_FAMILIES
    return Motifs(
        families=frozenset(families),
        data=frozenset(data),
        fields=fields_used(expr),
        is_price_only=data <= {"price"},
        is_single_motif=len(signal) <= 1 and len(data) <= 1,
    )
