"""The Triton kernels of :mod:`gymkit.bulk.libm_triton` (imported only where Triton is:
decorated at import, so the interpreter switch is read then; see that module for the contract)."""

import triton
import triton.language as tl

__all__ = ["log_kernel", "pow_kernel"]


@triton.jit
def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@triton.jit
def two_prod(a, b, split):
    p = a * b
    t = a * split
    ah = t - (t - a)
    al = a - ah
    t = b * split
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@triton.jit
def dd_log(x, inv_ptr, thi_ptr, tlo_ptr, c_ptr):
    bits = x.to(tl.int64, bitcast=True)
    m = ((bits & 0xFFFFFFFFFFFFF) | 0x3FE0000000000000).to(tl.float64, bitcast=True)
    e = ((bits >> 52) & 0x7FF) - 1022
    low = m < tl.load(c_ptr + 0)
    m = tl.where(low, m * 2.0, m)
    ef = (e - low.to(tl.int64)).to(tl.float64)
    magic = tl.load(c_ptr + 14)
    k = ((m * 256.0 + magic) - magic).to(tl.int64)
    k = tl.minimum(tl.maximum(k, 0), 511)
    split = tl.load(c_ptr + 1)
    p, pe = two_prod(m, tl.load(inv_ptr + k), split)
    r_hi, r_lo = two_sum(p - 1.0, pe)
    sq, sq_e = two_prod(r_hi, r_hi, split)
    h = r_hi
    tail = h * (tl.load(c_ptr + 4) + h * (tl.load(c_ptr + 5) + h * (tl.load(c_ptr + 6) + h * (
        tl.load(c_ptr + 7) + h * (tl.load(c_ptr + 8) + h * (tl.load(c_ptr + 9) + h * (
            tl.load(c_ptr + 10) + h * (tl.load(c_ptr + 11) + h * (tl.load(c_ptr + 12) + h * tl.load(
                c_ptr + 13))))))))))
    tail = (h * h) * tail + r_lo * (r_hi * -1.0)
    s, err = two_sum(r_hi, -0.5 * sq)
    err = err + (r_lo - 0.5 * sq_e + tail)
    s, e2 = two_sum(tl.load(thi_ptr + k), s)
    err = err + e2 + tl.load(tlo_ptr + k)
    s, e3 = two_sum(ef * tl.load(c_ptr + 2), s)
    err = err + e3 + ef * tl.load(c_ptr + 3)
    return two_sum(s, err)


