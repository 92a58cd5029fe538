"""gymkit.data: market panels, loaders, the NYSE calendar, splits and the embedded default market."""

from gymkit.data.calendar import nyse_sessions
from gymkit.data.loaders import load_panel, load_panel_with_report
from gymkit.data.panel import Panel
from gymkit.data.real import REAL_DATA_PATH, real_panel
from gymkit.data.splits import DEFAULT_SPLIT, Split
from gymkit.data.validate import ValidationError, ValidationReport

__all__ = ["DEFAULT_SPLIT", "Panel", "Split", "nyse_sessions"]
__all__ += ["REAL_DATA_PATH", "ValidationError", "ValidationReport", "load_panel"]
__all__ += ["load_panel_with_report", "real_panel"]

from gymkit.data.default import default_market  # noqa: E402

__all__ += ["default_market", "generate_market"]


def __getattr__(name: str) -> object:
    # generate_market is imported lazily so `python -m gymkit.data.synthetic` runs cleanly.
    if name == "generate_market":
        from gymkit.data.synthetic import generate_market

        return generate_market
    raise AttributeError(f"module 'gymkit.data' has no attribute {name!r}")
