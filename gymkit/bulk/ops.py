"""Torch kernels of the DSL on batched panels: every value is a float64 (B, T, N) tensor.

One function per operator of ``gymkit.dsl.kernels.KERNELS``, with the same semantics (NaN
rules, windows, ties, -0.0), batched over a leading axis B of formulas that share the
operator and window.  Where the Numba kernel's arithmetic can be replayed step for step
it is (element-wise IEEE operations; block prefix/suffix sums and products in the same
order; exact integer counts for rank, ts_rank and the constant-window tests), so the
results are bit-identical on CPU and CUDA alike.  ``log`` and ``power`` (off its fast
paths) are not IEEE operations: they give glibc's bits through :mod:`gymkit.bulk.libm`
(the Numba kernel itself on CPU; on CUDA a double-double check of each value, the few
values near a rounding midpoint computed on the host).  ``scale`` and ``group_neutralize``
replay Numba's Neumaier sums in stock order (one step per stock).

Scalars (literal operands of element-wise operators) are Python floats or (B, 1, 1)
tensors and broadcast.  This module imports torch: scoring never imports it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gymkit.bulk import libm, moments_triton, rowsum, scans

Tensor = torch.Tensor
_NAN = math.nan


def _fin(x: Tensor) -> Tensor:
    return torch.isfinite(x)


def _t(x: Tensor | float, like: Tensor) -> Tensor:
    return x if isinstance(x, Tensor) else torch.tensor(float(x), dtype=torch.float64, device=like.device)


def _nan_like(x: Tensor) -> Tensor:
    return torch.full_like(x, _NAN)


def _sqrt(a: Tensor) -> Tensor:
    """Correctly rounded square root.  torch's CPU kernel is not (measured: 0.7% of values
    1 ulp off numpy / libm), so on CPU numpy's is used; CUDA's double sqrt is IEEE."""
    if a.device.type == "cpu":
        with np.errstate(invalid="ignore"):
            # np.asarray: a 0-d input (a literal-only call) gives a numpy scalar, not an array
            return torch.from_numpy(np.asarray(np.sqrt(a.numpy())))
    return torch.sqrt(a)


def _cdiv(x: Tensor, c: float) -> Tensor:
    """x / c correctly rounded.  CUDA torch divides by a Python (CPU) scalar as x · (1/c),
    which is not (1 ulp off, measured on the H200); a 0-dim device tensor takes the true
    division kernel."""
    return x / torch.tensor(float(c), dtype=torch.float64, device=x.device)


def clean(r: Tensor) -> Tensor:
    """r where finite, else NaN (the one place ±inf becomes NaN)."""
    return torch.where(torch.isfinite(r), r, _NAN)


# ============================================================== element-wise
def add(a, b):
    """a + b; non-finite -> NaN."""
    return clean(a + b)


def sub(a, b):
    """a - b; non-finite -> NaN."""
    return clean(a - b)


def mul(a, b):
    """a * b; non-finite -> NaN."""
    return clean(a * b)


def div(a, b):
    """a / b; b == 0 or non-finite b or result -> NaN."""
    b = _t(b, a if isinstance(a, Tensor) else b)
    bad = (b == 0.0) | ~_fin(b)
    return torch.where(bad, _NAN, clean(a / b))


def neg(a):
    """-x."""
    return clean(-a)


def abs_(a):
    """|x|."""
    return clean(torch.abs(a))


def log(a):
    """log x for finite x > 0, else NaN: glibc's bits (:func:`gymkit.bulk.libm.log_exact`)."""
    return libm.log_exact(a)


def sqrt(a):
    """sqrt x for finite x >= 0, else NaN."""
    ok = (a >= 0.0) & _fin(a)
    return torch.where(ok, _sqrt(torch.where(ok, a, 0.0)), _NAN)


