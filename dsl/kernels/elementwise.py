"""Element-wise kernels: one scalar function per operator, made a broadcasting ufunc.

Each kernel accepts arrays or Python/NumPy scalars for any operand and broadcasts them; an
all-scalar call returns a float.  Semantics: the operator table (``gymkit.dsl.operators``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit, vectorize

from .plumbing import JIT as _JIT
from .plumbing import NAN as _NAN
from .plumbing import NJIT as _NJIT
from .plumbing import clean as _clean

_U1 = ["float64(float64)"]
_U2 = ["float64(float64, float64)"]
_U3 = ["float64(float64, float64, float64)"]


@vectorize(_U2, **_JIT)
def _add(a, b):
    return _clean(a + b)


@vectorize(_U2, **_JIT)
def _sub(a, b):
    return _clean(a - b)


@vectorize(_U2, **_JIT)
def _mul(a, b):
    return _clean(a * b)


@vectorize(_U2, **_JIT)
def _div(a, b):
    if b == 0.0 or not math.isfinite(b):
        return _NAN
    return _clean(a / b)


@vectorize(_U1, **_JIT)
def _neg(a):
    return _clean(-a)


@vectorize(_U1, **_JIT)
def _abs(a):
    return _clean(abs(a))


@vectorize(_U1, **_JIT)
def _log(a):
    if a > 0.0 and math.isfinite(a):
        return math.log(a)
    return _NAN


@vectorize(_U1, **_JIT)
def _sqrt(a):
    if a >= 0.0 and math.isfinite(a):
        return math.sqrt(a)
    return _NAN


@vectorize(_U1, **_JIT)
def _sign(a):
    if not math.isfinite(a):
        return _NAN
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    return 0.0


@njit(inline="always", **_NJIT)
def _real_power(a, b):
    """a**b when real and finite, else NaN."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    if a < 0.0 and b != math.floor(b):
        return _NAN
    if a == 0.0 and b < 0.0:
        return _NAN
    return _clean(a**b)


@vectorize(_U2, **_JIT)
def _power(a, b):
    return _real_power(a, b)


@vectorize(_U2, **_JIT)
def _signed_power(a, b):
    if not math.isfinite(a):
        return _NAN
    mag = _real_power(abs(a), b)
    if a < 0.0:
        return -mag
    return mag if a > 0.0 else mag * 0.0  # 0**b is 0 (b > 0), 1 (b == 0) or NaN


