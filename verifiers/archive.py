"""The novelty archive behind R8 (P&L novelty) and R9 (syntax novelty).

An archive holds up to ``capacity`` entries (default 1,024), each the canonical (window-bucketed)
form of an accepted formula and its daily train-window P&L on the environment's judged days.
It is *state*, so it is explicit: every change produces a new ``version`` and a new content
``digest``; scoring only reads it; :meth:`NoveltyArchive.add` is called by whoever commits
accepted answers (the trainer, or the server's commit call).  ``snapshot()`` / ``restore()``
round-trip it through bytes bit for bit.

Eviction: seed entries (the 101-alpha corpus) are pinned; when the archive is full the oldest
committed entry is dropped first, so novelty is always measured against the paper's alphas
plus the most recent accepted answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

_FORMAT = "gymkit-archive-v1"
_MAGIC = b"GKARCHIVE1\n"


@dataclass(frozen=True)
class Neighbour:
    """The archive entry whose P&L is most correlated with a candidate's."""

    index: int
    form: str
    corr: float  # signed Pearson correlation of the daily P&L


def _standardise(pnl: np.ndarray) -> np.ndarray:
    """Rows z-scored and divided by sqrt(D): the dot product of two rows is their correlation.

    A row with zero variance (a flat book) becomes all zeros: it is uncorrelated with everything.
    """
    x = np.asarray(pnl, dtype=np.float64)
    x = np.where(np.isfinite(x), x, 0.0)
    mu = x.mean(axis=-1, keepdims=True)
    sd = x.std(axis=-1, keepdims=True)
    d = x.shape[-1]
    return np.where(sd > 0, (x - mu) / np.where(sd > 0, sd, 1.0) / np.sqrt(d), 0.0)


@njit(cache=True, fastmath={"reassoc", "contract"})
def _abs_dots_f32(rows: np.ndarray, queries: np.ndarray, out: np.ndarray) -> None:
    """out[q, i] = |rows[i] . queries[q]| in float32 (any summation order: the caller bounds
    the error), each row read once for all the queries."""
    n, d = rows.shape
    for i in range(n):
        for q in range(queries.shape[0]):
            acc = np.float32(0.0)
            for j in range(d):
                acc += rows[i, j] * queries[q, j]
            out[q, i] = abs(acc)


def _f32_dot_bound(n_days: int, z_norm: float) -> float:
    """A bound on |float32 dot - exact dot| of a standardised row (norm <= 1) with ``z``
    (norm ``z_norm``), for any summation order: rounding both to float32 (relative 2^-24
    each) and the sum of n_days products (gamma_{n+1}, Higham 3.1), times Cauchy-Schwarz."""
    u = 2.0**-24
    g = (n_days + 1) * u / (1.0 - (n_days + 1) * u)
    return (g * (1.0 + u) ** 2 + 2.0 * u + u * u) * z_norm * 1.001


