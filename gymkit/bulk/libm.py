"""``log`` and ``pow`` on torch with the CPU scorer's bits (glibc's libm, through Numba).

The CPU (Numba) scorer calls glibc's ``log`` and ``pow``: not correctly rounded, but within
0.52 ULP of the true value by glibc's own error analysis (sysdeps/ieee754/dbl-64/e_log.c,
e_pow.c: ``log`` 0.519 ULP; ``pow`` 0.52 ULP plus ~|y·log x|·2^-14.4 ULP from its log).  So
wherever the true value lies further than that excess (0.02 ULP) from a rounding midpoint,
glibc returns the correctly rounded double — and wherever it lies closer, glibc may return
either neighbour (it does for ~1 in 5,000 random arguments, measured against mpmath).

On a device, therefore, each value is found in double-double arithmetic:

1. ``dd_log(x)``: x = m·2^e (m in [√½, √2)), m·c_k = 1 + r exactly as a double-double
   (Dekker's product; c_k a 12-bit reciprocal of a 256-entry table, -log c_k from
   :mod:`decimal` at 40 digits), log m = -log c_k + log1p(r) (r² exact, the tail from r³ in
   double): absolute error ~2^-76, relative ~2^-66 or better.
2. ``log``: the double nearest L_hi + L_lo; ``pow``: the device's own ``pow`` r0 (within a
   few ULP), then its position against the true value from δ = y·log x - log r0 (z = r0·e^δ)
   in units of r0's ULP; the correctly rounded double is r0 moved by round(u) ULPs.
3. Every value whose position lies within the margin of a midpoint (glibc's excess plus
   this computation's own error, doubled), or that is subnormal, near overflow, on a binade
   edge or more than 3 ULP off, is handed to the host and computed by the CPU scorer's own
   Numba kernel (``gymkit.dsl.kernels``): those bits are glibc's by construction.  A ``pow``
   whose y·log x lies clearly beyond overflow (> 709.79) or below half the least subnormal
   (< -745.2) is settled on the device (inf, i.e. the kernel's NaN; a signed zero): it was
   a fifth of all pow values in the benchmark's formulas, and every one went to the host.

So the result is bit-identical to the CPU scorer on the same machine: where glibc's result
is provably the correctly rounded one it is computed on the device, elsewhere it is glibc's.
The assumption, stated: the CPU scorer's libm is glibc >= 2.28 (the bounds above); another
libm needs its own bounds.  On a CPU device the Numba kernel is called directly.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import torch

Tensor = torch.Tensor

__all__ = ["LOG_MARGIN", "POW_MARGIN", "dd_log", "log_exact", "pow_exact", "stats"]

LOG_MARGIN = 0.04
"""ULPs from a midpoint inside which a ``log`` value goes to the host (glibc's 0.019 doubled)."""
POW_MARGIN = 0.05
"""ULPs from a midpoint inside which a ``pow`` value goes to the host, plus |y·log x|·2^-13
(glibc's 0.52 ULP excess and its log term, each doubled)."""

_SPLIT = 134217729.0  # 2^27 + 1 (Veltkamp)
_LN2_HI = 6.93147180369123816490e-01  # 32 significant bits: e·LN2_HI is exact for |e| < 2^21
_LN2_LO = 1.90821492927058770002e-10
_SQRT_HALF = math.sqrt(0.5)
_POW_OVER = 709.79
"""y·log x above this: the true |x**y| >= 2^1024·(1 + 7e-6), so glibc's pow overflows (inf;
the kernel's NaN) -- settled on the device (w's error is ~1e-13 here)."""
_POW_UNDER = -745.2
"""y·log x below this: |x**y| < 2^-1075·0.94 rounds to zero (glibc: a signed 0.0)."""
_TABLE = 256

CHUNK = 1 << 25
"""Values per piece on the device path (~40 temporaries of this size are alive at once)."""

force_device_path = False
"""Take the device path on CPU tensors too (tests: CI has no GPU)."""

stats = {"cells": 0, "host": 0}
"""Counters of the values computed (``cells``) and handed to the host (``host``)."""


def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """c_k (12-bit reciprocals of k/256, k = 181..363) and -log c_k as double-doubles."""
    getcontext().prec = 40
    ks = np.arange(_TABLE * 2)
    inv = np.ones(ks.size)
    hi = np.zeros(ks.size)
    lo = np.zeros(ks.size)
    for k in range(int(_TABLE * _SQRT_HALF) - 1, 2 * _TABLE):
        c = round(2.0**11 * _TABLE / k) / 2.0**11  # <= 12 significant bits
        inv[k] = c
        v = -Decimal(c).ln()
        hi[k] = float(v)
        lo[k] = float(v - Decimal(hi[k]))
    inv[_TABLE], hi[_TABLE], lo[_TABLE] = 1.0, 0.0, 0.0
    return inv, hi, lo


_INV, _THI, _TLO = _table()
_DEV_TABLES: dict[torch.device, tuple[Tensor, Tensor, Tensor]] = {}


def _tables(dev: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    if dev not in _DEV_TABLES:
        _DEV_TABLES[dev] = tuple(torch.as_tensor(a, device=dev) for a in (_INV, _THI, _TLO))
    return _DEV_TABLES[dev]


def _two_sum(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: Tensor) -> tuple[Tensor, Tensor]:
    t = a * _SPLIT
    hi = t - (t - a)
    return hi, a - hi


def _two_prod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """a·b = p + e exactly (Dekker; no FMA, so the same bits on every device)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_log(x: Tensor) -> tuple[Tensor, Tensor]:
    """log x as a double-double (hi, lo) for finite normal x > 0 (module doc, step 1);
    other entries give garbage, to be masked by the caller."""
    inv_t, hi_t, lo_t = _tables(x.device)
    m, e = torch.frexp(x)
    low = m < _SQRT_HALF
    m = torch.where(low, m * 2.0, m)
    ef = (e - low.to(e.dtype)).to(torch.float64)
    k = torch.round(m * float(_TABLE)).to(torch.int64).clamp_(0, 2 * _TABLE - 1)
    c = inv_t[k]
    p, pe = _two_prod(m, c)
    r_hi, r_lo = _two_sum(p - 1.0, pe)  # p - 1 is exact (Sterbenz)
    sq, sq_e = _two_prod(r_hi, r_hi)
    h = r_hi
    tail = h * (1.0 / 3.0 + h * (-0.25 + h * (0.2 + h * (-1.0 / 6.0 + h * (1.0 / 7.0 + h * (
        -0.125 + h * (1.0 / 9.0 + h * (-0.1 + h * (1.0 / 11.0 + h * (-1.0 / 12.0))))))))))
    tail = (h * h) * tail + r_lo * (-r_hi)  # r³/3 - r⁴/4 + ...; the cross term of r²
    # log1p(r) = r_hi + r_lo - sq/2 - sq_e/2 + tail; then + (-log c) + e·ln2, in dd
    s, err = _two_sum(r_hi, -0.5 * sq)
    err = err + (r_lo - 0.5 * sq_e + tail)
    s, e2 = _two_sum(hi_t[k], s)
    err = err + e2 + lo_t[k]
    s, e3 = _two_sum(ef * _LN2_HI, s)
    err = err + e3 + ef * _LN2_LO
    return _two_sum(s, err)


def _ulp_pos(v: Tensor) -> Tensor:
    """ULP of each finite nonzero double v (as a double)."""
    _, e = torch.frexp(v)
    return torch.ldexp(torch.ones_like(v), e - 53)


def _host_kernel(name: str):
    from gymkit.dsl.kernels import KERNELS

    return KERNELS[name]


def _fill_from_host(out: Tensor, hard: Tensor, name: str, *args: Tensor, cells: Tensor | None = None) -> Tensor:
    """out with the ``hard`` entries replaced by the CPU scorer's kernel ``name`` of ``args``:
    only those entries travel (one ``nonzero``, the device's one wait per call; a gather of
    each argument, broadcast views included, and a scatter into ``out``, which the caller
    hands over).  ``cells``: the caller's count of computed values, read after that wait."""
    where = torch.nonzero(hard, as_tuple=True)
    n_hard = int(where[0].numel()) if where else 0
    stats["host"] += n_hard
    if cells is not None:
        stats["cells"] += int(cells)
    if n_hard == 0:
        return out
    picked = [np.ascontiguousarray(a[where].cpu().numpy()) for a in args]
    vals = np.asarray(_host_kernel(name)(*picked), dtype=np.float64)
    out[where] = torch.as_tensor(vals, device=out.device)
    return out


def log_exact(a: Tensor) -> Tensor:
    """The CPU scorer's ``log`` of ``a`` (NaN where a is not finite or <= 0), bit for bit."""
    if a.device.type == "cpu" and not force_device_path:
        return torch.from_numpy(np.asarray(_host_kernel("log")(np.ascontiguousarray(a.numpy()))))
    return _chunked(_log_dd, a)


def _chunked(fn, *args: Tensor) -> Tensor:
    """``fn`` over flat pieces of at most ``CHUNK`` values (its temporaries stay bounded)."""
    shape = args[0].shape
    if args[0].numel() <= CHUNK:
        return fn(*args)
    flat = [x.reshape(-1) for x in args]
    parts = [fn(*(x[i:i + CHUNK] for x in flat)) for i in range(0, flat[0].numel(), CHUNK)]
    return torch.cat(parts).view(shape)


def _log_chain(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The device ``log`` in torch operations: (values, for the host, defined)."""
    ok = (a > 0.0) & torch.isfinite(a)
    x = torch.where(ok, a, 1.0)
    hi, lo = dd_log(x)
    ulp = _ulp_pos(torch.where(hi == 0.0, 1.0, hi))
    frac = torch.abs(lo) / ulp  # <= 0.5 after the final two-sum (round to nearest)
    mant, _ = torch.frexp(hi)
    hard = ok & ((x < 2.2250738585072014e-308) | (0.5 - frac < LOG_MARGIN)
                 | ((torch.abs(mant) == 0.5) & (lo != 0.0)))
    hard = hard & (hi != 0.0)  # log 1 = 0 exactly
    return torch.where(ok, hi, math.nan), hard, ok


def _log_dd(a: Tensor) -> Tensor:
    from gymkit.bulk import libm_triton

    if libm_triton.use(a.device):
        out, code = libm_triton.log_codes(a)
        return _fill_from_host(out, code == 2, "log", a, cells=(code > 0).sum())
    out, hard, ok = _log_chain(a)
    return _fill_from_host(out, hard, "log", a, cells=ok.sum())


def pow_exact(a: Tensor, b: Tensor, signed: bool = False) -> Tensor:
    """The CPU scorer's ``power(a, b)`` (``signed_power`` when ``signed``) off its fast paths,
    NaN rules included, bit for bit; ``a`` and ``b`` broadcast."""
    a, b = torch.broadcast_tensors(a, b)
    name = "signed_power" if signed else "power"
    if a.device.type == "cpu" and not force_device_path:
        fn = _host_kernel(name)
        return torch.from_numpy(np.asarray(fn(np.ascontiguousarray(a.numpy()), np.ascontiguousarray(b.numpy()))))
    return _chunked(lambda x, y: _pow_dd(x, y, name), a, b)


def _pow_dd(a: Tensor, b: Tensor, name: str) -> Tensor:
    from gymkit.bulk import libm_triton

    signed = name == "signed_power"
    if libm_triton.use(a.device):
        out, code = libm_triton.pow_codes(a, b, signed)
        return _fill_from_host(out, code == 2, name, a, b, cells=(code > 0).sum())
    out, hard, ok = _pow_chain(a, b, signed)
    return _fill_from_host(out, hard, name, a, b, cells=ok.sum())


def _pow_chain(a: Tensor, b: Tensor, signed: bool) -> tuple[Tensor, Tensor, Tensor]:
    """The device ``power`` / ``signed_power`` in torch operations: (values, for the host,
    defined)."""
    fin = torch.isfinite(a) & torch.isfinite(b)
    x = torch.abs(a)
    integral = b == torch.floor(b)
    bad = ~fin | ((x == 0.0) & (b < 0.0))
    if not signed:
        bad = bad | ((a < 0.0) & ~integral)
    xs = torch.where(bad | (x == 0.0), 1.0, x)
    ys = torch.where(bad, 0.0, b)
    with torch.no_grad():
        r0 = torch.pow(xs, ys)
    lx_hi, lx_lo = dd_log(xs)
    w_hi, w_e = _two_prod(ys, lx_hi)
    w_lo = w_e + ys * lx_lo
    rs = torch.where((r0 > 0.0) & torch.isfinite(r0), r0, 1.0)
    lr_hi, lr_lo = dd_log(rs)
    d_hi, d_e = _two_sum(w_hi, -lr_hi)
    delta = d_hi + (d_e + (w_lo - lr_lo))
    mant, _ = torch.frexp(rs)
    u = delta * mant * 2.0**53  # position of the true value from r0, in r0's ULPs
    k = torch.round(u)
    dist = torch.abs(u - k)
    w_abs = torch.abs(w_hi)
    margin = POW_MARGIN + w_abs * 2.0**-13 + (torch.abs(ys) + 1.0) * 2.0**-20
    edge = (mant == 0.5) & (u < 0.0)  # below a power of two the ULP halves
    z = r0
    for step in (1, 2, 3):  # move r0 by k ULPs (|k| <= 3 off the hard cells)
        z = torch.where(k >= step, torch.nextafter(z, torch.full_like(z, math.inf)), z)
        z = torch.where(k <= -step, torch.nextafter(z, torch.zeros_like(z)), z)
    crossed = torch.frexp(z)[1] != torch.frexp(rs)[1]
    normal = xs >= 2.2250738585072014e-308  # dd_log (so w) holds for normal bases only
    over = normal & (w_hi > _POW_OVER)
    under = normal & (w_hi < _POW_UNDER)
    z = torch.where(over, math.inf, torch.where(under, 0.0, z))
    hard = ~bad & (x != 0.0) & ~over & ~under & (
        (0.5 - dist < margin) | ~torch.isfinite(u) | (torch.abs(k) > 3.0) | edge | crossed
        | (w_abs > 700.0) | ~normal | (rs != r0))
    z = torch.where(x == 0.0, torch.pow(x, ys), z)  # 0**b: 0 (b > 0) or 1 (b == 0), exact
    odd = integral & (torch.remainder(torch.abs(ys), 2.0) == 1.0)
    mag = torch.where(torch.isfinite(z), z, math.nan)
    if signed:
        out = torch.where(a < 0.0, -mag, torch.where(a > 0.0, mag, mag * 0.0))
    else:  # pow(-x, odd) = -pow(x, odd); a zero base keeps pow's own signed zero
        out = torch.where((a < 0.0) & odd, -mag, mag)
        out = torch.where(x == 0.0, torch.pow(a, ys), out)
    return torch.where(bad, math.nan, out), hard, ~bad
