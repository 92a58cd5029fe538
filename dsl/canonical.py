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
from operator import is_not

from .ast import Call, Expr, Field, Level, Node, Num, Window
from .operators import OPERATORS
from .printer import Memo, memo_text, text_prefix

BUCKETS = (5, 21, 63, 126, 252)


def bucket(days: int) -> int:
    """Nearest window bucket; ties go to the smaller bucket."""
    return min(BUCKETS, key=lambda b: (abs(b - days), b))


# Constant folds, from the operator table: exact ones for both forms, all for novelty.
_EXACT: dict[str, Callable[..., float]] = {
    name: spec.fold for name, spec in OPERATORS.items() if spec.fold is not None and spec.fold_exact}
_APPROX: dict[str, Callable[..., float]] = {
    name: spec.fold for name, spec in OPERATORS.items() if spec.fold is not None}


# Speed (issue 3): bucketed windows precomputed, and operand texts printed once per node
# through one printer memo per normalisation (each sort used to re-print the subtree).
_IDENTITY_OPS = frozenset({"add", "sub", "mul", "div"})
# Operators no rule can rewrite, except an idempotent wrapper of itself (checked inline):
# not foldable, not neg, no identity, not commutative.
_PLAIN_EXACT = frozenset(
    name for name, spec in OPERATORS.items()
    if name not in _EXACT and name != "neg" and not spec.commutative)
_PLAIN_NOVELTY = frozenset(
    name for name in _PLAIN_EXACT if name not in _APPROX and name not in _IDENTITY_OPS)
_KEEP_EXACT = frozenset({Num, Field, Level, Window})
_KEEP_NOVELTY = frozenset({Num, Field, Level})
_BUCKETED = {days: Window(bucket(days)) for days in range(1, BUCKETS[-1] + 1)}


class _Normaliser:
    """Bottom-up rewriting with memoised key texts of the nodes it builds."""

    __slots__ = ("folds", "keep", "memo", "novelty", "plain")

    def __init__(self, novelty: bool) -> None:
        self.novelty = novelty
        self.folds = _APPROX if novelty else _EXACT
        self.plain = _PLAIN_NOVELTY if novelty else _PLAIN_EXACT
        self.keep = _KEEP_NOVELTY if novelty else _KEEP_EXACT  # leaf types no rule changes
        self.memo: Memo = {}

    def visit(self, node: Node) -> Node:
        kind = type(node)
        if kind is Call:
            return self.call(node)
        if kind is Window and self.novelty and node.days not in BUCKETS:
            window = _BUCKETED.get(node.days)
            return window if window is not None else Window(bucket(node.days))
        return node

    def call(self, node: Call) -> Node:
        """visit() of a call; leaves that stay as they are are not visited (speed)."""
        op = node.op
        args = node.args
        keep = self.keep
        if len(args) == 2:
            a, b = args
            new_a = a if type(a) in keep else self.visit(a)
            new_b = b if type(b) in keep else self.visit(b)
            changed = new_a is not a or new_b is not b
            new = (new_a, new_b) if changed else args
        elif len(args) == 1:
            a = args[0]
            new_a = a if type(a) in keep else self.visit(a)
            changed = new_a is not a
            new = (new_a,) if changed else args
        else:
            new = tuple(map(self.visit, args))
            changed = any(map(is_not, new, args))
        if op not in self.plain or (type(new[0]) is Call and new[0].op == op):
            rewritten = self.rewrite(op, new)
            if rewritten is not None:
                return rewritten
        return Call(op, new) if changed else node  # unchanged: keep the node, no rebuild

    def make(self, op: str, args: tuple[Node, ...]) -> Expr:
        """Build op(args) from canonical args, applying every rule at the top."""
        rewritten = self.rewrite(op, args)
        return Call(op, args) if rewritten is None else rewritten

    def rewrite(self, op: str, args: tuple[Node, ...]) -> Expr | None:
        """op(args) with the rule that applies at the top, or None when it is Call(op, args)."""
        fold = self.folds.get(op)
        if fold is not None:
            for a in args:
                if type(a) is not Num:
                    break
            else:
                value = float(fold(*[a.value for a in args]))
                if math.isfinite(value):
                    return Num(value)
        first = args[0]
        if op == "neg" and type(first) is Call and first.op == "neg":
            return first.args[0]
        spec = OPERATORS[op]
        if self.novelty:
            if op in _IDENTITY_OPS:
                simpler = self.identity(op, args)
                if simpler is not None:
                    return simpler
            if spec.idempotent and type(first) is Call and first.op == op:
                return first
        if spec.commutative:
            a, b = args
            if type(a) is type(b) is Field:
                if b.name < a.name:
                    return Call(op, (b, a))
            elif self.before(b, a):
                return Call(op, (b, a))
        return None

    def before(self, b: Node, a: Node) -> bool:
        """``to_text(b) < to_text(a)``, printing them only when their prefixes tie."""
        pa, pb = text_prefix(a), text_prefix(b)
        n = min(len(pa), len(pb))
        if pa[:n] != pb[:n]:
            return pb[:n] < pa[:n]
        return memo_text(b, self.memo) < memo_text(a, self.memo)

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
    normaliser = _Normaliser(novelty=False)
    return memo_text(normaliser.visit(expr), normaliser.memo)


def exact_form(expr: Node) -> Node:
    """The AST whose text is ``canonical_key(expr)``."""
    return _Normaliser(novelty=False).visit(expr)


def canonical(expr: Node) -> Node:
    """Novelty form: canonical_key rules plus identities, idempotent wrappers, window buckets.

    Idempotent: ``canonical(canonical(e)) == canonical(e)``.
    """
    return _Normaliser(novelty=True).visit(expr)