class NoveltyArchive:
    """Canonical forms and daily P&L of accepted formulas; see the module docstring."""

    def __init__(self, n_days: int, capacity: int = 1024) -> None:
        if n_days < 2:
            raise ValueError(f"archive P&L needs at least 2 days, got {n_days}")
        if capacity < 1:
            raise ValueError(f"archive capacity must be positive, got {capacity}")
        self.n_days = int(n_days)
        self.capacity = int(capacity)
        self._forms: list[str] = []
        self._pinned: list[bool] = []
        # Rows live in preallocated buffers; ``_slots[k]`` is the buffer row of the k-th entry in
        # archive order, so a commit writes one row instead of copying the archive (an eviction
        # reuses the victim's row).  The used rows are always rows 0..len-1 of the buffers.
        self._pnl_rows = np.zeros((0, self.n_days))
        self._z_rows = np.zeros((0, self.n_days))
        self._z32_rows = np.zeros((0, self.n_days), dtype=np.float32)  # nearest()'s first pass
        self._slots: list[int] = []
        self._index: dict[str, int] = {}
        self.version = 0
        self._digest: str | None = None  # cached content hash, dropped by every change

    # ------------------------------------------------------------------ reads
    def __len__(self) -> int:
        return len(self._forms)

    @property
    def forms(self) -> tuple[str, ...]:
        """Canonical forms in archive order."""
        return tuple(self._forms)

    @property
    def digest(self) -> str:
        """sha256 of the archive's content (forms, pins and P&L bytes); stable across processes.

        Computed once per content (a score card reports it, so it must be cheap to read).
        """
        if self._digest is not None:
            return self._digest
        h = hashlib.sha256(_FORMAT.encode())
        h.update(np.int64(self.n_days).tobytes())
        for form, pin in zip(self._forms, self._pinned, strict=True):
            h.update(b"\x1f" + form.encode() + (b"\x01" if pin else b"\x00"))
        h.update(np.ascontiguousarray(self._ordered_pnl(), dtype="<f8").tobytes())
        self._digest = h.hexdigest()
        return self._digest

    @property
    def pnl(self) -> np.ndarray:
        """(entries, n_days) daily train P&L in archive order, read-only."""
        out = self._ordered_pnl()
        out.setflags(write=False)
        return out

    def _ordered_pnl(self) -> np.ndarray:
        """The used P&L buffer rows in archive order (a new array)."""
        return self._pnl_rows[np.asarray(self._slots, dtype=np.intp)]

    def contains(self, form: str) -> bool:
        """True when canonical ``form`` is already in the archive."""
        return form in self._index

    def nearest(self, pnl: np.ndarray) -> Neighbour | None:
        """Return the entry with the largest |corr| of daily P&L with ``pnl`` (None if empty).

        ``pnl`` must cover the archive's ``n_days`` judged days; non-finite days count as 0.
        Ties go to the earliest entry, so the answer never depends on timing.  Exactly the
        argmax of |:meth:`correlations`| (same entry, same bits); see :meth:`nearest_many`.
        """
        return self.nearest_many([pnl])[0]

    def nearest_many(self, pnls: Sequence[np.ndarray]) -> list[Neighbour | None]:
        """:meth:`nearest` of each P&L, with one pass over the archive for all of them.

        The float64 pass over every entry is memory-bound (8 bytes a day an entry).  A float32
        pass does all the queries at once (:func:`_abs_dots_f32`; half the bytes, read once)
        and keeps, for each query, every entry whose |corr| can lie within the pass's rigorous
        error bound (:func:`_f32_dot_bound`) of the largest; only those are computed in float64,
        by the same loop as :meth:`correlations`.  So the result is the definition's, bit for bit.
        """
        if not self._forms:
            return [None for _ in pnls]
        if not len(pnls):
            return []
        zs = _standardise(np.stack([self._check_pnl(p) for p in pnls]))
        n = len(self._slots)
        approx = np.empty((len(zs), n))
        _abs_dots_f32(self._z32_rows[:n], zs.astype(np.float32), approx)
        where = np.empty(n, dtype=np.intp)
        where[np.asarray(self._slots, dtype=np.intp)] = np.arange(n)  # buffer row -> archive index
        return [self._nearest_of(z, a, where) for z, a in zip(zs, approx, strict=True)]

    def _nearest_of(self, z: np.ndarray, approx: np.ndarray, where: np.ndarray) -> Neighbour:
        top = approx.max()
        if not np.isfinite(top):  # not reached by a finite P&L; keep the plain definition
            corr = self._correlations_of(z)
            i = int(np.argmax(np.abs(corr)))
            return Neighbour(i, self._forms[i], float(corr[i]))
        rows = np.flatnonzero(approx >= top - 2.0 * _f32_dot_bound(self.n_days, float(np.sqrt(z @ z))))
        exact = np.einsum("ij,j->i", self._z_rows[rows], z)  # each row's sum as in correlations()
        idx = where[rows]
        mag = np.abs(exact)
        k = int(np.argmin(np.where(mag == mag.max(), idx, len(where))))  # earliest of the largest
        return Neighbour(int(idx[k]), self._forms[idx[k]], float(exact[k]))

    def correlations(self, pnl: np.ndarray) -> np.ndarray:
        """Return the Pearson correlation of ``pnl`` with every entry, in archive order."""
        return self._correlations_of(_standardise(self._check_pnl(pnl)[None, :])[0])

    def _correlations_of(self, z: np.ndarray) -> np.ndarray:
        """The correlations of a standardised P&L ``z`` with every entry, in archive order."""
        # einsum's own loop, not BLAS: a threaded BLAS may split the dot products differently
        # with the thread count, and novelty must be bit-identical on every worker.
        # Each entry's dot product is the same sum wherever its row sits in the buffer.
        phys = np.einsum("ij,j->i", self._z_rows[:len(self._slots)], z)
        return phys[np.asarray(self._slots, dtype=np.intp)]

    def _check_pnl(self, pnl: np.ndarray) -> np.ndarray:
        x = np.asarray(pnl, dtype=np.float64)
        if x.shape != (self.n_days,):
            raise ValueError(f"archive P&L must have shape ({self.n_days},), got {x.shape}")
        return x

    # ----------------------------------------------------------------- writes
    def add(self, form: str, pnl: np.ndarray, *, pinned: bool = False) -> bool:
        """Commit one accepted answer; returns False (and changes nothing) if ``form`` is known.

        Bumps ``version`` on every real change.  When full, evicts the oldest unpinned entry;
        raises ``ValueError`` when every entry is pinned.
        """
        x = self._check_pnl(pnl)
        if form in self._index:
            return False
        if len(self._forms) >= self.capacity:
            try:
                victim = self._pinned.index(False)
            except ValueError:
                raise ValueError(f"archive is full of {self.capacity} pinned entries") from None
            del self._forms[victim], self._pinned[victim]
            row = self._slots.pop(victim)
        else:
            row = len(self._slots)
            if row == len(self._pnl_rows):
                self._grow()
        self._pnl_rows[row] = x
        self._z_rows[row] = _standardise(x[None, :])[0]
        self._z32_rows[row] = self._z_rows[row]
        self._slots.append(row)
        self._forms.append(form)
        self._pinned.append(pinned)
        self._index = {f: i for i, f in enumerate(self._forms)}
        self.version += 1
        self._digest = None
        return True

    def _grow(self) -> None:
        """Double the row buffers (at most to ``capacity`` rows), keeping the used rows."""
        n = len(self._pnl_rows)
        size = min(self.capacity, max(16, 2 * n))
        for name in ("_pnl_rows", "_z_rows", "_z32_rows"):
            buf = np.zeros((size, self.n_days), dtype=getattr(self, name).dtype)
            buf[:n] = getattr(self, name)
            setattr(self, name, buf)

    # ------------------------------------------------------------- snapshots
    def snapshot(self) -> bytes:
        """Serialise the whole archive to bytes: identical archives give identical bytes.

        Layout: magic, 8-byte little-endian length of a sorted-key JSON header (format,
        n_days, capacity, version, forms, pins), the header, then the P&L as little-endian
        float64 rows.  No timestamps, no pickles.
        """
        meta = json.dumps(
            {
                "capacity": self.capacity,
                "format": _FORMAT,
                "forms": self._forms,
                "n_days": self.n_days,
                "pinned": self._pinned,
                "version": self.version,
            },
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
        body = np.ascontiguousarray(self._ordered_pnl(), dtype="<f8").tobytes()
        return _MAGIC + len(meta).to_bytes(8, "little") + meta + body

    @classmethod
    def restore(cls, blob: bytes) -> NoveltyArchive:
        """Rebuild an archive from :meth:`snapshot` bytes; ``ValueError`` on foreign or corrupt data."""
        if not isinstance(blob, bytes | bytearray) or not blob.startswith(_MAGIC):
            raise ValueError("not a gymkit archive snapshot (bad magic)")
        start = len(_MAGIC) + 8
        n = int.from_bytes(blob[len(_MAGIC):start], "little")
        try:
            meta = json.loads(bytes(blob[start:start + n]).decode())
            forms, pins = list(meta["forms"]), list(meta["pinned"])
            arc = cls(int(meta["n_days"]), int(meta["capacity"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"archive snapshot header is corrupt ({type(exc).__name__})") from None
        body = bytes(blob[start + n:])
        if meta.get("format") != _FORMAT:
            raise ValueError(f"archive snapshot format {meta.get('format')!r} is not {_FORMAT!r}")
        if len(body) != 8 * len(forms) * arc.n_days or len(pins) != len(forms):
            raise ValueError("archive snapshot is inconsistent: forms, pins and P&L rows differ")
        pnl = np.frombuffer(body, dtype="<f8").reshape(len(forms), arc.n_days).astype(np.float64)
        arc._forms = [str(f) for f in forms]
        arc._pinned = [bool(p) for p in pins]
        if len(forms) > arc.capacity:
            raise ValueError(f"archive snapshot holds {len(forms)} entries, over its capacity "
                             f"{arc.capacity}")
        arc._pnl_rows = pnl
        arc._z_rows = _standardise(pnl) if len(pnl) else np.zeros((0, arc.n_days))
        arc._z32_rows = arc._z_rows.astype(np.float32)
        arc._slots = list(range(len(forms)))
        arc._index = {f: i for i, f in enumerate(arc._forms)}
        arc.version = int(meta["version"])
        return arc