@triton.jit
def log_kernel(a_ptr, out_ptr, code_ptr, n, inv_ptr, thi_ptr, tlo_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    msk = offs < n
    a = tl.load(a_ptr + offs, mask=msk, other=1.0)
    ok = (a > 0.0) & (a < float("inf"))
    x = tl.where(ok, a, 1.0)
    hi, lo = dd_log(x, inv_ptr, thi_ptr, tlo_ptr, c_ptr)
    hz = tl.where(hi == 0.0, 1.0, hi).to(tl.int64, bitcast=True)
    eraw = (hz >> 52) & 0x7FF
    frac = tl.abs(lo) * ((2098 - eraw) << 52).to(tl.float64, bitcast=True)  # |lo| / ULP(hi), exact
    edge = ((hz & 0xFFFFFFFFFFFFF) == 0) & (lo != 0.0)  # |mantissa| = 0.5
    hard = ok & ((x < tl.load(c_ptr + 17)) | (0.5 - frac < tl.load(c_ptr + 15)) | edge) & (hi != 0.0)
    tl.store(out_ptr + offs, tl.where(ok, hi, tl.load(c_ptr + 23)), mask=msk)
    tl.store(code_ptr + offs, tl.where(hard, 2, tl.where(ok, 1, 0)).to(tl.int8), mask=msk)


@triton.jit
def pow_kernel(a_ptr, b_ptr, r_ptr, out_ptr, code_ptr, n, inv_ptr, thi_ptr, tlo_ptr, c_ptr,
               SIGNED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    msk = offs < n
    a = tl.load(a_ptr + offs, mask=msk, other=1.0)
    b = tl.load(b_ptr + offs, mask=msk, other=1.0)
    r_raw = tl.load(r_ptr + offs, mask=msk, other=1.0)
    inf = float("inf")
    x = tl.abs(a)
    fin = (x < inf) & (tl.abs(b) < inf)
    integral = b == tl.floor(b)
    bad = (fin == 0) | ((x == 0.0) & (b < 0.0))
    if not SIGNED:
        bad = bad | ((a < 0.0) & (integral == 0))
    trivial = bad | (x == 0.0)
    xs = tl.where(trivial, 1.0, x)
    ys = tl.where(bad, 0.0, b)
    r0 = tl.where(trivial, 1.0, r_raw)  # pow(1, ys) = 1: the chain's r0 there
    lx_hi, lx_lo = dd_log(xs, inv_ptr, thi_ptr, tlo_ptr, c_ptr)
    w_hi, w_e = two_prod(ys, lx_hi, tl.load(c_ptr + 1))
    w_lo = w_e + ys * lx_lo
    rs = tl.where((r0 > 0.0) & (r0 < inf), r0, 1.0)
    lr_hi, lr_lo = dd_log(rs, inv_ptr, thi_ptr, tlo_ptr, c_ptr)
    d_hi, d_e = two_sum(w_hi, lr_hi * -1.0)
    delta = d_hi + (d_e + (w_lo - lr_lo))
    rb = rs.to(tl.int64, bitcast=True)
    mant = ((rb & 0xFFFFFFFFFFFFF) | 0x3FE0000000000000).to(tl.float64, bitcast=True)
    u = delta * mant * tl.load(c_ptr + 20)
    magic = tl.load(c_ptr + 14)
    k = (u + magic) - magic
    dist = tl.abs(u - k)
    w_abs = tl.abs(w_hi)
    margin = tl.load(c_ptr + 16) + w_abs * tl.load(c_ptr + 21) + (tl.abs(ys) + 1.0) * tl.load(c_ptr + 22)
    edge = (mant == 0.5) & (u < 0.0)
    z = r0
    for step in tl.static_range(1, 4):
        zb = z.to(tl.int64, bitcast=True)
        z = tl.where(k >= step, tl.where(z == inf, z, (zb + 1).to(tl.float64, bitcast=True)), z)
        zb = z.to(tl.int64, bitcast=True)
        z = tl.where(k <= -step, tl.where(z == 0.0, z, (zb - 1).to(tl.float64, bitcast=True)), z)
    crossed = ((z.to(tl.int64, bitcast=True) >> 52) & 0x7FF) != ((rb >> 52) & 0x7FF)
    normal = xs >= tl.load(c_ptr + 17)
    over = normal & (w_hi > tl.load(c_ptr + 18))
    under = normal & (w_hi < tl.load(c_ptr + 19))
    z = tl.where(over, inf, tl.where(under, 0.0, z))
    hard = (bad == 0) & (x != 0.0) & (over == 0) & (under == 0) & (
        (0.5 - dist < margin) | (u != u) | (tl.abs(u) == inf) | (tl.abs(k) > 3.0) | edge | crossed
        | (w_abs > 700.0) | (normal == 0) | (rs != r0))
    z = tl.where(x == 0.0, tl.where(ys == 0.0, 1.0, 0.0), z)  # 0**b: 0 (b > 0) or 1 (b == 0)
    ya = tl.abs(ys)
    odd = integral & ((ya - 2.0 * tl.floor(ya * 0.5)) == 1.0)
    nan = tl.load(c_ptr + 23)
    mag = tl.where(tl.abs(z) < inf, z, nan)
    if SIGNED:
        out = tl.where(a < 0.0, mag * -1.0, tl.where(a > 0.0, mag, mag * 0.0))
    else:
        out = tl.where((a < 0.0) & odd, mag * -1.0, mag)
        neg_zero = a.to(tl.int64, bitcast=True) < 0  # a is -0.0 where x == 0
        zero_pow = tl.where(ys == 0.0, 1.0, tl.where(neg_zero & odd, tl.load(c_ptr + 24), 0.0))
        out = tl.where(x == 0.0, zero_pow, out)
    out = tl.where(bad, nan, out)
    tl.store(out_ptr + offs, out, mask=msk)
    tl.store(code_ptr + offs, tl.where(hard, 2, tl.where(bad, 0, 1)).to(tl.int8), mask=msk)
