"""Sums along the stock axis in stock order, as the CPU kernels add (bit-identical).

The CPU book and ``scale`` add a row's terms one stock after another (``acc += term_j``;
``scale`` with Neumaier compensation).  Replayed with torch operations that is one launch
per stock and operation — at N = 3,000 the batch scorer is launch-bound there.  On CUDA
with Triton, one kernel does each row's whole chain instead (a thread per row, the stocks
in order; only additions, subtractions, comparisons and ``abs``, so no contraction into
FMA can change a bit).  The first CUDA call checks the kernel against the torch chain on
random data and falls back to the chain for good if a bit differs (``status`` says which).
"""

from __future__ import annotations

import os
import sys

import torch

from gymkit.bulk import triton_gate

Tensor = torch.Tensor

__all__ = ["group_sums", "interpret", "neumaier_sum", "seq_sum", "status"]

status: dict[str, object] = {"triton": None, "group": None}
"""``triton`` (the row sums) and ``group`` (group_sums): None (not tried yet), True (in use),
or why not."""

interpret = False
"""Run the Triton kernels in Triton's interpreter on CPU tensors (tests)."""

_BLOCK = 128


def _chain_sum(terms: Tensor) -> Tensor:
    acc = torch.zeros_like(terms[..., 0])
    for j in range(terms.shape[-1]):
        acc = acc + terms[..., j]
    return acc


def _chain_neumaier(v: Tensor, take: Tensor) -> Tensor:
    s = torch.zeros_like(v[..., 0])
    c = torch.zeros_like(s)
    for j in range(v.shape[-1]):
        vj, tj = v[..., j], take[..., j]
        t = s + vj
        comp = torch.where(torch.abs(s) >= torch.abs(vj), (s - t) + vj, (vj - t) + s)
        s, c = torch.where(tj, t, s), torch.where(tj, c + comp, c)
    return s + c


_KERNELS: dict[str, object] = {}


