"""The evaluator's sub-expression cache: read-only arrays, LRU by bytes, thread-safe.

Keys are ``(canonical_key(subtree), panel.fingerprint)``: equal keys evaluate to
bit-identical arrays (the contract of :func:`gymkit.dsl.canonical.canonical_key`), so a
hit is indistinguishable from a recomputation.  Stored arrays are made read-only, so
no caller can corrupt an entry; the evaluator hands out read-only views of them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

DEFAULT_MAX_BYTES = 256 * 2**20


class EvalCache:
    """A bounded LRU map ``key -> read-only ndarray`` (bytes counted with ``nbytes``).

    ``max_bytes`` bounds the total size of the stored arrays; the least recently used
    entries are evicted first, and an array larger than the bound is never stored.
    All methods are safe to call from several threads.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"EvalCache: max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        """The stored read-only array for ``key`` (marked most recently used), or None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return hit

    def put(self, key: tuple[str, str], value: np.ndarray) -> np.ndarray:
        """Store ``value`` (made read-only in place) under ``key``; returns the stored array.

        If another thread stored ``key`` first, its array is kept and returned.
        """
        value.setflags(write=False)
        size = int(value.nbytes)
        with self._lock:
            old = self._entries.get(key)
            if old is not None:
                self._entries.move_to_end(key)
                return old
            if size > self.max_bytes:
                return value
            self._entries[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= int(evicted.nbytes)
            return value

    def reserve(self, nbytes: int) -> None:
        """Raise ``max_bytes`` to at least ``nbytes`` (never lowers it, evicts nothing)."""
        if not isinstance(nbytes, int) or nbytes < 0:
            raise ValueError(f"EvalCache.reserve: nbytes must be an int >= 0, got {nbytes!r}")
        with self._lock:
            self.max_bytes = max(self.max_bytes, nbytes)

    def clear(self) -> None:
        """Drop every entry and reset the hit/miss counters."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.hits = 0
            self.misses = 0

    @property
    def nbytes(self) -> int:
        """Total bytes of the stored arrays."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (f"EvalCache({len(self)} entries, {self._bytes / 2**20:.1f} of "
                f"{self.max_bytes / 2**20:.0f} MiB, hits={self.hits}, misses={self.misses})")


DEFAULT_CACHE = EvalCache()
"""The cache :func:`gymkit.dsl.evaluator.evaluate` uses unless told otherwise."""
