"""Element-wise kernels: one scalar function per operator, each run by its own compiled loop.

Each kernel accepts arrays or Python/NumPy scalars for any operand and broadcasts them as a
NumPy ufunc would; an all-scalar call returns a float.  Semantics: the operator table
(``gymkit.dsl.operators``).

Why loops and not ``numba.vectorize``: a vectorize ufunc rebuilds its NumPy loop wrapper with
LLVM on every import, cached or not (~80 ms each, 2.3 s for 28 ufuncs in every process).  Here
each scalar function is inlined into its own ``@njit`` loop engine, one compiled signature
each, compiled (once per install) or loaded from Numba's cache on its first call, so a
formula pays only for the operators it uses; a scalar operand is read once, outside the loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

from .plumbing import NAN as _NAN
from .plumbing import NJIT as _NJIT
from .plumbing import clean as _clean
from .plumbing import read_only as _read_only

_INLINE = {"inline": "always", **_NJIT}


@njit(**_INLINE)
def _add(a, b):
    return _clean(a + b)


@njit(**_INLINE)
def _sub(a, b):
    return _clean(a - b)


@njit(**_INLINE)
def _mul(a, b):
    return _clean(a * b)


@njit(**_INLINE)
def _div(a, b):
    if b == 0.0 or not math.isfinite(b):
        return _NAN
    return _clean(a / b)


@njit(**_INLINE)
def _neg(a):
    return _clean(-a)


@njit(**_INLINE)
def _abs(a):
    return _clean(abs(a))


@njit(**_INLINE)
def _log(a):
    if a > 0.0 and math.isfinite(a):
        return math.log(a)
    return _NAN


@njit(**_INLINE)
def _sqrt(a):
    if a >= 0.0 and math.isfinite(a):
        return math.sqrt(a)
    return _NAN


@njit(**_INLINE)
def _sign(a):
    if not math.isfinite(a):
        return _NAN
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    return 0.0


@njit(**_INLINE)
def _real_power(a, b):
    """a**b when real and finite, else NaN."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    if a < 0.0 and b != math.floor(b):
        return _NAN
    if a == 0.0 and b < 0.0:
        return _NAN
    return _clean(a**b)


@njit(**_INLINE)
def _power(a, b):
    return _real_power(a, b)


@njit(**_INLINE)
def _signed_power(a, b):
    if not math.isfinite(a):
        return _NAN
    mag = _real_power(abs(a), b)
    if a < 0.0:
        return -mag
    return mag if a > 0.0 else mag * 0.0  # 0**b is 0 (b > 0), 1 (b == 0) or NaN


