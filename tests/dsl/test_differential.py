"""Differential fuzz: our recursive-descent parser vs the lark LALR reference grammar.

Both must accept exactly the same strings and build the same tree. The lark grammar
decides syntax only; the converter below applies the DSL's name and argument-slot rules
(read from the registry) to the lark tree. The comparison, for every string:

- ours accepts  => lark accepts, the converter accepts, and the trees are equal;
- ours rejects with a syntax code (syntax, bad_char) => lark rejects the syntax;
- ours rejects otherwise while lark + converter accept => ours hit a limit
  (too_long, tokens, nesting, lookback, depth) that the converted tree indeed exceeds
  (lookback/depth are checked on it; text limits are not the reference's business).

Deterministic (derandomize) and bounded; the whole file runs in well under 30 s.
"""

from __future__ import annotations

import re

import lark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.dsl import DSLError, parse, to_text
from gymkit.dsl.analysis import depth, lookback
from gymkit.dsl.ast import Call, Field, Level, Num, Window
from gymkit.dsl.errors import SYNTAX_CODES
from gymkit.dsl.operators import EXPR, FIELDS, LEVEL_NAMES, NAMES, OPERATORS, TS_FORM_OF, WINDOW
from gymkit.dsl.parser import GRAMMAR_FILE

from .strategies import exprs

GRAMMAR = lark.Lark(GRAMMAR_FILE.read_text(encoding="utf-8"),
                    parser="lalr", lexer="basic")
ADV = re.compile(r"adv(\d+)\Z")
TEXT_LIMIT_CODES = {"too_long", "tokens", "nesting"}


class Rejected(Exception):
    """The converter rejects a syntactically valid tree (a semantic error)."""


def _int_literal(tree) -> int | None:
    while tree.data == "paren":
        tree = tree.children[0]
    if tree.data == "number" and str(tree.children[0]).isdigit():
        return int(str(tree.children[0]))
    return None


def _window(tree) -> Window:
    days = _int_literal(tree)
    if days is None or not 1 <= days <= 252:
        raise Rejected("window")
    return Window(days)


def convert(tree) -> object:
    """Lark tree -> our AST, with the DSL's semantic rules (names, slots, literal folding)."""
    kind = tree.data
    kids = tree.children
    if kind == "number":
        value = float(str(kids[0]))
        if value in (float("inf"), float("-inf")):
            raise Rejected("number")
        return Num(value)
    if kind == "name":
        name = str(kids[0]).lower()
        if name in FIELDS:
            return Field(name)
        m = ADV.match(name)
        if m:
            return Call("adv", (_window_from_int(int(m.group(1))),))
        raise Rejected("name")
    if kind == "paren":
        return convert(kids[0])
    if kind == "neg":
        (child,) = kids
        if child.data == "number":
            value = -float(str(child.children[0]))
            if value in (float("inf"), float("-inf")):
                raise Rejected("number")
            return Num(value)
        return Call("neg", (convert(child),))
    if kind == "call":
        name, args = str(kids[0]).lower(), [k for k in kids[1:] if k is not None]
        op = NAMES.get(name)
        if op is None:
            raise Rejected("operator")
        spec = OPERATORS[op]
        if len(args) != len(spec.args):
            raise Rejected("arity")
        out = []
        for n, (slot, arg) in enumerate(zip(spec.args, args, strict=True)):
            if slot == EXPR:
                days = _int_literal(arg) if (n == 1 and op in TS_FORM_OF) else None
                if days is not None and days >= 1:
                    op = TS_FORM_OF[op]
                    out.append(_window_from_int(days))
                else:
                    out.append(convert(arg))
            elif slot == WINDOW:
                out.append(_window(arg))
            else:
                if arg.data != "name" or str(arg.children[0]).lower() not in LEVEL_NAMES:
                    raise Rejected("level")
                out.append(Level(LEVEL_NAMES[str(arg.children[0]).lower()]))
        return Call(op, tuple(out))
    return Call(kind, tuple(convert(k) for k in kids))


