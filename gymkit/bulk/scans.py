"""Sequential scans of the time-series kernels, as the Numba engines run them (bit-identical).

Two recurrences of :mod:`gymkit.bulk.ops` have a fixed order of rounding and so cannot be
reassociated into a parallel scan:

* the block engines' window sums (``window_sums``): a prefix of the current block, left to
  right, plus a suffix of the previous block, right to left (sums or products);
* the EMA (``ema``): e <- keep·e + alpha·v, session after session.

Replayed with torch operations that is one launch per in-block row (about 2·d per window
sum) or per session (about 8 per session for the EMA): the batch scorer is launch-bound
there (``benchmarks/bench_bulk.py device --profile``).  On CUDA with Triton one kernel does
each whole chain instead: a thread per (formula, block, stock) column, the steps in order,
the same IEEE additions and multiplications in the same order, with floating-point fusion
off (``enable_fp_fusion=False``: no mul+add is contracted into an FMA).  The first use
checks each kernel against the torch chain on hostile data (NaN, ±inf, -0.0, ties,
restarts) and falls back to the chain for good if one bit differs (``status`` says why).

``interpret = True`` runs the Triton kernels in Triton's interpreter on CPU tensors (the
tests: CI has no GPU), so the kernels' logic is tested bit for bit there too.
"""

from __future__ import annotations

import math
import os
import sys

import torch

from gymkit.bulk import triton_gate

Tensor = torch.Tensor

__all__ = ["ema", "ema_chain", "interpret", "status", "window_sums", "window_sums_chain"]

status: dict[str, object] = {"triton": None}
"""``triton``: None (not tried yet), True (in use), or why it is not used."""

interpret = False
"""Run the Triton kernels in Triton's interpreter on CPU tensors (tests)."""

_BLOCK = 64
_KERNELS: dict[str, object] = {}
_NAN = math.nan


# ============================================================== torch chains (the reference)
def window_sums_chain(cur: Tensor, prev: Tensor, product: bool = False) -> Tensor:
    """Σ (or Π) of a term over each window of the block engines: ``cur``/``prev`` (B, nb,
    d, N) the term on the current / previous block; out[i] = suf[i+1] + pre[i], with
    pre the prefix of cur (left to right) and suf the suffix of prev (right to left, seeded
    by suf[d] = 0.0, or for products 1.0 and the last term alone)."""
    d = cur.shape[2]
    pre = torch.empty_like(cur)
    pre[:, :, 0] = cur[:, :, 0]
    for i in range(1, d):
        pre[:, :, i] = pre[:, :, i - 1] * cur[:, :, i] if product else pre[:, :, i - 1] + cur[:, :, i]
    suf = torch.empty_like(prev)  # suf[:, :, r] for r = 1..d-1; r = d is the seed
    seed = 1.0 if product else 0.0
    if d > 1:
        suf[:, :, d - 1] = prev[:, :, d - 1] if product else prev[:, :, d - 1] + 0.0
        for r in range(d - 2, 0, -1):
            suf[:, :, r] = prev[:, :, r] * suf[:, :, r + 1] if product else prev[:, :, r] + suf[:, :, r + 1]
    out = torch.empty_like(pre)
    if d > 1:
        s = suf[:, :, 1:d]
        out[:, :, : d - 1] = s * pre[:, :, : d - 1] if product else s + pre[:, :, : d - 1]
    out[:, :, d - 1] = seed * pre[:, :, d - 1] if product else seed + pre[:, :, d - 1]
    return out


