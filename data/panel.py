"""The market panel: daily OHLCV arrays of shape (T sessions, N stocks).

A :class:`Panel` is immutable: every array is float64 marked read-only and held by nobody
else who could write it (a private copy, or a loaded file's immutable column buffer), so no
consumer (a formula, a cache, a stress world) can corrupt the data another consumer sees.
Missing values (listing gaps, masked cells) are NaN.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

PRICE_FIELDS: tuple[str, ...] = ("open", "high", "low", "close")
BASE_FIELDS: tuple[str, ...] = (*PRICE_FIELDS, "volume")
OPTIONAL_FIELDS: tuple[str, ...] = ("cap",)
DERIVED_FIELDS: tuple[str, ...] = ("returns", "vwap")
GROUP_LEVELS: tuple[str, ...] = ("sector", "industry")

_FINGERPRINT_VERSION = b"gymkit-panel-v1"


def _frozen_matrix(name: str, a: object, shape: tuple[int, int] | None, adopt: bool = False) -> np.ndarray:
    """``a`` as a read-only float64 C array with ±inf as NaN: a copy, or ``a`` itself when
    ``adopt`` and it is already one (a fresh array handed over by the loader)."""
    arr = np.array(a, dtype=np.float64, order="C", copy=None if adopt else True)
    if arr.ndim != 2:
        raise ValueError(f"panel field {name!r} must be 2-D (sessions, stocks), got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"panel field {name!r} has shape {arr.shape}, expected {shape}")
    inf = np.isinf(arr)
    if inf.any():
        arr = arr if arr.flags.writeable else arr.copy()  # an adopted column may be a view
        arr[inf] = np.nan  # ±inf is never data
    arr.setflags(write=False)
    return arr


_HASH_BLOCK_CELLS = 1 << 15  # 256 KiB of float64 a block: stays in L2, no fresh pages


def _hash_canonical(h: Any, arr: np.ndarray) -> None:
    """Feed ``arr``'s little-endian float64 bytes, every NaN as the one canonical NaN, to
    ``h`` a block of rows at a time (the same digest as the whole array at once)."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    for i in range(0, flat.size, _HASH_BLOCK_CELLS):
        blk = flat[i:i + _HASH_BLOCK_CELLS]
        h.update(np.where(np.isnan(blk), np.nan, blk).astype("<f8", copy=False))


def _frozen_labels(name: str, labels: Sequence[str] | None, n: int) -> tuple[str, ...] | None:
    if labels is None:
        return None
    out = tuple(str(x) for x in labels)
    if len(out) != n:
        raise ValueError(f"panel group level {name!r} has {len(out)} labels for {n} tickers")
    return out


