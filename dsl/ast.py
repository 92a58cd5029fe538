"""Immutable, hashable AST of the alpha DSL.

Every operator, infix ones included, is a :class:`Call` whose ``op`` is the
canonical name of a row of the operator registry (``gymkit.dsl.operators``):
``a + b`` is ``Call("add", (a, b))``, ``-x`` is ``Call("neg", (x,))``,
``c ? a : b`` is ``Call("where", (c, a, b))``, ``x ^ y`` is ``Call("power", (x, y))``.
Window arguments are :class:`Window` nodes and group levels :class:`Level` nodes,
so the tree alone says what every argument is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True, slots=True)
class Num:
    """A finite numeric literal."""

    value: float


@dataclass(frozen=True, slots=True)
class Field:
    """A panel field: open high low close volume returns vwap cap."""

    name: str


@dataclass(frozen=True, slots=True)
class Window:
    """An integer window argument of a time-series operator, 1..252."""

    days: int


@dataclass(frozen=True, slots=True)
class Level:
    """A group level argument of a group operator: ``sector`` or ``industry``."""

    name: str


@dataclass(frozen=True, slots=True)
class Call:
    """An operator applied to its arguments; ``op`` is a canonical registry name."""

    op: str
    args: tuple[Node, ...]


Node: TypeAlias = Num | Field | Window | Level | Call
Expr: TypeAlias = Num | Field | Call
