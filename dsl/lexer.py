"""Lexer of the alpha DSL: text -> list of tokens, with the text-level limits.

A token is a tuple ``(kind, text, position)``; ``kind`` is ``"num"``, ``"name"``, the
operator/punctuation symbol itself (``"+"``, ``"<="``, ``"("`` ...), or ``"end"`` for
the final sentinel. Names may be dotted (``IndClass.sector``). Numbers are decimal
literals with optional fraction and exponent (``2``, ``2.``, ``.001``, ``1e-3``).

Speed (issue 3's 50 µs budget): the parser reads :func:`split`, one C-level
``re.findall`` with no per-token Python loop and no kinds or positions. Text it cannot vouch
for (a stray character, too many tokens, many parentheses) also goes through the per-token
scanner :func:`_scan_checked`, which raises the precise error; on every text both accept
they yield the same token texts.
"""

from __future__ import annotations

import re

from .errors import DSLError, excerpt
from .limits import MAX_CHARS, MAX_NESTING, MAX_TOKENS

Token = tuple[str, str, int]

NUMBER_RE = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
NAME_RE = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
SYMBOL_RE = r"<=|>=|==|!=|&&|\|\||[-+*/^<>?:(),]"
WHITESPACE = " \t\n\r\f\v"

_TOKEN = re.compile(
    rf"[{WHITESPACE}]*(?:(?P<num>{NUMBER_RE})|(?P<name>{NAME_RE})|(?P<sym>{SYMBOL_RE})|(?P<bad>[^{WHITESPACE}]))",
    re.ASCII | re.DOTALL,
)
# The same alternatives for findall: tried at every offset, so on text where every
# non-whitespace character lies in a match it finds exactly the tokens _TOKEN finds. The
# three alternatives start with disjoint characters, so their order is free.
_FIND = re.compile(rf"{SYMBOL_RE}|{NAME_RE}|{NUMBER_RE}", re.ASCII).findall
_DROP_WHITESPACE = str.maketrans("", "", WHITESPACE)
NAME_START = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""First characters of a name token."""
NUM_START = frozenset("0123456789.")
"""First characters of a number token."""


def _first_non_ascii(text: str) -> int:
    for i, ch in enumerate(text):
        if ord(ch) > 127:
            return i
    return -1  # pragma: no cover - only called when text is not ASCII


def _check_text(text: str) -> None:
    if not isinstance(text, str):
        raise DSLError("syntax", 0, "a formula must be text")
    if len(text) > MAX_CHARS:
        raise DSLError("too_long", MAX_CHARS,
                       f"formula is {len(text)} characters, the limit is {MAX_CHARS}")
    if not text.isascii():
        pos = _first_non_ascii(text)
        raise DSLError("bad_char", pos,
                       f"non-ASCII character at {pos}: the DSL uses plain ASCII only")


def _scan_checked(text: str) -> list[Token]:
    """Token-by-token scan that raises the first bad_char / tokens / nesting error."""
    tokens: list[Token] = []
    append = tokens.append
    depth = 0
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        pos = m.start(kind)
        tok = m.group(kind)
        if kind == "sym":
            kind = tok
            if tok == "(":
                depth += 1
                if depth > MAX_NESTING:
                    raise DSLError("nesting", pos,
                                   f"parentheses nested deeper than {MAX_NESTING} at {pos}")
            elif tok == ")":
                depth -= 1
        elif kind == "bad":
            shown = repr(tok) if tok.isprintable() else f"code {ord(tok)}"
            raise DSLError("bad_char", pos, f"unexpected character {shown} at {pos}")
        append((kind, tok, pos))
        if len(tokens) > MAX_TOKENS:
            raise DSLError("tokens", pos,
                           f"formula has more than {MAX_TOKENS} tokens (limit reached at {pos})")
    append(("end", "", len(text)))
    return tokens


def split(text: str) -> list[str]:
    """Token texts of ``text`` followed by ``""`` (the end sentinel).

    The parser's fast path: same tokens and same DSLError as :func:`tokenize`, without
    kinds and positions (a symbol's kind is its text; a name starts with a letter or ``_``,
    a number with a digit or ``.``; positions are looked up with :func:`tokenize` only
    when an error message needs one).
    """
    _check_text(text)
    toks = _FIND(text)
    covered = len("".join(toks))
    # Every non-whitespace character must lie in a token (findall skips what no token
    # matches); the common all-spaces case is checked without translate().
    if (len(toks) > MAX_TOKENS or text.count("(") > MAX_NESTING
            or (covered + text.count(" ") != len(text)
                and covered != len(text.translate(_DROP_WHITESPACE)))):
        _scan_checked(text)  # raises the precise error, or accepts many-but-legal parentheses
    toks.append("")
    return toks


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens ending with an ``("end", "", len(text))`` sentinel.

    Raises DSLError ``too_long`` (> MAX_CHARS characters, checked first), ``bad_char``
    (non-ASCII, control characters, anything no token starts with), ``tokens`` (more than
    MAX_TOKENS tokens) or ``nesting`` (parentheses nested deeper than MAX_NESTING).
    """
    _check_text(text)
    return _scan_checked(text)


def describe(token: Token) -> str:
    """How an error message names a token: its text, or 'end of formula'."""
    kind, text, _ = token
    if kind == "end":
        return "end of formula"
    return f"'{excerpt(text)}'"


def is_int_literal(text: str) -> bool:
    """True for a digits-only literal (the only spelling a window may have)."""
    return text.isdigit()
