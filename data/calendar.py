"""NYSE trading sessions (exchange_calendars' XNYS), as numpy datetime64[D] arrays."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# exchange_calendars builds its session index between explicit bounds; we ask for a
# fixed wide range once so the answer never depends on today's date.
_CAL_START = "2000-01-03"
_CAL_END = "2030-12-31"


@lru_cache(maxsize=1)
def _all_sessions() -> np.ndarray:
    import warnings

    import exchange_calendars as xc

    with warnings.catch_warnings():  # the library's own pandas deprecation noise
        warnings.simplefilter("ignore")
        cal = xc.get_calendar("XNYS", start=_CAL_START, end=_CAL_END)
    out = cal.sessions.to_numpy().astype("datetime64[D]")
    out.setflags(write=False)
    return out


def nyse_sessions(start: str | np.datetime64, end: str | np.datetime64) -> np.ndarray:
    """Return the NYSE sessions in ``[start, end]`` (both inclusive) as datetime64[D].

    Raises ``ValueError`` when the range leaves the calendar's supported span
    (2000-01-03 .. 2030-12-31).
    """
    lo, hi = np.datetime64(start, "D"), np.datetime64(end, "D")
    allsess = _all_sessions()
    if lo < allsess[0] or hi > allsess[-1]:
        raise ValueError(
            f"session range {lo}..{hi} is outside the supported NYSE calendar "
            f"{allsess[0]}..{allsess[-1]}"
        )
    i, j = np.searchsorted(allsess, lo, "left"), np.searchsorted(allsess, hi, "right")
    return allsess[i:j].copy()


def non_sessions(dates: np.ndarray) -> np.ndarray:
    """Return a boolean mask of the entries of ``dates`` that are not NYSE sessions."""
    d = np.asarray(dates).astype("datetime64[D]")
    allsess = _all_sessions()
    idx = np.clip(np.searchsorted(allsess, d), 0, len(allsess) - 1)
    return allsess[idx] != d
