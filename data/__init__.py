"""gymkit.data: market panels, loaders, the NYSE calendar, splits and the embedded default market.

The file loaders (polars) are imported on first use, so ``gymkit.make`` on the embedded market
does not pay for polars.
"""

from gymkit.data.calendar import nyse_sessions
from gymkit.data.default import default_market
from gymkit.data.panel import Panel
from gymkit.data.splits import DEFAULT_SPLIT, Split

__all__ = ["DEFAULT_SPLIT", "REAL_DATA_PATH", "Panel", "Split", "ValidationError",
           "ValidationReport", "default_market", "generate_market", "load_panel",
           "load_panel_with_report", "nyse_sessions", "real_panel"]

#: Public names imported on first access: name -> module under gymkit.data.
_LAZY = {"load_panel": "loaders", "load_panel_with_report": "loaders",
         "REAL_DATA_PATH": "real", "real_panel": "real",
         "ValidationError": "validate", "ValidationReport": "validate",
         "generate_market": "synthetic"}


def __getattr__(name: str) -> object:
    """Import a lazily exported name (``_LAZY``) on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gymkit.data' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"gymkit.data.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
