"""One Triton kernel each for :mod:`gymkit.bulk.libm`'s device ``log`` and ``pow`` (CUDA).

The torch chain of :func:`gymkit.bulk.libm.dd_log` and the position check is ~380 element-wise
operations a ``pow`` call, each a launch and a pass over memory: it led the batch scorer's
per-operator profile on the H200.  These kernels run the same IEEE operations in the same
order, one thread per value, with floating-point fusion off (no mul+add becomes an FMA:
Dekker's products depend on it), and write the value and a code per value (0: not a value
the operator defines, 1: settled on the device, 2: for the host).  So the host fallback, and
with it the bits, are the chain's.

What differs from the chain's torch form, and why it cannot change a bit:
* frexp, the ULP and nextafter are read from the 64 bits (exact for the normal positive
  values they are used on; where a value is subnormal, zero or infinite the chain flags it
  for the host on another, identically computed condition);
* round-half-even is (v + 1.5·2^52) - 1.5·2^52 (exact for |v| < 2^51; beyond, the value is
  flagged by |k| > 3 either way);
* negation is a product by -1.0, which keeps -0.0 however a Triton version lowers unary
  minus (3.9 emits a float negation; earlier versions emitted 0 - x, which loses -0.0);
* every constant that is not exact in float32 is read from a float64 tensor (Triton types a
  Python float literal as float32).

The device's ``pow`` (the chain's r0) is computed by torch before the kernel, so r0 is the
chain's too.  At first use each kernel is checked against the chain on hostile data (the
device values, the host flags and the defined mask); if one differs, the chain is used for
good (``status`` says why).  ``interpret = True`` runs them in Triton's interpreter on CPU
tensors (tests: CI has no GPU).
"""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

from gymkit.bulk import libm, triton_gate

Tensor = torch.Tensor

__all__ = ["interpret", "log_codes", "pow_codes", "status", "use"]

status: dict[str, object] = {"triton": None}
"""``triton``: None (not tried yet), True (in use), or why it is not used."""

interpret = False
"""Run the kernels in Triton's interpreter on CPU tensors (tests)."""

_BLOCK = 256
_KERNELS: dict[str, object] = {}
_DEV_CONSTS: dict[torch.device, Tensor] = {}

_CONSTS = np.array([
    libm._SQRT_HALF, libm._SPLIT, libm._LN2_HI, libm._LN2_LO,                       # 0-3
    1.0 / 3.0, -0.25, 0.2, -1.0 / 6.0, 1.0 / 7.0, -0.125, 1.0 / 9.0, -0.1, 1.0 / 11.0, -1.0 / 12.0,  # 4-13
    1.5 * 2.0**52, libm.LOG_MARGIN, libm.POW_MARGIN, 2.2250738585072014e-308,        # 14-17
    libm._POW_OVER, libm._POW_UNDER, 2.0**53, 2.0**-13, 2.0**-20, math.nan, -0.0,    # 18-24
], dtype=np.float64)


def _consts(dev: torch.device) -> Tensor:
    if dev not in _DEV_CONSTS:
        _DEV_CONSTS[dev] = torch.as_tensor(_CONSTS, device=dev)
    return _DEV_CONSTS[dev]


def _build() -> None:
    jit = triton_gate.load_jit(sys.modules[__name__], "libm_jit")
    _KERNELS.update(log=jit.log_kernel, pow=jit.pow_kernel)


def _opts() -> dict:
    return triton_gate.launch_opts(sys.modules[__name__])


