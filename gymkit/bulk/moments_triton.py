"""One Triton kernel per call for the block-moment operators of :mod:`gymkit.bulk.ops` (CUDA).

``ts_std``, ``ts_skew``, ``ts_kurt`` (:func:`gymkit.bulk.ops._moments_chain`), ``ts_slope``,
``ts_decay_linear`` (``_slope_chain``, ``_decay_chain``) and ``ts_cov``, ``ts_corr``
(``_comoments_chain``) replay the Numba block engines in torch: shifted terms, two
to five block window sums (:mod:`gymkit.bulk.scans`), the finite-window and constant-run masks
(cumulative counts) and the statistic — about 30 to 85 launches a call and as many full
temporaries, the leading rows of the batch scorer's profile on the H200.  Here one kernel
does the whole operator, a thread per (formula, block, stock): the previous block right to
left (suffix sums seeded by +0.0, suffix counts of non-finite values and of equal
neighbours, kept in scratch), then the current block left to right (prefix sums, each
window's sum as suffix + prefix, the masks from exact integer counts, the statistic), with
the same IEEE operations in the same order as the chain and fusion off (float64 division and
square root are correctly rounded on CUDA, as torch's are).  The first use checks every operator
against the chain on hostile data, bit for bit; on a difference the chain is used for good
(``status`` says why).  The window extremes (``ts_max``/``ts_min``/``ts_argmax``/``ts_argmin``,
``_extreme_chain``: a doubling table of ⌈log₂ d⌉ full passes) take one kernel too, a thread per
(formula, row, stock) scanning its window from the oldest value: the result is an element of
the window, so any exact method gives its bits.  ``interpret = True`` runs the kernels in Triton's interpreter on
CPU tensors (tests).
"""

from __future__ import annotations

import math
import sys

import torch

from gymkit.bulk import triton_gate

Tensor = torch.Tensor

__all__ = ["comoments", "extreme", "interpret", "moments", "status", "use"]

status: dict[str, object] = {"triton": None}
"""``triton``: None (not tried yet), True (in use), or why it is not used."""

interpret = False
"""Run the kernels in Triton's interpreter on CPU tensors (tests)."""

_BLOCK = 64
_KERNELS: dict[str, object] = {}
_CONSTS: dict[tuple[torch.device, int], Tensor] = {}
_STAT = {"std": 0, "skew": 1, "kurt": 2, "slope": 3, "decay": 4}
_SUMS = {"std": 2, "skew": 3, "kurt": 4, "slope": 2, "decay": 2}
MIN_D = {"std": 2, "skew": 3, "kurt": 4, "slope": 2, "decay": 1}
"""The smallest window each statistic's kernel takes (below it the operator is all NaN, or
for decay_linear d = 1 is the chain's)."""


def _build() -> None:
    jit = triton_gate.load_jit(sys.modules[__name__], "moments_jit")
    _KERNELS.update(moments=jit.moments_kernel, comoments=jit.comoments_kernel, extreme=jit.extreme_kernel)


def _consts(d: int, device: torch.device) -> Tensor:
    """The chain's Python-float constants for window d, as float64 on the device."""
    key = (device, d)
    if key not in _CONSTS:
        nf = float(d)
        vals = [1.0 / nf, 1.0 / (nf - 1.0) if d > 1 else 0.0, math.sqrt(nf * (nf - 1.0)), nf - 2.0,
                nf * nf - 1.0, 3.0 * (nf - 1.0) * (nf - 1.0), (nf - 2.0) * (nf - 3.0), math.nan, -0.0,
                nf * (nf * nf - 1.0) / 12.0, (nf - 1.0) / 2.0, nf * (nf + 1.0) / 2.0]
        _CONSTS[key] = torch.tensor(vals, dtype=torch.float64, device=device)
    return _CONSTS[key]


def _opts() -> dict:
    return triton_gate.launch_opts(sys.modules[__name__])