def ema_chain(x: Tensor, ax: Tensor, seed: Tensor, ok_seed: Tensor, keep: Tensor) -> Tensor:
    """The EMA recurrence over sessions (before ``clean``), x/ax/seed/ok_seed (B, T, N),
    keep (B,): e <- keep·e + ax where seeded and x finite; a start (not seeded, ok_seed)
    takes the seed; a non-finite x keeps e and unseeds; out = e where seeded, else NaN."""
    b, t_len, n = x.shape
    fin = torch.isfinite(x)
    keep = keep.view(-1, 1)
    out = torch.empty_like(x)
    e = torch.zeros((b, n), dtype=x.dtype, device=x.device)
    seeded = torch.zeros((b, n), dtype=torch.bool, device=x.device)
    nan = torch.tensor(_NAN, dtype=x.dtype, device=x.device)
    for t in range(t_len):
        f, ok = fin[:, t], ok_seed[:, t]
        start = ok > seeded  # ok and not seeded (a start implies a finite x)
        e = torch.where(seeded & f, keep * e + ax[:, t], torch.where(start, seed[:, t], e))
        seeded = f & (seeded | ok)
        torch.where(seeded, e, nan, out=out[:, t])
    return out


# ============================================================== Triton kernels
def _build() -> None:
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"  # read when a kernel is decorated
    import triton
    import triton.language as tl

    @triton.jit
    def wsum_kernel(cur_ptr, prev_ptr, out_ptr, d, n, PRODUCT: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        m = cols < n
        base = row * d * n + cols
        if d > 1:  # the suffix of the previous block into out[r - 1] = suf[r], r = d-1 .. 1
            s = tl.load(prev_ptr + base + (d - 1) * n, mask=m, other=0.0)
            if not PRODUCT:
                s = s + 0.0
            tl.store(out_ptr + base + (d - 2) * n, s, mask=m)
            for k in range(0, d - 2):
                r = d - 2 - k
                p = tl.load(prev_ptr + base + r * n, mask=m, other=0.0)
                s = p * s if PRODUCT else p + s
                tl.store(out_ptr + base + (r - 1) * n, s, mask=m)
        pre = tl.load(cur_ptr + base, mask=m, other=0.0)
        for i in range(0, d - 1):  # out[i] = suf[i+1] (op) pre[i]; then the next prefix
            o = tl.load(out_ptr + base + i * n, mask=m, other=0.0)
            tl.store(out_ptr + base + i * n, o * pre if PRODUCT else o + pre, mask=m)
            c = tl.load(cur_ptr + base + (i + 1) * n, mask=m, other=0.0)
            pre = pre * c if PRODUCT else pre + c
        last = 1.0 * pre if PRODUCT else 0.0 + pre
        tl.store(out_ptr + base + (d - 1) * n, last, mask=m)

    @triton.jit
    def ema_kernel(x_ptr, ax_ptr, seed_ptr, ok_ptr, keep_ptr, out_ptr, t_len, n, BLOCK: tl.constexpr):
        b = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        m = cols < n
        keep = tl.load(keep_ptr + b)
        off = b * t_len * n + cols
        e = cols.to(tl.float64) * 0.0  # +0.0 (not tl.zeros: a @jit helper the interpreter may miss)
        seeded = cols < 0
        for _ in range(0, t_len):
            v = tl.load(x_ptr + off, mask=m, other=0.0)
            av = tl.load(ax_ptr + off, mask=m, other=0.0)
            sd = tl.load(seed_ptr + off, mask=m, other=0.0)
            ok = tl.load(ok_ptr + off, mask=m, other=0) != 0
            f = tl.abs(v) < float("inf")
            start = ok & (seeded == 0)
            e = tl.where(seeded & f, keep * e + av, tl.where(start, sd, e))
            seeded = f & (seeded | ok)
            tl.store(out_ptr + off, tl.where(seeded, e, float("nan")), mask=m)
            off += n

    _KERNELS.update(wsum=wsum_kernel, ema=ema_kernel)


def _launch_opts() -> dict:
    return triton_gate.launch_opts(sys.modules[__name__])


def _triton_window_sums(cur: Tensor, prev: Tensor, product: bool) -> Tensor:
    b, nb, d, n = cur.shape
    cur, prev = cur.contiguous(), prev.contiguous()
    out = torch.empty_like(cur)
    grid = (b * nb, -(-n // _BLOCK))
    _KERNELS["wsum"][grid](cur, prev, out, d, n, PRODUCT=product, BLOCK=_BLOCK, **_launch_opts())
    return out


def _triton_ema(x: Tensor, ax: Tensor, seed: Tensor, ok_seed: Tensor, keep: Tensor) -> Tensor:
    b, t_len, n = x.shape
    out = torch.empty_like(x)
    args = (x.contiguous(), ax.contiguous(), seed.contiguous(), ok_seed.to(torch.int8).contiguous(),
            keep.contiguous(), out)
    grid = (b, -(-n // _BLOCK))
    _KERNELS["ema"][grid](*args, t_len, n, BLOCK=_BLOCK, **_launch_opts())
    return out


def _same(a: Tensor, b: Tensor) -> bool:
    """Same NaN-ness and, off NaN, the same 64 bits (signed zeros included)."""
    na, nb = torch.isnan(a), torch.isnan(b)
    if not torch.equal(na, nb):
        return False
    return torch.equal(torch.where(na, 0.0, a).view(torch.int64), torch.where(nb, 0.0, b).view(torch.int64))


def _hostile(g: torch.Generator, shape: tuple[int, ...], device: torch.device) -> Tensor:
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 10.0
    u = torch.rand(shape, generator=g)
    x = torch.where(u < 0.04, _NAN, x)
    x = torch.where((u >= 0.04) & (u < 0.05), math.inf, x)
    x = torch.where((u >= 0.05) & (u < 0.06), -0.0, x)
    x = torch.where((u >= 0.06) & (u < 0.10), 1.0, x)  # ties and runs
    x[..., ::5] = x[..., ::5] * 1e-12 + 1e6
    return x.to(device)


def _self_check(device: torch.device) -> bool:
    """Each kernel equals its torch chain bit for bit on hostile data (module doc)."""
    g = torch.Generator(device="cpu").manual_seed(26)
    for d in (1, 2, 3, 7, 16):
        cur, prev = _hostile(g, (3, 4, d, 70), device), _hostile(g, (3, 4, d, 70), device)
        for product in (False, True):
            c, p = (cur.abs() * 0.5 + 0.75, prev.abs() * 0.5 + 0.75) if product else (cur, prev)
            if not _same(_triton_window_sums(c, p, product), window_sums_chain(c, p, product)):
                return False
    x = _hostile(g, (3, 61, 70), device)
    keep = torch.tensor([1.0 - 2.0 / 4.0, 1.0 - 2.0 / 8.0, 1.0 - 2.0 / 13.0], dtype=torch.float64, device=device)
    ax = (1.0 - keep).view(-1, 1, 1) * x
    seed = _hostile(g, (3, 61, 70), device)
    ok = (torch.rand((3, 61, 70), generator=g) < 0.3).to(device) & torch.isfinite(x)
    return _same(_triton_ema(x, ax, seed, ok, keep), ema_chain(x, ax, seed, ok, keep))


def _use_triton(device: torch.device) -> bool:
    return triton_gate.first_use(sys.modules[__name__], device, "a Triton scan")


def window_sums(cur: Tensor, prev: Tensor, product: bool = False) -> Tensor:
    """:func:`window_sums_chain` of ``cur``/``prev`` (B, nb, d, N): one Triton kernel on
    CUDA (self-checked), else the torch chain; the same bits either way."""
    if _use_triton(cur.device):
        return _triton_window_sums(cur, prev, product)
    return window_sums_chain(cur, prev, product)


def ema(x: Tensor, ax: Tensor, seed: Tensor, ok_seed: Tensor, keep: Tensor) -> Tensor:
    """:func:`ema_chain`: one Triton kernel on CUDA (self-checked), else the torch loop."""
    if _use_triton(x.device):
        return _triton_ema(x, ax, seed, ok_seed, keep)
    return ema_chain(x, ax, seed, ok_seed, keep)
