"""The book's day-major sums at universe sizes where the old stock-major copy left the caches
(issue 22): the same bits as plain stock-order loops, no transposed copies of the forward
returns, one compiled signature."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gymkit.verifiers import book_pnl, book_weights
from gymkit.verifiers.book import ForwardByStock, _book_pnl, split_forward_returns


def plain_sums(values: np.ndarray, fwd: np.ndarray, r0: int, r1: int, min_ic: int = 5):
    """Gross, turnover, legs and IC of the book as plain Python stock-order loops, day by day."""
    w = book_weights(values, slice(r0, r1))
    n_days, n = w.shape
    out = {k: np.zeros(n_days) for k in ("gross", "turnover", "long", "short")}
    ic = np.full(n_days, np.nan)
    prev = [0.0] * n
    for d in range(n_days):
        t = r0 + d
        row = w[d].tolist()
        r = [float(x) if np.isfinite(x) else 0.0 for x in fwd[t]]
        k = [1.0 if np.isfinite(fwd[t, j]) and np.isfinite(values[t, j]) else 0.0 for j in range(n)]
        tov = lo = sh = m = sw = sr = 0.0
        for j in range(n):
            x = row[j]
            px = max(x, 0.0)
            tov += abs(x - prev[j])
            lo += px * r[j]
            sh += (x - px) * r[j]
            m += k[j]
            sw += k[j] * x
            sr += k[j] * r[j]
        out["gross"][d], out["long"][d], out["short"][d], out["turnover"][d] = lo + sh, lo, sh, tov
        if m > 0:
            mw, mr = sw / m, sr / m
            cov = vw = vr = 0.0
            for j in range(n):
                a = (row[j] - mw) * k[j]
                b = (r[j] - mr) * k[j]
                cov += a * b
                vw += a * a
                vr += b * b
            if int(np.isfinite(values[t]).sum()) >= min_ic and m >= min_ic and vw > 0 and vr > 0:
                ic[d] = cov / np.sqrt(vw * vr)
        prev = row
    return w, out, ic


def _panel(rng: np.random.Generator, t: int, n: int, nan_frac: float):
    values = np.round(rng.normal(size=(t, n)), 2)  # ties on every row
    values[rng.random(values.shape) < nan_frac] = np.nan
    values[3] = np.nan  # an empty day
    fwd = rng.normal(0.0, 0.01, (t, n))
    fwd[rng.random(fwd.shape) < 0.05] = np.nan
    return values, fwd


def _assert_plain(values: np.ndarray, fwd: np.ndarray, r0: int, r1: int) -> None:
    res = book_pnl(values, fwd, slice(r0, r1))
    w, want, ic = plain_sums(values, fwd, r0, r1)
    assert res.weights.tobytes() == w.tobytes()
    for k, v in want.items():
        assert getattr(res, k).tobytes() == v.tobytes(), k
    assert np.array_equal(res.ic, ic, equal_nan=True)


@pytest.mark.parametrize("n,nan_frac", [(700, 0.0), (701, 0.1), (1500, 0.02)])
def test_wide_book_sums_equal_plain_stock_order_loops(n: int, nan_frac: float) -> None:
    rng = np.random.default_rng(n)
    values, fwd = _panel(rng, 24, n, nan_frac)
    _assert_plain(values, fwd, 2, 22)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 160), days=st.integers(1, 12), nan_frac=st.sampled_from([0.0, 0.05, 0.5]),
       seed=st.integers(0, 2**32 - 1))
def test_book_sums_equal_plain_loops_property(n: int, days: int, nan_frac: float, seed: int) -> None:
    values, fwd = _panel(np.random.default_rng(seed), days + 6, n, nan_frac)
    _assert_plain(values, fwd, 4, 4 + days)


def test_forward_returns_are_shared_not_copied_and_one_signature_serves_all() -> None:
    """The per-window forward returns are views of the split arrays (memory linear in T·N with
    no transposed copies), and writable, read-only and view inputs share one compilation."""
    rng = np.random.default_rng(1)
    values, fwd = _panel(rng, 40, 90, 0.05)
    parts = split_forward_returns(fwd)
    fs = ForwardByStock(parts, slice(5, 35))
    assert np.shares_memory(fs.fwd0, parts[0]) and np.shares_memory(fs.finite, parts[1])
    assert fs.fwd0.shape == (30, 90) and not fs.fwd0.flags.writeable
    frozen = values.copy()
    frozen.setflags(write=False)
    a = book_pnl(values, fwd, slice(5, 35), fwd_by_stock=fs)
    b = book_pnl(frozen, fwd, slice(5, 35))
    c = book_pnl(np.asfortranarray(values), fwd, slice(5, 35), fwd_parts=parts)
    for x in (b, c):
        assert all(getattr(a, k).tobytes() == getattr(x, k).tobytes()
                   for k in ("weights", "gross", "turnover", "long", "short", "ic"))
    assert len(_book_pnl.signatures) == 1, _book_pnl.signatures
