"""Canonical forms of formulas: ``canonical_key`` (exact identity) and ``canonical`` (novelty).

``canonical_key(expr)`` is a string such that two sub-trees with the same key evaluate to
bit-identical arrays on every panel; the evaluator caches sub-expressions under it. It
therefore only applies rewrites that are exact in IEEE arithmetic:

- operands of commutative binary operators (add mul min max eq ne and or) are sorted
  by their own key text (IEEE ``+``/``*`` are exactly commutative);
- sub-trees made only of literals and correctly-rounded operations (add sub mul div neg,
  comparisons, ``&&``/``||``, ternary, abs sign sqrt min max) fold to one literal when the
  result is finite (never log/power/signed_power, whose library results may differ by an
  ulp; never cross-sectional or time-series operators);
- ``-(-x)`` collapses to ``x``.

No re-association, no identities (``x * 1`` stays). ``-0.0`` and ``0.0`` keep distinct keys.

``canonical(expr)`` is the coarser form used by novelty. On top of the above it collapses
idempotent wrappers (``rank(rank(x))`` -> ``rank(x)``, also scale sign abs), applies the
identities ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` -> ``x`` and ``-1 * x``, ``0 - x`` ->
``-x``, folds log/power/sqrt/signed_power of literals too, and buckets every window to the
nearest of 5, 21, 63, 126, 252; a window exactly halfway between two buckets (13, 42, 189)
goes to the SMALLER one. Its result may exceed the lookback limit (windows grow): re-parse
canonical text with ``parse(text, limits=False)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .ast import Call, Expr, Level, Node, Num, Window
from .operators import OPERATORS
from .printer import to_text

BUCKETS = (5, 21, 63, 126, 252)


def bucket(days: int) -> int:
    """Nearest window bucket; ties go to the smaller bucket."""
    return min(BUCKETS, key=lambda b: (abs(b - days), b))


def _truth(x: float) -> float:
    return 1.0 if x else 0.0


def _div(a: float, b: float) -> float:
    return a / b if b != 0.0 else math.nan


def _sqrt(a: float) -> float:
    return math.sqrt(a) if a >= 0.0 else math.nan


def _sign(a: float) -> float:
    return 0.0 if a == 0.0 else math.copysign(1.0, a)


def _signed_zero_guard(f: Callable[[float, float], float], a: float, b: float) -> float:
    """min/max of 0.0 and -0.0 depends on operand order: leave such calls unfolded (nan)."""
    if a == b and math.copysign(1.0, a) != math.copysign(1.0, b):
        return math.nan
    return f(a, b)


# Correctly rounded, hence bit-identical to the numpy kernels.
_EXACT: dict[str, Callable[..., float]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _div,
    "neg": lambda a: -a,
    "lt": lambda a, b: _truth(a < b),
    "le": lambda a, b: _truth(a <= b),
    "gt": lambda a, b: _truth(a > b),
    "ge": lambda a, b: _truth(a >= b),
    "eq": lambda a, b: _truth(a == b),
    "ne": lambda a, b: _truth(a != b),
    "and": lambda a, b: _truth(a != 0.0 and b != 0.0),
    "or": lambda a, b: _truth(a != 0.0 or b != 0.0),
    "where": lambda c, a, b: a if c != 0.0 else b,
    "abs": abs,
    "sign": _sign,
    "sqrt": _sqrt,
    "min": lambda a, b: _signed_zero_guard(min, a, b),
    "max": lambda a, b: _signed_zero_guard(max, a, b),
}


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except (OverflowError, ValueError):
        return math.nan


# Only for the novelty form: values close enough, not bit-exact.
_APPROX: dict[str, Callable[..., float]] = {
    **_EXACT,
    "log": lambda a: math.log(a) if a > 0.0 else math.nan,
    "power": _pow,
    "signed_power": lambda a, b: _sign(a) * _pow(abs(a), b),
}


class _Normaliser:
    """Bottom-up rewriting with memoised key texts of the nodes it builds."""

    def __init__(self, novelty: bool) -> None:
        self.novelty = novelty
        self.folds = _APPROX if novelty else _EXACT
        self.texts: dict[int, str] = {}

    def text(self, node: Node) -> str:
        key = id(node)
        text = self.texts.get(key)
        if text is None:
            text = to_text(node)
            self.texts[key] = text
        return text

    def visit(self, node: Node) -> Node:
        if type(node) is Call:
            return self.make(node.op, tuple(self.visit(a) for a in node.args))
        if type(node) is Window and self.novelty:
            return Window(bucket(node.days))
        return node

    def make(self, op: str, args: tuple[Node, ...]) -> Expr:
        """Build op(args) from canonical args, applying every rule at the top."""
        if all(type(a) is Num for a in args):
            fold = self.folds.get(op)
            if fold is not None:
                value = float(fold(*(a.value for a in args)))
                if math.isfinite(value):
                    return Num(value)
        if op == "neg" and type(args[0]) is Call and args[0].op == "neg":
            return args[0].args[0]
        spec = OPERATORS[op]
        if self.novelty:
            simpler = self.identity(op, args)
            if simpler is not None:
                return simpler
            if spec.idempotent and type(args[0]) is Call and args[0].op == op:
                return args[0]
        if spec.commutative:
            a, b = args
            if self.text(b) < self.text(a):
                args = (b, a)
        return Call(op, args)

    def identity(self, op: str, args: tuple[Node, ...]) -> Expr | None:
        if len(args) != 2 or type(args[0]) is Level or type(args[1]) in (Window, Level):
            return None
        a, b = args
        av = a.value if type(a) is Num else None
        bv = b.value if type(b) is Num else None
        if op == "add":
            return b if av == 0.0 else a if bv == 0.0 else None
        if op == "sub":
            return a if bv == 0.0 else self.make("neg", (b,)) if av == 0.0 else None
        if op == "mul":
            if av == 1.0 or bv == 1.0:
                return b if av == 1.0 else a
            if av == -1.0 or bv == -1.0:
                return self.make("neg", (b if av == -1.0 else a,))
            return None
        if op == "div":
            return a if bv == 1.0 else None
        return None


def canonical_key(expr: Node) -> str:
    """Exact-identity key: equal keys evaluate to bit-identical arrays (see module doc)."""
    return to_text(_Normaliser(novelty=False).visit(expr))


def exact_form(expr: Node) -> Node:
    """The AST whose text is ``canonical_key(expr)``."""
    return _Normaliser(novelty=False).visit(expr)


def canonical(expr: Node) -> Node:
    """Novelty form: canonical_key rules plus identities, idempotent wrappers, window buckets.

    Idempotent: ``canonical(canonical(e)) == canonical(e)``.
    """
    return _Normaliser(novelty=True).visit(expr)
