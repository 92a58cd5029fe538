"""Hand-written recursive-descent parser of the alpha DSL (DESIGN §3).

The syntax is :data:`GRAMMAR_FILE` (``dsl/grammar.lark``, the spec the lark cross-check
parses with); this parser has one method per rule of it, lowest precedence first::

    ternary : or_ ( "?" ternary ":" ternary )?            -> where(c, a, b)
    or_     : and_ ( "||" and_ )*                          -> or
    and_    : cmp ( "&&" cmp )*                            -> and
    cmp     : add ( ("<"|"<="|">"|">="|"=="|"!=") add )*   -> lt le gt ge eq ne (left-assoc)
    add     : mul ( ("+"|"-") mul )*                       -> add sub
    mul     : unary ( ("*"|"/") unary )*                   -> mul div
    unary   : "-" unary | power                            -> neg
    power   : atom ( "^" unary )?                          -> power (right-assoc)
    atom    : NUMBER | NAME | NAME "(" args ")" | "(" ternary ")"

Literal folding: a minus written directly before a number literal that is not the base of
``^`` is part of the literal (``-3`` -> Num(-3.0), ``-2^2`` -> neg(power(2, 2)),
``-(3)`` -> neg(Num(3.0))). The printer relies on exactly this rule.

Argument slots follow the registry row: ``expr`` slots take any expression, ``window``
slots an integer literal 1..252 (digits only, optionally parenthesised; a decimal literal
>= 1 is floored, as the paper says of its windows: ``ts_sum(x, 9.9)`` is ``ts_sum(x, 9)``
and prints so), ``level`` slots a
bare group-level name. ``min``/``max`` with a digits-only second argument >= 1 are the
paper's ts_min/ts_max (#29); otherwise they are element-wise. ``adv20`` is ``adv(20)``.

Names are case-insensitive. Nothing in the text is ever executed or used as an attribute
name: identifiers are only keys into the registry's dicts.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Callable, Collection
from pathlib import Path

from .ast import Call, Expr, Field, Level, Num, Window
from .errors import DSLError, excerpt
from .lexer import NAME_START, NUM_START, Token, describe, split, tokenize
from .limits import MAX_DEPTH, MAX_LOOKBACK, MAX_NESTING, MAX_WINDOW
from .operators import (
    EXPR,
    FIELDS,
    INFIX,
    LB_MAX,
    LEVEL,
    LEVEL_NAMES,
    NAMES,
    OPERATORS,
    PREC_ADD,
    PREC_AND,
    PREC_CMP,
    PREC_MUL,
    PREC_OR,
    TS_FORM_OF,
    VOCABULARY,
    WINDOW,
    OpSpec,
    combine_lookback,
)

GRAMMAR_FILE = Path(__file__).with_name("grammar.lark")
"""The DSL's syntax as a lark grammar: the spec this parser implements."""
_ADV = re.compile(r"adv(\d+)\Z")
_DECIMAL = re.compile(r"\d+\.\d*|\.\d+")  # a decimal window literal (floored, as in the paper)
_ARG_NAMES = {EXPR: "x", WINDOW: "d", LEVEL: "level"}

# The parser reads token texts only and returns (node, depth, lookback) triples; the
# registry facts it needs per token are precomputed here from the table. Leaves are
# immutable, so equal ones are shared.
_LEVEL_OPS: dict[int, dict[str, str]] = {}
"""Precedence level -> {infix symbol: canonical name} of its left-associative binary operators."""
for _sym, _name in INFIX.items():
    if _sym != "^":
        _LEVEL_OPS.setdefault(OPERATORS[_name].precedence, {})[_sym] = _name
_OR_OPS, _AND_OPS, _CMP_OPS, _ADD_OPS, _MUL_OPS = (
    _LEVEL_OPS.pop(level) for level in (PREC_OR, PREC_AND, PREC_CMP, PREC_ADD, PREC_MUL))
if _LEVEL_OPS:
    raise RuntimeError(f"parser: infix operators at a level without a method: {_LEVEL_OPS}")
_FIELD_LEAVES: dict[str, tuple[Field, int, int]] = {
    name: (Field(name), 1, spec.lookback) for name, spec in FIELDS.items()}
