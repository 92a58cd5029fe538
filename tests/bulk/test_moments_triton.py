"""The block-moment operators (ts_std/skew/kurt/slope/decay_linear, ts_cov/corr) and the window
extremes (ts_max/min/argmax/argmin) in one Triton kernel a call (their CUDA path), run in
Triton's interpreter on CPU tensors (CI has no GPU): the self-check passes, the kernels equal
the CPU (Numba) kernels bit for bit through the bulk operators, and a kernel one ULP off is
refused."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gymkit.bulk import moments_triton, ops  # noqa: E402
from gymkit.bulk.parity import compare_arrays  # noqa: E402
from gymkit.dsl.kernels import KERNELS, rolling  # noqa: E402

from .hostile import walks  # noqa: E402


@pytest.fixture(scope="module")
def interpreted():
    """The kernels in the interpreter; one self-check for the module (it costs ~30 s there)."""
    pytest.importorskip("triton")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_INTERPRET", "1")
        mp.setattr(moments_triton, "interpret", True)
        mp.setattr(moments_triton, "status", {"triton": None})
        yield moments_triton
    moments_triton._KERNELS.clear()  # built for the interpreter: never reused on a device


def _kernel(name: str):
    return KERNELS.get(name) or getattr(rolling, name)


def _hostile(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """The shared hostile walks, plus a +0.0 run after the -0.0 one and a near-1e6 column."""
    x = walks(rng, shape)
    x[104:111, 2] = 0.0
    x[:, 4] = 1e6 + x[:, 4] * 1e-9
    return x


def test_the_kernels_pass_their_self_check(interpreted) -> None:
    assert interpreted.use(torch.device("cpu")), interpreted.status


@pytest.mark.parametrize("d", [1, 2, 4, 9, 40])
def test_through_the_bulk_operators_bit_identical_to_numba(interpreted, d: int) -> None:
    """T = 113 (no window divides it) x 7 stocks, two formulas in one batch."""
    rng = np.random.default_rng(40 + d)
    x, y = _hostile(rng, (113, 7)), _hostile(rng, (113, 7))
    xt, yt = torch.tensor(np.stack([x, y])), torch.tensor(np.stack([y, x]))
    assert interpreted.use(xt.device), interpreted.status
    for name in ("ts_std", "ts_skew", "ts_kurt", "ts_slope", "ts_decay_linear", "ts_max", "ts_min", "ts_argmax",
                 "ts_argmin"):
        got = ops.PANEL_OPS[name](xt, d)
        for i, a in enumerate((x, y)):
            r = compare_arrays(f"{name}(d={d})[{i}]", _kernel(name)(a, d), got[i].numpy(), exact=True)
            assert r.ok, r
    for name in ("ts_corr", "ts_cov"):
        got = ops.PANEL_OPS[name](xt, yt, d)
        for i, (a, b) in enumerate(((x, y), (y, x))):
            r = compare_arrays(f"{name}(d={d})[{i}]", _kernel(name)(a, b, d), got[i].numpy(), exact=True)
            assert r.ok, r


@pytest.mark.parametrize("which", ["moments", "comoments"])
def test_a_kernel_one_ulp_off_is_refused(interpreted, monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    assert interpreted.use(torch.device("cpu"))  # built and checked
    real = getattr(interpreted, which)

    def off(*args):
        out = real(*args)
        return torch.where(torch.isfinite(out) & (out != 0.0), torch.nextafter(out, torch.full_like(out, np.inf)), out)

    monkeypatch.setattr(interpreted, which, off)
    assert not interpreted._self_check(torch.device("cpu"))
