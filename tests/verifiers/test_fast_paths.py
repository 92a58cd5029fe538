"""The speed paths of the verifier core give the same bits as the plain definitions.

Each fast kernel is checked against a slow, obvious implementation of the same
arithmetic (not only within a tolerance): both ranking paths (pair count and sort),
the day-vectorised book sums, the grouped CPCV Sharpes, the fused metrics and factor
regression, and the numpy-order sums they reproduce.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from gymkit.verifiers import (
    CPCV,
    book_pnl,
    book_weights,
    compute_metrics,
    cpcv_score,
    max_drawdown,
    sharpe,
)
from gymkit.verifiers.book import ForwardByStock, split_forward_returns
from gymkit.verifiers.factors import FactorModel
from gymkit.verifiers.metrics import numpy_mean, numpy_std


def slow_weights(row: np.ndarray) -> np.ndarray:
    """Centred average ranks of the finite values over Σ|·| (exact), by scipy's rankdata."""
    out = np.zeros(row.size)
    fin = np.isfinite(row)
    n = int(fin.sum())
    if n < 2:
        return out
    c = rankdata(row[fin], method="average") - 0.5 * (n + 1)
    g = float(np.abs(c).sum())  # multiples of 0.5: exact in any order
    if g == 0.0:
        return out
    out[fin] = c / g
    return out