def _window_from_int(days: int) -> Window:
    if not 1 <= days <= 252:
        raise Rejected("window")
    return Window(days)


def reference(text: str):
    """('syntax', None) | ('semantic', None) | ('ok', tree)."""
    try:
        tree = GRAMMAR.parse(text)
    except lark.exceptions.LarkError:
        return "syntax", None
    try:
        return "ok", convert(tree)
    except Rejected:
        return "semantic", None
    except RecursionError:  # pragma: no cover - the reference is not hardened; ours is
        return "deep", None


def check_agreement(text: str) -> None:
    try:
        ours = parse(text)
    except DSLError as err:
        ours, code = None, err.code
    status, ref = reference(text)
    if ours is not None:
        assert status == "ok" and ref == ours, (text, status)
    elif code in SYNTAX_CODES:
        assert status == "syntax", (text, code)
    elif status == "ok":
        assert code in TEXT_LIMIT_CODES or (code == "lookback" and lookback(ref) > 252) or (
            code == "depth" and depth(ref) > 16), (text, code)


TOKENS = ["close", "open", "volume", "returns", "cap", "adv20", "adv0", "rank", "ts_mean",
          "Ts_Rank", "correlation", "min", "max", "group_neutralize", "IndNeutralize",
          "sector", "IndClass.industry", "foo", "delay", "sign", "where", "neg",
          "5", "0", "1", "300", "2.5", "2.", ".5", "1e3", "1e309", "-", "+", "*", "/", "^",
          "<", "<=", ">", ">=", "==", "!=", "&&", "||", "?", ":", "(", "(", ")", ")", ",",
          ",", "=", "&", ".", "e"]
SEPARATORS = ["", " ", "  ", "\n"]


@st.composite
def token_soup(draw):
    parts = draw(st.lists(st.tuples(st.sampled_from(TOKENS), st.sampled_from(SEPARATORS)),
                          min_size=1, max_size=20))
    return "".join(tok + sep for tok, sep in parts)


ALPHABET = "()+-*/^<>=!&|?:,. 0123456789eaclosrnkvwdt_"


@st.composite
def mutated(draw):
    base = draw(exprs(8).map(to_text))
    for _ in range(draw(st.integers(1, 3))):
        if not base:
            break
        i = draw(st.integers(0, len(base) - 1))
        action = draw(st.sampled_from(["delete", "insert", "swap", "duplicate", "truncate"]))
        if action == "delete":
            base = base[:i] + base[i + 1:]
        elif action == "insert":
            base = base[:i] + draw(st.sampled_from(ALPHABET)) + base[i:]
        elif action == "swap" and i + 1 < len(base):
            base = base[:i] + base[i + 1] + base[i] + base[i + 2:]
        elif action == "duplicate":
            j = draw(st.integers(i, min(len(base), i + 8)))
            base = base[:j] + base[i:j] + base[j:]
        else:
            base = base[:i]
    return base


@settings(max_examples=1200, derandomize=True, deadline=None)
@given(token_soup())
def test_random_token_strings_agree(text):
    check_agreement(text)


@settings(max_examples=1200, derandomize=True, deadline=None)
@given(mutated())
def test_mutated_formulas_agree(text):
    check_agreement(text)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(exprs(12).map(to_text))
def test_printed_formulas_agree(text):
    check_agreement(text)


@pytest.mark.parametrize("text", [
    "-2^2", "- -2", "-(2)", "2^-3^2", "min(close, (5))", "min(close, 5.0)", "max(close, 0)",
    "group_neutralize(close, (sector))", "ts_mean(close, (5))", "a.5", "1.e5", "2close",
    "close ? open : volume ? close : open", "rank()", "rank(close,)", "adv(20)", "adv20(5)",
])
def test_tricky_strings_agree(text):
    check_agreement(text)