@vectorize(_U2, **_JIT)
def _min(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    return (a if a < b else b) + 0.0  # + 0.0 maps -0.0 to +0.0: symmetric bits


@vectorize(_U2, **_JIT)
def _max(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    return (a if a > b else b) + 0.0


# Comparisons and logic: one ufunc per relation (a relation code passed as a third ufunc
# operand was read per element, so LLVM could not vectorise the loop).
@njit(inline="always", **_NJIT)
def _truth(a, b, r):
    """1.0/0.0 for the relation's outcome r; NaN if either operand is not finite."""
    return (1.0 if r else 0.0) if (math.isfinite(a) and math.isfinite(b)) else _NAN


@vectorize(_U2, **_JIT)
def _lt(a, b):
    return _truth(a, b, a < b)


@vectorize(_U2, **_JIT)
def _le(a, b):
    return _truth(a, b, a <= b)


@vectorize(_U2, **_JIT)
def _gt(a, b):
    return _truth(a, b, a > b)


@vectorize(_U2, **_JIT)
def _ge(a, b):
    return _truth(a, b, a >= b)


@vectorize(_U2, **_JIT)
def _eq(a, b):
    return _truth(a, b, a == b)


@vectorize(_U2, **_JIT)
def _ne(a, b):
    return _truth(a, b, a != b)


@vectorize(_U2, **_JIT)
def _and(a, b):
    return _truth(a, b, (a != 0.0) & (b != 0.0))


@vectorize(_U2, **_JIT)
def _or(a, b):
    return _truth(a, b, (a != 0.0) | (b != 0.0))


@vectorize(_U3, **_JIT)
def _where(c, a, b):
    if not math.isfinite(c):
        return _NAN
    return _clean(a) if c != 0.0 else _clean(b)


def _as_result(r: object) -> np.ndarray | float:
    """A ufunc result as a fresh C-contiguous float64 array (scalars stay scalars)."""
    if isinstance(r, np.ndarray) and r.ndim:
        return np.ascontiguousarray(r, dtype=np.float64)
    return float(r)  # every operand was a scalar


def _elementwise(ufunc: Callable, name: str, doc: str) -> Callable:
    """Wrap a scalar ufunc as the public kernel ``name`` (arrays or scalars in)."""

    def kernel(*args):
        with np.errstate(all="ignore"):  # NaN/inf are handled by the rules above
            return _as_result(ufunc(*args))
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


add = _elementwise(_add, "add", "a + b; non-finite -> NaN.")
sub = _elementwise(_sub, "sub", "a - b; non-finite -> NaN.")
mul = _elementwise(_mul, "mul", "a * b; non-finite -> NaN.")
div = _elementwise(_div, "div", "a / b; b == 0 or non-finite result -> NaN.")
neg = _elementwise(_neg, "neg", "-x.")
abs_ = _elementwise(_abs, "abs", "|x|.")
log = _elementwise(_log, "log", "log x for x > 0, else NaN.")
sqrt = _elementwise(_sqrt, "sqrt", "sqrt x for x >= 0, else NaN.")
sign = _elementwise(_sign, "sign", "-1, 0 or 1; NaN stays NaN.")
_power_any = _elementwise(_power, "power", "x**y when real and finite, else NaN.")
_signed_power_any = _elementwise(_signed_power, "signed_power",
                                 "sign(x)·|x|**a; NaN when not finite.")


# Scalar exponents 2, 0.5 and 1 (the common ones: x^2, (h*l)^0.5, x^1) by one
# multiplication / a square root / a copy: correctly rounded (libm's pow(x, 2.0) and pow(x, 0.5) are off by an ulp in
# some cases; numpy's reference takes the same fast paths) and cheaper.
# Same NaN rules as _real_power; "+ 0.0" maps -0.0 to +0.0 as pow(-0.0, b) does.
@vectorize(_U1, **_JIT)
def _square(a):
    return _clean(a * a)


@vectorize(_U1, **_JIT)
def _signed_square(a):
    m = _clean(a * a)
    return -m if a < 0.0 else m


@vectorize(_U1, **_JIT)
def _root(a):
    return math.sqrt(a) + 0.0 if (a >= 0.0 and math.isfinite(a)) else _NAN


@vectorize(_U1, **_JIT)
def _signed_root(a):
    if not math.isfinite(a):
        return _NAN
    r = math.sqrt(abs(a))
    return -r if a < 0.0 else r + 0.0


@vectorize(_U1, **_JIT)
def _identity(a):
    return _clean(a)  # pow(x, 1) is x exactly (-0.0 included)


@vectorize(_U1, **_JIT)
def _signed_identity(a):
    return _clean(a) + 0.0  # sign(x)·|x|: -0.0 -> +0.0 as the general path


_SCALAR_POWERS = {2.0: (_square, _signed_square), 0.5: (_root, _signed_root),
                  1.0: (_identity, _signed_identity)}


def _scalar_power(a: object, b: object, signed: bool) -> Callable | None:
    """The fast ufunc for array ``a`` and scalar exponent ``b`` in _SCALAR_POWERS, or None."""
    if not isinstance(a, np.ndarray) or isinstance(b, bool | np.ndarray) \
            or not isinstance(b, float | int | np.floating | np.integer):
        return None
    pair = _SCALAR_POWERS.get(float(b))
    return None if pair is None else pair[signed]


def _power_dispatch(a: object, b: object, signed: bool, general: Callable) -> np.ndarray | float:
    """The scalar-exponent fast ufunc when there is one, else ``general`` (the pow path)."""
    fast = _scalar_power(a, b, signed)
    if fast is None:
        return general(a, b)
    with np.errstate(all="ignore"):
        return _as_result(fast(a))


def power(a, b):
    """x**y when real and finite, else NaN."""
    return _power_dispatch(a, b, False, _power_any)


def signed_power(a, b):
    """sign(x)·|x|**a; NaN when not finite."""
    return _power_dispatch(a, b, True, _signed_power_any)


min_ = _elementwise(_min, "min", "Element-wise min; NaN if either is NaN; symmetric bits.")
max_ = _elementwise(_max, "max", "Element-wise max; NaN if either is NaN; symmetric bits.")
where = _elementwise(_where, "where", "c ? a : b; NaN if c is NaN; a where c != 0 else b.")
lt, le, gt, ge, eq, ne, and_, or_ = (
    _elementwise(ufunc, name, f"1.0/0.0 for {sym}; NaN if either operand is NaN.")
    for ufunc, name, sym in (
        (_lt, "lt", "a < b"), (_le, "le", "a <= b"), (_gt, "gt", "a > b"), (_ge, "ge", "a >= b"),
        (_eq, "eq", "a == b"), (_ne, "ne", "a != b"), (_and, "and", "a != 0 && b != 0"),
        (_or, "or", "a != 0 || b != 0")))