def sign(a):
    """-1 / 0 / +1; NaN stays NaN."""
    one = torch.ones_like(a)
    s = torch.where(a > 0.0, one, torch.where(a < 0.0, -one, 0.0 * one))
    return torch.where(_fin(a), s, _NAN)


def _bcast(a, b):
    a_t = _t(a, b if isinstance(b, Tensor) else a)
    b_t = _t(b, a_t)
    return torch.broadcast_tensors(a_t, b_t)


def power(a, b, fast: float | None = None):
    """x**y when real and finite, else NaN; ``fast`` = a scalar exponent 2, 0.5 or 1 taken
    by the Numba kernel's fast path (a multiplication, a square root, a copy)."""
    if fast == 2.0:
        return clean(a * a)
    if fast == 0.5:
        ok = (a >= 0.0) & _fin(a)
        return torch.where(ok, _sqrt(torch.where(ok, a, 0.0)) + 0.0, _NAN)
    if fast == 1.0:
        return clean(a)
    a, b = _bcast(a, b)
    return libm.pow_exact(a, b)


def signed_power(a, b, fast: float | None = None):
    """sign(x)·|x|**b; NaN when not finite (fast paths as :func:`power`)."""
    if fast == 2.0:
        m = clean(a * a)
        return torch.where(a < 0.0, -m, m)
    if fast == 0.5:
        r = _sqrt(torch.abs(torch.where(_fin(a), a, 0.0)))
        return torch.where(_fin(a), torch.where(a < 0.0, -r, r + 0.0), _NAN)
    if fast == 1.0:
        return clean(a) + 0.0
    a, b = _bcast(a, b)
    return libm.pow_exact(a, b, signed=True)


def min_(a, b):
    """Element-wise min; NaN if either is non-finite; -0.0 -> +0.0."""
    a, b = _bcast(a, b)
    ok = _fin(a) & _fin(b)
    return torch.where(ok, torch.where(a < b, a, b) + 0.0, _NAN)


def max_(a, b):
    """Element-wise max; NaN if either is non-finite; -0.0 -> +0.0."""
    a, b = _bcast(a, b)
    ok = _fin(a) & _fin(b)
    return torch.where(ok, torch.where(a > b, a, b) + 0.0, _NAN)


def _truth(a, b, r: Tensor) -> Tensor:
    a, b = _bcast(a, b)
    return torch.where(_fin(a) & _fin(b), r.to(torch.float64), _NAN)


def lt(a, b):
    """1.0/0.0 for a < b; NaN if either operand is non-finite."""
    return _truth(a, b, torch.as_tensor(a < b))


def le(a, b):
    """1.0/0.0 for a <= b; NaN if either operand is non-finite."""
    return _truth(a, b, torch.as_tensor(a <= b))


def gt(a, b):
    """1.0/0.0 for a > b; NaN if either operand is non-finite."""
    return _truth(a, b, torch.as_tensor(a > b))


def ge(a, b):
    """1.0/0.0 for a >= b; NaN if either operand is non-finite."""
    return _truth(a, b, torch.as_tensor(a >= b))


def eq(a, b):
    """1.0/0.0 for a == b; NaN if either operand is non-finite."""
    return _truth(a, b, torch.as_tensor(a == b))


def ne(a, b):
    """1.0/0.0 for a != b; NaN if either operand is non-finite."""
    return _truth(a, b, torch.as_tensor(a != b))


def and_(a, b):
    """1.0/0.0 for a != 0 and b != 0; NaN if either is non-finite (no short-circuit)."""
    return _truth(a, b, torch.as_tensor((a != 0.0) & (b != 0.0)))


def or_(a, b):
    """1.0/0.0 for a != 0 or b != 0; NaN if either is non-finite."""
    return _truth(a, b, torch.as_tensor((a != 0.0) | (b != 0.0)))


