"""Shared plumbing of the DSL kernels: compile options, scalar helpers, input checks, wrappers.

Every public kernel takes float64 (T, N) arrays (time on axis 0, stocks on axis 1) and
integer windows and returns a new C-contiguous float64 (T, N) array.  Inputs are normalised
by :func:`as_matrix` to read-only C-contiguous float64, so one compilation of each engine
serves every caller.  No fastmath and no threads anywhere: each value's floating-point
operations are fixed by the code, so results are deterministic bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

NAN = np.nan
JIT = {"nopython": True, "cache": True}
"""Options of the element-wise ``numba.vectorize`` ufuncs."""
NJIT = {"cache": True, "nogil": True, "error_model": "numpy"}
"""Options of every ``numba.njit`` engine (numpy error model: no ZeroDivisionError checks,
so LLVM can vectorise divisions)."""


@njit(inline="always", **NJIT)
def clean(r):
    """r if finite else NaN: the one place ±inf becomes NaN."""
    return r if math.isfinite(r) else NAN


@njit(inline="always", **NJIT)
def neumaier(s, c, v):
    """One Neumaier-compensated step: returns (s + v, updated compensation)."""
    t = s + v
    if abs(s) >= abs(v):
        c += (s - t) + v
    else:
        c += (v - t) + s
    return t, c


def as_matrix(x: object, name: str) -> np.ndarray:
    """``x`` as a read-only C-contiguous float64 (T, N) array (:func:`read_only`); a one-line
    ValueError naming the kernel if not 2-D."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a (T, N) float64 array, got shape {a.shape}")
    return read_only(a)


def read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous array that is read-only (a view when ``a`` is writable): every
    compiled kernel sees only read-only inputs, so one compilation serves every caller."""
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def as_window(d: object, name: str) -> int:
    """``d`` as a positive int window; a one-line ValueError naming the kernel if not."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"{name}: window must be an integer >= 1, got {d!r}")
    return int(d)


def rows_kernel(engine: Callable, name: str, doc: str) -> Callable:
    """Public (x) kernel ``name``: ``engine(x, out)`` over the whole panel."""

    def kernel(x: np.ndarray) -> np.ndarray:
        x = as_matrix(x, name)
        out = np.empty(x.shape)
        engine(x, out)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


def window_kernel(engine: Callable, name: str, doc: str, stat: int | None = None) -> Callable:
    """Public (x, d) kernel ``name``: ``engine(x, d, out)`` over the whole panel, or
    ``engine(x, d, out, stat)`` when the engine serves several statistics."""

    def kernel(x: np.ndarray, d: int) -> np.ndarray:
        x = as_matrix(x, name)
        d = as_window(d, name)
        out = np.empty(x.shape)
        if stat is None:
            engine(x, d, out)
        else:
            engine(x, d, out, stat)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


def pair_window_kernel(engine: Callable, name: str, doc: str, stat: int) -> Callable:
    """Public (x, y, d) kernel ``name``: ``engine(x, y, d, out, stat)`` over the whole panel."""

    def kernel(x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray:
        x = as_matrix(x, name)
        y = as_matrix(y, name)
        if x.shape != y.shape:
            raise ValueError(f"{name}: x and y shapes differ: {x.shape} vs {y.shape}")
        d = as_window(d, name)
        out = np.empty(x.shape)
        engine(x, y, d, out, stat)
        return out

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel
