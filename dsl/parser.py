"""Hand-written recursive-descent parser of the alpha DSL (DESIGN §3).

Grammar, one method per precedence level (lowest first)::

    formula : ternary END
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
slots an integer literal 1..252 (digits only, optionally parenthesised), ``level`` slots a
bare group-level name. ``min``/``max`` with a digits-only second argument >= 1 are the
paper's ts_min/ts_max (#29); otherwise they are element-wise. ``adv20`` is ``adv(20)``.

Names are case-insensitive. Nothing in the text is ever executed or used as an attribute
name: identifiers are only keys into the registry's dicts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection

from .ast import Call, Expr, Field, Level, Num, Window
from .errors import DSLError, excerpt
from .lexer import Token, describe, is_int_literal, tokenize
from .limits import MAX_DEPTH, MAX_LOOKBACK, MAX_NESTING, MAX_WINDOW
from .operators import (
    EXPR,
    FIELDS,
    INFIX,
    LEVEL,
    LEVEL_NAMES,
    NAMES,
    OPERATORS,
    TS_FORM_OF,
    VOCABULARY,
    WINDOW,
    OpSpec,
    combine_lookback,
)

_ADV = re.compile(r"adv(\d+)\Z")
_CMP = frozenset({"<", "<=", ">", ">=", "==", "!="})
_ADD = frozenset({"+", "-"})
_MUL = frozenset({"*", "/"})
_ARG_NAMES = {EXPR: "x", WINDOW: "d", LEVEL: "level"}


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
    """One parse of one token list. Tracks depth and lookback of every node it builds."""

    __slots__ = ("check", "depth", "fields", "i", "int_literal", "lb", "levels", "nest", "tokens")

    def __init__(self, tokens: list[Token], fields, levels, check: bool = True) -> None:
        self.tokens = tokens
        self.check = check
        self.i = 0
        self.nest = 0
        self.fields = fields
        self.levels = levels
        self.depth: dict[int, int] = {}   # id(node) -> AST depth
        self.lb: dict[int, int] = {}      # id(node) -> lookback
        # id(Num) -> (the Num, its int) for digits-only literals; the node is kept so that
        # its id cannot be reused by a later node once a window slot discards the Num.
        self.int_literal: dict[int, tuple[Num, int]] = {}

    # ------------------------------------------------------------------ helpers
    def peek(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, kind: str, what: str) -> Token:
        tok = self.tokens[self.i]
        if tok[0] != kind:
            raise DSLError("syntax", tok[2], f"expected {what} at {tok[2]}, got {describe(tok)}")
        self.i += 1
        return tok

    def leaf(self, node: Expr, lookback: int) -> Expr:
        self.depth[id(node)] = 1
        self.lb[id(node)] = lookback
        return node

    def call(self, spec: OpSpec, args: tuple, pos: int) -> Call:
        """Build a call node, checking the depth and lookback limits."""
        depth_of, lb_of = self.depth, self.lb
        window = 0
        children: list[int] = []
        child_depths: list[int] = []
        for a in args:
            kind = type(a)
            if kind is Window:
                window = a.days
            elif kind is not Level:
                children.append(lb_of[id(a)])
                child_depths.append(depth_of[id(a)])
        depth = 1 + (max(child_depths) if child_depths else 0)
        if depth > MAX_DEPTH and self.check:
            raise DSLError("depth", pos,
                           f"formula nests deeper than {MAX_DEPTH} levels at {pos} ({spec.name})")
        lookback = combine_lookback(spec, children, window)
        if lookback > MAX_LOOKBACK and self.check:
            raise DSLError("lookback", pos,
                           f"{spec.name} at {pos} needs {lookback} days of history, "
                           f"the limit is {MAX_LOOKBACK}")
        node = Call(spec.name, args)
        depth_of[id(node)] = depth
        lb_of[id(node)] = lookback
        return node

    def binary(self, symbol: str, left: Expr, right: Expr, pos: int) -> Call:
        return self.call(OPERATORS[INFIX[symbol]], (left, right), pos)

    # ------------------------------------------------------------------ grammar
    def ternary(self) -> Expr:
        self.nest += 1
        if self.nest > MAX_NESTING:
            pos = self.peek()[2]
            raise DSLError("nesting", pos, f"formula nested deeper than {MAX_NESTING} at {pos}")
        cond = self.or_()
        tok = self.peek()
        if tok[0] == "?":
            self.i += 1
            then = self.ternary()
            self.expect(":", "':' of the ternary c ? a : b")
            other = self.ternary()
            cond = self.call(OPERATORS["where"], (cond, then, other), tok[2])
        self.nest -= 1
        return cond

    def or_(self) -> Expr:
        left = self.and_()
        while self.tokens[self.i][0] == "||":
            pos = self.advance()[2]
            left = self.binary("||", left, self.and_(), pos)
        return left

    def and_(self) -> Expr:
        left = self.cmp()
        while self.tokens[self.i][0] == "&&":
            pos = self.advance()[2]
            left = self.binary("&&", left, self.cmp(), pos)
        return left

    def cmp(self) -> Expr:
        left = self.add()
        while self.tokens[self.i][0] in _CMP:
            sym, _, pos = self.advance()
            left = self.binary(sym, left, self.add(), pos)
        return left

    def add(self) -> Expr:
        left = self.mul()
        while self.tokens[self.i][0] in _ADD:
            sym, _, pos = self.advance()
            left = self.binary(sym, left, self.mul(), pos)
        return left

    def mul(self) -> Expr:
        left = self.unary()
        while self.tokens[self.i][0] in _MUL:
            sym, _, pos = self.advance()
            left = self.binary(sym, left, self.unary(), pos)
        return left

    def unary(self) -> Expr:
        """``-``* power, iteratively; a minus directly before a plain literal folds into it."""
        negs = self.minuses()
        node = self.folded_literal(negs)
        if node is None:
            node = self.power()
        return self.apply_negs(negs, node)

    def power(self) -> Expr:
        """atom ( "^" unary )?, right-associative, iteratively over a ^ -b ^ c chains."""
        base = self.atom()
        if self.tokens[self.i][0] != "^":
            return base
        chain: list[tuple[list[int], Expr]] = [([], base)]  # (minus positions, operand)
        carets: list[int] = []                             # carets[k]: '^' after operand k
        while self.tokens[self.i][0] == "^":
            carets.append(self.advance()[2])
            negs = self.minuses()
            operand = self.folded_literal(negs)
            if operand is None:
                operand = self.atom()
            chain.append((negs, operand))
        negs, right = chain[-1]
        right = self.apply_negs(negs, right)
        for k in range(len(chain) - 2, -1, -1):
            negs, left = chain[k]
            right = self.apply_negs(negs, self.call(OPERATORS["power"], (left, right), carets[k]))
        return right

    def minuses(self) -> list[int]:
        positions = []
        while self.tokens[self.i][0] == "-":
            positions.append(self.advance()[2])
        return positions

    def folded_literal(self, negs: list[int]) -> Expr | None:
        """After minus signs, a number literal not followed by '^' becomes a negative Num."""
        tok = self.peek()
        if not negs or tok[0] != "num" or self.tokens[self.i + 1][0] == "^":
            return None
        self.i += 1
        negs.pop()
        return self.leaf(Num(-self.number(tok)), 0)

    def apply_negs(self, positions: list[int], node: Expr) -> Expr:
        for pos in reversed(positions):
            node = self.call(OPERATORS["neg"], (node,), pos)
        return node

    def atom(self) -> Expr:
        tok = self.advance()
        kind = tok[0]
        if kind == "num":
            node = self.leaf(Num(self.number(tok)), 0)
            if is_int_literal(tok[1]):
                self.int_literal[id(node)] = (node, int(tok[1]))
            return node
        if kind == "name":
            if self.tokens[self.i][0] == "(":
                return self.function(tok)
            return self.name(tok)
        if kind == "(":
            node = self.ternary()
            self.expect(")", "')'")
            return node
        raise DSLError("syntax", tok[2],
                       f"expected a number, name or '(' at {tok[2]}, got {describe(tok)}")

    def number(self, tok: Token) -> float:
        value = float(tok[1])
        if value - value != 0.0:  # inf (nan cannot be written)
            raise DSLError("number", tok[2],
                           f"number '{excerpt(tok[1])}' at {tok[2]} is too large")
        return value

    def name(self, tok: Token) -> Expr:
        """A bare name: a field, or adv<d>."""
        _, text, pos = tok
        lname = text.lower()
        spec = FIELDS.get(lname)
        if spec is not None:
            if self.fields is not None and lname not in self.fields:
                raise DSLError("field_unavailable", pos,
                               f"field {lname} at {pos} is not available in this panel")
            return self.leaf(Field(lname), spec.lookback)
        m = _ADV.match(lname)
        if m is not None:
            days = int(m.group(1))
            self.check_window(OPERATORS["adv"], days, pos)
            return self.call(OPERATORS["adv"], (Window(days),), pos)
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

    def check_window(self, spec: OpSpec, days: int, pos: int) -> None:
        if not 1 <= days <= MAX_WINDOW:
            shown = str(days) if days < 10**6 else "a huge number"
            raise DSLError("window_range", pos,
                           f"{spec.name} expects a window 1–{MAX_WINDOW} at {pos}, got {shown}")

    def function(self, tok: Token) -> Expr:
        """NAME "(" args ")" with the argument slots of the registry row."""
        _, text, pos = tok
        lname = text.lower()
        op = NAMES.get(lname)
        if op is None:
            if lname in FIELDS or _ADV.match(lname):
                raise DSLError("unknown_operator", pos,
                               f"{lname} at {pos} is a field, not an operator")
            raise DSLError("unknown_operator", pos,
                           f"unknown operator '{excerpt(text)}' at {pos}{_suggest(lname)}")
        spec = OPERATORS[op]
        self.advance()  # "("
        args: list = []
        kinds = spec.args
        for n, kind in enumerate(kinds):
            if n:
                self.comma(spec, n)
            elif self.tokens[self.i][0] == ")":
                self.arity(spec, 0)
            if kind == EXPR:
                if n == 1 and op in TS_FORM_OF:
                    arg = self.ternary()
                    days = self.int_value(arg)
                    if days is not None and days >= 1:
                        spec = OPERATORS[TS_FORM_OF[op]]
                        self.check_window(spec, days, pos)
                        arg = Window(days)
                    args.append(arg)
                else:
                    args.append(self.ternary())
            elif kind == WINDOW:
                args.append(self.window(spec))
            else:
                args.append(self.level(spec))
        close = self.peek()
        if close[0] == ",":
            self.arity(spec, len(kinds) + 1)
        self.expect(")", f"')' closing {spec.name}(")
        return self.call(spec, tuple(args), pos)

    def comma(self, spec: OpSpec, n: int) -> None:
        tok = self.peek()
        if tok[0] == ",":
            self.i += 1
            return
        if tok[0] == ")":
            self.arity(spec, n)
        raise DSLError("syntax", tok[2],
                       f"expected ',' or ')' in {spec.name}( at {tok[2]}, got {describe(tok)}")

    def arity(self, spec: OpSpec, got: int) -> None:
        pos = self.peek()[2]
        more = "more than " if got > len(spec.args) else ""
        n = len(spec.args)
        raise DSLError("arity", pos,
                       f"{spec.name} takes {n} argument{'s' if n != 1 else ''} "
                       f"{signature(spec)}, got {more}{min(got, n)} at {pos}")

    def int_value(self, node: Expr) -> int | None:
        """The int of a digits-only literal node, else None."""
        entry = self.int_literal.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else None

    def window(self, spec: OpSpec) -> Window:
        pos = self.peek()[2]
        arg = self.ternary()
        days = self.int_value(arg)
        if days is None:
            shown = ""
            if type(arg) is Num:
                shown = f", got {arg.value:g}"
            raise DSLError("window_type", pos,
                           f"{spec.name} expects an integer literal window 1–{MAX_WINDOW} "
                           f"at {pos}{shown}")
        self.check_window(spec, days, pos)
        return Window(days)

    def level(self, spec: OpSpec) -> Level:
        tok = self.peek()
        nxt = self.tokens[self.i + 1]
        if tok[0] == "name" and nxt[0] in (",", ")"):
            lname = tok[1].lower()
            level = LEVEL_NAMES.get(lname)
            if level is None:
                raise DSLError("unknown_level", tok[2],
                               f"{spec.name} expects a group level sector or industry at "
                               f"{tok[2]}, got '{excerpt(tok[1])}'")
            if self.levels is not None and level not in self.levels:
                raise DSLError("group_unavailable", tok[2],
                               f"group level {level} at {tok[2]} is not available in this panel")
            self.i += 1
            return Level(level)
        self.ternary()  # surfaces syntax errors first, as any other argument would
        raise DSLError("level_type", tok[2],
                       f"{spec.name} expects a group level sector or industry at {tok[2]}")


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
    """
    tokens = tokenize(text)
    if len(tokens) == 1:
        raise DSLError("syntax", 0, "empty formula: write an expression such as rank(close)")
    parser = _Parser(tokens, fields, levels, limits)
    node = parser.ternary()
    tok = parser.peek()
    if tok[0] != "end":
        what = "operator or end of formula" if tok[0] != ")" else "end of formula ('(' missing)"
        raise DSLError("syntax", tok[2], f"expected an {what} at {tok[2]}, got {describe(tok)}")
    return node