def where(c, a, b):
    """NaN if c is non-finite; clean(a) where c != 0 (even if b is NaN), else clean(b)."""
    ref = next(v for v in (c, a, b) if isinstance(v, Tensor))
    c, a, b = torch.broadcast_tensors(_t(c, ref), _t(a, ref), _t(b, ref))
    return torch.where(_fin(c), torch.where(c != 0.0, clean(a), clean(b)), _NAN)


# ============================================================== cross-sectional (last axis)
def ranks2(x: Tensor) -> tuple[Tensor, Tensor]:
    """(twice the 1-based average-tie rank of each finite value along the last axis, 0.0
    where non-finite; n, the count of finite values): exact integers as float64."""
    fin = _fin(x)
    keys = torch.where(fin, x + 0.0, math.inf).contiguous()  # -0.0 == 0.0; inf sorts last
    srt = torch.sort(keys, dim=-1).values.contiguous()
    lt_ = torch.searchsorted(srt, keys, right=False)
    le_ = torch.searchsorted(srt, keys, right=True)
    r2 = torch.where(fin, (lt_ + le_ + 1).to(torch.float64), 0.0)
    return r2, fin.sum(dim=-1, keepdim=True).to(torch.float64)


def rank(x: Tensor) -> Tensor:
    """Per row: average-tie rank mapped to [0, 1] as (r-1)/(n-1); n = 1 -> 0.5; NaN where
    not finite."""
    r2, n = ranks2(x)
    v = torch.where(n == 1.0, 0.5, 0.5 * (r2 - 2.0) / torch.clamp(n - 1.0, min=1.0))
    return torch.where(r2 > 0.0, v, _NAN)


def scale(x: Tensor) -> Tensor:
    """Per row: x / Σ|x| over finite values (Neumaier-compensated, in stock order, as the
    CPU kernel: one step per stock); Σ|x| == 0 -> NaN row."""
    fin = _fin(x)
    ax = torch.abs(torch.where(fin, x, 0.0))
    s = rowsum.neumaier_sum(ax, fin)[..., None]
    return torch.where((s > 0.0) & fin, clean(x / s), _NAN)


def group_neutralize(x: Tensor, codes: Tensor) -> Tensor:
    """Per row: x minus its group's mean of finite values (Neumaier-compensated sums in
    stock order, as the CPU kernel; :func:`gymkit.bulk.rowsum.group_sums`: one kernel on
    CUDA); code -1 -> NaN."""
    codes_l = [int(g) for g in codes.tolist()]
    n_groups = max(codes_l, default=-1) + 1
    valid = _fin(x) & (codes >= 0)
    if n_groups == 0:
        return _nan_like(x)
    xv = torch.where(valid, x, 0.0)
    total = rowsum.group_sums(xv, valid, codes, codes_l, n_groups)
    member = codes[:, None] == torch.arange(n_groups, device=codes.device)  # not one_hot: it reads back its range
    counts = valid.to(torch.float64) @ member.to(torch.float64)
    mean = (total / torch.clamp(counts, min=1.0))[..., torch.clamp(codes, min=0)]
    return torch.where(valid, clean(x - mean), _NAN)


# ============================================================== time series (axis -2)
def _window_ok(x: Tensor, d: int, y: Tensor | None = None) -> Tensor:
    """True where t >= d-1 and the d values x[t-d+1..t] (and y's) are all finite."""
    bad = ~_fin(x) if y is None else ~(_fin(x) & _fin(y))
    c = torch.cumsum(bad.to(torch.int64), dim=-2)
    prev = torch.zeros_like(c)
    if d < c.shape[-2]:
        prev[..., d:, :] = c[..., :-d, :]
    ok = (c - prev) == 0
    ok[..., : d - 1, :] = False
    return ok