_WINDOWS = tuple(Window(days) for days in range(MAX_WINDOW + 1))
_LEVELS = {name: Level(name) for name in set(LEVEL_NAMES.values())}
_ARG_END = frozenset({",", ")"})
_NAME_START, _NUM_START = NAME_START, NUM_START
_NEG, _POWER, _WHERE, _ADV_SPEC = (OPERATORS[n] for n in ("neg", "power", "where", "adv"))
# The infix/prefix/ternary methods take the max of the children's lookbacks inline.
if any(OPERATORS[name].lookback != LB_MAX for name in (*INFIX.values(), "neg", "where")):
    raise RuntimeError("parser: an infix operator with a lookback rule other than max")

Parsed = tuple[Expr, int, int]
"""(node, AST depth, lookback) of a parsed sub-expression."""


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, VOCABULARY, n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def signature(spec: OpSpec) -> str:
    """Human signature of an operator, e.g. ``ts_corr(x, y, d)``."""
    names, seen = [], 0
    for kind in spec.args:
        if kind == EXPR:
            names.append("xyz"[seen] if seen < 3 else "x")
            seen += 1
        else:
            names.append(_ARG_NAMES[kind])
    return f"{spec.name}({', '.join(names)})"


class _Parser:
    """One parse of one token list. Every method returns (node, depth, lookback).

    The parser reads token texts only (``toks``, ending with ``""``): a symbol's kind is
    its text, and names and numbers are told apart by their first character. Tokens are
    referred to by index; :meth:`token` gives the full ``(kind, text, position)`` token,
    only for error messages.
    """

    __slots__ = ("check", "fields", "i", "last_int", "levels", "nest", "text", "tokens", "toks")

    def __init__(self, text: str, toks: list[str], fields, levels, check: bool = True) -> None:
        self.text = text
        self.toks = toks
        self.tokens: list[Token] | None = None
        self.check = check
        self.i = 0
        self.nest = 0
        self.fields = fields
        self.levels = levels
        # (node, token index) of the most recent digits-only literal: a window slot holds an
        # integer literal exactly when its parsed argument *is* that node.
        self.last_int: tuple[Num | None, int] = (None, 0)

    # ------------------------------------------------------------------ helpers
    def token(self, i: int) -> Token:
        """Token ``i`` with its kind and character position (for error messages)."""
        if self.tokens is None:
            self.tokens = tokenize(self.text)
        return self.tokens[i]

    def pos(self, i: int) -> int:
        """Character position of token ``i``."""
        return self.token(i)[2]

    def expect(self, kind: str, what: str) -> None:
        i = self.i
        if self.toks[i] != kind:
            pos = self.pos(i)
            raise DSLError("syntax", pos, f"expected {what} at {pos}, got {describe(self.token(i))}")
        self.i = i + 1

    def build(self, spec: OpSpec, args: tuple, depth: int, lookback: int, at: int) -> Parsed:
        """The call node, after checking the depth and lookback limits (token ``at``)."""
        if self.check and (depth > MAX_DEPTH or lookback > MAX_LOOKBACK):
            pos = self.pos(at)
            if depth > MAX_DEPTH:
                raise DSLError("depth", pos,
                               f"formula nests deeper than {MAX_DEPTH} levels at {pos} ({spec.name})")
            raise DSLError("lookback", pos,
                           f"{spec.name} at {pos} needs {lookback} days of history, "
                           f"the limit is {MAX_LOOKBACK}")
        return Call(spec.name, args), depth, lookback

    # ------------------------------------------------------------------ grammar
    def ternary(self) -> Parsed:
        """or_ ( "?" ternary ":" ternary )?; also the entry of every nested sub-formula."""
        self.nest += 1
        if self.nest > MAX_NESTING:
            pos = self.pos(self.i)
            raise DSLError("nesting", pos, f"formula nested deeper than {MAX_NESTING - 1} at {pos}")
        cond = self.or_()
        if self.toks[self.i] == "?":
            at = self.i
            self.i += 1
            then = self.ternary()
            self.expect(":", "':' of the ternary c ? a : b")
            other = self.ternary()
            depth = 1 + max(cond[1], then[1], other[1])
            lookback = max(cond[2], then[2], other[2])
            cond = self.build(_WHERE, (cond[0], then[0], other[0]), depth, lookback, at)
        self.nest -= 1
        return cond

    def or_(self) -> Parsed:
        """and_ ( "||" and_ )*"""
        return self.left_assoc(self.and_, _OR_OPS)

    def and_(self) -> Parsed:
        """cmp ( "&&" cmp )*"""
        return self.left_assoc(self.cmp, _AND_OPS)

    def cmp(self) -> Parsed:
        """add ( ("<"|"<="|">"|">="|"=="|"!=") add )*"""
        return self.left_assoc(self.add, _CMP_OPS)

    def add(self) -> Parsed:
        """mul ( ("+"|"-") mul )*"""
        return self.left_assoc(self.mul, _ADD_OPS)

    def mul(self) -> Parsed:
        """unary ( ("*"|"/") unary )*"""
        return self.left_assoc(self.unary, _MUL_OPS)

    def left_assoc(self, operand: Callable[[], Parsed], ops: dict[str, str]) -> Parsed:
        """operand ( OP operand )*, folded to the left: one binary precedence level."""
        left = operand()
        toks = self.toks
        while toks[self.i] in ops:
            at = self.i
            name = ops[toks[at]]
            self.i = at + 1
            right = operand()
            depth = 1 + max(left[1], right[1])
            lookback = max(left[2], right[2])
            left = self.build(OPERATORS[name], (left[0], right[0]), depth, lookback, at)
        return left

    def unary(self) -> Parsed:
        """``-``* power; a minus directly before a plain literal folds into it."""
        toks = self.toks
        i = self.i
        if toks[i] != "-":
            return self.power()
        if toks[i + 1][:1] in _NUM_START and toks[i + 2] != "^":  # -2: one minus folded into a literal
            self.i = i + 2
            return Num(-self.number(i + 1)), 1, 0
        negs = self.minuses()
        node = self.folded_literal(negs)
        if node is None:
            node = self.power()
        return self.apply_negs(negs, node)

    def power(self) -> Parsed:
        """atom ( "^" unary )?"""
        base = self.atom()
        return base if self.toks[self.i] != "^" else self.power_chain(base)

    def power_chain(self, base: Parsed) -> Parsed:
        """base ( "^" unary )*, right-associative, iteratively over a ^ -b ^ c chains."""
        toks = self.toks
        chain: list[tuple[list[int], Parsed]] = [([], base)]  # (minus tokens, operand)
        carets: list[int] = []                               # carets[k]: '^' after operand k
        while toks[self.i] == "^":
            carets.append(self.i)
            self.i += 1
            negs = self.minuses()
            operand = self.folded_literal(negs)
            if operand is None:
                operand = self.atom()
            chain.append((negs, operand))
        negs, right = chain[-1]
        right = self.apply_negs(negs, right)
        for k in range(len(chain) - 2, -1, -1):
            negs, left = chain[k]
            depth = 1 + (left[1] if left[1] > right[1] else right[1])
            lookback = left[2] if left[2] > right[2] else right[2]
            right = self.build(_POWER, (left[0], right[0]), depth, lookback, carets[k])
            right = self.apply_negs(negs, right)
        return right

    def minuses(self) -> list[int]:
        toks = self.toks
        start = i = self.i
        while toks[i] == "-":
            i += 1
        self.i = i
        return list(range(start, i))

    def folded_literal(self, negs: list[int]) -> Parsed | None:
        """After minus signs, a number literal not followed by '^' becomes a negative Num."""
        i = self.i
        if not negs or self.toks[i][:1] not in _NUM_START or self.toks[i + 1] == "^":
            return None
        self.i = i + 1
        negs.pop()
        return Num(-self.number(i)), 1, 0

    def apply_negs(self, negs: list[int], node: Parsed) -> Parsed:
        for at in reversed(negs):
            node = self.build(_NEG, (node[0],), node[1] + 1, node[2], at)
        return node

    def atom(self) -> Parsed:
        i = self.i
        toks = self.toks
        text = toks[i]
        self.i = i + 1
        first = text[:1]
        if first in _NAME_START:
            if toks[i + 1] == "(":
                return self.function(i)
            return self.name(i)
        if first in _NUM_START:
            node = Num(self.number(i))
            if text.isdigit():
                self.last_int = (node, i)
            return node, 1, 0
        if text == "(":
            node = self.ternary()
            self.expect(")", "')'")
            return node
        pos = self.pos(i)
        raise DSLError("syntax", pos,
                       f"expected a number, name or '(' at {pos}, got {describe(self.token(i))}")

    def number(self, i: int) -> float:
        text = self.toks[i]
        value = float(text)
        if value - value != 0.0:  # inf (nan cannot be written)
            pos = self.pos(i)
            raise DSLError("number", pos, f"number '{excerpt(text)}' at {pos} is too large")
        return value

    def name(self, i: int) -> Parsed:
        """A bare name: a field, or adv<d>."""
        text = self.toks[i]
        lname = text.lower()
        leaf = _FIELD_LEAVES.get(lname)
        if leaf is not None:
            if self.fields is not None and lname not in self.fields:
                pos = self.pos(i)
                raise DSLError("field_unavailable", pos,
                               f"field {lname} at {pos} is not available in this panel")
            return leaf
        m = _ADV.match(lname)
        if m is not None:
            days = int(m.group(1))
            self.check_window(_ADV_SPEC, days, i)
            return self.build(_ADV_SPEC, (_WINDOWS[days],), 1,
                              combine_lookback(_ADV_SPEC, (), days), i)
        pos = self.pos(i)
        if lname in NAMES:
            raise DSLError("unknown_field", pos,
                           f"{NAMES[lname]} at {pos} is an operator: call it as "
                           f"{signature(OPERATORS[NAMES[lname]])}")
        if lname in LEVEL_NAMES:
            raise DSLError("unknown_field", pos,
                           f"{excerpt(text)} at {pos} is a group level: use it as "
                           f"group_neutralize(x, {LEVEL_NAMES[lname]})")
        raise DSLError("unknown_field", pos,
                       f"unknown field '{excerpt(text)}' at {pos}{_suggest(lname)}")

    def check_window(self, spec: OpSpec, days: int, at: int) -> None:
        """Window range check; the error points at token ``at``."""
        if not 1 <= days <= MAX_WINDOW:
            pos = self.pos(at)
            shown = str(days) if days < 10**6 else "a huge number"
            raise DSLError("window_range", pos,
                           f"{spec.name} expects a window 1–{MAX_WINDOW} at {pos}, got {shown}")

    def function(self, at: int) -> Parsed:
        """NAME "(" args ")" with the argument slots of the registry row (name token ``at``)."""
        text = self.toks[at]
        lname = text.lower()
        op = NAMES.get(lname)
        if op is None:
            pos = self.pos(at)
            if lname in FIELDS or _ADV.match(lname):
                raise DSLError("unknown_operator", pos,
                               f"{lname} at {pos} is a field, not an operator")
            raise DSLError("unknown_operator", pos,
                           f"unknown operator '{excerpt(text)}' at {pos}{_suggest(lname)}")
        spec = OPERATORS[op]
        self.i += 1  # "("
        toks = self.toks
        args: list = []
        depth = lookback = window = 0
        slots = spec.args
        for n, kind in enumerate(slots):
            if n:
                if toks[self.i] == ",":
                    self.i += 1
                else:
                    self.comma_error(spec, n)
            elif toks[self.i] == ")":
                self.arity(spec, 0)
            if kind == EXPR:
                arg, d, lb = self.ternary()
                if n == 1 and op in TS_FORM_OF:
                    days = self.int_value(arg)
                    if days is not None and days >= 1:
                        spec = OPERATORS[TS_FORM_OF[op]]
                        self.check_window(spec, days, at)
                        args.append(_WINDOWS[days])
                        window = days
                        continue
                args.append(arg)
                if d > depth:
                    depth = d
                if lb > lookback:
                    lookback = lb
            elif kind == WINDOW:
                window = self.window(spec)
                args.append(_WINDOWS[window])
            else:
                args.append(self.level(spec))
        if toks[self.i] == ",":
            self.arity(spec, len(slots) + 1)
        self.expect(")", f"')' closing {spec.name}(")
        return self.build(spec, tuple(args), depth + 1,
                          combine_lookback(spec, (lookback,) if depth else (), window), at)

    def comma_error(self, spec: OpSpec, n: int) -> None:
        i = self.i
        if self.toks[i] == ")":
            self.arity(spec, n)
        pos = self.pos(i)
        raise DSLError("syntax", pos,
                       f"expected ',' or ')' in {spec.name}( at {pos}, got {describe(self.token(i))}")

    def arity(self, spec: OpSpec, got: int) -> None:
        pos = self.pos(self.i)
        more = "more than " if got > len(spec.args) else ""
        n = len(spec.args)
        raise DSLError("arity", pos,
                       f"{spec.name} takes {n} argument{'s' if n != 1 else ''} "
                       f"{signature(spec)}, got {more}{min(got, n)} at {pos}")

    def int_value(self, node: Expr) -> int | None:
        """The int of a digits-only literal node, else None."""
        last, i = self.last_int
        return int(self.toks[i]) if node is last else None

    def window(self, spec: OpSpec) -> int:
        """The days of a window slot: an integer literal 1..252."""
        at = self.i
        toks = self.toks
        text = self.toks[at]
        if (text.isdigit() and toks[at + 1] in _ARG_END
                and len(text) < 300 and self.nest < MAX_NESTING):
            days = int(text)  # what ternary() would make of a lone short digits literal
            self.i = at + 1
        else:
            arg = self.ternary()[0]
            days = self.int_value(arg)
            if (days is None and type(arg) is Num and 1.0 <= arg.value < 1e6
                    and _DECIMAL.fullmatch(text)):
                days = math.floor(arg.value)  # the paper floors non-integer windows
            if days is None:
                pos = self.pos(at)
                shown = ""
                if type(arg) is Num:
                    shown = f", got {arg.value:g}"
                raise DSLError("window_type", pos,
                               f"{spec.name} expects an integer literal window 1–{MAX_WINDOW} "
                               f"at {pos}{shown}")
        self.check_window(spec, days, at)
        return days

    def level(self, spec: OpSpec) -> Level:
        i = self.i
        if self.toks[i][:1] in _NAME_START and self.toks[i + 1] in _ARG_END:
            text = self.toks[i]
            level = LEVEL_NAMES.get(text.lower())
            if level is None:
                pos = self.pos(i)
                raise DSLError("unknown_level", pos,
                               f"{spec.name} expects a group level sector or industry at "
                               f"{pos}, got '{excerpt(text)}'")
            if self.levels is not None and level not in self.levels:
                pos = self.pos(i)
                raise DSLError("group_unavailable", pos,
                               f"group level {level} at {pos} is not available in this panel")
            self.i = i + 1
            return _LEVELS[level]
        self.ternary()  # surfaces syntax errors first, as any other argument would
        pos = self.pos(i)
        raise DSLError("level_type", pos,
                       f"{spec.name} expects a group level sector or industry at {pos}")


