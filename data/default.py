"""The embedded default market: the shipped synthetic panel, loaded once per process.

The file ``default_market.npz`` next to this module is the output of
``python -m gymkit.data.synthetic --out data/default_market.npz`` (exact cents and whole
shares, so it is bit-identical everywhere).  :data:`DEFAULT_MARKET_FINGERPRINT` is its
:attr:`Panel.fingerprint`; a test regenerates the market and checks both.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from gymkit.data.panel import Panel

#: Version tag written into the shipped file; bump when the generator model changes.
GENERATOR_VERSION = "gymkit-synthetic-v1"

#: Location of the shipped market file (package data).
DEFAULT_MARKET_PATH: Path = Path(__file__).resolve().with_name("default_market.npz")
#: Fingerprint of :func:`default_market` (changes only when the generator or seed does).
DEFAULT_MARKET_FINGERPRINT = "2232a9479a4580e002fed1886eba0cd8bb01d99bdf9270a71f8a94d4c95f8088"


@dataclass(frozen=True)
class MarketArrays:
    """The integer arrays a market is stored as (exact cents / whole shares)."""

    dates: np.ndarray  # datetime64[D] (T,)
    tickers: tuple[str, ...]
    sector: tuple[str, ...]
    industry: tuple[str, ...]
    open_c: np.ndarray  # int64 cents (T, N)
    high_c: np.ndarray
    low_c: np.ndarray
    close_c: np.ndarray
    volume: np.ndarray  # int64 shares (T, N)
    shares: np.ndarray  # int64 shares outstanding (T, N)

    def to_panel(self) -> Panel:
        """Build the float64 :class:`Panel` (prices in dollars, cap = close x shares)."""
        close = self.close_c / 100.0
        return Panel(
            self.dates,
            self.tickers,
            self.open_c / 100.0,
            self.high_c / 100.0,
            self.low_c / 100.0,
            close,
            self.volume.astype(np.float64),
            cap=close * self.shares.astype(np.float64),
            sector=self.sector,
            industry=self.industry,
        )


def save_market(arrays: MarketArrays, path: str | Path, seed: int) -> None:
    """Write ``arrays`` to ``path`` as a compressed .npz (close in cents, OHLV offsets)."""
    np.savez_compressed(
        path,
        version=np.array(GENERATOR_VERSION),
        seed=np.array(seed, dtype=np.int64),
        dates=arrays.dates.astype("datetime64[D]").astype(np.int64),
        tickers=np.array(arrays.tickers),
        sector=np.array(arrays.sector),
        industry=np.array(arrays.industry),
        close_d=np.diff(arrays.close_c, axis=0, prepend=0),
        open_o=arrays.open_c - arrays.close_c,
        high_o=arrays.high_c - arrays.close_c,
        low_o=arrays.low_c - arrays.close_c,
        volume=arrays.volume,
        shares=arrays.shares,
    )


def load_market(path: str | Path) -> MarketArrays:
    """Read a file written by :func:`save_market` back into exact integer arrays."""
    with np.load(path, allow_pickle=False) as z:
        if str(z["version"]) != GENERATOR_VERSION:
            raise ValueError(f"{path}: generator version {z['version']} != {GENERATOR_VERSION}")
        close_c = np.cumsum(z["close_d"], axis=0)
        return MarketArrays(
            dates=z["dates"].astype("datetime64[D]"),
            tickers=tuple(str(x) for x in z["tickers"]),
            sector=tuple(str(x) for x in z["sector"]),
            industry=tuple(str(x) for x in z["industry"]),
            open_c=close_c + z["open_o"],
            high_c=close_c + z["high_o"],
            low_c=close_c + z["low_o"],
            close_c=close_c,
            volume=z["volume"],
            shares=z["shares"],
        )



@lru_cache(maxsize=1)
def default_market() -> Panel:
    """Return the embedded default market (46 synthetic stocks, NYSE sessions 2012-06-29 ..
    2026-08-21, OHLCV + cap + sector/industry), cached per process.

    No network; loads the shipped file in well under a second.  Raises
    ``FileNotFoundError`` naming the path if the package was installed without it.
    """
    if not DEFAULT_MARKET_PATH.is_file():
        raise FileNotFoundError(f"default market file missing: {DEFAULT_MARKET_PATH}")
    return load_market(DEFAULT_MARKET_PATH).to_panel()
