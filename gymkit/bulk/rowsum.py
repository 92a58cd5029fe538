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

import torch

Tensor = torch.Tensor

__all__ = ["neumaier_sum", "one_kernel", "seq_sum", "status"]

status = {"triton": None}
"""``triton``: None (not tried yet), True (in use), or why it is not used."""

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
    import triton
    import triton.language as tl

    @triton.jit
    def seq_kernel(x_ptr, out_ptr, rows, n, BLOCK: tl.constexpr):
        r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = r < rows
        ptrs = x_ptr + r
        acc = tl.zeros([BLOCK], dtype=tl.float64)
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
        s = tl.zeros([BLOCK], dtype=tl.float64)
        c = tl.zeros([BLOCK], dtype=tl.float64)
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

    _KERNELS.update(seq=seq_kernel, neu=neu_kernel, grid=lambda rows: (triton.cdiv(rows, _BLOCK),))


def _columns(x: Tensor) -> tuple[Tensor, int, int]:
    """(x as (N, rows) contiguous, rows, N): the stock axis first, so loads coalesce."""
    n = x.shape[-1]
    flat = x.reshape(-1, n)
    return flat.t().contiguous(), flat.shape[0], n


def _triton_seq(terms: Tensor) -> Tensor:
    cols, rows, n = _columns(terms)
    out = torch.empty(rows, dtype=terms.dtype, device=terms.device)
    _KERNELS["seq"][_KERNELS["grid"](rows)](cols, out, rows, n, BLOCK=_BLOCK)
    return out.view(terms.shape[:-1])


def _triton_neu(v: Tensor, take: Tensor) -> Tensor:
    cols, rows, n = _columns(v)
    fcols, _, _ = _columns(take.to(torch.int8))
    out = torch.empty(rows, dtype=v.dtype, device=v.device)
    _KERNELS["neu"][_KERNELS["grid"](rows)](cols, fcols, out, rows, n, BLOCK=_BLOCK)
    return out.view(v.shape[:-1])


def _use_triton(device: torch.device) -> bool:
    if device.type != "cuda":
        return False
    if status["triton"] is None:
        try:
            _build()
            g = torch.Generator(device="cpu").manual_seed(26)
            x = (torch.randn(37, 5, 301, generator=g, dtype=torch.float64) * 1e3).to(device)
            x[..., ::7] = x[..., ::7] * 1e-9
            take = (torch.rand(37, 5, 301, generator=g) > 0.1).to(device)
            same = (torch.equal(_triton_seq(x).view(torch.int64), _chain_sum(x).view(torch.int64))
                    and torch.equal(_triton_neu(x.abs(), take).view(torch.int64),
                                    _chain_neumaier(x.abs(), take).view(torch.int64)))
            status["triton"] = True if same else "self-check: Triton's sums differ from the torch chain"
        except Exception as exc:  # no Triton, or it cannot compile here
            status["triton"] = f"{type(exc).__name__}: {exc}"[:200]
    return status["triton"] is True


def one_kernel(device: torch.device) -> bool:
    """True where a whole chain is one kernel (CUDA with Triton, self-checked)."""
    return _use_triton(device)


def seq_sum(terms: Tensor) -> Tensor:
    """Σ_j terms[..., j] as ((0.0 + t_0) + t_1) + ... in stock order."""
    return _triton_seq(terms) if _use_triton(terms.device) else _chain_sum(terms)


def neumaier_sum(v: Tensor, take: Tensor) -> Tensor:
    """Neumaier-compensated Σ of v[..., j] where ``take``, in stock order, as ``s + c``."""
    return _triton_neu(v, take) if _use_triton(v.device) else _chain_neumaier(v, take)
