"""Combinatorial purged cross-validation (CPCV) of a formula's daily net returns.

Maths (DESIGN §4; López de Prado 2018, *Advances in Financial Machine Learning*, ch. 12).
The D judged days are cut into ``n_blocks`` = 6 contiguous blocks B_0 … B_5 with the
sizes of ``numpy.array_split`` (the first D mod 6 blocks are one day longer).  Each of
the C(6, 2) = 15 pairs {a < b} (in ``itertools.combinations`` order) is one split s:

* test set  T_s = B_a ∪ B_b; ``SR_s = sharpe(net[T_s])`` (the two blocks' days
  concatenated in time order; Sharpe = mean/std(ddof=1)·√252, degenerate → 0);
* in-sample set I_s = every other judged day, less the ``purge`` = 10 days just
  before each test block and the ``embargo`` = 5 days just after it (days that
  are themselves test days stay test days); ``SR^IS_s = sharpe(net[I_s])``.

    score = mean(SR_1 … SR_15) − 0.5 · std(SR_1 … SR_15)      (population std, ddof=0)

Recombined paths (the standard CPCV path assignment, as skfolio's
``CombinatorialPurgedCV.recombined_paths``): each block is a test block in
C(5, 1) = 5 splits; path j (j = 0 … 4) takes, for every block, the test returns
of that block from its j-th split in combinations order, and its Sharpe is the
Sharpe of the recombined series.  A formula has no fitted parameters, so a
block's test returns are the same in every split and all 5 paths equal the
Sharpe of the whole window; :meth:`CPCV.path_sharpes` accepts split-specific
returns for the general case.

Difference from skfolio: skfolio sizes folds as ``n // n_folds`` with the
remainder in the last fold and purges ``purged_size`` days before and
``purged_size + embargo_size`` after a test fold; we use array_split sizes, 10
before and 5 after (DESIGN §4).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from .metrics import _sharpe

__all__ = ["CPCV", "CPCVResult", "cpcv_score"]


def cpcv_score(sharpes: np.ndarray) -> float:
    """Return mean(SR) − 0.5·std(SR) (population std) of the split Sharpes."""
    s = np.asarray(sharpes, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"cpcv_score needs a non-empty 1-D array of Sharpes, got shape {s.shape}")
    return float(s.mean() - 0.5 * s.std(ddof=0))


@dataclass(frozen=True)
class CPCVResult:
    """CPCV of one return series: 15 test and in-sample Sharpes, 5 path Sharpes, the score."""

    test_sharpes: np.ndarray
    is_sharpes: np.ndarray
    path_sharpes: np.ndarray
    score: float

    @property
    def mean_is(self) -> float:
        """Mean in-sample Sharpe over the splits (input of the R2 rank-drop penalty)."""
        return float(self.is_sharpes.mean())

    @property
    def mean_oos(self) -> float:
        """Mean test (out-of-sample) Sharpe over the splits."""
        return float(self.test_sharpes.mean())

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict."""
        return {
            "score": self.score,
            "test_sharpes": self.test_sharpes.tolist(),
            "is_sharpes": self.is_sharpes.tolist(),
            "path_sharpes": self.path_sharpes.tolist(),
        }


@njit(cache=True, nogil=True)
def _masked_sharpes(r: np.ndarray, idx: np.ndarray, starts: np.ndarray) -> np.ndarray:
    k = starts.shape[0] - 1
    out = np.empty(k)
    for s in range(k):
        out[s] = _sharpe(r[idx[starts[s] : starts[s + 1]]])
    return out


class CPCV:
    """Combinatorial purged cross-validator with explicit parameters (module doc has the maths).

    ``n_blocks`` (6), ``n_test_blocks`` (2), ``purge`` (10 days before each test
    block), ``embargo`` (5 days after it).  Follows the scikit-learn protocol:
    :meth:`get_n_splits` and :meth:`split`.
    """

    def __init__(self, n_blocks: int = 6, n_test_blocks: int = 2, purge: int = 10, embargo: int = 5) -> None:
        for k, v in (("n_blocks", n_blocks), ("n_test_blocks", n_test_blocks), ("purge", purge), ("embargo", embargo)):
            if not isinstance(v, int | np.integer) or isinstance(v, bool):
                raise ValueError(f"CPCV parameter {k} must be an int, got {v!r}")
        if n_blocks < 2 or not 1 <= n_test_blocks < n_blocks:
            raise ValueError(f"CPCV needs n_blocks >= 2 and 1 <= n_test_blocks < n_blocks, got {n_blocks}, {n_test_blocks}")
        if purge < 0 or embargo < 0:
            raise ValueError(f"CPCV purge and embargo must be >= 0, got {purge}, {embargo}")
        self.n_blocks = int(n_blocks)
        self.n_test_blocks = int(n_test_blocks)
        self.purge = int(purge)
        self.embargo = int(embargo)

    def __repr__(self) -> str:
        return (f"CPCV(n_blocks={self.n_blocks}, n_test_blocks={self.n_test_blocks}, "
                f"purge={self.purge}, embargo={self.embargo})")

    def to_dict(self) -> dict[str, int | str]:
        """Return the parameters with the name 'cpcv'."""
        return {"name": "cpcv", "n_blocks": self.n_blocks, "n_test_blocks": self.n_test_blocks,
                "purge": self.purge, "embargo": self.embargo}

    def _key(self) -> tuple[int, int, int, int]:
        return (self.n_blocks, self.n_test_blocks, self.purge, self.embargo)

    @property
    def test_blocks(self) -> np.ndarray:
        """(n_splits, n_test_blocks) block ids of each split's test set, combinations order."""
        return np.array(list(itertools.combinations(range(self.n_blocks), self.n_test_blocks)), dtype=np.int64)

    def get_n_splits(self) -> int:
        """Number of splits, C(n_blocks, n_test_blocks) (15)."""
        return int(self.test_blocks.shape[0])

    @property
    def n_paths(self) -> int:
        """Number of recombined paths, C(n_blocks−1, n_test_blocks−1) (5)."""
        return self.get_n_splits() * self.n_test_blocks // self.n_blocks

    def blocks(self, n_days: int) -> list[tuple[int, int]]:
        """Return the (start, stop) day ranges of the blocks (``numpy.array_split`` sizes)."""
        if n_days < self.n_blocks:
            raise ValueError(f"CPCV needs at least {self.n_blocks} judged days, got {n_days}")
        sizes = [len(a) for a in np.array_split(np.arange(n_days), self.n_blocks)]
        edges = np.concatenate([[0], np.cumsum(sizes)])
        return [(int(edges[b]), int(edges[b + 1])) for b in range(self.n_blocks)]

    def path_assignment(self) -> np.ndarray:
        """(n_blocks, n_paths) array: entry [b, j] is the split whose test returns path j uses for block b."""
        tb = self.test_blocks
        out = np.empty((self.n_blocks, self.n_paths), dtype=np.int64)
        for b in range(self.n_blocks):
            out[b] = np.nonzero((tb == b).any(axis=1))[0]
        return out

    def split(self, n_days: int):
        """Yield ``(in_sample_idx, test_idx)`` int64 index arrays for each split, in order."""
        test, insample = _index_sets(self._key(), int(n_days))
        for s in range(len(test)):
            yield insample[s], test[s]

    def sharpes(self, net: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return (test Sharpes, in-sample Sharpes), each (n_splits,), of daily returns ``net``."""
        r = np.ascontiguousarray(net, dtype=np.float64)
        idx, starts = _flat_sets(self._key(), r.shape[0])
        both = _masked_sharpes(r, idx, starts)
        k = self.get_n_splits()
        return both[:k], both[k:]

    def path_sharpes(self, net: np.ndarray, split_returns: np.ndarray | None = None) -> np.ndarray:
        """Return the (n_paths,) Sharpes of the recombined paths.

        ``split_returns`` (n_splits, D), optional: the test returns each split would
        produce (for a fitted model); by default every split sees ``net`` itself.
        """
        r = np.ascontiguousarray(net, dtype=np.float64)
        blocks = self.blocks(r.shape[0])
        assign = self.path_assignment()
        out = np.empty(self.n_paths)
        for j in range(self.n_paths):
            if split_returns is None:
                series = r
            else:
                series = np.concatenate([split_returns[assign[b, j], lo:hi] for b, (lo, hi) in enumerate(blocks)])
            out[j] = _sharpe(np.ascontiguousarray(series))
        return out

    def evaluate(self, net: np.ndarray) -> CPCVResult:
        """Return the :class:`CPCVResult` of daily net returns over the judged days."""
        test, insample = self.sharpes(net)
        r = np.ascontiguousarray(net, dtype=np.float64)
        # No fitted parameters: each block's test returns are identical in every split, so
        # every recombined path is the whole window (see module doc).
        paths = np.full(self.n_paths, _sharpe(r))
        test.setflags(write=False)
        insample.setflags(write=False)
        paths.setflags(write=False)
        return CPCVResult(test, insample, paths, cpcv_score(test))


@lru_cache(maxsize=64)
def _index_sets(key: tuple[int, int, int, int], n_days: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    n_blocks, n_test, purge, embargo = key
    cv = CPCV(n_blocks, n_test, purge, embargo)
    blocks = cv.blocks(n_days)
    tests, ins = [], []
    for pair in cv.test_blocks:
        is_test = np.zeros(n_days, dtype=bool)
        dropped = np.zeros(n_days, dtype=bool)
        for b in pair:
            lo, hi = blocks[b]
            is_test[lo:hi] = True
            dropped[max(0, lo - purge) : lo] = True
            dropped[hi : min(n_days, hi + embargo)] = True
        t_idx = np.nonzero(is_test)[0].astype(np.int64)
        i_idx = np.nonzero(~is_test & ~dropped)[0].astype(np.int64)
        t_idx.setflags(write=False)
        i_idx.setflags(write=False)
        tests.append(t_idx)
        ins.append(i_idx)
    return tests, ins


@lru_cache(maxsize=64)
def _flat_sets(key: tuple[int, int, int, int], n_days: int) -> tuple[np.ndarray, np.ndarray]:
    tests, ins = _index_sets(key, n_days)
    sets = [*tests, *ins]
    starts = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    idx = np.concatenate(sets).astype(np.int64)
    idx.setflags(write=False)
    starts.setflags(write=False)
    return idx, starts
