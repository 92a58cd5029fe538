"""Parity gate of the torch batch scorer (gymkit.bulk) against the CPU (Numba) scorer.

Every kernel replays the Numba arithmetic (log and power give glibc's bits through
gymkit.bulk.libm), so values are BIT-IDENTICAL, NaN masks included, for every formula.  CI subsample (2 shared cores): the 101
alphas on the default market's first 400 sessions, 1,000 seeded random formulas on its
first 160 sessions; the full-size gate (all sessions, N = 46 and 3,000) runs on the
device machine (benchmarks/bench_bulk.py, results in benchmarks/RESULTS.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gymkit.audit.formulas import random_formula  # noqa: E402
from gymkit.bulk import ops  # noqa: E402
from gymkit.bulk.book import book_many  # noqa: E402
from gymkit.bulk.evaluator import evaluate_many, plan  # noqa: E402
from gymkit.bulk.parity import compare_arrays, worst  # noqa: E402
from gymkit.data.default import default_market  # noqa: E402
from gymkit.dsl import evaluate, to_text  # noqa: E402
from gymkit.dsl.kernels import KERNELS, rolling  # noqa: E402
from gymkit.verifiers.book import book_pnl, forward_open_returns  # noqa: E402

ALPHAS = Path(__file__).resolve().parents[2] / "dsl" / "alpha101.tsv"


def _alphas() -> list[str]:
    lines = ALPHAS.read_text().splitlines()[1:]
    return [line.split("\t")[1] for line in lines if line.strip()]


def _gate(formulas: list[str], panel) -> None:
    out = evaluate_many(formulas, panel)
    results = [compare_arrays(f, np.asarray(evaluate(f, panel)), o.numpy(), exact=True)
               for f, o in zip(formulas, out, strict=True)]
    bad = worst(results)
    assert bad is None, (f"{sum(not r.ok for r in results)} of {len(results)} formulas differ; "
                         f"worst: {bad}")


def _hostile(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random walks with NaN, ±inf, constant runs, -0.0, exact ties and a price level."""
    x = rng.normal(size=shape).cumsum(0) + 100.0
    x[rng.random(shape) < 0.03] = np.nan
    x[rng.random(shape) < 0.01] = np.inf
    x[rng.random(shape) < 0.01] = -np.inf
    x[20:31, 1] = 3.25           # a constant run longer than most windows
    x[40:44, 2] = -0.0
    x[50:60, 3] = 0.0
    x[:, 4] = np.round(x[:, 4])  # ties across time and stocks
    x[70, :] = 7.0               # a constant cross-section
    return x


def test_every_dsl_operator_has_a_torch_kernel() -> None:
    from gymkit.dsl.operators import OPERATORS

    missing = set(OPERATORS) - set(ops.PANEL_OPS) - set(ops.ELEMENTWISE) - {"adv"}
    assert not missing, f"operators without a torch kernel: {sorted(missing)}"


@pytest.mark.parametrize("d", [1, 2, 3, 4, 7, 12])
def test_time_series_kernels_bit_identical(d: int) -> None:
    rng = np.random.default_rng(d)
    x = _hostile(rng, (130, 9))
    y = _hostile(rng, (130, 9))
    x_t, y_t = torch.tensor(x)[None], torch.tensor(y)[None]
    for name, fn in ops.PANEL_OPS.items():
        if name in ("rank", "scale", "group_neutralize"):
            continue
        pair = name in ("ts_corr", "ts_cov")
        kernel = KERNELS.get(name) or getattr(rolling, name)  # ts_median: kernel before its table row
        ref = kernel(x, y, d) if pair else kernel(x, d)
        got = (fn(x_t, y_t, d) if pair else fn(x_t, d))[0].numpy()
        r = compare_arrays(name, ref, got, exact=True)
        assert r.ok, f"{name}(d={d}): {r}"


def test_cross_sectional_and_elementwise_kernels_bit_identical() -> None:
    rng = np.random.default_rng(7)
    x = _hostile(rng, (90, 70))  # > 64 finite values: the CPU rank's sort path too
    y = _hostile(rng, (90, 70)) - 100.0
    x_t, y_t = torch.tensor(x)[None], torch.tensor(y)[None]
    codes = np.array([i % 5 - 1 for i in range(70)], dtype=np.int64)
    for name, ref, got in (
        ("rank", KERNELS["rank"](x), ops.rank(x_t)),
        ("rank_narrow", KERNELS["rank"](x[:, :20]), ops.rank(x_t[..., :20])),
        ("scale", KERNELS["scale"](y), ops.scale(y_t)),
        ("group_neutralize", KERNELS["group_neutralize"](y, codes),
         ops.group_neutralize(y_t, torch.tensor(codes))),
    ):
        r = compare_arrays(name, ref, got[0].numpy(), exact=True)
        assert r.ok, r
    for name, fn in ops.ELEMENTWISE.items():
        n_args = 3 if name == "where" else (1 if name in ("neg", "abs", "sign", "sqrt", "log") else 2)
        args = (y, x, -y)[:n_args]
        ref = KERNELS[name](*args)
        got = fn(*(torch.tensor(a)[None] for a in args))[0].numpy()
        r = compare_arrays(name, ref, got, exact=True)
        assert r.ok, r
    for b in (2.0, 0.5, 1.0):  # the CPU kernel's scalar fast paths
        for name in ("power", "signed_power"):
            got = ops.ELEMENTWISE[name](y_t, b, fast=b)[0].numpy()
            assert compare_arrays(name, KERNELS[name](y, b), got, exact=True).ok, (name, b)


