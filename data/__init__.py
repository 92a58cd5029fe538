"""gymkit.data: market panels, loaders, the NYSE calendar, splits and the embedded default market."""

from gymkit.data.calendar import nyse_sessions
from gymkit.data.panel import Panel
from gymkit.data.splits import DEFAULT_SPLIT, Split

__all__ = ["DEFAULT_SPLIT", "Panel", "Split", "nyse_sessions"]
