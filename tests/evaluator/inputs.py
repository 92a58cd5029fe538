"""Seeded inputs of the evaluator tests and the parity assertion."""

from __future__ import annotations

import numpy as np

T, N = 240, 7


def _gaps(rng: np.random.Generator, a: np.ndarray, share: float = 0.04) -> np.ndarray:
    a = a.copy()
    a[rng.random(a.shape) < share] = np.nan
    a[100:113, 2] = np.nan  # a long listing gap
    a[:30, 4] = np.nan      # a late listing
    return a


def make_inputs(seed: int = 7) -> dict[str, np.ndarray]:
    """Named (T, N) inputs: random, price-level, ties, constants, positive, with ±inf."""
    rng = np.random.default_rng(seed)
    normal = _gaps(rng, rng.normal(size=(T, N)))
    walk = _gaps(rng, 500.0 * np.exp(np.cumsum(rng.normal(0, 0.01, (T, N)), axis=0)))
    ties = _gaps(rng, rng.integers(0, 4, (T, N)).astype(np.float64))
    runs = np.repeat(rng.normal(size=(T // 8 + 1, N)), 8, axis=0)[:T]
    runs[:, 3] = 2.5  # a column that never moves
    const = _gaps(rng, runs)
    positive = _gaps(rng, rng.lognormal(0.0, 0.3, (T, N)))
    infs = normal.copy()
    infs[rng.random((T, N)) < 0.02] = np.inf
    infs[rng.random((T, N)) < 0.02] = -np.inf
    return {"normal": normal, "walk": walk, "ties": ties, "const": const,
            "positive": positive, "infs": infs}


def assert_parity(ours: np.ndarray, ref: np.ndarray, rtol: float = 1e-9, atol=0.0,
                  what: str = "") -> None:
    """Identical NaN masks and |ours - ref| <= atol + rtol·|ref| everywhere else."""
    ours = np.asarray(ours)
    ref = np.asarray(ref)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != {ref.shape}"
    assert ours.dtype == np.float64, f"{what}: dtype {ours.dtype}"
    assert not np.isinf(ours).any(), f"{what}: ±inf in output"
    nan_o, nan_r = np.isnan(ours), np.isnan(ref)
    if (nan_o != nan_r).any():
        t, j = np.argwhere(nan_o != nan_r)[0]
        raise AssertionError(f"{what}: NaN masks differ ({(nan_o != nan_r).sum()} cells), first "
                             f"at [{t}, {j}]: ours={ours[t, j]!r} ref={ref[t, j]!r}")
    ok = ~nan_r
    err = np.abs(ours[ok] - ref[ok])
    atol = np.broadcast_to(atol, ref.shape)[ok]
    bound = atol + rtol * np.abs(ref[ok])
    if (err > bound).any():
        i = int(np.argmax(err - bound))
        where = np.argwhere(ok)[i]
        raise AssertionError(f"{what}: {(err > bound).sum()} values off; worst at {tuple(where)}: "
                             f"ours={ours[ok][i]!r} ref={ref[ok][i]!r}")