def _build() -> None:
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"  # read when a kernel is decorated
    import triton
    import triton.language as tl

    @triton.jit
    def seq_kernel(x_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
        r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = r < rows
        ptrs = x_ptr + r
        acc = r.to(tl.float64) * 0.0  # +0.0 (not tl.zeros: a @jit helper the interpreter may miss)
        for _ in range(0, n):
            acc = acc + tl.load(ptrs, mask=m, other=0.0)
            ptrs += rows
        tl.store(out_ptr + r, acc, mask=m)

    @triton.jit
    def neu_kernel(x_ptr, f_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
        r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = r < rows
        xp = x_ptr + r
        fp = f_ptr + r
        s = r.to(tl.float64) * 0.0
        c = r.to(tl.float64) * 0.0
        for _ in range(0, n):
            v = tl.load(xp, mask=m, other=0.0)
            take = tl.load(fp, mask=m, other=0) != 0
            t = s + v
            comp = tl.where(tl.abs(s) >= tl.abs(v), (s - t) + v, (v - t) + s)
            s = tl.where(take, t, s)
            c = tl.where(take, c + comp, c)
            xp += rows
            fp += rows
        tl.store(out_ptr + r, s + c, mask=m)

    @triton.jit
    def group_kernel(x_ptr, f_ptr, c_ptr, out_ptr, rows, n, n_groups, BLOCK: tl.constexpr):
        r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        g = tl.program_id(1)
        m = r < rows
        xp = x_ptr + r
        fp = f_ptr + r
        s = r.to(tl.float64) * 0.0
        c = r.to(tl.float64) * 0.0
        for j in range(0, n):
            code = tl.load(c_ptr + j)
            v = tl.load(xp, mask=m, other=0.0)
            take = (tl.load(fp, mask=m, other=0) != 0) & (code == g)
            t = s + v
            comp = tl.where(tl.abs(s) >= tl.abs(v), (s - t) + v, (v - t) + s)
            s = tl.where(take, t, s)
            c = tl.where(take, c + comp, c)
            xp += rows
            fp += rows
        tl.store(out_ptr + r.to(tl.int64) * n_groups + g, s + c, mask=m)

    _KERNELS.update(seq=seq_kernel, neu=neu_kernel, group=group_kernel)


def _columns(x: Tensor) -> tuple[Tensor, int, int]:
    """(x as (N, rows) contiguous, rows, N): the stock axis first, so loads coalesce."""
    n = x.shape[-1]
    flat = x.reshape(-1, n)
    return flat.t().contiguous(), flat.shape[0], n


def _triton_seq(terms: Tensor) -> Tensor:
    cols, rows, n = _columns(terms)
    out = torch.empty(rows, dtype=terms.dtype, device=terms.device)
    _KERNELS["seq"][(-(-rows // _BLOCK),)](cols, out, rows, n, BLOCK=_BLOCK)
    return out.view(terms.shape[:-1])


def _triton_neu(v: Tensor, take: Tensor) -> Tensor:
    cols, rows, n = _columns(v)
    fcols, _, _ = _columns(take.to(torch.int8))
    out = torch.empty(rows, dtype=v.dtype, device=v.device)
    _KERNELS["neu"][(-(-rows // _BLOCK),)](cols, fcols, out, rows, n, BLOCK=_BLOCK)
    return out.view(v.shape[:-1])


def _chain_group(xv: Tensor, valid: Tensor, codes_l: list[int], n_groups: int) -> Tensor:
    """(..., G) Neumaier sums s + c of each group's valid values, one step per stock in stock
    order (the CPU group_neutralize's chains, all groups at once)."""
    lead = xv.shape[:-1]
    sums = [torch.zeros(lead, dtype=xv.dtype, device=xv.device) for _ in range(n_groups)]
    comp = [torch.zeros_like(sums[0]) for _ in range(n_groups)]
    for j, g in enumerate(codes_l):
        if g >= 0:
            vj, tj = xv[..., j], valid[..., j]
            t = sums[g] + vj
            cj = torch.where(torch.abs(sums[g]) >= torch.abs(vj), (sums[g] - t) + vj, (vj - t) + sums[g])
            sums[g], comp[g] = torch.where(tj, t, sums[g]), torch.where(tj, comp[g] + cj, comp[g])
    return torch.stack([s + c for s, c in zip(sums, comp, strict=True)], dim=-1)


def _triton_group(xv: Tensor, valid: Tensor, codes: Tensor, n_groups: int) -> Tensor:
    cols, rows, n = _columns(xv)
    fcols, _, _ = _columns(valid.to(torch.int8))
    out = torch.empty((rows, n_groups), dtype=xv.dtype, device=xv.device)
    grid = (-(-rows // _BLOCK), n_groups)
    _KERNELS["group"][grid](cols, fcols, codes.to(torch.int64).contiguous(), out, rows, n, n_groups, BLOCK=_BLOCK)
    return out.view(*xv.shape[:-1], n_groups)


def _self_check(device: torch.device) -> bool:
    """The row-sum kernels equal their torch chains bit for bit (large values, 1e-9 steps)."""
    g = torch.Generator(device="cpu").manual_seed(26)
    x = (torch.randn(37, 5, 301, generator=g, dtype=torch.float64) * 1e3).to(device)
    x[..., ::7] = x[..., ::7] * 1e-9
    take = (torch.rand(37, 5, 301, generator=g) > 0.1).to(device)
    return (torch.equal(_triton_seq(x).view(torch.int64), _chain_sum(x).view(torch.int64))
            and torch.equal(_triton_neu(x.abs(), take).view(torch.int64),
                            _chain_neumaier(x.abs(), take).view(torch.int64)))


def _self_check_group(device: torch.device) -> bool:
    """The group kernel equals its torch chain bit for bit (codes with holes, -1)."""
    g = torch.Generator(device="cpu").manual_seed(27)
    x = (torch.randn(37, 5, 301, generator=g, dtype=torch.float64) * 1e3).to(device)
    x[..., ::7] = x[..., ::7] * 1e-9
    take = (torch.rand(37, 5, 301, generator=g) > 0.1).to(device)
    codes = torch.randint(-1, 7, (301,), generator=g)
    codes_l = [int(c) for c in codes.tolist()]
    return torch.equal(_triton_group(x, take, codes.to(device), 7).view(torch.int64),
                       _chain_group(x, take, codes_l, 7).view(torch.int64))


def _use_triton(device: torch.device) -> bool:
    return triton_gate.first_use(sys.modules[__name__], device, "one of Triton's sums")


def _use_group_kernel(device: torch.device) -> bool:
    """The group kernel has its own self-check (``status["group"]``): if it fails, the
    sums above keep their kernels."""
    return _use_triton(device) and triton_gate.first_use(
        sys.modules[__name__], device, "the group kernel", key="group", build=lambda: None, check=_self_check_group)


def group_sums(xv: Tensor, valid: Tensor, codes: Tensor, codes_l: list[int], n_groups: int) -> Tensor:
    """(..., G): per group g, the Neumaier-compensated Σ of xv[..., j] over the stocks j with
    codes[j] == g where ``valid``, in stock order, as ``s + c`` (``codes_l`` = codes as a list).
    One Triton kernel on CUDA (a thread per row and group), else one step per stock."""
    if _use_group_kernel(xv.device):
        return _triton_group(xv, valid, codes, n_groups)
    return _chain_group(xv, valid, codes_l, n_groups)


def seq_sum(terms: Tensor) -> Tensor:
    """Σ_j terms[..., j] as ((0.0 + t_0) + t_1) + ... in stock order."""
    return _triton_seq(terms) if _use_triton(terms.device) else _chain_sum(terms)


def neumaier_sum(v: Tensor, take: Tensor) -> Tensor:
    """Neumaier-compensated Σ of v[..., j] where ``take``, in stock order, as ``s + c``."""
    return _triton_neu(v, take) if _use_triton(v.device) else _chain_neumaier(v, take)