@njit(**_INLINE)
def _min(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    return (a if a < b else b) + 0.0  # + 0.0 maps -0.0 to +0.0: symmetric bits


@njit(**_INLINE)
def _max(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return _NAN
    return (a if a > b else b) + 0.0


# Comparisons and logic: one scalar function per relation (each gets its own loop below, so
# LLVM can vectorise it; a relation code read per element could not be).
@njit(**_INLINE)
def _truth(a, b, r):
    """1.0/0.0 for the relation's outcome r; NaN if either operand is not finite."""
    return (1.0 if r else 0.0) if (math.isfinite(a) and math.isfinite(b)) else _NAN


@njit(**_INLINE)
def _lt(a, b):
    return _truth(a, b, a < b)


@njit(**_INLINE)
def _le(a, b):
    return _truth(a, b, a <= b)


@njit(**_INLINE)
def _gt(a, b):
    return _truth(a, b, a > b)


@njit(**_INLINE)
def _ge(a, b):
    return _truth(a, b, a >= b)


@njit(**_INLINE)
def _eq(a, b):
    return _truth(a, b, a == b)


@njit(**_INLINE)
def _ne(a, b):
    return _truth(a, b, a != b)


@njit(**_INLINE)
def _and(a, b):
    return _truth(a, b, (a != 0.0) & (b != 0.0))


@njit(**_INLINE)
def _or(a, b):
    return _truth(a, b, (a != 0.0) | (b != 0.0))


@njit(**_INLINE)
def _where(c, a, b):
    if not math.isfinite(c):
        return _NAN
    return _clean(a) if c != 0.0 else _clean(b)


# Scalar exponents 2, 0.5 and 1 (the common ones: x^2, (h*l)^0.5, x^1) by one
# multiplication / a square root / a copy: correctly rounded (libm's pow(x, 2.0) and pow(x, 0.5) are off by an ulp in
# some cases; numpy's reference takes the same fast paths) and cheaper.
# Same NaN rules as _real_power; "+ 0.0" maps -0.0 to +0.0 as pow(-0.0, b) does.
@njit(**_INLINE)
def _square(a):
    return _clean(a * a)


@njit(**_INLINE)
def _signed_square(a):
    m = _clean(a * a)
    return -m if a < 0.0 else m


@njit(**_INLINE)
def _root(a):
    return math.sqrt(a) + 0.0 if (a >= 0.0 and math.isfinite(a)) else _NAN


@njit(**_INLINE)
def _signed_root(a):
    if not math.isfinite(a):
        return _NAN
    r = math.sqrt(abs(a))
    return -r if a < 0.0 else r + 0.0


@njit(**_INLINE)
def _identity(a):
    return _clean(a)  # pow(x, 1) is x exactly (-0.0 included)


@njit(**_INLINE)
def _signed_identity(a):
    return _clean(a) + 0.0  # sign(x)·|x|: -0.0 -> +0.0 as the general path


# ------------------------------------------------------------------ loop engines
# Operands reach the engines as 1-D read-only C arrays: of the result's size (``full``) or of
# size 1 (a scalar, read once).  ``out`` has the result's size.
@njit(**_INLINE)
def _map1(f, a, out):
    for i in range(out.size):
        out[i] = f(a[i])


@njit(**_INLINE)
def _map2(f, a, b, out):
    n = out.size
    if a.size == n and b.size == n:
        for i in range(n):
            out[i] = f(a[i], b[i])
    elif a.size == n:
        y = b[0]
        for i in range(n):
            out[i] = f(a[i], y)
    else:
        x = a[0]
        for i in range(n):
            out[i] = f(x, b[i])


# One engine per operator: a formula compiles (once per install) only the operators it uses.
@njit(**_NJIT)
def _neg_engine(a, out):
    _map1(_neg, a, out)


@njit(**_NJIT)
def _abs_engine(a, out):
    _map1(_abs, a, out)


@njit(**_NJIT)
def _log_engine(a, out):
    _map1(_log, a, out)


@njit(**_NJIT)
def _sqrt_engine(a, out):
    _map1(_sqrt, a, out)


@njit(**_NJIT)
def _sign_engine(a, out):
    _map1(_sign, a, out)


@njit(**_NJIT)
def _square_engine(a, out):
    _map1(_square, a, out)


@njit(**_NJIT)
def _signed_square_engine(a, out):
    _map1(_signed_square, a, out)


@njit(**_NJIT)
def _root_engine(a, out):
    _map1(_root, a, out)


@njit(**_NJIT)
def _signed_root_engine(a, out):
    _map1(_signed_root, a, out)


@njit(**_NJIT)
def _identity_engine(a, out):
    _map1(_identity, a, out)


@njit(**_NJIT)
def _signed_identity_engine(a, out):
    _map1(_signed_identity, a, out)


@njit(**_NJIT)
def _add_engine(a, b, out):
    _map2(_add, a, b, out)


@njit(**_NJIT)
def _sub_engine(a, b, out):
    _map2(_sub, a, b, out)


@njit(**_NJIT)
def _mul_engine(a, b, out):
    _map2(_mul, a, b, out)


@njit(**_NJIT)
def _div_engine(a, b, out):
    _map2(_div, a, b, out)


@njit(**_NJIT)
def _power_engine(a, b, out):
    _map2(_power, a, b, out)


@njit(**_NJIT)
def _signed_power_engine(a, b, out):
    _map2(_signed_power, a, b, out)


@njit(**_NJIT)
def _min_engine(a, b, out):
    _map2(_min, a, b, out)


@njit(**_NJIT)
def _max_engine(a, b, out):
    _map2(_max, a, b, out)


@njit(**_NJIT)
def _lt_engine(a, b, out):
    _map2(_lt, a, b, out)


@njit(**_NJIT)
def _le_engine(a, b, out):
    _map2(_le, a, b, out)


@njit(**_NJIT)
def _gt_engine(a, b, out):
    _map2(_gt, a, b, out)


@njit(**_NJIT)
def _ge_engine(a, b, out):
    _map2(_ge, a, b, out)


@njit(**_NJIT)
def _eq_engine(a, b, out):
    _map2(_eq, a, b, out)


@njit(**_NJIT)
def _ne_engine(a, b, out):
    _map2(_ne, a, b, out)


@njit(**_NJIT)
def _and_engine(a, b, out):
    _map2(_and, a, b, out)


@njit(**_NJIT)
def _or_engine(a, b, out):
    _map2(_or, a, b, out)


_ENGINES = {
    "neg": _neg_engine,
    "abs": _abs_engine,
    "log": _log_engine,
    "sqrt": _sqrt_engine,
    "sign": _sign_engine,
    "square": _square_engine,
    "signed_square": _signed_square_engine,
    "root": _root_engine,
    "signed_root": _signed_root_engine,
    "identity": _identity_engine,
    "signed_identity": _signed_identity_engine,
    "add": _add_engine,
    "sub": _sub_engine,
    "mul": _mul_engine,
    "div": _div_engine,
    "power": _power_engine,
    "signed_power": _signed_power_engine,
    "min": _min_engine,
    "max": _max_engine,
    "lt": _lt_engine,
    "le": _le_engine,
    "gt": _gt_engine,
    "ge": _ge_engine,
    "eq": _eq_engine,
    "ne": _ne_engine,
    "and": _and_engine,
    "or": _or_engine,
}


@njit(**_NJIT)
def _where_engine(c, a, b, out):
    n = out.size
    if c.size == n and a.size == n and b.size == n:
        for i in range(n):
            out[i] = _where(c[i], a[i], b[i])
    else:  # some operand is a scalar: stride 0
        sc = 1 if c.size == n else 0
        sa = 1 if a.size == n else 0
        sb = 1 if b.size == n else 0
        for i in range(n):
            out[i] = _where(c[i * sc], a[i * sa], b[i * sb])


# ------------------------------------------------------------------ public kernels
def _operands(name: str, args: tuple) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """(result shape, operands as 1-D read-only float64 arrays of the result's size or of size 1).

    Broadcasting and input casting follow a float64 NumPy ufunc: numbers that cast safely to
    float64 (bool, integers, floats up to 64 bits); anything else is a one-line TypeError, and
    shapes that do not broadcast a one-line ValueError, both naming the kernel.
    """
    arrays = []
    for k, x in enumerate(args):
        a = np.asarray(x)
        if not np.can_cast(a.dtype, np.float64):
            raise TypeError(f"{name}: operand {k + 1} has dtype {a.dtype}; expected real numbers "
                            "(float64 or narrower)")
        arrays.append(a)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise ValueError(f"{name}: operand shapes {' and '.join(str(a.shape) for a in arrays)} "
                         "do not broadcast") from None
    flat = []
    for a in arrays:
        if a.shape != shape and a.size == 1:
            a = a.reshape(1)
        elif a.shape != shape:  # a broadcast row or column: materialised (a rare path)
            a = np.broadcast_to(a, shape)
        flat.append(_read_only(np.ascontiguousarray(a, dtype=np.float64).reshape(-1)))
    return shape, flat


def _result(out: np.ndarray) -> np.ndarray | float:
    """The kernel's result: ``out`` (which owns its memory, so a caller that makes it read-only
    cannot be undone through a base array), a float for scalars."""
    return out if out.ndim else float(out)


def _unary_kernel(op: str, name: str, doc: str) -> Callable:
    engine = _ENGINES[op]

    def kernel(x):
        shape, (a,) = _operands(name, (x,))
        out = np.empty(shape)
        engine(a, out.reshape(-1))
        return _result(out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


def _binary_kernel(op: str, name: str, doc: str) -> Callable:
    engine = _ENGINES[op]

    def kernel(x, y):
        shape, (a, b) = _operands(name, (x, y))
        out = np.empty(shape)
        engine(a, b, out.reshape(-1))
        return _result(out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


def where(c, a, b):
    """c ? a : b; NaN if c is NaN; a where c != 0 else b."""
    shape, (c1, a1, b1) = _operands("where", (c, a, b))
    out = np.empty(shape)
    _where_engine(c1, a1, b1, out.reshape(-1))
    return _result(out)


add = _binary_kernel("add", "add", "a + b; non-finite -> NaN.")
sub = _binary_kernel("sub", "sub", "a - b; non-finite -> NaN.")
mul = _binary_kernel("mul", "mul", "a * b; non-finite -> NaN.")
div = _binary_kernel("div", "div", "a / b; b == 0 or non-finite result -> NaN.")
neg = _unary_kernel("neg", "neg", "-x.")
abs_ = _unary_kernel("abs", "abs", "|x|.")
log = _unary_kernel("log", "log", "log x for x > 0, else NaN.")
sqrt = _unary_kernel("sqrt", "sqrt", "sqrt x for x >= 0, else NaN.")
sign = _unary_kernel("sign", "sign", "-1, 0 or 1; NaN stays NaN.")
_power_any = _binary_kernel("power", "power", "x**y when real and finite, else NaN.")
_signed_power_any = _binary_kernel("signed_power", "signed_power",
                                   "sign(x)·|x|**a; NaN when not finite.")
min_ = _binary_kernel("min", "min", "Element-wise min; NaN if either is NaN; symmetric bits.")
max_ = _binary_kernel("max", "max", "Element-wise max; NaN if either is NaN; symmetric bits.")
lt, le, gt, ge, eq, ne, and_, or_ = (
    _binary_kernel(op, op, f"1.0/0.0 for {sym}; NaN if either operand is NaN.")
    for op, sym in (
        ("lt", "a < b"), ("le", "a <= b"), ("gt", "a > b"), ("ge", "a >= b"), ("eq", "a == b"),
        ("ne", "a != b"), ("and", "a != 0 && b != 0"), ("or", "a != 0 || b != 0")))

_SCALAR_POWERS = {2.0: ("square", "signed_square"), 0.5: ("root", "signed_root"),
                  1.0: ("identity", "signed_identity")}
_FAST_POWERS = {op: _unary_kernel(op, op, "") for pair in _SCALAR_POWERS.values() for op in pair}


def _scalar_power(a: object, b: object, signed: bool) -> Callable | None:
    """The fast kernel for array ``a`` and scalar exponent ``b`` in _SCALAR_POWERS, or None."""
    if not isinstance(a, np.ndarray) or isinstance(b, bool | np.ndarray) \
            or not isinstance(b, float | int | np.floating | np.integer):
        return None
    pair = _SCALAR_POWERS.get(float(b))
    return None if pair is None else _FAST_POWERS[pair[signed]]


def _power_dispatch(a: object, b: object, signed: bool, general: Callable) -> np.ndarray | float:
    """The scalar-exponent fast kernel when there is one, else ``general`` (the pow path)."""
    fast = _scalar_power(a, b, signed)
    return general(a, b) if fast is None else fast(a)


def power(a, b):
    """x**y when real and finite, else NaN."""
    return _power_dispatch(a, b, False, _power_any)


def signed_power(a, b):
    """sign(x)·|x|**a; NaN when not finite."""
    return _power_dispatch(a, b, True, _signed_power_any)
