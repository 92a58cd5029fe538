"""Cross-sectional kernels (one day across stocks) other than rank: scale, group_neutralize.

Sums are Neumaier-compensated, so a row's result does not depend on the stocks' order
beyond rounding of the compensated sum.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .plumbing import NAN as _NAN
from .plumbing import NJIT as _NJIT
from .plumbing import as_matrix, read_only, rows_kernel
from .plumbing import clean as _clean
from .plumbing import neumaier as _neumaier


@njit(**_NJIT)
def _scale_rows(x, out):
    for t in range(x.shape[0]):
        s = 0.0
        c = 0.0
        for j in range(x.shape[1]):
            if math.isfinite(x[t, j]):
                s, c = _neumaier(s, c, abs(x[t, j]))
        s += c
        for j in range(x.shape[1]):
            v = x[t, j]
            out[t, j] = _clean(v / s) if (s > 0.0 and math.isfinite(v)) else _NAN


@njit(**_NJIT)
def _group_neutralize_rows(x, codes, out):
    n_groups = 0
    for j in range(codes.shape[0]):
        n_groups = max(n_groups, codes[j] + 1)
    sums = np.empty(n_groups)
    comp = np.empty(n_groups)
    counts = np.empty(n_groups)
    for t in range(x.shape[0]):
        sums[:] = 0.0
        comp[:] = 0.0
        counts[:] = 0.0
        for j in range(x.shape[1]):
            g = codes[j]
            if g >= 0 and math.isfinite(x[t, j]):
                sums[g], comp[g] = _neumaier(sums[g], comp[g], x[t, j])
                counts[g] += 1.0
        for j in range(x.shape[1]):
            g = codes[j]
            v = x[t, j]
            if g >= 0 and math.isfinite(v):
                out[t, j] = _clean(v - (sums[g] + comp[g]) / counts[g])
            else:
                out[t, j] = _NAN



scale = rows_kernel(_scale_rows, "scale", "Per row: x / sum|x| over finite values; a row with "
                    "sum|x| == 0 is NaN.")


def group_neutralize(x: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per row: x minus its group's mean of finite values; codes int64 (N,), -1 -> NaN."""
    x = as_matrix(x, "group_neutralize")
    codes = read_only(np.asarray(codes, dtype=np.int64))
    if codes.shape != (x.shape[1],):
        raise ValueError(f"group_neutralize: codes must have shape ({x.shape[1]},), got {codes.shape}")
    out = np.empty(x.shape)
    _group_neutralize_rows(x, codes, out)
    return out
