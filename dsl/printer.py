"""``to_text``: print an AST as DSL text with the fewest parentheses that parse back to it.

``parse(to_text(e)) == e`` for every AST within the limits. Canonical lower-case operator
names are printed; infix operators use their registry symbol and precedence. Three
printing rules mirror the parser's literal rules:

- a negative literal prints as ``-2``; it is parenthesised as the base of ``^`` and as
  the operand of unary minus (``-(-2)``), and ``neg(Num(2))`` prints as ``-(2)`` so that
  the minus does not fold into the literal;
- integral literals print without a fraction (``5``), except ``-0.0`` and the second
  argument of element-wise ``min``/``max``, which print as ``5.0`` so that they do not
  turn into the paper's ``ts_min``/``ts_max`` window form;
- windows print as integers and levels by name.
"""

from __future__ import annotations

import math

from .ast import Call, Field, Level, Node, Num, Window
from .operators import (
    OPERATORS,
    PREC_ATOM,
    PREC_OR,
    PREC_POWER,
    PREC_TERNARY,
    PREC_UNARY,
    TS_FORM_OF,
)


def format_number(value: float, *, force_fraction: bool = False) -> str:
    """Shortest text that parses back to exactly ``value`` (finite floats only)."""
    if (value.is_integer() and abs(value) < 1e15 and not force_fraction
            and not (value == 0.0 and math.copysign(1.0, value) < 0)):
        return str(int(value))
    return repr(value)


def _num(node: Num, force_fraction: bool = False) -> tuple[str, int]:
    text = format_number(node.value, force_fraction=force_fraction)
    return text, (PREC_UNARY if text.startswith("-") else PREC_ATOM)


def _wrap(part: tuple[str, int], minimum: int) -> str:
    text, prec = part
    return text if prec >= minimum else f"({text})"


Memo = dict[int, tuple[Node, tuple[str, int]]]
"""id(call) -> (the call, its (text, precedence)); the node is kept so its id stays unique."""


def _print(node: Node, memo: Memo | None = None) -> tuple[str, int]:
    """(text, precedence of its outermost construct); ``memo`` caches calls' results."""
    kind = type(node)
    if kind is Num:
        return _num(node)
    if kind is Field or kind is Level:
        return node.name, PREC_ATOM
    if kind is Window:
        return str(node.days), PREC_ATOM
    if kind is not Call:
        raise TypeError(f"not a DSL node: {node!r}")
    if memo is not None:
        hit = memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        part = _print_call(node, memo)
        memo[id(node)] = (node, part)
        return part
    return _print_call(node, None)


def _print_call(node: Call, memo: Memo | None) -> tuple[str, int]:
    op = node.op
    spec = OPERATORS[op]
    args = node.args
    if spec.infix is None:
        if op in TS_FORM_OF and type(args[1]) is Num:
            parts = [_print(args[0], memo)[0], _num(args[1], force_fraction=True)[0]]
        else:
            parts = [_print(a, memo)[0] for a in args]
        return f"{op}({', '.join(parts)})", PREC_ATOM
    prec = spec.precedence
    if op == "neg":
        operand = args[0]
        if type(operand) is Num:
            return f"-({_num(operand)[0]})", PREC_UNARY
        text = _wrap(_print(operand, memo), PREC_UNARY)
        return ("- " if text.startswith("-") else "-") + text, PREC_UNARY
    if op == "where":
        cond = _wrap(_print(args[0], memo), PREC_OR)
        return (f"{cond} ? {_print(args[1], memo)[0]} : {_print(args[2], memo)[0]}",
                PREC_TERNARY)
    left, right = _print(args[0], memo), _print(args[1], memo)
    if spec.assoc == "right":  # power: atom ^ unary
        return f"{_wrap(left, PREC_ATOM)}{spec.infix}{_wrap(right, PREC_UNARY)}", PREC_POWER
    return f"{_wrap(left, prec)} {spec.infix} {_wrap(right, prec + 1)}", prec


def to_text(expr: Node) -> str:
    """Print ``expr`` as DSL text; ``parse(to_text(expr)) == expr``."""
    return _print(expr)[0]


def memo_text(expr: Node, memo: Memo) -> str:
    """``to_text(expr)``, reusing and filling ``memo`` for its sub-calls.

    Callers that print many overlapping sub-trees (canonical's operand sorting) keep one
    memo for the lifetime of those trees, so each call is printed once.
    """
    return _print(expr, memo)[0]


def _outer_precedence(node: Node) -> int:
    """The precedence ``_print(node)`` reports, without printing the children."""
    kind = type(node)
    if kind is Call:
        spec = OPERATORS[node.op]
        return PREC_ATOM if spec.infix is None else spec.precedence
    if kind is Num:
        return _num(node)[1]
    return PREC_ATOM


def text_prefix(expr: Node) -> str:
    """A non-empty prefix of ``to_text(expr)``, found without printing sub-trees.

    Follows the leftmost operand of infix operators down to the first call name, field or
    literal; lets callers order two texts cheaply when their prefixes already differ.
    """
    node = expr
    while type(node) is Call:
        op = node.op
        spec = OPERATORS[op]
        if spec.infix is None:
            return op + "("
        if op == "neg":
            return "-"
        if op == "where":
            minimum = PREC_OR
        elif spec.assoc == "right":
            minimum = PREC_ATOM
        else:
            minimum = spec.precedence
        node = node.args[0]
        if _outer_precedence(node) < minimum:
            return "("
    return _print(node)[0]
