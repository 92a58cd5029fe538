"""The alpha DSL: parse, check, print, canonicalise and analyse formulas (DESIGN §3, §10)."""

from gymkit.dsl.analysis import Motifs, fields_used, lookback, motifs, node_count
from gymkit.dsl.canonical import canonical, canonical_key
from gymkit.dsl.errors import DSLError
from gymkit.dsl.extract import Extracted, extract
from gymkit.dsl.operators import FIELDS, OPERATORS
from gymkit.dsl.parser import parse
from gymkit.dsl.printer import to_text

__all__ = [
    "FIELDS",
    "OPERATORS",
    "DSLError",
    "EvalCache",
    "Extracted",
    "Motifs",
    "canonical",
    "canonical_key",
    "evaluate",
    "extract",
    "fields_used",
    "lookback",
    "motifs",
    "node_count",
    "parse",
    "to_text",
]


def __getattr__(name: str) -> object:
    # The evaluator pulls in numba (seconds to import): parse-only users (a gate, a server's
    # front door) should not pay for it, so it is imported on first use.
    if name in ("evaluate", "EvalCache"):
        from gymkit.dsl import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module 'gymkit.dsl' has no attribute {name!r}")