def _constant(x: Tensor, d: int) -> Tensor:
    """True where the run of identical values ending at t is >= d long (Numba's ``run``)."""
    e = torch.zeros(x.shape, dtype=torch.int64, device=x.device)
    e[..., 1:, :] = (x[..., 1:, :] == x[..., :-1, :]).to(torch.int64)
    if d == 1:
        return torch.ones(x.shape, dtype=torch.bool, device=x.device)
    c = torch.cumsum(e, dim=-2)
    prev = torch.zeros_like(c)
    m = d - 1
    if m < c.shape[-2]:
        prev[..., m:, :] = c[..., :-m, :]
    out = (c - prev) == m
    out[..., : d - 1, :] = False
    return out


class _Blocks:
    """x cut into blocks of d rows: ``cur`` (B, nb, d, N) and ``prev`` (the previous block,
    NaN for the first), with the Numba engines' shift k = x[b0] of each block."""

    def __init__(self, x: Tensor, d: int) -> None:
        b, t, n = x.shape
        nb = -(-t // d)
        self.shape, self.d, self.nb = (b, t, n), d, nb
        pad = torch.full((b, nb * d - t, n), _NAN, dtype=x.dtype, device=x.device)
        self.cur = torch.cat([x, pad], dim=1).view(b, nb, d, n)
        self.prev = torch.cat([torch.full_like(self.cur[:, :1], _NAN), self.cur[:, :-1]], dim=1)
        self.k = self.cur[:, :, :1, :]

    def window_sums(self, cur_term: Tensor, prev_term: Tensor, product: bool = False) -> Tensor:
        """Σ (or Π) of a term over each window, as the Numba block engines: suffix of the
        previous block (right to left, seeded by suf[d] = 0.0, or 1.0 and the last term
        alone for products) plus prefix of the current block (left to right)."""
        return scans.window_sums(cur_term, prev_term, product)

    def unblock(self, v: Tensor) -> Tensor:
        b, t, n = self.shape
        return v.reshape(b, self.nb * self.d, n)[:, :t]


def _first_rows_nan(v: Tensor, d: int) -> Tensor:
    v[..., : d - 1, :] = _NAN
    return v


def delay(x: Tensor, d: int) -> Tensor:
    """x[t-d]; NaN for t < d."""
    out = _nan_like(x)
    if d < x.shape[-2]:
        out[..., d:, :] = clean(x[..., :-d, :])
    return out


def ts_delta(x: Tensor, d: int) -> Tensor:
    """x[t] - x[t-d]; NaN for t < d."""
    out = _nan_like(x)
    if d < x.shape[-2]:
        out[..., d:, :] = clean(x[..., d:, :] - x[..., :-d, :])
    return out


def _sum_mean(x: Tensor, d: int, mean: bool) -> Tensor:
    bl = _Blocks(x, d)
    k = bl.k if mean else torch.zeros_like(bl.k)
    s = bl.window_sums(bl.cur - k, bl.prev - k)
    v = k + _cdiv(s, float(d)) if mean else s
    return _first_rows_nan(clean(bl.unblock(v)).clone(), d)


def ts_sum(x: Tensor, d: int) -> Tensor:
    """Sum of the last d values (full finite window)."""
    return _sum_mean(x, d, False)


def ts_mean(x: Tensor, d: int) -> Tensor:
    """Mean of the last d values (full finite window)."""
    return _sum_mean(x, d, True)


def _moments(x: Tensor, d: int, stat: str) -> Tensor:
    if d >= moments_triton.MIN_D[stat] and moments_triton.use(x.device):
        return moments_triton.moments(x, d, stat)
    return _moments_chain(x, d, stat)


def _moments_chain(x: Tensor, d: int, stat: str) -> Tensor:
    """ts_std / ts_skew / ts_kurt in torch operations (the reference of the moments kernel)."""
    bl = _Blocks(x, d)
    nf = float(d)
    inv_n = 1.0 / nf
    inv_n1 = 1.0 / (nf - 1.0) if d > 1 else 0.0
    uc, up = bl.cur - bl.k, bl.prev - bl.k
    uc2, up2 = uc * uc, up * up
    s1 = bl.unblock(bl.window_sums(uc, up))
    s2 = bl.unblock(bl.window_sums(uc2, up2))
    ok = _window_ok(x, d)
    const = _constant(x, d)
    if stat == "std":
        v = _sqrt(_pymax0((s2 - s1 * s1 * inv_n) * inv_n1))
        v = clean(torch.where(const, 0.0, v))
        v = torch.where(ok, v, _NAN)
        return v if d >= 2 else _nan_like(x)
    s3 = bl.unblock(bl.window_sums(uc2 * uc, up2 * up))
    a = s1 * inv_n
    e2 = s2 * inv_n
    e3 = s3 * inv_n
    m2 = e2 - a * a
    m3 = e3 - 3.0 * a * e2 + 2.0 * a * a * a
    if stat == "skew":
        if d < 3:
            return _nan_like(x)
        v = math.sqrt(nf * (nf - 1.0)) * m3 / ((nf - 2.0) * m2 * _sqrt(m2))
    else:
        if d < 4:
            return _nan_like(x)
        s4 = bl.unblock(bl.window_sums(uc2 * uc2, up2 * up2))
        e4 = s4 * inv_n
        m4 = e4 - 4.0 * a * e3 + 6.0 * a * a * e2 - 3.0 * a * a * a * a
        g = (nf * nf - 1.0) * m4 / (m2 * m2) - 3.0 * (nf - 1.0) * (nf - 1.0)
        v = _cdiv(g, (nf - 2.0) * (nf - 3.0))
    bad = const | (m2 <= 0.0) | ~ok | ~_fin(v)
    return torch.where(bad, _NAN, v)


def _pymax0(v: Tensor) -> Tensor:
    """Python's max(v, 0.0): v unless 0.0 > v (NaN and -0.0 pass through)."""
    return torch.where(0.0 > v, 0.0, v)


def ts_std(x: Tensor, d: int) -> Tensor:
    """Rolling std, ddof=1 (constant window -> 0, d = 1 -> NaN)."""
    return _moments(x, d, "std")


def ts_skew(x: Tensor, d: int) -> Tensor:
    """Rolling bias-corrected skew (zero variance or d < 3 -> NaN)."""
    return _moments(x, d, "skew")


def ts_kurt(x: Tensor, d: int) -> Tensor:
    """Rolling bias-corrected excess kurtosis (zero variance or d < 4 -> NaN)."""
    return _moments(x, d, "kurt")


def _comoments(x: Tensor, y: Tensor, d: int, corr: bool) -> Tensor:
    if d >= 2 and moments_triton.use(x.device):
        return moments_triton.comoments(x, y, d, corr)
    return _comoments_chain(x, y, d, corr)


def _comoments_chain(x: Tensor, y: Tensor, d: int, corr: bool) -> Tensor:
    """ts_cov / ts_corr in torch operations (the reference of the comoments kernel)."""
    if d < 2:
        return _nan_like(x)
    bx, by = _Blocks(x, d), _Blocks(y, d)
    nf = float(d)
    inv_n = 1.0 / nf
    inv_n1 = 1.0 / (nf - 1.0)
    uc, up = bx.cur - bx.k, bx.prev - bx.k
    wc, wp = by.cur - by.k, by.prev - by.k
    s_a = bx.unblock(bx.window_sums(uc, up))
    s_b = bx.unblock(bx.window_sums(wc, wp))
    s_ab = bx.unblock(bx.window_sums(uc * wc, up * wp))
    cxy = s_ab - s_a * s_b * inv_n
    constant = _constant(x, d) | _constant(y, d)
    if not corr:
        v = torch.where(constant, 0.0, cxy * inv_n1)
    else:
        vx = bx.unblock(bx.window_sums(uc * uc, up * up)) - s_a * s_a * inv_n
        vy = bx.unblock(bx.window_sums(wc * wc, wp * wp)) - s_b * s_b * inv_n
        bad = constant | (vx <= 0.0) | (vy <= 0.0)
        v = torch.where(bad, _NAN, cxy / _sqrt(torch.where(bad, 1.0, vx * vy)))
    v = torch.where(_window_ok(x, d, y), clean(v), _NAN)
    if corr:
        v = torch.where(v > 1.0, 1.0, torch.where(v < -1.0, -1.0, v))
    return v


def ts_cov(x: Tensor, y: Tensor, d: int) -> Tensor:
    """Rolling covariance, ddof=1 (a constant x or y window -> 0.0; d = 1 -> NaN)."""
    return _comoments(x, y, d, False)


def ts_corr(x: Tensor, y: Tensor, d: int) -> Tensor:
    """Rolling correlation (zero variance -> NaN; d = 1 -> NaN), clipped to [-1, 1]."""
    return _comoments(x, y, d, True)


def _offsets(bl: _Blocks, x: Tensor) -> tuple[Tensor, Tensor]:
    """Per in-block row i: (float(i) for the prefix, float(i - d) for the suffix)."""
    d = bl.d
    i = torch.arange(d, dtype=torch.float64, device=x.device).view(1, 1, d, 1)
    return i, i - float(d)


def ts_slope(x: Tensor, d: int) -> Tensor:
    """OLS slope on 0..d-1 (d = 1 -> NaN; constant window -> 0.0)."""
    if d >= 2 and moments_triton.use(x.device):
        return moments_triton.moments(x, d, "slope")
    return _slope_chain(x, d)


def _slope_chain(x: Tensor, d: int) -> Tensor:
    if d < 2:
        return _nan_like(x)
    bl = _Blocks(x, d)
    nf = float(d)
    vx = nf * (nf * nf - 1.0) / 12.0
    fi_c, fi_p = _offsets(bl, x)
    wc, wp = bl.cur - bl.k, bl.prev - bl.k
    s0 = bl.window_sums(wc, wp)
    s1 = bl.window_sums(fi_c * wc, fi_p * wp)
    c = fi_c - (nf - 1.0) / 2.0
    cxy = bl.unblock(s1 - c * s0)
    v = torch.where(_constant(x, d), 0.0, _cdiv(cxy, vx))
    return torch.where(_window_ok(x, d), clean(v), _NAN)


def ts_decay_linear(x: Tensor, d: int) -> Tensor:
    """Weighted mean of the window, weights d..1 (today weighs d)."""
    if moments_triton.use(x.device):
        return moments_triton.moments(x, d, "decay")
    return _decay_chain(x, d)


def _decay_chain(x: Tensor, d: int) -> Tensor:
    bl = _Blocks(x, d)
    nf = float(d)
    wsum = nf * (nf + 1.0) / 2.0
    fi_c, fi_p = _offsets(bl, x)
    uc, up = bl.cur - bl.k, bl.prev - bl.k
    s0 = bl.window_sums(uc, up)
    s1 = bl.window_sums(fi_c * uc, fi_p * up)
    c = float(d) - fi_c
    w = s1 + c * s0
    v = bl.unblock(bl.k + _cdiv(w, wsum))
    return _first_rows_nan(clean(v).clone(), d)


def ts_product(x: Tensor, d: int) -> Tensor:
    """Product of the window (block prefix/suffix products)."""
    bl = _Blocks(x, d)
    v = bl.unblock(bl.window_sums(bl.cur, bl.prev, product=True))
    return _first_rows_nan(clean(v).clone(), d)


def _extreme(x: Tensor, d: int, sgn: float, want_arg: bool) -> Tensor:
    if moments_triton.use(x.device):
        return moments_triton.extreme(x, d, sgn < 0.0, want_arg)
    return _extreme_chain(x, d, sgn, want_arg)


def _extreme_chain(x: Tensor, d: int, sgn: float, want_arg: bool) -> Tensor:
    """Window max (sgn 1) / min (sgn -1), or sessions since it; ties -> the earliest.

    The Numba kernel's answer is an element of the window (the earliest of those equal to
    the extreme), so any exact method gives its bits: here a doubling table, ceil(log2 d)
    steps of (B, T, N) compares.  ``v[t]``/``at[t]`` hold the extreme of y[t-L+1..t] and
    the session it sits on; two halves combine preferring the older on ties (``>=``)."""
    y = sgn * x
    t_len = x.shape[-2]
    v = y
    at = torch.arange(t_len, dtype=torch.float64, device=x.device).view(1, t_len, 1).expand_as(x)
    span = 1
    while 2 * span <= d:
        v, at = _halves(v, at, span, want_arg)
        span *= 2
    if span < d:  # [t-d+1, t-d+span] (older) and [t-span+1, t] (newer) cover the window
        v, at = _halves(v, at, d - span, want_arg)
    out = (torch.arange(t_len, dtype=torch.float64, device=x.device).view(1, t_len, 1) - at) \
        if want_arg else sgn * v
    return torch.where(_window_ok(x, d), out, _NAN)


def _halves(v: Tensor, at: Tensor, lag: int, want_arg: bool) -> tuple[Tensor, Tensor]:
    """Combine each row t with row t-lag (the older half): the older wins ties; rows
    t < lag keep their own (they only feed windows that are masked)."""
    if lag >= v.shape[-2]:
        return v, at
    old, new = v[..., :-lag, :], v[..., lag:, :]
    take = old >= new
    v2 = v.clone()
    v2[..., lag:, :] = torch.where(take, old, new)
    if not want_arg:
        return v2, at
    at2 = at.clone()
    at2[..., lag:, :] = torch.where(take, at[..., :-lag, :], at[..., lag:, :])
    return v2, at2


def ts_max(x: Tensor, d: int) -> Tensor:
    """Max of the last d values."""
    return _extreme(x, d, 1.0, False)


def ts_min(x: Tensor, d: int) -> Tensor:
    """Min of the last d values."""
    return _extreme(x, d, -1.0, False)


def ts_argmax(x: Tensor, d: int) -> Tensor:
    """Sessions since the window max (ties: the earliest)."""
    return _extreme(x, d, 1.0, True)


def ts_argmin(x: Tensor, d: int) -> Tensor:
    """Sessions since the window min (ties: the earliest)."""
    return _extreme(x, d, -1.0, True)


WINDOW_CELLS = 1 << 26
"""Window cells (B·rows·N·d) per piece of ts_rank / ts_median (bounds their temporaries)."""


def _row_chunks(x: Tensor, d: int):
    """(r0, r1, win): rows r0..r1-1 (r0 >= d-1) with their windows ``win`` (B, r1-r0, N, d),
    win[..., j] = x[t-d+1+j] (a strided view, no copy); pieces of <= WINDOW_CELLS cells."""
    b, t_len, n = x.shape
    rows = max(1, WINDOW_CELLS // max(1, b * n * d))
    for r0 in range(d - 1, t_len, rows):
        r1 = min(t_len, r0 + rows)
        yield r0, r1, x[:, r0 - d + 1:r1].unfold(1, d, 1)


def ts_rank(x: Tensor, d: int) -> Tensor:
    """(#others below today + 0.5·#others equal) / (d - 1); d = 1 -> 0.5.  The counts are
    exact integers (Numba adds 0/1 per lag), so counting over the unfolded window is exact."""
    if d == 1:
        v = torch.full_like(x, 0.5)
    else:
        v = _nan_like(x)
        for r0, r1, win in _row_chunks(x, d):
            others, today = win[..., : d - 1], x[:, r0:r1, :, None]
            below = (others < today).sum(dim=-1).to(torch.float64)
            equal = (others == today).sum(dim=-1).to(torch.float64)
            v[:, r0:r1] = _cdiv(below + 0.5 * equal, d - 1.0)
    return torch.where(_window_ok(x, d), v, _NAN)


def ts_median(x: Tensor, d: int) -> Tensor:
    """Median of the full finite window of the last d values (x + 0.0: -0.0 is +0.0); an
    even d averages the two middle values as (a + b) / 2 (non-finite -> NaN)."""
    out = _nan_like(x)
    ok = _window_ok(x, d)
    half = d // 2
    for r0, r1, win in _row_chunks(x, d):
        srt = torch.sort(win + 0.0, dim=-1).values
        if d % 2:
            med = srt[..., half]
        else:
            med = clean((srt[..., half - 1] + srt[..., half]) / _t(2.0, x))
        out[:, r0:r1] = torch.where(ok[:, r0:r1], med, _NAN)
    return out


def ts_ema(x: Tensor, d: int | list[int]) -> Tensor:
    """EMA, alpha 2/(d+1), seeded by the first full finite window's mean; a non-finite
    value gives NaN and restarts (the next seed is the next full finite window's mean).
    ``d`` may be a list (one window per batch element): one recurrence for all (on CUDA one
    Triton kernel, :func:`gymkit.bulk.scans.ema`; else a loop over sessions)."""
    ds = [d] * x.shape[0] if isinstance(d, int) else list(d)
    seed = torch.empty_like(x)
    ok_seed = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    t_len = x.shape[-2]
    for w in sorted(set(ds)):
        idx = [i for i, v in enumerate(ds) if v == w]
        xs = x[idx]
        acc = torch.zeros_like(xs)
        for lag in range(min(w, t_len) - 1, -1, -1):  # 0.0 + x[t-d+1] + ... + x[t], in that order
            acc[:, lag:] += xs[:, : t_len - lag]  # rows t < d-1 are partial: never a seed
        seed[idx] = _cdiv(acc, float(w))
        ok_seed[idx] = _window_ok(xs, w)
    alpha = torch.tensor([2.0 / (w + 1.0) for w in ds], dtype=x.dtype, device=x.device)
    keep = torch.tensor([1.0 - 2.0 / (w + 1.0) for w in ds], dtype=x.dtype, device=x.device)
    ax = alpha.view(-1, 1, 1) * x  # alpha·v of every step, at once
    return clean(scans.ema(x, ax, seed, ok_seed, keep))


def adv(close: Tensor, volume: Tensor, d: int) -> Tensor:
    """Average daily dollar volume: ts_mean(close * volume, d)."""
    return ts_mean(mul(close, volume), d)


ELEMENTWISE: dict[str, object] = {
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "power": power,
    "lt": lt, "le": le, "gt": gt, "ge": ge, "eq": eq, "ne": ne, "and": and_, "or": or_,
    "where": where, "abs": abs_, "log": log, "sign": sign, "sqrt": sqrt,
    "signed_power": signed_power, "min": min_, "max": max_,
}
"""Element-wise operators: tensor or scalar operands, broadcast."""

PANEL_OPS: dict[str, object] = {
    "rank": rank, "scale": scale, "group_neutralize": group_neutralize,
    "delay": delay, "ts_delta": ts_delta, "ts_mean": ts_mean, "ts_std": ts_std,
    "ts_sum": ts_sum, "ts_max": ts_max, "ts_min": ts_min, "ts_rank": ts_rank,
    "ts_argmax": ts_argmax, "ts_argmin": ts_argmin, "ts_product": ts_product,
    "ts_decay_linear": ts_decay_linear, "ts_ema": ts_ema, "ts_median": ts_median, "ts_skew": ts_skew,
    "ts_kurt": ts_kurt, "ts_slope": ts_slope, "ts_corr": ts_corr, "ts_cov": ts_cov,
}
"""Cross-sectional and time-series operators: (B, T, N) tensors (windows as ints)."""
