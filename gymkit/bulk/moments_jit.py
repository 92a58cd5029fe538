"""The Triton kernels of :mod:`gymkit.bulk.moments_triton` (imported only where Triton is:
decorated at import, so the interpreter switch is read then; see that module for the contract).

One thread per (formula, block, stock): a right-to-left pass over the previous block stores
the suffix sums of every term and the suffix counts (non-finite values, equal neighbours) in
scratch; a left-to-right pass over the current block forms each window's sums as
suffix + prefix, the masks from the counts, and the statistic.  Constants come from a float64
tensor (Triton types a Python float literal as float32); the literals used are exact in float32.
"""

import triton
import triton.language as tl

__all__ = ["comoments_kernel", "extreme_kernel", "moments_kernel"]


@triton.jit
def moments_kernel(x_ptr, out_ptr, sf_ptr, si_ptr, t_len, n, d, nb, c_ptr,
                   STAT: tl.constexpr, BLOCK: tl.constexpr):
    """STAT 0: std (sums of u, u²), 1: skew (+ u³), 2: kurt (+ u⁴), 3: slope and 4: decay_linear
    (sums of u and of o·u, o the row's offset: i in the current block, r - d in the previous);
    u = x - x[block start]."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid // nb
    bi = pid % nb
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n
    xb = x_ptr + b * t_len * n + cols
    row0 = bi * d
    nan = tl.load(c_ptr + 7)
    z64 = cols.to(tl.int64) * 0  # conditions are built as vectors: the interpreter masks with vectors only
    has_prev = (z64 + bi) >= 1
    k = tl.load(xb + row0 * n, mask=m, other=0.0)
    slab = pid * d * n + cols  # this (formula, block)'s d scratch rows
    plane = tl.num_programs(0).to(tl.int64) * d * n  # one scratch plane: every (formula, block)
    # ---- previous block, right to left: suffix sums (seeded by +0.0) and counts
    prev_last = tl.where(has_prev, tl.load(xb + (row0 - 1) * n, mask=m & has_prev, other=0.0), nan)
    s1 = cols.to(tl.float64) * 0.0  # +0.0: suf[d-1] = term + 0.0
    s2 = s1
    s3 = s1
    s4 = s1
    nfin = cols * 0
    eq = cols * 0
    above = prev_last
    for kk in range(0, d - 1):
        r = d - 1 - kk
        pv = tl.where(has_prev, tl.load(xb + (row0 - d + r) * n, mask=m & has_prev, other=0.0), nan)
        u = pv - k
        s1 = u + s1
        if STAT >= 3:
            s2 = (r - d).to(tl.float64) * u + s2
        else:
            u2 = u * u
            s2 = u2 + s2
            if STAT >= 1:
                s3 = u2 * u + s3
            if STAT == 2:
                s4 = u2 * u2 + s4
        nfin = nfin + ((tl.abs(pv) < float("inf")) == 0).to(tl.int32)
        tl.store(sf_ptr + slab + r * n, s1, mask=m)
        tl.store(sf_ptr + plane + slab + r * n, s2, mask=m)
        if STAT == 1 or STAT == 2:
            tl.store(sf_ptr + 2 * plane + slab + r * n, s3, mask=m)
        if STAT == 2:
            tl.store(sf_ptr + 3 * plane + slab + r * n, s4, mask=m)
        tl.store(si_ptr + slab + r * n, nfin, mask=m)
        if kk > 0:  # e at row r + 1 (prev[r+1] == prev[r]) closes the suffix count from r + 1
            eq = eq + (above == pv).to(tl.int32)
            tl.store(si_ptr + plane + slab + (r + 1) * n, eq, mask=m)
        above = pv
    # ---- current block, left to right: prefix sums (seeded by -0.0: pre[0] is the term itself)
    p1 = cols.to(tl.float64) * 0.0 * -1.0  # -0.0: pre[0] = -0.0 + term = the term itself
    p2 = p1
    p3 = p1
    p4 = p1
    nfc = cols * 0
    ecc = cols * 0
    ec0 = cols * 0
    before = prev_last
    inv_n = tl.load(c_ptr + 0)
    inv_n1 = tl.load(c_ptr + 1)
    for i in range(0, d):
        row = row0 + i
        live = m & ((z64 + row) < t_len)
        cv = tl.load(xb + row * n, mask=live, other=0.0)
        cv = tl.where(live, cv, nan)
        u = cv - k
        p1 = p1 + u
        if STAT >= 3:
            p2 = p2 + (z64 + i).to(tl.float64) * u
        else:
            u2 = u * u
            p2 = p2 + u2
            if STAT >= 1:
                p3 = p3 + u2 * u
            if STAT == 2:
                p4 = p4 + u2 * u2
        nfc = nfc + ((tl.abs(cv) < float("inf")) == 0).to(tl.int32)
        e = (cv == before).to(tl.int32)
        if i == 0:
            ec0 = e
        ecc = ecc + e
        before = cv
        inner = (z64 + i) < d - 1
        sm = m & inner
        w1 = tl.where(inner, tl.load(sf_ptr + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + p1
        w2 = tl.where(inner, tl.load(sf_ptr + plane + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + p2
        bad_n = tl.where(inner, tl.load(si_ptr + slab + (i + 1) * n, mask=sm, other=0), 0) + nfc
        two = (z64 + i + 2) <= d - 1
        e_prev = tl.where(two, tl.load(si_ptr + plane + slab + (i + 2) * n, mask=m & two, other=0), 0)
        n_eq = e_prev + tl.where((z64 + i) == d - 1, ecc - ec0, ecc)
        ok = bad_n == 0
        const = n_eq == d - 1
        if STAT == 3:  # slope: (Σ o·u - (i - (d-1)/2)·Σ u) / (d(d²-1)/12)
            cxy = w2 - ((z64 + i).to(tl.float64) - tl.load(c_ptr + 10)) * w1
            v = tl.where(const, 0.0, cxy / tl.load(c_ptr + 9))
            v = tl.where(ok, tl.where(tl.abs(v) < float("inf"), v, nan), nan)
        elif STAT == 4:  # decay_linear: k + (Σ o·u + (d - i)·Σ u) / (d(d+1)/2); no window mask
            w = w2 + ((z64 + d).to(tl.float64) - (z64 + i).to(tl.float64)) * w1
            v = k + w / tl.load(c_ptr + 11)
            v = tl.where(tl.abs(v) < float("inf"), v, nan)
            v = tl.where((z64 + row) < d - 1, nan, v)
        elif STAT == 0:
            v = (w2 - w1 * w1 * inv_n) * inv_n1
            v = tl.where(0.0 > v, 0.0, v)
            v = tl.sqrt(v)
            v = tl.where(const, 0.0, v)
            v = tl.where(tl.abs(v) < float("inf"), v, nan)
            v = tl.where(ok, v, nan)
        else:
            w3 = tl.where(inner, tl.load(sf_ptr + 2 * plane + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + p3
            a = w1 * inv_n
            e2 = w2 * inv_n
            e3 = w3 * inv_n
            m2 = e2 - a * a
            if STAT == 1:
                m3 = e3 - 3.0 * a * e2 + 2.0 * a * a * a
                v = tl.load(c_ptr + 2) * m3 / (tl.load(c_ptr + 3) * m2 * tl.sqrt(m2))
            else:
                w4 = tl.where(inner, tl.load(sf_ptr + 3 * plane + slab + (i + 1) * n, mask=sm, other=0.0),
                              0.0) + p4
                e4 = w4 * inv_n
                m4 = e4 - 4.0 * a * e3 + 6.0 * a * a * e2 - 3.0 * a * a * a * a
                g = tl.load(c_ptr + 4) * m4 / (m2 * m2) - tl.load(c_ptr + 5)
                v = g / tl.load(c_ptr + 6)
            bad = const | (m2 <= 0.0) | (ok == 0) | ((tl.abs(v) < float("inf")) == 0)
            v = tl.where(bad, nan, v)
        tl.store(out_ptr + b * t_len * n + row * n + cols, v, mask=live)


@triton.jit
def comoments_kernel(x_ptr, y_ptr, out_ptr, sf_ptr, si_ptr, t_len, n, d, nb, c_ptr,
                     CORR: tl.constexpr, BLOCK: tl.constexpr):
    """ts_cov (sums of u, w, u·w) or ts_corr (+ u², w²); u = x - x[block start], w likewise."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid // nb
    bi = pid % nb
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n
    off = b * t_len * n + cols
    row0 = bi * d
    nan = tl.load(c_ptr + 7)
    z64 = cols.to(tl.int64) * 0  # conditions are built as vectors: the interpreter masks with vectors only
    has_prev = (z64 + bi) >= 1
    kx = tl.load(x_ptr + off + row0 * n, mask=m, other=0.0)
    ky = tl.load(y_ptr + off + row0 * n, mask=m, other=0.0)
    slab = pid * d * n + cols
    plane = tl.num_programs(0).to(tl.int64) * d * n
    xl = tl.where(has_prev, tl.load(x_ptr + off + (row0 - 1) * n, mask=m & has_prev, other=0.0), nan)
    yl = tl.where(has_prev, tl.load(y_ptr + off + (row0 - 1) * n, mask=m & has_prev, other=0.0), nan)
    sa = cols.to(tl.float64) * 0.0
    sb = sa
    sab = sa
    saa = sa
    sbb = sa
    nfin = cols * 0
    eqx = cols * 0
    eqy = cols * 0
    ax = xl
    ay = yl
    for kk in range(0, d - 1):
        r = d - 1 - kk
        px = tl.where(has_prev, tl.load(x_ptr + off + (row0 - d + r) * n, mask=m & has_prev, other=0.0), nan)
        py = tl.where(has_prev, tl.load(y_ptr + off + (row0 - d + r) * n, mask=m & has_prev, other=0.0), nan)
        u = px - kx
        w = py - ky
        sa = u + sa
        sb = w + sb
        sab = u * w + sab
        if CORR:
            saa = u * u + saa
            sbb = w * w + sbb
        fin = (tl.abs(px) < float("inf")) & (tl.abs(py) < float("inf"))
        nfin = nfin + (fin == 0).to(tl.int32)
        tl.store(sf_ptr + slab + r * n, sa, mask=m)
        tl.store(sf_ptr + plane + slab + r * n, sb, mask=m)
        tl.store(sf_ptr + 2 * plane + slab + r * n, sab, mask=m)
        if CORR:
            tl.store(sf_ptr + 3 * plane + slab + r * n, saa, mask=m)
            tl.store(sf_ptr + 4 * plane + slab + r * n, sbb, mask=m)
        tl.store(si_ptr + slab + r * n, nfin, mask=m)
        if kk > 0:
            eqx = eqx + (ax == px).to(tl.int32)
            eqy = eqy + (ay == py).to(tl.int32)
            tl.store(si_ptr + plane + slab + (r + 1) * n, eqx, mask=m)
            tl.store(si_ptr + 2 * plane + slab + (r + 1) * n, eqy, mask=m)
        ax = px
        ay = py
    pa = cols.to(tl.float64) * 0.0 * -1.0
    pb = pa
    pab = pa
    paa = pa
    pbb = pa
    nfc = cols * 0
    ecx = cols * 0
    ecy = cols * 0
    ex0 = cols * 0
    ey0 = cols * 0
    bx = xl
    by = yl
    inv_n = tl.load(c_ptr + 0)
    inv_n1 = tl.load(c_ptr + 1)
    for i in range(0, d):
        row = row0 + i
        live = m & ((z64 + row) < t_len)
        cx = tl.where(live, tl.load(x_ptr + off + row * n, mask=live, other=0.0), nan)
        cy = tl.where(live, tl.load(y_ptr + off + row * n, mask=live, other=0.0), nan)
        u = cx - kx
        w = cy - ky
        pa = pa + u
        pb = pb + w
        pab = pab + u * w
        if CORR:
            paa = paa + u * u
            pbb = pbb + w * w
        fin = (tl.abs(cx) < float("inf")) & (tl.abs(cy) < float("inf"))
        nfc = nfc + (fin == 0).to(tl.int32)
        e_x = (cx == bx).to(tl.int32)
        e_y = (cy == by).to(tl.int32)
        if i == 0:
            ex0 = e_x
            ey0 = e_y
        ecx = ecx + e_x
        ecy = ecy + e_y
        bx = cx
        by = cy
        inner = (z64 + i) < d - 1
        sm = m & inner
        wa = tl.where(inner, tl.load(sf_ptr + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + pa
        wb = tl.where(inner, tl.load(sf_ptr + plane + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + pb
        wab = tl.where(inner, tl.load(sf_ptr + 2 * plane + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + pab
        bad_n = tl.where(inner, tl.load(si_ptr + slab + (i + 1) * n, mask=sm, other=0), 0) + nfc
        two = (z64 + i + 2) <= d - 1
        qx = tl.where(two, tl.load(si_ptr + plane + slab + (i + 2) * n, mask=m & two, other=0), 0)
        qy = tl.where(two, tl.load(si_ptr + 2 * plane + slab + (i + 2) * n, mask=m & two, other=0), 0)
        last = (z64 + i) == d - 1
        const = ((qx + tl.where(last, ecx - ex0, ecx)) == d - 1) | ((qy + tl.where(last, ecy - ey0, ecy)) == d - 1)
        cxy = wab - wa * wb * inv_n
        if CORR:
            waa = tl.where(inner, tl.load(sf_ptr + 3 * plane + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + paa
            wbb = tl.where(inner, tl.load(sf_ptr + 4 * plane + slab + (i + 1) * n, mask=sm, other=0.0), 0.0) + pbb
            vx = waa - wa * wa * inv_n
            vy = wbb - wb * wb * inv_n
            bad = const | (vx <= 0.0) | (vy <= 0.0)
            v = tl.where(bad, nan, cxy / tl.sqrt(tl.where(bad, 1.0, vx * vy)))
        else:
            v = tl.where(const, 0.0, cxy * inv_n1)
        v = tl.where(bad_n == 0, tl.where(tl.abs(v) < float("inf"), v, nan), nan)
        if CORR:
            v = tl.where(v > 1.0, 1.0, tl.where(v < -1.0, -1.0, v))
        tl.store(out_ptr + off + row * n, v, mask=live)


@triton.jit
def extreme_kernel(x_ptr, out_ptr, t_len, n, d, c_ptr, MIN: tl.constexpr, ARG: tl.constexpr,
                   BLOCK: tl.constexpr):
    """ts_max / ts_min (MIN) or the sessions since it (ARG) of the window ending at row t: the
    earliest element equal to the extreme (a scan from the oldest, replaced only by a strictly
    larger y = ±x), NaN unless t >= d-1 and the window is finite."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid // t_len
    t = pid % t_len
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n
    z64 = cols.to(tl.int64) * 0
    full = m & ((z64 + t) >= d - 1)
    base = x_ptr + b * t_len * n + cols
    nan = tl.load(c_ptr + 7)
    x0 = tl.load(base + (t - d + 1) * n, mask=full, other=0.0)
    best = x0 * -1.0 if MIN else x0 * 1.0
    at = z64 + (t - d + 1)
    bad = ((tl.abs(x0) < float("inf")) == 0).to(tl.int32)
    for j in range(1, d):
        xv = tl.load(base + (t - d + 1 + j) * n, mask=full, other=0.0)
        y = xv * -1.0 if MIN else xv * 1.0
        take = y > best
        best = tl.where(take, y, best)
        at = tl.where(take, z64 + (t - d + 1 + j), at)
        bad = bad + ((tl.abs(xv) < float("inf")) == 0).to(tl.int32)
    if ARG:
        v = (z64 + t).to(tl.float64) - at.to(tl.float64)
    else:
        v = best * -1.0 if MIN else best * 1.0
    v = tl.where(full & (bad == 0), v, nan)
    tl.store(out_ptr + b * t_len * n + t * n + cols, v, mask=m)