class Panel:
    """Daily market data for N stocks over T sessions.

    Attributes: ``dates`` (datetime64[D], shape (T,), strictly increasing),
    ``tickers`` (tuple of N unique str), ``open high low close volume`` (read-only
    float64 (T, N)), optional ``cap`` (T, N) and group labels ``sector`` /
    ``industry`` (tuple of N str).  Derived ``returns`` = close/close[t-1] − 1 (first
    row NaN) and ``vwap`` = (high + low + close)/3 come from :meth:`field`.
    The arrays are copied (``_adopt=True``, internal: the loader hands over arrays no one
    writes, frozen in place instead: fresh grids, or a complete panel's column buffers from
    its validated polars frame, which polars never writes: copy on write).
    Validation of market rules (prices, OHLC consistency, sessions) is the loader's
    job (``gymkit.data.validate``); the constructor checks only structure.
    """

    __slots__ = (
        "_cache",
        "_fingerprint",
        "cap",
        "close",
        "dates",
        "high",
        "industry",
        "low",
        "open",
        "sector",
        "tickers",
        "volume",
    )

    def __init__(
        self,
        dates: Sequence | np.ndarray,
        tickers: Sequence[str],
        open: object,
        high: object,
        low: object,
        close: object,
        volume: object,
        *,
        cap: object | None = None,
        sector: Sequence[str] | None = None,
        industry: Sequence[str] | None = None,
        _adopt: bool = False,
    ) -> None:
        d = np.array(dates).astype("datetime64[D]")
        if d.ndim != 1:
            raise ValueError(f"panel dates must be 1-D, got shape {d.shape}")
        if d.size > 1 and not np.all(d[1:] > d[:-1]):
            i = int(np.argmin(d[1:] > d[:-1]))
            raise ValueError(f"panel dates must be strictly increasing: {d[i]} is followed by {d[i + 1]}")
        d.setflags(write=False)
        tk = tuple(str(t) for t in tickers)
        if len(set(tk)) != len(tk):
            seen: set[str] = set()
            dup = next(t for t in tk if t in seen or seen.add(t))  # type: ignore[func-returns-value]
            raise ValueError(f"panel tickers must be unique: {dup!r} appears twice")
        shape = (d.size, len(tk))
        self.dates = d
        self.tickers = tk
        self.open = _frozen_matrix("open", open, shape, _adopt)
        self.high = _frozen_matrix("high", high, shape, _adopt)
        self.low = _frozen_matrix("low", low, shape, _adopt)
        self.close = _frozen_matrix("close", close, shape, _adopt)
        self.volume = _frozen_matrix("volume", volume, shape, _adopt)
        self.cap = None if cap is None else _frozen_matrix("cap", cap, shape, _adopt)
        self.sector = _frozen_labels("sector", sector, len(tk))
        self.industry = _frozen_labels("industry", industry, len(tk))
        self._cache: dict[str, np.ndarray] = {}
        self._fingerprint: str | None = None

    # ----------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, object]:
        """The data and the fingerprint, without the derived fields' cache (rebuilt on use)."""
        return {k: getattr(self, k) for k in self.__slots__ if k != "_cache"}

    def __setstate__(self, state: dict[str, object]) -> None:
        """Restore a pickled panel read-only, as the constructor leaves one."""
        for k, v in state.items():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
            object.__setattr__(self, k, v)
        self._cache = {}

    # ----------------------------------------------------------------- shape
    @property
    def T(self) -> int:
        """Number of sessions."""
        return int(self.dates.size)

    @property
    def N(self) -> int:
        """Number of stocks."""
        return len(self.tickers)

    def __repr__(self) -> str:
        span = f"{self.dates[0]}..{self.dates[-1]}" if self.T else "empty"
        opt = [n for n in ("cap", "sector", "industry") if getattr(self, n) is not None]
        return f"Panel(T={self.T}, N={self.N}, {span}, optional={opt}, fp={self.fingerprint[:12]})"

    # ---------------------------------------------------------------- fields
    def has_field(self, name: str) -> bool:
        """True when :meth:`field` can serve ``name`` on this panel."""
        if name in BASE_FIELDS or name in DERIVED_FIELDS:
            return True
        if name == "cap":
            return self.cap is not None
        return False

    def field(self, name: str) -> np.ndarray:
        """Return the read-only (T, N) float64 array of field ``name``.

        Base fields, ``cap`` when present, and the derived ``returns`` and ``vwap``.
        Raises ``KeyError`` naming the field when the panel cannot serve it.
        """
        if name in BASE_FIELDS:
            return getattr(self, name)
        if name == "cap":
            if self.cap is None:
                raise KeyError("panel has no 'cap' field")
            return self.cap
        if name in DERIVED_FIELDS:
            hit = self._cache.get(name)
            if hit is None:
                hit = self._derive(name)
                hit.setflags(write=False)
                self._cache[name] = hit
            return hit
        raise KeyError(f"unknown panel field {name!r}")

    def _derive(self, name: str) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            if name == "returns":
                out = np.full_like(self.close, np.nan)
                out[1:] = self.close[1:] / self.close[:-1] - 1.0
            else:  # vwap proxy, DESIGN §2
                out = (self.high + self.low + self.close) / 3.0
        out[~np.isfinite(out)] = np.nan
        return out

    def group_labels(self, level: str) -> tuple[str, ...]:
        """Return the N group labels of ``level`` ('sector' or 'industry'); KeyError if absent."""
        if level not in GROUP_LEVELS:
            raise KeyError(f"unknown group level {level!r}; expected one of {GROUP_LEVELS}")
        labels = getattr(self, level)
        if labels is None:
            raise KeyError(f"panel has no {level!r} group labels")
        return labels

    def has_groups(self, level: str) -> bool:
        """True when the panel carries labels for group ``level``."""
        return level in GROUP_LEVELS and getattr(self, level) is not None

    def group_codes(self, level: str) -> np.ndarray:
        """Return int64 (N,) group ids for ``level``: labels sorted, numbered from 0.

        An empty label ('') means "no group" and gets -1.  Deterministic: the code of
        a label depends only on the set of labels, never on ticker order or hashing.
        """
        key = f"codes:{level}"
        hit = self._cache.get(key)
        if hit is None:
            labels = self.group_labels(level)
            uniq = sorted({x for x in labels if x})
            index = {lab: i for i, lab in enumerate(uniq)}
            hit = np.array([index.get(x, -1) for x in labels], dtype=np.int64)
            hit.setflags(write=False)
            self._cache[key] = hit
        return hit

    # ---------------------------------------------------------------- slicing
    def between(self, start: str | np.datetime64, end: str | np.datetime64) -> Panel:
        """Return a new panel with the sessions in ``[start, end]`` (both inclusive).

        The result holds copies of only those rows: nothing outside the window is
        reachable from it (train-mode code cannot see holdout rows at all).  A window that
        holds every row is this panel itself.
        """
        lo, hi = np.datetime64(start, "D"), np.datetime64(end, "D")
        i = int(np.searchsorted(self.dates, lo, "left"))
        j = int(np.searchsorted(self.dates, hi, "right"))
        return self.take_rows(slice(i, j))

    def take_rows(self, rows: slice) -> Panel:
        """Return a new panel of the given contiguous row slice (copies, read-only); the slice
        of every row is this panel itself (immutable: a copy would only cost time and memory)."""
        if isinstance(rows, slice) and rows.indices(self.T) == (0, self.T, 1):
            return self
        return Panel(
            self.dates[rows],
            self.tickers,
            self.open[rows],
            self.high[rows],
            self.low[rows],
            self.close[rows],
            self.volume[rows],
            cap=None if self.cap is None else self.cap[rows],
            sector=self.sector,
            industry=self.industry,
        )

    def replace(self, **fields: object) -> Panel:
        """Return a new panel with some base/optional fields replaced (e.g. a stress world)."""
        kw: dict[str, object] = {n: getattr(self, n) for n in (*BASE_FIELDS,)}
        extra: dict[str, object] = {"cap": self.cap, "sector": self.sector, "industry": self.industry}
        for k, v in fields.items():
            if k in kw:
                kw[k] = v
            elif k in extra:
                extra[k] = v
            else:
                raise KeyError(f"cannot replace unknown panel field {k!r}")
        return Panel(self.dates, self.tickers, **kw, **extra)  # type: ignore[arg-type]

    # ------------------------------------------------------------ fingerprint
    @property
    def fingerprint(self) -> str:
        """sha256 hex digest of the panel's canonical bytes, stable across processes.

        Covers dates, tickers, every base and optional field (little-endian float64,
        all NaNs hashed as one canonical NaN) and group labels, in a fixed order.
        """
        if self._fingerprint is None:
            h = hashlib.sha256(_FINGERPRINT_VERSION)
            h.update(np.int64(self.T).tobytes() + np.int64(self.N).tobytes())
            h.update(self.dates.astype("<i8").tobytes())
            h.update("\x1f".join(self.tickers).encode())
            for name in (*BASE_FIELDS, *OPTIONAL_FIELDS):
                arr = getattr(self, name)
                h.update(b"\x00" + name.encode())
                if arr is None:
                    h.update(b"absent")
                    continue
                _hash_canonical(h, arr)
            for level in GROUP_LEVELS:
                labels = getattr(self, level)
                h.update(b"\x00" + level.encode())
                h.update(b"absent" if labels is None else "\x1f".join(labels).encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint
