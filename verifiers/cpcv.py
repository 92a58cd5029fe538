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

from gymkit.dsl.kernels import read_only

from .metrics import _sharpe, _sharpe_from, numpy_mean, numpy_std

__all__ = ["CPCV", "CPCVResult", "cpcv_score"]


def cpcv_score(sharpes: np.ndarray) -> float:
    """Return mean(SR) − 0.5·std(SR) (population std) of the split Sharpes."""
    s = np.asarray(sharpes, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"cpcv_score needs a non-empty 1-D array of Sharpes, got shape {s.shape}")
    return float(_score(np.ascontiguousarray(s)))


@njit(cache=True, nogil=True, error_model="numpy")
def _score(s: np.ndarray) -> float:
    """mean − 0.5·std(ddof=0) with numpy's own summation order (the bits of ``s.mean() − 0.5·s.std()``)."""
    return numpy_mean(s) - 0.5 * numpy_std(s, 0)


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


@njit(cache=True, nogil=True, error_model="numpy")
def _grouped_sharpes(r: np.ndarray, idx: np.ndarray, starts: np.ndarray, groups: np.ndarray,
                     out: np.ndarray) -> np.ndarray:
    """out[q] = sharpe(r[idx[starts[q]:starts[q + 1]]]) for every set q named in ``groups``.

    The sets of a (G, 4) row of ``groups`` advance together: four independent add chains
    per step instead of one latency-bound chain, while each set's sums (Σ r, then
    Σ (r − mean)²) still run in its own order, one element after the other — the same
    bits as :func:`gymkit.verifiers.metrics._sharpe` on the gathered series.
    """
    for g in range(groups.shape[0]):
        q0 = groups[g, 0]
        q1 = groups[g, 1]
        q2 = groups[g, 2]
        q3 = groups[g, 3]
        i0 = idx[starts[q0] : starts[q0 + 1]]
        i1 = idx[starts[q1] : starts[q1 + 1]]
        i2 = idx[starts[q2] : starts[q2 + 1]]
        i3 = idx[starts[q3] : starts[q3 + 1]]
        n0 = i0.shape[0]
        n1 = i1.shape[0]
        n2 = i2.shape[0]
        n3 = i3.shape[0]
        common = min(min(n0, n1), min(n2, n3))
        s0 = s1 = s2 = s3 = 0.0
        for p in range(common):
            s0 += r[i0[p]]
            s1 += r[i1[p]]
            s2 += r[i2[p]]
            s3 += r[i3[p]]
        for p in range(common, n0):
            s0 += r[i0[p]]
        for p in range(common, n1):
            s1 += r[i1[p]]
        for p in range(common, n2):
            s2 += r[i2[p]]
        for p in range(common, n3):
            s3 += r[i3[p]]
        m0 = s0 / n0 if n0 > 0 else 0.0
        m1 = s1 / n1 if n1 > 0 else 0.0
        m2 = s2 / n2 if n2 > 0 else 0.0
        m3 = s3 / n3 if n3 > 0 else 0.0
        v0 = v1 = v2 = v3 = 0.0
        for p in range(common):
            d0 = r[i0[p]] - m0
            d1 = r[i1[p]] - m1
            d2 = r[i2[p]] - m2
            d3 = r[i3[p]] - m3
            v0 += d0 * d0
            v1 += d1 * d1
            v2 += d2 * d2
            v3 += d3 * d3
        for p in range(common, n0):
            d0 = r[i0[p]] - m0
            v0 += d0 * d0
        for p in range(common, n1):
            d1 = r[i1[p]] - m1
            v1 += d1 * d1
        for p in range(common, n2):
            d2 = r[i2[p]] - m2
            v2 += d2 * d2
        for p in range(common, n3):
            d3 = r[i3[p]] - m3
            v3 += d3 * d3
        out[q0] = _sharpe_from(n0, m0, v0)
        out[q1] = _sharpe_from(n1, m1, v1)
        out[q2] = _sharpe_from(n2, m2, v2)
        out[q3] = _sharpe_from(n3, m3, v3)
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
        r = read_only(np.asarray(net, dtype=np.float64))  # one compiled signature for every caller
        idx, starts, groups = _flat_sets(self._key(), r.shape[0])
        both = _grouped_sharpes(r, idx, starts, groups, np.empty(starts.shape[0] - 1))
        k = starts.shape[0] // 2
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

    def evaluate(self, net: np.ndarray, full_sharpe: float | None = None) -> CPCVResult:
        """Return the :class:`CPCVResult` of daily net returns over the judged days.

        ``full_sharpe``: ``sharpe(net)`` when the caller has it (the metrics do), else computed.
        """
        test, insample = self.sharpes(net)
        if full_sharpe is None:
            full_sharpe = _sharpe(np.ascontiguousarray(net, dtype=np.float64))
        # No fitted parameters: each block's test returns are identical in every split, so
        # every recombined path is the whole window (see module doc).
        paths = np.full(self.n_paths, full_sharpe)
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
def _flat_sets(key: tuple[int, int, int, int], n_days: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(idx, starts, groups): the test sets then the in-sample sets, concatenated; set q is
    ``idx[starts[q]:starts[q + 1]]``; ``groups`` (G, 4) the set ids by length, four at a
    time (the last row repeats its last set) for :func:`_grouped_sharpes`."""
    tests, ins = _index_sets(key, n_days)
    sets = [*tests, *ins]
    lengths = np.array([len(s) for s in sets], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    idx = np.concatenate(sets).astype(np.int64)
    order = np.argsort(lengths, kind="stable")
    n_groups = -(-len(sets) // 4)
    groups = np.concatenate([order, np.repeat(order[-1:], n_groups * 4 - len(sets))]).reshape(n_groups, 4)
    for a in (idx, starts, groups):
        a.setflags(write=False)
    return idx, starts, np.ascontiguousarray(groups, dtype=np.int64)
