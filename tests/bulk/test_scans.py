"""The batch scorer's fewer-launch paths stay bit-identical to the CPU (Numba) kernels.

* window extremes by a doubling table, ts_rank / ts_median over unfolded windows (in
  pieces), long windows and the piece edges included;
* the one-kernel Triton scans (block window sums, the EMA) run in Triton's interpreter on
  CPU tensors (CI has no GPU): the self-check passes, a kernel one ulp off is refused, and
  every time-series kernel through them equals Numba;
* group_neutralize's one kernel for all groups (its CUDA path), in the interpreter too.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gymkit.bulk import ops, rowsum, scans  # noqa: E402
from gymkit.bulk.parity import compare_arrays  # noqa: E402
from gymkit.dsl.kernels import KERNELS, rolling  # noqa: E402

from .hostile import walks as _hostile  # noqa: E402

WINDOWED = ("ts_max", "ts_min", "ts_argmax", "ts_argmin", "ts_rank", "ts_median", "ts_sum", "ts_mean",
            "ts_std", "ts_skew", "ts_kurt", "ts_product", "ts_decay_linear", "ts_slope", "ts_ema")


def _kernel(name: str):
    return KERNELS.get(name) or getattr(rolling, name)


def _check(name: str, x: np.ndarray, d: int, got: np.ndarray) -> None:
    r = compare_arrays(f"{name}(d={d})", _kernel(name)(x, d), got, exact=True)
    assert r.ok, r


@pytest.mark.parametrize("d", [5, 37, 64, 100, 250])
def test_long_windows_in_pieces_bit_identical(d: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(d)
    x = _hostile(rng, (420, 6))
    monkeypatch.setattr(ops, "WINDOW_CELLS", 6 * d * 7)  # 7 rows a piece: many piece edges
    xt = torch.tensor(x)[None]
    for name in WINDOWED:
        _check(name, x, d, ops.PANEL_OPS[name](xt, d)[0].numpy())


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.integers(0, 2**32 - 1),
       st.sampled_from(["ts_max", "ts_min", "ts_argmax", "ts_argmin", "ts_rank", "ts_median"]))
def test_property_exact_window_kernels(d: int, t: int, seed: int, name: str) -> None:
    """Few distinct values (ties everywhere), signed zeros and NaN: the doubling table and
    the unfolded counts give Numba's element, lag and count."""
    rng = np.random.default_rng(seed)
    x = rng.choice([-2.0, -0.0, 0.0, 1.0, 1.5, 3.0, np.nan], size=(t, 4), p=[.15, .15, .15, .2, .15, .15, .05])
    _check(name, x, d, ops.PANEL_OPS[name](torch.tensor(x)[None], d)[0].numpy())


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch):
    """The Triton kernels (scans and rowsum) in Triton's interpreter on CPU tensors, with
    fresh self-checks."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for mod in (scans, rowsum):
        monkeypatch.setattr(mod, "interpret", True)
        monkeypatch.setattr(mod, "status", {"triton": None, "group": None})
    yield
    for mod in (scans, rowsum):
        mod._KERNELS.clear()  # built for the interpreter: never reused on a device


def test_triton_kernels_pass_their_self_checks(interpreted) -> None:
    assert scans._use_triton(torch.device("cpu")), scans.status
    assert rowsum._use_triton(torch.device("cpu")), rowsum.status  # seq and neu kernels
    assert rowsum._use_group_kernel(torch.device("cpu")), rowsum.status


def test_a_scan_one_ulp_off_is_refused(interpreted, monkeypatch: pytest.MonkeyPatch) -> None:
    real = scans._triton_window_sums

    def off(cur, prev, product):
        out = real(cur, prev, product)
        return torch.nextafter(out, torch.full_like(out, np.inf))

    scans._build()
    monkeypatch.setattr(scans, "_triton_window_sums", off)
    assert not scans._self_check(torch.device("cpu"))


@pytest.mark.parametrize("d", [1, 2, 7])
def test_kernels_through_the_triton_scans_bit_identical(interpreted, d: int) -> None:
    rng = np.random.default_rng(100 + d)
    x = _hostile(rng, (110, 5))  # the constant run at 30..89 and the -0.0 at 100..103
    xt = torch.tensor(x)[None]
    assert scans._use_triton(xt.device), scans.status
    for name in WINDOWED:
        _check(name, x, d, ops.PANEL_OPS[name](xt, d)[0].numpy())
    y = _hostile(rng, (110, 5))
    for name in ("ts_corr", "ts_cov"):
        r = compare_arrays(name, _kernel(name)(x, y, d), ops.PANEL_OPS[name](xt, torch.tensor(y)[None], d)[0].numpy(),
                           exact=True)
        assert r.ok, r
    got = ops.ts_ema(torch.stack([xt[0], xt[0].flip(0)]), [d, d + 3])
    for i, (a, w) in enumerate(((x, d), (x[::-1].copy(), d + 3))):
        r = compare_arrays(f"ts_ema d={w}", KERNELS["ts_ema"](a, w), got[i].numpy(), exact=True)
        assert r.ok, r


def test_group_neutralize_one_kernel_for_all_groups(interpreted) -> None:
    """The CUDA path (a thread per row and group, stocks in order) in the interpreter
    equals Numba, and so does the by-stock torch chain."""
    rng = np.random.default_rng(8)
    y = _hostile(rng, (60, 70)) - 50.0
    y[:, 10:20] *= 1e9  # cancellation: the compensation matters
    codes = np.array([i % 6 - 1 for i in range(70)], dtype=np.int64)
    ref = KERNELS["group_neutralize"](y, codes)
    assert rowsum._use_group_kernel(torch.device("cpu")), rowsum.status
    got = ops.group_neutralize(torch.tensor(y)[None], torch.tensor(codes))[0].numpy()
    assert compare_arrays("group_neutralize (Triton)", ref, got, exact=True).ok
    rowsum.status["group"] = "off for this check"
    got = ops.group_neutralize(torch.tensor(y)[None], torch.tensor(codes))[0].numpy()
    assert compare_arrays("group_neutralize (chain)", ref, got, exact=True).ok
