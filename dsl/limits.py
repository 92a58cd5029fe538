"""Hard limits of the DSL (DESIGN §3) in one place.

Text-level limits are checked by the lexer before any parsing, so that a 1 MB answer
or 10,000 open parentheses is rejected in microseconds and never recurses; the
tree-level limits (lookback, depth) are checked by the parser as it builds each call.
"""

from __future__ import annotations

from .operators import MAX_DEPTH, MAX_LOOKBACK, MAX_TOKENS, MAX_WINDOW

MAX_CHARS = 4096
"""Longest formula text accepted (characters); checked before lexing."""
MAX_NESTING = 40
"""Deepest nesting of parentheses / call arguments / ternary middles; bounds recursion."""

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_LOOKBACK", "MAX_NESTING", "MAX_TOKENS", "MAX_WINDOW"]