def log_codes(a: Tensor) -> tuple[Tensor, Tensor]:
    """The kernel's (value, code) of :func:`gymkit.bulk.libm`'s device ``log``: code 0 where
    ``a`` is not finite or <= 0 (value NaN), 1 settled on the device, 2 for the host."""
    flat = a.contiguous().view(-1)
    out = torch.empty_like(flat)
    code = torch.empty(flat.shape, dtype=torch.int8, device=flat.device)
    n = flat.numel()
    if n:
        inv, thi, tlo = libm._tables(flat.device)
        _KERNELS["log"][(-(-n // _BLOCK),)](flat, out, code, n, inv, thi, tlo, _consts(flat.device),
                                           BLOCK=_BLOCK, **_opts())
    return out.view(a.shape), code.view(a.shape)


def pow_codes(a: Tensor, b: Tensor, signed: bool) -> tuple[Tensor, Tensor]:
    """The kernel's (value, code) of the device ``power`` / ``signed_power`` (``a``, ``b``
    broadcast): code 0 where the operator gives NaN by its rules, 1 settled, 2 for the host."""
    a, b = torch.broadcast_tensors(a, b)
    shape = a.shape
    a, b = a.contiguous().view(-1), b.contiguous().view(-1)
    with torch.no_grad():
        r_raw = torch.pow(torch.abs(a), b)  # the chain's r0 wherever it is used
    out = torch.empty_like(a)
    code = torch.empty(a.shape, dtype=torch.int8, device=a.device)
    n = a.numel()
    if n:
        inv, thi, tlo = libm._tables(a.device)
        _KERNELS["pow"][(-(-n // _BLOCK),)](a, b, r_raw, out, code, n, inv, thi, tlo, _consts(a.device),
                                           SIGNED=signed, BLOCK=_BLOCK, **_opts())
    return out.view(shape), code.view(shape)


def _agrees(got: tuple[Tensor, Tensor], chain: tuple[Tensor, Tensor, Tensor]) -> bool:
    """Same defined mask, same host flags, and the same 64 bits wherever the device settles."""
    out, code = got
    c_out, c_hard, c_ok = chain
    if not (torch.equal(code == 2, c_hard) and torch.equal(code > 0, c_ok)):
        return False
    keep = ~c_hard
    x, y = out[keep], c_out[keep]
    nx, ny = torch.isnan(x), torch.isnan(y)
    return torch.equal(nx, ny) and torch.equal(torch.where(nx, 0.0, x).view(torch.int64),
                                               torch.where(ny, 0.0, y).view(torch.int64))


def hostile(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bases and exponents that reach every branch: signs, zeros, specials, subnormals, 1 ± ulp,
    the extremes, integer and non-integer exponents, far overflow and underflow."""
    rng = np.random.default_rng(seed)
    x = np.abs(rng.normal(size=n)) * rng.choice([1e-300, 1e-8, 1e-3, 1.0, 1.0001, 100.0, 1e6, 1e200], n)
    x *= rng.choice([-1.0, 1.0], n)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0, 4.0, 0.5, 5e-324, 1e-310,
               1.0000000000000002, 0.9999999999999999, 8.0, 3.0, -8.0, -2.0, 1e308, 10.0, math.e,
               1.7976931348623157e308, 2.2250738585072014e-308, -0.0, -0.0]
    x[: len(special)] = special
    y = rng.choice([3.0, 1.5, -1.0, 0.25, 1 / 3, -0.7, 2.5, 0.0, -2.0, 7.0, 11.0, 0.1, 20.0,
                    -3.0, 1e-5, 150.0, 0.5, 2.0, 1e300, -1e300, np.nan, np.inf, -np.inf], n)
    y[::7] = rng.normal(size=y[::7].size) * 4
    y[3::11] = np.round(rng.uniform(-3000.0, 3000.0, y[3::11].size))
    y[len(special) - 2:len(special)] = [3.0, 0.0]  # -0.0 to an odd power, and to the zeroth
    return x, y


def _self_check(device: torch.device) -> bool:
    x, y = hostile(20_000, 26)
    xt, yt = torch.tensor(x, device=device), torch.tensor(y, device=device)
    if not _agrees(log_codes(xt), libm._log_chain(xt)):
        return False
    return all(_agrees(pow_codes(xt, yt, signed), libm._pow_chain(xt, yt, signed)) for signed in (False, True))


def use(device: torch.device) -> bool:
    """Whether the kernels run on ``device`` (CUDA with Triton, self-checked at first use)."""
    return triton_gate.first_use(sys.modules[__name__], device, "a libm kernel")
