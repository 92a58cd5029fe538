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


def _print(node: Node) -> tuple[str, int]:
    """(text, precedence of its outermost construct)."""
    kind = type(node)
    if kind is Num:
        return _num(node)
    if kind is Field or kind is Level:
        return node.name, PREC_ATOM
    if kind is Window:
        return str(node.days), PREC_ATOM
    if kind is not Call:
        raise TypeError(f"not a DSL node: {node!r}")
    spec = OPERATORS[node.op]
    args = node.args
    if spec.infix is None:
        if node.op in TS_FORM_OF and type(args[1]) is Num:
            parts = [_print(args[0])[0], _num(args[1], force_fraction=True)[0]]
        else:
            parts = [_print(a)[0] for a in args]
        return f"{node.op}({', '.join(parts)})", PREC_ATOM
    prec = spec.precedence
    if node.op == "neg":
        operand = args[0]
        if type(operand) is Num:
            return f"-({_num(operand)[0]})", PREC_UNARY
        text = _wrap(_print(operand), PREC_UNARY)
        return ("- " if text.startswith("-") else "-") + text, PREC_UNARY
    if node.op == "where":
        cond = _wrap(_print(args[0]), PREC_OR)
        return f"{cond} ? {_print(args[1])[0]} : {_print(args[2])[0]}", PREC_TERNARY
    left, right = _print(args[0]), _print(args[1])
    if spec.assoc == "right":  # power: atom ^ unary
        return f"{_wrap(left, PREC_ATOM)}{spec.infix}{_wrap(right, PREC_UNARY)}", PREC_POWER
    return f"{_wrap(left, prec)} {spec.infix} {_wrap(right, prec + 1)}", prec


def to_text(expr: Node) -> str:
    """Print ``expr`` as DSL text; ``parse(to_text(expr)) == expr``."""
    return _print(expr)[0]