def parse(text: str, *, fields: Collection[str] | None = None,
          levels: Collection[str] | None = None, limits: bool = True) -> Expr:
    """Parse formula ``text`` into an AST, enforcing every limit of DESIGN §3.

    ``fields``: if given, the panel's available fields (e.g. without ``cap``); a formula
    using another field raises ``field_unavailable``. ``levels``: if given, the group
    levels the panel has (``sector``, ``industry``); ``group_neutralize`` on another level
    raises ``group_unavailable``. ``None`` means "do not check". ``limits=False`` skips
    the lookback and depth limits only (for re-parsing canonical novelty text); the text
    limits (length, tokens, nesting) always apply.
    Raises DSLError on any bad input; never another exception for ``str`` input.
    Successful parses are memoised (LRU, :data:`PARSE_CACHE_SIZE` entries): ASTs are
    immutable, so a repeated text returns the same tree object.
    """
    if type(text) is str:
        fields_key = None if fields is None else _membership_key(fields)
        levels_key = None if levels is None else _membership_key(levels)
        if fields_key is not _UNCACHEABLE and levels_key is not _UNCACHEABLE:
            return _parse_cached(text, fields_key, levels_key, limits is True or bool(limits))
    return _parse(text, fields, levels, limits)


PARSE_CACHE_SIZE = 4096
_UNCACHEABLE = object()


def _membership_key(names: Collection[str] | None):
    """A hashable stand-in with the same ``in`` answers as ``names``, or _UNCACHEABLE."""
    if names is None:
        return None
    if isinstance(names, str):  # substring semantics: keep the caller's own object
        return _UNCACHEABLE
    try:
        return frozenset(names)
    except TypeError:
        return _UNCACHEABLE


def _parse(text: str, fields, levels, limits) -> Expr:
    """:func:`parse` without the cache."""
    toks = split(text)
    if len(toks) == 1:
        raise DSLError("syntax", 0, "empty formula: write an expression such as rank(close)")
    parser = _Parser(text, toks, fields, levels, limits)
    node = parser.ternary()[0]
    i = parser.i
    if toks[i]:
        what = "operator or end of formula" if toks[i] != ")" else "end of formula ('(' missing)"
        pos = parser.pos(i)
        raise DSLError("syntax", pos, f"expected an {what} at {pos}, got {describe(parser.token(i))}")
    return node


_parse_cached = functools.lru_cache(maxsize=PARSE_CACHE_SIZE)(_parse)