def adversarial_rows(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Rows that stress every rank path: ties, float32 clashes, overflow, NaN, tiny counts."""
    base = rng.normal(size=n)
    rows = [
        base,
        np.round(base),  # exact float32 values with ties
        1.0 + rng.integers(0, 3, n) * 1e-12,  # distinct doubles sharing a float32 key
        np.where(rng.random(n) < 0.5, 1.0, 1.0 + 2e-16),  # adjacent doubles, one float32 key
        base * 1e300,  # beyond float32 range: keys overflow to ±inf
        base * 1e-310,  # subnormal doubles: keys flush to ±0
        np.where(rng.random(n) < 0.5, 0.0, -0.0),  # signed zeros are equal
        np.full(n, 3.25),  # constant: holds nothing
        np.where(rng.random(n) < 0.3, np.nan, base),
        np.where(rng.random(n) < 0.3, np.inf, np.round(base)),
        np.full(n, np.nan),
    ]
    one = np.full(n, np.nan)
    one[0] = 1.0  # a single finite value: holds nothing
    rows.append(one)
    mixed = np.round(base * 2) / 2
    mixed[::3] = 1e-300 * np.arange(mixed[::3].size)  # mixes ties, clashes and lossless values
    rows.append(mixed)
    # exactly one pair sharing a float32 key (the one-pair path), at every place in the order
    distinct = rng.permutation(n) + 0.5 * rng.random(n)
    for i, j in ((0, n - 1), (n // 2, (n // 2 + 1) % n), (n - 1, 0)):
        if i == j:
            continue
        tie = distinct.copy()
        tie[j] = tie[i]  # a true tie
        clash_up, clash_down = distinct.copy(), distinct.copy()
        clash_up[j] = np.nextafter(clash_up[i], np.inf)  # one float32 key, ordered by the doubles
        clash_down[j] = np.nextafter(clash_down[i], -np.inf)
        rows += [tie, clash_up, clash_down]
    zeros = distinct.copy()
    zeros[0], zeros[-1] = 0.0, -0.0  # a signed-zero pair
    big = distinct.copy()
    big[0], big[-1] = 1e300, 2e300  # two overflowing keys: a clash at +inf
    rows += [zeros, big]
    return rows


@pytest.mark.parametrize("n", [2, 3, 15, 16, 17, 46, 63, 64, 65, 130, 500])
def test_rank_weights_are_bit_exact_on_adversarial_rows(n):
    rng = np.random.default_rng(n)
    rows = adversarial_rows(n, rng)
    got = book_weights(np.vstack(rows))
    for row, w in zip(rows, got, strict=True):
        np.testing.assert_array_equal(w, slow_weights(row))
        assert not np.any(np.signbit(w[w == 0.0]))


def plain_book(values: np.ndarray, fwd: np.ndarray, r0: int, r1: int, min_ic: int = 5):
    """The book's daily sums as plain stock-order loops, one day at a time."""
    n_days, n_stocks = r1 - r0, values.shape[1]
    w = book_weights(values, slice(r0, r1))
    f0 = np.where(np.isfinite(fwd), fwd, 0.0)
    fm = np.isfinite(fwd).astype(float)
    out = {k: np.zeros(n_days) for k in ("gross", "turnover", "long", "short")}
    ic = np.full(n_days, np.nan)
    prev = np.zeros(n_stocks)
    for d in range(n_days):
        t = r0 + d
        tov = lo = sh = m = sw = sr = 0.0
        k = np.where(np.isfinite(values[t]), fm[t], 0.0)
        for j in range(n_stocks):
            x, r = w[d, j], f0[t, j]
            tov += abs(x - prev[j])
            px = max(x, 0.0)
            lo += px * r
            sh += (x - px) * r
            m += k[j]
            sw += k[j] * x
            sr += k[j] * r
        cov = vw = vr = 0.0
        with np.errstate(invalid="ignore", divide="ignore"):  # m = 0: no IC that day
            mw, mr = np.float64(sw) / m, np.float64(sr) / m
        for j in range(n_stocks):
            a = (w[d, j] - mw) * k[j]
            b = (f0[t, j] - mr) * k[j]
            cov += a * b
            vw += a * a
            vr += b * b
        out["gross"][d], out["long"][d], out["short"][d], out["turnover"][d] = lo + sh, lo, sh, tov
        if np.isfinite(values[t]).sum() >= min_ic and m >= min_ic:
            ic[d] = cov / np.sqrt(vw * vr) if (vw > 0 and vr > 0) else np.nan
        prev = w[d]
    return w, out, ic


@pytest.mark.parametrize("n_stocks,n_days,nan_frac", [(2, 40, 0.0), (7, 300, 0.1), (46, 600, 0.02), (5, 257, 0.3)])
def test_day_vectorised_book_sums_equal_plain_stock_order_loops(n_stocks, n_days, nan_frac):
    """Chunks of 256 days, an odd stock count (the tail stock), rows with NaN values (the
    finite mask is written and reset), < 5 names (no IC): every series bit for bit."""
    rng = np.random.default_rng(n_stocks * 1000 + n_days)
    t = n_days + 12
    values = np.round(rng.normal(size=(t, n_stocks)), 1)
    values[rng.random(values.shape) < nan_frac] = np.nan
    values[5] = np.nan  # an empty day in the middle
    fwd = rng.normal(0.0, 0.01, (t, n_stocks))
    fwd[rng.random(fwd.shape) < 0.05] = np.nan
    r0, r1 = 4, 4 + n_days
    res = book_pnl(values, fwd, slice(r0, r1))
    w, want, ic = plain_book(values, fwd, r0, r1)
    np.testing.assert_array_equal(res.weights, w)
    for k, v in want.items():
        assert getattr(res, k).tobytes() == v.tobytes(), k
    np.testing.assert_array_equal(res.ic, ic)
    # the cached stock-major layout gives the same result; a mismatched one is refused
    fs = ForwardByStock(split_forward_returns(fwd), slice(r0, r1))
    assert book_pnl(values, fwd, slice(r0, r1), fwd_by_stock=fs).gross.tobytes() == res.gross.tobytes()
    with pytest.raises(ValueError, match="forward returns cover rows"):
        book_pnl(values, fwd, slice(r0 + 1, r1), fwd_by_stock=fs)


def small_int_values(rng: np.random.Generator, t: int, n: int) -> np.ndarray:
    """Integer-valued formula values (ties on every row) with every edge of the value-count
    path in rows 2 … 11 (between the rows the kernel choice samples): 12 and 13 values,
    signed zeros, magnitudes near 2**52, NaN and ±inf, rows with < 2 finite values, and
    rows that are not integers at all."""
    v = rng.integers(-1, 2, (t, n)).astype(float)  # sign(…): -1, 0, 1
    v[2] = rng.integers(0, 12, n)  # 12 values (0 … 11): the most this path takes
    v[3] = rng.integers(0, 13, n)  # 13 values: one too many, ranked by the count
    v[4] = rng.integers(0, 7, n) + 2.0**52 - 8  # just below the magnitude limit
    v[5] = rng.integers(0, 2, n) + 2.0**52  # at the limit: not this path
    v[6] = np.where(rng.random(n) < 0.5, 0.0, -0.0)  # a constant row of signed zeros
    v[7] = np.nan  # an empty day
    v[8, 1:] = np.nan  # one finite value
    v[9] = rng.integers(0, 3, n) + 0.5  # not integers
    v[10, : n // 2] = np.inf
    v[11] = np.round(rng.normal(size=n) * 4)  # a wide integer span
    v[rng.random(v.shape) < 0.05] = np.nan
    return v


@pytest.mark.parametrize("n_stocks", [2, 5, 46, 64, 65, 130])
def test_small_integer_books_equal_the_plain_definitions_bit_for_bit(n_stocks):
    """Values such as sign(…) or comparisons tie on every row; on both ranking paths (the
    pair count up to 64 values, the sort above) every series must equal the plain
    definitions bit for bit."""
    rng = np.random.default_rng(n_stocks)
    t = 300
    values = small_int_values(rng, t, n_stocks)
    fwd = rng.normal(0.0, 0.01, (t, n_stocks))
    fwd[rng.random(fwd.shape) < 0.05] = np.nan
    r0, r1 = 1, t
    res = book_pnl(values, fwd, slice(r0, r1))
    for d, row in enumerate(values[r0:r1]):
        np.testing.assert_array_equal(res.weights[d], slow_weights(row))
    _, want, ic = plain_book(values, fwd, r0, r1)
    for k, v in want.items():
        assert getattr(res, k).tobytes() == v.tobytes(), k
    np.testing.assert_array_equal(res.ic, ic)


def clash_run_values(rng: np.random.Generator, n_stocks: int) -> np.ndarray:
    """Rows of sums of ranks (k1 + k2)/45 whose equal integer sums land on neighbouring
    doubles (one float32 key, as in the paper alphas), in runs broken by untied rows, a
    one-pair row, rows with NaN / a single value, and true ties."""
    def clash_row():
        row = rng.integers(0, 46, n_stocks) / 45 + rng.integers(0, 46, n_stocks) / 45
        row[-1] = np.nextafter(row[0], 9.0)  # at least one clash at any width
        return row

    rows = [clash_row() for _ in range(40)]
    rows += [rng.normal(size=n_stocks) for _ in range(6)]  # untied: the float32 count again
    rows += [clash_row() for _ in range(10)]
    one = rng.permutation(n_stocks) + 0.5
    one[0] = one[1]  # exactly one tied pair
    lone = np.full(n_stocks, np.nan)
    lone[0] = 1.0
    holes = clash_row()
    holes[:: 3] = np.nan
    rows += [one, lone, holes, np.full(n_stocks, np.nan), np.round(rng.normal(size=n_stocks))]
    rows += [clash_row() for _ in range(25)] + [rng.normal(size=n_stocks) for _ in range(3)]
    return np.vstack(rows)


@pytest.mark.parametrize("n_stocks", [5, 46, 64, 65, 300])
def test_runs_of_near_ties_rank_on_the_doubles_bit_for_bit(n_stocks):
    """Sums of ranks put distinct values on neighbouring doubles (one float32 key), mixed
    with true ties, untied rows, holes and single values: both ranking paths give the
    plain weights, in book_weights and in the P&L kernel."""
    rng = np.random.default_rng(100 + n_stocks)
    values = clash_run_values(rng, n_stocks)
    t = values.shape[0]
    fin = np.isfinite(values)
    clashes = sum(np.unique(r[f]).size != np.unique(r[f].astype(np.float32)).size for r, f in zip(values, fin, strict=True))
    assert clashes >= 60  # the runs do clash
    fwd = rng.normal(0.0, 0.01, (t, n_stocks))
    for r0 in (0, 7):  # the retry rows fall on different rows of the runs
        res = book_pnl(values, fwd, slice(r0, t))
        direct = book_weights(values, slice(r0, t))
        for d, row in enumerate(values[r0:]):
            want = slow_weights(row)
            np.testing.assert_array_equal(res.weights[d], want)
            np.testing.assert_array_equal(direct[d], want)
        _, plain, ic = plain_book(values, fwd, r0, t)
        for k, v in plain.items():
            assert getattr(res, k).tobytes() == v.tobytes(), k
        np.testing.assert_array_equal(res.ic, ic)


@pytest.mark.parametrize("n,params", [(3050, (6, 2, 10, 5)), (250, (6, 2, 10, 5)), (97, (6, 2, 3, 7)),
                                      (60, (4, 1, 0, 0)), (41, (8, 3, 20, 9))])
def test_grouped_cpcv_sharpes_are_the_sharpes_of_the_gathered_sets(n, params):
    rng = np.random.default_rng(n)
    cv = CPCV(*params)
    for r in (rng.normal(0.0005, 0.01, n), np.where(np.arange(n) < n // 2, 0.0, rng.normal(0, 0.01, n)),
              np.full(n, 3e-4)):
        test, ins = cv.sharpes(r)
        for s, (i_idx, t_idx) in enumerate(cv.split(n)):
            assert test[s] == sharpe(r[t_idx]) and ins[s] == sharpe(r[i_idx])
        res = cv.evaluate(r)
        assert res.score == float(test.mean() - 0.5 * test.std())
        assert np.all(res.path_sharpes == sharpe(r))


@pytest.mark.parametrize("n", [*range(1, 140), 255, 256, 257, 1017, 3050, 4099])
def test_numpy_order_sums_are_bit_exact(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n) * 10.0 ** rng.integers(-8, 4, n)
    assert numpy_mean(x) == np.mean(x)
    assert numpy_std(x, 0) == np.std(x)
    if n > 1:
        assert numpy_std(x, 1) == np.std(x, ddof=1)
    assert cpcv_score(x) == float(x.mean() - 0.5 * x.std())


def test_fused_metrics_equal_the_one_statistic_definitions():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 9, 500):
        net = rng.normal(0.0004, 0.01, n)
        gross = net + 1e-4
        market = rng.normal(0.0, 0.01, n)
        ic = np.where(rng.random(n) < 0.2, np.nan, rng.normal(0, 0.1, n))
        m = compute_metrics(net, gross, rng.random(n), ic, gross / 2, gross / 2, market)
        assert m.sharpe == sharpe(net) and m.gross_sharpe == sharpe(gross) and m.market_sharpe == sharpe(market)
        assert m.max_drawdown == max_drawdown(net)
        assert m.total_return == (float(np.prod(1.0 + net)) - 1.0 if n else 0.0)
        assert m.ic_days == int(np.isfinite(ic).sum())


def test_fused_factor_regression_equals_the_plain_statistics():
    rng = np.random.default_rng(4)
    f = rng.normal(0.0, 0.01, (700, 6))
    fm = FactorModel(f)
    cost = np.abs(rng.normal(1e-4, 2e-5, 700))
    for g in (f @ [0.5, -0.2, 0.1, 0.0, 0.3, 0.2] + rng.normal(0.0003, 0.01, 700), 0.7 * f[:, 0] + 0.0):
        ex = fm.regress(g, cost)
        beta = np.array([ex.alpha, *ex.betas.values()])
        resid = np.empty(700)
        for i in range(700):  # α + ε = g − Fβ, subtracted factor by factor
            s = g[i]
            for c in range(6):
                s -= f[i, c] * beta[c + 1]
            resid[i] = s
        net = g - cost
        assert ex.raw_sharpe == sharpe(net)
        spanned = np.max(np.abs(resid)) <= 1e-12 * np.max(np.abs(g))
        r2 = 1.0 if spanned else ex.r2
        mr = 0.0 if spanned else np.mean(resid)
        scale = np.sqrt(252.0) / np.std(net, ddof=1)
        assert ex.residual_sharpe == (mr - (1.0 - r2) * np.mean(cost)) * scale
        assert ex.factor_sharpe == (np.mean(g) - mr - r2 * np.mean(cost)) * scale
