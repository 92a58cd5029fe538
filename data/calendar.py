"""NYSE trading sessions (exchange_calendars' XNYS), as numpy datetime64[D] arrays."""

from __future__ import annotations

import os
from contextlib import suppress
from functools import lru_cache
from pathlib import Path

import numpy as np

# exchange_calendars builds its session index between explicit bounds; we ask for a
# fixed wide range once so the answer never depends on today's date.
_CAL_START = "2000-01-03"
_CAL_END = "2030-12-31"


def _cache_file() -> Path:
    """The session list's file under the user cache, keyed by the calendar library's version
    (its holiday rules) and the range; nothing outside the cache folder is written."""
    from importlib.metadata import version

    from gymkit.worlds_cache import cache_root

    key = f"xnys-{version('exchange_calendars')}-{_CAL_START}-{_CAL_END}"
    return cache_root() / "calendar" / f"{key}.npy"


def _build_sessions() -> np.ndarray:
    import warnings

    import exchange_calendars as xc

    with warnings.catch_warnings():  # the library's own pandas deprecation noise
        warnings.simplefilter("ignore")
        cal = xc.get_calendar("XNYS", start=_CAL_START, end=_CAL_END)
    return cal.sessions.to_numpy().astype("datetime64[D]")


def _valid(a: object) -> bool:
    return (isinstance(a, np.ndarray) and a.dtype == np.dtype("datetime64[D]") and a.ndim == 1
            and a.size > 0 and bool(np.all(a[1:] > a[:-1]))
            and a[0] >= np.datetime64(_CAL_START) and a[-1] <= np.datetime64(_CAL_END))


@lru_cache(maxsize=1)
def _all_sessions() -> np.ndarray:
    """Every XNYS session in the range: read from the user cache when a previous process
    saved it for this library version (importing and building the calendar costs most of a
    second a process), else built and saved there (best effort: a read-only cache is fine)."""
    path = _cache_file()
    try:
        out = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        out = None
    if not _valid(out):
        out = _build_sessions()
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(tmp, out, allow_pickle=False)
            os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
        except OSError:
            with suppress(OSError):
                tmp.unlink(missing_ok=True)
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