def moments(x: Tensor, d: int, stat: str) -> Tensor:
    """``ts_std`` / ``ts_skew`` / ``ts_kurt`` / ``ts_slope`` / ``ts_decay_linear`` (``stat``
    std, skew, kurt, slope, decay) of x (B, T, N) over d >= ``MIN_D[stat]``."""
    b, t, n = x.shape
    nb = -(-t // d)
    x = x.contiguous()
    out = torch.empty_like(x)
    sf = torch.empty((_SUMS[stat], b * nb * d, n), dtype=x.dtype, device=x.device)
    si = torch.empty((2, b * nb * d, n), dtype=torch.int32, device=x.device)
    grid = (b * nb, -(-n // _BLOCK))
    _KERNELS["moments"][grid](x, out, sf, si, t, n, d, nb, _consts(d, x.device), STAT=_STAT[stat],
                              BLOCK=_BLOCK, **_opts())
    return out


def comoments(x: Tensor, y: Tensor, d: int, corr: bool) -> Tensor:
    """``ts_corr`` (``corr``) or ``ts_cov`` of x, y (B, T, N) over d >= 2."""
    b, t, n = x.shape
    nb = -(-t // d)
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    sf = torch.empty((5 if corr else 3, b * nb * d, n), dtype=x.dtype, device=x.device)
    si = torch.empty((3, b * nb * d, n), dtype=torch.int32, device=x.device)
    grid = (b * nb, -(-n // _BLOCK))
    _KERNELS["comoments"][grid](x, y, out, sf, si, t, n, d, nb, _consts(d, x.device), CORR=corr,
                                BLOCK=_BLOCK, **_opts())
    return out


def extreme(x: Tensor, d: int, minimum: bool, arg: bool) -> Tensor:
    """``ts_max`` / ``ts_min`` (``minimum``) of x (B, T, N) over d, or with ``arg`` the
    sessions since it (``ts_argmax`` / ``ts_argmin``): a thread per (formula, row, stock)."""
    b, t, n = x.shape
    x = x.contiguous()
    out = torch.empty_like(x)
    grid = (b * t, -(-n // _BLOCK))
    _KERNELS["extreme"][grid](x, out, t, n, d, _consts(d, x.device), MIN=minimum, ARG=arg, BLOCK=_BLOCK,
                              **_opts())
    return out


def _chain(ops, x: Tensor, d: int, stat: str) -> Tensor:
    return {"slope": ops._slope_chain, "decay": ops._decay_chain}.get(stat, lambda x, d: ops._moments_chain(x, d, stat))(x, d)


def _self_check(device: torch.device) -> bool:
    """Every operator (the moments, the extremes, the co-moments) equals its torch chain bit
    for bit on hostile data (NaN, ±inf, -0.0, ties, constant runs, 1e6 + tiny steps), for
    windows that do and do not divide T."""
    from gymkit.bulk import ops
    from gymkit.bulk.scans import _hostile, _same

    g = torch.Generator(device="cpu").manual_seed(27)
    for d in (1, 2, 3, 4, 7, 16):
        x, y = _hostile(g, (2, 45, 60), device), _hostile(g, (2, 45, 60), device)
        x[:, 12:33, :6] = 3.0  # constant runs longer than every window, across block edges
        y[:, 8:30, 4:9] = -0.0
        x[1, 36:45, 10:12] = math.inf
        for stat in ("std", "skew", "kurt", "slope", "decay"):
            if d >= MIN_D[stat] and not _same(moments(x, d, stat), _chain(ops, x, d, stat)):
                return False
        for minimum in (False, True):
            for arg in (False, True):
                if not _same(extreme(x, d, minimum, arg), ops._extreme_chain(x, d, -1.0 if minimum else 1.0, arg)):
                    return False
        for corr in (False, True):
            if d >= 2 and not _same(comoments(x, y, d, corr), ops._comoments_chain(x, y, d, corr)):
                return False
    return True


def use(device: torch.device) -> bool:
    """Whether the kernels run on ``device`` (CUDA with Triton, self-checked at first use)."""
    return triton_gate.first_use(sys.modules[__name__], device, "a moments kernel")
