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
    "Extracted",
    "Motifs",
    "canonical",
    "canonical_key",
    "extract",
    "fields_used",
    "lookback",
    "motifs",
    "node_count",
    "parse",
    "to_text",
]