def test_sharing_across_the_batch() -> None:
    p = default_market().take_rows(slice(0, 60))
    formulas = ["rank(ts_mean(close, 5))", "-rank(ts_mean(close, 5))", "rank(ts_mean(close, 5)) + 1",
                "ts_mean(close, 5) * ts_mean(close, 5)"]
    pl = plan(formulas, p)
    assert sum(n.op == "ts_mean" for n in pl.nodes) == 1
    assert sum(n.op == "rank" for n in pl.nodes) == 1


def test_alpha101_parity() -> None:
    _gate(_alphas(), default_market().take_rows(slice(0, 400)))


def test_random_formula_parity() -> None:
    p = default_market().take_rows(slice(0, 160))
    rng = np.random.default_rng(26)
    formulas = [to_text(random_formula(rng, p)) for _ in range(1000)]
    _gate(formulas, p)


def test_random_formula_parity_through_the_device_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA arithmetic of log / power (double-double check, host fallback) forced on CPU:
    the 1,000 random formulas stay bit-identical."""
    from gymkit.bulk import libm

    monkeypatch.setattr(libm, "force_device_path", True)
    libm.stats.update(cells=0, host=0)
    p = default_market().take_rows(slice(0, 160))
    rng = np.random.default_rng(26)
    _gate([to_text(random_formula(rng, p)) for _ in range(1000)], p)
    assert libm.stats["cells"] > 0


def test_book_parity() -> None:
    p = default_market().take_rows(slice(0, 400))
    formulas = [*_alphas()[:40], "close", "1", "rank(volume) > 0.5"]
    vals = evaluate_many(formulas, p)
    fwd = forward_open_returns(p.open)
    rows = slice(60, p.T)
    got = book_many(torch.stack(vals), torch.tensor(fwd), rows, bps_per_turnover=5.0)
    for i, f in enumerate(formulas):
        ref = book_pnl(np.asarray(evaluate(f, p)), fwd, rows)
        w = compare_arrays(f, ref.weights, got.weights[i].numpy(), exact=True)
        assert w.ok, f"weights of {f}: {w}"
        net = ref.gross - (5.0 * 1e-4) * ref.turnover  # the oracle's train-cost net
        for name, a in (("gross", ref.gross), ("turnover", ref.turnover), ("long", ref.long),
                        ("short", ref.short), ("net", net)):
            r = compare_arrays(f"{name} of {f}", a[None], getattr(got, name)[i].numpy()[None], exact=True)
            assert r.ok, r


def test_ts_ema_of_several_windows_in_one_loop() -> None:
    """The evaluator stacks every ts_ema of a height into one call with a window per element."""
    rng = np.random.default_rng(3)
    x = _hostile(rng, (120, 8))
    xs = torch.tensor(np.stack([x, x[::-1].copy(), x]))
    got = ops.ts_ema(xs, [3, 7, 12])
    for i, (a, d) in enumerate(((x, 3), (x[::-1].copy(), 7), (x, 12))):
        r = compare_arrays(f"ts_ema d={d}", KERNELS["ts_ema"](a, d), got[i].numpy(), exact=True)
        assert r.ok, r


def test_parity_at_3000_stocks() -> None:
    """A 3,000-stock synthetic panel (70 sessions; CPU here, the full size on the device):
    values of 24 alphas and 40 random formulas, and their books, bit for bit."""
    from gymkit.bulk.panels import forward_returns, synthetic

    p = synthetic(3000, 70)
    rng = np.random.default_rng(30)
    formulas = [*_alphas()[:24], *(to_text(random_formula(rng, p)) for _ in range(40))]
    vals = evaluate_many(formulas, p)
    fwd = forward_returns(p.field("open"))
    got = book_many(torch.stack(vals), torch.tensor(fwd), slice(40, p.T))
    results = []
    for i, f in enumerate(formulas):
        ref_v = np.asarray(evaluate(f, p, cache=None))
        ref = book_pnl(ref_v, fwd, slice(40, p.T))
        results.append(compare_arrays(f, ref_v, vals[i].numpy(), exact=True))
        for name in ("weights", "gross", "turnover"):
            a, b = getattr(ref, name), getattr(got, name)[i].numpy()
            results.append(compare_arrays(f"{name} of {f}", np.atleast_2d(a), np.atleast_2d(b), exact=True))
    bad = worst(results)
    assert bad is None, f"{sum(not r.ok for r in results)} comparisons differ; worst: {bad}"
